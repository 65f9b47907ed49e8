// Stable Diffusion v1.x (Rombach et al., "High-Resolution Image Synthesis with Latent Diffusion
// Models", 2022): text to image in four parts, read from the original single-file checkpoint:
//
//   cond_stage_model.transformer.text_model.*   CLIP ViT-L/14's text encoder (models/clip_text.h):
//                                               77 tokens -> the context [77, 768]
//   model.diffusion_model.*                     the UNet (models/sd_unet.h): the noise in 64x64x4
//                                               latents, given a timestep and the context
//   (the sampler)                               DDIM with classifier-free guidance (models/ddim.h)
//   first_stage_model.{post_quant_conv,decoder}.*  the VAE's decoder (models/sd_vae.h): latents
//                                               / 0.18215 -> a 512x512 RGB image
//
// The architecture's sizes are inferred from the checkpoint's tensor shapes (infer_config), so one
// loader reads the released v1.x files and the tiny test fixture alike; what shapes cannot tell
// (heads, GroupNorm's groups, the latent scale, the noise schedule) comes from a base config,
// v1.x's by default. The released files' other tensors (the EMA copy, the VAE's encoder, the
// schedule's buffers, CLIP's position_ids) are ignored.
//
// Header-only and public API only. docs/stable_diffusion.md has the details.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/nn.h>
#include <lazygrad/state_dict.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "clip_text.h"
#include "ddim.h"
#include "sd_unet.h"
#include "sd_vae.h"

namespace lazygrad::models {

struct StableDiffusionConfig {
  CLIPTextConfig text;
  UNetConfig unet;
  VAEDecoderConfig vae;
  double scale_factor = 0.18215;  // latents are the VAE's latents times this
  NoiseSchedule schedule;

  static StableDiffusionConfig v1() { return {}; }  // v1.1-v1.5's (the defaults of each part)

  // Pixels per latent position: 2^(VAE levels - 1), 8 for v1.x.
  int64_t latent_factor() const { return int64_t{1} << (vae.ch_mult.size() - 1); }
  // An image side must be a multiple of this: the latent halves at every UNet level but the last.
  int64_t size_multiple() const { return latent_factor() << (unet.channel_mult.size() - 1); }
};

// The checkpoint's prefixes of the three parts.
inline constexpr const char* kSDUNetPrefix = "model.diffusion_model.";
inline constexpr const char* kSDVAEPrefix = "first_stage_model.";
inline constexpr const char* kSDTextPrefix = "cond_stage_model.transformer.text_model.";

// The checkpoint with CLIP's tensors under "cond_stage_model.transformer.text_model." also where a
// file names them "cond_stage_model.transformer." (older transformers versions saved them without
// the "text_model." level). The tensors are shared, not copied.
inline StateDict normalize_sd_checkpoint(const StateDict& checkpoint) {
  const std::string old_prefix = "cond_stage_model.transformer.";
  for (const auto& [name, tensor] : checkpoint)
    if (name.rfind(kSDTextPrefix, 0) == 0) return checkpoint;
  StateDict out;
  for (const auto& [name, tensor] : checkpoint) {
    if (name.rfind(old_prefix, 0) == 0)
      out[kSDTextPrefix + name.substr(old_prefix.size())] = tensor;
    else
      out[name] = tensor;
  }
  return out;
}

namespace sd_detail {

// Reads shapes out of a checkpoint for infer_config: a missing tensor, or one of another rank, is an
// Error naming it and what it was read for.
class ShapeReader {
 public:
  ShapeReader(const StateDict& checkpoint, std::string prefix)
      : checkpoint_(checkpoint), prefix_(std::move(prefix)) {}
  bool has(const std::string& name) const { return checkpoint_.count(name) > 0; }
  Shape shape(const std::string& name, size_t rank, const std::string& why) const {
    auto it = checkpoint_.find(name);
    if (it == checkpoint_.end())
      throw Error(prefix_ + "the checkpoint has no tensor \"" + name + "\" (needed for " + why + ")");
    if (it->second.dim() != static_cast<int64_t>(rank))
      throw Error(prefix_ + "tensor \"" + name + "\" has shape " + shape_str(it->second.shape()) +
                  ", expected " + std::to_string(rank) + " dimensions (it gives " + why + ")");
    return it->second.shape();
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error(prefix_ + what); }
  // a / b, which must divide exactly (a channel count as a multiple of the base width).
  int64_t ratio(int64_t a, int64_t b, const std::string& what) const {
    if (b <= 0 || a % b != 0)
      fail(what + ": " + std::to_string(a) + " channels is not a multiple of " + std::to_string(b));
    return a / b;
  }

 private:
  const StateDict& checkpoint_;
  std::string prefix_;
};

inline CLIPTextConfig infer_text(const ShapeReader& r, CLIPTextConfig c) {
  const std::string p = kSDTextPrefix;
  const Shape tok =
      r.shape(p + "embeddings.token_embedding.weight", 2, "the text encoder's vocabulary and width");
  c.vocab_size = tok[0];
  c.hidden_size = tok[1];
  c.max_positions = r.shape(p + "embeddings.position_embedding.weight", 2, "the text encoder's positions")[0];
  c.num_layers = 0;
  while (r.has(p + "encoder.layers." + std::to_string(c.num_layers) + ".layer_norm1.weight")) ++c.num_layers;
  if (c.num_layers == 0) r.fail("the checkpoint has no text encoder layer (\"" + p + "encoder.layers.0.*\")");
  c.intermediate_size = r.shape(p + "encoder.layers.0.mlp.fc1.weight", 2, "the text encoder's MLP width")[0];
  return c;
}

inline UNetConfig infer_unet(const ShapeReader& r, UNetConfig c) {
  const std::string p = kSDUNetPrefix;
  const Shape conv_in =
      r.shape(p + "input_blocks.0.0.weight", 4, "the UNet's model_channels and in_channels");
  c.model_channels = conv_in[0];
  c.in_channels = conv_in[1];
  c.time_embed_dim = r.shape(p + "time_embed.0.weight", 2, "the UNet's time embedding width")[0];
  c.out_channels = r.shape(p + "out.2.weight", 4, "the UNet's out_channels")[0];
  // The input blocks level by level: ResBlocks (each maybe with a SpatialTransformer), then a
  // Downsample, except after the last level.
  c.channel_mult.clear();
  c.attention_levels.clear();
  c.num_res_blocks = -1;
  int64_t k = 1;
  for (;;) {
    int64_t res_blocks = 0;
    while (r.has(p + "input_blocks." + std::to_string(k) + ".0.in_layers.0.weight")) {
      const std::string block = p + "input_blocks." + std::to_string(k);
      const int64_t out = r.shape(block + ".0.out_layers.3.weight", 4, "a ResBlock's channels")[0];
      const bool attention = r.has(block + ".1.proj_in.weight");
      if (res_blocks == 0) {
        c.channel_mult.push_back(r.ratio(out, c.model_channels, "\"" + block + ".0\""));
        c.attention_levels.push_back(attention);
      } else if (out != c.model_channels * c.channel_mult.back() || attention != c.attention_levels.back()) {
        r.fail("\"" + block + "\" differs from the first block of its level (channels or attention)");
      }
      ++res_blocks, ++k;
    }
    if (res_blocks == 0)
      r.fail("the checkpoint has no UNet ResBlock \"" + p + "input_blocks." + std::to_string(k) + ".0.*\"");
    if (c.num_res_blocks >= 0 && res_blocks != c.num_res_blocks)
      r.fail("UNet level " + std::to_string(c.channel_mult.size() - 1) + " has " +
             std::to_string(res_blocks) + " ResBlocks, level 0 has " + std::to_string(c.num_res_blocks));
    c.num_res_blocks = res_blocks;
    if (!r.has(p + "input_blocks." + std::to_string(k) + ".0.op.weight")) break;  // the last level
    ++k;
  }
  const std::string mid = p + "middle_block.1.";
  c.transformer_depth = 0;
  while (r.has(mid + "transformer_blocks." + std::to_string(c.transformer_depth) + ".norm1.weight"))
    ++c.transformer_depth;
  if (c.transformer_depth == 0) r.fail("the checkpoint has no \"" + mid + "transformer_blocks.0.*\"");
  c.context_dim = r.shape(mid + "transformer_blocks.0.attn2.to_k.weight", 2, "the UNet's context_dim")[1];
  return c;
}

inline VAEDecoderConfig infer_vae(const ShapeReader& r, VAEDecoderConfig c) {
  const std::string p = std::string(kSDVAEPrefix) + "decoder.";
  const Shape post = r.shape(std::string(kSDVAEPrefix) + "post_quant_conv.weight", 4, "the VAE's embed_dim");
  c.z_channels = post[0];
  c.embed_dim = post[1];
  const Shape conv_out = r.shape(p + "conv_out.weight", 4, "the VAE decoder's ch and out_ch");
  c.out_ch = conv_out[0];
  c.ch = conv_out[1];
  size_t levels = 0;
  while (r.has(p + "up." + std::to_string(levels) + ".block.0.conv1.weight")) ++levels;
  if (levels == 0) r.fail("the checkpoint has no VAE decoder level \"" + p + "up.0.block.0.*\"");
  c.ch_mult.clear();
  for (size_t level = 0; level < levels; ++level) {
    const std::string name = p + "up." + std::to_string(level) + ".block.0.conv2.weight";
    c.ch_mult.push_back(r.ratio(r.shape(name, 4, "a VAE level's channels")[0], c.ch, "\"" + name + "\""));
  }
  c.num_res_blocks = 0;
  while (r.has(p + "up.0.block." + std::to_string(c.num_res_blocks + 1) + ".conv1.weight"))
    ++c.num_res_blocks;
  return c;
}

}  // namespace sd_detail

// The config of the Stable Diffusion a checkpoint (as normalize_sd_checkpoint gives it) holds: every
// size its tensors' shapes give (the text encoder's vocabulary, width, positions, layers and MLP; the
// UNet's channels, levels, ResBlocks per level, attention levels, transformer depth, context width;
// the VAE decoder's channels, levels and blocks), the rest from `base`. A tensor it reads that is
// missing or of another rank is an Error naming it (and `where`, the file).
inline StableDiffusionConfig infer_config(const StateDict& checkpoint,
                                          StableDiffusionConfig base = StableDiffusionConfig::v1(),
                                          const std::string& where = "") {
  const sd_detail::ShapeReader r(checkpoint, checkpoint_prefix("StableDiffusion", where));
  base.text = sd_detail::infer_text(r, base.text);
  base.unet = sd_detail::infer_unet(r, base.unet);
  base.vae = sd_detail::infer_vae(r, base.vae);
  return base;
}

// The text encoder under the checkpoint's names: cond_stage_model.transformer.text_model.
class FrozenCLIPEmbedder : public nn::Module {
 public:
  explicit FrozenCLIPEmbedder(const CLIPTextConfig& c) {
    transformer = register_module("transformer", std::make_shared<CLIPTextModel>(c));
  }
  Tensor forward(const Tensor& tokens) override { return transformer->forward(tokens); }
  std::shared_ptr<CLIPTextModel> transformer;
};

// model.diffusion_model.
class DiffusionWrapper : public nn::Module {
 public:
  explicit DiffusionWrapper(const UNetConfig& c) {
    diffusion_model = register_module("diffusion_model", std::make_shared<UNetModel>(c));
  }
  std::shared_ptr<UNetModel> diffusion_model;
};

// What text_to_image does.
struct TextToImageOptions {
  int64_t steps = 20;
  double guidance_scale = 7.5;
  uint64_t seed = 0;  // of the initial noise (Tensor::manual_seed, then randn)
  int64_t height = 512, width = 512;
  // Realize each block's output before the next is built, so that activations are freed as the
  // networks go (UNetModel::forward); off, each network is one schedule.
  bool realize_blocks = true;
};

// Where text_to_image's time went, in seconds (each part's kernels compiled on first use included).
struct TextToImageTimes {
  double text_encoder = 0, sampling = 0, decoder = 0;
};

// The whole model, its modules named as the original checkpoint names its tensors.
class StableDiffusion : public nn::Module {
 public:
  explicit StableDiffusion(const StableDiffusionConfig& c) : config(c) {
    model = register_module("model", std::make_shared<DiffusionWrapper>(c.unet));
    first_stage_model = register_module("first_stage_model", std::make_shared<AutoencoderKLDecoder>(c.vae));
    cond_stage_model = register_module("cond_stage_model", std::make_shared<FrozenCLIPEmbedder>(c.text));
    unet = model->diffusion_model;
    text_encoder = cond_stage_model->transformer->text_model;
  }

  // The model a checkpoint holds (the original single-file layout; float32, float16, bfloat16 or
  // float64 tensors, the others converted to float32): its config inferred (infer_config, from
  // `base`), every tensor the model needs checked for presence, dtype and shape before the model is
  // built (an Error naming the first one that is missing or misshapen, and `where`), then the
  // tensors assigned. float32 tensors are used in place (a load_safetensors checkpoint's are pages of
  // the mapped file: nothing is copied).
  static std::shared_ptr<StableDiffusion> from_checkpoint(
      const StateDict& file, const std::string& where = "",
      const StableDiffusionConfig& base = StableDiffusionConfig::v1()) {
    const StateDict checkpoint = normalize_sd_checkpoint(file);
    const StableDiffusionConfig config = infer_config(checkpoint, base, where);
    std::shared_ptr<StableDiffusion> sd;
    {
      nn::init::SkipInit skip_init;  // every parameter is the checkpoint's next; empty ones cost no pages
      sd = std::make_shared<StableDiffusion>(config);
    }
    check_checkpoint(*sd, checkpoint, where);
    load_hf_checkpoint(*sd, checkpoint, "StableDiffusion");
    sd->eval();
    return sd;
  }

  // The tensors of `model` in the checkpoint: each must be there, of a floating-point dtype and the
  // shape the inferred config gives; the first that is not is an Error naming it.
  static void check_checkpoint(const StableDiffusion& model, const StateDict& checkpoint,
                               const std::string& where) {
    const std::string prefix = checkpoint_prefix("StableDiffusion", where);
    for (const auto& [name, tensor] : model.ordered_state_dict()) {
      auto it = checkpoint.find(name);
      if (it == checkpoint.end()) throw Error(prefix + "the checkpoint has no tensor \"" + name + "\"");
      ConfigShape expected;
      for (int64_t d : tensor.shape()) expected.push_back({d, "as the checkpoint's other tensors imply"});
      check_checkpoint_tensor(prefix, {"\"" + name + "\"", it->second.dtype(), it->second.shape()}, expected);
    }
  }

  // Token ids [B, max_positions] (models::CLIPTokenizer's) -> the context [B, max_positions, width].
  Tensor encode_text(const Tensor& tokens) { return text_encoder->forward(tokens); }

  // The noise the UNet predicts in latents x at timestep(s) t, given the context.
  Tensor predict_noise(const Tensor& x, const Tensor& t, const Tensor& context, bool realize_blocks = false) {
    return unet->forward(x, t, context, realize_blocks);
  }

  // Latents (as the sampler ends with) -> images [B, 3, H, W] in about [-1, 1].
  Tensor decode_latents(const Tensor& latents, bool realize_blocks = false) {
    return first_stage_model->decode(latents * (1.0 / config.scale_factor), realize_blocks);
  }

  // The image of the prompt whose tokens are `tokens` ([1, max_positions]; `empty_tokens` the empty
  // prompt's, for guidance): DDIM from seeded noise, then the decoder. Returns uint8 [H, W, 3].
  // on_step(i) after each of the steps; `times`, when given, gets each part's time.
  Tensor text_to_image(const Tensor& tokens, const Tensor& empty_tokens, const TextToImageOptions& o,
                       const std::function<void(int64_t)>& on_step = {}, TextToImageTimes* times = nullptr) {
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    TextToImageTimes spent;
    auto start = Clock::now();
    const int64_t multiple = config.size_multiple();
    if (o.height <= 0 || o.width <= 0 || o.height % multiple || o.width % multiple)
      throw Error("StableDiffusion: the image's height and width must be positive multiples of " +
                  std::to_string(multiple) + ", got " + std::to_string(o.height) + "x" +
                  std::to_string(o.width));
    Tensor cond = encode_text(tokens).realize();
    Tensor uncond = o.guidance_scale == 1.0 ? cond : encode_text(empty_tokens).realize();
    spent.text_encoder = since(start);
    start = Clock::now();
    Tensor::manual_seed(o.seed);
    const int64_t f = config.latent_factor();
    Tensor noise = Tensor::randn({1, config.unet.in_channels, o.height / f, o.width / f}).realize();
    NoisePredictor unet_fn = [&](const Tensor& x, const Tensor& t, const Tensor& context) {
      return predict_noise(x, t, context, o.realize_blocks);
    };
    Tensor latents = ddim_sample(unet_fn, noise, uncond, cond, o.steps, o.guidance_scale, config.schedule,
                                 [&](int64_t i, const Tensor&) {
                                   if (on_step) on_step(i);
                                 });
    spent.sampling = since(start);
    start = Clock::now();
    Tensor image = image_to_uint8(decode_latents(latents, o.realize_blocks));
    spent.decoder = since(start);
    if (times) *times = spent;
    return image;
  }

  // [1, 3, H, W] in [-1, 1] -> uint8 [H, W, 3]: (x + 1) / 2 clamped to [0, 1], times 255, rounded.
  static Tensor image_to_uint8(const Tensor& image) {
    return (((image.select(0, 0) + 1.0) * 0.5).clamp(0.0, 1.0) * 255.0)
        .round()
        .permute({1, 2, 0})
        .to(kUInt8)
        .contiguous()
        .realize();
  }

  StableDiffusionConfig config;
  std::shared_ptr<DiffusionWrapper> model;
  std::shared_ptr<AutoencoderKLDecoder> first_stage_model;
  std::shared_ptr<FrozenCLIPEmbedder> cond_stage_model;
  std::shared_ptr<UNetModel> unet;                    // model.diffusion_model
  std::shared_ptr<CLIPTextTransformer> text_encoder;  // cond_stage_model.transformer.text_model
};

}  // namespace lazygrad::models
