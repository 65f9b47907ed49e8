// What the compiler's differential fuzzer (tests/compiler_fuzz/) found, each cut down to the smallest
// program that failed and kept as a regular test. The seed and mode that found it are in the name's
// comment; docs/testing.md lists them all.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <limits>

#include "codegen/optimize.h"
#include "engine/realize.h"
#include "engine/schedule.h"
#include "ir/walk.h"

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

// Seeds 2179 and 2413: C's pow (which PyTorch's tensor ** tensor follows) keeps the sign of a -0.0
// base under an odd exponent and gives -inf a magnitude under any other; PyTorch's x ** 0.5 and
// x ** -0.5 are sqrt and rsqrt.
TEST(CompilerFuzz, PowOfNegativeZeroAndNegativeInfinity) {
  Tensor x = Tensor::from_vector<float>({-0.0f, -0.0f, -INFINITY, -INFINITY, -0.0f}, {5});
  Tensor e = Tensor::from_vector<float>({-1, 0.5f, 0.5f, -1.5f, 3}, {5});
  auto r = x.pow(e).to_vector<float>();
  EXPECT_EQ(r[0], -INFINITY);
  EXPECT_EQ(r[1], 0.0f);
  EXPECT_EQ(r[2], INFINITY);
  EXPECT_EQ(r[3], 0.0f);
  EXPECT_TRUE(r[4] == 0 && std::signbit(r[4]));
  auto s = Tensor::from_vector<float>({-INFINITY, -0.0f}, {2}).pow(0.5).to_vector<float>();
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_TRUE(s[1] == 0 && std::signbit(s[1]));
  EXPECT_EQ(Tensor::from_vector<float>({-0.0f}, {1}).pow(-0.5).to_vector<float>()[0], -INFINITY);
}

// Seed 2815 (sampled opts L0:5 V2:4): a softmax over axis 0 with vector lanes on an output axis.
// The stager kept exp(x - max), one value per lane, in a scratch row of one value per trip of the
// loop: every lane wrote the same slot, and the output read one lane's value for all four.
TEST(CompilerFuzz, StagedValueOnTheOutputsVectorLanes) {
  ForcedOpts opts({{AxisKind::Loop, 0, 5}, {AxisKind::Vector, 2, 4}}, 0x2815);
  std::vector<float> v(5 * 13 * 16);
  for (size_t i = 0; i < v.size(); i++) v[i] = 2.0f * std::sin(1.3f * static_cast<float>(i));
  auto y = Tensor::from_vector(v, {5, 13, 16}).softmax(0).to_vector<float>();
  for (int j = 0; j < 13 * 16; j++) {
    double m = -1e30, s = 0;
    for (int i = 0; i < 5; i++) m = std::max(m, static_cast<double>(v[i * 208 + j]));
    for (int i = 0; i < 5; i++) s += std::exp(v[i * 208 + j] - m);
    for (int i = 0; i < 5; i++)
      ASSERT_NEAR(y[i * 208 + j], std::exp(v[i * 208 + j] - m) / s, 1e-6) << i << " " << j;
  }
}

// Seed 2919: a float16 constant (a pad fill) kept its float64 value, so the fill read back from a
// buffer and the same fill in a kernel differed; constants hold a value of their dtype.
TEST(CompilerFuzz, Float16ConstantsAreFloat16Values) {
  Tensor x = Tensor::from_vector<float>({0.5f, 2.0f}, {2}).to(kFloat16).realize();
  Tensor p = x.pad({1, 0}, -0.11432902788567437);
  float fill = p.to(kFloat32).to_vector<float>()[0];
  EXPECT_EQ(fill, -0.114318848f);  // the float16 nearest to the fill
  EXPECT_EQ(p.eq(p.contiguous().realize()).all().item<bool>(), true);
}

// Seeds 3 and 177, once constants held their dtype's value: the simplifier decided `x < c` from the
// integer range of x, with c as an int64 even for floats; for c = inf (a float16 constant past
// 65504) that was no number at all, and abs(x) < inf came out false (trunc of float16 returned x).
TEST(CompilerFuzz, FloatComparisonWithInfinityIsNotFolded) {
  Tensor x = Tensor::from_vector<float>({0.5f, -2.75f, INFINITY, NAN}, {4});
  EXPECT_EQ(x.abs().lt(INFINITY).to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
  Tensor h = Tensor::from_vector<float>({0.5f, -2.7f, 3.0f}, {3}).to(kFloat16).realize();
  EXPECT_EQ(h.trunc().to(kFloat32).to_vector<float>(), (std::vector<float>{0, -2, 3}));
}

// Seed 3306 (sampled opts U0:2 V1:4 G2:0): a cumprod's product over a window, with lanes on an
// output axis, gave the product's identity on three lanes of four: GCC 12's loop if-conversion
// miscompiled the kernel at -O2 with AVX-512VL (right at -O0, with clang and under UBSan); the
// renderer turns that pass off in every kernel.
TEST(CompilerFuzz, ProductOverAWindowWithLanesOnAnOutputAxis) {
  std::vector<float> v(8 * 4 * 7);
  for (size_t i = 0; i < v.size(); i++) v[i] = 1.0f + 0.3f * std::sin(1.7f * static_cast<float>(i));
  auto cumprod = [&] {
    Tensor x = Tensor::from_vector(v, {8, 4, 7}).to(kBFloat16).realize();
    Tensor y = x.cumprod(2);
    y.realize();
    return y.to(kFloat32).to_vector<float>();
  };
  std::vector<float> want = cumprod();  // the default opts
  ForcedOpts opts({{AxisKind::Upcast, 0, 2}, {AxisKind::Vector, 1, 4}, {AxisKind::Global, 2, 0}}, 0x3306);
  EXPECT_EQ(cumprod(), want);
}

// Seed 3544: a sum over a padded empty axis (pad of a {13, 0} tensor) computed its never-read index
// with % 0 and failed with "integer division by zero"; an empty shape has no index to unravel.
TEST(CompilerFuzz, PaddedEmptyAxis) {
  Tensor x = Tensor::zeros({13, 0});
  Tensor p = x.gt(0.5f).pad({1, 2}, 0).sum({0}, true);
  EXPECT_EQ(p.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
}

// Seed 4420: uint8 / -2 narrowed the scalar to uint8 (254) before the true division; PyTorch divides
// in float32: -1.
TEST(CompilerFuzz, TrueDivisionOfIntegersByANegativeScalar) {
  Tensor x = Tensor::from_vector<uint8_t>({2, 11}, {2});
  EXPECT_EQ(x.div(int64_t{-2}).to_vector<float>(), (std::vector<float>{-1.0f, -5.5f}));
  EXPECT_EQ(Tensor::from_vector<int8_t>({-128}, {1}).div(int64_t{300}).to_vector<float>()[0],
            -128.0f / 300.0f);
}

// Seed 6288: a fused argmin of sigmoids compared the minimum, taken on vector lanes with the vector
// series for exp, with the row's sigmoids recomputed one by one with libm's expf: the two differ by
// an ulp on some inputs, nothing matched and the index was 2 on an axis of 2. Float32 exp and exp2
// are one algorithm on lanes and on scalars (renderer/c_renderer.cpp: exp_helper).
TEST(CompilerFuzz, ExpIsTheSameBitsOnVectorLanesAndAlone) {
  Tensor v0 = Tensor::from_vector<float>({0.0f,
                                          -0.0079622808843851089f,
                                          1.0370323657989502f,
                                          -1.8449946641921997f,
                                          0.86157923936843872f,
                                          -1.0f,
                                          0.32317769527435303f,
                                          -1.0f,
                                          1.0915333032608032f,
                                          1.7754495143890381f,
                                          -0.5391547679901123f,
                                          1.0f,
                                          1.8606113195419312f,
                                          60.509979248046875f,
                                          -1.0f,
                                          1.2837013006210327f,
                                          -1.2107115983963013f,
                                          -1.0112383365631104f,
                                          187.49822998046875f,
                                          -1.5413639545440674f,
                                          -1.1489204168319702f,
                                          -0.0071923541836440563f,
                                          1.1947246789932251f,
                                          39.561447143554688f,
                                          -54.738838195800781f,
                                          -147.83023071289062f,
                                          0.0f,
                                          1.6534626483917236f,
                                          -0.65410447120666504f,
                                          -1.1430487632751465f,
                                          0.15812160074710846f,
                                          -0.40405398607254028f,
                                          -0.60258179903030396f,
                                          0.0f,
                                          13.981537818908691f,
                                          -0.55461835861206055f,
                                          0.50270760059356689f,
                                          0.89195674657821655f,
                                          -1.0f,
                                          -0.45461079478263855f,
                                          -0.55585348606109619f,
                                          -21.01832389831543f,
                                          0.0f,
                                          -1.9753104448318481f,
                                          -0.77758538722991943f,
                                          -1.0792311429977417f,
                                          -3.2814488410949707f,
                                          -1.2540767192840576f,
                                          0.068676449358463287f,
                                          -0.14665667712688446f,
                                          -0.13128820061683655f,
                                          0.58142781257629395f,
                                          0.43112316727638245f,
                                          -0.7638314962387085f,
                                          -1.804597020149231f,
                                          1.0f,
                                          1.0298082828521729f,
                                          0.0056513654999434948f,
                                          37.312492370605469f,
                                          -2.0f,
                                          float(std::numeric_limits<double>::quiet_NaN()),
                                          18.75074577331543f,
                                          1.1654744148254395f,
                                          -2.0f},
                                         {2, 2, 16});
  EXPECT_EQ(v0.sigmoid().argmin(1, true).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1,
                                  0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1}));
  // The same value vectorized and not: a 16-wide kernel and a 15-wide one (no vector width).
  std::vector<float> xs;
  for (int i = 0; i < 16 * 15; i++) xs.push_back(-20.0f + 0.173f * static_cast<float>(i));
  auto wide = Tensor::from_vector(xs, {15, 16}).exp().to_vector<float>();
  auto odd = Tensor::from_vector(xs, {16, 15}).exp().to_vector<float>();
  for (size_t i = 0; i < xs.size(); i++) ASSERT_EQ(wide[i], odd[i]) << xs[i];
}

// Seed 5574: cat summed its zero-padded pieces, so a -0.0 in a piece became +0.0 (-0.0 + 0.0) and
// its reciprocal +inf. The pieces are now put in place by a where on their padded masks.
TEST(CompilerFuzz, CatKeepsTheSignOfZero) {
  Tensor a = Tensor::from_vector<float>({1.0f, -0.0f}, {1, 2}),
         b = Tensor::from_vector<float>({-0.0f, 2.0f}, {1, 2});
  EXPECT_EQ(Tensor::cat({a, b}, 1).reciprocal().to_vector<float>(),
            (std::vector<float>{1.0f, -INFINITY, -INFINITY, 0.5f}));
  EXPECT_EQ(Tensor::cat({a, Tensor::from_vector<float>({}, {1, 0}), b}, 1).reciprocal().to_vector<float>()[2],
            -INFINITY);
  Tensor t = Tensor::from_vector<bool>({true, false}, {2}), f = Tensor::from_vector<bool>({false, true}, {2});
  EXPECT_EQ(Tensor::cat({t, f}, 0).to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
}

// Seed 5898 (sampled opts V2:4 G1:0): a reduction over vector lanes of a value that is the same in
// every lane (a broadcast) had a scalar accumulator, which added the value once a trip instead of
// once a lane: logsumexp over 4 equal values was x, not x + log 4.
TEST(CompilerFuzz, ReductionOverLanesOfABroadcastValue) {
  ForcedOpts opts({{AxisKind::Vector, 2, 4}, {AxisKind::Global, 1, 0}}, 0x5898);
  Tensor x = Tensor::from_vector<float>({4.3359375f}, {1, 1}).to(kFloat16).realize();
  auto lse =
      x.expand({3, 3, 4}).logsumexp(Axes(std::vector<int64_t>{2}), true).to(kFloat32).to_vector<float>();
  EXPECT_EQ(lse, std::vector<float>(9, 5.72265625f));
  Tensor y = Tensor::from_vector<float>({1.5f, -2.0f, 3.0f}, {3, 1, 1}).realize();
  EXPECT_EQ(y.expand({3, 3, 4}).sum(2).to_vector<float>(),
            (std::vector<float>{6, 6, 6, -8, -8, -8, 12, 12, 12}));
  EXPECT_EQ(y.expand({3, 3, 4}).prod(2).to_vector<float>()[3], 16.0f);
  EXPECT_EQ(y.expand({3, 3, 4}).max(2).to_vector<float>()[6], 3.0f);
}

// Seed 10726 (sampled opts U0:4): a strided, padded convolution summed over two axes, its output
// axis upcast. The upcast folded one store's padded loads to 0, which left its inner reduction
// depending on no outer loop: hoisted out of them, it took into its loop nest the other stores' inner
// reductions over the same range, which did depend on the outer loops ("linearize: range used
// outside its reduction"). A reduction joins a nest only where the loops its value needs are open.
TEST(CompilerFuzz, HoistedReductionLeavesItsPeersInTheirLoops) {
  std::vector<float> xs(2 * 4 * 5 * 6);
  for (size_t i = 0; i < xs.size(); i++) xs[i] = std::sin(0.7f * static_cast<float>(i)) * 3.0f;
  Tensor x = Tensor::from_vector(xs, {2, 4, 5, 6}).realize();
  Tensor w = Tensor::from_vector<float>({-1.13f, 0.05f, -0.75f, 0.94f}, {1, 4, 1, 1}).realize();
  auto program = [&] {
    return x.conv2d(w, std::nullopt, 2, 1, 1, 1).sum(Axes(std::vector<int64_t>{0, 3}), true);
  };
  const std::vector<float> want = program().to_vector<float>();
  ForcedOpts opts({{AxisKind::Upcast, 0, 4}}, 0x10726);
  EXPECT_EQ(program().to_vector<float>(), want);
}

// Seed 12538: an argmax of x / 0.001 on lanes took its maximum with x * (1/0.001), a multiply by the
// reciprocal, and compared it with x / 0.001 divided exactly by the scalar code: an ulp apart, so the
// index went to a later element. On lanes, too, x * (1/y) is x / y (and seed 12448: a sin of such a
// quotient near 3e10 differed between a vector and a scalar kernel).
TEST(CompilerFuzz, DivisionByAScalarIsOneRoundingOnLanes) {
  Tensor v0 = Tensor::from_vector<float>({0.0f,
                                          -0.09047718346118927f,
                                          -0.57053864002227783f,
                                          0.25249278545379639f,
                                          0.12934787571430206f,
                                          -0.97281628847122192f,
                                          43.029953002929688f,
                                          -0.0055894912220537663f,
                                          0.874886155128479f,
                                          0.0071026645600795746f,
                                          -2.0f,
                                          -0.95985978841781616f,
                                          0.15094159543514252f,
                                          -0.70385164022445679f,
                                          -1.0f,
                                          0.34272420406341553f,
                                          -1.4023016691207886f,
                                          0.032953426241874695f,
                                          13.582877159118652f,
                                          -0.073721133172512054f,
                                          44.717853546142578f,
                                          -1.0f,
                                          0.0f,
                                          6.4445648193359375f,
                                          -0.77249997854232788f,
                                          90.166450500488281f,
                                          -0.010610168799757957f,
                                          -0.46528217196464539f,
                                          -0.011117038317024708f,
                                          -0.24196086823940277f,
                                          1.0566092729568481f,
                                          2.0f,
                                          5.5220522880554199f,
                                          -114.85677337646484f,
                                          -10.73985767364502f,
                                          3.1002078056335449f,
                                          0.68909931182861328f,
                                          -1.4105511903762817f,
                                          58.4154052734375f,
                                          -1.2592779397964478f,
                                          0.22416955232620239f,
                                          -5.4871940612792969f,
                                          -1.9210625886917114f,
                                          -1.0f,
                                          -1.7291498184204102f,
                                          -0.50026977062225342f,
                                          -197.96617126464844f,
                                          0.66498726606369019f,
                                          -0.0012389016337692738f,
                                          -0.4724774956703186f,
                                          0.71889674663543701f,
                                          0.0059693679213523865f,
                                          -0.48041504621505737f,
                                          -0.38463824987411499f,
                                          -1.3928173780441284f,
                                          0.48342940211296082f,
                                          0.0078997453674674034f,
                                          -0.074836209416389465f,
                                          -0.26249954104423523f,
                                          -0.025131538510322571f,
                                          -0.75672316551208496f,
                                          116.21506500244141f,
                                          -0.014170972630381584f,
                                          -0.60505110025405884f},
                                         {8, 8, 1});
  auto got = v0.div(Scalar(0.001)).argmax(0, false).to_vector<int64_t>();
  auto want = v0.to(kFloat64).div(Scalar(0.001)).argmax(0, false).to_vector<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + 3), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(got, want);
  std::vector<float> xs;
  for (int i = 0; i < 64; i++) xs.push_back(1.0f + 0.37f * static_cast<float>(i));
  auto lanes = Tensor::from_vector(xs, {4, 16}).div(Scalar(0.3)).to_vector<float>();
  auto alone = Tensor::from_vector(xs, {64, 1}).div(Scalar(0.3)).to_vector<float>();
  for (size_t i = 0; i < xs.size(); i++) ASSERT_EQ(lanes[i], xs[i] / 0.3f) << i;
  EXPECT_EQ(lanes, alone);
}

// Seed 3634 (sampled: the row unrolled 4 then 2, the rows a loop inside the kernel): GCC 12's SLP
// vectorizer, at -O2 with AVX2 or AVX-512, miscompiled the uint8 min of signs, which lowers to
// 255 - max(255 - x): every row came out 255 instead of 1 (right at -O0, with clang, and with
// -fno-tree-slp-vectorize). The CPU's kernels now compile without SLP (renderer/c_renderer.cpp).
TEST(CompilerFuzz, Uint8MinOfSignsIsRightWhenUnrolled) {
  ForcedOpts forced({{AxisKind::Unroll, 1, 4}, {AxisKind::Loop, 0, 7}, {AxisKind::Unroll, 1, 2}}, 3634);
  Tensor v0 = Tensor::from_vector<uint8_t>(
      {9,  4,   4,  11, 2,   2,  12, 3,  1, 6,  40,  7,   9,   1,  10, 5,  41, 8, 1,
       54, 41,  10, 3,  133, 12, 12, 12, 4, 1,  200, 3,   126, 46, 4,  12, 6,  3, 8,
       2,  213, 12, 4,  11,  6,  4,  4,  3, 12, 4,   164, 108, 11, 5,  4,  4,  2},
      {7, 8});
  EXPECT_EQ(v0.sign().min(1).to_vector<uint8_t>(), std::vector<uint8_t>(7, 1));
}

// Seed 8010 (sampled opts V0:4 N0:2 N0:2, the division V0:8 L0:2): float16 arithmetic on vector
// lanes was neither rounded after each op nor a division where it divides (x * (1/y) with 1/y
// rounded to float16: 227.375 for 0.2275 / 0.001, whose quotient rounds to 227.5). A fused argmin
// of the quotients compared them with a minimum computed lane by lane, matched none and returned
// 16, past its axis. 16-bit float arithmetic now runs lane by lane, rounded as scalar code rounds.
TEST(CompilerFuzz, Float16DivisionOnLanesIsTheScalarOne) {
  Tensor x = Tensor::from_vector<float>({-0.0049f, -0.5376f, 1.0f, 70.875f, 0.2275390625f, -0.5605f, -1.0f,
                                         1.0186f, -8.9765625f, -2.0f, -1.0615f, 0.01997f, -0.606f, 0.8828f,
                                         std::numeric_limits<float>::infinity(), -0.5972f},
                                        {1, 16})
                 .to(kFloat16)
                 .realize();
  const std::vector<float> want = x.div(Scalar(0.001)).to_vector<float>();  // the default: no lanes
  EXPECT_EQ(want[4], 227.5f);
  ForcedOpts opts({{AxisKind::Vector, 0, 4}, {AxisKind::Unroll, 0, 2}, {AxisKind::Unroll, 0, 2}}, 0x8010);
  EXPECT_EQ(x.div(Scalar(0.001)).argmin(1, true).to_vector<int64_t>(), (std::vector<int64_t>{8}));
  ForcedOpts lanes({{AxisKind::Vector, 0, 8}}, 0x8011);
  EXPECT_EQ(x.div(Scalar(0.001)).to_vector<float>(), want);
}

// Seed 38025: a chain of float floor divisions. PyTorch's floor division (from the exact fmod)
// reads its operands in five places, so the chain's graph is a DAG with exponentially many paths,
// and the linearizer's hoisting walked them one by one (half an hour). It visits each node once
// now; without that this test does not end. The values are PyTorch's (checked with torch 1.13).
TEST(CompilerFuzz, AChainOfFloorDivisionsLinearizesAtOnce) {
  Tensor x = Tensor::from_vector<float>({1e30f, -7.5f, 1e20f, 3.0f}, {4}).realize();
  Tensor y = x;
  for (int i = 0; i < 24; i++) y = y.floor_divide(1.5);
  // -7.5 // 1.5 is -5, then -4, -3, -2, and -2 for good; 3 goes to 2, 1, 0.
  EXPECT_EQ(y.to_vector<float>(),
            (std::vector<float>{5.940318755528142e+25f, -2.0f, 5940319338102784.0f, 0.0f}));
}

// Seed 65892 (NOOPT): a pad of a computed value, fused into its reader, computed the value at the
// pad's positions too, from loads outside their buffers (here element 0 of empty ones), and a
// remainder by what such a load read failed with "integer division by zero" about half the runs.
// The value's loads are now gated by the pad's bounds, a divisor or a checked index is a harmless
// one outside them, and a pad of an empty value is zeros without reading it.
TEST(CompilerFuzz, PadOfAComputedValueReadsAndChecksNothingOutsideIt) {
  set_noopt(true);
  Tensor e = Tensor::from_vector<int32_t>({}, {13, 0, 16});
  Tensor m = e.remainder(e.neg()).pad({1, 1, 2, 1}, Scalar(int64_t{0})).min(Axes(std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m.to_vector<int32_t>(), std::vector<int32_t>(13, 0));
  set_noopt(false);

  Tensor x = Tensor::from_vector<int32_t>({7, 8, 9, 10}, {4});
  Tensor d = Tensor::from_vector<int32_t>({1, 3, 4, 7}, {4});
  // (neg: a pad's reader, which fuses it; a view alone would realize its base first.)
  Tensor r = x.remainder(d).pad({2, 2}, Scalar(int64_t{0})).neg();
  Kernel k = create_schedule({r.uop()}).kernels.at(0);
  for (const UOp* u : toposort(k.sink.get()))
    if (u->op == Ops::LOAD) {
      EXPECT_EQ(u->src.size(), 3u) << "every load of the padded value is gated";
    }
  // Outside the pad the gated loads read 0: the divisor there is 1, not 0.
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, -2, -1, -3, 0, 0}));

  // A gather's index computed in the kernel: outside the pad it is 0 + 3, past the table's end.
  Tensor table = Tensor::from_vector<float>({10, 20}, {2});
  Tensor i = Tensor::from_vector<int64_t>({-2, -3}, {2}) + int64_t{3};
  EXPECT_EQ(table.gather(0, i).pad({1, 1}).neg().to_vector<float>(), (std::vector<float>{0, -20, -10, 0}));
}

// Seed 74869 (sampled opts N3:4, a float16 cumprod): the unrolled terms of a product were combined
// in float16, so the partial product 1712 * 298.75 (511,456) overflowed to inf and met the 0 of the
// other terms as NaN, where the loop's float32 accumulator gives 0. A 16-bit sum or product now
// combines its unrolled terms in float32 too, and the result is the same whatever the unroll.
TEST(CompilerFuzz, UnrolledHalfProductAccumulatesInFloat32) {
  std::vector<float> v{0.021927f, 0.2384f, 0.0f, 0.18628f, 1712.0f, 298.75f};
  auto prod = [&] { return Tensor::from_vector(v, {6}).to(kFloat16).prod().to(kFloat32).to_vector<float>(); };
  EXPECT_EQ(prod(), std::vector<float>{0.0f});
  for (int64_t n : {2, 3, 6}) {
    ForcedOpts opts({{AxisKind::Unroll, 0, n}}, 0x74869 + n);
    EXPECT_EQ(prod(), std::vector<float>{0.0f}) << "unrolled by " << n;
  }
}
