// PyTorch parity of the elementwise math ops and activations (src/tensor/math.cpp): forward values
// and gradients from tests/fixtures/math.txt (written by scripts/fixtures_math.py), which also checks
// the gradients of the elementwise ops that predate autograd. Then the errors these ops raise.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_math
#include <initializer_list>
#include <optional>
#include <string>

#include "expect_error.h"
#include "fixture_harness.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::Scalar;
using lazygrad::Tensor;

std::optional<Scalar> opt_scalar(const Case& c, const std::string& key) {
  if (!c.has(key)) return std::nullopt;
  return c.scalar(key);
}
std::optional<double> opt_double(const Case& c, const std::string& key) {
  if (!c.has(key)) return std::nullopt;
  return c.f(key);
}

// clamp with tensor bounds: the inputs after x are min and/or max, as the case's `bounds` says.
Tensor clamp_tensors(const Case& c, const Ins& x) {
  std::string bounds = c.str("bounds");
  std::optional<Tensor> lo, hi;
  size_t k = 1;
  if (bounds == "both" || bounds == "min") lo = x.at(k++);
  if (bounds == "both" || bounds == "max") hi = x.at(k);
  return x.at(0).clamp(lo, hi);
}

const fixtures::OpTable& math_ops() {
  static const fixtures::OpTable table = {
      // existing ops, for their gradients
      {"exp", [](const Case&, const Ins& x) { return x.at(0).exp(); }},
      {"log", [](const Case&, const Ins& x) { return x.at(0).log(); }},
      {"exp2", [](const Case&, const Ins& x) { return x.at(0).exp2(); }},
      {"log2", [](const Case&, const Ins& x) { return x.at(0).log2(); }},
      {"sqrt", [](const Case&, const Ins& x) { return x.at(0).sqrt(); }},
      {"sin", [](const Case&, const Ins& x) { return x.at(0).sin(); }},
      {"cos", [](const Case&, const Ins& x) { return x.at(0).cos(); }},
      {"abs", [](const Case&, const Ins& x) { return x.at(0).abs(); }},
      {"reciprocal", [](const Case&, const Ins& x) { return x.at(0).reciprocal(); }},
      {"relu", [](const Case&, const Ins& x) { return x.at(0).relu(); }},
      {"floor", [](const Case&, const Ins& x) { return x.at(0).floor(); }},
      {"ceil", [](const Case&, const Ins& x) { return x.at(0).ceil(); }},
      {"trunc", [](const Case&, const Ins& x) { return x.at(0).trunc(); }},
      {"maximum", [](const Case&, const Ins& x) { return x.at(0).maximum(x.at(1)); }},
      {"minimum", [](const Case&, const Ins& x) { return x.at(0).minimum(x.at(1)); }},
      {"pow.tt", [](const Case&, const Ins& x) { return x.at(0).pow(x.at(1)); }},
      {"pow.ts", [](const Case& c, const Ins& x) { return x.at(0).pow(c.scalar("exponent")); }},
      // math
      {"rsqrt", [](const Case&, const Ins& x) { return x.at(0).rsqrt(); }},
      {"tan", [](const Case&, const Ins& x) { return x.at(0).tan(); }},
      {"tanh", [](const Case&, const Ins& x) { return x.at(0).tanh(); }},
      {"sigmoid", [](const Case&, const Ins& x) { return x.at(0).sigmoid(); }},
      {"expm1", [](const Case&, const Ins& x) { return x.at(0).expm1(); }},
      {"log1p", [](const Case&, const Ins& x) { return x.at(0).log1p(); }},
      {"erf", [](const Case&, const Ins& x) { return x.at(0).erf(); }},
      {"erfc", [](const Case&, const Ins& x) { return x.at(0).erfc(); }},
      {"sign", [](const Case&, const Ins& x) { return x.at(0).sign(); }},
      {"square", [](const Case&, const Ins& x) { return x.at(0).square(); }},
      {"round", [](const Case&, const Ins& x) { return x.at(0).round(); }},
      {"clamp.s", [](const Case& c, const Ins& x) { return x.at(0).clamp(opt_scalar(c, "min"), opt_scalar(c, "max")); }},
      {"clamp.t", clamp_tensors},
      {"lerp.s", [](const Case& c, const Ins& x) { return x.at(0).lerp(x.at(1), c.scalar("weight")); }},
      {"lerp.t", [](const Case&, const Ins& x) { return x.at(0).lerp(x.at(1), x.at(2)); }},
      {"isnan", [](const Case&, const Ins& x) { return x.at(0).isnan(); }},
      {"isinf", [](const Case&, const Ins& x) { return x.at(0).isinf(); }},
      {"nan_to_num",
       [](const Case& c, const Ins& x) {
         return x.at(0).nan_to_num(c.f_or("nan", 0.0), opt_double(c, "posinf"), opt_double(c, "neginf"));
       }},
      // activations
      {"relu6", [](const Case&, const Ins& x) { return x.at(0).relu6(); }},
      {"hardtanh",
       [](const Case& c, const Ins& x) { return x.at(0).hardtanh(c.f_or("min_val", -1.0), c.f_or("max_val", 1.0)); }},
      {"leaky_relu", [](const Case& c, const Ins& x) { return x.at(0).leaky_relu(c.f_or("negative_slope", 0.01)); }},
      {"elu", [](const Case& c, const Ins& x) { return x.at(0).elu(c.f_or("alpha", 1.0)); }},
      {"selu", [](const Case&, const Ins& x) { return x.at(0).selu(); }},
      {"gelu",
       [](const Case& c, const Ins& x) { return x.at(0).gelu(c.has("approximate") ? c.str("approximate") : "none"); }},
      {"silu", [](const Case&, const Ins& x) { return x.at(0).silu(); }},
      {"mish", [](const Case&, const Ins& x) { return x.at(0).mish(); }},
      {"softplus",
       [](const Case& c, const Ins& x) { return x.at(0).softplus(c.f_or("beta", 1.0), c.f_or("threshold", 20.0)); }},
      {"softsign", [](const Case&, const Ins& x) { return x.at(0).softsign(); }},
      {"hardswish", [](const Case&, const Ins& x) { return x.at(0).hardswish(); }},
      {"hardsigmoid", [](const Case&, const Ins& x) { return x.at(0).hardsigmoid(); }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(MathParity, math_ops(), "math.txt")

// ---- errors: lazygrad::Error whose message names the op (and the shapes or dtype at fault) ----

Tensor f32(const lazygrad::Shape& s) { return Tensor::zeros(s); }
Tensor i64(const lazygrad::Shape& s) { return Tensor::zeros(s, lazygrad::kInt64); }

TEST(MathErrors, ClampNeedsABound) {
  expect_error([] { f32({2}).clamp(std::optional<Scalar>(), std::optional<Scalar>()); }, {"clamp"});
  expect_error([] { f32({2}).clamp(std::optional<Tensor>(), std::optional<Tensor>()); }, {"clamp"});
}

TEST(MathErrors, ClampBoundsMustBroadcast) {
  expect_error([] { f32({2, 3}).clamp(std::optional<Tensor>(f32({4})), std::nullopt); }, {"clamp", "{2, 3}", "{4}"});
  expect_error([] { f32({3}).clamp(f32({3}), f32({2, 1, 2})); }, {"clamp", "{2, 1, 2}"});
}

TEST(MathErrors, LerpShapesAndDtypes) {
  expect_error([] { f32({2, 3}).lerp(f32({4}), 0.5); }, {"lerp", "{2, 3}", "{4}"});
  expect_error([] { f32({3}).lerp(f32({3}), f32({2})); }, {"lerp", "{3}", "{2}"});
  expect_error([] { f32({3}).lerp(Tensor::zeros({3}, lazygrad::kFloat64), 0.5); }, {"lerp", "float64"});
  expect_error([] { f32({3}).lerp(f32({3}), Tensor::zeros({3}, lazygrad::kFloat64)); }, {"lerp", "weight"});
  expect_error([] { i64({3}).lerp(i64({3}), 0.5); }, {"lerp", "int64"});
}

TEST(MathErrors, FloatOnlyActivationsRejectIntegers) {
  expect_error([] { i64({3}).leaky_relu(); }, {"leaky_relu", "int64"});
  expect_error([] { i64({3}).elu(); }, {"elu", "int64"});
  expect_error([] { i64({3}).selu(); }, {"selu", "int64"});
  expect_error([] { i64({3}).gelu(); }, {"gelu", "int64"});
  expect_error([] { i64({3}).silu(); }, {"silu", "int64"});
  expect_error([] { i64({3}).mish(); }, {"mish", "int64"});
  expect_error([] { i64({3}).softplus(); }, {"softplus", "int64"});
  expect_error([] { i64({3}).hardswish(); }, {"hardswish", "int64"});
  expect_error([] { i64({3}).hardsigmoid(); }, {"hardsigmoid", "int64"});
}

TEST(MathErrors, BoolInputs) {
  Tensor b = Tensor::zeros({3}, lazygrad::kBool);
  expect_error([&] { b.round(); }, {"round", "bool"});
  expect_error([&] { b.relu6(); }, {"relu6", "bool"});
  expect_error([&] { b.hardtanh(); }, {"hardtanh", "bool"});
  expect_error([&] { b.softsign(); }, {"softsign", "bool"});
}

TEST(MathErrors, BadArguments) {
  expect_error([] { f32({3}).gelu("erf"); }, {"gelu", "erf"});
  expect_error([] { Tensor::zeros({3}, lazygrad::kUInt8).hardtanh(); }, {"hardtanh", "unsigned"});
}

}  // namespace
