// Grouped reductions (docs/devices.md, "Work-groups"): reductions on a device with work-groups,
// each with the device's default opts, with none (one work-item per output, the engine's groups of
// 64), and with a grouped reduction of 16, 64 and 256 work-items forced, beside the CPU's default
// measured in the same run. Prints each time and its ratio to the CPU's.
//
//   ./build/bench_reductions [--device CL] [--reps K]      (THREADS=... sets the CPU's threads)
//
// Reductions, on float32 (16 MiB of input each):
//   sum        x.sum(), x of 4M elements                 1 output: one work-group does it all
//   rows 256   x.sum(1), x as [256, 16384]               256 outputs of long contiguous rows
//   rows 4096  x.sum(1), x as [4096, 1024]               4096 outputs
//   cols       x.sum(0), x as [1024, 4096]               4096 outputs, each a strided column
//   softmax    x.softmax(1), x as [4096, 1024]           a row's max and sum fused into its reader
//
// Method: each variant runs once to compile (or load) its kernels; then K repetitions each realize a
// fresh expression over the same realized input and wait for the device (synchronize), and the best
// wall time is reported.
#include <lazygrad/lazygrad.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "codegen/optimize.h"
#include "engine/realize.h"
#include "runtime/device.h"

using namespace lazygrad;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(stderr, "usage: %s [--device D] [--reps K]\n", argv0);
  std::exit(why.empty() ? 0 : 2);
}

// What chooses each kernel's opts in a variant: empty for the device's default.
using Chooser = std::function<std::vector<Opt>(const Kernel&)>;

// The kernel's required opts and a Group of `amount` on its first reduction axis, if it has one.
Chooser grouped(int64_t amount) {
  return [amount](const Kernel& k) {
    KernelAxes ax = kernel_axes(k);
    std::vector<Opt> opts = required_opts(k);
    if (ax.ranges.size() > ax.n_output)
      opts.push_back({AxisKind::Group, static_cast<int>(ax.n_output), amount});
    return opts;
  };
}

double best_time(const std::function<Tensor()>& op, const std::string& dev, int reps) {
  op().realize();  // compiles
  device(dev).synchronize();
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = bench::now_s();
    op().realize();
    device(dev).synchronize();
    best = std::min(best, bench::now_s() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dev = "CL";
  int reps = 10;
  for (int i = 1; i < argc; i++) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--reps", "--device"});
    if (f.name == "--reps")
      reps = static_cast<int>(bench::int_flag(usage, argv[0], "--reps", f.value));
    else if (f.name == "--device")
      dev = canonical_device(f.value);
    else
      usage(argv[0], "unknown argument " + f.text);
  }
  for (const DeviceInfo& d : devices())
    if (d.name == dev && !d.available) {
      std::printf("%s is not here: %s\n", dev.c_str(), d.detail.c_str());
      return 0;
    }
  std::printf("%s; %s: %s\n", bench::cpu_model().c_str(), dev.c_str(), device(dev).info().detail.c_str());
  const int64_t n = 1 << 22;
  Tensor cpu = Tensor::rand({n}, kFloat32, "CPU").realize();
  Tensor on = cpu.to(dev).realize();
  struct Op {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
  };
  const std::vector<Op> ops = {
      {"sum", [](const Tensor& x) { return x.sum(); }},
      {"rows 256",
       [](const Tensor& x) {
         return x.reshape({256, 16384}).sum(1);
       }},
      {"rows 4096",
       [](const Tensor& x) {
         return x.reshape({4096, 1024}).sum(1);
       }},
      {"cols",
       [](const Tensor& x) {
         return x.reshape({1024, 4096}).sum(0);
       }},
      {"softmax",
       [](const Tensor& x) {
         return x.reshape({4096, 1024}).softmax(1);
       }},
  };
  struct Variant {
    const char* name;
    Chooser choose;
  };
  const std::vector<Variant> variants = {{"default", nullptr},
                                         {"ungrouped", [](const Kernel& k) { return required_opts(k); }},
                                         {"R16", grouped(16)},
                                         {"R64", grouped(64)},
                                         {"R256", grouped(256)}};
  std::printf("%-10s %10s", "op", "CPU ms");
  for (const auto& v : variants) std::printf(" %12s %6s", (dev + " " + v.name).c_str(), "/CPU");
  std::printf("\n");
  int64_t key = 9100;
  for (const Op& op : ops) {
    double base = best_time([&] { return op.fn(cpu); }, "CPU", reps);
    std::printf("%-10s %10.3f", op.name, base * 1e3);
    for (const auto& v : variants) {
      set_opts_chooser(v.choose, v.choose ? ++key : 0);
      double t = best_time([&] { return op.fn(on); }, dev, reps);
      set_opts_chooser(nullptr, 0);
      std::printf(" %12.3f %6.2f", t * 1e3, t / base);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
