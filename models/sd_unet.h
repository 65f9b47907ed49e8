// The denoising UNet of Stable Diffusion v1.x (Rombach et al., "High-Resolution Image Synthesis with
// Latent Diffusion Models", 2022; the UNet of Ho et al. and Dhariwal & Nichol, with the text fed in by
// cross-attention), under the names of the original checkpoints below "model.diffusion_model.":
//
//   time_embed.{0,2}                       the timestep's sinusoidal embedding -> Linear, SiLU, Linear
//   input_blocks.0.0                       conv 3x3, latent channels -> model_channels
//   input_blocks.{k}.0 [.1]                a ResBlock, with a SpatialTransformer at attention levels
//   input_blocks.{k}.0.op                  a Downsample (conv 3x3, stride 2) between levels
//   middle_block.{0,1,2}                   ResBlock, SpatialTransformer, ResBlock
//   output_blocks.{k}.0 [.1] [.1|.2].conv  a ResBlock on [x, skip], a SpatialTransformer, an Upsample
//   out.{0,2}                              GroupNorm, SiLU, conv 3x3 -> latent channels
//
// A ResBlock: GroupNorm, SiLU, conv 3x3 (in_layers), plus the timestep's embedding through SiLU and a
// Linear (emb_layers), then GroupNorm, SiLU, conv 3x3 (out_layers), added to the input (through a 1x1
// conv, skip_connection, where the channel count changes). A SpatialTransformer: GroupNorm, a 1x1
// conv in, for each of `transformer_depth` blocks self-attention, cross-attention to the text
// (context [B, 77, context_dim]) and a GEGLU feed-forward, each after a LayerNorm and added back,
// then a 1x1 conv out, added to its input. Every output block's ResBlock reads the output of the
// matching input block concatenated on the channels (the skip connections).
//
// Header-only and public API only. docs/stable_diffusion.md has the details.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/nn.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lazygrad::models {

struct UNetConfig {
  // Stable Diffusion v1.x's (the original repository's v1-inference.yaml).
  int64_t in_channels = 4;
  int64_t out_channels = 4;
  int64_t model_channels = 320;
  int64_t time_embed_dim = 1280;  // 4 * model_channels
  std::vector<int64_t> channel_mult = {1, 2, 4, 4};
  std::vector<bool> attention_levels = {true, true, true, false};  // attention_resolutions 4, 2, 1
  int64_t num_res_blocks = 2;
  int64_t num_heads = 8;
  int64_t transformer_depth = 1;
  int64_t context_dim = 768;
  int64_t norm_groups = 32;  // GroupNorm32
};

// The sinusoidal embedding of timesteps t [B] (float32): [B, dim], cos then sin of t * 10000^(-i / half),
// i < half (the LDM repository's timestep_embedding, which puts cos first).
inline Tensor timestep_embedding(const Tensor& t, int64_t dim) {
  const int64_t half = dim / 2;
  Tensor freqs = (Tensor::arange(half).to(kFloat32) * (-std::log(10000.0) / static_cast<double>(half))).exp();
  Tensor args = t.to(kFloat32).reshape({-1, 1}) * freqs.reshape({1, half});
  return Tensor::cat({args.cos(), args.sin()}, 1);
}

// ResBlock: the timestep's embedding is added between the two convolutions.
class UNetResBlock : public nn::Module {
 public:
  UNetResBlock(int64_t channels, int64_t out_channels, int64_t emb_dim, int64_t groups) {
    in_layers = register_module(
        "in_layers", std::make_shared<nn::Sequential>(
                         std::make_shared<nn::GroupNorm>(groups, channels), std::make_shared<nn::SiLU>(),
                         std::make_shared<nn::Conv2d>(channels, out_channels, 3, 1, 1)));
    emb_layers = register_module(
        "emb_layers", std::make_shared<nn::Sequential>(std::make_shared<nn::SiLU>(),
                                                       std::make_shared<nn::Linear>(emb_dim, out_channels)));
    out_layers = register_module(
        "out_layers",
        std::make_shared<nn::Sequential>(std::make_shared<nn::GroupNorm>(groups, out_channels),
                                         std::make_shared<nn::SiLU>(), std::make_shared<nn::Dropout>(0.0),
                                         std::make_shared<nn::Conv2d>(out_channels, out_channels, 3, 1, 1)));
    if (out_channels != channels)
      skip_connection =
          register_module("skip_connection", std::make_shared<nn::Conv2d>(channels, out_channels, 1));
  }
  // x [B, C, H, W], emb [B, time_embed_dim].
  Tensor forward(const Tensor& x, const Tensor& emb) {
    Tensor h = in_layers->forward(x);
    h = h + emb_layers->forward(emb).unsqueeze(-1).unsqueeze(-1);
    h = out_layers->forward(h);
    return (skip_connection ? skip_connection->forward(x) : x) + h;
  }
  std::shared_ptr<nn::Sequential> in_layers, emb_layers, out_layers;
  std::shared_ptr<nn::Conv2d> skip_connection;  // null where the channels stay
};

// Multi-head attention of x [B, N, dim] to context [B, M, context_dim] (itself when absent): to_q,
// to_k, to_v without bias, heads of dim / heads, softmax(q k^T / sqrt(head_dim)) v, to_out.0.
class UNetCrossAttention : public nn::Module {
 public:
  UNetCrossAttention(int64_t dim, int64_t context_dim, int64_t heads) : heads_(heads) {
    if (heads <= 0 || dim % heads != 0)
      throw Error("UNetConfig: " + std::to_string(dim) + " channels cannot be split into num_heads " +
                  std::to_string(heads));
    to_q = register_module("to_q", std::make_shared<nn::Linear>(dim, dim, false));
    to_k = register_module("to_k", std::make_shared<nn::Linear>(context_dim, dim, false));
    to_v = register_module("to_v", std::make_shared<nn::Linear>(context_dim, dim, false));
    to_out =
        register_module("to_out", std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(dim, dim),
                                                                   std::make_shared<nn::Dropout>(0.0)));
  }
  Tensor forward(const Tensor& x, const Tensor& context) {
    const int64_t B = x.size(0), N = x.size(1), C = x.size(2), D = C / heads_;
    auto heads = [&](const Tensor& t) { return t.reshape({B, t.size(1), heads_, D}).transpose(1, 2); };
    Tensor out =
        heads(to_q->forward(x))
            .scaled_dot_product_attention(heads(to_k->forward(context)), heads(to_v->forward(context)));
    // The heads side by side again, [B, N, C]. to_out reading them through the permute runs without
    // vector lanes (lazygrad's optimizer: 4 GFLOP/s against 110), and so does attention's last
    // product when the copy is fused into it: the product is computed on its own, then copied.
    return to_out->forward(out.realize().transpose(1, 2).reshape({B, N, C}).contiguous());
  }
  std::shared_ptr<nn::Linear> to_q, to_k, to_v;
  std::shared_ptr<nn::Sequential> to_out;

 private:
  int64_t heads_;
};

// The feed-forward: GEGLU (a Linear to twice the inner width, one half times the erf GELU of the
// other) to 4 * dim, then a Linear back (net.0.proj, net.2).
class UNetGEGLU : public nn::Module {
 public:
  UNetGEGLU(int64_t dim, int64_t inner) {
    proj = register_module("proj", std::make_shared<nn::Linear>(dim, 2 * inner));
  }
  Tensor forward(const Tensor& x) override {
    std::vector<Tensor> halves = proj->forward(x).chunk(2, -1);
    return halves[0] * halves[1].gelu();
  }
  std::shared_ptr<nn::Linear> proj;
};

class UNetFeedForward : public nn::Module {
 public:
  explicit UNetFeedForward(int64_t dim) {
    net =
        register_module("net", std::make_shared<nn::Sequential>(std::make_shared<UNetGEGLU>(dim, 4 * dim),
                                                                std::make_shared<nn::Dropout>(0.0),
                                                                std::make_shared<nn::Linear>(4 * dim, dim)));
  }
  Tensor forward(const Tensor& x) override { return net->forward(x); }
  std::shared_ptr<nn::Sequential> net;
};

// x + attn1(norm1(x)), x + attn2(norm2(x), context), x + ff(norm3(x)).
class UNetTransformerBlock : public nn::Module {
 public:
  UNetTransformerBlock(int64_t dim, int64_t context_dim, int64_t heads) {
    attn1 = register_module("attn1", std::make_shared<UNetCrossAttention>(dim, dim, heads));
    ff = register_module("ff", std::make_shared<UNetFeedForward>(dim));
    attn2 = register_module("attn2", std::make_shared<UNetCrossAttention>(dim, context_dim, heads));
    norm1 = register_module("norm1", std::make_shared<nn::LayerNorm>(dim));
    norm2 = register_module("norm2", std::make_shared<nn::LayerNorm>(dim));
    norm3 = register_module("norm3", std::make_shared<nn::LayerNorm>(dim));
  }
  Tensor forward(const Tensor& x, const Tensor& context) {
    Tensor h = norm1->forward(x);
    h = x + attn1->forward(h, h);
    h = h + attn2->forward(norm2->forward(h), context);
    return h + ff->forward(norm3->forward(h));
  }
  std::shared_ptr<UNetCrossAttention> attn1, attn2;
  std::shared_ptr<UNetFeedForward> ff;
  std::shared_ptr<nn::LayerNorm> norm1, norm2, norm3;
};

// The image as a sequence of H * W tokens of `channels` features, through transformer blocks.
class UNetSpatialTransformer : public nn::Module {
 public:
  UNetSpatialTransformer(int64_t channels, const UNetConfig& c) {
    // The repository's Normalize(): GroupNorm with eps 1e-6 (the ResBlocks' keep PyTorch's 1e-5).
    norm = register_module("norm", std::make_shared<nn::GroupNorm>(c.norm_groups, channels, 1e-6));
    proj_in = register_module("proj_in", std::make_shared<nn::Conv2d>(channels, channels, 1));
    transformer_blocks = register_module("transformer_blocks", std::make_shared<nn::ModuleList>());
    for (int64_t d = 0; d < c.transformer_depth; ++d) {
      blocks.push_back(std::make_shared<UNetTransformerBlock>(channels, c.context_dim, c.num_heads));
      transformer_blocks->append(blocks.back());
    }
    proj_out = register_module("proj_out", std::make_shared<nn::Conv2d>(channels, channels, 1));
  }
  Tensor forward(const Tensor& x, const Tensor& context) {
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    Tensor h = proj_in->forward(norm->forward(x)).reshape({B, C, H * W}).transpose(1, 2);  // [B, HW, C]
    for (const auto& block : blocks) h = block->forward(h, context);
    return x + proj_out->forward(h.transpose(1, 2).reshape({B, C, H, W}));
  }
  std::shared_ptr<nn::GroupNorm> norm;
  std::shared_ptr<nn::Conv2d> proj_in, proj_out;
  std::shared_ptr<nn::ModuleList> transformer_blocks;
  std::vector<std::shared_ptr<UNetTransformerBlock>> blocks;
};

// Halves the height and width: conv 3x3, stride 2, padding 1 ("op").
class UNetDownsample : public nn::Module {
 public:
  explicit UNetDownsample(int64_t channels) {
    op = register_module("op", std::make_shared<nn::Conv2d>(channels, channels, 3, 2, 1));
  }
  // Computed as the stride-1 convolution's even rows and columns (the same windows): lazygrad's
  // optimizer gives the stride-2 kernel no vector lanes (5.7 GFLOP/s), and four times the work at
  // the stride-1 kernel's 90-100 GFLOP/s still takes a quarter of the time.
  Tensor forward(const Tensor& x) override {
    Tensor full = x.conv2d(op->weight, op->bias, 1, 1).contiguous();
    return full.slice(2, 0, full.size(2), 2).slice(3, 0, full.size(3), 2);
  }
  std::shared_ptr<nn::Conv2d> op;
};

// Doubles the height and width: nearest-neighbour, then conv 3x3 ("conv").
class UNetUpsample : public nn::Module {
 public:
  explicit UNetUpsample(int64_t channels) {
    conv = register_module("conv", std::make_shared<nn::Conv2d>(channels, channels, 3, 1, 1));
  }
  // The upsampled image is copied out first: the convolution reading it through the
  // nearest-neighbour view runs without vector lanes (lazygrad's optimizer: 3.8 GFLOP/s against 30).
  Tensor forward(const Tensor& x) override {
    return conv->forward(x.interpolate({}, {2.0, 2.0}, "nearest").contiguous());
  }
  std::shared_ptr<nn::Conv2d> conv;
};

// One entry of input_blocks or output_blocks (the repository's TimestepEmbedSequential): its layers,
// registered "0", "1", "2" in the order they run: the first convolution (input_blocks.0 only), or a
// ResBlock and at attention levels a SpatialTransformer; or a Downsample alone; and in the output
// blocks that end a level, an Upsample.
class UNetBlock : public nn::Module {
 public:
  std::shared_ptr<nn::Conv2d> conv_in;
  std::shared_ptr<UNetResBlock> res;
  std::shared_ptr<UNetSpatialTransformer> attn;
  std::shared_ptr<UNetDownsample> down;
  std::shared_ptr<UNetUpsample> up;

  template <class M>
  std::shared_ptr<M> add(std::shared_ptr<M> layer) {
    return register_module(std::to_string(count_++), std::move(layer));
  }
  Tensor forward(const Tensor& x, const Tensor& emb, const Tensor& context) {
    Tensor h = x;
    if (conv_in) h = conv_in->forward(h);
    if (res) h = res->forward(h, emb);
    if (attn) h = attn->forward(h, context);
    if (down) h = down->forward(h);
    if (up) h = up->forward(h);
    return h;
  }

 private:
  int count_ = 0;
};

class UNetModel : public nn::Module {
 public:
  explicit UNetModel(const UNetConfig& c) : config(c) {
    if (c.channel_mult.empty() || c.attention_levels.size() != c.channel_mult.size())
      throw Error("UNetConfig: channel_mult and attention_levels must be as long, and not empty");
    const int64_t emb = c.time_embed_dim, g = c.norm_groups;
    time_embed = register_module(
        "time_embed", std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(c.model_channels, emb),
                                                       std::make_shared<nn::SiLU>(),
                                                       std::make_shared<nn::Linear>(emb, emb)));
    input_blocks = register_module("input_blocks", std::make_shared<nn::ModuleList>());
    auto input = std::make_shared<UNetBlock>();
    input->conv_in = input->add(std::make_shared<nn::Conv2d>(c.in_channels, c.model_channels, 3, 1, 1));
    append_input(input);

    // The input blocks: num_res_blocks ResBlocks per level, a Downsample between levels. Each
    // block's output channels are kept for the output block that reads it as its skip.
    std::vector<int64_t> skip_channels{c.model_channels};
    int64_t ch = c.model_channels;
    const size_t levels = c.channel_mult.size();
    for (size_t level = 0; level < levels; ++level) {
      for (int64_t r = 0; r < c.num_res_blocks; ++r) {
        auto block = std::make_shared<UNetBlock>();
        const int64_t out = c.model_channels * c.channel_mult[level];
        block->res = block->add(std::make_shared<UNetResBlock>(ch, out, emb, g));
        ch = out;
        if (c.attention_levels[level])
          block->attn = block->add(std::make_shared<UNetSpatialTransformer>(ch, c));
        append_input(block);
        skip_channels.push_back(ch);
      }
      if (level + 1 < levels) {
        auto block = std::make_shared<UNetBlock>();
        block->down = block->add(std::make_shared<UNetDownsample>(ch));
        append_input(block);
        skip_channels.push_back(ch);
      }
    }

    middle_block = register_module("middle_block", std::make_shared<UNetBlock>());
    middle_block->res = middle_block->add(std::make_shared<UNetResBlock>(ch, ch, emb, g));
    middle_block->attn = middle_block->add(std::make_shared<UNetSpatialTransformer>(ch, c));
    middle_res2 = middle_block->add(std::make_shared<UNetResBlock>(ch, ch, emb, g));

    // The output blocks, levels in reverse: num_res_blocks + 1 ResBlocks each, the last of a level
    // (but the top one) followed by an Upsample.
    output_blocks = register_module("output_blocks", std::make_shared<nn::ModuleList>());
    for (size_t level = levels; level-- > 0;) {
      for (int64_t r = 0; r <= c.num_res_blocks; ++r) {
        auto block = std::make_shared<UNetBlock>();
        const int64_t out = c.model_channels * c.channel_mult[level];
        block->res = block->add(std::make_shared<UNetResBlock>(ch + skip_channels.back(), out, emb, g));
        skip_channels.pop_back();
        ch = out;
        if (c.attention_levels[level])
          block->attn = block->add(std::make_shared<UNetSpatialTransformer>(ch, c));
        if (level > 0 && r == c.num_res_blocks) block->up = block->add(std::make_shared<UNetUpsample>(ch));
        output.push_back(block);
        output_blocks->append(block);
      }
    }
    out = register_module("out", std::make_shared<nn::Sequential>(
                                     std::make_shared<nn::GroupNorm>(g, ch), std::make_shared<nn::SiLU>(),
                                     std::make_shared<nn::Conv2d>(ch, c.out_channels, 3, 1, 1)));
  }

  // The predicted noise of latents x [B, in_channels, H, W] (H and W multiples of 2^(levels - 1)) at
  // timesteps t [B] (or one for all), given the text's context [B, T, context_dim]. With
  // `realize_blocks`, each block's output is computed before the next block is built: a schedule
  // per block instead of one for the whole network, so what a block reads is freed as soon as the
  // block is done (only the skips wait for their output block).
  Tensor forward(const Tensor& x, const Tensor& t, const Tensor& context, bool realize_blocks = false) {
    const int64_t B = x.size(0);
    const int64_t factor = int64_t{1} << (config.channel_mult.size() - 1);
    if (x.dim() != 4 || x.size(1) != config.in_channels || x.size(2) % factor || x.size(3) % factor)
      throw Error("UNetModel: x must be [B, " + std::to_string(config.in_channels) +
                  ", H, W] with H and W multiples of " + std::to_string(factor) + ", got " +
                  shape_str(x.shape()));
    Tensor steps = t.numel() == 1 ? t.reshape({1}).expand({B}) : t;
    Tensor emb = time_embed->forward(timestep_embedding(steps, config.model_channels));
    if (realize_blocks) realize({emb, context});
    auto done = [&](Tensor& h) {
      if (realize_blocks) h.realize();
    };

    std::vector<Tensor> skips;  // every input block's output, read again by an output block
    Tensor h = x;
    for (const auto& block : input) {
      h = block->forward(h, emb, context);
      done(h);
      skips.push_back(h);
    }
    h = middle_res2->forward(middle_block->forward(h, emb, context), emb);
    done(h);
    for (const auto& block : output) {
      h = block->forward(Tensor::cat({h, skips.back()}, 1), emb, context);
      skips.pop_back();  // read by this block only: freed once h is computed
      done(h);
    }
    return out->forward(h);
  }

  UNetConfig config;
  std::shared_ptr<nn::Sequential> time_embed, out;
  std::shared_ptr<nn::ModuleList> input_blocks, output_blocks;
  std::shared_ptr<UNetBlock> middle_block;
  std::shared_ptr<UNetResBlock> middle_res2;  // middle_block.2
  std::vector<std::shared_ptr<UNetBlock>> input, output;

 private:
  void append_input(const std::shared_ptr<UNetBlock>& block) {
    input.push_back(block);
    input_blocks->append(block);
  }
};

}  // namespace lazygrad::models
