// What reading the Ctrl-C flag costs inside kernels (runtime/interrupt.h): each kernel below is
// rendered twice, as lazygrad renders it and as it renders a kernel that may not stop (an in-place
// write: no reads, no strip-mined loops), compiled, and run on the same buffers on one thread; the
// best of K runs of each in 7 alternating rounds, and the ratio, which is the reads' whole cost.
//
//   ./build/bench_interrupt_polls [--reps K]
//
// Kernels: a sum of 16M floats (one reduction loop: the flag is read in it, every 2^18 trips of
// 16 lanes, the inner loop a constant count), the same of 16M - 3 (no power of two divides it: the
// inner loop's end is computed), an
// elementwise a * 2 + 1 over 16M floats and a 1024-row softmax (read in the loop over rows), and a
// 512x512 matrix product (read every few rows of the output).
#include <lazygrad/lazygrad.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "codegen/optimize.h"
#include "engine/realize.h"
#include "engine/schedule.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/interrupt.h"

using namespace lazygrad;

namespace {

double best_of(const Program& p, const std::vector<void*>& ptrs, const Compiled& c, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = bench::now_s();
    launch_slices(p, ptrs, {}, c.global_size, 1, interrupt_flag());
    best = std::min(best, bench::now_s() - t0);
  }
  return best;
}

void measure(const char* what, const Tensor& t, int reps) {
  Schedule s = create_schedule({t.uop()});
  for (const Kernel& k : s.kernels) {
    auto c = render_kernel(k, default_opts(k));
    Kernel unstoppable = k;
    unstoppable.in_place = true;
    std::string bare = render_kernel(unstoppable, default_opts(k))->source;
    int polls = 0;
    for (size_t at = 0; (at = c->source.find("*lg_stop)", at)) != std::string::npos; at++) polls++;
    std::string name = c->name.substr(0, c->name.find(' '));
    auto with = cpu_device().compile(name, c->source);
    auto without = cpu_device().compile(name, bare);
    std::vector<void*> ptrs;
    for (const auto& b : k.buffers) ptrs.push_back(b->handle());
    double a = 1e30, b = 1e30;
    for (int round = 0; round < 7; round++) {  // alternating, so drift hits both alike
      a = std::min(a, best_of(*with, ptrs, *c, reps));
      b = std::min(b, best_of(*without, ptrs, *c, reps));
    }
    std::printf("%-10s %-28s %d reads  with %9.1f us  without %9.1f us  ratio %.3f\n", what, name.c_str(),
                polls, a * 1e6, b * 1e6, a / b);
  }
}

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(stderr, "usage: %s [--reps K]\n", argv0);
  std::exit(why.empty() ? 0 : 2);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20;
  for (int i = 1; i < argc; i++) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--reps"});
    if (f.name != "--reps") usage(argv[0], "unknown argument " + f.text);
    reps = static_cast<int>(bench::int_flag(usage, argv[0], "--reps", f.value));
  }
  set_threads(1);
  std::printf("%s, one thread\n", bench::cpu_model().c_str());
  Tensor x = Tensor::rand({1 << 24}).realize(), odd = Tensor::rand({(1 << 24) - 3}).realize();
  Tensor rows = Tensor::rand({1024, 1024}).realize();
  Tensor a = Tensor::rand({512, 512}).realize(), b = Tensor::rand({512, 512}).realize();
  measure("sum", x.sum(), reps);
  measure("sum odd", odd.sum(), reps);
  measure("axpb", x * 2 + 1, reps);
  measure("softmax", rows.softmax(1), reps);
  measure("matmul", a.matmul(b), reps);
  return 0;
}
