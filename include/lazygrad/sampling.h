// Choosing the next token of a language model from its logits: greedy (temperature 0), temperature,
// top-k, top-p (nucleus) and a repetition penalty, applied in Hugging Face's order (repetition
// penalty, temperature, top-k, top-p), with a seeded generator of its own, so that a seed gives the
// same tokens on every run and machine. docs/gpt2.md has the details.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace lazygrad {

struct SamplingOptions {
  double temperature = 1.0;         // 0: greedy (the argmax; the first one on a tie); must be >= 0
  int64_t top_k = 0;                // keep the k most likely tokens; 0: all; must be >= 0
  double top_p = 1.0;               // keep the smallest set of most likely tokens whose probability
                                    // reaches top_p; 1: all; must be in (0, 1]
  double repetition_penalty = 1.0;  // > 0; 1: none (see apply_repetition_penalty)
};

// Throws lazygrad::Error naming the first option out of range (or not a number).
void validate(const SamplingOptions& options);

// Hugging Face's RepetitionPenaltyLogitsProcessor: for every token in `previous` (each counted once,
// however often it occurs), a positive logit is divided by `penalty` and a negative one multiplied by
// it, so penalty > 1 makes repeats less likely. Ids outside the logits throw lazygrad::Error.
void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> previous, double penalty);

class Sampler {
 public:
  // Throws as validate() does.
  explicit Sampler(const SamplingOptions& options = {}, uint64_t seed = 0);

  // The next token given the last position's logits (one per vocabulary entry) and the tokens so
  // far (the prompt and what was generated; only the repetition penalty looks at them). Logits
  // that are all -inf or NaN throw lazygrad::Error.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> previous = {});

  // The distribution sample() draws from (with temperature > 0): softmax of the processed logits,
  // zero outside the top-k / top-p set. For tests and for inspection.
  std::vector<double> probabilities(std::span<const float> logits,
                                    std::span<const int32_t> previous = {}) const;

  const SamplingOptions& options() const { return options_; }

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace lazygrad
