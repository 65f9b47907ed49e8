// What the multi-device training tests (test_data_parallel, test_shard) compare: the MLP trained
// for 10 Adam steps on one device and split across several, loss by loss and parameter by parameter.
#pragma once

#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace lazygrad::test {

constexpr int64_t kTrainingBatch = 18;  // not a multiple of 4: 4 devices get 5, 5, 4 and 4 rows
constexpr int kTrainingSteps = 10;

// The batches every run trains on: random images and labels, the same in every run.
inline std::vector<std::pair<Tensor, Tensor>> training_batches() {
  Tensor::manual_seed(7);
  std::vector<std::pair<Tensor, Tensor>> out;
  for (int s = 0; s < kTrainingSteps; s++)
    out.emplace_back(Tensor::rand({kTrainingBatch, 784}).realize(),
                     Tensor::randint(0, 10, {kTrainingBatch}).realize());
  return out;
}

struct TrainingRun {
  std::vector<float> losses;
  std::vector<Tensor> params;  // on CPU
};

inline void expect_same_run(const TrainingRun& got, const TrainingRun& want, const std::string& what) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t s = 0; s < want.losses.size(); s++)
    EXPECT_NEAR(got.losses[s], want.losses[s], 1e-5 * std::abs(want.losses[s])) << what << ", step " << s;
  ASSERT_EQ(got.params.size(), want.params.size());
  for (size_t j = 0; j < want.params.size(); j++)
    // The losses agree to 1e-5; the parameters to 2e-5 absolute, 2% of one Adam step (lr 1e-3):
    // the split batch sums each gradient in another order, and Adam's m / sqrt(v) turns a rounding
    // difference in a near-zero gradient into a visible part of a step (8.6e-6 measured on 4 devices).
    EXPECT_TRUE(got.params[j].allclose(want.params[j], 1e-5, 2e-5))
        << what << ", parameter " << j << ": max difference "
        << (got.params[j] - want.params[j]).abs().max().item<float>() << ", max |value| "
        << want.params[j].abs().max().item<float>();
}

}  // namespace lazygrad::test
