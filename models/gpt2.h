// GPT-2 (Radford et al., "Language Models are Unsupervised Multitask Learners", 2019), as Hugging
// Face's GPT2LMHeadModel computes it, reading HF's checkpoints by HF's tensor names:
//
//   wte.weight [vocab, n_embd], wpe.weight [n_positions, n_embd]       token and position embeddings
//   h.{i}.ln_1.{weight,bias}, h.{i}.attn.c_attn.{weight,bias}          block i: LayerNorm, q|k|v projection
//   h.{i}.attn.c_proj.{weight,bias}, h.{i}.ln_2.{weight,bias}          attention output, LayerNorm
//   h.{i}.mlp.c_fc.{weight,bias}, h.{i}.mlp.c_proj.{weight,bias}       MLP n_embd -> 4 n_embd -> n_embd
//   ln_f.{weight,bias}                                                 the final LayerNorm
//
// The projections are HF's Conv1D: weight [in, out], y = x @ W + b (the transpose of nn::Linear's).
// The LM head is tied to wte. Names may carry a "transformer." prefix (GPT2LMHeadModel's files);
// HF's h.{i}.attn.bias / masked_bias mask buffers and lm_head.weight are ignored.
//
// tokens [B, T] (any integer dtype) -> logits [B, T, vocab_size], float32. forward(tokens, start_pos)
// also keeps a KV cache: the keys and values of positions [start_pos, start_pos + T) are written into
// preallocated [B, n_head, n_positions, head_dim] buffers, and the queries attend to every position
// before theirs, so decoding one token at a time gives the full forward's logits.
//
// Header-only and public API only. docs/gpt2.md has the details and what is not done yet.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/json.h>
#include <lazygrad/nn.h>
#include <lazygrad/state_dict.h>
#include <lazygrad/variable.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint.h"
#include "config_fields.h"
#include "parameter_count.h"

namespace lazygrad::models {

struct GPT2Config {
  // Defaults are HF's GPT2Config defaults (gpt2's shape).
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;
  double layer_norm_epsilon = 1e-5;

  // The four released sizes (HF: gpt2, gpt2-medium, gpt2-large, gpt2-xl).
  static GPT2Config gpt2() { return {12, 12, 768, 50257, 1024, 1e-5}; }          // 124M
  static GPT2Config gpt2_medium() { return {24, 16, 1024, 50257, 1024, 1e-5}; }  // 355M
  static GPT2Config gpt2_large() { return {36, 20, 1280, 50257, 1024, 1e-5}; }   // 774M
  static GPT2Config gpt2_xl() { return {48, 25, 1600, 50257, 1024, 1e-5}; }      // 1558M

  // The number of parameters a GPT2 of this config has (the tied head counted once), from the
  // config alone: nothing is allocated. Throws lazygrad::Error naming the field when the count
  // (as float32 bytes) would overflow 64 bits (ParameterCount).
  int64_t parameter_count() const {
    const ParameterCount n("GPT2Config");
    const std::string embd = "n_embd " + std::to_string(n_embd);
    // A block: two LayerNorms, the q|k|v projection, the attention output, the MLP (weights, biases).
    const int64_t square = n.mul(n_embd, n_embd, embd);
    const int64_t block = n.add(n.mul(12, square, embd), n.mul(13, n_embd, embd), embd);
    int64_t count = n.mul(n_layer, block, "n_layer " + std::to_string(n_layer));
    count = n.add(count, n.mul(vocab_size, n_embd, "vocab_size " + std::to_string(vocab_size)), "vocab_size");
    count =
        n.add(count, n.mul(n_positions, n_embd, "n_positions " + std::to_string(n_positions)), "n_positions");
    return n.add(count, 2 * n_embd, embd);
  }

  // Throws lazygrad::Error naming the first field whose value the model cannot be built with:
  // every size positive, n_embd a multiple of n_head, layer_norm_epsilon a positive number, and a
  // parameter count that fits (parameter_count).
  void validate() const {
    auto positive = [](int64_t v, const char* name) {
      if (v <= 0)
        throw Error(std::string("GPT2Config: ") + name + " must be positive, got " + std::to_string(v));
    };
    positive(n_layer, "n_layer");
    positive(n_head, "n_head");
    positive(n_embd, "n_embd");
    positive(vocab_size, "vocab_size");
    positive(n_positions, "n_positions");
    if (n_embd % n_head != 0)
      throw Error("GPT2Config: n_embd (" + std::to_string(n_embd) + ") must be a multiple of n_head (" +
                  std::to_string(n_head) + ")");
    if (!(layer_norm_epsilon > 0) || !std::isfinite(layer_norm_epsilon))
      throw Error("GPT2Config: layer_norm_epsilon must be a positive number, got " +
                  std::to_string(layer_norm_epsilon));
    parameter_count();
  }

  // A Hugging Face GPT-2 config.json (model_type "gpt2" or none, as the first GPT-2 folders have).
  // An absent field (or null) takes HF's default; the sizes must be integer literals (Python's
  // json reads 1e9 as a float, which HF's range(n_layer) refuses). activation_function must be
  // "gelu_new", GPT-2's. A field of the wrong type or a value the model cannot be built with
  // (validate) throws lazygrad::Error naming the field and `where`. Fields the model does not use
  // (n_ctx, dropouts, ...) are ignored.
  static GPT2Config from_json(std::string_view text, const std::string& where = "config.json") {
    const json::Value doc = parse_config_json(text, "GPT2Config", where);
    const ConfigFields fields(doc, "GPT2Config", where);
    if (const auto type = fields.string("model_type"); type && *type != "gpt2")
      fields.fail(*doc.find("model_type"), "model_type \"" + *type + "\" is not a GPT-2 config");
    if (const auto act = fields.string("activation_function"); act && *act != "gelu_new")
      fields.fail(*doc.find("activation_function"),
                  "activation_function \"" + *act + "\" is not supported (only GPT-2's \"gelu_new\")");
    GPT2Config c;
    fields.read("n_layer", c.n_layer);
    fields.read("n_head", c.n_head);
    fields.read("n_embd", c.n_embd);
    fields.read("vocab_size", c.vocab_size);
    fields.read("n_positions", c.n_positions);
    fields.read("layer_norm_epsilon", c.layer_norm_epsilon);
    try {
      c.validate();
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (in " + where + ")");
    }
    return c;
  }
  static GPT2Config from_file(const std::string& path) {
    return from_json(read_config_text(path, "GPT2Config"), "\"" + path + "\"");
  }
};

// The tensors of a GPT2 of `config`, by the model's state_dict names and in its order:
// visit(name, shape, note), each dimension with the config fields it comes from, note naming a
// block's layer. From the config alone, for check_hf_checkpoint (a test checks it against the
// model's own state_dict).
template <class Visit>
void visit_gpt2_tensors(const GPT2Config& config, Visit&& visit) {
  const ConfigDim embd{config.n_embd, "n_embd"}, embd3{3 * config.n_embd, "3 * n_embd"},
      embd4{4 * config.n_embd, "4 * n_embd"};
  visit("wte.weight", {{config.vocab_size, "vocab_size"}, embd}, "");
  visit("wpe.weight", {{config.n_positions, "n_positions"}, embd}, "");
  for (int64_t i = 0; i < config.n_layer; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    const std::string note = "layer " + std::to_string(i) + " of n_layer " + std::to_string(config.n_layer);
    visit(h + "ln_1.weight", {embd}, note);
    visit(h + "ln_1.bias", {embd}, note);
    visit(h + "attn.c_attn.weight", {embd, embd3}, note);
    visit(h + "attn.c_attn.bias", {embd3}, note);
    visit(h + "attn.c_proj.weight", {embd, embd}, note);
    visit(h + "attn.c_proj.bias", {embd}, note);
    visit(h + "ln_2.weight", {embd}, note);
    visit(h + "ln_2.bias", {embd}, note);
    visit(h + "mlp.c_fc.weight", {embd, embd4}, note);
    visit(h + "mlp.c_fc.bias", {embd4}, note);
    visit(h + "mlp.c_proj.weight", {embd4, embd}, note);
    visit(h + "mlp.c_proj.bias", {embd}, note);
  }
  visit("ln_f.weight", {embd}, "");
  visit("ln_f.bias", {embd}, "");
}

// HF's Conv1D: a linear layer with its weight stored [in, out]. Initialized as HF does: weight
// N(0, 0.02), bias zeros.
class GPT2Conv1D : public nn::Module {
 public:
  GPT2Conv1D(int64_t in_features, int64_t out_features) {
    weight = register_parameter("weight", Tensor::empty({in_features, out_features}));
    bias = register_parameter("bias", Tensor::empty({out_features}));
    nn::init::normal_(weight, 0.0, 0.02);
    nn::init::zeros_(bias);
  }
  Tensor forward(const Tensor& x) override { return x.matmul(weight) + bias; }

  Tensor weight, bias;
};

// Masked multi-head self-attention: each position attends to itself and the positions before it.
class GPT2Attention : public nn::Module {
 public:
  explicit GPT2Attention(const GPT2Config& config) : config_(config) {
    if (config.n_head <= 0 || config.n_embd % config.n_head != 0)
      throw Error("GPT2: n_embd (" + std::to_string(config.n_embd) + ") must be a multiple of n_head (" +
                  std::to_string(config.n_head) + ")");
    c_attn = register_module("c_attn", std::make_shared<GPT2Conv1D>(config.n_embd, 3 * config.n_embd));
    c_proj = register_module("c_proj", std::make_shared<GPT2Conv1D>(config.n_embd, config.n_embd));
  }

  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt); }

  // x [B, T, n_embd]. With start_pos, x holds positions [start_pos, start_pos + T): their keys and
  // values go into the cache and the queries see the cached positions before them too.
  Tensor forward(const Tensor& x, std::optional<int64_t> start_pos) {
    const int64_t B = x.size(0), T = x.size(1), C = config_.n_embd, H = config_.n_head, D = C / H;
    // One projection gives the queries, keys and values; each is split into H heads [B, H, T, D].
    std::vector<Tensor> qkv = c_attn->forward(x).split(C, -1);
    auto heads = [&](const Tensor& t) { return t.reshape({B, T, H, D}).transpose(1, 2); };
    Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);

    const int64_t past = start_pos.value_or(0);
    if (start_pos) {
      if (past < 0 || past + T > config_.n_positions)
        throw Error("GPT2: positions [" + std::to_string(past) + ", " + std::to_string(past + T) +
                    ") are outside the KV cache's n_positions " + std::to_string(config_.n_positions));
      if (!cache_k.defined() || cache_k.size(0) != B) {
        if (past != 0) throw Error("GPT2: the KV cache must be filled from start_pos 0 for a new batch size");
        empty_cache(B);
      }
      cache_k.narrow_assign(2, past, k);  // writes only these T positions
      cache_v.narrow_assign(2, past, v);
      k = cache_k.slice(2, 0, past + T);
      v = cache_v.slice(2, 0, past + T);
    }
    const int64_t S = past + T;  // keys: positions [0, S)

    // Scaled dot-product scores [B, H, T, S]; query i (position past + i) must not see key j > past + i.
    Tensor scores = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));
    Tensor query_pos = Tensor::arange(past, S).reshape({T, 1});
    Tensor key_pos = Tensor::arange(S).reshape({1, S});
    scores = scores.masked_fill(key_pos > query_pos, -std::numeric_limits<double>::infinity());
    Tensor out = scores.softmax(-1).matmul(v);  // [B, H, T, D]
    // The heads side by side again, then the output projection.
    return c_proj->forward(out.transpose(1, 2).reshape({B, T, C}));
  }

  // One token (x [1, 1, n_embd]) at position `pos`, a Variable read when the kernels run: its key and
  // value go into the cache at pos, and the query attends to the first `window` cached positions
  // with those after pos masked out. The shapes do not depend on pos, so every position below
  // `window` runs the same kernels. The cache must hold positions [0, pos) already.
  Tensor step(const Tensor& x, const Variable& pos, int64_t window) {
    const int64_t C = config_.n_embd, H = config_.n_head, D = C / H;
    if (!cache_k.defined() || cache_k.size(0) != 1)
      throw Error(
          "GPT2: a decode step needs the KV cache of a batch of 1 (run the prompt through forward first)");
    if (window < 1 || window > config_.n_positions)
      throw Error("GPT2: decode window " + std::to_string(window) + " is outside [1, n_positions " +
                  std::to_string(config_.n_positions) + "]");
    std::vector<Tensor> qkv = c_attn->forward(x).split(C, -1);
    auto heads = [&](const Tensor& t) { return t.reshape({1, 1, H, D}).transpose(1, 2); };  // [1, H, 1, D]
    cache_k.narrow_assign(2, pos, heads(qkv[1]));
    cache_v.narrow_assign(2, pos, heads(qkv[2]));
    Tensor k = cache_k.slice(2, 0, window), v = cache_v.slice(2, 0, window);
    Tensor scores = heads(qkv[0]).matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));
    Tensor later = Tensor::arange(window).reshape({1, window}) > pos.tensor();
    Tensor out = scores.masked_fill(later, -std::numeric_limits<double>::infinity()).softmax(-1).matmul(v);
    return c_proj->forward(out.transpose(1, 2).reshape({1, 1, C}));
  }

  // Forgets the cached keys and values.
  void reset_cache() { cache_k = cache_v = Tensor(); }
  // New caches of zeros for a batch of B, on the weights' device, as forward(x, 0) starts with.
  void empty_cache(int64_t B) {
    const int64_t H = config_.n_head, D = config_.n_embd / H;
    const std::string device = c_attn->weight.device();
    cache_k = Tensor::zeros({B, H, config_.n_positions, D}, kFloat32, device).contiguous().realize();
    cache_v = Tensor::zeros({B, H, config_.n_positions, D}, kFloat32, device).contiguous().realize();
  }

  std::shared_ptr<GPT2Conv1D> c_attn, c_proj;
  Tensor cache_k, cache_v;  // [B, n_head, n_positions, head_dim], once forward(x, start_pos) ran

 private:
  GPT2Config config_;
};

// The position-wise feed-forward network: n_embd -> 4 n_embd -> GELU (tanh approximation, HF's
// "gelu_new") -> n_embd.
class GPT2MLP : public nn::Module {
 public:
  explicit GPT2MLP(const GPT2Config& config) {
    c_fc = register_module("c_fc", std::make_shared<GPT2Conv1D>(config.n_embd, 4 * config.n_embd));
    c_proj = register_module("c_proj", std::make_shared<GPT2Conv1D>(4 * config.n_embd, config.n_embd));
  }
  Tensor forward(const Tensor& x) override { return c_proj->forward(c_fc->forward(x).gelu("tanh")); }

  std::shared_ptr<GPT2Conv1D> c_fc, c_proj;
};

// A transformer block with LayerNorm before each sublayer (GPT-2's change from the original
// transformer): x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class GPT2Block : public nn::Module {
 public:
  explicit GPT2Block(const GPT2Config& config) {
    ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(config.n_embd, config.layer_norm_epsilon));
    attn = register_module("attn", std::make_shared<GPT2Attention>(config));
    ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(config.n_embd, config.layer_norm_epsilon));
    mlp = register_module("mlp", std::make_shared<GPT2MLP>(config));
  }

  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt); }
  Tensor forward(const Tensor& x, std::optional<int64_t> start_pos) {
    Tensor h = x + attn->forward(ln_1->forward(x), start_pos);
    return h + mlp->forward(ln_2->forward(h));
  }
  Tensor step(const Tensor& x, const Variable& pos, int64_t window) {
    Tensor h = x + attn->step(ln_1->forward(x), pos, window);
    return h + mlp->forward(ln_2->forward(h));
  }

  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<GPT2Attention> attn;
  std::shared_ptr<GPT2MLP> mlp;
};

class GPT2 : public nn::Module {
 public:
  explicit GPT2(const GPT2Config& config = GPT2Config::gpt2()) : config((config.validate(), config)) {
    wte = register_module("wte", std::make_shared<nn::Embedding>(config.vocab_size, config.n_embd));
    wpe = register_module("wpe", std::make_shared<nn::Embedding>(config.n_positions, config.n_embd));
    h = register_module("h", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < config.n_layer; ++i) {
      blocks.push_back(std::make_shared<GPT2Block>(config));
      h->append(blocks.back());
    }
    ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(config.n_embd, config.layer_norm_epsilon));
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
      throw Error("GPT2: logits_to_keep " + std::to_string(logits_to_keep) + " is not in [0, " +
                  std::to_string(tokens.dim() == 2 ? tokens.size(1) : 0) + "]");
    Tensor logits = run(tokens, start_pos, logits_to_keep);
    realize_with_caches(logits);
    return logits;
  }

  // Fixed-shape decoding, batch 1: `token` at position `pos`, both Variables read when the kernels
  // run, attending to the cached positions [0, pos] among the first `window` (pos < window). Every
  // token and position runs the same kernels, so a Jit captures the step once per window (see
  // models/generate.h). The cache must hold the positions before pos (a prompt's forward(tokens, 0),
  // then earlier steps). Returns the realized logits [1, 1, vocab_size]; the caches are updated.
  Tensor decode_step(const Variable& token, const Variable& pos, int64_t window) {
    // Embedding rows read at the Variables' values: one row each, not the whole tables.
    Tensor x =
        (wte->weight.narrow(0, token, 1) + wpe->weight.narrow(0, pos, 1)).reshape({1, 1, config.n_embd});
    for (const auto& block : blocks) x = block->step(x, pos, window);
    Tensor logits = ln_f->forward(x).matmul(wte->weight.t());
    realize_with_caches(logits);
    return logits;
  }

  void reset_cache() {
    for (const auto& block : blocks) block->attn->reset_cache();
  }
  // Empty KV caches for one sequence: decode_step can then start at position 0, with no prompt
  // forward (an exported page feeds its prompt through decode_step, one token at a time).
  void empty_cache() {
    for (const auto& block : blocks) block->attn->empty_cache(1);
  }

  // For models/generate.h: the vocabulary, and how many positions a sequence may fill.
  int64_t vocab_size() const { return config.vocab_size; }
  int64_t context_length() const { return config.n_positions; }
  static constexpr const char* kContextName = "n_positions";

  // Loads a Hugging Face GPT-2 checkpoint's tensors (GPT2Model's or GPT2LMHeadModel's names,
  // with or without "transformer."). Every tensor of this model must be there with its shape,
  // otherwise lazygrad::Error names the tensor and nothing is loaded. Other entries are ignored.
  void load_hf_state_dict(const StateDict& checkpoint) {
    check_hf_state_dict(config, checkpoint);
    load_hf_checkpoint(*this, checkpoint, "GPT2", {"", "transformer."});
  }

  // Checks a Hugging Face checkpoint against `config` as load_hf_state_dict reads it, from the
  // config alone (check_hf_checkpoint): lazygrad::Error names the first tensor that is missing or
  // of another dtype or shape (with the dimension and the config field), and `where` (the
  // checkpoint's file) when given.
  static void check_hf_state_dict(const GPT2Config& config, const StateDict& checkpoint,
                                  const std::string& where = "") {
    check_hf_checkpoint(checkpoint, [&](auto&& visit) { visit_gpt2_tensors(config, visit); },
                        checkpoint_prefix("GPT2", where), {"", "transformer."});
  }

  // A GPT2 of `config` with a Hugging Face checkpoint's weights (as load_hf_state_dict reads them).
  // The checkpoint is checked against the config before the model is built, so a config it does
  // not match (another n_embd, more layers than it holds, a billion layers) is a lazygrad::Error
  // naming the tensor, the dimension and the field (and `where`, the checkpoint's file), before
  // anything is allocated.
  static std::shared_ptr<GPT2> from_hf_checkpoint(const GPT2Config& config, const StateDict& checkpoint,
                                                  const std::string& where = "") {
    config.validate();
    check_hf_state_dict(config, checkpoint, where);
    nn::init::SkipInit skip_init;  // every parameter is the checkpoint's next
    auto model = std::make_shared<GPT2>(config);
    model->load_hf_state_dict(checkpoint);
    return model;
  }

  GPT2Config config;
  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::ModuleList> h;  // the blocks, registered as h.0, h.1, ...
  std::vector<std::shared_ptr<GPT2Block>> blocks;
  std::shared_ptr<nn::LayerNorm> ln_f;

 private:
  // The logits and the caches' writes in one schedule.
  void realize_with_caches(const Tensor& logits) {
    realize_with_kv_caches(logits, blocks,
                           [](const GPT2Block& block) -> const GPT2Attention& { return *block.attn; });
  }

  Tensor run(const Tensor& tokens, std::optional<int64_t> start_pos, int64_t logits_to_keep = 0) {
    if (tokens.dim() != 2) throw Error("GPT2: tokens must be [B, T], got " + shape_str(tokens.shape()));
    const int64_t T = tokens.size(1), past = start_pos.value_or(0);
    if (past + T > config.n_positions)
      throw Error("GPT2: " + std::to_string(past + T) + " positions, more than n_positions " +
                  std::to_string(config.n_positions));
    // Token embedding plus learned position embedding.
    Tensor x = wte->forward(tokens) + wpe->forward(Tensor::arange(past, past + T));
    for (const auto& block : blocks) x = block->forward(x, start_pos);
    if (logits_to_keep > 0) x = x.slice(1, T - logits_to_keep, T);
    // The final LayerNorm, then the LM head: the token embedding, transposed.
    return ln_f->forward(x).matmul(wte->weight.t());
  }
};

}  // namespace lazygrad::models
