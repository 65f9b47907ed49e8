// `lazygrad generate-image --model sd.safetensors --tokenizer DIR --prompt TEXT --out image.png`:
// Stable Diffusion v1.x (models/stable_diffusion.h) from the original single-file checkpoint, or
// with --fakeweights the same network with random weights. A progress line per DDIM step on
// stderr, then the times of each part and the peak resident memory; the image as a PNG
// (apps/png_writer.h). docs/stable_diffusion.md describes the options and what is measured.
#include <lazygrad/clip_tokenizer.h>
#include <lazygrad/lazygrad.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "../models/stable_diffusion.h"
#include "command.h"
#include "option_values.h"
#include "png_writer.h"
#include "progress_bar.h"

namespace lazygrad::cli {

namespace {

struct GenerateImageConfig {
  std::string model, tokenizer, prompt, out = "image.png", device;
  bool fakeweights = false;
  int64_t steps = 20, size = 512;
  double guidance = 7.5;
  uint64_t seed = 0;
  // What a checkpoint's shapes do not tell (0: v1.x's).
  int64_t text_heads = 0, unet_heads = 0, groups = 0;
};

GenerateImageConfig parse_config(const Args& args) {
  Options opts = parse_options(args,
                               {"--model", "--tokenizer", "--prompt", "--steps", "--size", "--guidance",
                                "--seed", "--out", "--device", "--text-heads", "--unet-heads", "--groups"},
                               {"--fakeweights"});
  no_positionals(opts);
  GenerateImageConfig c;
  c.fakeweights = opts.has("--fakeweights");
  if (auto v = opts.get("--model")) c.model = *v;
  if (c.model.empty() == !c.fakeweights)
    throw UsageError{"give --model FILE or --fakeweights (random weights of v1.x's shapes), one of them"};
  if (auto v = opts.get("--tokenizer")) c.tokenizer = *v;
  if (auto v = opts.get("--prompt")) c.prompt = *v;
  if (auto v = opts.get("--steps")) c.steps = parse_int("--steps", *v, 1);
  if (auto v = opts.get("--size")) c.size = parse_int("--size", *v, 1);
  if (auto v = opts.get("--guidance")) c.guidance = parse_non_negative("--guidance", *v);
  if (auto v = opts.get("--seed")) c.seed = parse_seed(*v);
  if (auto v = opts.get("--out")) c.out = *v;
  if (auto v = opts.get("--device")) c.device = *v;
  if (auto v = opts.get("--text-heads")) c.text_heads = parse_int("--text-heads", *v, 1);
  if (auto v = opts.get("--unet-heads")) c.unet_heads = parse_int("--unet-heads", *v, 1);
  if (auto v = opts.get("--groups")) c.groups = parse_int("--groups", *v, 1);
  if (c.steps > 1000) throw UsageError{"--steps must be at most 1000 (the noise schedule's timesteps)"};
  if (c.fakeweights && c.size % 64 != 0)
    throw UsageError{
        "--size must be a positive multiple of 64 (v1.x's latent is 1/8 of the image and halves 3 times)"};
  if (c.tokenizer.empty())
    throw UsageError{
        "--tokenizer PATH is needed: CLIP's vocab.json and merges.txt folder, or its "
        "bpe_simple_vocab_16e6.txt.gz"};
  return c;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The most resident memory this process has had, in bytes (getrusage's ru_maxrss, in KiB on Linux).
double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// One line per DDIM step: redrawn in place on a terminal, else printed (steps are seconds apart).
class StepProgress {
 public:
  StepProgress(int64_t steps, bool redraw)
      : steps_(steps), redraw_(redraw), start_(std::chrono::steady_clock::now()) {}
  void update(int64_t done) {
    constexpr int64_t kWidth = 20;
    const int64_t filled = done * kWidth / steps_;
    const double elapsed = seconds_since(start_), per_step = elapsed / static_cast<double>(done);
    char line[160];
    std::snprintf(line, sizeof line, "step %lld/%lld [%s%s] %.2f s/step  ETA %s",
                  static_cast<long long>(done), static_cast<long long>(steps_),
                  std::string(static_cast<size_t>(filled), '#').c_str(),
                  std::string(static_cast<size_t>(kWidth - filled), '.').c_str(), per_step,
                  format_duration(per_step * static_cast<double>(steps_ - done)).c_str());
    std::cerr << (redraw_ ? "\r" : "") << line << (redraw_ && done < steps_ ? "" : "\n") << std::flush;
  }

 private:
  int64_t steps_;
  bool redraw_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int cmd_generate_image(const Args& args) {
  const GenerateImageConfig cfg = parse_config(args);
  if (!cfg.device.empty()) set_default_device(cfg.device);
  NoGrad no_grad;
  char line[256];

  const CLIPTokenizer tokenizer = CLIPTokenizer::from_path(cfg.tokenizer);
  auto start = std::chrono::steady_clock::now();
  models::StableDiffusionConfig base = models::StableDiffusionConfig::v1();
  if (cfg.text_heads) base.text.num_heads = cfg.text_heads;
  if (cfg.unet_heads) base.unet.num_heads = cfg.unet_heads;
  if (cfg.groups) base.unet.norm_groups = base.vae.norm_groups = cfg.groups;
  std::shared_ptr<models::StableDiffusion> sd;
  if (cfg.fakeweights) {
    // The layers' own initialization (PyTorch's: uniform in +-1/sqrt(fan_in), norms at 1 and 0),
    // every weight made now, on this device.
    Tensor::manual_seed(cfg.seed);
    sd = std::make_shared<models::StableDiffusion>(base);
    sd->eval();
  } else {
    if (!std::filesystem::is_regular_file(cfg.model))
      throw Error(cfg.model + ": no such file (give the Stable Diffusion v1.x checkpoint, .safetensors)");
    sd = models::StableDiffusion::from_checkpoint(load_safetensors(cfg.model), cfg.model, base);
  }
  int64_t parameters = 0;
  for (const Tensor& p : sd->parameters()) parameters += p.numel();
  std::snprintf(line, sizeof line, "parameters: %s (%s), loaded in %.2f s\n", with_commas(parameters).c_str(),
                cfg.fakeweights ? "random, --fakeweights" : cfg.model.c_str(), seconds_since(start));
  std::cerr << line;

  const int64_t multiple = sd->config.size_multiple();
  if (cfg.size % multiple != 0)
    throw Error("--size " + std::to_string(cfg.size) + " is not a multiple of " + std::to_string(multiple) +
                " (this model's latent halves at every UNet level)");
  const int64_t positions = sd->config.text.max_positions;
  auto tokens_of = [&](const std::string& text) {
    std::vector<int32_t> ids = tokenizer.encode_padded(text, static_cast<size_t>(positions));
    for (int32_t id : ids)
      if (id >= sd->config.text.vocab_size)
        throw Error("the tokenizer gives id " + std::to_string(id) + " (" + tokenizer.id_to_token(id) +
                    "), outside the text encoder's vocabulary of " +
                    std::to_string(sd->config.text.vocab_size));
    return Tensor::from_vector(ids, {1, positions});
  };
  const Tensor tokens = tokens_of(cfg.prompt), empty = tokens_of("");

  models::TextToImageOptions options;
  options.steps = cfg.steps;
  options.guidance_scale = cfg.guidance;
  options.seed = cfg.seed;
  options.height = options.width = cfg.size;
  StepProgress progress(cfg.steps, ProgressBar::stderr_is_terminal());
  models::TextToImageTimes times;
  Tensor image = sd->text_to_image(
      tokens, empty, options, [&](int64_t i) { progress.update(i); }, &times);
  const std::vector<uint8_t> pixels = image.to_vector<uint8_t>();
  write_png(cfg.out, pixels, static_cast<uint32_t>(cfg.size), static_cast<uint32_t>(cfg.size));

  std::snprintf(line, sizeof line, "text encoder: %.2f s (the prompt%s)\n", times.text_encoder,
                cfg.guidance == 1.0 ? "" : " and the empty prompt");
  std::cerr << line;
  std::snprintf(line, sizeof line, "sampling: %lld DDIM steps (guidance %g) in %.2f s, %.2f s/step\n",
                static_cast<long long>(cfg.steps), cfg.guidance, times.sampling,
                times.sampling / static_cast<double>(cfg.steps));
  std::cerr << line;
  std::snprintf(line, sizeof line, "decoder: %.2f s\n", times.decoder);
  std::cerr << line;
  std::snprintf(line, sizeof line, "peak memory: %.2f GB (resident)\n", peak_rss_bytes() / 1e9);
  std::cerr << line;
  std::cerr << "wrote " << cfg.out << " (" << cfg.size << "x" << cfg.size << ")\n";
  return 0;
}

}  // namespace lazygrad::cli
