// Matrix-vector products y = x @ W with W [K, N] row-major (GPT-2's Conv1D layout, what its decode
// steps read), three ways, in GB/s of W read, on T threads:
//   lazygrad  x.matmul(W) as lazygrad runs it, every product of the pass in one Jit step (as a
//             decode step runs them): T partial sums over K / T rows each, the whole row of
//             outputs the tile (engine/schedule.cpp, row streams), then their sum
//   columns   column tiles by hand (what lazygrad compiled before row streams): each thread its
//             tiles of 128 columns down all K rows, a tile's rows 4N bytes apart, so each row gives
//             a tile 512 contiguous bytes (what the hardware prefetchers see)
//   rows      each thread its own range of k over all N columns, by hand: one contiguous stream
//             per thread, the partial sums in L1, added after; the threads meet once a pass, where
//             kernels meet after each product
// over enough matrices (--mib, by default twice the L3 and at least 448 MiB) that they come from
// memory, not the L3 (an Intel Xeon of these VMs reports 480 MiB of L3: 448 MiB of matrices read
// 34-38 GB/s there, above what a 1 GiB read gets, and 1.1 GiB of them 32); the best of --reps.
//
//   ./build/bench_matvec_orders [--threads T] [--mib M] [--reps R]
#include <lazygrad/lazygrad.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "codegen/cpu_model.h"

using namespace lazygrad;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(why.empty() ? stdout : stderr, "usage: %s [--threads T] [--mib M] [--reps R]\n", argv0);
  std::exit(why.empty() ? 0 : 2);
}

// 16 floats: the hand loops are AVX-512 code, as lazygrad's kernels are on these machines (main
// checks the CPU has it).
typedef float Vec __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16, kTile = 128;  // a column tile: 8 vectors, 8 accumulators

__attribute__((target("avx512f"))) Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((target("avx512f"))) void store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }

// Columns [c0, c0 + kTile) of y, down all K rows.
__attribute__((target("avx512f"))) void column_tile(const float* w, const float* x, float* y, int64_t K,
                                                    int64_t N, int64_t c0) {
  Vec acc[kTile / kLanes] = {};
  for (int64_t k = 0; k < K; k++) {
    const float* row = w + k * N + c0;
    for (int64_t u = 0; u < kTile / kLanes; u++) acc[u] += x[k] * load(row + u * kLanes);
  }
  for (int64_t u = 0; u < kTile / kLanes; u++) store(y + c0 + u * kLanes, acc[u]);
}

// Rows [k0, k1) (a multiple of 4 apart) over all N columns into partial (N floats, zeroed here),
// four rows a trip: one load and store of each partial sum per four of W.
__attribute__((target("avx512f"))) void row_range(const float* w, const float* x, float* partial, int64_t N,
                                                  int64_t k0, int64_t k1) {
  std::memset(partial, 0, static_cast<size_t>(N) * sizeof(float));
  for (int64_t k = k0; k < k1; k += 4) {
    const float* r = w + k * N;
    for (int64_t c = 0; c < N; c += kLanes)
      store(partial + c, load(partial + c) + x[k] * load(r + c) + x[k + 1] * load(r + N + c) +
                             x[k + 2] * load(r + 2 * N + c) + x[k + 3] * load(r + 3 * N + c));
  }
}

struct MatrixShape {
  int64_t K, N;
};

void measure(MatrixShape s, int threads, int64_t mib, int reps) {
  const int64_t count = std::max<int64_t>(1, (mib << 20) / (s.K * s.N * 4));
  const double bytes = static_cast<double>(count * s.K * s.N * 4);
  // lazygrad's matrices, and the same values in 64-byte aligned host memory for the hand loops.
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::vector<Tensor> ws;
  std::vector<std::unique_ptr<float, Free>> host;
  std::vector<const float*> w;
  const size_t matrix_bytes = static_cast<size_t>(s.K * s.N) * sizeof(float);
  for (int64_t i = 0; i < count; i++) {
    ws.push_back(Tensor::randn({s.K, s.N}).realize());
    // On huge pages where the kernel grants them, as lazygrad's CPU allocator asks for its blocks of
    // 2 MiB and more (runtime/cpu/cpu_device.cpp): both sides then read through the same pages.
    void* block = nullptr;
    if (::posix_memalign(&block, size_t(2) << 20, matrix_bytes) != 0)
      throw std::runtime_error("bench_matvec_orders: out of memory");
    (void)::madvise(block, matrix_bytes, MADV_HUGEPAGE);
    host.emplace_back(static_cast<float*>(block));
    std::vector<float> v = ws.back().to_vector<float>();
    std::memcpy(host.back().get(), v.data(), matrix_bytes);
    w.push_back(host.back().get());
  }
  Tensor xt = Tensor::randn({1, s.K}).realize();
  const std::vector<float> xv = xt.to_vector<float>();
  const float* x = xv.data();
  std::vector<float> y(static_cast<size_t>(s.N)), partials(static_cast<size_t>(count * threads * s.N));
  auto on_threads = [&](const std::function<void(int)>& fn) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; t++) pool.emplace_back(fn, t);
    fn(0);
    for (auto& th : pool) th.join();
  };
  Jit pass([&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    for (const Tensor& m : ws) out.push_back(in[0].matmul(m));
    return out;
  });
  double best[3] = {1e30, 1e30, 1e30};
  for (int rep = -2; rep <= reps; rep++) {  // the first three compile, capture and warm up
    double t0 = bench::now_s();
    pass({xt});
    double t1 = bench::now_s();
    on_threads([&](int t) {
      const int64_t tiles = s.N / kTile;
      for (int64_t i = 0; i < count; i++)
        for (int64_t c = tiles * t / threads; c < tiles * (t + 1) / threads; c++)
          column_tile(w[static_cast<size_t>(i)], x, y.data(), s.K, s.N, c * kTile);
    });
    double t2 = bench::now_s();
    on_threads([&](int t) {  // each thread its rows of every matrix, then the partials added
      const int64_t quads = s.K / 4;
      for (int64_t i = 0; i < count; i++)
        row_range(w[static_cast<size_t>(i)], x, partials.data() + (i * threads + t) * s.N, s.N,
                  quads * t / threads * 4, quads * (t + 1) / threads * 4);
    });
    for (int64_t i = 0; i < count; i++)
      for (int64_t c = 0; c < s.N; c++) {
        float sum = 0;
        for (int t = 0; t < threads; t++) sum += partials[static_cast<size_t>((i * threads + t) * s.N + c)];
        y[static_cast<size_t>(c)] = sum;
      }
    double t3 = bench::now_s();
    if (rep <= 0) continue;
    best[0] = std::min(best[0], t1 - t0);
    best[1] = std::min(best[1], t2 - t1);
    best[2] = std::min(best[2], t3 - t2);
  }
  std::printf(
      "[%lld, %lld] x %lld (%.0f MiB): lazygrad %.1f GB/s, columns %.1f GB/s, rows %.1f GB/s; "
      "lazygrad / rows %.2f\n",
      static_cast<long long>(s.K), static_cast<long long>(s.N), static_cast<long long>(count),
      bytes / (1 << 20), bytes / best[0] * 1e-9, bytes / best[1] * 1e-9, bytes / best[2] * 1e-9,
      best[2] / best[0]);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  int64_t mib = std::max<int64_t>(448, 2 * (host_cpu().l3_bytes >> 20));
  for (int i = 1; i < argc; i++) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--threads", "--mib", "--reps"});
    if (f.name == "--threads")
      threads = static_cast<int>(bench::int_flag(usage, argv[0], f.name, f.value));
    else if (f.name == "--mib")
      mib = bench::int_flag(usage, argv[0], f.name, f.value);
    else if (f.name == "--reps")
      reps = static_cast<int>(bench::int_flag(usage, argv[0], f.name, f.value));
    else
      usage(argv[0], "unknown argument '" + f.text + "'");
  }
  if (default_device().rfind("CPU", 0) != 0) {
    std::printf("skip: bench_matvec_orders measures the CPU (DEVICE=%s)\n", default_device().c_str());
    return 0;
  }
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("skip: the hand loops are AVX-512 code, and this CPU has no AVX-512\n");
    return 0;
  }
  set_threads(threads);
  std::printf("cpu: %s; %d threads, matrices of 2 MiB and more on transparent huge pages (MADV_HUGEPAGE)\n",
              bench::cpu_model().c_str(), threads);
  for (MatrixShape s :
       {MatrixShape{768, 3072}, MatrixShape{3072, 768}, MatrixShape{768, 2304}, MatrixShape{768, 768}})
    measure(s, threads, mib, reps);
}
