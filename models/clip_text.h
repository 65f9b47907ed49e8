// CLIP's text encoder (Radford et al., "Learning Transferable Visual Models From Natural Language
// Supervision", 2021), as Stable Diffusion v1.x uses it: the ViT-L/14 model's text transformer,
// under Hugging Face's CLIPTextModel names (what the original checkpoints hold below
// "cond_stage_model.transformer."):
//
//   text_model.embeddings.token_embedding.weight [vocab, width]       token embedding
//   text_model.embeddings.position_embedding.weight [positions, width] learned positions (77)
//   text_model.encoder.layers.{i}.layer_norm1, self_attn.{q,k,v,out}_proj, layer_norm2, mlp.fc1, mlp.fc2
//   text_model.final_layer_norm
//
// Pre-LayerNorm blocks with causal self-attention (a token sees itself and the tokens before it) and
// an MLP with the "quick GELU", x * sigmoid(1.702 x). Stable Diffusion conditions on the output of
// the final LayerNorm at every one of the 77 positions (the "last hidden state").
//
// Header-only and public API only. docs/stable_diffusion.md has the details.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/nn.h>

#include <cstdint>
#include <memory>
#include <string>

namespace lazygrad::models {

struct CLIPTextConfig {
  // ViT-L/14's text transformer (Stable Diffusion v1.x).
  int64_t vocab_size = 49408;
  int64_t hidden_size = 768;
  int64_t intermediate_size = 3072;
  int64_t num_layers = 12;
  int64_t num_heads = 12;  // CLIP's rule: width / 64
  int64_t max_positions = 77;
  double layer_norm_eps = 1e-5;
};

// Multi-head self-attention with CLIP's causal mask.
class CLIPAttention : public nn::Module {
 public:
  explicit CLIPAttention(const CLIPTextConfig& c) : heads_(c.num_heads) {
    if (c.num_heads <= 0 || c.hidden_size % c.num_heads != 0)
      throw Error("CLIPTextConfig: hidden_size (" + std::to_string(c.hidden_size) +
                  ") must be a multiple of num_heads (" + std::to_string(c.num_heads) + ")");
    k_proj = register_module("k_proj", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
    v_proj = register_module("v_proj", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
    q_proj = register_module("q_proj", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
    out_proj = register_module("out_proj", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  }
  // x [B, T, width] -> [B, T, width].
  Tensor forward(const Tensor& x) override {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), D = C / heads_;
    auto heads = [&](const Tensor& t) { return t.reshape({B, T, heads_, D}).transpose(1, 2); };
    Tensor out = heads(q_proj->forward(x))
                     .scaled_dot_product_attention(heads(k_proj->forward(x)), heads(v_proj->forward(x)),
                                                   std::nullopt, 0.0, /*is_causal=*/true);
    // Computed, then copied to [B, T, C]: out_proj reading the heads through the permute has no
    // vector lanes (see UNetCrossAttention).
    return out_proj->forward(out.realize().transpose(1, 2).reshape({B, T, C}).contiguous());
  }

  std::shared_ptr<nn::Linear> k_proj, v_proj, q_proj, out_proj;

 private:
  int64_t heads_;
};

// fc1, CLIP's quick GELU x * sigmoid(1.702 x) (what OpenAI trained with, not the erf GELU), fc2.
class CLIPMLP : public nn::Module {
 public:
  explicit CLIPMLP(const CLIPTextConfig& c) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(c.hidden_size, c.intermediate_size));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(c.intermediate_size, c.hidden_size));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = fc1->forward(x);
    return fc2->forward(h * (h * 1.702).sigmoid());
  }
  std::shared_ptr<nn::Linear> fc1, fc2;
};

// x + attn(layer_norm1(x)), then x + mlp(layer_norm2(x)).
class CLIPEncoderLayer : public nn::Module {
 public:
  explicit CLIPEncoderLayer(const CLIPTextConfig& c) {
    self_attn = register_module("self_attn", std::make_shared<CLIPAttention>(c));
    layer_norm1 =
        register_module("layer_norm1", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
    mlp = register_module("mlp", std::make_shared<CLIPMLP>(c));
    layer_norm2 =
        register_module("layer_norm2", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x + self_attn->forward(layer_norm1->forward(x));
    return h + mlp->forward(layer_norm2->forward(h));
  }
  std::shared_ptr<CLIPAttention> self_attn;
  std::shared_ptr<nn::LayerNorm> layer_norm1, layer_norm2;
  std::shared_ptr<CLIPMLP> mlp;
};

class CLIPTextEmbeddings : public nn::Module {
 public:
  explicit CLIPTextEmbeddings(const CLIPTextConfig& c) {
    token_embedding =
        register_module("token_embedding", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size));
    position_embedding = register_module("position_embedding",
                                         std::make_shared<nn::Embedding>(c.max_positions, c.hidden_size));
  }
  // tokens [B, T] -> [B, T, width]: the token's row plus the position's.
  Tensor forward(const Tensor& tokens) override {
    return token_embedding->forward(tokens) + position_embedding->forward(Tensor::arange(tokens.size(1)));
  }
  std::shared_ptr<nn::Embedding> token_embedding, position_embedding;
};

class CLIPEncoder : public nn::Module {
 public:
  explicit CLIPEncoder(const CLIPTextConfig& c) {
    layers = register_module("layers", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < c.num_layers; ++i) {
      blocks.push_back(std::make_shared<CLIPEncoderLayer>(c));
      layers->append(blocks.back());
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (const auto& block : blocks) h = block->forward(h);
    return h;
  }
  std::shared_ptr<nn::ModuleList> layers;
  std::vector<std::shared_ptr<CLIPEncoderLayer>> blocks;
};

// HF's CLIPTextTransformer (registered as "text_model" by CLIPTextModel, below).
class CLIPTextTransformer : public nn::Module {
 public:
  explicit CLIPTextTransformer(const CLIPTextConfig& c) : config(c) {
    embeddings = register_module("embeddings", std::make_shared<CLIPTextEmbeddings>(c));
    encoder = register_module("encoder", std::make_shared<CLIPEncoder>(c));
    final_layer_norm =
        register_module("final_layer_norm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  }
  // tokens [B, T] (T <= max_positions, any integer dtype) -> the last hidden state [B, T, width].
  Tensor forward(const Tensor& tokens) override {
    if (tokens.dim() != 2 || tokens.size(1) > config.max_positions)
      throw Error("CLIPTextModel: tokens must be [B, T] with T <= " + std::to_string(config.max_positions) +
                  ", got " + shape_str(tokens.shape()));
    return final_layer_norm->forward(encoder->forward(embeddings->forward(tokens)));
  }
  CLIPTextConfig config;
  std::shared_ptr<CLIPTextEmbeddings> embeddings;
  std::shared_ptr<CLIPEncoder> encoder;
  std::shared_ptr<nn::LayerNorm> final_layer_norm;
};

// HF's CLIPTextModel: the transformer under "text_model", as the checkpoints name it.
class CLIPTextModel : public nn::Module {
 public:
  explicit CLIPTextModel(const CLIPTextConfig& c) {
    text_model = register_module("text_model", std::make_shared<CLIPTextTransformer>(c));
  }
  Tensor forward(const Tensor& tokens) override { return text_model->forward(tokens); }
  std::shared_ptr<CLIPTextTransformer> text_model;
};

}  // namespace lazygrad::models
