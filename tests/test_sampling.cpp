// lazygrad::Sampler (include/lazygrad/sampling.h): greedy, temperature, top-k, top-p, Hugging Face's
// repetition penalty, seeding and the checks of the options. The statistical tests draw 20k tokens
// from a seeded generator, so they are deterministic; their tolerances are about 4 standard errors.
#include <gtest/gtest.h>
#include <lazygrad/sampling.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "expect_error.h"

using namespace lazygrad;

namespace {

const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 1.5f, 0.0f, -3.0f, 1.9f, 0.25f};

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p(logits.size());
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) total += p[i] = std::exp(logits[i] / temperature);
  for (double& q : p) q /= total;
  return p;
}

std::vector<int> counts(Sampler& sampler, const std::vector<float>& logits, int draws) {
  std::vector<int> n(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++n[static_cast<size_t>(sampler.sample(logits))];
  return n;
}

TEST(Sampling, GreedyIsArgmax) {
  Sampler greedy({.temperature = 0});
  EXPECT_EQ(greedy.sample(kLogits), 1);
  EXPECT_EQ(greedy.sample(std::vector<float>{3, 7, 7, 1}), 1);  // the first of a tie
  EXPECT_EQ(greedy.sample(std::vector<float>{-5, -2, -9}), 1);
}

TEST(Sampling, TopKOneIsArgmaxAtAnyTemperature) {
  for (double t : {0.1, 1.0, 5.0, 100.0}) {
    Sampler s({.temperature = t, .top_k = 1}, 42);
    for (int i = 0; i < 200; ++i) ASSERT_EQ(s.sample(kLogits), 1) << "temperature " << t;
  }
}

TEST(Sampling, TopKKeepsTheKMostLikely) {
  Sampler s({.temperature = 1, .top_k = 3}, 1);
  std::vector<int> n = counts(s, kLogits, 5000);
  for (size_t i = 0; i < n.size(); ++i)
    if (i == 1 || i == 6 || i == 3)
      EXPECT_GT(n[i], 0) << i;
    else
      EXPECT_EQ(n[i], 0) << i;
}

TEST(Sampling, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.4, 0.3, 0.15, 0.1, 0.05 (logits are their logs, shuffled).
  const std::vector<float> logits = {std::log(0.1f), std::log(0.4f), std::log(0.05f), std::log(0.3f),
                                     std::log(0.15f)};
  auto seen = [&](double p) {
    Sampler s({.temperature = 1, .top_p = p}, 7);
    std::set<int32_t> out;
    for (int i = 0; i < 20000; ++i) out.insert(s.sample(logits));
    return out;
  };
  EXPECT_EQ(seen(0.3), (std::set<int32_t>{1}));  // 0.4 alone reaches 0.3
  EXPECT_EQ(seen(0.39), (std::set<int32_t>{1}));
  EXPECT_EQ(seen(0.5), (std::set<int32_t>{1, 3}));           // 0.4 + 0.3
  EXPECT_EQ(seen(0.8), (std::set<int32_t>{1, 3, 4}));        // 0.85
  EXPECT_EQ(seen(0.9), (std::set<int32_t>{1, 3, 4, 0}));     // 0.95
  EXPECT_EQ(seen(1.0), (std::set<int32_t>{0, 1, 2, 3, 4}));  // all
  // The kept ones are renormalized: 0.4 / 0.7 and 0.3 / 0.7.
  std::vector<double> p = Sampler({.temperature = 1, .top_p = 0.5}).probabilities(logits);
  EXPECT_NEAR(p[1], 0.4 / 0.7, 1e-6);
  EXPECT_NEAR(p[3], 0.3 / 0.7, 1e-6);
  EXPECT_EQ(p[0] + p[2] + p[4], 0.0);
}

TEST(Sampling, TemperatureFrequenciesMatchSoftmax) {
  const int draws = 20000;
  for (double t : {0.5, 1.0, 2.0}) {
    Sampler s({.temperature = t}, 123);
    std::vector<int> n = counts(s, kLogits, draws);
    std::vector<double> want = softmax(kLogits, t);
    for (size_t i = 0; i < n.size(); ++i) {
      const double freq = static_cast<double>(n[i]) / draws;
      const double se = std::sqrt(want[i] * (1 - want[i]) / draws);
      EXPECT_NEAR(freq, want[i], 4 * se + 1e-4) << "temperature " << t << ", token " << i;
    }
  }
}

TEST(Sampling, RepetitionPenaltyArithmetic) {
  std::vector<float> logits = {2.0f, -2.0f, 3.0f, -0.5f, 0.0f};
  const std::vector<int32_t> previous = {0, 1, 1, 4, 1};  // each token once, however often it occurs
  apply_repetition_penalty(logits, previous, 2.0);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);   // positive: divided
  EXPECT_FLOAT_EQ(logits[1], -4.0f);  // negative: multiplied
  EXPECT_FLOAT_EQ(logits[2], 3.0f);   // not seen
  EXPECT_FLOAT_EQ(logits[3], -0.5f);
  EXPECT_FLOAT_EQ(logits[4], 0.0f);
  // Greedy sees the penalized logits: 2.0 / 2 = 1.0 loses to 1.5.
  Sampler greedy({.temperature = 0, .repetition_penalty = 2.0});
  const std::vector<float> two = {2.0f, 1.5f};
  EXPECT_EQ(greedy.sample(two), 0);
  EXPECT_EQ(greedy.sample(two, std::vector<int32_t>{0}), 1);
  // And the distribution: softmax of the penalized logits.
  std::vector<double> p = Sampler({.repetition_penalty = 2.0}).probabilities(two, std::vector<int32_t>{0});
  EXPECT_NEAR(p[0], 1 / (1 + std::exp(0.5)), 1e-9);
  expect_error([&] { apply_repetition_penalty(logits, std::vector<int32_t>{5}, 2.0); }, "sampling",
               "token 5");
}

TEST(Sampling, SameSeedSameSequence) {
  auto run = [](uint64_t seed) {
    Sampler s({.temperature = 1.3, .top_k = 6, .top_p = 0.95}, seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(kLogits));
    return out;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

TEST(Sampling, BadOptionsAreErrorsNamingTheOption) {
  expect_error([] { Sampler({.temperature = -0.5}); }, "temperature");
  expect_error([] { Sampler({.temperature = std::nan("")}); }, "temperature");
  expect_error([] { Sampler({.top_k = -1}); }, "top_k");
  expect_error([] { Sampler({.top_p = 0}); }, "top_p");
  expect_error([] { Sampler({.top_p = 1.5}); }, "top_p");
  expect_error([] { Sampler({.repetition_penalty = 0}); }, "repetition_penalty");
  expect_error([] { validate({.top_p = -1}); }, "top_p");
  const float inf = std::numeric_limits<float>::infinity();
  Sampler s;
  expect_error([&] { s.sample(std::vector<float>{-inf, -inf}); }, "sampling", "-inf");
  expect_error([&] { s.sample(std::vector<float>{}); }, "sampling", "no logits");
}

// The distribution from a full sort, written plainly: the sampler ranks lazily (only as far as a
// draw reads), which must give the same top-k and top-p sets and probabilities.
std::vector<double> full_sort_probabilities(std::vector<float> logits, const SamplingOptions& o) {
  for (float& x : logits)
    if (std::isnan(x)) x = -std::numeric_limits<float>::infinity();
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < order.size()) order.resize(static_cast<size_t>(o.top_k));
  const double top = logits[order[0]];
  std::vector<double> p(order.size()), out(logits.size(), 0.0);
  double total = 0;
  for (size_t j = 0; j < order.size(); ++j)
    total += p[j] = std::exp((logits[order[j]] - top) / o.temperature);
  size_t keep = order.size();
  double cum = 0;
  for (size_t j = 0; j < order.size() && o.top_p < 1; ++j)
    if ((cum += p[j] / total) >= o.top_p) {
      keep = j + 1;
      break;
    }
  double kept = 0;
  for (size_t j = 0; j < keep; ++j) kept += p[j];
  for (size_t j = 0; j < keep; ++j) out[static_cast<size_t>(order[j])] = p[j] / kept;
  return out;
}

TEST(Sampling, LazyRankingGivesTheFullSortsDistribution) {
  // 5,000 logits with many ties (rounded to a quarter), some NaN and -inf, under several options:
  // the same ids drawn with the same probabilities (to rounding) as a full stable sort gives.
  const float inf = std::numeric_limits<float>::infinity();
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  std::vector<float> logits(5000);
  for (float& x : logits) x = static_cast<float>(static_cast<int64_t>(next() % 64) - 40) / 4;
  for (int i = 0; i < 50; ++i) logits[next() % logits.size()] = std::nanf("");
  for (int i = 0; i < 50; ++i) logits[next() % logits.size()] = -inf;
  for (double t : {0.3, 1.0, 2.5})
    for (int k : {0, 1, 7, 999, 6000})
      for (double p : {1.0, 0.9, 0.3}) {
        const SamplingOptions o{.temperature = t, .top_k = k, .top_p = p};
        const std::vector<double> want = full_sort_probabilities(logits, o);
        const std::vector<double> got = Sampler(o).probabilities(logits);
        for (size_t i = 0; i < logits.size(); ++i) {
          ASSERT_EQ(got[i] > 0, want[i] > 0) << "id " << i << " t " << t << " k " << k << " p " << p;
          ASSERT_NEAR(got[i], want[i], 1e-12 * want[i])
              << "id " << i << " t " << t << " k " << k << " p " << p;
        }
      }
}

TEST(Sampling, MinusInfinityIsNeverDrawn) {
  const float inf = std::numeric_limits<float>::infinity();
  Sampler s({.temperature = 1}, 3);
  for (int i = 0; i < 2000; ++i) ASSERT_NE(s.sample(std::vector<float>{0.0f, -inf, 0.0f}), 1);
}

}  // namespace
