// LLaMA (Touvron et al., "LLaMA: Open and Efficient Foundation Language Models", 2023; LLaMA 2 and 3)
// and the models built like it (TinyLlama, Mistral), as Hugging Face's LlamaForCausalLM and
// MistralForCausalLM compute them, reading HF's checkpoints by HF's tensor names:
//
//   model.embed_tokens.weight [vocab, hidden]                                  token embedding
//   model.layers.{i}.input_layernorm.weight [hidden]                           layer i: RMSNorm,
//   model.layers.{i}.self_attn.{q,k,v,o}_proj.weight                           attention,
//   model.layers.{i}.post_attention_layernorm.weight [hidden]                  RMSNorm,
//   model.layers.{i}.mlp.{gate,up,down}_proj.weight                            SwiGLU MLP
//   model.norm.weight [hidden]                                                 the final RMSNorm
//   lm_head.weight [vocab, hidden]                                             absent when tied
//
// The projections are nn::Linear without bias, weight [out, in]: q_proj [heads * head_dim, hidden],
// k_proj and v_proj [kv_heads * head_dim, hidden], o_proj [hidden, heads * head_dim], gate_proj and
// up_proj [intermediate, hidden], down_proj [hidden, intermediate]. q_proj and k_proj rows are in
// HF's order (each head's rotary pairs are (j, j + head_dim / 2)); llama.cpp's GGUF files permute
// them, so a GGUF loader must undo that before calling load_hf_state_dict.
//
// tokens [B, T] (any integer dtype) -> logits [B, T, vocab_size], float32. forward(tokens, start_pos)
// also keeps a KV cache: the keys and values of positions [start_pos, start_pos + T) are written into
// preallocated [B, kv_heads, max_context, head_dim] buffers, and the queries attend to the cached
// positions before theirs, so decoding one token at a time gives the full forward's logits.
//
// Header-only and public API only. docs/llama.md has the details and what is not done yet.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/json.h>
#include <lazygrad/nn.h>
#include <lazygrad/state_dict.h>
#include <lazygrad/variable.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint.h"
#include "config_fields.h"
#include "parameter_count.h"

namespace lazygrad::models {

// How the rotary frequencies are stretched for contexts longer than the training one (HF's
// config.rope_scaling, modeling_rope_utils.py).
struct RopeScaling {
  enum class Type {
    None,    // inv_freq[j] = rope_theta^(-2j / head_dim)
    Linear,  // every frequency divided by factor (positions interpolated)
    Llama3,  // LLaMA 3.1: low frequencies divided by factor, high ones kept, a smooth band between
  };
  Type type = Type::None;
  double factor = 1;
  double low_freq_factor = 1;                       // Llama3 only
  double high_freq_factor = 4;                      // Llama3 only
  int64_t original_max_position_embeddings = 8192;  // Llama3 only
};

// How messages spell LlamaConfig's fields: config.json's keys (the defaults), or a GGUF file's
// metadata keys (llama_config_from_gguf), so that an error names the key of the file it came from.
struct LlamaConfigKeys {
  std::string hidden_size = "hidden_size";
  std::string intermediate_size = "intermediate_size";
  std::string num_hidden_layers = "num_hidden_layers";
  std::string num_attention_heads = "num_attention_heads";
  std::string num_key_value_heads = "num_key_value_heads";
  std::string head_dim = "head_dim";
  std::string rms_norm_eps = "rms_norm_eps";
  std::string rope_theta = "rope_theta";
  std::string max_position_embeddings = "max_position_embeddings";
  std::string vocab_size = "vocab_size";
  std::string sliding_window = "sliding_window";
};

struct LlamaConfig {
  // Defaults are HF's LlamaConfig defaults (LLaMA-7B's shape).
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;  // < num_attention_heads: grouped-query attention
  std::optional<int64_t> head_dim;   // unset: hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 2048;
  int64_t vocab_size = 32000;
  bool tie_word_embeddings = false;
  std::optional<int64_t> sliding_window;  // Mistral: a query sees only the last sliding_window positions
  std::optional<int64_t> bos_token_id = 1;
  std::vector<int64_t> eos_token_ids = {2};  // config.json's eos_token_id: one id or a list

  int64_t head_size() const {
    return head_dim.value_or(num_attention_heads ? hidden_size / num_attention_heads : 0);
  }

  // The released shapes (their config.json files, less the tokenizer ids where the same).
  static LlamaConfig llama2_7b() {  // meta-llama/Llama-2-7b-hf: 6.74B parameters
    LlamaConfig c;
    c.max_position_embeddings = 4096;
    c.rms_norm_eps = 1e-5;
    return c;
  }
  static LlamaConfig llama3_8b() {  // meta-llama/Meta-Llama-3-8B: 8.03B parameters
    LlamaConfig c;
    c.intermediate_size = 14336;
    c.num_key_value_heads = 8;
    c.max_position_embeddings = 8192;
    c.rms_norm_eps = 1e-5;
    c.rope_theta = 500000;
    c.vocab_size = 128256;
    c.bos_token_id = 128000;
    c.eos_token_ids = {128001};
    return c;
  }
  static LlamaConfig llama3_1_8b() {  // meta-llama/Llama-3.1-8B: LLaMA 3's shape, llama3 rope scaling
    LlamaConfig c = llama3_8b();
    c.max_position_embeddings = 131072;
    c.rope_scaling = {RopeScaling::Type::Llama3, 8.0, 1.0, 4.0, 8192};
    return c;
  }
  static LlamaConfig tinyllama_1_1b() {  // TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T: 1.10B
    LlamaConfig c;
    c.hidden_size = 2048;
    c.intermediate_size = 5632;
    c.num_hidden_layers = 22;
    c.num_key_value_heads = 4;
    c.rms_norm_eps = 1e-5;
    return c;
  }
  static LlamaConfig mistral_7b() {  // mistralai/Mistral-7B-v0.1: 7.24B parameters
    LlamaConfig c;
    c.intermediate_size = 14336;
    c.num_key_value_heads = 8;
    c.max_position_embeddings = 32768;
    c.rms_norm_eps = 1e-5;
    c.sliding_window = 4096;
    return c;
  }

  // The number of parameters a Llama of this config has (the tied head counted once), from the
  // config alone: nothing is allocated. Throws lazygrad::Error naming the field (as `keys` spell
  // it) when the count (as float32 bytes) would overflow 64 bits (ParameterCount).
  int64_t parameter_count(const LlamaConfigKeys& keys = {}) const {
    const ParameterCount n("LlamaConfig");
    auto field = [](const std::string& key, int64_t v) { return key + " " + std::to_string(v); };
    const std::string hidden = field(keys.hidden_size, hidden_size);
    const int64_t d = head_size();
    const int64_t q = n.mul(num_attention_heads, d, field(keys.num_attention_heads, num_attention_heads));
    const int64_t kv = n.mul(num_key_value_heads, d, field(keys.num_key_value_heads, num_key_value_heads));
    // A layer: q_proj and o_proj, k_proj and v_proj, the three MLP projections, two RMSNorms.
    const int64_t two_hidden = n.mul(2, hidden_size, hidden);
    const int64_t attention = n.add(n.mul(two_hidden, q, hidden), n.mul(two_hidden, kv, hidden), hidden);
    const std::string inter = field(keys.intermediate_size, intermediate_size);
    const int64_t mlp = n.mul(n.mul(3, hidden_size, hidden), intermediate_size, inter);
    const int64_t layer = n.add(n.add(attention, mlp, inter), two_hidden, hidden);
    const std::string vocab = field(keys.vocab_size, vocab_size);
    const int64_t embeddings =
        n.mul(n.mul(vocab_size, hidden_size, vocab), tie_word_embeddings ? 1 : 2, vocab);
    const int64_t layers = n.mul(num_hidden_layers, layer, field(keys.num_hidden_layers, num_hidden_layers));
    return n.add(n.add(embeddings, layers, hidden), hidden_size, hidden);
  }

  // Throws lazygrad::Error naming the first field (as `keys` spell it: config.json's names by
  // default) whose value the model cannot run with, or whose parameter count would not fit.
  void validate(const LlamaConfigKeys& keys = {}) const {
    auto fail = [](const std::string& what) { throw Error("LlamaConfig: " + what); };
    auto positive = [&](int64_t v, const std::string& name) {
      if (v <= 0) fail(name + " must be positive, got " + std::to_string(v));
    };
    positive(hidden_size, keys.hidden_size);
    positive(intermediate_size, keys.intermediate_size);
    positive(num_hidden_layers, keys.num_hidden_layers);
    positive(num_attention_heads, keys.num_attention_heads);
    positive(num_key_value_heads, keys.num_key_value_heads);
    positive(max_position_embeddings, keys.max_position_embeddings);
    positive(vocab_size, keys.vocab_size);
    if (num_attention_heads % num_key_value_heads != 0)
      fail(keys.num_attention_heads + " (" + std::to_string(num_attention_heads) +
           ") must be a multiple of " + keys.num_key_value_heads + " (" +
           std::to_string(num_key_value_heads) + ")");
    if (!head_dim && hidden_size % num_attention_heads != 0)
      fail(keys.hidden_size + " (" + std::to_string(hidden_size) + ") must be a multiple of " +
           keys.num_attention_heads + " (" + std::to_string(num_attention_heads) + ") when " + keys.head_dim +
           " is not given");
    // rotate_half pairs element j with element j + head_dim / 2.
    if (head_size() <= 0 || head_size() % 2 != 0)
      fail(keys.head_dim + " must be positive and even, got " + std::to_string(head_size()));
    if (!(rms_norm_eps > 0) || !std::isfinite(rms_norm_eps))
      fail(keys.rms_norm_eps + " must be a positive number, got " + std::to_string(rms_norm_eps));
    if (!(rope_theta > 0) || !std::isfinite(rope_theta))
      fail(keys.rope_theta + " must be a positive number, got " + std::to_string(rope_theta));
    if (sliding_window) positive(*sliding_window, keys.sliding_window);
    const RopeScaling& s = rope_scaling;
    if (s.type != RopeScaling::Type::None && (!(s.factor >= 1) || !std::isfinite(s.factor)))
      fail("rope_scaling factor must be a number >= 1, got " + std::to_string(s.factor));
    if (s.type == RopeScaling::Type::Llama3) {
      if (!(s.low_freq_factor > 0) || !std::isfinite(s.low_freq_factor) ||
          !(s.high_freq_factor > s.low_freq_factor) || !std::isfinite(s.high_freq_factor))
        fail("rope_scaling needs 0 < low_freq_factor < high_freq_factor, got " +
             std::to_string(s.low_freq_factor) + " and " + std::to_string(s.high_freq_factor));
      positive(s.original_max_position_embeddings, "rope_scaling original_max_position_embeddings");
    }
    parameter_count(keys);
  }

  // A Hugging Face config.json (model_type "llama" or "mistral"). A field that is absent (or null,
  // where HF allows None) takes HF's default for that model_type; num_key_value_heads defaults to
  // num_attention_heads and head_dim to hidden_size / num_attention_heads. Fields the model does not
  // use are ignored. A field of the wrong type, a value the model cannot run with, or a feature it
  // does not implement (another hidden_act, attention or MLP biases, another rope_type) throws
  // lazygrad::Error naming the field and `where`.
  static LlamaConfig from_json(std::string_view text, const std::string& where = "config.json");
  static LlamaConfig from_file(const std::string& path);
};

// ---- reading config.json ----

inline LlamaConfig LlamaConfig::from_json(std::string_view text, const std::string& where) {
  const json::Value doc = parse_config_json(text, "LlamaConfig", where);
  const ConfigFields fields(doc, "LlamaConfig", where);

  LlamaConfig c;
  const std::string model_type = fields.string("model_type").value_or("llama");
  if (model_type == "mistral") {  // HF's MistralConfig defaults (num_key_value_heads 8: below)
    c.intermediate_size = 14336;
    c.max_position_embeddings = 4096 * 32;
    c.sliding_window = 4096;
  } else if (model_type != "llama") {
    fields.fail(*doc.find("model_type"),
                "model_type \"" + model_type + "\" is not supported (llama or mistral)");
  }
  if (const auto act = fields.string("hidden_act"); act && *act != "silu")
    fields.fail(*doc.find("hidden_act"), "hidden_act \"" + *act + "\" is not supported (only silu)");
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    bool on = false;
    fields.read(bias, on);
    if (on) fields.fail(*doc.find(bias), std::string("\"") + bias + "\": true is not supported (no biases)");
  }

  fields.read("hidden_size", c.hidden_size);
  fields.read("intermediate_size", c.intermediate_size);
  fields.read("num_hidden_layers", c.num_hidden_layers);
  fields.read("num_attention_heads", c.num_attention_heads);
  c.num_key_value_heads = c.num_attention_heads;  // HF: None means multi-head attention
  if (model_type == "mistral" && !doc.find("num_key_value_heads")) c.num_key_value_heads = 8;
  fields.read("num_key_value_heads", c.num_key_value_heads);
  fields.read("head_dim", c.head_dim);
  fields.read("rms_norm_eps", c.rms_norm_eps);
  fields.read("rope_theta", c.rope_theta);
  fields.read("max_position_embeddings", c.max_position_embeddings);
  fields.read("vocab_size", c.vocab_size);
  fields.read("tie_word_embeddings", c.tie_word_embeddings);
  fields.read("sliding_window", c.sliding_window);
  fields.read("bos_token_id", c.bos_token_id);
  if (const json::Value* eos = doc.find("eos_token_id")) {
    c.eos_token_ids.clear();
    if (eos->kind == json::Kind::Array) {
      for (const json::Value& id : eos->items) c.eos_token_ids.push_back(fields.integer(id, "eos_token_id"));
    } else if (eos->kind != json::Kind::Null) {
      c.eos_token_ids.push_back(fields.integer(*eos, "eos_token_id"));
    }
  }

  if (const json::Value* scaling = fields.find("rope_scaling")) {
    if (scaling->kind != json::Kind::Object)
      fields.fail(*scaling, "\"rope_scaling\" must be an object or null, found " +
                                std::string(json::kind_name(scaling->kind)));
    const ConfigFields s(*scaling, "LlamaConfig", where + " rope_scaling");
    // HF reads "rope_type", or "type" in older files.
    const char* type_key = s.find("rope_type") ? "rope_type" : "type";
    const std::optional<std::string> named = s.string(type_key);
    if (!named) s.fail(*scaling, "\"rope_type\" is missing");
    const std::string type = *named;
    RopeScaling& r = c.rope_scaling;
    if (type == "linear") {
      r.type = RopeScaling::Type::Linear;
      r.factor = s.number(s.need("factor"), "factor");
    } else if (type == "llama3") {
      r.type = RopeScaling::Type::Llama3;
      r.factor = s.number(s.need("factor"), "factor");
      r.low_freq_factor = s.number(s.need("low_freq_factor"), "low_freq_factor");
      r.high_freq_factor = s.number(s.need("high_freq_factor"), "high_freq_factor");
      r.original_max_position_embeddings =
          s.integer(s.need("original_max_position_embeddings"), "original_max_position_embeddings");
    } else if (type != "default") {
      s.fail(s.need(type_key), "rope type \"" + type + "\" is not supported (linear, llama3 or default)");
    }
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + where + ")");
  }
  return c;
}

inline LlamaConfig LlamaConfig::from_file(const std::string& path) {
  return from_json(read_config_text(path, "LlamaConfig"), "\"" + path + "\"");
}

// ---- the model ----

// Rotary position embedding (Su et al., "RoFormer", 2021) as HF's LlamaRotaryEmbedding computes it:
// position p turns each pair (x[j], x[j + head_dim / 2]) of a query or key by the angle
// p * inv_freq[j]. inv_freq is a non-persistent buffer (not in the state dict), as in HF.
class LlamaRotaryEmbedding : public nn::Module {
 public:
  explicit LlamaRotaryEmbedding(const LlamaConfig& config) {
    inv_freq = register_buffer("inv_freq", Tensor::from_vector(frequencies(config), {config.head_size() / 2}),
                               /*persistent=*/false);
  }

  // HF's ROPE_INIT_FUNCTIONS: _compute_default_rope_parameters, then for "linear" every frequency
  // divided by the factor, for "llama3" _compute_llama3_parameters. In double, rounded once.
  static std::vector<float> frequencies(const LlamaConfig& config) {
    const int64_t dim = config.head_size();
    const RopeScaling& s = config.rope_scaling;
    std::vector<float> out;
    for (int64_t j = 0; j < dim; j += 2) {
      double f = 1.0 / std::pow(config.rope_theta, static_cast<double>(j) / static_cast<double>(dim));
      if (s.type == RopeScaling::Type::Linear) f /= s.factor;
      if (s.type == RopeScaling::Type::Llama3) {
        // Wavelengths longer than the original context / low_freq_factor are slowed down by factor;
        // those shorter than original context / high_freq_factor are kept; between, a blend.
        const double context = static_cast<double>(s.original_max_position_embeddings);
        const double wavelen = 2 * std::numbers::pi / f;
        if (wavelen > context / s.low_freq_factor) {
          f /= s.factor;
        } else if (wavelen >= context / s.high_freq_factor) {
          const double smooth =
              (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          f = (1 - smooth) * f / s.factor + smooth * f;
        }
      }
      out.push_back(static_cast<float>(f));
    }
    return out;
  }

  // cos and sin [T, head_dim] of positions [start, start + T): the angles of the half, twice (HF's
  // torch.cat((freqs, freqs), dim=-1)), computed in float32.
  std::pair<Tensor, Tensor> forward(int64_t start, int64_t T) {
    Tensor positions = Tensor::arange(start, start + T, 1, kFloat32).reshape({T, 1});
    Tensor freqs = positions * inv_freq.reshape({1, inv_freq.size(0)});
    Tensor angles = Tensor::cat({freqs, freqs}, -1);
    return {angles.cos(), angles.sin()};
  }
  // cos and sin [1, head_dim] at the position `pos` holds when the kernels run (a decode step).
  std::pair<Tensor, Tensor> at(const Variable& pos) {
    Tensor freqs = pos.tensor().to(kFloat32).reshape({1, 1}) * inv_freq.reshape({1, inv_freq.size(0)});
    Tensor angles = Tensor::cat({freqs, freqs}, -1);
    return {angles.cos(), angles.sin()};
  }
  Tensor forward(const Tensor&) override { throw Error("LlamaRotaryEmbedding: call forward(start, T)"); }

  Tensor inv_freq;  // [head_dim / 2]
};

// HF's rotate_half: (x1, x2) -> (-x2, x1) over the two halves of the last dimension.
inline Tensor rotate_half(const Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return Tensor::cat({-x.slice(-1, half, std::nullopt), x.slice(-1, 0, half)}, -1);
}

// HF's apply_rotary_pos_emb for one of q or k [B, heads, T, head_dim], cos and sin [T, head_dim].
inline Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

// Grouped-query attention (Ainslie et al., 2023): num_key_value_heads key/value heads, each shared by
// num_attention_heads / num_key_value_heads query heads (one each: multi-head attention).
class LlamaAttention : public nn::Module {
 public:
  LlamaAttention(const LlamaConfig& config, int64_t max_context)
      : config_(config), max_context_(max_context) {
    const int64_t hidden = config.hidden_size, d = config.head_size();
    q_proj = register_module("q_proj",
                             std::make_shared<nn::Linear>(hidden, config.num_attention_heads * d, false));
    k_proj = register_module("k_proj",
                             std::make_shared<nn::Linear>(hidden, config.num_key_value_heads * d, false));
    v_proj = register_module("v_proj",
                             std::make_shared<nn::Linear>(hidden, config.num_key_value_heads * d, false));
    o_proj = register_module("o_proj",
                             std::make_shared<nn::Linear>(config.num_attention_heads * d, hidden, false));
  }

  Tensor forward(const Tensor&) override {
    throw Error("LlamaAttention: call forward(x, cos, sin, start_pos)");
  }

  // x [B, T, hidden] at positions [start, start + T) (start = start_pos, or 0 without the cache);
  // cos and sin of those positions. With start_pos, the keys and values go into the cache and the
  // queries see the cached positions before them too.
  Tensor forward(const Tensor& x, const Tensor& cos, const Tensor& sin, std::optional<int64_t> start_pos) {
    const int64_t B = x.size(0), T = x.size(1), H = config_.num_attention_heads,
                  KV = config_.num_key_value_heads, D = config_.head_size();
    auto heads = [&](const Tensor& t, int64_t n) { return t.reshape({B, T, n, D}).transpose(1, 2); };
    Tensor q = apply_rotary(heads(q_proj->forward(x), H), cos, sin);
    Tensor k = apply_rotary(heads(k_proj->forward(x), KV), cos, sin);
    Tensor v = heads(v_proj->forward(x), KV);

    const int64_t past = start_pos.value_or(0);
    if (start_pos) {
      if (past < 0 || past + T > max_context_)
        throw Error("Llama: positions [" + std::to_string(past) + ", " + std::to_string(past + T) +
                    ") are outside the KV cache's max_context " + std::to_string(max_context_));
      if (!cache_k.defined() || cache_k.size(0) != B) {
        if (past != 0)
          throw Error("Llama: the KV cache must be filled from start_pos 0 for a new batch size");
        cache_k = Tensor::zeros({B, KV, max_context_, D}).contiguous().realize();
        cache_v = Tensor::zeros({B, KV, max_context_, D}).contiguous().realize();
      }
      cache_k.narrow_assign(2, past, k);  // writes only these T positions
      cache_v.narrow_assign(2, past, v);
      k = cache_k.slice(2, 0, past + T);
      v = cache_v.slice(2, 0, past + T);
    }
    const int64_t S = past + T;  // keys: positions [0, S)
    return attend(q, k, v, hidden_keys(Tensor::arange(past, S).reshape({T, 1}), S));
  }

  // One token (x [1, 1, hidden]) at position `pos`, a Variable read when the kernels run, with cos
  // and sin of that position: its key and value go into the cache at pos, and the query attends to
  // the first `window` cached positions with those after pos (and, with a sliding window, those too
  // far back) masked out. The shapes do not depend on pos, so every position below `window` runs the
  // same kernels. The cache must hold positions [0, pos) already.
  Tensor step(const Tensor& x, const Tensor& cos, const Tensor& sin, const Variable& pos, int64_t window) {
    const int64_t H = config_.num_attention_heads, KV = config_.num_key_value_heads, D = config_.head_size();
    if (!cache_k.defined() || cache_k.size(0) != 1)
      throw Error(
          "Llama: a decode step needs the KV cache of a batch of 1 (run the prompt through forward first)");
    if (window < 1 || window > max_context_)
      throw Error("Llama: decode window " + std::to_string(window) + " is outside [1, max_context " +
                  std::to_string(max_context_) + "]");
    auto heads = [&](const Tensor& t, int64_t n) { return t.reshape({1, 1, n, D}).transpose(1, 2); };
    cache_k.narrow_assign(2, pos, apply_rotary(heads(k_proj->forward(x), KV), cos, sin));
    cache_v.narrow_assign(2, pos, heads(v_proj->forward(x), KV));
    Tensor q = apply_rotary(heads(q_proj->forward(x), H), cos, sin);
    return attend(q, cache_k.slice(2, 0, window), cache_v.slice(2, 0, window),
                  hidden_keys(pos.tensor().reshape({1, 1}), window));
  }

  // Forgets the cached keys and values.
  void reset_cache() { cache_k = cache_v = Tensor(); }

  std::shared_ptr<nn::Linear> q_proj, k_proj, v_proj, o_proj;
  Tensor cache_k,
      cache_v;  // [B, num_key_value_heads, max_context, head_dim], once forward(..., start_pos) ran

 private:
  // Which keys of positions [0, S) the queries at query_pos [T, 1] must not see [T, S]: the later
  // ones, and with a sliding window those sliding_window or more positions back.
  Tensor hidden_keys(const Tensor& query_pos, int64_t S) const {
    Tensor key_pos = Tensor::arange(S).reshape({1, S});
    Tensor hidden = key_pos > query_pos;
    if (config_.sliding_window) hidden = hidden.logical_or(key_pos <= query_pos - *config_.sliding_window);
    return hidden;
  }

  // Scaled dot-product attention of q [B, H, T, D] over keys and values [B, KV, S, D], each key/value
  // head shared by its group of query heads (HF's repeat_kv), hidden keys masked out; then the
  // output projection.
  Tensor attend(const Tensor& q, Tensor k, Tensor v, const Tensor& hidden) {
    const int64_t B = q.size(0), T = q.size(2), H = config_.num_attention_heads,
                  KV = config_.num_key_value_heads, S = k.size(2), D = config_.head_size();
    auto repeat_kv = [&](const Tensor& t) {
      if (H == KV) return t;
      return t.unsqueeze(2).expand({B, KV, H / KV, S, D}).reshape({B, H, S, D});
    };
    k = repeat_kv(k);
    v = repeat_kv(v);
    Tensor scores = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));
    scores = scores.masked_fill(hidden, -std::numeric_limits<double>::infinity());
    Tensor out = scores.softmax(-1).matmul(v);  // [B, H, T, D]
    return o_proj->forward(out.transpose(1, 2).reshape({B, T, H * D}));
  }

  LlamaConfig config_;
  int64_t max_context_;
};

// The SwiGLU feed-forward network (Shazeer, "GLU Variants Improve Transformer", 2020):
// down_proj(silu(gate_proj(x)) * up_proj(x)).
class LlamaMLP : public nn::Module {
 public:
  explicit LlamaMLP(const LlamaConfig& config) {
    gate_proj = register_module(
        "gate_proj", std::make_shared<nn::Linear>(config.hidden_size, config.intermediate_size, false));
    up_proj = register_module(
        "up_proj", std::make_shared<nn::Linear>(config.hidden_size, config.intermediate_size, false));
    down_proj = register_module(
        "down_proj", std::make_shared<nn::Linear>(config.intermediate_size, config.hidden_size, false));
  }
  Tensor forward(const Tensor& x) override {
    return down_proj->forward(gate_proj->forward(x).silu() * up_proj->forward(x));
  }

  std::shared_ptr<nn::Linear> gate_proj, up_proj, down_proj;
};

// A decoder layer with RMSNorm (Zhang and Sennrich, 2019: x / sqrt(mean(x^2) + eps) * weight, no
// mean subtracted, no bias) before each sublayer: x + attn(norm(x)), then x + mlp(norm(x)).
class LlamaDecoderLayer : public nn::Module {
 public:
  LlamaDecoderLayer(const LlamaConfig& config, int64_t max_context) {
    input_layernorm = register_module("input_layernorm",
                                      std::make_shared<nn::RMSNorm>(config.hidden_size, config.rms_norm_eps));
    self_attn = register_module("self_attn", std::make_shared<LlamaAttention>(config, max_context));
    post_attention_layernorm = register_module(
        "post_attention_layernorm", std::make_shared<nn::RMSNorm>(config.hidden_size, config.rms_norm_eps));
    mlp = register_module("mlp", std::make_shared<LlamaMLP>(config));
  }

  Tensor forward(const Tensor&) override {
    throw Error("LlamaDecoderLayer: call forward(x, cos, sin, start_pos)");
  }
  Tensor forward(const Tensor& x, const Tensor& cos, const Tensor& sin, std::optional<int64_t> start_pos) {
    Tensor h = x + self_attn->forward(input_layernorm->forward(x), cos, sin, start_pos);
    return h + mlp->forward(post_attention_layernorm->forward(h));
  }
  Tensor step(const Tensor& x, const Tensor& cos, const Tensor& sin, const Variable& pos, int64_t window) {
    Tensor h = x + self_attn->step(input_layernorm->forward(x), cos, sin, pos, window);
    return h + mlp->forward(post_attention_layernorm->forward(h));
  }

  std::shared_ptr<nn::RMSNorm> input_layernorm, post_attention_layernorm;
  std::shared_ptr<LlamaAttention> self_attn;
  std::shared_ptr<LlamaMLP> mlp;
};

// HF's LlamaModel: the embedding, the layers and the final norm (registered as "model" in Llama).
class LlamaModel : public nn::Module {
 public:
  LlamaModel(const LlamaConfig& config, int64_t max_context) {
    embed_tokens = register_module("embed_tokens",
                                   std::make_shared<nn::Embedding>(config.vocab_size, config.hidden_size));
    layers = register_module("layers", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
      blocks.push_back(std::make_shared<LlamaDecoderLayer>(config, max_context));
      layers->append(blocks.back());
    }
    norm = register_module("norm", std::make_shared<nn::RMSNorm>(config.hidden_size, config.rms_norm_eps));
    rotary_emb = register_module("rotary_emb", std::make_shared<LlamaRotaryEmbedding>(config));
  }

  Tensor forward(const Tensor&) override { throw Error("LlamaModel: call forward(tokens, start_pos)"); }

  // tokens [B, T] at positions [start_pos or 0, + T) -> the final norm's output [B, T, hidden].
  Tensor forward(const Tensor& tokens, std::optional<int64_t> start_pos) {
    const auto [cos, sin] = rotary_emb->forward(start_pos.value_or(0), tokens.size(1));
    Tensor x = embed_tokens->forward(tokens);
    for (const auto& block : blocks) x = block->forward(x, cos, sin, start_pos);
    return norm->forward(x);
  }

  std::shared_ptr<nn::Embedding> embed_tokens;
  std::shared_ptr<nn::ModuleList> layers;  // the blocks, registered as layers.0, layers.1, ...
  std::vector<std::shared_ptr<LlamaDecoderLayer>> blocks;
  std::shared_ptr<nn::RMSNorm> norm;
  std::shared_ptr<LlamaRotaryEmbedding> rotary_emb;
};

// The tensors of a Llama of `config`, by the model's state_dict names (HF's) and in its order:
// visit(name, shape, note), each dimension with the config fields it comes from (as `keys` spell
// them), note naming a layer's index. From the config alone, for check_hf_checkpoint and the GGUF
// loader (a test checks it against the model's own state_dict).
template <class Visit>
void visit_llama_tensors(const LlamaConfig& config, const LlamaConfigKeys& keys, Visit&& visit) {
  const int64_t d = config.head_size();
  const ConfigDim hidden{config.hidden_size, keys.hidden_size},
      inter{config.intermediate_size, keys.intermediate_size},
      q{config.num_attention_heads * d, keys.num_attention_heads + " * " + keys.head_dim},
      kv{config.num_key_value_heads * d, keys.num_key_value_heads + " * " + keys.head_dim},
      vocab{config.vocab_size, keys.vocab_size};
  visit("model.embed_tokens.weight", {vocab, hidden}, "");
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    const std::string note = "layer " + std::to_string(i) + " of " + keys.num_hidden_layers + " " +
                             std::to_string(config.num_hidden_layers);
    visit(layer + "input_layernorm.weight", {hidden}, note);
    visit(layer + "self_attn.q_proj.weight", {q, hidden}, note);
    visit(layer + "self_attn.k_proj.weight", {kv, hidden}, note);
    visit(layer + "self_attn.v_proj.weight", {kv, hidden}, note);
    visit(layer + "self_attn.o_proj.weight", {hidden, q}, note);
    visit(layer + "post_attention_layernorm.weight", {hidden}, note);
    visit(layer + "mlp.gate_proj.weight", {inter, hidden}, note);
    visit(layer + "mlp.up_proj.weight", {inter, hidden}, note);
    visit(layer + "mlp.down_proj.weight", {hidden, inter}, note);
  }
  visit("model.norm.weight", {hidden}, "");
  if (!config.tie_word_embeddings) visit("lm_head.weight", {vocab, hidden}, "");
}

// HF's LlamaForCausalLM.
class Llama : public nn::Module {
 public:
  static constexpr int64_t kDefaultMaxContext = 4096;

  // max_context: the positions the KV cache holds (its buffers are [B, kv_heads, max_context,
  // head_dim] per layer); by default min(max_position_embeddings, 4096), since LLaMA 3.1's 131072
  // would take 32 GiB of float32 cache for the 8B model at batch size 1 (4096: 1 GiB).
  explicit Llama(const LlamaConfig& config, std::optional<int64_t> max_context = std::nullopt)
      : config((config.validate(), config)),
        max_context_(max_context.value_or(std::min(config.max_position_embeddings, kDefaultMaxContext))) {
    if (max_context_ <= 0)
      throw Error("Llama: max_context must be positive, got " + std::to_string(max_context_));
    model = register_module("model", std::make_shared<LlamaModel>(config, max_context_));
    if (!config.tie_word_embeddings)
      lm_head = register_module("lm_head",
                                std::make_shared<nn::Linear>(config.hidden_size, config.vocab_size, false));
  }

  // tokens [B, T] -> logits [B, T, vocab_size], positions 0 .. T - 1, no cache.
  Tensor forward(const Tensor& tokens) override { return run(tokens, std::nullopt); }

  // tokens [B, T] at positions [start_pos, start_pos + T), attending to the cached keys and values
  // of the positions before start_pos (written by earlier calls) -> logits [B, T, vocab_size]. The
  // logits and the caches are realized. Start a new sequence with start_pos 0. With logits_to_keep
  // k > 0 (HF's argument), only the last k positions get logits, [B, k, vocab_size]: a prompt needs
  // its last one only, and the LM head is the largest product of a forward.
  Tensor forward(const Tensor& tokens, int64_t start_pos, int64_t logits_to_keep = 0) {
    if (logits_to_keep < 0 || (tokens.dim() == 2 && logits_to_keep > tokens.size(1)))
      throw Error("Llama: logits_to_keep " + std::to_string(logits_to_keep) + " is not in [0, " +
                  std::to_string(tokens.dim() == 2 ? tokens.size(1) : 0) + "]");
    Tensor logits = run(tokens, start_pos, logits_to_keep);
    realize_with_caches(logits);
    return logits;
  }

  // Fixed-shape decoding, batch 1: `token` at position `pos`, both Variables read when the kernels
  // run, attending to the cached positions [0, pos] among the first `window` (pos < window). Every
  // token and position runs the same kernels, so a Jit captures the step once per window (see
  // models/generate.h). The cache must hold the positions before pos. Returns the realized logits
  // [1, 1, vocab_size]; the caches are updated.
  Tensor decode_step(const Variable& token, const Variable& pos, int64_t window) {
    Tensor x = model->embed_tokens->weight.narrow(0, token, 1).reshape({1, 1, config.hidden_size});
    const auto [cos, sin] = model->rotary_emb->at(pos);
    for (const auto& block : model->blocks) x = block->step(x, cos, sin, pos, window);
    Tensor logits = head(model->norm->forward(x));
    realize_with_caches(logits);
    return logits;
  }

  void reset_cache() {
    for (const auto& block : model->blocks) block->self_attn->reset_cache();
  }

  // For models/generate.h: the vocabulary, and how many positions a sequence may fill.
  int64_t vocab_size() const { return config.vocab_size; }
  int64_t context_length() const { return max_context_; }
  static constexpr const char* kContextName = "max_context";

  // Loads a Hugging Face LlamaForCausalLM checkpoint's tensors (names above). Every tensor of
  // this model must be there with its shape, otherwise lazygrad::Error names the tensor and nothing
  // is loaded. Other entries (a tied model's lm_head.weight, older files' rotary_emb.inv_freq) are
  // ignored; 16-bit tensors are converted to float32.
  void load_hf_state_dict(const StateDict& checkpoint) {
    check_hf_state_dict(config, checkpoint);
    load_hf_checkpoint(*this, checkpoint, "Llama");
  }

  // Checks a Hugging Face checkpoint against `config` as load_hf_state_dict reads it, from the
  // config alone (check_hf_checkpoint): lazygrad::Error names the first tensor that is missing or
  // of another dtype or shape (with the dimension and the config field), and `where` (the
  // checkpoint's file or folder) when given.
  static void check_hf_state_dict(const LlamaConfig& config, const StateDict& checkpoint,
                                  const std::string& where = "") {
    check_hf_checkpoint(
        checkpoint, [&](auto&& visit) { visit_llama_tensors(config, {}, visit); },
        checkpoint_prefix("Llama", where));
  }

  // A Llama of `config` (and max_context, as the constructor takes it) with a Hugging Face
  // checkpoint's weights (as load_hf_state_dict reads them). The checkpoint is checked against the
  // config before the model is built, so a config it does not match (another hidden_size, more
  // layers than it holds, a billion layers) is a lazygrad::Error naming the tensor, the dimension
  // and the field (and `where`, the checkpoint's file or folder), before anything is allocated.
  static std::shared_ptr<Llama> from_hf_checkpoint(const LlamaConfig& config, const StateDict& checkpoint,
                                                   const std::string& where = "",
                                                   std::optional<int64_t> max_context = std::nullopt) {
    config.validate();
    check_hf_state_dict(config, checkpoint, where);
    nn::init::SkipInit skip_init;  // every parameter is the checkpoint's next
    auto model = std::make_shared<Llama>(config, max_context);
    model->load_hf_state_dict(checkpoint);
    return model;
  }

  LlamaConfig config;
  std::shared_ptr<LlamaModel> model;
  std::shared_ptr<nn::Linear> lm_head;  // null when tied to model.embed_tokens

 private:
  Tensor run(const Tensor& tokens, std::optional<int64_t> start_pos, int64_t logits_to_keep = 0) {
    if (tokens.dim() != 2) throw Error("Llama: tokens must be [B, T], got " + shape_str(tokens.shape()));
    Tensor x = model->forward(tokens, start_pos);
    const int64_t T = tokens.size(1);
    return head(logits_to_keep > 0 ? x.slice(1, T - logits_to_keep, T) : x);
  }

  // The LM head, or the token embedding transposed when they are tied.
  Tensor head(const Tensor& x) {
    return lm_head ? lm_head->forward(x) : x.matmul(model->embed_tokens->weight.t());
  }

  // The logits and the caches' writes in one schedule.
  void realize_with_caches(const Tensor& logits) {
    realize_with_kv_caches(
        logits, model->blocks,
        [](const LlamaDecoderLayer& block) -> const LlamaAttention& { return *block.self_attn; });
  }

  int64_t max_context_;
};

}  // namespace lazygrad::models
