// All-reduce between in-process devices (lazygrad/multi.h): time and bandwidth by size, naive and
// ring, on 2, 3 and 4 virtual CPU devices, float32 sums; the reference is one memcpy of a shard's
// bytes per device (what moving the data once costs). Virtual CPU devices share the machine's
// cores and memory: this measures the schedule's copies and kernels, not a network. Prints, for each
// device count, the smallest size where the ring was faster: where Auto should switch
// (ring_all_reduce_min_bytes). docs/multi.md
//
//   bench_all_reduce [--max-mb M] [--repeats R]
#include <lazygrad/lazygrad.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench_util.h"

using namespace lazygrad;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::cerr << argv0 << ": " << why << "\n";
  std::cerr << "usage: " << argv0 << " [--max-mb M] [--repeats R]\n";
  std::exit(why.empty() ? 0 : 2);
}

double best_of(int repeats, const std::function<void()>& fn) {
  fn();  // compiled here
  double best = 1e30;
  for (int i = 0; i < repeats; i++) {
    const double t0 = bench::now_s();
    fn();
    best = std::min(best, bench::now_s() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t max_mb = 64, repeats = 5;
  for (int i = 1; i < argc; i++) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--max-mb", "--repeats"});
    if (f.name == "--max-mb")
      max_mb = bench::int_flag(usage, argv[0], f.name, f.value);
    else if (f.name == "--repeats")
      repeats = bench::int_flag(usage, argv[0], f.name, f.value);
    else
      usage(argv[0], "unknown argument '" + f.text + "'");
  }
  std::cout << "CPU: " << bench::cpu_model() << ", " << settings().threads << " threads; CPU kernels by "
            << cpu_kernel_compiler() << "\n"
            << "all_reduce of float32 sums between virtual CPU devices (one machine's cores and memory);\n"
            << "best of " << repeats << "; GB/s is a shard's bytes over the time (algorithm bandwidth)\n\n";
  std::printf("%-8s %10s %12s %12s %12s %10s %10s %10s\n", "devices", "bytes", "naive us", "ring us",
              "memcpy us", "naive GB/s", "ring GB/s", "ring/naive");
  for (int n : {2, 3, 4}) {
    std::vector<std::string> devices{"CPU"};
    for (int i = 1; i < n; i++) devices.push_back("CPU:" + std::to_string(i));
    int64_t crossing = -1;
    for (int64_t bytes = 4096; bytes <= max_mb << 20; bytes *= 4) {
      const int64_t numel = bytes / 4;
      std::vector<Tensor> shards;
      for (const auto& d : devices) shards.push_back(Tensor::randn({numel}, kFloat32, d).realize());
      auto time = [&](AllReduceAlgorithm a) {
        return best_of(static_cast<int>(repeats), [&] { realize(all_reduce(shards, ReduceOp::Sum, a)); });
      };
      const double naive = time(AllReduceAlgorithm::Naive), ring = time(AllReduceAlgorithm::Ring);
      std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes));
      const double copy = best_of(static_cast<int>(repeats), [&] {
        for (int i = 0; i < n; i++) std::memcpy(dst.data(), src.data(), dst.size());
      });
      if (crossing < 0 && ring < naive) crossing = bytes;
      std::printf("%-8d %10lld %12.1f %12.1f %12.1f %10.2f %10.2f %10.2f\n", n, static_cast<long long>(bytes),
                  naive * 1e6, ring * 1e6, copy * 1e6, bytes / naive * 1e-9, bytes / ring * 1e-9,
                  naive / ring);
    }
    std::printf("  %d devices: the ring is faster from %s on\n", n,
                crossing < 0 ? "no size measured" : (std::to_string(crossing) + " bytes").c_str());
  }
  std::cout << "Auto switches at " << ring_all_reduce_min_bytes() << " bytes (LAZYGRAD_RING_MIN_BYTES)\n";
  return 0;
}
