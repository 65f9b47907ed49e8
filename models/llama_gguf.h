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
#include <utility>
#include <vector>

#include "llama.h"

namespace lazygrad::models {

// The config of a GGUF file whose general.architecture is "llama" (LLaMA 1/2/3, TinyLlama and
// Mistral all convert to it). Missing keys take llama.cpp's defaults; a missing required one, or
// another architecture, is a lazygrad::Error naming the file and the key. Only the tensor infos are
// read, so a file from load_gguf_metadata will do.
inline LlamaConfig llama_config_from_gguf(const GGUFFile& file) {
  const std::string& arch = file.at("general.architecture").as_string();
  if (arch != "llama")
    throw Error(file.path + ": general.architecture is \"" + arch +
                "\"; only \"llama\" models are supported");
  auto count = [&](const std::string& key) { return file.at("llama." + key).as_int(); };
  auto number_or = [&](const std::string& key, double fallback) {
    const GGUFValue* v = file.find("llama." + key);
    return v ? v->as_double() : fallback;
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
  if (const GGUFValue* k = file.find("llama.attention.key_length"); k && k->as_int() != heads_size)
    c.head_dim = k->as_int();
  if (const GGUFValue* d = file.find("llama.rope.dimension_count"); d && d->as_int() != c.head_size())
    throw Error(file.path + ": llama.rope.dimension_count " + std::to_string(d->as_int()) +
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
    c.sliding_window = window->as_int();
  // From the tensor's info, not the tensor: a file read by load_gguf_metadata has the config too.
  const GGUFTensorInfo* embed = file.tensor_info("token_embd.weight");
  if (!embed) throw Error(file.path + ": no tensor \"token_embd.weight\" (the token embeddings)");
  c.vocab_size = embed->shape.size() == 2 ? embed->shape[0] : 0;
  c.tie_word_embeddings = file.tensor_info("output.weight") == nullptr;
  c.bos_token_id = file.find("tokenizer.ggml.bos_token_id")
                       ? std::optional<int64_t>(file.at("tokenizer.ggml.bos_token_id").as_int())
                       : std::nullopt;
  c.eos_token_ids.clear();
  if (const GGUFValue* eos = file.find("tokenizer.ggml.eos_token_id"))
    c.eos_token_ids.push_back(eos->as_int());
  c.validate();
  return c;
}

// HF's row order of a query or key projection [heads * head_dim, in] that llama.cpp permuted.
inline Tensor unpermute_rope_rows(const Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0), in = w.size(1), half = rows / heads / 2;
  return w.reshape({heads, half, 2, in}).transpose(1, 2).reshape({rows, in});
}

// The file's tensors under HF's LlamaForCausalLM names, with the query and key rows back in HF's
// order. A tensor the model needs that the file lacks is a lazygrad::Error naming both names.
inline StateDict llama_state_dict_from_gguf(const GGUFFile& file, const LlamaConfig& config) {
  StateDict out;
  auto take = [&](const std::string& gguf_name, const std::string& hf_name) {
    if (!file.tensor_info(gguf_name))
      throw Error(file.path + ": no tensor \"" + gguf_name + "\" (the model's " + hf_name + ")");
    out[hf_name] = file.tensor(gguf_name);
  };
  take("token_embd.weight", "model.embed_tokens.weight");
  take("output_norm.weight", "model.norm.weight");
  if (!config.tie_word_embeddings) take("output.weight", "lm_head.weight");
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".",
                      layer = "model.layers." + std::to_string(i) + ".";
    take(blk + "attn_norm.weight", layer + "input_layernorm.weight");
    take(blk + "attn_q.weight", layer + "self_attn.q_proj.weight");
    take(blk + "attn_k.weight", layer + "self_attn.k_proj.weight");
    take(blk + "attn_v.weight", layer + "self_attn.v_proj.weight");
    take(blk + "attn_output.weight", layer + "self_attn.o_proj.weight");
    take(blk + "ffn_norm.weight", layer + "post_attention_layernorm.weight");
    take(blk + "ffn_gate.weight", layer + "mlp.gate_proj.weight");
    take(blk + "ffn_up.weight", layer + "mlp.up_proj.weight");
    take(blk + "ffn_down.weight", layer + "mlp.down_proj.weight");
    Tensor& q = out[layer + "self_attn.q_proj.weight"];
    Tensor& k = out[layer + "self_attn.k_proj.weight"];
    if (q.dim() == 2 && k.dim() == 2 && q.size(0) % (2 * config.num_attention_heads) == 0 &&
        k.size(0) % (2 * config.num_key_value_heads) == 0) {  // else load_hf_state_dict names the bad shape
      q = unpermute_rope_rows(q.to(kFloat32), config.num_attention_heads);
      k = unpermute_rope_rows(k.to(kFloat32), config.num_key_value_heads);
    }
  }
  return out;
}

// A Llama with the file's weights (max_context as Llama's constructor takes it). With
// "rope_freqs.weight" (LLaMA 3.1's scaling), the rotary frequencies are rope_theta's divided by it.
inline std::shared_ptr<Llama> load_llama_gguf(const GGUFFile& file,
                                              std::optional<int64_t> max_context = std::nullopt) {
  const LlamaConfig config = llama_config_from_gguf(file);
  auto model = std::make_shared<Llama>(config, max_context);
  model->load_hf_state_dict(llama_state_dict_from_gguf(file, config));
  if (file.tensor_info("rope_freqs.weight")) {
    Tensor& inv_freq = model->model->rotary_emb->inv_freq;
    const Tensor& divisors = file.tensor("rope_freqs.weight");
    if (divisors.shape() != inv_freq.shape())
      throw Error(file.path + ": rope_freqs.weight has shape " + shape_str(divisors.shape()) + ", expected " +
                  shape_str(inv_freq.shape()));
    inv_freq.assign(inv_freq / divisors.to(kFloat32));
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
