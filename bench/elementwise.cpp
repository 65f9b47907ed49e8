// Elementwise throughput: lazygrad against plain C++ measured in the same process and run.
//
//   ./build/bench_elementwise [--n ELEMENTS] [--reps K]      (THREADS=... sets the thread count)
//
// Ops, on float32 arrays of N elements (default 64M = 256 MiB each, well past a 32 MiB L3, so every
// array streams from memory, as STREAM requires):
//   add      a + b                              1 output, 2 inputs   12 bytes per element
//   chain    ((a * b + c).relu() - a).exp2()    5 ops, 3 inputs      16 bytes per element
//   softmax  x.softmax(-1), x = a as [N/1024, 1024]                   8 bytes per element
// The peer is plain C++ on the same number of threads (settings().threads std::threads, each given
// the same contiguous slice lazygrad's thread pool would give it): a STREAM triad a = b + s * c and
// an add loop a = b + c, both writing an output array that stays allocated between repetitions.
//
// Bandwidth counts compulsory bytes only: each input read once, each output written once (as STREAM
// does, so write-allocate traffic and softmax's extra passes over its input are not counted).
//
// Method: inputs are realized first. Each op is run once to warm up (the first call compiles its
// kernels, or loads them from the disk cache); then K repetitions each build a fresh lazy expression
// over the same realized inputs and realize() it, and the best (minimum) time is reported. "wall" is
// build + realize() as seen by the caller; "kern" is the GlobalCounters::time_sum_s delta, the time
// spent inside kernel launches. Each repetition writes a freshly allocated output buffer, as any
// realize() of a new expression does.
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

using lazygrad::GlobalCounters;
using lazygrad::Tensor;

namespace {

constexpr int64_t kRow = 1024;  // softmax row length

[[noreturn]] void usage(const char* argv0, const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "error: %s\n", error.c_str());
  std::fprintf(stderr,
               "usage: %s [--n ELEMENTS] [--reps K]\n"
               "  --n     float32 elements per array, a multiple of %lld (default 67108864 = 256 MiB)\n"
               "  --reps  timed repetitions per op, the best is reported (default 5)\n"
               "  THREADS=T in the environment sets lazygrad's and the peer's thread count\n",
               argv0, static_cast<long long>(kRow));
  std::exit(error.empty() ? 0 : 2);
}

// ---- the peer: plain C++ loops on `threads` std::threads ----------------------------------------

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Array = std::unique_ptr<float[], FreeDeleter>;

Array alloc_array(int64_t n) {
  size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) throw std::bad_alloc();
  return Array(p);
}

// Runs fn(begin, end) on `threads` threads over [0, n), split as lazygrad's CPU runtime splits a
// kernel's range (chunk c gets [n*c/T, n*(c+1)/T)); returns the seconds from first spawn to last join.
double run_split(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  std::vector<std::thread> workers;
  workers.reserve(threads);
  double t0 = bench::now_s();
  for (int c = 0; c < threads; c++) workers.emplace_back(fn, n * c / threads, n * (c + 1) / threads);
  for (auto& w : workers) w.join();
  return bench::now_s() - t0;
}

// Blocked so that GCC vectorizes at the project's -O2 (its cheap cost model skips the plain loop).
void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float s, int64_t begin,
           int64_t end) {
  int64_t i = begin;
  for (; i + 16 <= end; i += 16)
    for (int j = 0; j < 16; j++) a[i + j] = b[i + j] + s * c[i + j];
  for (; i < end; i++) a[i] = b[i] + s * c[i];
}

void add(float* __restrict a, const float* __restrict b, const float* __restrict c, int64_t begin,
         int64_t end) {
  int64_t i = begin;
  for (; i + 16 <= end; i += 16)
    for (int j = 0; j < 16; j++) a[i + j] = b[i + j] + c[i + j];
  for (; i < end; i++) a[i] = b[i] + c[i];
}

double best_of(int reps, const std::function<double()>& once) {
  once();  // warm-up: caches, page tables, thread creation paths
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; r++) best = std::min(best, once());
  return best;
}

// ---- lazygrad ------------------------------------------------------------------------------------

struct LgResult {
  double first_s = 0;      // wall time of the first call (builds, compiles or loads, runs)
  double compile_s = 0;    // GlobalCounters::compile_s delta of the first call (compiler processes)
  int64_t compiled = 0;    // compiler processes run by the first call
  int64_t cache_hits = 0;  // kernels the first call loaded from the disk cache
  double wall_s = 0;       // best build + realize() time
  double kernel_s = 0;     // best GlobalCounters::time_sum_s delta
  int64_t kernels = 0;     // kernels launched per repetition
};

// Warms up once, checks that result with `check`, then times `reps` fresh builds + realize().
LgResult measure(const std::function<Tensor()>& build, int reps,
                 const std::function<void(const Tensor&)>& check) {
  LgResult r;
  {
    double c0 = GlobalCounters::compile_s;
    int64_t n0 = GlobalCounters::compile_count, h0 = GlobalCounters::cache_hits;
    double t0 = bench::now_s();
    Tensor out = build();
    out.realize();
    r.first_s = bench::now_s() - t0;
    r.compile_s = GlobalCounters::compile_s - c0;
    r.compiled = GlobalCounters::compile_count - n0;
    r.cache_hits = GlobalCounters::cache_hits - h0;
    check(out);
  }
  r.wall_s = r.kernel_s = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; i++) {
    int64_t k0 = GlobalCounters::kernel_count;
    double ks0 = GlobalCounters::time_sum_s;
    double t0 = bench::now_s();
    Tensor out = build();
    out.realize();
    double wall = bench::now_s() - t0;
    int64_t kernels = GlobalCounters::kernel_count - k0;
    if (kernels == 0) {
      std::fprintf(stderr, "error: a repetition launched no kernel, so nothing was measured\n");
      std::exit(1);
    }
    if (i > 0 && kernels != r.kernels)
      std::fprintf(stderr, "warning: kernels per repetition changed from %lld to %lld\n",
                   static_cast<long long>(r.kernels), static_cast<long long>(kernels));
    r.kernels = kernels;
    r.wall_s = std::min(r.wall_s, wall);
    r.kernel_s = std::min(r.kernel_s, GlobalCounters::time_sum_s - ks0);
  }  // `out` is freed here, outside the timed region
  return r;
}

// Compares sampled outputs with a reference computed here; exits on a mismatch.
void expect_close(const char* op, int64_t i, double got, double want, double rel) {
  if (std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want))) return;
  std::fprintf(stderr, "error: %s is wrong at element %lld: got %.9g, expected %.9g\n", op,
               static_cast<long long>(i), got, want);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = int64_t(64) << 20;
  int reps = 5;
  for (int i = 1; i < argc; i++) {
    auto [arg, value, text] = bench::next_flag(argc, argv, i, usage, {"--n", "--reps"});
    if (arg == "--n")
      n = bench::int_flag(usage, argv[0], arg, value);
    else if (arg == "--reps")
      reps = static_cast<int>(std::min<int64_t>(bench::int_flag(usage, argv[0], arg, value), 1000));
    else
      usage(argv[0], "unknown argument '" + text + "'");
  }
  if (n % kRow != 0) usage(argv[0], "--n must be a multiple of " + std::to_string(kRow) + " (softmax rows)");

  const int threads = lazygrad::settings().threads;
  const double mib = static_cast<double>(n) * 4 / (1 << 20);
  std::printf("bench_elementwise: N = %lld float32 (%.1f MiB per array), %d threads, best of %d\n",
              static_cast<long long>(n), mib, threads, reps);
  std::printf("kernels: %s\n", lazygrad::cpu_kernel_compiler().c_str());
  double t_start = bench::now_s();

  // ---- the peer ----
  Array pa = alloc_array(n), pb = alloc_array(n), pc = alloc_array(n);
  run_split(threads, n, [&](int64_t b, int64_t e) {  // first touch on the threads that use the pages
    for (int64_t i = b; i < e; i++) {
      pa[i] = 0.0f;
      pb[i] = static_cast<float>(i % 1000) * 1e-3f;
      pc[i] = static_cast<float>(i % 997) * 1e-3f;
    }
  });
  const float s = 3.0f;
  double triad_s = best_of(reps, [&] {
    return run_split(threads, n, [&](int64_t b, int64_t e) { triad(pa.get(), pb.get(), pc.get(), s, b, e); });
  });
  for (int64_t i = 0; i < n; i += 4099) expect_close("peer triad", i, pa[i], pb[i] + s * pc[i], 0);
  double add_s = best_of(reps, [&] {
    return run_split(threads, n, [&](int64_t b, int64_t e) { add(pa.get(), pb.get(), pc.get(), b, e); });
  });
  for (int64_t i = 0; i < n; i += 4099) expect_close("peer add", i, pa[i], pb[i] + pc[i], 0);
  // What a realize() of a new expression does: it writes a new allocation. Above glibc's largest
  // mmap threshold (32 MiB) every such allocation is a fresh mmap, so its pages are faulted in (and
  // zeroed by the OS) inside the timed loop; below it, malloc may hand back pages already touched.
  double add_fresh_s = best_of(reps, [&] {
    Array out = alloc_array(n);
    double t = run_split(threads, n, [&](int64_t b, int64_t e) { add(out.get(), pb.get(), pc.get(), b, e); });
    return t;  // `out` is freed after the time was taken
  });
  pa.reset();
  pb.reset();
  pc.reset();

  // ---- lazygrad ----
  Tensor::manual_seed(0);
  Tensor a = Tensor::rand({n}), b = Tensor::rand({n}), c = Tensor::rand({n});
  lazygrad::realize({a, b, c});
  const std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>(), vc = c.to_vector<float>();
  const int64_t rows = n / kRow;
  Tensor x = a.reshape({rows, kRow});  // a view of a's buffer: no copy

  LgResult r_add = measure([&] { return a + b; }, reps,
                           [&](const Tensor& out) {
                             std::vector<float> v = out.to_vector<float>();
                             for (int64_t i = 0; i < n; i += 4099)
                               expect_close("add", i, v[i], va[i] + vb[i], 0);
                           });
  LgResult r_chain = measure([&] { return ((a * b + c).relu() - a).exp2(); }, reps,
                             [&](const Tensor& out) {
                               std::vector<float> v = out.to_vector<float>();
                               for (int64_t i = 0; i < n; i += 4099) {
                                 float t = std::max(va[i] * vb[i] + vc[i], 0.0f) - va[i];
                                 expect_close("chain", i, v[i], std::exp2(static_cast<double>(t)), 1e-6);
                               }
                             });
  LgResult r_softmax = measure([&] { return x.softmax(-1); }, reps,
                               [&](const Tensor& out) {
                                 std::vector<float> v = out.to_vector<float>();
                                 for (int64_t row = 0; row < rows; row += std::max<int64_t>(1, rows / 16)) {
                                   const float* in = va.data() + row * kRow;
                                   double m = *std::max_element(in, in + kRow), sum = 0;
                                   for (int64_t j = 0; j < kRow; j++) sum += std::exp(in[j] - m);
                                   for (int64_t j = 0; j < kRow; j++)
                                     expect_close("softmax", row * kRow + j, v[row * kRow + j],
                                                  std::exp(in[j] - m) / sum, 1e-5);
                                 }
                               });

  // ---- report ----
  auto gbs = [&](double bytes_per_elem, double seconds) {
    return bytes_per_elem * static_cast<double>(n) / seconds * 1e-9;
  };
  const double triad_gbs = gbs(12, triad_s);
  std::printf("\npeer, plain C++ on %d std::threads (compulsory bytes):\n", threads);
  std::printf("  triad a = b + s*c            %8.2f ms  %7.2f GB/s\n", triad_s * 1e3, triad_gbs);
  std::printf("  add   a = b + c              %8.2f ms  %7.2f GB/s\n", add_s * 1e3, gbs(12, add_s));
  std::printf(
      "  add   into a fresh buffer    %8.2f ms  %7.2f GB/s   (output allocated each time, as realize() "
      "does)\n",
      add_fresh_s * 1e3, gbs(12, add_fresh_s));

  struct Row {
    const char* name;
    double bytes;
    const LgResult* r;
  };
  const Row table[] = {
      {"add", 12, &r_add}, {"chain (5 ops)", 16, &r_chain}, {"softmax [N/1024,1024]", 8, &r_softmax}};
  std::printf("\nlazygrad vs peer (GB/s on compulsory bytes; ratio = lazygrad wall GB/s / triad GB/s):\n");
  std::printf("%-22s %6s %8s %9s %9s %12s %12s %10s %6s\n", "op", "B/elem", "kern/op", "wall ms", "kern ms",
              "lazygrad GB/s", "(kern only)", "triad GB/s", "ratio");
  for (const Row& row : table) {
    double wall_gbs = gbs(row.bytes, row.r->wall_s);
    std::printf("%-22s %6.0f %8lld %9.2f %9.2f %12.2f %12.2f %10.2f %6.2f\n", row.name, row.bytes,
                static_cast<long long>(row.r->kernels), row.r->wall_s * 1e3, row.r->kernel_s * 1e3, wall_gbs,
                gbs(row.bytes, row.r->kernel_s), triad_gbs, wall_gbs / triad_gbs);
  }
  std::printf(
      "\nfirst call (warm-up; compile ms is compiler time summed over kernels, 0 if all came from the disk "
      "cache):\n");
  for (const Row& row : table)
    std::printf("  %-22s %9.2f ms  compile %8.2f ms  (%lld compiled, %lld from disk cache)\n", row.name,
                row.r->first_s * 1e3, row.r->compile_s * 1e3, static_cast<long long>(row.r->compiled),
                static_cast<long long>(row.r->cache_hits));
  std::printf("\nlazygrad add vs plain add: %.2f (warm output), %.2f (fresh output); total run %.1f s\n",
              gbs(12, r_add.wall_s) / gbs(12, add_s), gbs(12, r_add.wall_s) / gbs(12, add_fresh_s),
              bench::now_s() - t_start);
  return 0;
}
