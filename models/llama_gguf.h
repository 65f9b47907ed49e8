// LLaMA from a GGUF file (llama.cpp's format, include/lazygrad/gguf.h): the config from the
// "llama.*" metadata, the weights under Hugging Face's names (models/llama.h), and the tokenizer from
// the "tokenizer.ggml.*" metadata. Header-only and public API only; docs/llama.md has the details.
//
// llama.cpp's converter (convert_hf_to_gguf.py) renames HF's tensors and permutes the rows of the
// query and key projections: HF applies RoPE to the two halves of each head (rotate_half), llama.cpp
// to adjacent pairs, so each head's rows [2, head_dim / 2] are stored transposed as [head_dim / 2,
// 2]. Reading, that is undone, and the model runs as HF's does. LLaMA 3.1's rope scaling is stored
// as per-frequency divisors ("rope_freqs.weight"), which replace the model's computed frequencies.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/gguf.h>
#include <lazygrad/state_dict.h>
#include <lazygrad/tokenizer.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llama.h"

namespace lazygrad::models {

// The GGUF metadata keys of LlamaConfig's fields, for messages that name the file's key.
inline LlamaConfigKeys gguf_config_keys() {
  LlamaConfigKeys k;
  k.hidden_size = "llama.embedding_length";
  k.intermediate_size = "llama.feed_forward_length";
  k.num_hidden_layers = "llama.block_count";
  k.num_attention_heads = "llama.attention.head_count";
  k.num_key_value_heads = "llama.attention.head_count_kv";
  k.head_dim = "llama.attention.key_length";
  k.rms_norm_eps = "llama.attention.layer_norm_rms_epsilon";
  k.rope_theta = "llama.rope.freq_base";
  k.max_position_embeddings = "llama.context_length";
  k.vocab_size = "the rows of token_embd.weight";
  k.sliding_window = "llama.attention.sliding_window";
  return k;
}

// The config of a GGUF file whose general.architecture is "llama" (LLaMA 1/2/3, TinyLlama and
// Mistral all convert to it). Missing keys take llama.cpp's defaults; a missing required one,
// another architecture, a value of the wrong type or one the model cannot be built with (a
// negative block_count, sizes whose parameter count overflows) is a lazygrad::Error naming the
// file and the key. Only the tensor infos are read, so a file from load_gguf_metadata will do.
inline LlamaConfig llama_config_from_gguf(const GGUFFile& file) {
  const std::string& arch = file.at("general.architecture").as_string();
  if (arch != "llama")
    throw Error(file.path + ": general.architecture is \"" + arch +
                "\"; only \"llama\" models are supported");
  // The accessors' errors name the key; these add the file.
  auto integer = [&](const GGUFValue& v) {
    try {
      return v.as_int();
    } catch (const Error& e) {
      throw Error(file.path + ": " + e.what());
    }
  };
  auto count = [&](const std::string& key) { return integer(file.at("llama." + key)); };
  auto number_or = [&](const std::string& key, double fallback) {
    const GGUFValue* v = file.find("llama." + key);
    try {
      return v ? v->as_double() : fallback;
    } catch (const Error& e) {
      throw Error(file.path + ": " + e.what());
    }
  };
  LlamaConfig c;
  c.hidden_size = count("embedding_length");
  c.intermediate_size = count("feed_forward_length");
  c.num_hidden_layers = count("block_count");
  c.num_attention_heads = count("attention.head_count");
  c.num_key_value_heads =
      file.find("llama.attention.head_count_kv") ? count("attention.head_count_kv") : c.num_attention_heads;
  // The head size is attention.key_length (as llama.cpp reads it), else hidden / heads; the rotary
  // dimensions (rope.dimension_count) must be all of it: partial rotary is not supported.
  const int64_t heads_size = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  if (const GGUFValue* k = file.find("llama.attention.key_length"); k && integer(*k) != heads_size)
    c.head_dim = integer(*k);
  if (const GGUFValue* d = file.find("llama.rope.dimension_count"); d && integer(*d) != c.head_size())
    throw Error(file.path + ": llama.rope.dimension_count " + std::to_string(integer(*d)) +
                " is not the head size " + std::to_string(c.head_size()) +
                " (partial rotary is not supported)");
  c.rms_norm_eps = number_or("attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_theta = number_or("rope.freq_base", 10000);
  c.max_position_embeddings = count("context_length");
  if (const GGUFValue* type = file.find("llama.rope.scaling.type"); type && type->as_string() == "linear") {
    c.rope_scaling.type = RopeScaling::Type::Linear;
    c.rope_scaling.factor = number_or("rope.scaling.factor", 1);
  } else if (type && type->as_string() != "none") {
    throw Error(file.path + ": llama.rope.scaling.type \"" + type->as_string() + "\" is not supported");
  }
  if (const GGUFValue* window = file.find("llama.attention.sliding_window"))
    c.sliding_window = integer(*window);
  // From the tensor's info, not the tensor: a file read by load_gguf_metadata has the config too.
  const GGUFTensorInfo* embed = file.tensor_info("token_embd.weight");
  if (!embed) throw Error(file.path + ": no tensor \"token_embd.weight\" (the token embeddings)");
  if (embed->shape.size() != 2)
    throw Error(file.path + ": tensor \"token_embd.weight\" has shape " + shape_str(embed->shape) +
                ", expected 2 dimensions [vocab, llama.embedding_length]");
  c.vocab_size = embed->shape[0];
  c.tie_word_embeddings = file.tensor_info("output.weight") == nullptr;
  c.bos_token_id = file.find("tokenizer.ggml.bos_token_id")
                       ? std::optional<int64_t>(integer(file.at("tokenizer.ggml.bos_token_id")))
                       : std::nullopt;
  c.eos_token_ids.clear();
  if (const GGUFValue* eos = file.find("tokenizer.ggml.eos_token_id"))
    c.eos_token_ids.push_back(integer(*eos));
  try {
    c.validate(gguf_config_keys());
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + file.path + ")");
  }
  return c;
}

// llama.cpp's name of the tensor Hugging Face calls `hf_name` (convert_hf_to_gguf.py's names, the
// ones a Llama has).
inline std::string gguf_tensor_name(const std::string& hf_name) {
  static constexpr std::pair<std::string_view, std::string_view> kModel[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static constexpr std::pair<std::string_view, std::string_view> kLayer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  for (const auto& [hf, gguf] : kModel)
    if (hf_name == hf) return std::string(gguf);
  constexpr std::string_view kLayers = "model.layers.";
  const size_t dot = hf_name.find('.', kLayers.size());
  if (hf_name.starts_with(kLayers) && dot != std::string::npos) {
    const std::string_view rest = std::string_view(hf_name).substr(dot + 1);
    for (const auto& [hf, gguf] : kLayer)
      if (rest == hf)
        return "blk." + hf_name.substr(kLayers.size(), dot - kLayers.size()) + "." + std::string(gguf);
  }
  throw Error("gguf_tensor_name: no llama.cpp name for \"" + hf_name + "\"");
}

// HF's row order of a query or key projection [heads * head_dim, in] that llama.cpp permuted.
inline Tensor unpermute_rope_rows(const Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0), in = w.size(1), half = rows / heads / 2;
  return w.reshape({heads, half, 2, in}).transpose(1, 2).reshape({rows, in});
}

// The file's tensors under HF's LlamaForCausalLM names, with the query and key rows back in HF's
// order. Each tensor the config implies is checked first, in the model's order: one the file
// lacks, one of a dtype that is not floating point, or one of another shape is a lazygrad::Error
// naming the file, both names, and for a shape the dimension (with its ggml ne index), both sizes
// and the metadata keys the expected one comes from. A block_count beyond the file's blocks fails
// at the first block the file lacks.
inline StateDict llama_state_dict_from_gguf(const GGUFFile& file, const LlamaConfig& config) {
  StateDict out;
  const std::string prefix = checkpoint_prefix("Llama", file.path);
  visit_llama_tensors(
      config, gguf_config_keys(),
      [&](const std::string& hf_name, const ConfigShape& shape, const std::string& note) {
        const std::string name = gguf_tensor_name(hf_name);
        const std::string label = "\"" + name + "\" (the model's " + hf_name;
        if (!file.tensor_info(name))
          throw Error(prefix + "no tensor " + label + (note.empty() ? "" : ", " + note) + ")");
        const Tensor& t = file.tensor(name);
        check_checkpoint_tensor(prefix, {label + ")", t.dtype(), t.shape(), true}, shape);
        out[hf_name] = t;
      });
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".self_attn.";
    Tensor& q = out[layer + "q_proj.weight"];
    Tensor& k = out[layer + "k_proj.weight"];
    q = unpermute_rope_rows(q.to(kFloat32), config.num_attention_heads);
    k = unpermute_rope_rows(k.to(kFloat32), config.num_key_value_heads);
  }
  return out;
}

// A Llama with the file's weights (max_context as Llama's constructor takes it). With
// "rope_freqs.weight" (LLaMA 3.1's scaling), the rotary frequencies are rope_theta's divided by it.
// Every tensor is checked (llama_state_dict_from_gguf) before the model is built, so a file whose
// metadata does not match its tensors is refused before anything is allocated.
inline std::shared_ptr<Llama> load_llama_gguf(const GGUFFile& file,
                                              std::optional<int64_t> max_context = std::nullopt) {
  const LlamaConfig config = llama_config_from_gguf(file);
  const StateDict weights = llama_state_dict_from_gguf(file, config);
  const Tensor* divisors = nullptr;
  if (file.tensor_info("rope_freqs.weight")) {
    divisors = &file.tensor("rope_freqs.weight");
    check_checkpoint_tensor(checkpoint_prefix("Llama", file.path),
                            {"\"rope_freqs.weight\" (the rotary frequencies' divisors)", divisors->dtype(),
                             divisors->shape(), true},
                            {{config.head_size() / 2, gguf_config_keys().head_dim + " / 2"}});
  }
  auto model = Llama::from_hf_checkpoint(config, weights, file.path, max_context);
  if (divisors) {
    Tensor& inv_freq = model->model->rotary_emb->inv_freq;
    inv_freq.assign(inv_freq / divisors->to(kFloat32).to(inv_freq.device()));  // the file is read on the CPU
    inv_freq.realize();
  }
  return model;
}

// The tokenizer.ggml.* arrays, for Tokenizer::from_gguf_vocab.
inline GGUFVocab gguf_vocab(const GGUFFile& file) {
  GGUFVocab v;
  auto text = [&](const char* key) {
    const GGUFValue* x = file.find(key);
    return x ? x->as_string() : std::string();
  };
  // A 32-bit value, checked: a cast alone would turn 2^32 + 1 into 1, a valid id or type.
  auto int32 = [&](int64_t x, const std::string& key) {
    if (x < INT32_MIN || x > INT32_MAX)
      throw Error(file.path + ": " + key + " is " + std::to_string(x) + ", out of the 32-bit range");
    return static_cast<int32_t>(x);
  };
  auto id = [&](const char* key) {
    const GGUFValue* x = file.find(key);
    return x ? int32(x->as_int(), key) : -1;
  };
  auto flag = [&](const char* key, bool fallback) {
    const GGUFValue* x = file.find(key);
    return x ? x->as_bool() : fallback;
  };
  v.model = file.at("tokenizer.ggml.model").as_string();
  v.pre = text("tokenizer.ggml.pre");
  v.tokens = file.at("tokenizer.ggml.tokens").as_strings();
  if (const GGUFValue* s = file.find("tokenizer.ggml.scores")) v.scores = s->as_floats();
  if (const GGUFValue* t = file.find("tokenizer.ggml.token_type"))
    for (int64_t x : t->as_ints()) v.token_types.push_back(int32(x, "tokenizer.ggml.token_type"));
  if (const GGUFValue* m = file.find("tokenizer.ggml.merges")) v.merges = m->as_strings();
  v.bos_token_id = id("tokenizer.ggml.bos_token_id");
  v.eos_token_id = id("tokenizer.ggml.eos_token_id");
  v.unknown_token_id = id("tokenizer.ggml.unknown_token_id");
  v.add_bos = flag("tokenizer.ggml.add_bos_token", v.model == "llama");
  v.add_eos = flag("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = flag("tokenizer.ggml.add_space_prefix", true);
  return v;
}

}  // namespace lazygrad::models
