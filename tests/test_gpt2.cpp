// models/gpt2.h against a reference: tests/fixtures/gpt2_tiny.safetensors holds a tiny GPT-2's
// random weights under Hugging Face's names and layouts, and gpt2_tiny_logits.txt the logits that
// HF's GPT2LMHeadModel forward (written out in torch) gives for a fixed token batch. Both come from
//
//   /usr/bin/python3 scripts/make_gpt2_fixture.py
//
// The logits must agree within 1e-4 * max |reference logit| (float32), for the full forward and for
// decoding position by position with the KV cache. A checkpoint with a tensor missing or misshapen
// is a lazygrad::Error that names it.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../models/gpt2.h"
#include "expect_error.h"
#include "relative_error.h"
#include "tensor/tensor_impl.h"
#include "test_files.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

using test::fixture_dir;

// gpt2_tiny_logits.txt: the config, the tokens and the reference logits.
struct Reference {
  models::GPT2Config config;
  int64_t B = 0, T = 0;
  std::vector<int64_t> tokens;
  std::vector<float> logits;  // [B, T, vocab]
};

Reference read_reference() {
  Reference ref;
  std::ifstream in(fixture_dir() / "gpt2_tiny_logits.txt");
  EXPECT_TRUE(in) << "cannot open " << fixture_dir() / "gpt2_tiny_logits.txt";
  std::string word;
  int64_t b = 0, t = 0, vocab = 0;
  in >> word >> ref.config.n_layer >> ref.config.n_head >> ref.config.n_embd >> ref.config.vocab_size >>
      ref.config.n_positions >> ref.config.layer_norm_epsilon;
  EXPECT_EQ(word, "config");
  in >> word >> ref.B >> ref.T;
  EXPECT_EQ(word, "tokens");
  ref.tokens.resize(ref.B * ref.T);
  for (auto& v : ref.tokens) in >> v;
  in >> word >> b >> t >> vocab;
  EXPECT_EQ(word, "logits");
  EXPECT_EQ(b, ref.B);
  EXPECT_EQ(t, ref.T);
  EXPECT_EQ(vocab, ref.config.vocab_size);
  ref.logits.resize(b * t * vocab);
  for (auto& v : ref.logits) in >> v;
  EXPECT_TRUE(in) << "gpt2_tiny_logits.txt is truncated";
  return ref;
}

StateDict checkpoint() { return load_safetensors((fixture_dir() / "gpt2_tiny.safetensors").string()); }

constexpr double kTolerance = 1e-4;

TEST(GPT2, ConfigsHaveTheReleasedSizes) {
  // Parameter counts of HF's gpt2 .. gpt2-xl (the tied head counted once), from the configs alone.
  auto count = [](const models::GPT2Config& c) {
    const int64_t block = 4 * c.n_embd + (c.n_embd * 3 * c.n_embd + 3 * c.n_embd) +
                          (c.n_embd * c.n_embd + c.n_embd) + (c.n_embd * 4 * c.n_embd + 4 * c.n_embd) +
                          (4 * c.n_embd * c.n_embd + c.n_embd);
    return c.vocab_size * c.n_embd + c.n_positions * c.n_embd + c.n_layer * block + 2 * c.n_embd;
  };
  EXPECT_EQ(count(models::GPT2Config::gpt2()), 124439808);
  EXPECT_EQ(count(models::GPT2Config::gpt2_medium()), 354823168);
  EXPECT_EQ(count(models::GPT2Config::gpt2_large()), 774030080);
  EXPECT_EQ(count(models::GPT2Config::gpt2_xl()), 1557611200);
}

TEST(GPT2, MatchesHuggingFaceLogits) {
  const Reference ref = read_reference();
  models::GPT2 model(ref.config);
  // The model's own parameter names are HF's, so its state dict has the checkpoint's keys (less
  // HF's attn.bias mask buffers).
  EXPECT_EQ(model.state_dict().count("h.1.attn.c_attn.weight"), 1u);
  EXPECT_EQ(model.state_dict().at("h.1.mlp.c_fc.weight").shape(), (Shape{16, 64}));
  model.load_hf_state_dict(checkpoint());
  model.eval();
  NoGrad no_grad;
  Tensor logits = model(Tensor::from_vector(ref.tokens, {ref.B, ref.T}));
  ASSERT_EQ(logits.shape(), (Shape{ref.B, ref.T, ref.config.vocab_size}));
  ASSERT_EQ(logits.dtype(), kFloat32);
  const double err = relative_error(logits.to_vector<float>(), ref.logits);
  EXPECT_LE(err, kTolerance);
  std::printf("full forward: max |diff| / max |ref| = %.3g\n", err);
}

TEST(GPT2, LoadingKeepsTheCheckpointsMemory) {
  // The float32 tensors of a safetensors file are buffers over its mapping; loading makes them the
  // model's tensors (load_state_dict's assign), so nothing is copied.
  const StateDict ckpt = checkpoint();
  models::GPT2 model(read_reference().config);
  model.load_hf_state_dict(ckpt);
  auto buffer_of = [](const Tensor& t) {  // state_dict's entries are detached views of the buffers
    const UOp* u = t.uop().get();
    while (u->op == Ops::DETACH) u = u->src[0].get();
    return contiguous_buffer_node(u);
  };
  for (const auto& [name, tensor] : model.ordered_state_dict()) {
    const UOp* mine = buffer_of(tensor);
    ASSERT_NE(mine, nullptr) << name;
    EXPECT_EQ(mine, buffer_of(ckpt.at(name))) << name;
  }
  // Updating the model in place does not change the file: the mapping is private.
  NoGrad no_grad;
  model.ln_f->bias.assign(model.ln_f->bias + 1);
  model.ln_f->bias.realize();
  EXPECT_NE(
      load_safetensors((fixture_dir() / "gpt2_tiny.safetensors").string()).at("ln_f.bias").to_vector<float>(),
      model.ln_f->bias.to_vector<float>());
}

TEST(GPT2, AcceptsTransformerPrefix) {
  const Reference ref = read_reference();
  StateDict prefixed;
  for (const auto& [name, tensor] : checkpoint()) prefixed["transformer." + name] = tensor;
  prefixed["lm_head.weight"] = prefixed.at("transformer.wte.weight");  // GPT2LMHeadModel's tied head
  models::GPT2 model(ref.config);
  model.load_hf_state_dict(prefixed);
  NoGrad no_grad;
  Tensor logits = model(Tensor::from_vector(ref.tokens, {ref.B, ref.T}));
  EXPECT_LE(relative_error(logits.to_vector<float>(), ref.logits), kTolerance);
}

TEST(GPT2, KVCacheDecodingMatchesFullForward) {
  const Reference ref = read_reference();
  models::GPT2 model(ref.config);
  model.load_hf_state_dict(checkpoint());
  NoGrad no_grad;
  const int64_t V = ref.config.vocab_size;
  // A prompt of 3 positions at once, then one position at a time.
  const int64_t prompt = 3;
  std::vector<float> got(ref.B * ref.T * V);
  auto decode = [&](int64_t start, int64_t len) {
    std::vector<int64_t> chunk;
    for (int64_t b = 0; b < ref.B; ++b)
      for (int64_t t = start; t < start + len; ++t) chunk.push_back(ref.tokens[b * ref.T + t]);
    Tensor logits = model.forward(Tensor::from_vector(chunk, {ref.B, len}), start);
    ASSERT_EQ(logits.shape(), (Shape{ref.B, len, V}));
    std::vector<float> values = logits.to_vector<float>();
    for (int64_t b = 0; b < ref.B; ++b)
      for (int64_t t = 0; t < len; ++t)
        std::copy_n(values.begin() + (b * len + t) * V, V, got.begin() + (b * ref.T + start + t) * V);
  };
  decode(0, prompt);
  for (int64_t t = prompt; t < ref.T; ++t) decode(t, 1);
  const double err = relative_error(got, ref.logits);
  EXPECT_LE(err, kTolerance);
  std::printf("KV-cache decoding: max |diff| / max |ref| = %.3g\n", err);

  // logits_to_keep 2: the last two positions' logits only (HF's argument; a prompt needs one).
  model.reset_cache();
  std::vector<int64_t> all(ref.tokens.begin(), ref.tokens.end());
  Tensor kept = model.forward(Tensor::from_vector(all, {ref.B, ref.T}), 0, 2);
  ASSERT_EQ(kept.shape(), (Shape{ref.B, 2, V}));
  std::vector<float> kept_values = kept.to_vector<float>(), want_kept;
  for (int64_t b = 0; b < ref.B; ++b)
    want_kept.insert(want_kept.end(), ref.logits.begin() + (b * ref.T + ref.T - 2) * V,
                     ref.logits.begin() + (b * ref.T + ref.T) * V);
  EXPECT_LE(relative_error(kept_values, want_kept), kTolerance);
  expect_error(
      [&] {
        model.forward(Tensor::from_vector(all, {ref.B, ref.T}), 0, ref.T + 1);
      },
      {"logits_to_keep"});

  // Starting over at position 0 overwrites the cache: the first position again.
  model.reset_cache();
  std::vector<float> first(ref.B * V);
  Tensor logits = model.forward(
      Tensor::from_vector(std::vector<int64_t>{ref.tokens[0], ref.tokens[ref.T]}, {ref.B, 1}), 0);
  std::vector<float> values = logits.to_vector<float>();
  for (int64_t b = 0; b < ref.B; ++b)
    for (int64_t v = 0; v < V; ++v)
      EXPECT_NEAR(values[b * V + v], ref.logits[b * ref.T * V + v], kTolerance * 10);
}

TEST(GPT2, FixedShapeDecodeStepsMatchFullForward) {
  // Sequence 0 of the reference: a prompt of 2 positions, then decode_step (the token and the
  // position are Variables) for every later position, under one Jit as models/generate.h runs it.
  const Reference ref = read_reference();
  models::GPT2 model(ref.config);
  model.load_hf_state_dict(checkpoint());
  NoGrad no_grad;
  const int64_t V = ref.config.vocab_size, prompt = 2, window = ref.config.n_positions;
  std::vector<int64_t> first(ref.tokens.begin(), ref.tokens.begin() + prompt);
  Tensor logits = model.forward(Tensor::from_vector(first, {1, prompt}), 0);
  std::vector<float> got = logits.to_vector<float>(),
                     want(ref.logits.begin(), ref.logits.begin() + ref.T * V);
  Variable token(0, kInt64), pos(0, kInt64);
  Jit step(
      [&](const std::vector<Tensor>&) { return std::vector<Tensor>{model.decode_step(token, pos, window)}; });
  int64_t loaded = 0;
  for (int64_t t = prompt; t < ref.T; ++t) {
    token.set(static_cast<double>(ref.tokens[t]));
    pos.set(static_cast<double>(t));
    std::vector<float> values = step({})[0].to_vector<float>();
    ASSERT_EQ(values.size(), static_cast<size_t>(V));
    got.insert(got.end(), values.begin(), values.end());
    if (t == prompt) loaded = GlobalCounters::compile_count + GlobalCounters::cache_hits;
  }
  const double err = relative_error(got, want);
  EXPECT_LE(err, kTolerance);
  std::printf("fixed-shape decode steps: max |diff| / max |ref| = %.3g\n", err);
  EXPECT_GT(step.captured_kernels(), 0u);
  EXPECT_EQ(GlobalCounters::compile_count + GlobalCounters::cache_hits, loaded)
      << "every position after the first runs the first one's kernels";
  // A position past the window, or a token outside the vocabulary, is an error when the step runs.
  pos.set(static_cast<double>(window));
  EXPECT_THROW(step({}), Error);
  pos.set(3);
  token.set(static_cast<double>(V));
  EXPECT_THROW(step({}), Error);
}

TEST(GPT2, MissingTensorIsAnErrorNamingIt) {
  const Reference ref = read_reference();
  StateDict state = checkpoint();
  state.erase("h.1.mlp.c_proj.bias");
  models::GPT2 model(ref.config);
  expect_error([&] { model.load_hf_state_dict(state); }, {"GPT2", "h.1.mlp.c_proj.bias"});
}

TEST(GPT2, WrongShapeIsAnErrorNamingIt) {
  const Reference ref = read_reference();
  StateDict state = checkpoint();
  // A Linear-style [out, in] weight where HF's Conv1D has [in, out].
  state["h.0.attn.c_attn.weight"] = state.at("h.0.attn.c_attn.weight").t();
  models::GPT2 model(ref.config);
  expect_error([&] { model.load_hf_state_dict(state); },
               {"GPT2", "h.0.attn.c_attn.weight", "{48, 16}", "{16, 48}"});
  // A config that does not match the checkpoint.
  models::GPT2Config wider = ref.config;
  wider.vocab_size += 1;
  models::GPT2 other(wider);
  expect_error([&] { other.load_hf_state_dict(checkpoint()); }, {"GPT2", "wte.weight", "{101, 16}"});
}

TEST(GPT2, BadInputsAreErrors) {
  models::GPT2Config config = read_reference().config;
  models::GPT2 model(config);
  NoGrad no_grad;
  expect_error([&] { model(Tensor::zeros({4}, kInt64)); }, {"GPT2", "[B, T]"});
  expect_error([&] { model(Tensor::zeros({1, config.n_positions + 1}, kInt64)); }, {"GPT2", "n_positions"});
  expect_error([&] { model.forward(Tensor::zeros({1, 1}, kInt64), 3); }, {"GPT2", "start_pos 0"});
  config.n_head = 5;
  expect_error([&] { models::GPT2 bad(config); }, {"GPT2", "n_head"});
}

}  // namespace
