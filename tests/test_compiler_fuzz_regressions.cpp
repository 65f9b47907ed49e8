// What the compiler's differential fuzzer (tests/compiler_fuzz/) found, each cut down to the smallest
// program that failed and kept as a regular test. The seed and mode that found it are in the name's
// comment; docs/testing.md lists them all.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <limits>

#include "codegen/optimize.h"
#include "engine/realize.h"

using namespace lazygrad;

namespace {

// Every kernel compiled while it lives gets `opts` when they fit it (as the fuzzer's sampled
// modes choose them), and its defaults otherwise.
class ForcedOpts {
 public:
  ForcedOpts(std::vector<Opt> opts, int64_t key) {
    set_opts_chooser(
        [opts](const Kernel& k) {
          try {
            apply_opts(k, opts);
            return opts;
          } catch (const Error&) {
            return default_opts(k);
          }
        },
        key);
  }
  ~ForcedOpts() { set_opts_chooser(nullptr, 0); }
};

}  // namespace

// Seed 86: a float16 chain was computed in float32 and rounded only where it was stored. The
// argmin's minimum was stored (rounded) by one kernel and compared, in the next, with the
// unrounded quotients: no element matched and argmin returned 3, past the end of its axis.
TEST(CompilerFuzz, Float16ValuesAreRoundedWhereTheyAreComputed) {
  Tensor x = Tensor::from_vector<float>(
                 {0.63916015625f, -0.5302734375f, 0.0f, -1.0f, -0.763671875f, -91.125f, 0.70849609375f,
                  115.25f, 87.9375f, 65.1875f, 0.94921875f, 1.0f, 13.015625f, 0.0548095703125f, 11.96875f},
                 {1, 5, 3})
                 .to(kFloat16)
                 .realize();
  Tensor y = Tensor::from_vector<float>({0.9736328125f}, {}).to(kFloat16).realize();
  EXPECT_EQ(x.div(y).argmin(2, true).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 1, 1}));
}

// Seed 228 (sampled opts U0:4): an argmin over an axis of one element left a reduction over no
// loop at all; the linearizer recursed into it without end.
TEST(CompilerFuzz, ReductionOverOneElementUnderAnUpcast) {
  ForcedOpts opts({{AxisKind::Upcast, 0, 4}}, 0x228);
  Tensor x = Tensor::from_vector<float>({3, 1, 2, 5}, {4, 1});
  EXPECT_EQ(x.argmin(1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(x.max(1).to_vector<float>(), (std::vector<float>{3, 1, 2, 5}));
}

// Seed 179 (NOOPT): a row statistic fused into its reader asked for a Loop over an empty axis.
TEST(CompilerFuzz, EmptyAxisUnderNoopt) {
  set_noopt(true);
  Tensor x = Tensor::zeros({0, 4});
  Tensor y = x - x.max(1, true);
  EXPECT_EQ(y.to_vector<float>().size(), 0u);
  set_noopt(false);
}

// Seed 204 (sampled opts L1:17): an empty kernel failed to linearize. Nothing of it runs, so
// nothing of it is compiled any more.
TEST(CompilerFuzz, EmptyKernelIsNotCompiled) {
  ForcedOpts opts({{AxisKind::Loop, 1, 17}}, 0x204);
  Tensor x = Tensor::zeros({8, 0, 3, 17});
  GlobalCounters::reset();
  Tensor y = x.permute({2, 3, 1, 0}).contiguous();
  EXPECT_EQ(y.shape(), (Shape{3, 17, 0, 8}));
  EXPECT_EQ(y.to_vector<float>().size(), 0u);
  EXPECT_EQ(GlobalCounters::compile_count, 0);
}

// Seed 3: trunc (and floor and ceil, built on it) lost the sign of a zero result, so
// 1 / trunc(-0.3) was +inf instead of PyTorch's -inf.
TEST(CompilerFuzz, RoundingsKeepTheSignOfZero) {
  Tensor x = Tensor::from_vector<float>({-0.3f, 0.3f, -0.0f, -0.7f}, {4});
  EXPECT_EQ(x.trunc().reciprocal().to_vector<float>(),
            (std::vector<float>{-INFINITY, INFINITY, -INFINITY, -INFINITY}));
  EXPECT_TRUE(std::signbit(x.ceil().to_vector<float>()[0]));
  EXPECT_TRUE(std::signbit(x.floor().to_vector<float>()[2]));
}

// Seed 63: padding a bool tensor with the value 1 gave int64 (the fill's type won); PyTorch
// converts the fill to the tensor's dtype.
TEST(CompilerFuzz, PadFillTakesTheTensorsDtype) {
  Tensor b = Tensor::from_vector<bool>({true, false}, {2});
  Tensor p = b.pad({0, 2}, 1);
  EXPECT_EQ(p.dtype(), kBool);
  EXPECT_EQ(p.to_vector<bool>(), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(Tensor::from_vector<int8_t>({1}, {1}).pad({1, 0}, 2.0).dtype(), kInt8);
}

// Seed 462: pow(-1, NaN) gave 1; C and PyTorch give NaN (only 1**NaN is 1; (-1)**inf is 1).
TEST(CompilerFuzz, PowOfMinusOneAndNaN) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({-1, 1, -1, -1}, {4});
  Tensor e = Tensor::from_vector<float>({nan, nan, INFINITY, -INFINITY}, {4});
  auto r = x.pow(e).to_vector<float>();
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 1);
  EXPECT_EQ(r[2], 1);
  EXPECT_EQ(r[3], 1);
}

// Seeds 785, 1039, 1094, 1147, 1229, 1391: a kernel with a hundred fused reductions got a name of
// a hundred loop sizes, longer than the 255 bytes a file name may have: "kernel cache: cannot
// write". Names are at most 64 bytes now, the rest folded into a hash.
TEST(CompilerFuzz, KernelWithManyReductionsHasAShortName) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  Tensor t = Tensor::zeros({2});
  for (int i = 1; i <= 100; i++) t = t + (x * static_cast<double>(i)).sum(1);
  // sum over i of i * rowsum = 5050 * rowsum
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5050.0f * 10, 5050.0f * 26}));
}
