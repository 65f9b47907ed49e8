// Text generation with a causal language model with a KV cache (models/gpt2.h, models/llama.h): the
// prompt goes through the model in one forward (filling the KV cache), then tokens are chosen one at
// a time by a lazygrad::Sampler from the last position's logits and fed back one by one through the
// cache. Header-only and public API only.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/jit.h>
#include <lazygrad/sampling.h>
#include <lazygrad/tensor.h>
#include <lazygrad/variable.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "gpt2.h"
#include "llama.h"

namespace lazygrad::models {

struct GenerateOptions {
  int64_t max_tokens = 16;    // at most this many new tokens (>= 0)
  int32_t eos_token_id = -1;  // stop after this token (it is returned and passed to on_token); -1: none
  std::vector<int32_t> stop_token_ids =
      {};  // more tokens that stop as eos_token_id does (LLaMA 3's <|eot_id|>)
  // Decode steps attend to a window of the cache that grows by this many positions (>= 1): a
  // smaller one reads less of the cache per step, a larger one captures fewer Jits.
  int64_t decode_window = 128;
};

// What generate() measured. Times are wall-clock seconds: prompt_seconds is the prompt's forward
// (with the logits copied out); generate_seconds runs from then to the end: every sampling step,
// every one-token forward and the callbacks.
struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prompt_seconds = 0;
  double generate_seconds = 0;
  std::string stop_reason;  // "max_tokens", "eos", or the model's kContextName ("n_positions", "max_context")
};

// Generates up to options.max_tokens tokens after `prompt` (ids < vocab_size, 1 to context_length of
// them), calling on_token(id) for each as soon as it is chosen (for streaming). Stops after
// max_tokens tokens, after the end-of-text token, or when the sequence fills the model's context
// (GPT-2's n_positions, LLaMA's max_context). Returns the new tokens (not the prompt). Resets the
// model's KV cache first.
//
// Model: forward(tokens [1, T], start_pos) -> logits [1, T, vocab] through the KV cache,
// decode_step(token, pos, window) -> logits [1, 1, vocab] with fixed shapes (Variables for the token
// and its position), reset_cache(), vocab_size(), context_length() and kContextName (the limit's
// name for messages).
template <class Model>
std::vector<int32_t> generate(Model& model, std::span<const int32_t> prompt, Sampler& sampler,
                              const GenerateOptions& options,
                              const std::function<void(int32_t)>& on_token = {},
                              GenerateStats* stats = nullptr) {
  const int64_t context = model.context_length(), vocab_size = model.vocab_size();
  const std::string context_name = Model::kContextName;
  if (prompt.empty()) throw Error("generate: the prompt has no tokens");
  if (static_cast<int64_t>(prompt.size()) > context)
    throw Error("generate: the prompt has " + std::to_string(prompt.size()) + " tokens, more than " +
                context_name + " " + std::to_string(context));
  if (options.max_tokens < 0) throw Error("generate: max_tokens must be >= 0");
  if (options.decode_window < 1) throw Error("generate: decode_window must be >= 1");
  for (int32_t id : prompt)
    if (id < 0 || id >= vocab_size)
      throw Error("generate: prompt token " + std::to_string(id) + " is outside the model's vocabulary of " +
                  std::to_string(vocab_size));

  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  NoGrad no_grad;
  model.reset_cache();
  std::vector<int32_t> sequence(prompt.begin(), prompt.end()), generated;

  // The prompt: positions [0, T) in one forward; returns the last position's logits.
  auto prompt_logits = [&](std::span<const int32_t> tokens) {
    const int64_t T = static_cast<int64_t>(tokens.size());
    std::vector<int64_t> ids(tokens.begin(), tokens.end());
    const Tensor logits = model.forward(Tensor::from_vector(ids, {1, T}), 0, /*logits_to_keep=*/1);
    return logits.to_vector<float>();
  };
  // Then one token at a time with fixed shapes: the token and its position are Variables, and the
  // attention covers a window of the cache that grows in steps of decode_window positions, so each
  // window's step is captured by a Jit once and replayed for every position in it.
  Variable token_var(0, kInt64), pos_var(0, kInt64);
  std::map<int64_t, Jit> steps;  // window -> its captured step
  auto step_logits = [&](int32_t token, int64_t pos) {
    token_var.set(token);
    pos_var.set(static_cast<double>(pos));
    const int64_t step = options.decode_window, window = std::min(context, (pos / step + 1) * step);
    auto it = steps.find(window);
    if (it == steps.end())
      it = steps
               .emplace(window, Jit([&model, &token_var, &pos_var, window](const std::vector<Tensor>&) {
                          return std::vector<Tensor>{model.decode_step(token_var, pos_var, window)};
                        }))
               .first;
    const Tensor logits = it->second({})[0];
    return logits.to_vector<float>();
  };

  GenerateStats s;
  s.prompt_tokens = static_cast<int64_t>(prompt.size());
  const Clock::time_point t0 = Clock::now();
  std::vector<float> logits = prompt_logits(prompt);
  const Clock::time_point t1 = Clock::now();
  s.prompt_seconds = seconds(t0, t1);
  s.stop_reason = "max_tokens";
  while (static_cast<int64_t>(generated.size()) < options.max_tokens) {
    if (static_cast<int64_t>(sequence.size()) >= context) {
      s.stop_reason = context_name;
      break;
    }
    const int32_t next = sampler.sample(logits, sequence);
    sequence.push_back(next);
    generated.push_back(next);
    if (on_token) on_token(next);
    if (next == options.eos_token_id ||
        std::find(options.stop_token_ids.begin(), options.stop_token_ids.end(), next) !=
            options.stop_token_ids.end()) {
      s.stop_reason = "eos";
      break;
    }
    // Feed it only if another token will be chosen.
    if (static_cast<int64_t>(generated.size()) < options.max_tokens &&
        static_cast<int64_t>(sequence.size()) < context)
      logits = step_logits(sequence.back(), static_cast<int64_t>(sequence.size()) - 1);
  }
  s.generated_tokens = static_cast<int64_t>(generated.size());
  s.generate_seconds = seconds(t1, Clock::now());
  if (stats) *stats = s;
  return generated;
}

}  // namespace lazygrad::models
