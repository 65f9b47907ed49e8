// PyTorch parity of var, std, logsumexp, argmax, argmin, any, all, cumsum, cumprod and norm
// (src/tensor/reduce_more.cpp): forward values and gradients from tests/fixtures/reductions.txt
// (written by scripts/fixtures_reductions.py). Then the errors these ops raise, and a check that a
// long cumsum stays a few kernels.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_reductions
#include <initializer_list>
#include <optional>
#include <string>

#include "expect_error.h"
#include "fixture_harness.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::Tensor;

std::optional<int64_t> opt_axis(const Case& c) {
  if (!c.has("axis")) return std::nullopt;
  return c.i("axis");
}

const fixtures::OpTable& reduction_ops() {
  static const fixtures::OpTable table = {
      {"var",
       [](const Case& c, const Ins& x) {
         return x.at(0).var(c.axes("axes"), static_cast<double>(c.i_or("correction", 1)), c.flag("keepdim"));
       }},
      {"std",
       [](const Case& c, const Ins& x) {
         return x.at(0).std(c.axes("axes"), static_cast<double>(c.i_or("correction", 1)), c.flag("keepdim"));
       }},
      {"logsumexp",
       [](const Case& c, const Ins& x) { return x.at(0).logsumexp(c.axes("axes"), c.flag("keepdim")); }},
      {"argmax", [](const Case& c, const Ins& x) { return x.at(0).argmax(opt_axis(c), c.flag("keepdim")); }},
      {"argmin", [](const Case& c, const Ins& x) { return x.at(0).argmin(opt_axis(c), c.flag("keepdim")); }},
      {"any", [](const Case& c, const Ins& x) { return x.at(0).any(c.axes("axes"), c.flag("keepdim")); }},
      {"all", [](const Case& c, const Ins& x) { return x.at(0).all(c.axes("axes"), c.flag("keepdim")); }},
      {"cumsum",
       [](const Case& c, const Ins& x) { return x.at(0).cumsum(c.i("dim"), c.opt_dtype("dtype")); }},
      {"cumprod",
       [](const Case& c, const Ins& x) { return x.at(0).cumprod(c.i("dim"), c.opt_dtype("dtype")); }},
      {"norm",
       [](const Case& c, const Ins& x) {
         return x.at(0).norm(c.f_or("p", 2.0), c.axes("axes"), c.flag("keepdim"));
       }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(ReductionParity, reduction_ops(), "reductions.txt")

// argmax and argmin of a matrix product and a classifier's accuracy line (scripts/fixtures_argmax.py),
// fused into one realize ("fused") or with the product realized first ("split"). Fused, these once
// compared a double accumulator with a float maximum and matched nothing (issue 13).
Tensor product_of(const Case& c, const Ins& x) {
  Tensor p = x.at(0).matmul(x.at(1));
  if (c.str("form") == "split") p.realize();
  return p;
}

const fixtures::OpTable& argmax_product_ops() {
  static const fixtures::OpTable table = {
      {"argmax_matmul.fused",
       [](const Case& c, const Ins& x) { return product_of(c, x).argmax(c.i("dim"), c.flag("keepdim")); }},
      {"argmax_matmul.split",
       [](const Case& c, const Ins& x) { return product_of(c, x).argmax(c.i("dim"), c.flag("keepdim")); }},
      {"argmin_matmul.fused",
       [](const Case& c, const Ins& x) { return product_of(c, x).argmin(c.i("dim"), c.flag("keepdim")); }},
      {"argmin_matmul.split",
       [](const Case& c, const Ins& x) { return product_of(c, x).argmin(c.i("dim"), c.flag("keepdim")); }},
      {"accuracy_matmul.fused",
       [](const Case& c, const Ins& x) {
         return product_of(c, x).argmax(1).eq(x.at(2)).to(lazygrad::kFloat32).mean();
       }},
      {"accuracy_matmul.split",
       [](const Case& c, const Ins& x) {
         return product_of(c, x).argmax(1).eq(x.at(2)).to(lazygrad::kFloat32).mean();
       }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(ArgmaxProductParity, argmax_product_ops(), "argmax_products.txt")

// ---- errors: lazygrad::Error whose message names the op (and the shapes or dtype at fault) ----

Tensor f32(const lazygrad::Shape& s) { return Tensor::zeros(s); }
Tensor i64(const lazygrad::Shape& s) { return Tensor::zeros(s, lazygrad::kInt64); }

TEST(ReductionErrors, FloatOnly) {
  expect_error([] { i64({2, 3}).var(); }, {"var", "int64", "{2, 3}"});
  expect_error([] { i64({2, 3}).std(1); }, {"std", "int64"});
  expect_error([] { i64({2, 3}).norm(); }, {"norm", "int64"});
}

TEST(ReductionErrors, BadAxes) {
  expect_error([] { f32({2, 3}).var(2); }, {"var", "dimension 2"});
  expect_error([] { f32({2, 3}).std({0, 0}); }, {"std"});
  expect_error([] { f32({2, 3}).logsumexp(-3); }, {"logsumexp"});
  expect_error([] { f32({2, 3}).argmax(2); }, {"argmax"});
  expect_error([] { f32({2, 3}).argmin(-3); }, {"argmin"});
  expect_error([] { f32({2, 3}).any(5); }, {"any"});
  expect_error([] { f32({2, 3}).all({1, 1}); }, {"all"});
  expect_error([] { f32({2, 3}).cumsum(2); }, {"cumsum"});
  expect_error([] { f32({2, 3}).cumprod(-3); }, {"cumprod"});
  expect_error([] { f32({2, 3}).norm(2, 3); }, {"norm"});
}

TEST(ReductionErrors, NoIdentity) {
  expect_error([] { f32({0, 3}).argmax(0); }, {"argmax", "{0, 3}"});
  expect_error([] { f32({0}).argmin(); }, {"argmin", "{0}"});
  expect_error([] { f32({2, 0}).norm(std::numeric_limits<double>::infinity(), 1); }, {"norm", "{2, 0}"});
  expect_error([] { Tensor::zeros({3}, lazygrad::kBool).argmax(); }, {"argmax", "bool"});
}

// A scan longer than two blocks is blocked, so its cost stays linear in the length: the forward of
// a 4000-long cumsum is a handful of kernels, not one per element or per block.
TEST(ReductionKernels, LongCumsumIsAFewKernels) {
  Tensor x = Tensor::ones({4000}, lazygrad::kFloat64);
  uint64_t before = lazygrad::GlobalCounters::kernel_count;
  std::vector<double> v = x.cumsum(0).to_vector<double>();
  uint64_t kernels = lazygrad::GlobalCounters::kernel_count - before;
  EXPECT_LE(kernels, 6u);
  ASSERT_EQ(v.size(), 4000u);
  for (size_t i = 0; i < v.size(); i += 333) EXPECT_EQ(v[i], static_cast<double>(i + 1)) << "at " << i;
  EXPECT_EQ(v.back(), 4000.0);
}

}  // namespace
