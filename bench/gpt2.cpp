// GPT-2 inference, batch 1, float32: prompt tokens/s and decode tokens/s against the same model in
// PyTorch measured in the same run, and decode against the memory-bandwidth bound.
//
//   ./build/bench_gpt2 [--threads T] [--prompt N] [--decode K] [--reps R] [--size gpt2|medium|large|xl]
//                      [--no-torch]
//
// lazygrad: models/gpt2.h with random weights (speed does not depend on them).
//   prompt  model.forward(tokens [1, N], 0): all N positions' logits, as HF's forward computes them,
//           with the KV cache filled; the best of R after a warm-up (the kernels are compiled then).
//   prefill the same with the last position's logits only (logits_to_keep 1), as generation runs a
//           prompt (models/generate.h, and HF's generate).
//   first prefill  the same as the process's first forward, before any warm-up, as `lazygrad
//           generate` runs its prompt: scheduling, and each kernel rendered and loaded from the disk
//           cache (compiled on a first run, which the line says).
//   decode  model.decode_step under a Jit, as models/generate.h runs it (the token and position are
//           Variables, the attention covers a 128-position window of the cache): the mean time of K
//           steps after the prompt, logits copied to the host and argmax taken each step; the best
//           of R runs, after one run that captures the Jit.
// PyTorch: scripts/bench_gpt2_torch.py, HF's GPT2LMHeadModel written out in torch with HF's
// growing KV cache, run by Debian's /usr/bin/python3 with the same thread count and Debian's
// OpenBLAS (bench::torch_env: torch's matrix products go through libblas.so.3, which the system's
// alternatives may point at the slow reference BLAS).
// Bound: the bytes a decode step must read (every weight once, less the unused rows of the position
// embedding; the token embedding is the LM head, read whole; plus the window of the KV cache) over the read
// bandwidth measured here (the best of STREAM-like read kernels, scalar, AVX2 and AVX-512, on 1 and T
// threads summing a 1 GiB array, on 4 KiB and on huge pages; on a GPU, DEVICE=CUDA, lazygrad's x + 1 over 1
// GiB there, reading and writing).
#include "../models/gpt2.h"

#include <lazygrad/lazygrad.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "runtime/device.h"

using namespace lazygrad;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(why.empty() ? stdout : stderr,
               "usage: %s [--threads T] [--prompt N] [--decode K] [--reps R] [--size gpt2|medium|large|xl] "
               "[--no-torch]\n"
               "  --threads  worker threads, ours and PyTorch's (default: hardware threads)\n"
               "  --prompt   prompt tokens (default 128)\n"
               "  --decode   decode steps timed per run (default 32)\n"
               "  --reps     runs; the best counts (default 3)\n"
               "  --size     GPT-2 size (default gpt2, the 124M model)\n"
               "  --no-torch skip the PyTorch peer\n",
               argv0);
  std::exit(why.empty() ? 0 : 2);
}

// STREAM-like read kernels: each sums n uint32 (n a multiple of 128). The bound's bandwidth is the
// best of them over thread counts, so that "x times the bound" is against what this machine can read,
// not against one way of reading it.
// A plain loop (GCC does not vectorize it at -O2: one scalar load a cycle at best).
uint32_t sum_scalar(const uint32_t* a, int64_t n) {
  uint32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t i = 0; i < n; i += 4) s0 += a[i], s1 += a[i + 1], s2 += a[i + 2], s3 += a[i + 3];
  return s0 + s1 + s2 + s3;
}

// W-byte vectors with K accumulators, so that the loads, not the adds, are the limit.
template <int W, int K>
uint32_t sum_vectors(const uint32_t* a, int64_t n) {
  typedef uint32_t vec __attribute__((vector_size(W)));
  constexpr int lanes = W / 4;
  vec acc[K] = {};
  for (int64_t i = 0; i < n; i += lanes * K)
    for (int k = 0; k < K; k++) {
      vec v;
      std::memcpy(&v, a + i + lanes * k, sizeof v);
      acc[k] += v;
    }
  uint32_t s = 0;
  for (int k = 0; k < K; k++)
    for (int l = 0; l < lanes; l++) s += acc[k][l];
  return s;
}
__attribute__((target("avx2"))) uint32_t sum_avx2(const uint32_t* a, int64_t n) {
  return sum_vectors<32, 4>(a, n);
}
__attribute__((target("avx512f"))) uint32_t sum_avx512(const uint32_t* a, int64_t n) {
  return sum_vectors<64, 8>(a, n);
}

// Read bandwidth: each read kernel the CPU can run, on 1 thread and on `threads` threads summing
// disjoint parts of a 1 GiB array, on 4 KiB pages and on huge pages (fewer TLB misses: the best the
// machine reads, whichever pages a model's weights have), the best of 5 passes each; prints them and
// returns the best, in GB/s.
double read_bandwidth_gbs(int threads) {
  const int64_t n = (int64_t(1) << 30) / 4;
  const size_t bytes = static_cast<size_t>(n) * 4, huge = size_t(2) << 20;
  struct Free {
    void operator()(uint32_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint32_t, Free> small_pages(static_cast<uint32_t*>(std::aligned_alloc(4096, bytes)));
  std::unique_ptr<uint32_t, Free> huge_pages(static_cast<uint32_t*>(std::aligned_alloc(huge, bytes)));
  if (!small_pages || !huge_pages) throw std::runtime_error("read_bandwidth_gbs: out of memory");
  (void)::madvise(small_pages.get(), bytes, MADV_NOHUGEPAGE);
  (void)::madvise(huge_pages.get(), bytes, MADV_HUGEPAGE);
  for (uint32_t* a : {small_pages.get(), huge_pages.get()})
    for (int64_t i = 0; i < n; i++) a[i] = static_cast<uint32_t>(i);
  struct Kernel {
    const char* name;
    uint32_t (*fn)(const uint32_t*, int64_t);
    bool runs;
  };
  __builtin_cpu_init();
  const Kernel kernels[] = {
      {"scalar", sum_scalar, true},
      {"avx2 4x256", sum_avx2, static_cast<bool>(__builtin_cpu_supports("avx2"))},
      {"avx512 8x512", sum_avx512, static_cast<bool>(__builtin_cpu_supports("avx512f"))}};
  std::vector<int> counts{1};
  if (threads > 1) counts.push_back(threads);
  double best_gbs = 0;
  std::vector<uint32_t> sums(threads);
  uint32_t total = 0;
  std::printf("read bandwidth (GB/s, best of 5 passes over 1 GiB; 4 KiB pages | huge pages):");
  for (const Kernel& k : kernels) {
    if (!k.runs) continue;
    for (int t_count : counts) {
      std::printf(" %s %dt", k.name, t_count);
      for (const uint32_t* a : {small_pages.get(), huge_pages.get()}) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
          double t0 = bench::now_s();
          std::vector<std::thread> pool;
          for (int t = 0; t < t_count; t++)
            pool.emplace_back([&, t] {
              const int64_t b = n / 128 * t / t_count * 128, e = n / 128 * (t + 1) / t_count * 128;
              sums[t] = k.fn(a + b, e - b);
            });
          for (auto& th : pool) th.join();
          best = std::min(best, bench::now_s() - t0);
          for (int t = 0; t < t_count; t++) total += sums[t];
        }
        const double gbs = static_cast<double>(bytes) / best * 1e-9;
        std::printf(a == small_pages.get() ? " %.1f" : " | %.1f;", gbs);
        best_gbs = std::max(best_gbs, gbs);
      }
    }
  }
  std::printf(" best %.1f\n", best_gbs);
  if (total == 12345) std::printf(" ");  // keeps the sums alive
  return best_gbs;
}

// The same on lazygrad's default device when it is not the CPU (a GPU): (x + 1) over a 1 GiB float
// tensor, 2 GiB read and written, the device's queue drained; the best of 5, in GB/s. (A sum to one
// value would run as one work-group there, far below the memory's speed.)
double device_bandwidth_gbs() {
  const int64_t n = (int64_t(1) << 30) / 4;
  Tensor x = Tensor::ones({n}).realize();
  Device& gpu = device(default_device());
  double best = 1e30;
  for (int rep = 0; rep < 6; rep++) {  // the first compiles
    double t0 = bench::now_s();
    Tensor y = (x + 1).realize();
    gpu.synchronize();
    if (rep > 0) best = std::min(best, bench::now_s() - t0);
  }
  return 2.0 * static_cast<double>(n) * 4 / best * 1e-9;
}

struct TorchResult {
  bool ok = false;
  std::string header, message;
  double prompt_s = 0, prefill_s = 0, decode_s = 0;
};

TorchResult run_torch(const models::GPT2Config& c, int threads, int64_t prompt, int64_t decode, int reps) {
  TorchResult r;
  std::ostringstream args;
  args << " --layers " << c.n_layer << " --heads " << c.n_head << " --embd " << c.n_embd << " --vocab "
       << c.vocab_size << " --positions " << c.n_positions << " --prompt " << prompt << " --decode " << decode
       << " --reps " << reps;
  bench::run_torch_script(LAZYGRAD_SOURCE_DIR, "bench_gpt2_torch.py", threads, args.str(), r,
                          [&](const std::string& word, std::istringstream& in) {
                            double ms = 0;
                            if (word == "prompt_ms" && in >> ms)
                              r.prompt_s = ms * 1e-3;
                            else if (word == "prefill_ms" && in >> ms)
                              r.prefill_s = ms * 1e-3;
                            else if (word == "decode_ms" && in >> ms)
                              r.decode_s = ms * 1e-3, r.ok = true;
                          });
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t prompt = 128, decode = 32, reps = 3;
  std::string size = "gpt2";
  bool torch = true;
  for (int i = 1; i < argc; i++) {
    bench::Flag f =
        bench::next_flag(argc, argv, i, usage, {"--threads", "--prompt", "--decode", "--reps", "--size"});
    if (f.name == "--threads")
      threads = static_cast<int>(bench::int_flag(usage, argv[0], f.name, f.value));
    else if (f.name == "--prompt")
      prompt = bench::int_flag(usage, argv[0], f.name, f.value);
    else if (f.name == "--decode")
      decode = bench::int_flag(usage, argv[0], f.name, f.value);
    else if (f.name == "--reps")
      reps = bench::int_flag(usage, argv[0], f.name, f.value);
    else if (f.name == "--size")
      size = f.value;
    else if (f.name == "--no-torch")
      torch = false;
    else
      usage(argv[0], "unknown argument '" + f.text + "'");
  }
  models::GPT2Config config;
  if (size == "gpt2")
    config = models::GPT2Config::gpt2();
  else if (size == "medium")
    config = models::GPT2Config::gpt2_medium();
  else if (size == "large")
    config = models::GPT2Config::gpt2_large();
  else if (size == "xl")
    config = models::GPT2Config::gpt2_xl();
  else
    usage(argv[0], "unknown --size '" + size + "'");
  if (prompt + decode + 2 > config.n_positions)
    usage(argv[0], "--prompt + --decode must stay below n_positions");
  set_threads(threads);
  if (!bench::default_device_here()) return 0;

  std::printf(
      "GPT-2 %s (n_layer %lld, n_embd %lld), batch 1, float32, %d threads; prompt %lld tokens, %lld decode "
      "steps, best of %lld\n",
      size.c_str(), static_cast<long long>(config.n_layer), static_cast<long long>(config.n_embd), threads,
      static_cast<long long>(prompt), static_cast<long long>(decode), static_cast<long long>(reps));
  const bool on_cpu = default_device() == "CPU";
  const double bw = on_cpu ? read_bandwidth_gbs(threads) : device_bandwidth_gbs();
  if (!on_cpu) std::printf("device %s\n", default_device().c_str());

  NoGrad no_grad;
  models::GPT2 model(config);
  int64_t weight_bytes = 0;
  for (const auto& [name, t] : model.ordered_state_dict()) weight_bytes += t.numel() * 4;
  realize(model.parameters());

  std::vector<int64_t> ids(prompt);
  for (int64_t i = 0; i < prompt; i++) ids[i] = (i * 7919) % config.vocab_size;
  Tensor tokens = Tensor::from_vector(ids, {1, prompt}).realize();
  Variable token(0, kInt64), pos(0, kInt64);
  const int64_t window = std::min(config.n_positions, (prompt / 128 + 1) * 128);
  Jit step(
      [&](const std::vector<Tensor>&) { return std::vector<Tensor>{model.decode_step(token, pos, window)}; });
  // The path `lazygrad generate` takes: its prompt is the process's first forward (scheduling, each
  // kernel rendered and loaded from the disk cache, or compiled on a first run), not a warm one.
  const int64_t compiles0 = GlobalCounters::compile_count;
  double t_first = bench::now_s();
  model.forward(tokens, 0, /*logits_to_keep=*/1).to_vector<float>();
  const double first_prefill_s = bench::now_s() - t_first;
  const int64_t first_compiles = GlobalCounters::compile_count - compiles0;
  double best_prompt = 1e30, best_prefill = 1e30, best_decode = 1e30;
  for (int64_t rep = -1; rep < reps; rep++) {  // rep -1 warms up: compiles, and captures the Jit
    double t0 = bench::now_s();
    model.forward(tokens, 0).to_vector<float>();
    const double prompt_s = bench::now_s() - t0;
    t0 = bench::now_s();
    std::vector<float> last = model.forward(tokens, 0, /*logits_to_keep=*/1).to_vector<float>();
    const double prefill_s = bench::now_s() - t0;
    const int64_t steps = rep < 0 ? 2 : decode;
    t0 = bench::now_s();
    for (int64_t s = 0; s < steps; s++) {
      token.set(static_cast<double>(std::max_element(last.begin(), last.end()) - last.begin()));
      pos.set(static_cast<double>(prompt + s));
      last = step({})[0].to_vector<float>();
    }
    const double decode_s = (bench::now_s() - t0) / static_cast<double>(steps);
    if (rep >= 0) {
      best_prompt = std::min(best_prompt, prompt_s);
      best_prefill = std::min(best_prefill, prefill_s);
      best_decode = std::min(best_decode, decode_s);
    }
  }
  const int64_t read_bytes = weight_bytes - (config.n_positions - 1) * config.n_embd * 4 +
                             2 * config.n_layer * window * config.n_embd * 4;
  const double bound_s = static_cast<double>(read_bytes) / (bw * 1e9);

  std::printf(
      "read bandwidth %.1f GB/s; a decode step reads %.1f MB (weights and a %lld-position KV window): bound "
      "%.2f ms/token\n",
      bw, read_bytes * 1e-6, static_cast<long long>(window), bound_s * 1e3);
  std::printf("\n%-10s %14s %14s %14s\n", "", "prompt tok/s", "prefill tok/s", "decode tok/s");
  std::printf("%-10s %14.1f %14.1f %14.1f\n", "lazygrad", prompt / best_prompt, prompt / best_prefill,
              1 / best_decode);
  if (torch) {
    TorchResult t = run_torch(config, threads, prompt, decode, static_cast<int>(reps));
    if (!t.ok) {
      std::printf("PyTorch: skipped (%s)\n", t.message.c_str());
    } else {
      std::printf("%-10s %14.1f %14.1f %14.1f   (%s)\n", "PyTorch", prompt / t.prompt_s, prompt / t.prefill_s,
                  1 / t.decode_s, t.header.c_str());
      std::printf("%-10s %14.2f %14.2f %14.2f   (lazygrad tok/s over PyTorch's)\n", "ratio",
                  t.prompt_s / best_prompt, t.prefill_s / best_prefill, t.decode_s / best_decode);
    }
  }
  std::printf(
      "first prefill (the process's first forward, as `lazygrad generate` runs a prompt): %.1f tok/s, "
      "%lld kernels compiled%s\n",
      prompt / first_prefill_s, static_cast<long long>(first_compiles),
      first_compiles ? " (a first run: run again for the cached figure)" : ", all from the disk cache");
  std::printf("decode vs bound: %.2f ms/token against the bound's %.2f ms: %.2f times the bound's time\n",
              best_decode * 1e3, bound_s * 1e3, best_decode / bound_s);
  return 0;
}
