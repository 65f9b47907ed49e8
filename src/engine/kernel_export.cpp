#include "engine/kernel_export.h"

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "codegen/linearize.h"
#include "codegen/optimize.h"
#include "engine/beam.h"
#include "lazygrad/error.h"
#include "renderer/renderer.h"
#include "runtime/disk_cache.h"

namespace lazygrad {

namespace {

// sm_80 (A100): what every GPU the check compiles for (sm_80, sm_90) can run.
constexpr int kExportSm = 80;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void write_rendering(const Kernel& k, std::span<const Opt> opts, const Renderer& r, const std::string& dir) {
  std::string why;
  try {
    Kernel opt = apply_opts(k, opts);
    if (std::string misfits = misfit(opt, r.target()); !misfits.empty())
      throw Error("does not fit: " + misfits);
    LinearKernel lin = linearize(opt);
    const std::string name = "lg_" + hex64(fnv1a(r.render(opt, lin)));
    opt.name = name;
    const std::string path = dir + "/" + name + ".cu";
    if (!std::filesystem::exists(path)) write_file_atomic(path, r.render(opt, lin));
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (why.empty()) return;
  try {
    write_file_atomic(dir + "/lg_" + hex64(fnv1a(k.name + opts_str(opts) + why)) + ".error",
                      "kernel " + k.name + " [" + opts_str(opts) + "]: " + why + "\n");
  } catch (const std::exception&) {
    // A folder that cannot be written: nothing is exported, and the check fails finding no kernel.
  }
}

}  // namespace

void export_cuda_kernel(const Kernel& k) {
  static const std::string dir = env("LAZYGRAD_CUDA_EXPORT");
  if (dir.empty() || k.copy || k.global_size == 0) return;
  static const bool made = [] {
    std::error_code ec;  // a folder that cannot be made: each write below says why
    return std::filesystem::create_directories(dir, ec);
  }();
  (void)made;
  static const std::unique_ptr<Renderer> renderer = make_cuda_renderer(cuda_target(kExportSm));
  static const int samples = std::atoi(env("LAZYGRAD_CUDA_EXPORT_SAMPLES").c_str());
  const Target& t = renderer->target();
  write_rendering(k, default_opts(k, t), *renderer, dir);
  uint64_t h = fnv1a(k.name);
  for (int s = 0; s < samples; s++) {
    std::mt19937_64 rng(h + static_cast<uint64_t>(s));
    std::vector<Opt> opts = rng() % 2 ? required_opts(k) : default_opts(k, t);
    for (int steps = static_cast<int>(rng() % 5); steps > 0; steps--) {
      auto next = extensions(k, opts, t);
      if (next.empty()) break;
      opts = next[rng() % next.size()];
    }
    write_rendering(k, opts, *renderer, dir);
  }
}

}  // namespace lazygrad
