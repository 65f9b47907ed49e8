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
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "../models/gpt2.h"
#include "engine/schedule.h"
#include "expect_error.h"
#include "relative_error.h"
#include "runtime/buffer.h"
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
  // model's tensors (load_state_dict's assign), so nothing is copied. A model on another device
  // (DEVICE=CUDA) gets one copy of each there.
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
    EXPECT_EQ(tensor.device(), default_device()) << name;
    if (default_device() == "CPU") {
      EXPECT_EQ(mine, buffer_of(ckpt.at(name))) << name;
    } else {
      EXPECT_EQ(mine->as<std::shared_ptr<Buffer>>()->device, default_device()) << name;
    }
  }
  // Updating the model in place does not change the file: the mapping is private.
  NoGrad no_grad;
  model.ln_f->bias.assign(model.ln_f->bias + 1);
  model.ln_f->bias.realize();
  EXPECT_NE(
      load_safetensors((fixture_dir() / "gpt2_tiny.safetensors").string()).at("ln_f.bias").to_vector<float>(),
      model.ln_f->bias.to_vector<float>());
}

TEST(GPT2, FromCheckpointComputesNoRandomInitialization) {
  // Every parameter is the checkpoint's, so from_hf_checkpoint builds the model under
  // nn::init::SkipInit: no kernel runs (a 124M model's random draws took 1.6 s), and the logits are
  // the checkpoint's.
  const Reference ref = read_reference();
  const StateDict ckpt = checkpoint();
  GlobalCounters::reset();
  auto model = models::GPT2::from_hf_checkpoint(ref.config, ckpt);
  EXPECT_EQ(GlobalCounters::kernel_count, 0);  // on another device, a copy of each tensor and no kernel
  EXPECT_FALSE(nn::init::SkipInit::active());
  model->eval();
  NoGrad no_grad;
  Tensor logits = (*model)(Tensor::from_vector(ref.tokens, {ref.B, ref.T}));
  EXPECT_LE(relative_error(logits.to_vector<float>(), ref.logits), kTolerance);
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

TEST(GPT2, TensorListIsTheModelsStateDict) {
  // visit_gpt2_tensors (the config alone) lists what the model registers, in its order.
  const models::GPT2Config config = read_reference().config;
  models::GPT2 model(config);
  std::vector<std::pair<std::string, Shape>> listed, registered;
  models::visit_gpt2_tensors(
      config, [&](const std::string& name, const models::ConfigShape& shape, const std::string&) {
        listed.emplace_back(name, models::sizes_of(shape));
      });
  for (const auto& [name, t] : model.ordered_state_dict()) {
    registered.emplace_back(name, t.shape());
    EXPECT_EQ(t.dtype(), kFloat32) << name;
  }
  EXPECT_EQ(listed, registered);
  int64_t count = 0;
  for (const auto& [name, shape] : registered)
    count += std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  EXPECT_EQ(config.parameter_count(), count);
}

TEST(GPT2, ConfigJsonIsReadAndChecked) {
  const models::GPT2Config tiny = models::GPT2Config::from_json(
      R"({"model_type": "gpt2", "activation_function": "gelu_new", "n_layer": 2, "n_head": 4, "n_embd": 16,
          "vocab_size": 101, "n_positions": 16, "n_ctx": 16, "layer_norm_epsilon": 1e-05})");
  EXPECT_EQ(tiny.n_layer, 2);
  EXPECT_EQ(tiny.n_embd, 16);
  EXPECT_EQ(tiny.vocab_size, 101);
  EXPECT_EQ(tiny.layer_norm_epsilon, 1e-5);
  // Absent fields take HF's GPT2Config defaults (gpt2's sizes).
  const models::GPT2Config defaults = models::GPT2Config::from_json(R"({"n_layer": null})");
  EXPECT_EQ(defaults.n_layer, 12);
  EXPECT_EQ(defaults.n_embd, 768);
  EXPECT_EQ(defaults.vocab_size, 50257);
  EXPECT_EQ(models::GPT2Config::gpt2().parameter_count(), 124439808);

  // Counts must be integer literals; sizes positive; the parameter count must fit in 64 bits. Each
  // error names the file and the key.
  auto bad = [](const std::string& fields, std::initializer_list<std::string> words) {
    std::vector<std::string> all(words);
    all.push_back("\"m/config.json\"");
    std::string msg = "(no lazygrad::Error thrown)";
    try {
      models::GPT2Config::from_json("{" + fields + "}", "\"m/config.json\"");
    } catch (const Error& e) {
      msg = e.what();
    }
    for (const std::string& w : all)
      EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' is not in: " << msg;
  };
  bad(R"("n_layer": 1e9)", {"GPT2Config", "\"n_layer\" must be an integer, found 1e9"});
  bad(R"("n_layer": 12.0)", {"\"n_layer\" must be an integer, found 12.0"});
  bad(R"("n_embd": "768")", {"\"n_embd\" must be an integer, found a string"});
  bad(R"("n_head": 99999999999999999999)", {"\"n_head\" must be a 64-bit integer"});
  bad(R"("n_layer": -1)", {"n_layer must be positive, got -1"});
  bad(R"("vocab_size": 0)", {"vocab_size must be positive, got 0"});
  bad(R"("n_layer": 1000000000000000000)", {"n_layer 1000000000000000000", "overflow 64 bits"});
  bad(R"("n_embd": 4294967296, "n_head": 1)", {"n_embd 4294967296", "overflow 64 bits"});
  bad(R"("n_positions": 4611686018427387904)", {"n_positions 4611686018427387904", "overflow"});
  bad(R"("n_head": 5)", {"n_embd (768) must be a multiple of n_head (5)"});
  bad(R"("layer_norm_epsilon": -1)", {"layer_norm_epsilon must be a positive number"});
  bad(R"("activation_function": "relu")", {"activation_function \"relu\" is not supported"});
  bad(R"("model_type": "llama")", {"model_type \"llama\" is not a GPT-2 config"});
  expect_error([] { models::GPT2Config::from_json("[1]", "x"); },
               {"GPT2Config", "x", "expected a JSON object"});
  expect_error([] { models::GPT2Config::from_file("/nonexistent/config.json"); },
               {"GPT2Config", "cannot open", "/nonexistent/config.json"});
}

// The checkpoint is read against the config before a model is built: a config that does not match
// it is refused without building (initializing, allocating) a single layer, so one that claims a
// billion layers or a huge n_embd fails at once instead of running out of memory.
TEST(GPT2, CheckpointIsCheckedBeforeAnyLayerIsBuilt) {
  const models::GPT2Config config = read_reference().config;
  const StateDict ckpt = checkpoint();
  auto refused_unbuilt = [&](const models::GPT2Config& c, const StateDict& state,
                             std::initializer_list<std::string> words) {
    const int64_t kernels = GlobalCounters::kernel_count;
    std::vector<std::string> all(words);
    all.insert(all.begin(), "GPT2: \"tiny.safetensors\": ");
    std::string msg = "(no lazygrad::Error thrown)";
    try {
      models::GPT2::from_hf_checkpoint(c, state, "tiny.safetensors");
    } catch (const Error& e) {
      msg = e.what();
    }
    for (const std::string& w : all)
      EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' is not in: " << msg;
    return GlobalCounters::kernel_count == kernels;  // no parameter was initialized
  };
  models::GPT2Config deeper = config;
  deeper.n_layer = 3;  // the checkpoint has 2
  ASSERT_TRUE(refused_unbuilt(deeper, ckpt, {"no tensor \"h.2.ln_1.weight\" (layer 2 of n_layer 3)"}))
      << "layers were built before the checkpoint was checked";
  deeper.n_layer = 1000000000;
  ASSERT_TRUE(
      refused_unbuilt(deeper, ckpt, {"no tensor \"h.2.ln_1.weight\" (layer 2 of n_layer 1000000000)"}));
  models::GPT2Config wide = config;
  wide.n_embd = 4194304;
  EXPECT_TRUE(
      refused_unbuilt(wide, ckpt,
                      {"tensor \"wte.weight\" has shape {101, 16}, expected {101, 4194304} for this config: "
                       "dimension 1 is 16, expected 4194304 (n_embd)"}));
  models::GPT2Config longer = config;
  longer.n_positions = 32;
  EXPECT_TRUE(
      refused_unbuilt(longer, ckpt, {"\"wpe.weight\"", "dimension 0 is 16, expected 32 (n_positions)"}));
  StateDict transposed = ckpt;
  transposed["h.1.mlp.c_fc.weight"] = ckpt.at("h.1.mlp.c_fc.weight").t();
  EXPECT_TRUE(refused_unbuilt(config, transposed,
                              {"\"h.1.mlp.c_fc.weight\" has shape {64, 16}, expected {16, 64}",
                               "dimension 0 is 64, "
                               "expected 16 (n_embd)"}));
  StateDict flat = ckpt;
  flat["ln_f.bias"] = ckpt.at("ln_f.bias").reshape({1, 16});
  EXPECT_TRUE(refused_unbuilt(config, flat, {"\"ln_f.bias\"", "2 dimensions, expected 1"}));
  models::GPT2Config absurd = config;
  absurd.n_layer = -2;
  expect_error([&] { models::GPT2::from_hf_checkpoint(absurd, ckpt); },
               {"GPT2Config", "n_layer must be positive"});
}

TEST(GPT2, IntegerCheckpointTensorsAreRefusedFloatOnesConverted) {
  // An int32 tensor is not a float model's weight: refused by name (PyTorch's copy_ would convert
  // it), before the model is built and by load_hf_state_dict alike. float16 and bfloat16 convert.
  const models::GPT2Config config = read_reference().config;
  StateDict state = checkpoint();
  state["transformer.h.0.attn.c_proj.weight"] = state.at("h.0.attn.c_proj.weight").to(kInt32);
  state.erase("h.0.attn.c_proj.weight");
  expect_error(
      [&] { models::GPT2::from_hf_checkpoint(config, state, "m.safetensors"); },
      {"GPT2: \"m.safetensors\": tensor \"transformer.h.0.attn.c_proj.weight\" has dtype int32", "float32"});
  models::GPT2 model(config);
  const std::vector<float> before = model.state_dict().at("h.0.attn.c_proj.weight").to_vector<float>();
  expect_error([&] { model.load_hf_state_dict(state); }, {"GPT2", "h.0.attn.c_proj.weight", "int32"});
  EXPECT_EQ(model.state_dict().at("h.0.attn.c_proj.weight").to_vector<float>(), before)
      << "a failed load wrote";
  state["transformer.h.0.attn.c_proj.weight"] = Tensor::ones({16, 16}, kBool);
  expect_error([&] { model.load_hf_state_dict(state); }, {"GPT2", "h.0.attn.c_proj.weight", "bool"});

  StateDict half = checkpoint();
  half["wte.weight"] = half.at("wte.weight").to(kFloat16);
  half["h.1.mlp.c_fc.weight"] = half.at("h.1.mlp.c_fc.weight").to(kBFloat16);
  auto loaded = models::GPT2::from_hf_checkpoint(config, half);
  EXPECT_EQ(loaded->wte->weight.dtype(), kFloat32);
  EXPECT_EQ(loaded->wte->weight.to_vector<float>(), half.at("wte.weight").to(kFloat32).to_vector<float>());
  EXPECT_EQ(loaded->blocks[1]->mlp->c_fc->weight.to_vector<float>(),
            half.at("h.1.mlp.c_fc.weight").to(kFloat32).to_vector<float>());
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
