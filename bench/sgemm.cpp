// float32 matrix product C = A @ B: lazygrad (default heuristics and BEAM) against OpenBLAS and the
// machine's peak, in one process and one run.
//
//   ./build/bench_sgemm [--sizes 256,512,1024,2048] [--threads 1,2] [--reps K] [--no-beam] [--beam-max N]
//
// For each square size N and thread count T:
//   lazygrad   a.matmul(b).realize() with the default optimizer heuristics
//   BEAM       the same with lazygrad::set_beam(2): the first call searches (reported apart from the
//              timed runs, with the search's DEBUG=2 "beam:" line) and writes its choice to the kernel
//              cache folder, where a later run finds it (--beam-max: the largest N searched)
//   OpenBLAS   cblas_sgemm into a preallocated C, openblas_set_num_threads(T)
//   peak       lanes * 2 (an FMA is 2 FLOPs) * FMAs per cycle * clock * T, lanes and FMAs per cycle from
//              the machine model (codegen/cpu_model.h: 16 lanes with AVX-512; 2 full-width FMAs a cycle
//              on the Xeons, 1 on Zen 4, which runs 512-bit ops as two 256-bit halves)
// GFLOP/s counts 2 * N^3 FLOPs. Inputs come from Tensor::rand and are realized before timing. Each
// timed repetition builds a fresh lazy expression and realizes it (a new output buffer each time); one
// warm-up call first compiles the kernel or loads it from the disk cache; the best repetition is kept
// (a third as many for N >= 2048). lazygrad's result is compared with OpenBLAS's over all elements
// (max relative error, exit 1 above 1e-3).
//
// Debian's OpenBLAS 0.3.21 does not recognise some newer CPUs (this machine's AMD EPYC among them) and
// then silently runs generic kernels, so main() re-executes itself with OPENBLAS_CORETYPE=SKYLAKEX
// (its AVX-512 kernels) unless the variable is already set: OpenBLAS reads it when it is loaded,
// before main() runs. openblas_get_corename() is printed to show what it chose.
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "codegen/cpu_model.h"

#ifdef LAZYGRAD_HAVE_OPENBLAS
#include <cblas.h>
#endif

using lazygrad::GlobalCounters;
using lazygrad::Tensor;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "error: %s\n", error.c_str());
  std::fprintf(stderr,
               "usage: %s [--sizes LIST] [--threads LIST] [--reps K] [--no-beam] [--beam-max N]\n"
               "  --sizes     square sizes N, comma-separated (default 256,512,1024,2048)\n"
               "  --threads   thread counts, comma-separated (default 1,2)\n"
               "  --reps      timed repetitions, the best is reported (default 10; a third for N >= 2048)\n"
               "  --no-beam   skip the BEAM=2 runs\n"
               "  --beam-max  largest N to run BEAM on (default 1024: a cold search at 2048 takes minutes)\n",
               argv0);
  std::exit(error.empty() ? 0 : 2);
}

std::vector<int64_t> parse_list(const char* argv0, const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(bench::int_flag(usage, argv0, flag, item));
  if (out.empty()) usage(argv0, flag + " needs at least one value");
  return out;
}

// ---- the machine's peak ------------------------------------------------------------------------

struct Cpu {
  lazygrad::CpuModel model = lazygrad::host_cpu();  // vector width and FMA pipes (codegen/cpu_model.h)
  int lanes = static_cast<int>(model.vector_bytes / 4);
  double mhz = 0;
  std::string mhz_from = "unknown";
};

Cpu read_cpu() {
  Cpu c;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("cpu MHz", 0) == 0) {
      c.mhz = std::atof(line.substr(std::min(line.find(':') + 2, line.size())).c_str());
      c.mhz_from = "/proc/cpuinfo cpu MHz";
      break;
    }
  // The rated maximum, where the kernel exposes it, rather than a momentary reading.
  std::ifstream maxf("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (double khz = 0; maxf >> khz && khz > 0) {
    c.mhz = khz / 1000;
    c.mhz_from = "cpufreq cpuinfo_max_freq";
  }
  return c;
}

double peak_gflops(const Cpu& c, int threads) {
  return c.lanes * 2.0 * c.model.fmas_per_cycle * c.mhz * 1e-3 * threads;
}

// ---- lazygrad ----------------------------------------------------------------------------------

struct LgResult {
  double first_s = 0;        // wall time of the first call: search (BEAM), compile or load, run
  int64_t searches = 0;      // BEAM searches the first call ran (0: answered by the kernel cache)
  int64_t compiled = 0;      // compiler processes the first call ran (BEAM candidates included)
  double best_s = 0;         // best build + realize() time
  std::vector<float> value;  // the warm-up's result
  std::vector<std::string> searches_log;  // DEBUG=2 "beam:" lines of the first call
};

LgResult measure_lazygrad(const Tensor& a, const Tensor& b, int reps) {
  LgResult r;
  int64_t s0 = GlobalCounters::beam_searches, c0 = GlobalCounters::compile_count;
  Tensor first = a.matmul(b);
  double t0 = bench::now_s();
  r.searches_log = bench::debug2_lines([&] { first.realize(); }, "beam: ");
  r.first_s = bench::now_s() - t0;
  r.searches = GlobalCounters::beam_searches - s0;
  r.compiled = GlobalCounters::compile_count - c0;
  r.value = first.to_vector<float>();
  r.best_s = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; i++) {
    double t = bench::now_s();
    Tensor c = a.matmul(b);
    c.realize();
    r.best_s = std::min(r.best_s, bench::now_s() - t);
  }
  return r;
}

// The DEBUG=2 line of each kernel one more a.matmul(b) runs: its name, opts and time.
std::vector<std::string> kernel_lines(const Tensor& a, const Tensor& b) {
  return bench::debug2_lines([&] { a.matmul(b).realize(); }, "*** ");
}

[[maybe_unused]] double max_rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); i++) {
    double w = want[i], d = std::fabs(static_cast<double>(got[i]) - w);
    worst = std::max(worst, d / std::max(std::fabs(w), 1e-30));
  }
  return worst;
}

// Without OpenBLAS: the max relative error against a double-precision dot product, every 97th element.
[[maybe_unused]] double sampled_error(const std::vector<float>& a, const std::vector<float>& b, int64_t n,
                                      const std::vector<float>& got) {
  double worst = 0;
  for (int64_t e = 0; e < n * n; e += 97) {
    int64_t i = e / n, j = e % n;
    double s = 0;
    for (int64_t k = 0; k < n; k++) s += static_cast<double>(a[i * n + k]) * b[k * n + j];
    worst = std::max(worst, std::fabs(got[e] - s) / std::max(std::fabs(s), 1e-30));
  }
  return worst;
}

struct Row {
  int64_t n = 0;
  int threads = 0;
  LgResult lg, beam;
  bool beam_ran = false;
  double blas_s = 0;  // 0: no OpenBLAS
  double err_default = 0, err_beam = 0;
  std::vector<std::string> kernels, beam_kernels;
};

}  // namespace

int main(int argc, char** argv) {
#ifdef LAZYGRAD_HAVE_OPENBLAS
  // OpenBLAS reads OPENBLAS_CORETYPE when the library is loaded, so set it and start again.
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    setenv("OPENBLAS_CORETYPE", "SKYLAKEX", 1);
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "warning: re-exec with OPENBLAS_CORETYPE=SKYLAKEX failed: %s\n",
                 std::strerror(errno));
  }
#endif

  std::vector<int64_t> sizes = {256, 512, 1024, 2048}, thread_counts = {1, 2};
  int reps = 10;
  bool beam = true;
  int64_t beam_max = 1024;
  for (int i = 1; i < argc; i++) {
    auto [arg, value, text] =
        bench::next_flag(argc, argv, i, usage, {"--sizes", "--threads", "--reps", "--beam-max"});
    if (text == "--no-beam")
      beam = false;
    else if (arg == "--sizes")
      sizes = parse_list(argv[0], arg, value);
    else if (arg == "--threads")
      thread_counts = parse_list(argv[0], arg, value);
    else if (arg == "--reps")
      reps = static_cast<int>(std::min<int64_t>(bench::int_flag(usage, argv[0], arg, value), 1000));
    else if (arg == "--beam-max")
      beam_max = bench::int_flag(usage, argv[0], arg, value);
    else
      usage(argv[0], "unknown argument '" + text + "'");
  }

  const Cpu cpu = read_cpu();
  double t_start = bench::now_s();
  std::printf("bench_sgemm: float32 C = A @ B, square N, best of %d (of %d for N >= 2048)\n", reps,
              std::max(1, reps / 3));
  std::printf("cpu: %s, %u logical CPUs, %.0f MHz (%s)\n", cpu.model.describe().c_str(),
              std::thread::hardware_concurrency(), cpu.mhz, cpu.mhz_from.c_str());
  std::printf("peak: %d lanes * 2 FLOP/FMA * %d FMA/cycle * %.2f GHz = %.1f GFLOP/s per thread\n", cpu.lanes,
              cpu.model.fmas_per_cycle, cpu.mhz * 1e-3, peak_gflops(cpu, 1));
  std::printf("kernels: %s (cache %s)\n", lazygrad::cpu_kernel_compiler().c_str(),
              lazygrad::settings().cache_dir.c_str());
#ifdef LAZYGRAD_HAVE_OPENBLAS
  std::printf("OpenBLAS: %s, core %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_config(),
              openblas_get_corename(),
              std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "unset");
#else
  std::printf("OpenBLAS: not built in (libopenblas-dev was not found by CMake); checking sampled elements\n");
#endif
  std::printf("\n");
  std::fflush(stdout);

  std::vector<Row> rows;
  for (int64_t threads : thread_counts) {
    lazygrad::set_threads(static_cast<int>(threads));
#ifdef LAZYGRAD_HAVE_OPENBLAS
    openblas_set_num_threads(static_cast<int>(threads));
#endif
    for (int64_t n : sizes) {
      Row row;
      row.n = n;
      row.threads = static_cast<int>(threads);
      const int r = n >= 2048 ? std::max(1, reps / 3) : reps;
      lazygrad::set_beam(0);  // the inputs' random kernels are not what is measured
      Tensor::manual_seed(0);
      Tensor a = Tensor::rand({n, n}), b = Tensor::rand({n, n});
      lazygrad::realize({a, b});
      const std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>();

      row.lg = measure_lazygrad(a, b, r);
      row.kernels = kernel_lines(a, b);
      if (beam && n <= beam_max) {
        lazygrad::set_beam(2);
        row.beam = measure_lazygrad(a, b, r);
        row.beam_kernels = kernel_lines(a, b);
        row.beam_ran = true;
        lazygrad::set_beam(0);
      }

      std::vector<float> want;
#ifdef LAZYGRAD_HAVE_OPENBLAS
      want.assign(static_cast<size_t>(n * n), 0.0f);
      auto sgemm = [&] {
        double t = bench::now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(n),
                    static_cast<int>(n), 1.0f, va.data(), static_cast<int>(n), vb.data(), static_cast<int>(n),
                    0.0f, want.data(), static_cast<int>(n));
        return bench::now_s() - t;
      };
      sgemm();  // warm-up: OpenBLAS's buffers and threads
      row.blas_s = std::numeric_limits<double>::infinity();
      for (int i = 0; i < r; i++) row.blas_s = std::min(row.blas_s, sgemm());
      // OpenBLAS's idle threads keep polling for a while after a call (THREAD_TIMEOUT in its
      // blas_server.c) before they sleep: let them, before lazygrad is timed again.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      row.err_default = max_rel_error(row.lg.value, want);
      if (row.beam_ran) row.err_beam = max_rel_error(row.beam.value, want);
#else
      row.err_default = sampled_error(va, vb, n, row.lg.value);
      if (row.beam_ran) row.err_beam = sampled_error(va, vb, n, row.beam.value);
#endif
      row.lg.value.clear();
      row.beam.value.clear();
      std::printf("N=%lld T=%d: lazygrad %.2f ms", static_cast<long long>(n), row.threads,
                  row.lg.best_s * 1e3);
      if (row.beam_ran) std::printf(", BEAM %.2f ms", row.beam.best_s * 1e3);
      if (row.blas_s > 0) std::printf(", OpenBLAS %.2f ms", row.blas_s * 1e3);
      std::printf(" (%.1f s so far)\n", bench::now_s() - t_start);
      std::fflush(stdout);
      rows.push_back(std::move(row));
      if (std::max(rows.back().err_default, rows.back().err_beam) > 1e-3) {
        std::fprintf(stderr, "error: N=%lld T=%d: lazygrad differs from the reference: max rel error %.3g\n",
                     static_cast<long long>(n), static_cast<int>(threads),
                     std::max(rows.back().err_default, rows.back().err_beam));
        return 1;
      }
    }
  }

  // ---- report ----
  auto gflops = [](int64_t n, double s) { return 2.0 * static_cast<double>(n * n) * n / s * 1e-9; };
  std::printf(
      "\nGFLOP/s (2 N^3 / best time); %%peak = of the assumed peak; ratio = lazygrad GFLOP/s / OpenBLAS "
      "GFLOP/s\n");
  std::printf("%5s %2s %9s %9s %9s %8s %6s %6s %6s %7s %7s %9s\n", "N", "T", "lazygrad", "BEAM", "OpenBLAS",
              "peak", "%lg", "%beam", "%blas", "lg/blas", "bm/blas", "max rel");
  for (const Row& row : rows) {
    double lg = gflops(row.n, row.lg.best_s), peak = peak_gflops(cpu, row.threads);
    double bm = row.beam_ran ? gflops(row.n, row.beam.best_s) : 0;
    double bl = row.blas_s > 0 ? gflops(row.n, row.blas_s) : 0;
    auto cell = [](double v, const char* fmt) {
      if (v <= 0) return std::string("-");
      char buf[32];
      std::snprintf(buf, sizeof buf, fmt, v);
      return std::string(buf);
    };
    std::printf("%5lld %2d %9.2f %9s %9s %8.1f %6.1f %6s %6s %7s %7s %9.2e\n", static_cast<long long>(row.n),
                row.threads, lg, cell(bm, "%.2f").c_str(), cell(bl, "%.2f").c_str(), peak, 100 * lg / peak,
                cell(100 * bm / peak, "%.1f").c_str(), cell(100 * bl / peak, "%.1f").c_str(),
                cell(bl > 0 ? lg / bl : 0, "%.2f").c_str(), cell(bl > 0 ? bm / bl : 0, "%.2f").c_str(),
                std::max(row.err_default, row.err_beam));
  }

  std::printf(
      "\nfirst call (warm-up): lazygrad compiles or loads its kernel; BEAM searches, unless the kernel cache "
      "has its choice\n");
  for (const Row& row : rows) {
    std::printf("  N=%-5lld T=%d  lazygrad %8.1f ms (%lld compiled)", static_cast<long long>(row.n),
                row.threads, row.lg.first_s * 1e3, static_cast<long long>(row.lg.compiled));
    if (row.beam_ran)
      std::printf("   BEAM first call %7.2f s (%lld searches, %lld compiles)", row.beam.first_s,
                  static_cast<long long>(row.beam.searches), static_cast<long long>(row.beam.compiled));
    std::printf("\n");
    for (const std::string& line : row.beam.searches_log) std::printf("      %s\n", line.c_str());
  }

  std::printf("\nkernels (DEBUG=2 line of one more run):\n");
  for (const Row& row : rows) {
    for (const std::string& k : row.kernels)
      std::printf("  N=%-5lld T=%d default  %s\n", static_cast<long long>(row.n), row.threads, k.c_str());
    for (const std::string& k : row.beam_kernels)
      std::printf("  N=%-5lld T=%d BEAM     %s\n", static_cast<long long>(row.n), row.threads, k.c_str());
  }
  std::printf("\ntotal run %.1f s\n", bench::now_s() - t_start);
  return 0;
}
