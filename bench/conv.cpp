// conv2d forward and backward: lazygrad against PyTorch (a subprocess) on LeNet- and ResNet-like shapes.
//
//   ./build/bench_conv [--reps K] [--threads T] [--cases LIST] [--no-torch]
//
// Cases (no bias, stride 1, float32, inputs from rand in [0, 1)):
//   lenet1    batch 128,   1 ->  32 channels, 5x5, 28x28, no padding (-> 24x24)
//   lenet2    batch 128,  32 ->  64 channels, 5x5, 12x12, no padding (-> 8x8)
//   resnet1   batch 32,   64 ->  64 channels, 3x3, 56x56, padding 1
//   resnet2   batch 32,  128 -> 128 channels, 3x3, 28x28, padding 1
// fwd is out = x.conv2d(w) realized; bwd is out.backward(g) with g an upstream gradient from rand
// (realized first, as a training step's gradient would be), and x.grad() and w.grad() realized (the
// output itself is not needed for them, so it is not computed). Not out.sum().backward(): a constant
// gradient lets lazygrad fold the ones into the gradient kernels, which PyTorch does not. GFLOP/s
// counts 2 * N * C_out * C_in * K^2 * OH * OW FLOPs for fwd and twice that for bwd (the input and the
// weight gradient). Each pass runs once to warm up (compile, or load from the disk cache; its DEBUG=2
// kernel lines are kept), then K times, each building a fresh lazy graph; the best time is kept. The
// kernel count is the GlobalCounters::kernel_count delta of one repetition. Sampled elements of the
// output and both gradients are checked against a double-precision sum computed here.
//
// The peer is PyTorch, run per case as a subprocess, scripts/bench_conv_torch.py under Debian's
// /usr/bin/python3 (python3-torch) with the same thread count (torch.set_num_threads, OMP_NUM_THREADS,
// OPENBLAS_NUM_THREADS), OMP_WAIT_POLICY=PASSIVE (its OpenMP threads sleep instead of spinning while
// this process runs) and OPENBLAS_CORETYPE=SKYLAKEX (Debian's OpenBLAS does not recognise every newer
// CPU). It times F.conv2d and out.backward(g) the same way, with g from torch.rand; the cases alternate
// between the two so a change in the machine's load hits both. Without torch the PyTorch columns are left
// empty.
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"

#ifndef LAZYGRAD_SOURCE_DIR
#define LAZYGRAD_SOURCE_DIR "."
#endif

using lazygrad::GlobalCounters;
using lazygrad::Tensor;

namespace {

struct Case {
  std::string name;
  int64_t batch, cin, cout, k, size, pad;
  int64_t out_size() const { return size + 2 * pad - k + 1; }
  double fwd_flops() const {
    return 2.0 * static_cast<double>(batch * cout * cin * k * k) *
           static_cast<double>(out_size() * out_size());
  }
  std::string spec() const {
    std::ostringstream s;
    s << name << ":" << batch << ":" << cin << ":" << cout << ":" << k << ":" << size << ":" << pad;
    return s.str();
  }
  std::string shape() const {
    std::ostringstream s;
    s << batch << "x" << cin << "x" << size << "x" << size << " * " << cout << "x" << cin << "x" << k << "x"
      << k;
    if (pad) s << " p" << pad;
    return s.str();
  }
};

const std::vector<Case> kCases = {
    {"lenet1", 128, 1, 32, 5, 28, 0},
    {"lenet2", 128, 32, 64, 5, 12, 0},
    {"resnet1", 32, 64, 64, 3, 56, 1},
    {"resnet2", 32, 128, 128, 3, 28, 1},
};

[[noreturn]] void usage(const char* argv0, const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "error: %s\n", error.c_str());
  std::fprintf(stderr,
               "usage: %s [--reps K] [--threads T] [--cases LIST] [--no-torch]\n"
               "  --reps      timed repetitions per pass, the best is reported (default 3)\n"
               "  --threads   threads for lazygrad and PyTorch (default: THREADS, else the core count)\n"
               "  --cases     comma-separated subset of lenet1,lenet2,resnet1,resnet2 (default all)\n"
               "  --no-torch  skip the PyTorch peer\n",
               argv0);
  std::exit(error.empty() ? 0 : 2);
}

struct Pass {
  double first_s = 0;  // warm-up: build, compile or load, run
  int64_t compiled = 0;
  double best_s = std::numeric_limits<double>::infinity();
  int64_t kernels = 0;
  std::vector<std::string> kernel_lines;  // DEBUG=2, from the warm-up
};

// Warms up (keeping its DEBUG=2 lines), then times `reps` runs; `run` builds and realizes one pass.
Pass measure(const std::function<void()>& run, int reps) {
  Pass p;
  int64_t c0 = GlobalCounters::compile_count;
  double t0 = bench::now_s();
  p.kernel_lines = bench::debug2_lines(run);
  p.first_s = bench::now_s() - t0;
  p.compiled = GlobalCounters::compile_count - c0;
  for (int i = 0; i < reps; i++) {
    int64_t k0 = GlobalCounters::kernel_count;
    double t = bench::now_s();
    run();
    p.best_s = std::min(p.best_s, bench::now_s() - t);
    p.kernels = GlobalCounters::kernel_count - k0;
  }
  return p;
}

// Double-precision references for sampled elements; returns the max relative error.
struct Checker {
  const Case& c;
  const std::vector<float>& x;  // [batch, cin, size, size]
  const std::vector<float>& w;  // [cout, cin, k, k]
  const std::vector<float>& g;  // [batch, cout, o, o]: the upstream gradient
  double gv(int64_t n, int64_t co, int64_t oh, int64_t ow) const {
    int64_t o = c.out_size();
    return g[((n * c.cout + co) * o + oh) * o + ow];
  }
  float xv(int64_t n, int64_t ci, int64_t ih, int64_t iw) const {
    if (ih < 0 || iw < 0 || ih >= c.size || iw >= c.size) return 0;
    return x[((n * c.cin + ci) * c.size + ih) * c.size + iw];
  }
  double out(int64_t e) const {  // out[n, co, oh, ow]
    int64_t o = c.out_size(), ow = e % o, oh = e / o % o, co = e / (o * o) % c.cout, n = e / (o * o * c.cout);
    double s = 0;
    for (int64_t ci = 0; ci < c.cin; ci++)
      for (int64_t kh = 0; kh < c.k; kh++)
        for (int64_t kw = 0; kw < c.k; kw++)
          s += static_cast<double>(xv(n, ci, oh + kh - c.pad, ow + kw - c.pad)) *
               w[((co * c.cin + ci) * c.k + kh) * c.k + kw];
    return s;
  }
  double dx(int64_t e) const {  // d <g, out> / d x[n, ci, ih, iw]: the windows that cover it
    int64_t iw = e % c.size, ih = e / c.size % c.size, ci = e / (c.size * c.size) % c.cin, o = c.out_size(),
            n = e / (c.size * c.size * c.cin);
    double s = 0;
    for (int64_t co = 0; co < c.cout; co++)
      for (int64_t kh = 0; kh < c.k; kh++)
        for (int64_t kw = 0; kw < c.k; kw++) {
          int64_t oh = ih + c.pad - kh, ow = iw + c.pad - kw;
          if (oh >= 0 && ow >= 0 && oh < o && ow < o)
            s += w[((co * c.cin + ci) * c.k + kh) * c.k + kw] * gv(n, co, oh, ow);
        }
    return s;
  }
  double dw(int64_t e) const {  // d <g, out> / d w[co, ci, kh, kw]: the inputs it multiplies
    int64_t kw = e % c.k, kh = e / c.k % c.k, ci = e / (c.k * c.k) % c.cin, o = c.out_size(),
            co = e / (c.k * c.k * c.cin);
    double s = 0;
    for (int64_t n = 0; n < c.batch; n++)
      for (int64_t oh = 0; oh < o; oh++)
        for (int64_t ow = 0; ow < o; ow++)
          s += xv(n, ci, oh + kh - c.pad, ow + kw - c.pad) * gv(n, co, oh, ow);
    return s;
  }
};

double max_rel_error(const std::vector<float>& got, const std::function<double(int64_t)>& want) {
  const int64_t samples = 64, step = std::max<int64_t>(1, static_cast<int64_t>(got.size()) / samples) | 1;
  double worst = 0;
  for (int64_t e = 0; e < static_cast<int64_t>(got.size()); e += step) {
    double w = want(e);
    worst = std::max(worst, std::fabs(got[e] - w) / std::max(std::fabs(w), 1e-6));
  }
  return worst;
}

struct TorchResult {
  bool ok = false;
  std::string header, path, message;
  double fwd_s = 0, bwd_s = 0, first_s = 0;
};

TorchResult run_torch(const Case& c, int threads, int reps) {
  TorchResult r;
  bench::run_torch_script(
      LAZYGRAD_SOURCE_DIR, "bench_conv_torch.py", threads, " --reps " + std::to_string(reps) + " " + c.spec(),
      r, [&](const std::string& word, std::istringstream& in) {
        if (word == "path") {
          std::string name;
          in >> name >> r.path;
        } else if (word == "case") {
          std::string name, k1, k2, k3;
          double fwd = 0, bwd = 0, first = 0;
          if (in >> name >> k1 >> fwd >> k2 >> bwd >> k3 >> first && k1 == "fwd_ms" && k2 == "bwd_ms") {
            r.fwd_s = fwd * 1e-3;
            r.bwd_s = bwd * 1e-3;
            r.first_s = first * 1e-3;
            r.ok = true;
          }
        }
      });
  return r;
}

struct Result {
  const Case* c;
  Pass fwd, bwd;
  double err_out = 0, err_dx = 0, err_dw = 0;
  TorchResult torch;
};

}  // namespace

int main(int argc, char** argv) {
  int reps = 3, threads = lazygrad::settings().threads;
  bool torch = true;
  std::vector<const Case*> cases;
  for (int i = 1; i < argc; i++) {
    auto [arg, value, text] = bench::next_flag(argc, argv, i, usage, {"--reps", "--threads", "--cases"});
    if (text == "--no-torch") {
      torch = false;
    } else if (arg == "--reps") {
      reps = static_cast<int>(std::min<int64_t>(bench::int_flag(usage, argv[0], arg, value), 1000));
    } else if (arg == "--threads") {
      threads = static_cast<int>(std::min<int64_t>(bench::int_flag(usage, argv[0], arg, value), 1024));
    } else if (arg == "--cases") {
      std::stringstream in(value);
      for (std::string name; std::getline(in, name, ',');) {
        auto it = std::find_if(kCases.begin(), kCases.end(), [&](const Case& c) { return c.name == name; });
        if (it == kCases.end()) usage(argv[0], "unknown case '" + name + "'");
        cases.push_back(&*it);
      }
    } else {
      usage(argv[0], "unknown argument '" + text + "'");
    }
  }
  if (cases.empty())
    for (const Case& c : kCases) cases.push_back(&c);
  lazygrad::set_threads(threads);

  double t_start = bench::now_s();
  std::printf("bench_conv: conv2d float32, no bias, stride 1; %d threads, best of %d\n", threads, reps);
  std::printf("kernels: %s\n", lazygrad::cpu_kernel_compiler().c_str());
  std::fflush(stdout);

  std::vector<Result> results;
  std::string torch_header, torch_skip;
  for (const Case* c : cases) {
    Result r;
    r.c = c;
    Tensor::manual_seed(0);
    Tensor x = Tensor::rand({c->batch, c->cin, c->size, c->size}),
           w = Tensor::rand({c->cout, c->cin, c->k, c->k}),
           g = Tensor::rand({c->batch, c->cout, c->out_size(), c->out_size()});
    lazygrad::realize({x, w, g});
    x.requires_grad(true);
    w.requires_grad(true);
    const std::vector<float> vx = x.to_vector<float>(), vw = w.to_vector<float>(), vg = g.to_vector<float>();

    Tensor out;
    r.fwd = measure(
        [&] {
          out = x.conv2d(w, std::nullopt, 1, c->pad);
          out.realize();
        },
        reps);
    r.bwd = measure(
        [&] {
          x.zero_grad();
          w.zero_grad();
          x.conv2d(w, std::nullopt, 1, c->pad).backward(g);
          lazygrad::realize({x.grad(), w.grad()});
        },
        reps);

    Checker check{*c, vx, vw, vg};
    r.err_out = max_rel_error(out.to_vector<float>(), [&](int64_t e) { return check.out(e); });
    r.err_dx = max_rel_error(x.grad().to_vector<float>(), [&](int64_t e) { return check.dx(e); });
    r.err_dw = max_rel_error(w.grad().to_vector<float>(), [&](int64_t e) { return check.dw(e); });
    double worst = std::max({r.err_out, r.err_dx, r.err_dw});
    if (worst > 1e-3) {
      std::fprintf(stderr, "error: %s: lazygrad differs from the reference: max rel error %.3g\n",
                   c->name.c_str(), worst);
      return 1;
    }

    if (torch && torch_skip.empty()) {
      r.torch = run_torch(*c, threads, reps);
      if (!r.torch.header.empty()) torch_header = r.torch.header;
      if (!r.torch.ok) torch_skip = r.torch.message;
    }
    std::printf("%s: lazygrad fwd %.1f ms, bwd %.1f ms", c->name.c_str(), r.fwd.best_s * 1e3,
                r.bwd.best_s * 1e3);
    if (r.torch.ok)
      std::printf("; PyTorch fwd %.1f ms, bwd %.1f ms", r.torch.fwd_s * 1e3, r.torch.bwd_s * 1e3);
    std::printf(" (%.1f s so far)\n", bench::now_s() - t_start);
    std::fflush(stdout);
    results.push_back(std::move(r));
  }

  // ---- report ----
  std::printf("\nPyTorch: ");
  if (!torch)
    std::printf("skipped (--no-torch)\n");
  else if (!torch_skip.empty())
    std::printf("skipped: %s\n", torch_skip.c_str());
  else
    std::printf("%s\n", torch_header.c_str());
  std::printf(
      "\nms = best time; GFLOP/s on 2*N*Cout*Cin*K*K*OH*OW per conv (bwd = 2 convs: input and weight "
      "gradient);\nratio = lazygrad ms / PyTorch ms (above 1: PyTorch is faster)\n");
  std::printf("%-8s %-28s %4s %8s %11s %8s %10s %8s %8s  %s\n", "case", "input * weight", "pass", "kernels",
              "lazygrad ms", "GFLOP/s", "torch ms", "GFLOP/s", "ratio", "faster");
  for (const Result& r : results) {
    for (int b = 0; b < 2; b++) {
      const Pass& p = b ? r.bwd : r.fwd;
      double flops = r.c->fwd_flops() * (b ? 2 : 1), ts = b ? r.torch.bwd_s : r.torch.fwd_s;
      std::printf("%-8s %-28s %4s %8lld %11.2f %8.2f", b ? "" : r.c->name.c_str(),
                  b ? "" : r.c->shape().c_str(), b ? "bwd" : "fwd", static_cast<long long>(p.kernels),
                  p.best_s * 1e3, flops / p.best_s * 1e-9);
      if (r.torch.ok) {
        double ratio = p.best_s / ts;
        std::printf(" %10.2f %8.2f %8.2f  %s %.1fx", ts * 1e3, flops / ts * 1e-9, ratio,
                    ratio > 1 ? "PyTorch" : "lazygrad", ratio > 1 ? ratio : 1 / ratio);
      } else {
        std::printf(" %10s %8s %8s  -", "-", "-", "-");
      }
      std::printf("\n");
    }
  }

  std::printf(
      "\nfirst call (warm-up: compile or load from the disk cache, then run), and max relative error of "
      "sampled elements against a double-precision reference:\n");
  for (const Result& r : results) {
    std::printf("  %-8s fwd %9.1f ms (%lld compiled)  bwd %9.1f ms (%lld compiled)", r.c->name.c_str(),
                r.fwd.first_s * 1e3, static_cast<long long>(r.fwd.compiled), r.bwd.first_s * 1e3,
                static_cast<long long>(r.bwd.compiled));
    if (r.torch.ok) std::printf("  PyTorch first step %.1f ms", r.torch.first_s * 1e3);
    std::printf("  err out %.1e dx %.1e dw %.1e\n", r.err_out, r.err_dx, r.err_dw);
  }
  std::printf("\nlazygrad kernels (DEBUG=2 lines of the warm-up run; PyTorch's aten ops below each case):\n");
  for (const Result& r : results) {
    std::printf("  %s\n", r.c->name.c_str());
    for (const std::string& k : r.fwd.kernel_lines) std::printf("    fwd %s\n", k.c_str());
    for (const std::string& k : r.bwd.kernel_lines) std::printf("    bwd %s\n", k.c_str());
    if (!r.torch.path.empty()) std::printf("    PyTorch: %s\n", r.torch.path.c_str());
  }
  std::printf("\ntotal run %.1f s\n", bench::now_s() - t_start);
  return 0;
}
