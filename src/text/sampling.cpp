// lazygrad::Sampler: see include/lazygrad/sampling.h.
#include "lazygrad/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "lazygrad/error.h"

namespace lazygrad {

void validate(const SamplingOptions& o) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    throw ValueError("sampling: temperature must be a finite number >= 0 (0: greedy), got " +
                     std::to_string(o.temperature));
  if (o.top_k < 0)
    throw ValueError("sampling: top_k must be >= 0 (0: no limit), got " + std::to_string(o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1))
    throw ValueError("sampling: top_p must be in (0, 1] (1: no limit), got " + std::to_string(o.top_p));
  if (!(o.repetition_penalty > 0) || !std::isfinite(o.repetition_penalty))
    throw ValueError("sampling: repetition_penalty must be a finite number > 0 (1: none), got " +
                     std::to_string(o.repetition_penalty));
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> previous, double penalty) {
  if (penalty == 1.0 || previous.empty()) return;
  std::vector<bool> done(logits.size(), false);
  for (int32_t id : previous) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size())
      throw IndexError("sampling: token " + std::to_string(id) + " is outside the logits' vocabulary of " +
                       std::to_string(logits.size()));
    if (done[id]) continue;
    done[id] = true;
    float& x = logits[id];
    x = static_cast<float>(x < 0 ? x * penalty : x / penalty);
  }
}

Sampler::Sampler(const SamplingOptions& options, uint64_t seed) : options_(options), rng_(seed) {
  validate(options_);
}

namespace {

struct Before {  // more likely first; a tie to the smaller id
  const std::vector<float>* key;
  bool operator()(int32_t a, int32_t b) const {
    const float ka = (*key)[static_cast<size_t>(a)], kb = (*key)[static_cast<size_t>(b)];
    return ka > kb || (ka == kb && a < b);
  }
};

// The ids ranked most likely first (NaN last, a tie to the smaller id), sorted only as far as a
// caller reads: a draw usually stops within the first few dozen of GPT-2's 50,257 ids, and sorting
// them all took 8 ms a token, a quarter of a decode step. The comparison is a total order, so the
// ranking is the one a full stable sort gives.
class Ranking {
 public:
  explicit Ranking(std::vector<float> keys) : key_(std::move(keys)), order_(key_.size()), end_(key_.size()) {
    std::iota(order_.begin(), order_.end(), 0);
  }
  float key(int32_t id) const { return key_[static_cast<size_t>(id)]; }
  size_t size() const { return end_; }
  // Keeps the k most likely ids (unsorted among themselves until read).
  void keep_first(size_t k) {
    if (k >= end_) return;
    std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k), order_.end(), before());
    end_ = k;
  }
  // The kept ids, in no particular order (at() may reorder them).
  std::span<const int32_t> kept() const { return {order_.data(), end_}; }
  int32_t at(size_t j) {
    if (j >= sorted_) sort_through(std::max(j + 1, 2 * sorted_ + 64));
    return order_[j];
  }

 private:
  Before before() const { return {&key_}; }
  void sort_through(size_t m) {
    m = std::min(m, end_);
    auto first = order_.begin() + static_cast<std::ptrdiff_t>(sorted_);
    auto mid = order_.begin() + static_cast<std::ptrdiff_t>(m),
         last = order_.begin() + static_cast<std::ptrdiff_t>(end_);
    std::nth_element(first, mid, last, before());
    std::sort(first, mid, before());
    sorted_ = m;
  }
  std::vector<float> key_;
  std::vector<int32_t> order_;
  size_t end_, sorted_ = 0;
};

// What a draw chooses among: the first `keep` ids of the ranking that have weight > 0, with weights
// (exp((logit - max) / temperature), or 1 for each +inf logit) summing to `kept`. The processed
// logits: the repetition penalty applied, then top-k and top-p.
struct Selection {
  Ranking ranking;
  std::vector<double> weight;  // by id; 0 outside the top-k
  size_t keep = 0;
  double kept = 0;
};

Selection select(const SamplingOptions& o, std::span<const float> raw, std::span<const int32_t> previous) {
  if (raw.empty()) throw Error("sampling: no logits");
  std::vector<float> logits(raw.begin(), raw.end());
  apply_repetition_penalty(logits, previous, o.repetition_penalty);
  float top = -std::numeric_limits<float>::infinity();
  for (float& x : logits) {
    if (std::isnan(x)) x = -std::numeric_limits<float>::infinity();  // NaN ranks last
    top = std::max(top, x);
  }
  if (!std::isfinite(top) && top < 0) throw Error("sampling: every logit is -inf or NaN");
  Selection s{Ranking(std::move(logits)), std::vector<double>(raw.size(), 0.0)};
  Ranking& r = s.ranking;
  if (o.top_k > 0) r.keep_first(static_cast<size_t>(o.top_k));
  if (std::isinf(top)) {  // +inf: those tokens share all the probability
    for (int32_t id : r.kept())
      if (r.key(id) == top) {
        s.weight[static_cast<size_t>(id)] = 1;
        s.kept += 1;
      }
    s.keep = r.size();
    return s;
  }
  double total = 0;
  for (int32_t id : r.kept())
    total += s.weight[static_cast<size_t>(id)] =
        std::exp((static_cast<double>(r.key(id)) - top) / o.temperature);
  s.keep = r.size();
  s.kept = total;
  if (o.top_p < 1) {  // the smallest prefix (most likely first) whose probability reaches top_p
    double cum = 0, prefix = 0;
    for (size_t j = 0; j < r.size(); ++j) {
      const double w = s.weight[static_cast<size_t>(r.at(j))];
      prefix += w;
      cum += w / total;
      if (cum >= o.top_p) {
        s.keep = j + 1;
        s.kept = prefix;
        break;
      }
    }
  }
  return s;
}

}  // namespace

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> previous) {
  if (options_.temperature == 0) {
    if (logits.empty()) throw Error("sampling: no logits");
    std::vector<float> x(logits.begin(), logits.end());
    apply_repetition_penalty(x, previous, options_.repetition_penalty);
    int32_t best = -1;
    for (size_t i = 0; i < x.size(); ++i)
      if (!std::isnan(x[i]) && (best < 0 || x[i] > x[best])) best = static_cast<int32_t>(i);
    if (best < 0) throw Error("sampling: every logit is NaN");
    return best;
  }
  Selection s = select(options_, logits, previous);
  // A uniform double in [0, 1) from the top 53 bits: the same on every platform (unlike
  // std::uniform_real_distribution, whose algorithm the standard leaves open).
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double cum = 0;
  int32_t last = -1;
  for (size_t j = 0; j < s.keep; ++j) {
    const int32_t id = s.ranking.at(j);
    const double w = s.weight[static_cast<size_t>(id)];
    if (w <= 0) break;  // the rest weigh nothing either
    cum += w / s.kept;
    if (u < cum) return id;
    last = id;
  }
  return last;  // rounding: cum ended a hair below 1
}

std::vector<double> Sampler::probabilities(std::span<const float> logits,
                                           std::span<const int32_t> previous) const {
  std::vector<double> out(logits.size(), 0.0);
  if (options_.temperature == 0) {
    Sampler greedy(options_);
    out[static_cast<size_t>(greedy.sample(logits, previous))] = 1.0;
    return out;
  }
  Selection s = select(options_, logits, previous);
  for (size_t j = 0; j < s.keep; ++j) {
    const auto id = static_cast<size_t>(s.ranking.at(j));
    if (s.weight[id] <= 0) break;
    out[id] = s.weight[id] / s.kept;
  }
  return out;
}

}  // namespace lazygrad
