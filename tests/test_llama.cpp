// models/llama.h against a reference: tests/fixtures/llama_tiny_{llama3,llama2,mistral}/ are tiny
// Hugging Face model folders (config.json and safetensors under HF's names, seeded random weights)
// with the logits and the greedy continuation that HF's LlamaForCausalLM / MistralForCausalLM forward
// (written out in torch) gives. They come from
//
//   /usr/bin/python3 scripts/make_llama_fixture.py
//
// llama3: grouped-query attention, llama3 rope scaling, an untied head, sharded into two files with
// an index; llama2: multi-head attention, linear rope scaling, a tied head; mistral: one key/value
// head, an explicit head_dim, a sliding window of 4 in a 12-token sequence. The logits must agree
// within 1e-4 * max |reference logit| (float32), for the full forward and for decoding with the KV
// cache. Also: config.json parsing (HF's defaults, rope scaling variants, bad values), checkpoints
// with a tensor missing or misshapen, and the checks of load_safetensors_folder on sharded folders.
#include <gtest/gtest.h>
#include <lazygrad/json.h>
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "../models/generate.h"
#include "../models/llama.h"
#include "../models/llama_gguf.h"
#include "expect_error.h"
#include "relative_error.h"
#include "test_files.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

using models::Llama;
using models::LlamaConfig;
using models::RopeScaling;
using test::fixture_dir;
using test::write_text;

constexpr double kTolerance = 1e-4;
const char* const kFixtures[] = {"llama3", "llama2", "mistral"};

fs::path folder(const std::string& name) { return fixture_dir() / ("llama_tiny_" + name); }

// logits.txt: the tokens, the full forward's logits, and (llama3, mistral) the reference's own
// decoding through its KV cache.
struct Reference {
  int64_t B = 0, T = 0, V = 0;
  std::vector<int64_t> tokens;
  std::vector<float> full;      // [B, T, V]
  std::vector<int64_t> chunks;  // the lengths of the cached run's forwards, in order
  std::vector<float> cached;    // [B, T, V]
};

Reference read_reference(const std::string& name) {
  Reference ref;
  std::ifstream in(folder(name) / "logits.txt");
  EXPECT_TRUE(in) << "cannot open " << folder(name) / "logits.txt";
  std::string word;
  int64_t b = 0, t = 0;
  in >> word >> ref.B >> ref.T;
  EXPECT_EQ(word, "tokens");
  ref.tokens.resize(ref.B * ref.T);
  for (auto& v : ref.tokens) in >> v;
  in >> word >> b >> t >> ref.V;
  EXPECT_EQ(word, "full");
  EXPECT_EQ(b * t, ref.B * ref.T);
  ref.full.resize(ref.B * ref.T * ref.V);
  for (auto& v : ref.full) in >> v;
  EXPECT_TRUE(in) << name << "/logits.txt is truncated";
  size_t n = 0;
  int64_t v = 0;
  if (!(in >> word)) return ref;  // no cached run
  EXPECT_EQ(word, "cached");
  in >> n;
  ref.chunks.resize(n);
  for (auto& c : ref.chunks) in >> c;
  in >> b >> t >> v;
  EXPECT_EQ(b * t * v, ref.B * ref.T * ref.V);
  ref.cached.resize(ref.full.size());
  for (auto& x : ref.cached) in >> x;
  EXPECT_TRUE(in) << name << "/logits.txt's cached run is truncated";
  return ref;
}

// A model of the fixture's config with its weights.
std::shared_ptr<Llama> load(const std::string& name, const LlamaConfig& config) {
  auto model = std::make_shared<Llama>(config);
  model->load_hf_state_dict(load_safetensors_folder(folder(name).string()));
  return model;
}
LlamaConfig config_of(const std::string& name) {
  return LlamaConfig::from_file((folder(name) / "config.json").string());
}

Tensor tokens_of(const Reference& ref) { return Tensor::from_vector(ref.tokens, {ref.B, ref.T}); }

// ---- configs ----

TEST(LlamaConfig, PresetsHaveTheReleasedSizes) {
  // The parameter counts of the released checkpoints, from the configs alone.
  EXPECT_EQ(LlamaConfig::llama2_7b().parameter_count(), 6738415616);
  EXPECT_EQ(LlamaConfig::llama3_8b().parameter_count(), 8030261248);
  EXPECT_EQ(LlamaConfig::llama3_1_8b().parameter_count(), 8030261248);
  EXPECT_EQ(LlamaConfig::tinyllama_1_1b().parameter_count(), 1100048384);
  EXPECT_EQ(LlamaConfig::mistral_7b().parameter_count(), 7241732096);
  for (const LlamaConfig& c : {LlamaConfig::llama2_7b(), LlamaConfig::llama3_8b(), LlamaConfig::llama3_1_8b(),
                               LlamaConfig::tinyllama_1_1b(), LlamaConfig::mistral_7b()})
    EXPECT_NO_THROW(c.validate());
  // The formula counts what the module registers (tied and untied, GQA and an explicit head_dim).
  for (const char* name : kFixtures) {
    const LlamaConfig c = config_of(name);
    int64_t registered = 0;
    for (const auto& [key, tensor] : Llama(c).state_dict()) registered += tensor.numel();
    EXPECT_EQ(registered, c.parameter_count()) << name;
  }
}

TEST(LlamaConfig, ReadsTheFixtureConfigs) {
  const LlamaConfig a = config_of("llama3");
  EXPECT_EQ(a.hidden_size, 32);
  EXPECT_EQ(a.intermediate_size, 48);
  EXPECT_EQ(a.num_attention_heads, 4);
  EXPECT_EQ(a.num_key_value_heads, 2);
  EXPECT_EQ(a.head_size(), 8);
  EXPECT_EQ(a.rope_theta, 500000.0);
  EXPECT_EQ(a.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(a.rope_scaling.factor, 8.0);
  EXPECT_EQ(a.rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(a.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(a.rope_scaling.original_max_position_embeddings, 256);
  EXPECT_FALSE(a.tie_word_embeddings);
  EXPECT_EQ(a.eos_token_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.bos_token_id, 1);
  EXPECT_FALSE(a.sliding_window);

  const LlamaConfig b = config_of("llama2");  // {"type": "linear"}: the older spelling
  EXPECT_EQ(b.rope_scaling.type, RopeScaling::Type::Linear);
  EXPECT_EQ(b.rope_scaling.factor, 2.0);
  EXPECT_TRUE(b.tie_word_embeddings);
  EXPECT_EQ(b.num_key_value_heads, 4);
  EXPECT_EQ(b.rms_norm_eps, 1e-5);
  EXPECT_EQ(b.max_position_embeddings, 64);

  const LlamaConfig c = config_of("mistral");
  EXPECT_EQ(c.sliding_window, 4);
  EXPECT_EQ(c.head_size(), 16);  // given, not 32 / 4
  EXPECT_EQ(c.num_key_value_heads, 1);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
}

TEST(LlamaConfig, AbsentFieldsTakeHuggingFaceDefaults) {
  const LlamaConfig llama = LlamaConfig::from_json("{}");
  EXPECT_EQ(llama.hidden_size, 4096);
  EXPECT_EQ(llama.intermediate_size, 11008);
  EXPECT_EQ(llama.num_key_value_heads, 32);
  EXPECT_EQ(llama.head_size(), 128);
  EXPECT_EQ(llama.rms_norm_eps, 1e-6);
  EXPECT_EQ(llama.rope_theta, 10000.0);
  EXPECT_EQ(llama.max_position_embeddings, 2048);
  EXPECT_EQ(llama.rope_scaling.type, RopeScaling::Type::None);
  EXPECT_EQ(llama.bos_token_id, 1);
  EXPECT_EQ(llama.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_FALSE(llama.sliding_window);

  // num_key_value_heads follows num_attention_heads; head_dim follows hidden_size / heads.
  const LlamaConfig mha = LlamaConfig::from_json(R"({"hidden_size": 256, "num_attention_heads": 8})");
  EXPECT_EQ(mha.num_key_value_heads, 8);
  EXPECT_EQ(mha.head_size(), 32);

  const LlamaConfig mistral = LlamaConfig::from_json(R"({"model_type": "mistral"})");
  EXPECT_EQ(mistral.num_key_value_heads, 8);
  EXPECT_EQ(mistral.intermediate_size, 14336);
  EXPECT_EQ(mistral.sliding_window, 4096);
  EXPECT_EQ(mistral.max_position_embeddings, 131072);

  // null where HF allows None.
  const LlamaConfig nulls = LlamaConfig::from_json(
      R"({"model_type": "mistral", "sliding_window": null, "rope_scaling": null, "head_dim": null,
          "bos_token_id": null, "eos_token_id": null, "num_key_value_heads": null})");
  EXPECT_FALSE(nulls.sliding_window);
  EXPECT_FALSE(nulls.bos_token_id);
  EXPECT_TRUE(nulls.eos_token_ids.empty());
  EXPECT_EQ(nulls.num_key_value_heads, 32);
  EXPECT_EQ(nulls.rope_scaling.type, RopeScaling::Type::None);
  EXPECT_EQ(LlamaConfig::from_json(R"({"rope_scaling": {"rope_type": "default"}})").rope_scaling.type,
            RopeScaling::Type::None);
  EXPECT_EQ(
      LlamaConfig::from_json(R"({"rope_scaling": {"rope_type": "linear", "factor": 4}})").rope_scaling.factor,
      4.0);
}

TEST(LlamaConfig, BadConfigsAreErrors) {
  auto bad = [](const std::string& text, std::initializer_list<std::string> words) {
    expect_error([&] { LlamaConfig::from_json(text, "test.json"); }, words);
  };
  bad("{\"hidden_size\": 4096,}", {"LlamaConfig", "test.json", "not valid JSON", "byte 21"});
  bad("[1]", {"LlamaConfig", "a JSON object"});
  bad(R"({"hidden_size": "4096"})", {"LlamaConfig", "hidden_size", "integer", "byte 16"});
  bad(R"({"hidden_size": 40.5})", {"hidden_size", "integer", "40.5"});
  bad(R"({"vocab_size": 99999999999999999999})", {"vocab_size", "integer"});
  bad(R"({"num_hidden_layers": 0})", {"num_hidden_layers", "positive"});
  bad(R"({"num_attention_heads": 5})", {"hidden_size", "multiple of num_attention_heads"});
  bad(R"({"num_key_value_heads": 3})", {"num_key_value_heads", "multiple"});
  bad(R"({"head_dim": 7})", {"head_dim", "even"});
  bad(R"({"rms_norm_eps": -1})", {"rms_norm_eps"});
  bad(R"({"rope_theta": 1e999})", {"rope_theta", "out of range"});
  bad(R"({"sliding_window": 0, "model_type": "mistral"})", {"sliding_window", "positive"});
  bad(R"({"tie_word_embeddings": 1})", {"tie_word_embeddings", "true or false"});
  bad(R"({"eos_token_id": [2, "x"]})", {"eos_token_id", "integer"});
  bad(R"({"model_type": "gpt2"})", {"model_type", "gpt2", "not supported"});
  bad(R"({"hidden_act": "gelu"})", {"hidden_act", "gelu", "not supported"});
  bad(R"({"attention_bias": true})", {"attention_bias", "not supported"});
  bad(R"({"mlp_bias": true})", {"mlp_bias", "not supported"});
  bad(R"({"rope_scaling": 2})", {"rope_scaling", "object"});
  bad(R"({"rope_scaling": {"factor": 2}})", {"rope_scaling", "rope_type", "missing"});
  bad(R"({"rope_scaling": {"rope_type": "yarn", "factor": 4}})", {"rope_scaling", "yarn", "not supported"});
  bad(R"({"rope_scaling": {"type": "dynamic", "factor": 4}})", {"dynamic", "not supported"});
  bad(R"({"rope_scaling": {"rope_type": "linear"}})", {"rope_scaling", "factor", "missing"});
  bad(R"({"rope_scaling": {"rope_type": "linear", "factor": 0.5}})", {"factor", ">= 1"});
  bad(R"({"rope_scaling": {"rope_type": "llama3", "factor": 8, "high_freq_factor": 4,
      "original_max_position_embeddings": 8192}})",
      {"rope_scaling", "low_freq_factor", "missing"});
  bad(R"({"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 4,
      "original_max_position_embeddings": 8192}})",
      {"low_freq_factor < high_freq_factor"});
  bad(R"({"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
      "original_max_position_embeddings": 8192.5}})",
      {"original_max_position_embeddings", "integer"});
  expect_error([] { LlamaConfig::from_file("/nonexistent/config.json"); },
               {"LlamaConfig", "/nonexistent/config.json"});
  LlamaConfig c = LlamaConfig::llama2_7b();
  c.num_key_value_heads = 5;
  expect_error([&] { Llama model(c); }, {"LlamaConfig", "num_key_value_heads"});
}

TEST(LlamaConfig, AbsurdSizesAreRefusedByName) {
  // A count must be an integer literal (1e9 is a float to Python's json, and to HF), positive, and
  // the model's parameter count must fit in 64 bits: each error names the key and the file.
  auto bad = [](const std::string& text, std::initializer_list<std::string> words) {
    std::vector<std::string> all(words);
    all.push_back("\"m/config.json\"");
    std::string msg = "(no lazygrad::Error thrown)";
    try {
      LlamaConfig::from_json(text, "\"m/config.json\"");
    } catch (const Error& e) {
      msg = e.what();
    }
    for (const std::string& w : all)
      EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' is not in: " << msg;
  };
  bad(R"({"num_hidden_layers": 1e9})",
      {"LlamaConfig", "\"num_hidden_layers\" must be an integer, found 1e9"});
  bad(R"({"num_hidden_layers": -3})", {"num_hidden_layers must be positive, got -3"});
  bad(R"({"num_hidden_layers": 1000000000000000000})",
      {"num_hidden_layers 1000000000000000000", "overflow 64 bits"});
  bad(R"({"hidden_size": 1099511627776, "num_attention_heads": 1})",
      {"hidden_size 1099511627776", "overflow"});
  bad(R"({"intermediate_size": 4611686018427387904})", {"intermediate_size 4611686018427387904", "overflow"});
  bad(R"({"vocab_size": 4611686018427387904})", {"vocab_size 4611686018427387904", "overflow"});
  bad(R"({"head_dim": 4611686018427387904})", {"num_attention_heads 32", "overflow"});
  // A config that is merely large is fine: it is the checkpoint that must match it.
  EXPECT_NO_THROW(LlamaConfig::from_json(R"({"num_hidden_layers": 1000000000})"));
}

TEST(LlamaConfig, RopeFrequenciesFollowTheScaling) {
  // head_dim 8, theta 500000: wavelengths 2 pi theta^(j/8) = 6.3, 167, 4443, 1.2e5. With the
  // original context 256 and low/high_freq_factor 1/4, the first is kept (< 64), the last two are
  // divided by 8 (> 256), and the second is blended (smooth = (256 / 167 - 1) / 3).
  const LlamaConfig c = config_of("llama3");
  const std::vector<float> f = models::LlamaRotaryEmbedding::frequencies(c);
  ASSERT_EQ(f.size(), 4u);
  const double base[] = {1.0, std::pow(500000.0, -0.25), std::pow(500000.0, -0.5), std::pow(500000.0, -0.75)};
  const double smooth = (256 / (2 * std::numbers::pi / base[1]) - 1) / 3;
  EXPECT_FLOAT_EQ(f[0], base[0]);
  EXPECT_FLOAT_EQ(f[1], (1 - smooth) * base[1] / 8 + smooth * base[1]);
  EXPECT_FLOAT_EQ(f[2], base[2] / 8);
  EXPECT_FLOAT_EQ(f[3], base[3] / 8);
  const std::vector<float> linear = models::LlamaRotaryEmbedding::frequencies(config_of("llama2"));
  EXPECT_FLOAT_EQ(linear[1], std::pow(10000.0, -0.25) / 2);
}

// ---- parity with the reference ----

TEST(Llama, MatchesHuggingFaceLogits) {
  for (const char* name : kFixtures) {
    const Reference ref = read_reference(name);
    const LlamaConfig config = config_of(name);
    auto model = load(name, config);
    NoGrad no_grad;
    Tensor logits = (*model)(tokens_of(ref));
    ASSERT_EQ(logits.shape(), (Shape{ref.B, ref.T, ref.V}));
    ASSERT_EQ(logits.dtype(), kFloat32);
    const double err = relative_error(logits.to_vector<float>(), ref.full);
    EXPECT_LE(err, kTolerance) << name;
    std::printf("%s full forward: max |diff| / max |ref| = %.3g\n", name, err);
  }
}

TEST(Llama, KVCacheDecodingMatchesReference) {
  // The two grouped-query models (the cache holds fewer heads than the queries), one with a sliding
  // window; chunks of every length compile their own kernels, so not llama2 too.
  for (const char* name : {"llama3", "mistral"}) {
    const Reference ref = read_reference(name);
    ASSERT_FALSE(ref.chunks.empty()) << name;
    auto model = load(name, config_of(name));
    NoGrad no_grad;
    // A prompt, a chunk after it, then one position at a time, as the reference did.
    std::vector<float> got(ref.B * ref.T * ref.V);
    auto decode = [&](int64_t start, int64_t len) {
      std::vector<int64_t> chunk;
      for (int64_t b = 0; b < ref.B; ++b)
        for (int64_t t = start; t < start + len; ++t) chunk.push_back(ref.tokens[b * ref.T + t]);
      std::vector<float> values =
          model->forward(Tensor::from_vector(chunk, {ref.B, len}), start).to_vector<float>();
      for (int64_t b = 0; b < ref.B; ++b)
        for (int64_t t = 0; t < len; ++t)
          std::copy_n(values.begin() + (b * len + t) * ref.V, ref.V,
                      got.begin() + (b * ref.T + start + t) * ref.V);
    };
    int64_t start = 0;
    for (int64_t len : ref.chunks) {
      decode(start, len);
      start += len;
    }
    ASSERT_EQ(start, ref.T);
    const double err = relative_error(got, ref.cached), err_full = relative_error(got, ref.full);
    EXPECT_LE(err, kTolerance) << name;
    EXPECT_LE(err_full, kTolerance) << name;
    std::printf("%s KV-cache decoding: max |diff| / max |ref| = %.3g (vs the full forward: %.3g)\n", name,
                err, err_full);
  }
}

TEST(Llama, FixedShapeDecodeStepsMatchFullForward) {
  // Sequence 0 of each reference: a prompt of 2 positions, then decode_step (the token and the
  // position are Variables) for every later position, under one Jit as models/generate.h runs it.
  for (const char* name : kFixtures) {
    const Reference ref = read_reference(name);
    auto model = load(name, config_of(name));
    NoGrad no_grad;
    const int64_t prompt = 2, window = model->context_length();
    std::vector<int64_t> first(ref.tokens.begin(), ref.tokens.begin() + prompt);
    std::vector<float> got = model->forward(Tensor::from_vector(first, {1, prompt}), 0).to_vector<float>();
    const std::vector<float> want(ref.full.begin(), ref.full.begin() + ref.T * ref.V);
    Variable token(0, kInt64), pos(0, kInt64);
    Jit step([&](const std::vector<Tensor>&) {
      return std::vector<Tensor>{model->decode_step(token, pos, window)};
    });
    for (int64_t t = prompt; t < ref.T; ++t) {
      token.set(static_cast<double>(ref.tokens[t]));
      pos.set(static_cast<double>(t));
      std::vector<float> values = step({})[0].to_vector<float>();
      ASSERT_EQ(values.size(), static_cast<size_t>(ref.V));
      got.insert(got.end(), values.begin(), values.end());
    }
    EXPECT_GT(step.captured_kernels(), 0u);
    const double err = relative_error(got, want);
    EXPECT_LE(err, kTolerance) << name;
    std::printf("%s fixed-shape decode steps: max |diff| / max |ref| = %.3g\n", name, err);
  }
}

TEST(Llama, GGUFFileGivesTheSameLogits) {
  // model.gguf holds llama3's weights as llama.cpp's converter writes them (scripts/
  // make_llama_gguf_fixture.py): its names, its Q/K row permutation, the rope scaling as
  // rope_freqs.weight, and a small SentencePiece vocabulary.
  const Reference ref = read_reference("llama3");
  const GGUFFile file = load_gguf((folder("llama3") / "model.gguf").string());
  const LlamaConfig c = models::llama_config_from_gguf(file), hf = config_of("llama3");
  EXPECT_EQ(c.hidden_size, hf.hidden_size);
  EXPECT_EQ(c.num_key_value_heads, hf.num_key_value_heads);
  EXPECT_EQ(c.tie_word_embeddings, hf.tie_word_embeddings);
  EXPECT_EQ(c.head_size(), hf.head_size());
  NoGrad no_grad;
  auto model = models::load_llama_gguf(file);
  const double err = relative_error((*model)(tokens_of(ref)).to_vector<float>(), ref.full);
  EXPECT_LE(err, kTolerance);
  std::printf("GGUF: max |diff| / max |ref| = %.3g\n", err);

  // The permutation and the frequency divisors matter: without either the logits are far off.
  StateDict raw = models::llama_state_dict_from_gguf(file, c);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    for (const char* p : {"q", "k"})
      raw["model.layers." + std::to_string(i) + ".self_attn." + p + "_proj.weight"] =
          file.tensor("blk." + std::to_string(i) + ".attn_" + p + ".weight");
  Llama permuted(c);
  permuted.load_hf_state_dict(raw);
  EXPECT_GT(relative_error(permuted(tokens_of(ref)).to_vector<float>(), ref.full), 100 * kTolerance);
  Llama unscaled(c);
  unscaled.load_hf_state_dict(models::llama_state_dict_from_gguf(file, c));
  EXPECT_GT(relative_error(unscaled(tokens_of(ref)).to_vector<float>(), ref.full), 100 * kTolerance);

  // The tokenizer in the metadata: BOS first, then the SentencePiece pieces, and back.
  const Tokenizer tokenizer = Tokenizer::from_gguf_vocab(models::gguf_vocab(file));
  EXPECT_EQ(tokenizer.vocab_size(), static_cast<size_t>(c.vocab_size));
  const std::vector<int32_t> ids = tokenizer.encode("hello world", {.add_special = true});
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(tokenizer.decode(ids, /*skip_special=*/true), "hello world");
}

TEST(Llama, BadGGUFFilesAreErrors) {
  const GGUFFile file = load_gguf((folder("llama3") / "model.gguf").string());
  GGUFFile other = file;
  other.metadata.erase("general.architecture");
  expect_error([&] { models::llama_config_from_gguf(other); }, {"general.architecture"});
  other = file;
  other.metadata.at("llama.rope.dimension_count") = file.at("llama.attention.head_count");  // 4 of 8: partial
  expect_error([&] { models::llama_config_from_gguf(other); },
               {"llama.rope.dimension_count", "partial rotary"});
  other = file;
  other.metadata.erase("llama.block_count");
  expect_error([&] { models::llama_config_from_gguf(other); }, {"llama.block_count"});
  other = file;
  other.tensors.erase("blk.1.ffn_up.weight");
  other.tensor_infos.erase(
      std::find_if(other.tensor_infos.begin(), other.tensor_infos.end(),
                   [](const GGUFTensorInfo& t) { return t.name == "blk.1.ffn_up.weight"; }));
  expect_error([&] { models::load_llama_gguf(other); },
               {"blk.1.ffn_up.weight", "model.layers.1.mlp.up_proj.weight"});
  other = file;
  other.tensors.erase("token_embd.weight");
  other.tensor_infos.erase(
      std::find_if(other.tensor_infos.begin(), other.tensor_infos.end(),
                   [](const GGUFTensorInfo& t) { return t.name == "token_embd.weight"; }));
  expect_error([&] { models::llama_config_from_gguf(other); }, {"token_embd.weight"});

  // The config needs only the header: the file as load_gguf_metadata reads it (no tensors) gives
  // the same one (found by tests/fuzz/fuzz_llama_config.cpp, which reads headers only).
  const LlamaConfig from_header =
      models::llama_config_from_gguf(load_gguf_metadata((folder("llama3") / "model.gguf").string()));
  EXPECT_EQ(from_header.vocab_size, models::llama_config_from_gguf(file).vocab_size);
  EXPECT_EQ(from_header.tie_word_embeddings, models::llama_config_from_gguf(file).tie_word_embeddings);

  // A token id or type beyond 32 bits is an Error, not the id the low 32 bits spell (2^32 + 1 was 1).
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.token_type"}) {
    other = file;
    GGUFValue& v = other.metadata.at(key);
    const int64_t big = (int64_t{1} << 32) + 1;
    const size_t n = v.size();
    v.element_type = GGUFType::Int64;
    if (!v.is_array()) v.type = GGUFType::Int64;
    v.bytes.resize(n * sizeof big);
    for (size_t i = 0; i < n; ++i) std::memcpy(v.bytes.data() + i * sizeof big, &big, sizeof big);
    expect_error([&] { models::gguf_vocab(other); }, {key, "32-bit"});
  }
}

// The tensors of a GGUF file replaced or removed by hand, the info kept in step.
void replace_tensor(GGUFFile& file, const std::string& name, const Tensor& t) {
  file.tensors[name] = t;
  for (GGUFTensorInfo& info : file.tensor_infos)
    if (info.name == name) {
      info.shape = t.shape();
      info.ne.assign(t.shape().rbegin(), t.shape().rend());
    }
}

void set_count(GGUFFile& file, const std::string& key, GGUFType type, int64_t value) {
  GGUFValue& v = file.metadata[key];
  v.key = key;
  v.type = v.element_type = type;
  const size_t size = type == GGUFType::Int32 || type == GGUFType::UInt32 ? 4 : 8;
  v.bytes.resize(size);
  std::memcpy(v.bytes.data(), &value, size);  // little-endian: the low bytes
}

// load_llama_gguf of `file` throws an Error with every one of `words` (and the file) before a
// single parameter of the model is initialized: true when no kernel ran.
bool refused_unbuilt(const GGUFFile& file, std::initializer_list<std::string> words) {
  const int64_t kernels = GlobalCounters::kernel_count;
  expect_error([&] { models::load_llama_gguf(file); }, words);
  expect_error([&] { models::load_llama_gguf(file); }, {file.path});
  return GlobalCounters::kernel_count == kernels;
}

TEST(Llama, GGUFIsCheckedBeforeAnyLayerIsBuilt) {
  const GGUFFile file = load_gguf((folder("llama3") / "model.gguf").string());
  GGUFFile other = file;
  set_count(other, "llama.block_count", GGUFType::UInt32, 3);  // the file has 2 blocks
  ASSERT_TRUE(
      refused_unbuilt(other, {"no tensor \"blk.2.attn_norm.weight\" (the model's "
                              "model.layers.2.input_layernorm.weight, layer 2 of llama.block_count 3)"}))
      << "layers were built before the file's tensors were checked";
  set_count(other, "llama.block_count", GGUFType::UInt32, 1000000000);
  ASSERT_TRUE(refused_unbuilt(other, {"blk.2.attn_norm.weight", "layer 2 of llama.block_count 1000000000"}));
  set_count(other, "llama.block_count", GGUFType::Int32, -1);
  EXPECT_TRUE(refused_unbuilt(other, {"llama.block_count must be positive, got -1"}));
  set_count(other, "llama.block_count", GGUFType::UInt64, int64_t{1} << 50);
  EXPECT_TRUE(refused_unbuilt(other, {"llama.block_count 1125899906842624", "overflow 64 bits"}));
  other = file;
  set_count(other, "llama.attention.key_length", GGUFType::UInt32, 8);  // the head size stays 8
  set_count(other, "llama.embedding_length", GGUFType::UInt64, int64_t{1} << 60);
  EXPECT_TRUE(refused_unbuilt(other, {"llama.embedding_length 1152921504606846976", "overflow 64 bits"}));
  other = file;
  other.metadata.at("llama.block_count") = file.at("llama.rope.freq_base");  // a float32
  other.metadata.at("llama.block_count").key = "llama.block_count";
  EXPECT_TRUE(refused_unbuilt(other, {"\"llama.block_count\" has type float32, wanted an integer"}));
  other = file;
  set_count(other, "llama.attention.key_length", GGUFType::UInt32, 8);
  set_count(other, "llama.embedding_length", GGUFType::UInt32, 64);  // the tensors have 32
  EXPECT_TRUE(
      refused_unbuilt(other, {"tensor \"token_embd.weight\" (the model's model.embed_tokens.weight) has "
                              "shape {128, 32}, expected {128, 64}",
                              "dimension 1 (ggml ne[0]) is 32, expected 64 (llama.embedding_length)"}));
}

TEST(Llama, GGUFTensorErrorsNameTheTensorAndTheDimension) {
  const GGUFFile file = load_gguf((folder("llama3") / "model.gguf").string());
  // k_proj is [kv_heads * head_dim, hidden] = [16, 32]; llama.cpp lists it as ne [32, 16].
  GGUFFile other = file;
  replace_tensor(other, "blk.1.attn_k.weight", Tensor::zeros({16, 16}));
  EXPECT_TRUE(
      refused_unbuilt(other, {"tensor \"blk.1.attn_k.weight\" (the model's "
                              "model.layers.1.self_attn.k_proj.weight) has shape {16, 16}, expected {16, 32}",
                              "dimension 1 (ggml ne[0]) is 16, expected 32 (llama.embedding_length)"}));
  other = file;
  replace_tensor(other, "blk.0.attn_k.weight", Tensor::zeros({24, 32}));
  EXPECT_TRUE(refused_unbuilt(other, {"\"blk.0.attn_k.weight\"",
                                      "dimension 0 (ggml ne[1]) is 24, expected 16 "
                                      "(llama.attention.head_count_kv * llama.attention.key_length)"}));
  other = file;
  replace_tensor(other, "blk.0.ffn_norm.weight", Tensor::zeros({32, 1}));
  EXPECT_TRUE(refused_unbuilt(other, {"\"blk.0.ffn_norm.weight\"", "2 dimensions, expected 1"}));
  // An integer tensor is refused, not converted (the query's rows are reordered in float32).
  other = file;
  replace_tensor(other, "blk.0.attn_q.weight", file.tensor("blk.0.attn_q.weight").to(kInt32));
  EXPECT_TRUE(refused_unbuilt(other, {"tensor \"blk.0.attn_q.weight\" (the model's "
                                      "model.layers.0.self_attn.q_proj.weight) has dtype int32"}));
  other = file;
  replace_tensor(other, "output.weight", file.tensor("output.weight").to(kInt8));
  EXPECT_TRUE(refused_unbuilt(other, {"\"output.weight\"", "int8"}));
  // LLaMA 3.1's frequency divisors: one per rotary pair, head_dim / 2 = 4 of them.
  other = file;
  replace_tensor(other, "rope_freqs.weight", Tensor::ones({3}));
  EXPECT_TRUE(
      refused_unbuilt(other, {"\"rope_freqs.weight\"", "has shape {3}, expected {4}",
                              "dimension 0 (ggml ne[0]) is 3, expected 4 (llama.attention.key_length / 2)"}));
  replace_tensor(other, "rope_freqs.weight", Tensor::ones({4}, kInt32));
  EXPECT_TRUE(refused_unbuilt(other, {"\"rope_freqs.weight\"", "int32"}));
  other = file;
  replace_tensor(other, "token_embd.weight", Tensor::zeros({128 * 32}));
  expect_error([&] { models::llama_config_from_gguf(other); },
               {file.path, "\"token_embd.weight\" has shape {4096}, expected 2 dimensions"});
}

TEST(Llama, RopeScalingAndSlidingWindowAreExercised) {
  // Without the feature the fixture tests, the logits miss the reference by far more than the
  // tolerance: the parity above could not pass with it ignored.
  LlamaConfig unscaled = config_of("llama3");
  unscaled.rope_scaling = {};
  LlamaConfig unwindowed = config_of("mistral");
  unwindowed.sliding_window.reset();
  NoGrad no_grad;
  for (const auto& [name, config] : {std::pair{"llama3", unscaled}, std::pair{"mistral", unwindowed}}) {
    const Reference ref = read_reference(name);
    const double err = relative_error((*load(name, config))(tokens_of(ref)).to_vector<float>(), ref.full);
    EXPECT_GT(err, 100 * kTolerance) << name;
  }
}

TEST(Llama, GreedyGenerationMatchesReference) {
  // One model: the decode steps below cover the three configs.
  for (const char* name : {"llama3"}) {
    std::ifstream in(folder(name) / "generate.txt");
    std::string word;
    auto ids = [&](const char* key) {
      size_t n = 0;
      in >> word >> n;
      EXPECT_EQ(word, key);
      std::vector<int32_t> v(n);
      for (auto& id : v) in >> id;
      return v;
    };
    const std::vector<int32_t> prompt = ids("prompt"), greedy = ids("greedy");
    ASSERT_TRUE(in) << name << "/generate.txt is truncated";
    auto model = load(name, config_of(name));
    Sampler sampler({.temperature = 0});
    models::GenerateStats stats;
    EXPECT_EQ(models::generate(*model, prompt, sampler, {.max_tokens = static_cast<int64_t>(greedy.size())},
                               {}, &stats),
              greedy)
        << name;
    EXPECT_EQ(stats.stop_reason, "max_tokens");

    // A cache one position longer than the prompt: one token, then the context is full.
    Llama short_context(config_of(name), static_cast<int64_t>(prompt.size()) + 1);
    short_context.load_hf_state_dict(load_safetensors_folder(folder(name).string()));
    EXPECT_EQ(models::generate(short_context, prompt, sampler, {.max_tokens = 100}, {}, &stats),
              std::vector<int32_t>{greedy[0]});
    EXPECT_EQ(stats.stop_reason, "max_context");
  }
}

// ---- checkpoints ----

TEST(Llama, MissingTensorIsAnErrorNamingIt) {
  const LlamaConfig config = config_of("llama3");
  StateDict state = load_safetensors_folder(folder("llama3").string());
  StateDict no_head = state;
  no_head.erase("lm_head.weight");  // untied: the head is required
  expect_error([&] { Llama(config).load_hf_state_dict(no_head); }, {"Llama", "lm_head.weight"});
  state.erase("model.layers.1.mlp.down_proj.weight");
  expect_error([&] { Llama(config).load_hf_state_dict(state); },
               {"Llama", "model.layers.1.mlp.down_proj.weight"});

  // Tied: a checkpoint's lm_head.weight (some files carry one) is ignored; the model has none.
  const LlamaConfig tied = config_of("llama2");
  StateDict with_head = load_safetensors_folder(folder("llama2").string());
  EXPECT_EQ(with_head.count("lm_head.weight"), 0u);
  with_head["lm_head.weight"] = Tensor::zeros({tied.vocab_size, tied.hidden_size});
  Llama model(tied);
  EXPECT_EQ(model.state_dict().count("lm_head.weight"), 0u);
  EXPECT_NO_THROW(model.load_hf_state_dict(with_head));
}

TEST(Llama, WrongShapeIsAnErrorNamingIt) {
  const LlamaConfig config = config_of("llama3");
  StateDict state = load_safetensors_folder(folder("llama3").string());
  // GQA: k_proj is [kv_heads * head_dim, hidden] = [16, 32]; its transpose is misshapen.
  state["model.layers.0.self_attn.k_proj.weight"] = state.at("model.layers.0.self_attn.k_proj.weight").t();
  expect_error([&] { Llama(config).load_hf_state_dict(state); },
               {"Llama", "model.layers.0.self_attn.k_proj.weight", "{32, 16}", "{16, 32}"});
  LlamaConfig mha = config;
  mha.num_key_value_heads = 4;  // the config says multi-head attention, the file has GQA
  expect_error([&] { Llama(mha).load_hf_state_dict(load_safetensors_folder(folder("llama3").string())); },
               {"Llama", "model.layers.0.self_attn.k_proj.weight", "{16, 32}", "{32, 32}"});
}

TEST(Llama, TensorListIsTheModelsStateDict) {
  // visit_llama_tensors (the config alone) lists what the model registers, in its order.
  for (const char* name : kFixtures) {
    const LlamaConfig config = config_of(name);
    std::vector<std::pair<std::string, Shape>> listed, registered;
    models::visit_llama_tensors(
        config, {}, [&](const std::string& key, const models::ConfigShape& shape, const std::string&) {
          listed.emplace_back(key, models::sizes_of(shape));
        });
    for (const auto& [key, t] : Llama(config).ordered_state_dict()) {
      registered.emplace_back(key, t.shape());
      EXPECT_EQ(t.dtype(), kFloat32) << key;
    }
    EXPECT_EQ(listed, registered) << name;
  }
}

TEST(Llama, CheckpointIsCheckedBeforeAnyLayerIsBuilt) {
  const LlamaConfig config = config_of("llama3");
  const StateDict state = load_safetensors_folder(folder("llama3").string());
  auto refused_unbuilt = [&](const LlamaConfig& c, const StateDict& s,
                             std::initializer_list<std::string> words) {
    const int64_t kernels = GlobalCounters::kernel_count;
    std::vector<std::string> all(words);
    all.insert(all.begin(), "Llama: \"llama3/\": ");
    std::string msg = "(no lazygrad::Error thrown)";
    try {
      Llama::from_hf_checkpoint(c, s, "llama3/");
    } catch (const Error& e) {
      msg = e.what();
    }
    for (const std::string& w : all)
      EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' is not in: " << msg;
    return GlobalCounters::kernel_count == kernels;  // no parameter was initialized
  };
  LlamaConfig deeper = config;
  deeper.num_hidden_layers = 3;
  ASSERT_TRUE(refused_unbuilt(deeper, state,
                              {"no tensor \"model.layers.2.input_layernorm.weight\" (layer 2 of "
                               "num_hidden_layers 3)"}))
      << "layers were built before the checkpoint was checked";
  deeper.num_hidden_layers = 1000000000;
  ASSERT_TRUE(refused_unbuilt(deeper, state,
                              {"model.layers.2.input_layernorm.weight", "num_hidden_layers 1000000000"}));
  LlamaConfig wide = config;
  wide.hidden_size = 4194304;
  wide.head_dim = 8;
  EXPECT_TRUE(refused_unbuilt(wide, state,
                              {"\"model.embed_tokens.weight\" has shape {128, 32}, expected {128, "
                               "4194304}",
                               "dimension 1 is 32, expected 4194304 (hidden_size)"}));
  LlamaConfig gqa = config;
  gqa.num_key_value_heads = 4;
  EXPECT_TRUE(refused_unbuilt(gqa, state,
                              {"\"model.layers.0.self_attn.k_proj.weight\"",
                               "dimension 0 is 16, expected 32 (num_key_value_heads * head_dim)"}));
  StateDict integer = state;
  integer["model.layers.1.mlp.gate_proj.weight"] = state.at("model.layers.1.mlp.gate_proj.weight").to(kInt32);
  EXPECT_TRUE(refused_unbuilt(config, integer, {"\"model.layers.1.mlp.gate_proj.weight\" has dtype int32"}));
  Llama model(config);
  expect_error([&] { model.load_hf_state_dict(integer); },
               {"Llama", "model.layers.1.mlp.gate_proj.weight", "int32"});
  // 16-bit checkpoints are converted (HF's float16 and bfloat16 files).
  StateDict half = state;
  half["model.embed_tokens.weight"] = state.at("model.embed_tokens.weight").to(kBFloat16);
  auto loaded = Llama::from_hf_checkpoint(config, half);
  EXPECT_EQ(loaded->model->embed_tokens->weight.to_vector<float>(),
            half.at("model.embed_tokens.weight").to(kFloat32).to_vector<float>());
}

TEST(Llama, BadInputsAreErrors) {
  LlamaConfig config = config_of("llama2");
  Llama model(config, 8);
  EXPECT_EQ(model.context_length(), 8);
  EXPECT_EQ(Llama(config).context_length(), 64);  // max_position_embeddings
  config.max_position_embeddings = 131072;        // LLaMA 3.1's: the cache is capped by default
  EXPECT_EQ(Llama(config).context_length(), 4096);
  NoGrad no_grad;
  expect_error([&] { model(Tensor::zeros({4}, kInt64)); }, {"Llama", "[B, T]"});
  expect_error([&] { model.forward(Tensor::zeros({1, 9}, kInt64), 0); }, {"Llama", "max_context 8"});
  expect_error([&] { model.forward(Tensor::zeros({1, 1}, kInt64), 3); }, {"Llama", "start_pos 0"});
  expect_error([&] { Llama bad(config, 0); }, {"Llama", "max_context"});
  Sampler s;
  expect_error([&] { models::generate(model, std::vector<int32_t>(9, 1), s, {}); },
               {"generate", "max_context 8"});
}

// ---- sharded folders ----

// A scratch folder, removed at the end of the test.
class ScratchFolder {
 public:
  ScratchFolder() : path_(fs::temp_directory_path() / ("lazygrad_llama_" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchFolder() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string index_json(const std::map<std::string, std::string>& weight_map) {
  std::string map;
  for (const auto& [tensor, shard] : weight_map)
    map += (map.empty() ? "" : ", ") + json::quote(tensor) + ": " + json::quote(shard);
  return "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {" + map + "}}";
}

TEST(SafetensorsFolder, LoadsShardedAndSingleFileFolders) {
  const StateDict sharded = load_safetensors_folder(folder("llama3").string());
  const StateDict shard1 = load_safetensors((folder("llama3") / "model-00001-of-00002.safetensors").string());
  const StateDict shard2 = load_safetensors((folder("llama3") / "model-00002-of-00002.safetensors").string());
  EXPECT_FALSE(shard1.empty());
  EXPECT_FALSE(shard2.empty());
  EXPECT_EQ(sharded.size(), shard1.size() + shard2.size());
  EXPECT_EQ(sharded.size(), Llama(config_of("llama3")).state_dict().size());
  for (const auto& [name, tensor] : shard2)
    EXPECT_EQ(sharded.at(name).to_vector<float>(), tensor.to_vector<float>());
  EXPECT_EQ(load_safetensors_folder(folder("llama2").string()).size(),
            load_safetensors((folder("llama2") / "model.safetensors").string()).size());
}

TEST(SafetensorsFolder, BadFoldersAreErrors) {
  ScratchFolder scratch;
  const fs::path dir = scratch.path();
  const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  fs::copy_file(folder("llama3") / s1, dir / s1);
  fs::copy_file(folder("llama3") / s2, dir / s2);
  std::map<std::string, std::string> good;
  for (const auto& [name, tensor] : load_safetensors((dir / s1).string())) good[name] = s1;
  for (const auto& [name, tensor] : load_safetensors((dir / s2).string())) good[name] = s2;
  const fs::path index = dir / "model.safetensors.index.json";
  auto fails_with = [&](const std::string& text, std::initializer_list<std::string> words) {
    write_text(index, text);
    expect_error([&] { load_safetensors_folder(dir.string()); }, words);
  };
  write_text(index, index_json(good));
  EXPECT_EQ(load_safetensors_folder(dir.string()).size(), good.size());

  const std::string norm = "model.norm.weight", down = "model.layers.0.mlp.down_proj.weight";
  ASSERT_EQ(good.count(norm), 1u);
  ASSERT_EQ(good.count(down), 1u);
  auto with = [&](const std::string& tensor, const std::string& shard) {
    auto m = good;
    m[tensor] = shard;
    return index_json(m);
  };
  // Shard names that leave the folder.
  fails_with(with(norm, "../" + s1),
             {"load_safetensors_folder", "model.safetensors.index.json", norm, "not a plain file name"});
  fails_with(with(norm, "sub/" + s1), {"not a plain file name", "byte"});
  fails_with(with(norm, ".."), {"not a plain file name"});
  // A shard that does not exist.
  fails_with(with(norm, "model-00003-of-00003.safetensors"),
             {"model-00003-of-00003.safetensors", "not a file"});
  // A tensor mapped to the other shard, or to a shard without it; a tensor the index does not list.
  fails_with(with(down, good[down] == s1 ? s2 : s1), {down, "mapped to shard", "but is in"});
  fails_with(with("model.extra.weight", s1), {"model.extra.weight", "does not hold it"});
  auto missing = good;
  missing.erase(norm);
  fails_with(index_json(missing), {norm, "does not list"});
  // A tensor in two shards.
  StateDict extra{{norm, Tensor::zeros({32})}, {"model.extra.weight", Tensor::zeros({2})}};
  save_safetensors((dir / "extra.safetensors").string(), extra);
  fails_with(with("model.extra.weight", "extra.safetensors"), {norm, "two shards", "extra.safetensors"});
  // The index itself.
  fails_with("{\"weight_map\": {", {"model.safetensors.index.json", "not valid JSON"});
  fails_with("{\"metadata\": {}}", {"weight_map", "missing"});
  fails_with("{\"weight_map\": {\"a\": 1}}", {"\"a\"", "must be a file name", "byte 21"});
  fails_with("{\"weight_map\": {}}", {"weight_map", "no tensors"});

  fs::remove(index);
  expect_error([&] { load_safetensors_folder(dir.string()); },
               {"load_safetensors_folder", "neither model.safetensors nor model.safetensors.index.json"});
  expect_error([&] { load_safetensors_folder((dir / s1).string()); },
               {"load_safetensors_folder", "not a folder"});
}

}  // namespace
