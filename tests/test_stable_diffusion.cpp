// Stable Diffusion (models/stable_diffusion.h), CLIP's tokenizer (lazygrad/clip_tokenizer.h) and
// `lazygrad generate-image` (apps/generate_image.cpp).
//
// The parity fixture (tests/fixtures/sd_tiny/, scripts/make_sd_fixture.py) is a tiny Stable Diffusion
// in the original checkpoint's layout, float32 and float16, with a plain-PyTorch reference's outputs:
// the text encoder's, one UNet noise prediction, the VAE decoder's image and a 3-step DDIM sample,
// each required within 1e-4 of max |reference|; and a small CLIP vocabulary with the reference
// tokenizer's encodings of a list of prompts.
#include <gtest/gtest.h>
#include <lazygrad/clip_tokenizer.h>
#include <lazygrad/json.h>
#include <lazygrad/lazygrad.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../models/stable_diffusion.h"
#include "expect_error.h"
#include "relative_error.h"
#include "test_files.h"

using namespace lazygrad;
using models::StableDiffusion;
using models::StableDiffusionConfig;

namespace {

namespace fs = std::filesystem;

fs::path sd_dir() { return test::fixture_dir() / "sd_tiny"; }

// One line of expected.txt: <name> <f32|i64> <ndim> <dims...> <values...>.
struct Expected {
  std::string dtype;
  Shape shape;
  std::vector<double> values;

  Tensor tensor() const {
    if (dtype == "i64") return Tensor::from_vector(std::vector<int64_t>(values.begin(), values.end()), shape);
    return Tensor::from_vector(std::vector<float>(values.begin(), values.end()), shape);
  }
  std::vector<float> floats() const { return std::vector<float>(values.begin(), values.end()); }
};

const std::map<std::string, Expected>& expected() {
  static const std::map<std::string, Expected> table = [] {
    std::map<std::string, Expected> out;
    std::istringstream lines(test::read_file(sd_dir() / "expected.txt"));
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream in(line);
      std::string name;
      Expected e;
      size_t ndim = 0;
      in >> name >> e.dtype >> ndim;
      int64_t numel = 1;
      for (size_t d = 0; d < ndim; ++d) {
        int64_t n = 0;
        in >> n;
        e.shape.push_back(n);
        numel *= n;
      }
      e.values.resize(static_cast<size_t>(numel));
      for (double& v : e.values) in >> v;
      out[name] = e;
    }
    return out;
  }();
  return table;
}
const Expected& want(const std::string& name) {
  auto it = expected().find(name);
  if (it == expected().end()) throw Error("expected.txt has no " + name);
  return it->second;
}

// What the tiny fixture's shapes cannot tell: 2 heads, GroupNorm of 4 groups.
StableDiffusionConfig tiny_base() {
  StableDiffusionConfig c = StableDiffusionConfig::v1();
  c.text.num_heads = 2;
  c.unet.num_heads = 2;
  c.unet.norm_groups = 4;
  c.vae.norm_groups = 4;
  return c;
}

std::shared_ptr<StableDiffusion> load_tiny(const std::string& file = "model.safetensors") {
  const std::string path = (sd_dir() / file).string();
  return StableDiffusion::from_checkpoint(load_safetensors(path), path, tiny_base());
}

constexpr double kTolerance = 1e-4;

}  // namespace

// ---- configuration -----------------------------------------------------------------------------

TEST(StableDiffusion, InfersTheTinyConfigFromShapes) {
  const StableDiffusionConfig c = models::infer_config(
      models::normalize_sd_checkpoint(load_safetensors((sd_dir() / "model.safetensors").string())),
      tiny_base());
  EXPECT_EQ(c.text.vocab_size, 695);  // the fixture vocabulary's
  EXPECT_EQ(c.text.hidden_size, 16);
  EXPECT_EQ(c.text.num_layers, 2);
  EXPECT_EQ(c.text.intermediate_size, 64);
  EXPECT_EQ(c.text.max_positions, 77);
  EXPECT_EQ(c.unet.model_channels, 8);
  EXPECT_EQ(c.unet.time_embed_dim, 32);
  EXPECT_EQ(c.unet.channel_mult, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.unet.attention_levels, (std::vector<bool>{true, false}));
  EXPECT_EQ(c.unet.num_res_blocks, 1);
  EXPECT_EQ(c.unet.context_dim, 16);
  EXPECT_EQ(c.unet.transformer_depth, 1);
  EXPECT_EQ(c.vae.ch, 8);
  EXPECT_EQ(c.vae.ch_mult, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.vae.num_res_blocks, 1);
  EXPECT_EQ(c.latent_factor(), 2);
}

// The v1.x model's own tensors (built without initializing: no pages are touched) infer back to
// v1.x's config, the one a released checkpoint gives.
TEST(StableDiffusion, InfersV1ConfigFromV1Shapes) {
  const StableDiffusionConfig v1 = StableDiffusionConfig::v1();
  std::shared_ptr<StableDiffusion> model;
  {
    nn::init::SkipInit skip;
    model = std::make_shared<StableDiffusion>(v1);
  }
  int64_t parameters = 0;
  StateDict shapes;
  for (const auto& [name, t] : model->ordered_state_dict()) {
    shapes[name] = t;
    parameters += t.numel();
  }
  EXPECT_EQ(
      parameters,
      1032071643);  // UNet 859,520,964; text encoder 123,060,480; VAE decoder 49,490,179; post_quant_conv 20
  const StableDiffusionConfig c = models::infer_config(shapes, v1);
  EXPECT_EQ(c.text.vocab_size, 49408);
  EXPECT_EQ(c.text.hidden_size, 768);
  EXPECT_EQ(c.text.num_layers, 12);
  EXPECT_EQ(c.text.intermediate_size, 3072);
  EXPECT_EQ(c.unet.model_channels, 320);
  EXPECT_EQ(c.unet.time_embed_dim, 1280);
  EXPECT_EQ(c.unet.channel_mult, (std::vector<int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(c.unet.attention_levels, (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(c.unet.num_res_blocks, 2);
  EXPECT_EQ(c.unet.context_dim, 768);
  EXPECT_EQ(c.vae.ch, 128);
  EXPECT_EQ(c.vae.ch_mult, (std::vector<int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(c.vae.num_res_blocks, 2);
  EXPECT_EQ(c.size_multiple(), 64);
}

// ---- parity with the reference -----------------------------------------------------------------

class StableDiffusionParity : public ::testing::TestWithParam<const char*> {};

TEST_P(StableDiffusionParity, TextEncoder) {
  NoGrad no_grad;
  auto sd = load_tiny(GetParam());
  const double err = relative_error(sd->encode_text(want("text_tokens").tensor()).to_vector<float>(),
                                    want("text_out").floats());
  EXPECT_LE(err, kTolerance);
  std::printf("text encoder: %.2e of max |ref|\n", err);
}

TEST_P(StableDiffusionParity, UNetNoisePrediction) {
  NoGrad no_grad;
  auto sd = load_tiny(GetParam());
  for (bool realize_blocks : {false, true}) {
    Tensor e = sd->predict_noise(want("unet_x").tensor(), want("unet_t").tensor(),
                                 want("unet_context").tensor(), realize_blocks);
    const double err = relative_error(e.to_vector<float>(), want("unet_out").floats());
    EXPECT_LE(err, kTolerance) << "realize_blocks " << realize_blocks;
    std::printf("UNet (realize_blocks %d): %.2e of max |ref|\n", realize_blocks, err);
  }
}

TEST_P(StableDiffusionParity, VAEDecoder) {
  NoGrad no_grad;
  auto sd = load_tiny(GetParam());
  const double err = relative_error(sd->decode_latents(want("vae_latents").tensor(), true).to_vector<float>(),
                                    want("vae_out").floats());
  EXPECT_LE(err, kTolerance);
  std::printf("VAE decoder: %.2e of max |ref|\n", err);
}

TEST_P(StableDiffusionParity, ThreeDDIMStepsWithGuidance) {
  NoGrad no_grad;
  auto sd = load_tiny(GetParam());
  Tensor cond = sd->encode_text(want("ddim_tokens").tensor());
  Tensor uncond = sd->encode_text(want("ddim_empty_tokens").tensor());
  models::NoisePredictor unet = [&](const Tensor& x, const Tensor& t, const Tensor& context) {
    return sd->predict_noise(x, t, context, true);
  };
  int64_t steps_seen = 0;
  Tensor latents =
      models::ddim_sample(unet, want("ddim_noise").tensor(), uncond, cond, 3, 7.5, sd->config.schedule,
                          [&](int64_t i, const Tensor&) { EXPECT_EQ(i, ++steps_seen); });
  EXPECT_EQ(steps_seen, 3);
  const double err = relative_error(latents.to_vector<float>(), want("ddim_latents").floats());
  EXPECT_LE(err, kTolerance);
  const double image_err =
      relative_error(sd->decode_latents(latents).to_vector<float>(), want("ddim_image").floats());
  EXPECT_LE(image_err, kTolerance);
  std::printf("DDIM 3 steps: latents %.2e, image %.2e of max |ref|\n", err, image_err);
}

INSTANTIATE_TEST_SUITE_P(Files, StableDiffusionParity,
                         ::testing::Values("model.safetensors", "model_fp16.safetensors"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "Float32" : "Float16");
                         });

TEST(StableDiffusion, TextToImageGivesUint8Pixels) {
  NoGrad no_grad;
  auto sd = load_tiny();
  models::TextToImageOptions o;
  o.steps = 2;
  o.height = 16;
  o.width = 32;
  int64_t steps = 0;
  Tensor image = sd->text_to_image(want("ddim_tokens").tensor(), want("ddim_empty_tokens").tensor(), o,
                                   [&](int64_t) { ++steps; });
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(image.shape(), (Shape{16, 32, 3}));
  EXPECT_EQ(image.dtype(), kUInt8);
  // A seed repeats its image; another seed gives another.
  EXPECT_EQ(
      sd->text_to_image(want("ddim_tokens").tensor(), want("ddim_empty_tokens").tensor(), o).to_vector<int>(),
      image.to_vector<int>());
  o.seed = 1;
  EXPECT_NE(
      sd->text_to_image(want("ddim_tokens").tensor(), want("ddim_empty_tokens").tensor(), o).to_vector<int>(),
      image.to_vector<int>());
  o.height = 18;
  expect_error(
      [&] { sd->text_to_image(want("ddim_tokens").tensor(), want("ddim_empty_tokens").tensor(), o); },
      {"multiples of 4, got 18x32"});
}

// ---- the checkpoint's layout --------------------------------------------------------------------

TEST(StableDiffusion, MissingOrMisshapenTensorsAreNamed) {
  const std::string path = (sd_dir() / "model.safetensors").string();
  const StateDict file = load_safetensors(path);
  const std::string res = "model.diffusion_model.output_blocks.1.0.in_layers.2.weight";
  {
    StateDict missing = file;
    missing.erase(res);
    expect_error([&] { StableDiffusion::from_checkpoint(missing, path, tiny_base()); },
                 {"StableDiffusion: \"" + path + "\": the checkpoint has no tensor \"" + res + "\""});
  }
  {
    StateDict misshapen = file;
    misshapen[res] = Tensor::zeros({8, 24, 3, 1});  // [16, 24, 3, 3]: level 1's 16 channels from 16 + 8
    expect_error([&] { StableDiffusion::from_checkpoint(misshapen, path, tiny_base()); },
                 {"tensor \"" + res +
                  "\" has shape {8, 24, 3, 1}, expected {16, 24, 3, 3} for this config: dimension 0 is 8, "
                  "expected 16"});
  }
  {
    StateDict ints = file;
    const std::string name = "first_stage_model.decoder.conv_out.bias";
    ints[name] = Tensor::zeros({3}, kInt32);
    expect_error([&] { StableDiffusion::from_checkpoint(ints, path, tiny_base()); },
                 {"tensor \"" + name + "\" has dtype int32, not a floating-point dtype"});
  }
  {
    // A tensor the config is read from: named with what it was needed for.
    StateDict no_conv_in = file;
    no_conv_in.erase("model.diffusion_model.input_blocks.0.0.weight");
    expect_error([&] { StableDiffusion::from_checkpoint(no_conv_in, path, tiny_base()); },
                 {"no tensor \"model.diffusion_model.input_blocks.0.0.weight\" (needed for the UNet's "
                  "model_channels and in_channels)"});
  }
  {
    // Heads that do not divide the channels.
    StableDiffusionConfig base = tiny_base();
    base.unet.num_heads = 3;
    expect_error([&] { StableDiffusion::from_checkpoint(file, path, base); },
                 {"cannot be split into num_heads 3"});
  }
}

// Older files name CLIP's tensors without "text_model."; float32 tensors are used where they lie in
// the mapped file.
TEST(StableDiffusion, ReadsTheOlderTextEncoderNamesAndMapsTheFile) {
  NoGrad no_grad;
  const StateDict file = load_safetensors((sd_dir() / "model.safetensors").string());
  StateDict old_names;
  const std::string with = "cond_stage_model.transformer.text_model.";
  for (const auto& [name, t] : file)
    old_names[name.rfind(with, 0) == 0 ? "cond_stage_model.transformer." + name.substr(with.size()) : name] =
        t;
  auto sd = StableDiffusion::from_checkpoint(old_names, "old names", tiny_base());
  EXPECT_LE(relative_error(sd->encode_text(want("text_tokens").tensor()).to_vector<float>(),
                           want("text_out").floats()),
            kTolerance);
}

// float32 tensors are used where they lie in the file's mapping (no memory of their own); float16
// ones are converted to float32 copies.
TEST(StableDiffusion, Float32WeightsStayInTheMapping) {
  for (const char* file : {"model.safetensors", "model_fp16.safetensors"}) {
    const StateDict checkpoint = load_safetensors((sd_dir() / file).string());
    const int64_t before = GlobalCounters::mem_used;
    auto sd = StableDiffusion::from_checkpoint(checkpoint, file, tiny_base());
    int64_t parameters = 0;
    for (const Tensor& p : sd->parameters()) parameters += p.numel();
    const int64_t allocated = GlobalCounters::mem_used - before;
    if (std::string(file) == "model.safetensors")
      EXPECT_EQ(allocated, 0) << file;
    else
      EXPECT_EQ(allocated, 4 * parameters) << file;
  }
}

// ---- the tokenizer ------------------------------------------------------------------------------

TEST(CLIPTokenizer, EncodesAsTheReference) {
  const json::Value cases = json::parse(test::read_file(sd_dir() / "tokenizer_encodings.json"));
  const CLIPTokenizer from_files = CLIPTokenizer::from_path(sd_dir().string());
  const CLIPTokenizer from_bpe = CLIPTokenizer::from_path((sd_dir() / "bpe_simple_vocab.txt.gz").string());
  EXPECT_EQ(from_files.vocab_size(), from_bpe.vocab_size());
  ASSERT_GE(cases.items.size(), 10u);
  for (const json::Value& c : cases.items) {
    const std::string prompt = c.find("prompt")->text;
    std::vector<int32_t> ids;
    for (const json::Value& id : c.find("ids")->items) ids.push_back(std::stoi(id.text));
    EXPECT_EQ(from_files.encode_padded(prompt), ids) << json::quote(prompt);
    EXPECT_EQ(from_bpe.encode_padded(prompt), ids) << json::quote(prompt);
  }
  const CLIPTokenizer& t = from_files;
  EXPECT_EQ(t.id_to_token(t.start_token_id()), "<|startoftext|>");
  EXPECT_EQ(t.id_to_token(t.end_token_id()), "<|endoftext|>");
  EXPECT_EQ(t.id_to_token(0), "!");  // OpenAI's order: the printable bytes first
  const std::vector<int32_t> ids = t.encode("A Photograph of an astronaut, riding!");
  EXPECT_EQ(t.decode(ids), "a photograph of an astronaut , riding ! ");
  EXPECT_NE(t.token_to_id("photograph</w>"), -1);
  EXPECT_EQ(t.encode_padded("x", 5),
            (std::vector<int32_t>{t.start_token_id(), t.token_to_id("x</w>"), t.end_token_id(),
                                  t.end_token_id(), t.end_token_id()}));
}

TEST(CLIPTokenizer, BadFilesAreErrors) {
  const fs::path dir = test::fresh_dir("clip_tokenizer_bad");
  expect_error([&] { CLIPTokenizer::from_path(dir.string()); }, {"must hold vocab.json and merges.txt"});
  expect_error([&] { CLIPTokenizer::from_path((dir / "none.txt.gz").string()); }, {"not a file"});
  test::write_text(dir / "vocab.json", R"({"a": 0, "b": 1})");
  test::write_text(dir / "merges.txt", "#version: 0.2\na b\n");
  expect_error([&] { CLIPTokenizer::from_path(dir.string()); }, {"has no token \"Ā\" (byte 0"});
  test::write_text(dir / "vocab.json", "{\"a\": ");
  expect_error([&] { CLIPTokenizer::from_path(dir.string()); }, {"not valid JSON"});
  // A merge line of three tokens.
  test::write_text(dir / "bpe.txt", "#version: 0.2\na b c\n");
  expect_error([&] { CLIPTokenizer::from_bpe_file((dir / "bpe.txt").string()); },
               {"line 2: a merge must be two tokens"});
  fs::remove_all(dir);
}

// ---- the CLI ------------------------------------------------------------------------------------

namespace {

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

// Checks a PNG file as a decoder would: the signature, every chunk's CRC, IHDR (8-bit RGB, no
// interlace), the IDAT stream inflated to one filter byte and width * 3 bytes a row; returns the
// pixel rows (filters undone) so the caller can look at them.
std::vector<uint8_t> check_png(const std::string& png, uint32_t width, uint32_t height) {
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string idat;
  bool ihdr = false, iend = false;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (at + 12 + length > png.size()) {
      ADD_FAILURE() << "chunk " << type << " runs past the end";
      return {};
    }
    const std::string data = png.substr(at + 8, length);
    const uLong crc =
        crc32(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(png.data() + at + 4), length + 4);
    EXPECT_EQ(be32(png, at + 8 + length), crc) << "CRC of " << type;
    if (type == "IHDR") {
      ihdr = true;
      EXPECT_EQ(length, 13u);
      EXPECT_EQ(be32(data, 0), width);
      EXPECT_EQ(be32(data, 4), height);
      EXPECT_EQ(data.substr(8, 5),
                std::string("\x08\x02\x00\x00\x00", 5));  // 8 bits, RGB, deflate, filters, no interlace
    } else if (type == "IDAT") {
      idat += data;
    } else if (type == "IEND") {
      iend = true;
      EXPECT_EQ(at + 12, png.size());
    }
    at += 12 + length;
  }
  EXPECT_TRUE(ihdr);
  EXPECT_TRUE(iend);
  const size_t row = 1 + 3 * size_t(width);
  std::vector<uint8_t> raw(row * height + 1);
  uLongf raw_size = raw.size();
  EXPECT_EQ(uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
            Z_OK);
  EXPECT_EQ(raw_size, row * height);
  std::vector<uint8_t> pixels;
  for (size_t y = 0; y < height; ++y) {
    EXPECT_EQ(raw[y * row], 0) << "filter of row " << y;  // the writer uses filter 0 (None)
    pixels.insert(pixels.end(), raw.begin() + long(y * row + 1), raw.begin() + long((y + 1) * row));
  }
  return pixels;
}

}  // namespace

// The full v1.x network with random weights (1.03 billion parameters, 4.1 GB as float32):
// one step at 64x64, written as a PNG. Prints the CLI's own time and peak memory lines.
TEST(GenerateImageCli, FakeWeightsWriteAPng) {
  // Its kernels are compiled the same way the parity tests' are, and the CLI's code runs in the tiny
  // run below: the C compiler's suite and the sanitizer build leave the 4 GB run out
  // (docs/stable_diffusion.md).
  if (const char* compiler = std::getenv("LAZYGRAD_CPU_COMPILER"); compiler && std::string(compiler) == "cc")
    GTEST_SKIP() << "the full-size run is left to the default compiler's suite";
  if (test::kAddressSanitizer) GTEST_SKIP() << "the full-size run is left out of the sanitizer build";
  const fs::path dir = test::fresh_dir("generate_image_fake");
  const auto start = std::chrono::steady_clock::now();
  const test::RunResult r = test::run_program(
      test::cli_binary(),
      {"generate-image", "--fakeweights", "--tokenizer", sd_dir().string(), "--prompt", "a red cube",
       "--size", "64", "--steps", "1", "--seed", "3", "--out", (dir / "image.png").string()},
      dir, 900);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_status, 0) << r.err;
  std::printf("generate-image --fakeweights --size 64 --steps 1: %.1f s\n%s", seconds, r.err.c_str());
  EXPECT_NE(r.err.find("step 1/1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("peak memory: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("parameters: 1,032,071,643 (random, --fakeweights)"), std::string::npos) << r.err;
  const std::vector<uint8_t> pixels = check_png(test::read_file(dir / "image.png"), 64, 64);
  ASSERT_EQ(pixels.size(), 64u * 64u * 3u);
  fs::remove_all(dir);
}

TEST(GenerateImageCli, TinyCheckpointAndUsageErrors) {
  const fs::path dir = test::fresh_dir("generate_image_cli");
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "generate-image");
    return test::run_program(test::cli_binary(), args, dir, 300);
  };
  // Every option of the usage line is explained in the help.
  test::RunResult r = run({"--help"});
  EXPECT_EQ(r.exit_status, 0);
  const std::string usage = r.out.substr(0, r.out.find("\n\n")), details = r.out.substr(usage.size());
  for (const char* option :
       {"--model", "--fakeweights", "--tokenizer", "--prompt", "--steps", "--size", "--guidance", "--seed",
        "--out", "--device", "--text-heads", "--unet-heads", "--groups"})
    EXPECT_NE(details.find(option), std::string::npos) << option << " is not explained\n" << r.out;
  r = run({"--prompt", "x"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("--model FILE or --fakeweights"), std::string::npos) << r.err;
  r = run({"--fakeweights", "--size", "100"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("--size must be a positive multiple of 64"), std::string::npos) << r.err;
  r = run({"--fakeweights", "--steps", "0"});
  EXPECT_EQ(r.exit_status, 2);
  r = run({"--model", (dir / "none.safetensors").string(), "--tokenizer", sd_dir().string()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("none.safetensors"), std::string::npos) << r.err;
  // The tiny checkpoint with v1.x's 32 groups: its 8 channels cannot be split so.
  const std::vector<std::string> tiny = {"--model",     (sd_dir() / "model.safetensors").string(),
                                         "--tokenizer", sd_dir().string(),
                                         "--out",       (dir / "tiny.png").string()};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), tiny.begin(), tiny.end());
    return more;
  };
  r = run(with({"--size", "16"}));
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  // With its heads and groups: the whole path (the checkpoint, the tokenizer, 2 steps, the PNG).
  const std::vector<std::string> shape = {"--text-heads", "2", "--unet-heads", "2", "--groups", "4"};
  auto tiny_run = [&](std::vector<std::string> more) {
    more.insert(more.begin(), shape.begin(), shape.end());
    return run(with(more));
  };
  r = tiny_run({"--size", "18"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("--size 18 is not a multiple of 4"), std::string::npos) << r.err;
  r = tiny_run({"--size", "16", "--steps", "2", "--prompt", "a photograph of an astronaut"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.err.find("step 2/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("parameters: 97,179 ("), std::string::npos) << r.err;
  const std::vector<uint8_t> pixels = check_png(test::read_file(dir / "tiny.png"), 16, 16);
  ASSERT_EQ(pixels.size(), 16u * 16u * 3u);
  EXPECT_NE(*std::min_element(pixels.begin(), pixels.end()), *std::max_element(pixels.begin(), pixels.end()));
  fs::remove_all(dir);
}
