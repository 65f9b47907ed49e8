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

// The processed logits (penalty applied, divided by the temperature) and the ids that survive top-k
// and top-p, most likely first, with their probabilities (summing to 1).
struct Candidates {
  std::vector<int32_t> ids;
  std::vector<double> probs;
};

Candidates candidates(const SamplingOptions& o, std::span<const float> raw,
                      std::span<const int32_t> previous) {
  if (raw.empty()) throw Error("sampling: no logits");
  std::vector<float> logits(raw.begin(), raw.end());
  apply_repetition_penalty(logits, previous, o.repetition_penalty);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // NaN sorts last; on a tie the smaller id first.
  auto key = [&](int32_t i) {
    return std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
  };
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return key(a) > key(b); });
  const double top = key(order[0]);
  if (!std::isfinite(top) && top < 0) throw Error("sampling: every logit is -inf or NaN");
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < order.size()) order.resize(static_cast<size_t>(o.top_k));

  Candidates c;
  if (std::isinf(top)) {  // +inf: those tokens share all the probability
    for (int32_t i : order)
      if (key(i) == top) c.ids.push_back(i);
    c.probs.assign(c.ids.size(), 1.0 / static_cast<double>(c.ids.size()));
    return c;
  }
  std::vector<double> p(order.size());
  double total = 0;
  for (size_t j = 0; j < order.size(); ++j) total += p[j] = std::exp((key(order[j]) - top) / o.temperature);
  // Top-p: the smallest prefix (most likely first) whose probability reaches top_p.
  size_t keep = order.size();
  if (o.top_p < 1) {
    double cum = 0;
    for (size_t j = 0; j < order.size(); ++j) {
      cum += p[j] / total;
      if (cum >= o.top_p) {
        keep = j + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (size_t j = 0; j < keep && p[j] > 0; ++j) {
    c.ids.push_back(order[j]);
    c.probs.push_back(p[j]);
    kept += p[j];
  }
  for (double& q : c.probs) q /= kept;
  return c;
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
  Candidates c = candidates(options_, logits, previous);
  // A uniform double in [0, 1) from the top 53 bits: the same on every platform (unlike
  // std::uniform_real_distribution, whose algorithm the standard leaves open).
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double cum = 0;
  for (size_t j = 0; j < c.ids.size(); ++j) {
    cum += c.probs[j];
    if (u < cum) return c.ids[j];
  }
  return c.ids.back();  // rounding: cum ended a hair below 1
}

std::vector<double> Sampler::probabilities(std::span<const float> logits,
                                           std::span<const int32_t> previous) const {
  std::vector<double> out(logits.size(), 0.0);
  if (options_.temperature == 0) {
    Sampler greedy(options_);
    out[static_cast<size_t>(greedy.sample(logits, previous))] = 1.0;
    return out;
  }
  Candidates c = candidates(options_, logits, previous);
  for (size_t j = 0; j < c.ids.size(); ++j) out[static_cast<size_t>(c.ids[j])] = c.probs[j];
  return out;
}

}  // namespace lazygrad
