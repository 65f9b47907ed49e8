// The decoder of Stable Diffusion v1.x's autoencoder (the KL-regularized autoencoder of Rombach et
// al., 2022): latents [B, 4, h, w] to images [B, 3, 8h, 8w] in [-1, 1], under the names of the
// original checkpoints below "first_stage_model.":
//
//   post_quant_conv                         conv 1x1, embed_dim -> z_channels
//   decoder.conv_in                          conv 3x3, z_channels -> ch * ch_mult[-1]
//   decoder.mid.block_1, attn_1, block_2     ResnetBlock, single-head self-attention, ResnetBlock
//   decoder.up.{level}.block.{j}             num_res_blocks + 1 ResnetBlocks per level, from the last
//   decoder.up.{level}.upsample.conv         level down to 0; an Upsample (nearest x2, conv 3x3) after
//                                            every level but 0
//   decoder.norm_out, decoder.conv_out       GroupNorm, SiLU, conv 3x3 -> 3 channels
//
// A ResnetBlock: GroupNorm, SiLU, conv 3x3 (norm1, conv1), GroupNorm, SiLU, conv 3x3 (norm2, conv2),
// added to the input (through a 1x1 conv, nin_shortcut, where the channels change). Its GroupNorms
// have eps 1e-6. The encoder is not needed to make images from text, so it is not built (its
// tensors in a checkpoint are ignored).
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

struct VAEDecoderConfig {
  // Stable Diffusion v1.x's (kl-f8: ch 128, ch_mult 1, 2, 4, 4, 2 res blocks, 4 latent channels).
  int64_t ch = 128;
  std::vector<int64_t> ch_mult = {1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  int64_t z_channels = 4;
  int64_t embed_dim = 4;
  int64_t out_ch = 3;
  int64_t norm_groups = 32;
};

class VAEResnetBlock : public nn::Module {
 public:
  VAEResnetBlock(int64_t in, int64_t out, int64_t groups) {
    norm1 = register_module("norm1", std::make_shared<nn::GroupNorm>(groups, in, 1e-6));
    conv1 = register_module("conv1", std::make_shared<nn::Conv2d>(in, out, 3, 1, 1));
    norm2 = register_module("norm2", std::make_shared<nn::GroupNorm>(groups, out, 1e-6));
    conv2 = register_module("conv2", std::make_shared<nn::Conv2d>(out, out, 3, 1, 1));
    if (in != out) nin_shortcut = register_module("nin_shortcut", std::make_shared<nn::Conv2d>(in, out, 1));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = conv1->forward(norm1->forward(x).silu());
    h = conv2->forward(norm2->forward(h).silu());
    return (nin_shortcut ? nin_shortcut->forward(x) : x) + h;
  }
  std::shared_ptr<nn::GroupNorm> norm1, norm2;
  std::shared_ptr<nn::Conv2d> conv1, conv2, nin_shortcut;  // nin_shortcut: null where the channels stay
};

// Self-attention over the h * w positions, one head of all channels; q, k, v and proj_out are 1x1 convs.
class VAEAttnBlock : public nn::Module {
 public:
  VAEAttnBlock(int64_t channels, int64_t groups) {
    norm = register_module("norm", std::make_shared<nn::GroupNorm>(groups, channels, 1e-6));
    q = register_module("q", std::make_shared<nn::Conv2d>(channels, channels, 1));
    k = register_module("k", std::make_shared<nn::Conv2d>(channels, channels, 1));
    v = register_module("v", std::make_shared<nn::Conv2d>(channels, channels, 1));
    proj_out = register_module("proj_out", std::make_shared<nn::Conv2d>(channels, channels, 1));
  }
  Tensor forward(const Tensor& x) override {
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    Tensor h = norm->forward(x);
    auto tokens = [&](const Tensor& t) { return t.reshape({B, C, H * W}).transpose(1, 2); };  // [B, HW, C]
    Tensor out =
        tokens(q->forward(h)).scaled_dot_product_attention(tokens(k->forward(h)), tokens(v->forward(h)));
    return x + proj_out->forward(out.realize().transpose(1, 2).reshape({B, C, H, W}).contiguous());
  }
  std::shared_ptr<nn::GroupNorm> norm;
  std::shared_ptr<nn::Conv2d> q, k, v, proj_out;
};

class VAEUpsample : public nn::Module {
 public:
  explicit VAEUpsample(int64_t channels) {
    conv = register_module("conv", std::make_shared<nn::Conv2d>(channels, channels, 3, 1, 1));
  }
  // Copied out first, as UNetUpsample does (the convolution through the view has no vector lanes).
  Tensor forward(const Tensor& x) override {
    return conv->forward(x.interpolate({}, {2.0, 2.0}, "nearest").contiguous());
  }
  std::shared_ptr<nn::Conv2d> conv;
};

// decoder.up.{level}: its ResnetBlocks ("block") and, but at level 0, its Upsample.
class VAEUpLevel : public nn::Module {
 public:
  std::shared_ptr<nn::ModuleList> block;
  std::vector<std::shared_ptr<VAEResnetBlock>> blocks;
  std::shared_ptr<VAEUpsample> upsample;
};

class VAEMid : public nn::Module {
 public:
  VAEMid(int64_t channels, int64_t groups) {
    block_1 = register_module("block_1", std::make_shared<VAEResnetBlock>(channels, channels, groups));
    attn_1 = register_module("attn_1", std::make_shared<VAEAttnBlock>(channels, groups));
    block_2 = register_module("block_2", std::make_shared<VAEResnetBlock>(channels, channels, groups));
  }
  Tensor forward(const Tensor& x) override { return block_2->forward(attn_1->forward(block_1->forward(x))); }
  std::shared_ptr<VAEResnetBlock> block_1, block_2;
  std::shared_ptr<VAEAttnBlock> attn_1;
};

class VAEDecoder : public nn::Module {
 public:
  explicit VAEDecoder(const VAEDecoderConfig& c) : config(c) {
    if (c.ch_mult.empty()) throw Error("VAEDecoderConfig: ch_mult must not be empty");
    const int64_t g = c.norm_groups;
    int64_t ch = c.ch * c.ch_mult.back();
    conv_in = register_module("conv_in", std::make_shared<nn::Conv2d>(c.z_channels, ch, 3, 1, 1));
    mid = register_module("mid", std::make_shared<VAEMid>(ch, g));
    // Built from the last level down, as the decoder runs, and registered by level ("up.0" is the
    // full-resolution one): the list is filled in level order once every level exists.
    levels.resize(c.ch_mult.size());
    for (size_t level = c.ch_mult.size(); level-- > 0;) {
      auto up_level = std::make_shared<VAEUpLevel>();
      up_level->block = up_level->register_module("block", std::make_shared<nn::ModuleList>());
      const int64_t out = c.ch * c.ch_mult[level];
      for (int64_t j = 0; j <= c.num_res_blocks; ++j) {
        up_level->blocks.push_back(std::make_shared<VAEResnetBlock>(ch, out, g));
        up_level->block->append(up_level->blocks.back());
        ch = out;
      }
      if (level > 0)
        up_level->upsample = up_level->register_module("upsample", std::make_shared<VAEUpsample>(ch));
      levels[level] = up_level;
    }
    up = register_module("up", std::make_shared<nn::ModuleList>());
    for (const auto& level : levels) up->append(level);
    norm_out = register_module("norm_out", std::make_shared<nn::GroupNorm>(g, ch, 1e-6));
    conv_out = register_module("conv_out", std::make_shared<nn::Conv2d>(ch, c.out_ch, 3, 1, 1));
  }
  // z [B, z_channels, h, w] -> [B, out_ch, h * 2^(levels - 1), ...]. With `realize_blocks`, each
  // block's output is computed before the next is built (see UNetModel::forward).
  Tensor forward(const Tensor& z, bool realize_blocks) {
    auto done = [&](Tensor h) { return realize_blocks ? h.realize() : h; };
    Tensor h = done(mid->forward(conv_in->forward(z)));
    for (size_t level = levels.size(); level-- > 0;) {
      for (const auto& block : levels[level]->blocks) h = done(block->forward(h));
      if (levels[level]->upsample) h = done(levels[level]->upsample->forward(h));
    }
    return conv_out->forward(norm_out->forward(h).silu());
  }
  Tensor forward(const Tensor& z) override { return forward(z, false); }

  VAEDecoderConfig config;
  std::shared_ptr<nn::Conv2d> conv_in, conv_out;
  std::shared_ptr<VAEMid> mid;
  std::shared_ptr<nn::ModuleList> up;
  std::vector<std::shared_ptr<VAEUpLevel>> levels;
  std::shared_ptr<nn::GroupNorm> norm_out;
};

// first_stage_model: post_quant_conv and the decoder.
class AutoencoderKLDecoder : public nn::Module {
 public:
  explicit AutoencoderKLDecoder(const VAEDecoderConfig& c) {
    decoder = register_module("decoder", std::make_shared<VAEDecoder>(c));
    post_quant_conv =
        register_module("post_quant_conv", std::make_shared<nn::Conv2d>(c.embed_dim, c.z_channels, 1));
  }
  // Latents as the UNet makes them (already divided by the scale factor) -> images in about [-1, 1].
  Tensor decode(const Tensor& z, bool realize_blocks = false) {
    return decoder->forward(post_quant_conv->forward(z), realize_blocks);
  }
  std::shared_ptr<VAEDecoder> decoder;
  std::shared_ptr<nn::Conv2d> post_quant_conv;
};

}  // namespace lazygrad::models
