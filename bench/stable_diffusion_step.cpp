// Seconds per denoising step of Stable Diffusion v1.x's UNet (models/sd_unet.h): lazygrad against
// PyTorch running the reference network with the same weights, in one run.
//
//   ./build/bench_stable_diffusion_step [--sizes 256,512] [--reps K] [--threads T] [--no-torch]
//                                       [--weights FILE]
//
// A step is what the sampler runs for each of its steps: one UNet call on a batch of two latents
// (classifier-free guidance: the empty prompt's context and the text's), [2, 4, size/8, size/8],
// with a context [2, 77, 768] and timestep 501, each block realized as it is built (the CLI's way,
// UNetModel::forward with realize_blocks), then the guided DDIM update. Each side runs one first step
// (lazygrad compiles its kernels then, from a cold cache or the disk cache) and K timed steps; the
// best is kept, and both the first and the best are printed.
//
// The weights are v1.x's UNet (859,520,964 parameters) with the layers' own random initialization
// (seed 0), written once to FILE (default $TMPDIR/lazygrad_sd_unet_bench.safetensors, 3.4 GB; kept
// for the next run, which maps it as the CLI maps a checkpoint). The inputs and lazygrad's output of
// each size go to FILE.io.safetensors. The peer, scripts/bench_sd_torch.py under Debian's python3
// (python3-torch) with the same thread count (bench::torch_env), maps both files, runs the fixture
// script's reference unet() (scripts/make_sd_fixture.py) at v1.x's sizes on the same inputs,
// and checks its output against lazygrad's (max |difference| / max |lazygrad's|). The sizes alternate
// between the two sides, so that a change in the machine's load hits both. With DEVICE=CUDA the peer
// runs on CUDA (bench::torch_device_flag).
#include <lazygrad/lazygrad.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../models/checkpoint.h"
#include "../models/ddim.h"
#include "../models/sd_unet.h"
#include "bench_util.h"

#ifndef LAZYGRAD_SOURCE_DIR
#define LAZYGRAD_SOURCE_DIR "."
#endif

using lazygrad::Tensor;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(why.empty() ? stdout : stderr,
               "usage: %s [--sizes 256,512] [--reps K] [--threads T] [--no-torch] [--weights FILE]\n"
               "  --sizes     image sides in pixels, multiples of 64 (default 256,512)\n"
               "  --reps      timed steps after the first, best kept (default 2)\n"
               "  --threads   threads for lazygrad and PyTorch (default 2)\n"
               "  --no-torch  skip the PyTorch peer\n"
               "  --weights   the UNet's weights file, written if missing (default "
               "$TMPDIR/lazygrad_sd_unet_bench.safetensors)\n",
               argv0);
  std::exit(why.empty() ? 0 : 2);
}

const std::string kPrefix = "model.diffusion_model.";

// v1.x's UNet with the weights in `path`: mapped from the file when it holds them, else randomly
// initialized (seed 0) and written there first.
std::shared_ptr<lazygrad::models::UNetModel> load_or_make_unet(const std::string& path) {
  using namespace lazygrad;
  const models::UNetConfig config;
  if (std::filesystem::exists(path)) {
    std::shared_ptr<models::UNetModel> unet;
    {
      nn::init::SkipInit skip;
      unet = std::make_shared<models::UNetModel>(config);
    }
    models::load_hf_checkpoint(*unet, load_safetensors(path), "UNet", {kPrefix});
    if (default_device() != "CPU") unet->to(default_device());  // the file's tensors are the CPU's
    return unet;
  }
  std::printf("writing the random weights to %s (once) ...\n", path.c_str());
  Tensor::manual_seed(0);
  auto unet = std::make_shared<models::UNetModel>(config);
  StateDict named;
  for (const auto& [name, t] : unet->ordered_state_dict()) named[kPrefix + name] = t;
  save_safetensors(path, named);
  return unet;
}

struct TorchResult {
  bool ok = false;
  std::string header, message;
  double first_s = 0, best_s = 0, rel_diff = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace lazygrad;
  std::vector<int64_t> sizes = {256, 512};
  int64_t reps = 2, threads = 2;
  bool torch = true;
  const char* tmp = std::getenv("TMPDIR");
  std::string weights = std::string(tmp && *tmp ? tmp : "/tmp") + "/lazygrad_sd_unet_bench.safetensors";
  for (int i = 1; i < argc; ++i) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--sizes", "--reps", "--threads", "--weights"});
    if (f.name == "--sizes") {
      sizes.clear();
      std::string list = f.value;
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const int64_t s = bench::int_flag(usage, argv[0], "--sizes", list.substr(at, comma - at));
        if (s % 64 != 0) usage(argv[0], "--sizes: " + std::to_string(s) + " is not a multiple of 64");
        sizes.push_back(s);
        at = comma + 1;
      }
    } else if (f.name == "--reps") {
      reps = bench::int_flag(usage, argv[0], "--reps", f.value);
    } else if (f.name == "--threads") {
      threads = bench::int_flag(usage, argv[0], "--threads", f.value);
    } else if (f.name == "--weights") {
      weights = f.value;
    } else if (f.name == "--no-torch") {
      torch = false;
    } else {
      usage(argv[0], "unknown argument '" + f.text + "'");
    }
  }
  if (!bench::default_device_here()) return 0;
  set_threads(static_cast<int>(threads));
  NoGrad no_grad;
  std::printf("bench_stable_diffusion_step: Stable Diffusion v1.x's UNet, batch 2 (guidance), float32\n");
  std::printf("CPU: %s; %lld threads; device %s\n", bench::cpu_model().c_str(),
              static_cast<long long>(threads), default_device().c_str());

  double start = bench::now_s();
  auto unet = load_or_make_unet(weights);
  std::printf("weights: %s, ready in %.1f s\n", weights.c_str(), bench::now_s() - start);
  const std::vector<double> alpha_bar = models::NoiseSchedule{}.alphas_cumprod();
  const int64_t t = 501;

  std::printf("\n%6s  %14s %12s  %14s %12s  %8s  %s\n", "size", "lazygrad first", "best s/step",
              "PyTorch first", "best s/step", "ratio", "PyTorch vs lazygrad (max |diff| / max |ours|)");
  for (int64_t size : sizes) {
    const int64_t latent = size / 8;
    Tensor::manual_seed(static_cast<uint64_t>(size));
    Tensor x = Tensor::randn({1, 4, latent, latent}).realize();
    Tensor context = Tensor::randn({2, 77, 768}).realize();
    Tensor step_t = Tensor::from_vector<float>({static_cast<float>(t)}, {1});
    // One sampler step: the UNet on [x, x] with both contexts, guidance, the DDIM update.
    auto step = [&] {
      models::NoisePredictor predict = [&](const Tensor& xs, const Tensor& ts, const Tensor& c) {
        return unet->forward(xs, ts, c, /*realize_blocks=*/true);
      };
      std::vector<Tensor> halves = context.chunk(2, 0);
      Tensor e = models::guided_noise(predict, x, t, halves[0], halves[1], 7.5).realize();
      models::ddim_step(x, e, alpha_bar[t], alpha_bar[t - 25]).realize();  // the next latents
      return e;
    };
    double t0 = bench::now_s();
    Tensor e = step();
    const double first = bench::now_s() - t0;
    double best = 1e30;
    for (int64_t r = 0; r < reps; ++r) {
      t0 = bench::now_s();
      step();
      best = std::min(best, bench::now_s() - t0);
    }

    TorchResult tr;
    if (torch) {
      const std::string io = weights + ".io.safetensors";
      save_safetensors(io, {{"x", x}, {"context", context}, {"t", step_t}, {"e", e}});
      bench::run_torch_script(LAZYGRAD_SOURCE_DIR, "bench_sd_torch.py", static_cast<int>(threads),
                              " --reps " + std::to_string(reps) + " --size " + std::to_string(size) +
                                  " --weights " + bench::shell_quote(weights) + " --io " +
                                  bench::shell_quote(io),
                              tr, [&](const std::string& word, std::istringstream& in) {
                                std::string key;
                                if (word == "result") {
                                  in >> key >> tr.first_s >> key >> tr.best_s >> key >> tr.rel_diff;
                                  tr.ok = true;
                                }
                              });
    }
    char torch_cols[128] = "", ratio[32] = "", diff[160] = "";
    if (tr.ok) {
      std::snprintf(torch_cols, sizeof torch_cols, "%14.2f %12.2f", tr.first_s, tr.best_s);
      std::snprintf(ratio, sizeof ratio, "%8.2f", best / tr.best_s);
      std::snprintf(diff, sizeof diff, "%.1e", tr.rel_diff);
    } else {
      std::snprintf(torch_cols, sizeof torch_cols, "%14s %12s", "-", "-");
      std::snprintf(ratio, sizeof ratio, "%8s", "-");
      std::snprintf(diff, sizeof diff, "%s", torch ? tr.message.c_str() : "(--no-torch)");
    }
    std::printf("%6lld  %14.2f %12.2f  %s  %s  %s\n", static_cast<long long>(size), first, best, torch_cols,
                ratio, diff);
    std::fflush(stdout);
    if (tr.ok && !tr.header.empty() && size == sizes.front())
      std::printf("        (%s)\n", tr.header.c_str());
  }
  std::printf("\nratio = lazygrad's best s/step / PyTorch's (below 1: lazygrad is faster)\n");
  return 0;
}
