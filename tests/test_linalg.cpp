// Linear algebra, convolution, pooling and resampling. Forward values and gradients against PyTorch
// through tests/fixtures/linalg.txt (written by scripts/fixtures_linalg.py); kernel counts of
// matmul and conv (one fused reduce kernel each); the API's int-or-list arguments; bad input by
// the errors it raises.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_linalg
#include <string>
#include <vector>

#include "expect_error.h"
#include "fixture_harness.h"
#include "lazygrad/counters.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::Shape;
using lazygrad::Tensor;
using IntList = Tensor::IntList;

// An int-or-tuple argument: `int` or `ints`, or the default when absent.
IntList int_list(const Case& c, const std::string& key, IntList dflt) {
  if (!c.has(key)) return dflt;
  if (c.get(key).kind == "none") return {};
  return c.get(key).kind == "int" ? IntList(c.i(key)) : IntList(c.ints(key));
}

Tensor::ConvPadding conv_padding(const Case& c) {
  if (!c.has("padding")) return 0;
  if (c.get("padding").kind == "str") return c.str("padding");
  return c.get("padding").kind == "int" ? Tensor::ConvPadding(c.i("padding"))
                                        : Tensor::ConvPadding(c.ints("padding"));
}

std::optional<Tensor> bias(const Case& c, const Ins& x) {
  return c.flag("bias") ? std::optional<Tensor>(x.at(2)) : std::nullopt;
}

std::vector<double> scale_factor(const Case& c) {  // written as thousandths
  std::vector<double> s;
  if (c.has("scale_factor"))
    for (int64_t v : c.ints("scale_factor")) s.push_back(static_cast<double>(v) / 1000);
  return s;
}

std::optional<bool> opt_flag(const Case& c, const std::string& key) {
  return c.has(key) ? std::optional<bool>(c.flag(key)) : std::nullopt;
}

using ConvFn = Tensor (Tensor::*)(const Tensor&, const std::optional<Tensor>&, IntList, Tensor::ConvPadding,
                                  IntList, int64_t) const;
fixtures::OpFn conv(ConvFn fn) {
  return [fn](const Case& c, const Ins& x) {
    return (x.at(0).*fn)(x.at(1), bias(c, x), int_list(c, "stride", 1), conv_padding(c),
                         int_list(c, "dilation", 1), c.i_or("groups", 1));
  };
}

using ConvTransposeFn = Tensor (Tensor::*)(const Tensor&, const std::optional<Tensor>&, IntList, IntList,
                                           IntList, int64_t, IntList) const;
fixtures::OpFn conv_transpose(ConvTransposeFn fn) {
  return [fn](const Case& c, const Ins& x) {
    return (x.at(0).*fn)(x.at(1), bias(c, x), int_list(c, "stride", 1), int_list(c, "padding", 0),
                         int_list(c, "output_padding", 0), c.i_or("groups", 1), int_list(c, "dilation", 1));
  };
}

using MaxPoolFn = Tensor (Tensor::*)(IntList, IntList, IntList, IntList, bool) const;
fixtures::OpFn max_pool(MaxPoolFn fn) {
  return [fn](const Case& c, const Ins& x) {
    return (x.at(0).*fn)(int_list(c, "kernel_size", {}), int_list(c, "stride", {}), int_list(c, "padding", 0),
                         int_list(c, "dilation", 1), c.flag("ceil_mode"));
  };
}

bool count_include_pad(const Case& c) { return !c.has("count_include_pad") || c.flag("count_include_pad"); }

const fixtures::OpTable& linalg_ops() {
  static const fixtures::OpTable table = {
      {"matmul", [](const Case&, const Ins& x) { return x.at(0).matmul(x.at(1)); }},
      {"dot", [](const Case&, const Ins& x) { return x.at(0).dot(x.at(1)); }},
      {"outer", [](const Case&, const Ins& x) { return x.at(0).outer(x.at(1)); }},
      {"linear", [](const Case& c, const Ins& x) { return x.at(0).linear(x.at(1), bias(c, x)); }},
      {"tril", [](const Case& c, const Ins& x) { return x.at(0).tril(c.i_or("diagonal", 0)); }},
      {"triu", [](const Case& c, const Ins& x) { return x.at(0).triu(c.i_or("diagonal", 0)); }},
      {"einsum", [](const Case& c, const Ins& x) { return lazygrad::einsum(c.str("equation"), x); }},
      {"conv1d", conv(&Tensor::conv1d)},
      {"conv2d", conv(&Tensor::conv2d)},
      {"conv3d", conv(&Tensor::conv3d)},
      {"conv_transpose1d", conv_transpose(&Tensor::conv_transpose1d)},
      {"conv_transpose2d", conv_transpose(&Tensor::conv_transpose2d)},
      {"max_pool1d", max_pool(&Tensor::max_pool1d)},
      {"max_pool2d", max_pool(&Tensor::max_pool2d)},
      {"avg_pool1d",
       [](const Case& c, const Ins& x) {
         return x.at(0).avg_pool1d(int_list(c, "kernel_size", {}), int_list(c, "stride", {}),
                                   int_list(c, "padding", 0), c.flag("ceil_mode"), count_include_pad(c));
       }},
      {"avg_pool2d",
       [](const Case& c, const Ins& x) {
         return x.at(0).avg_pool2d(
             int_list(c, "kernel_size", {}), int_list(c, "stride", {}), int_list(c, "padding", 0),
             c.flag("ceil_mode"), count_include_pad(c),
             c.has("divisor_override") ? std::optional<int64_t>(c.i("divisor_override")) : std::nullopt);
       }},
      {"adaptive_avg_pool2d",
       [](const Case& c, const Ins& x) {
         return x.at(0).adaptive_avg_pool2d(int_list(c, "output_size", {}));
       }},
      {"interpolate",
       [](const Case& c, const Ins& x) {
         return x.at(0).interpolate(int_list(c, "size", {}), scale_factor(c),
                                    c.has("mode") ? c.str("mode") : "nearest", opt_flag(c, "align_corners"));
       }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(LinalgParity, linalg_ops(), "linalg.txt")

// ------------------------------------------------------------------------------------ kernel counts

int64_t kernels_to_realize(Tensor t) {
  int64_t before = lazygrad::GlobalCounters::kernel_count;
  t.realize();
  return lazygrad::GlobalCounters::kernel_count - before;
}

// A realized input that costs no kernel (rand would compile one per shape); the shapes below are
// those of fixture cases, so the kernels they run are compiled once for both.
Tensor realized(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) values[static_cast<size_t>(i)] = static_cast<float>((i * 7) % 11) / 11.0f;
  return Tensor::from_vector(values, shape);
}

TEST(LinalgKernels, MatmulIsOneReduceKernel) {
  Tensor a = realized({3, 4}), b = realized({4, 5});
  EXPECT_EQ(kernels_to_realize(a.matmul(b)), 1);
  EXPECT_EQ(kernels_to_realize(realized({2, 1, 3, 4}).matmul(realized({3, 4, 2}))), 1);  // broadcast batch
}

TEST(LinalgKernels, LinearWithBiasIsOneKernel) {
  Tensor x = realized({2, 3, 4}), w = realized({5, 4}), b = realized({5});
  EXPECT_EQ(kernels_to_realize(x.linear(w, b)), 1);
}

TEST(LinalgKernels, ConvIsOneReduceKernel) {
  Tensor x = realized({2, 3, 7, 6}), w = realized({4, 3, 3, 3}), b = realized({4});
  EXPECT_EQ(kernels_to_realize(x.conv2d(w, b)), 1);
  EXPECT_EQ(kernels_to_realize(x.conv2d(w, b, 2, 1)), 1);
  Tensor xt = realized({2, 3, 4, 4}), wt = realized({3, 2, 3, 3}), bt = realized({2});
  EXPECT_EQ(kernels_to_realize(xt.conv_transpose2d(wt, bt, 2, 1, 1)),
            1);  // zero-stuffed input, flipped weight
}

TEST(LinalgKernels, PoolsAreOneKernel) {
  Tensor x = realized({2, 3, 8, 7});
  EXPECT_EQ(kernels_to_realize(x.max_pool2d(3, 2, 1)), 1);
  EXPECT_EQ(kernels_to_realize(x.avg_pool2d(3, 2, 1, false, false)), 1);  // divisor per window
  EXPECT_EQ(kernels_to_realize(realized({1, 2, 4, 7}).interpolate({9, 5}, {}, "bilinear")), 1);
}

TEST(LinalgKernels, NearestResizeIsAView) {
  // Nearest neighbours gathered by a strided view of the repeated input: no kernel until read.
  Tensor x = realized({1, 2, 5, 7});
  EXPECT_EQ(kernels_to_realize(x.interpolate({8, 4})), 0);
}

// -------------------------------------------------------------------------------------- API forms

TEST(LinalgApi, IntListTakesOneValueOrOnePerDimension) {
  Tensor x = Tensor::arange(2 * 3 * 8 * 8).reshape({2, 3, 8, 8}).to(lazygrad::kFloat32);
  Tensor w = Tensor::ones({4, 3, 3, 3});
  EXPECT_EQ(x.conv2d(w, std::nullopt, 2, 1).shape(), (Shape{2, 4, 4, 4}));
  EXPECT_EQ(x.conv2d(w, std::nullopt, {2, 1}, {1, 0}).shape(), (Shape{2, 4, 4, 6}));
  EXPECT_EQ(x.conv2d(w, {}, 1, "same").shape(), (Shape{2, 4, 8, 8}));
  EXPECT_EQ(x.conv2d(w, {}, 1, "valid").shape(), (Shape{2, 4, 6, 6}));
  EXPECT_EQ(x.max_pool2d(2).shape(), (Shape{2, 3, 4, 4}));
  EXPECT_EQ(x.max_pool2d({2, 4}, {}).shape(), (Shape{2, 3, 4, 2}));
  EXPECT_EQ(x.avg_pool2d(3, 1).shape(), (Shape{2, 3, 6, 6}));
  EXPECT_EQ(x.interpolate({}, {0.5}).shape(), (Shape{2, 3, 4, 4}));
  EXPECT_EQ(x.interpolate(IntList{4, 16}).shape(), (Shape{2, 3, 4, 16}));
}

TEST(LinalgApi, TrilOfValues) {
  Tensor x = Tensor::arange(1, 10).reshape({3, 3});
  EXPECT_EQ(x.tril().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(x.triu(1).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(x.tril().dtype(), lazygrad::kInt64);
}

// ------------------------------------------------------------------------------------------ errors

TEST(LinalgErrors, MatmulFamily) {
  Tensor a = Tensor::ones({2, 3}), b = Tensor::ones({4, 5}), v = Tensor::ones({3});
  EXPECT_THROW(a.matmul(b), lazygrad::Error);
  expect_error([&] { a.matmul(b); }, "matmul");
  expect_error([&] { Tensor::ones({}).matmul(v); }, "matmul");
  expect_error([&] { a.matmul(Tensor::ones({3, 2}, lazygrad::kFloat64)); }, "matmul");
  expect_error([&] { Tensor::ones({2, 2, 3}).matmul(Tensor::ones({3, 3, 2})); }, "matmul");
  expect_error([&] { v.dot(Tensor::ones({4})); }, "dot");
  expect_error([&] { a.dot(a); }, "dot");
  expect_error([&] { a.outer(v); }, "outer");
  expect_error([&] { a.linear(Tensor::ones({2, 4})); }, "linear");
  expect_error([&] { a.linear(Tensor::ones({2, 3}), Tensor::ones({3})); }, "linear");
  expect_error([&] { v.tril(); }, "tril");
  expect_error([&] { v.triu(); }, "triu");
}

TEST(LinalgErrors, Einsum) {
  Tensor a = Tensor::ones({2, 3}), b = Tensor::ones({4, 2});
  expect_error([&] { lazygrad::einsum("ij,jk", {a, b}); }, "einsum");  // j: 3 vs 4
  expect_error([&] { lazygrad::einsum("ij,jk->ii", {a, a.t()}); }, "einsum");
  expect_error([&] { lazygrad::einsum("ij->iz", {a}); }, "einsum");
  expect_error([&] { lazygrad::einsum("ijk->i", {a}); }, "einsum");
  expect_error([&] { lazygrad::einsum("ii->i", {a}); }, "einsum");  // diagonal of 2 x 3
  expect_error([&] { lazygrad::einsum("ij", {a, a}); }, "einsum");  // two operands, one term
  expect_error([&] { lazygrad::einsum("i1->i", {a}); }, "einsum");
  expect_error([&] { lazygrad::einsum("ij,jk", {a, Tensor::ones({3, 2}, lazygrad::kFloat64)}); }, "einsum");
}

TEST(LinalgErrors, Convolution) {
  Tensor x = Tensor::ones({1, 2, 6, 6}), w = Tensor::ones({3, 2, 3, 3});
  expect_error([&] { x.conv2d(Tensor::ones({3, 4, 3, 3})); }, "conv2d");                  // channels
  expect_error([&] { x.conv2d(Tensor::ones({3, 1, 3, 3}), {}, 1, 0, 1, 2); }, "conv2d");  // 3 % groups
  expect_error([&] { x.conv2d(Tensor::ones({3, 2, 3})); }, "conv2d");                     // weight rank
  expect_error([&] { Tensor::ones({6, 6}).conv2d(w); }, "conv2d");                        // input rank
  expect_error([&] { x.conv2d(Tensor::ones({3, 2, 7, 7})); }, "conv2d");                  // kernel too big
  expect_error([&] { x.conv2d(w, {}, 2, "same"); }, "conv2d");
  expect_error([&] { x.conv2d(w, {}, 1, "full"); }, "conv2d");
  expect_error([&] { x.conv2d(w, {}, 0); }, "conv2d");
  expect_error([&] { x.conv2d(w, {}, 1, -1); }, "conv2d");
  expect_error([&] { x.conv2d(w, {}, {1, 1, 1}); }, "conv2d");
  expect_error([&] { x.conv2d(w, Tensor::ones({2})); }, "conv2d");  // bias size
  expect_error([&] { x.conv2d(Tensor::ones({3, 2, 3, 3}, lazygrad::kFloat64)); }, "conv2d");
  expect_error([&] { Tensor::ones({1, 2, 6}).conv1d(Tensor::ones({3, 2, 7})); }, "conv1d");
  expect_error([&] { Tensor::ones({1, 2, 4, 4, 4}).conv3d(Tensor::ones({3, 1, 2, 2, 2})); }, "conv3d");
  expect_error([&] { x.conv_transpose2d(Tensor::ones({2, 3, 3, 3}), {}, 2, 0, 2); }, "conv_transpose2d");
  expect_error([&] { x.conv_transpose2d(Tensor::ones({3, 3, 3, 3})); }, "conv_transpose2d");
  expect_error(
      [&] {
        x.conv_transpose2d(Tensor::ones({2, 1, 3, 3}), {}, 1, 4);
      },
      "conv_transpose2d");  // empty output
  expect_error(
      [&] {
        Tensor::ones({1, 2, 6}).conv_transpose1d(Tensor::ones({3, 1, 3}));
      },
      "conv_transpose1d");
}

TEST(LinalgErrors, Pooling) {
  Tensor x = Tensor::ones({1, 2, 6, 6});
  expect_error([&] { x.max_pool2d(3, 2, 2); }, "max_pool2d");  // padding > kernel / 2
  expect_error([&] { x.max_pool2d(7); }, "max_pool2d");        // output too small
  expect_error([&] { x.max_pool2d(2, 0); }, "max_pool2d");
  expect_error([&] { x.max_pool2d({2, 2, 2}); }, "max_pool2d");
  expect_error([&] { Tensor::ones({1, 2, 6, 6}, lazygrad::kInt32).max_pool2d(2); }, "max_pool2d");
  expect_error([&] { Tensor::ones({6}).max_pool1d(2); }, "max_pool1d");
  expect_error([&] { x.avg_pool2d(3, 2, 2); }, "avg_pool2d");
  expect_error([&] { x.avg_pool2d(2, {}, 0, false, true, 0); }, "avg_pool2d");
  expect_error([&] { Tensor::ones({1, 2, 6}).avg_pool1d(7); }, "avg_pool1d");
  expect_error([&] { Tensor::ones({6, 6}).adaptive_avg_pool2d(2); }, "adaptive_avg_pool2d");
  expect_error([&] { x.adaptive_avg_pool2d({2, 2, 2}); }, "adaptive_avg_pool2d");
}

TEST(LinalgErrors, Interpolate) {
  Tensor x = Tensor::ones({1, 2, 6, 6});
  expect_error([&] { x.interpolate(); }, "interpolate");               // neither size nor scale
  expect_error([&] { x.interpolate({4, 4}, {2.0}); }, "interpolate");  // both
  expect_error([&] { x.interpolate({4, 4}, {}, "cubic"); }, "interpolate");
  expect_error([&] { x.interpolate({4, 4}, {}, "nearest", false); }, "interpolate");
  expect_error([&] { x.interpolate({4, 4}, {}, "linear"); }, "interpolate");  // linear needs 3-D
  expect_error([&] { Tensor::ones({1, 2, 6}).interpolate(4, {}, "bilinear"); }, "interpolate");
  expect_error([&] { x.interpolate({}, {0.1}); }, "interpolate");  // empty output
  expect_error([&] { Tensor::ones({2, 6}).interpolate(4); }, "interpolate");
  expect_error([&] { x.to(lazygrad::kInt32).interpolate({4, 4}, {}, "bilinear"); }, "interpolate");
}

}  // namespace
