// PyTorch parity of issue 16's math group: inverse trigonometric and hyperbolic functions, log10,
// atan2, fmod, copysign, logaddexp/logaddexp2, isclose, softmin, normalize, diag, diagonal, unfold,
// cummax/cummin, logcumsumexp and F.unfold (lazygrad::unfold). Forward values and gradients from
// tests/fixtures/api_math.txt (written by scripts/fixtures_api_math.py), finite-difference
// gradchecks of the differentiable ops, the views being views, and the errors with the kind
// PyTorch's Python class would be.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_api_math
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "expect_error.h"
#include "fixture_harness.h"
#include "lazygrad/gradcheck.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::ErrorKind;
using lazygrad::Scalar;
using lazygrad::Shape;
using lazygrad::Tensor;

Tensor part(const Case& c, const Tensor::ValuesIndices& r) {
  return c.str("part") == "values" ? r.values : r.indices;
}

// F.unfold: the int-or-pair arguments absent from a case take PyTorch's defaults.
Tensor im2col(const Case& c, const Ins& x) {
  auto ints = [&](const char* key, int64_t dflt) {
    return c.has(key) ? Tensor::IntList(c.ints(key)) : Tensor::IntList(dflt);
  };
  return lazygrad::unfold(x.at(0), ints("kernel_size", 0), ints("dilation", 1), ints("padding", 0),
                          ints("stride", 1));
}

const fixtures::OpTable& api_math_ops() {
  static const fixtures::OpTable table = {
      {"asin", [](const Case&, const Ins& x) { return x.at(0).asin(); }},
      {"acos", [](const Case&, const Ins& x) { return x.at(0).acos(); }},
      {"atan", [](const Case&, const Ins& x) { return x.at(0).atan(); }},
      {"sinh", [](const Case&, const Ins& x) { return x.at(0).sinh(); }},
      {"cosh", [](const Case&, const Ins& x) { return x.at(0).cosh(); }},
      {"asinh", [](const Case&, const Ins& x) { return x.at(0).asinh(); }},
      {"acosh", [](const Case&, const Ins& x) { return x.at(0).acosh(); }},
      {"atanh", [](const Case&, const Ins& x) { return x.at(0).atanh(); }},
      {"log10", [](const Case&, const Ins& x) { return x.at(0).log10(); }},
      {"atan2", [](const Case&, const Ins& x) { return x.at(0).atan2(x.at(1)); }},
      {"fmod.tt", [](const Case&, const Ins& x) { return x.at(0).fmod(x.at(1)); }},
      {"fmod.ts", [](const Case& c, const Ins& x) { return x.at(0).fmod(c.scalar("other")); }},
      {"copysign.tt", [](const Case&, const Ins& x) { return x.at(0).copysign(x.at(1)); }},
      {"copysign.ts", [](const Case& c, const Ins& x) { return x.at(0).copysign(c.scalar("other")); }},
      {"logaddexp", [](const Case&, const Ins& x) { return x.at(0).logaddexp(x.at(1)); }},
      {"logaddexp2", [](const Case&, const Ins& x) { return x.at(0).logaddexp2(x.at(1)); }},
      {"isclose",
       [](const Case& c, const Ins& x) {
         return x.at(0).isclose(x.at(1), c.f_or("rtol", 1e-05), c.f_or("atol", 1e-08), c.flag("equal_nan"));
       }},
      {"softmin", [](const Case& c, const Ins& x) { return x.at(0).softmin(c.i("dim")); }},
      {"normalize",
       [](const Case& c, const Ins& x) {
         return x.at(0).normalize(c.f_or("p", 2.0), c.i_or("dim", 1), c.f_or("eps", 1e-12));
       }},
      {"diag", [](const Case& c, const Ins& x) { return x.at(0).diag(c.i_or("diagonal", 0)); }},
      {"diagonal",
       [](const Case& c, const Ins& x) {
         return x.at(0).diagonal(c.i_or("offset", 0), c.i_or("dim1", 0), c.i_or("dim2", 1));
       }},
      {"unfold", [](const Case& c,
                    const Ins& x) { return x.at(0).unfold(c.i("dimension"), c.i("size"), c.i("step")); }},
      {"im2col", im2col},
      {"cummax", [](const Case& c, const Ins& x) { return part(c, x.at(0).cummax(c.i("dim"))); }},
      {"cummin", [](const Case& c, const Ins& x) { return part(c, x.at(0).cummin(c.i("dim"))); }},
      {"logcumsumexp", [](const Case& c, const Ins& x) { return x.at(0).logcumsumexp(c.i("dim")); }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(ApiMathParity, api_math_ops(), "api_math.txt")

// ---- finite differences (float64) ----

Tensor f64(std::vector<double> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, {n});
}

void expect_gradcheck(const char* op, const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& inputs) {
  lazygrad::GradcheckResult r = lazygrad::gradcheck(fn, inputs);
  EXPECT_TRUE(r.ok) << op << ": " << r.message;
}

TEST(ApiMathGradcheck, Unary) {
  Tensor unit = f64({-0.9, -0.3, 0.2, 0.8}), any = f64({-3.0, -0.4, 0.7, 2.5}),
         big = f64({1.2, 2.0, 7.5, 40.0});
  expect_gradcheck("asin", [](const auto& x) { return x[0].asin(); }, {unit});
  expect_gradcheck("acos", [](const auto& x) { return x[0].acos(); }, {unit});
  expect_gradcheck("atan", [](const auto& x) { return x[0].atan(); }, {any});
  expect_gradcheck("sinh", [](const auto& x) { return x[0].sinh(); }, {any});
  expect_gradcheck("cosh", [](const auto& x) { return x[0].cosh(); }, {any});
  expect_gradcheck("asinh", [](const auto& x) { return x[0].asinh(); }, {any});
  expect_gradcheck("acosh", [](const auto& x) { return x[0].acosh(); }, {big});
  expect_gradcheck("atanh", [](const auto& x) { return x[0].atanh(); }, {unit});
  expect_gradcheck("log10", [](const auto& x) { return x[0].log10(); }, {big});
  expect_gradcheck("softmin", [](const auto& x) { return x[0].softmin(0); }, {any});
  expect_gradcheck("normalize", [](const auto& x) { return x[0].reshape({2, 2}).normalize(2.0, 1); }, {any});
  expect_gradcheck("normalize", [](const auto& x) { return x[0].reshape({2, 2}).normalize(3.0, 0); }, {any});
  expect_gradcheck("logcumsumexp", [](const auto& x) { return x[0].logcumsumexp(0); }, {any});
  expect_gradcheck("cummax", [](const auto& x) { return x[0].cummax(0).values; }, {any});
  expect_gradcheck("cummin", [](const auto& x) { return x[0].cummin(0).values; }, {any});
  expect_gradcheck("diag", [](const auto& x) { return x[0].diag(1); }, {any});
  expect_gradcheck("diagonal", [](const auto& x) { return x[0].reshape({2, 2}).diagonal(); }, {any});
  expect_gradcheck("unfold", [](const auto& x) { return x[0].unfold(0, 2, 1); }, {any});
  expect_gradcheck("F.unfold",
                   [](const auto& x) {
                     return lazygrad::unfold(x[0].reshape({1, 1, 2, 2}), 1, 2, 1, 2);
                   },
                   {any});
}

TEST(ApiMathGradcheck, Binary) {
  // No quotient a / b is a whole number: fmod jumps there.
  Tensor a = f64({-3.1, -0.4, 0.7, 2.5}), b = f64({1.5, -2.0, -0.3, 0.9});
  expect_gradcheck("atan2", [](const auto& x) { return x[0].atan2(x[1]); }, {a, b});
  expect_gradcheck("fmod", [](const auto& x) { return x[0].fmod(x[1]); }, {a, b});
  expect_gradcheck("copysign", [](const auto& x) { return x[0].copysign(x[1]); }, {a, b});
  expect_gradcheck("logaddexp", [](const auto& x) { return x[0].logaddexp(x[1]); }, {a, b});
  expect_gradcheck("logaddexp2", [](const auto& x) { return x[0].logaddexp2(x[1]); }, {a, b});
}

// ---- views and results ----

TEST(ApiMathViews, DiagonalAndUnfoldAreViewsOfTheirInput) {
  Tensor x = Tensor::arange(12).reshape({3, 4}).to(lazygrad::kFloat32).contiguous().realize();
  Tensor d = x.diagonal(1), w = x.unfold(1, 2, 2);
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{1, 6, 11}));
  EXPECT_EQ(w.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  x.assign(x + 100);  // a view reads the base's new contents, as PyTorch's do
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{101, 106, 111}));
}

TEST(ApiMathResults, AllcloseIsABool) {
  Tensor a = Tensor::from_vector<float>({1.0f, 2.0f, NAN}, {3}),
         b = Tensor::from_vector<float>({1.0f, 2.000001f, NAN}, {3});
  EXPECT_FALSE(a.allclose(b));
  EXPECT_TRUE(a.allclose(b, 1e-05, 1e-08, true));
  EXPECT_FALSE(a.allclose(b, 0.0, 0.0, true));
}

TEST(ApiMathResults, CummaxIndicesAreInt64) {
  auto [values, indices] = Tensor::from_vector<int32_t>({3, 1, 3, 5}, {4}).cummax(0);
  EXPECT_EQ(values.dtype(), lazygrad::kInt32);
  EXPECT_EQ(indices.dtype(), lazygrad::kInt64);
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 3}));
}

// bitcast: the same bytes as another dtype (IEEE bit patterns known by heart), the last dimension
// scaled when the sizes differ, on a non-contiguous input too.
TEST(ApiMathBitcast, ReinterpretsTheBytes) {
  Tensor f = Tensor::from_vector<float>({1.0f, -2.0f, 0.5f, 0.0f}, {2, 2});
  EXPECT_EQ(f.bitcast(lazygrad::kInt32).to_vector<int64_t>(),
            (std::vector<int64_t>{0x3f800000, static_cast<int32_t>(0xc0000000), 0x3f000000, 0}));
  EXPECT_EQ(f.t().bitcast(lazygrad::kUInt32).to_vector<uint32_t>(),  // the transposed values' bits
            (std::vector<uint32_t>{0x3f800000u, 0x3f000000u, 0xc0000000u, 0u}));
  Tensor h = Tensor::from_vector<float>({1.0f, -2.0f}, {2}).to(lazygrad::kFloat16);
  EXPECT_EQ(h.bitcast(lazygrad::kUInt16).to_vector<int64_t>(), (std::vector<int64_t>{0x3c00, 0xc000}));
  Tensor bytes = f.bitcast(lazygrad::kUInt8);  // little-endian, 4 bytes per float
  EXPECT_EQ(bytes.shape(), (Shape{2, 8}));
  EXPECT_EQ(bytes.to_vector<int64_t>()[3], 0x3f);
  Tensor back = bytes.bitcast(lazygrad::kFloat32);
  EXPECT_EQ(back.shape(), (Shape{2, 2}));
  EXPECT_EQ(back.to_vector<float>(), f.to_vector<float>());
  EXPECT_EQ(Tensor::from_vector<int32_t>({}, {0, 4}).bitcast(lazygrad::kInt16).shape(), (Shape{0, 8}));
  Tensor w = Tensor::from_vector<float>({1.0f, 2.0f}, {2}).requires_grad(true);
  EXPECT_FALSE(w.bitcast(lazygrad::kInt32).requires_grad());  // no gradient, as PyTorch's view(dtype)
  EXPECT_FALSE(w.bitcast(lazygrad::kFloat32).requires_grad());
}

TEST(ApiMathBitcast, Errors) {
  Tensor f = Tensor::from_vector<float>({1.0f, 2.0f, 3.0f}, {3});
  expect_error([&] { f.bitcast(lazygrad::kBool); }, {"bitcast", "float32 {3} to bool"});
  expect_error([&] { f.bitcast(lazygrad::kFloat64); }, {"bitcast", "12 bytes", "float64"});
  expect_error([&] { Tensor::full({}, 1.0f).bitcast(lazygrad::kFloat16); }, {"bitcast", "0-d"});
}

TEST(ApiMathResults, IntegerFmodByZeroIsAnError) {
  // PyTorch raises ZeroDivisionError (a RuntimeError) for an integer divisor of 0, as remainder.
  Tensor a = Tensor::from_vector<int32_t>({5, -5}, {2}), b = Tensor::from_vector<int32_t>({0, 2}, {2});
  expect_error([&] { a.fmod(b).to_vector<int32_t>(); }, {"division by zero"});
}

TEST(ApiMathResults, FloorDivisionRemainderAndAbsAtTheEdgesAreBitsPyTorchGives) {
  // torch 1.13's values, including the sign of each zero: a quotient that rounds up to an integer
  // (1 / 0.1f), one that underflows to 0 (a subnormal over -3: the compiler fuzzer's seed 30111),
  // zero dividends and divisors.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a{1.0f, 1e-45f, -1e-45f, 7.0f, -7.0f, 0.0f, -0.0f, 5.0f, 1.0f, 3.0f, 0.3f};
  const std::vector<float> b{0.1f, -3.0f, 3.0f, 2.0f, 2.0f, -2.0f, 2.0f, 0.0f, -0.0f, 1.5f, 0.1f};
  const std::vector<float> floor_divide{9, -1, -1, 3, -4, -0.0f, -0.0f, inf, -inf, 2, 3};
  const std::vector<float> remainder{0.099999986588954926f,  -3, 3, 1, 1, 0, -0.0f, nan, nan, 0,
                                     7.4505805969238281e-09f};
  Tensor x = Tensor::from_vector(a, {11}), y = Tensor::from_vector(b, {11});
  auto same = [&](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    for (size_t i = 0; i < want.size(); i++) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << what << " " << a[i] << ", " << b[i];
        continue;
      }
      if (std::fpclassify(a[i]) == FP_SUBNORMAL && !fixtures::default_device_keeps_subnormals()) continue;
      EXPECT_EQ(got[i], want[i]) << what << " " << a[i] << ", " << b[i];
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " " << a[i] << ", " << b[i];
    }
  };
  same(x.floor_divide(y).to_vector<float>(), floor_divide, "floor_divide");
  same(x.remainder(y).to_vector<float>(), remainder, "remainder");
  // abs and copysign of zeros: +0.0 and the sign's.
  Tensor zeros = Tensor::from_vector(std::vector<float>{0.0f, -0.0f, 0.0f, -0.0f}, {4});
  Tensor sign = Tensor::from_vector(std::vector<float>{-0.0f, 0.0f, -1.0f, 2.0f}, {4});
  same(zeros.abs().to_vector<float>(), {0.0f, 0.0f, 0.0f, 0.0f}, "abs");
  same(zeros.copysign(sign).to_vector<float>(), {-0.0f, 0.0f, -0.0f, 0.0f}, "copysign");
}

// ---- errors: the op and the shapes in the message, and PyTorch's class as the kind ----

void expect_kind(const std::function<void()>& call, ErrorKind kind,
                 std::initializer_list<std::string> words) {
  expect_error(call, words);
  try {
    call();
  } catch (const lazygrad::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
  }
}

Tensor f32(const Shape& s) { return Tensor::zeros(s); }

TEST(ApiMathErrors, ShapesThatDoNotBroadcastAreRuntimeErrors) {
  for (auto op : std::vector<std::function<Tensor(const Tensor&, const Tensor&)>>{
           [](const Tensor&a, const Tensor&b) { return a.atan2(b); },
           [](const Tensor&a, const Tensor&b) { return a.fmod(b); },
           [](const Tensor&a, const Tensor&b) { return a.copysign(b); },
           [](const Tensor&a, const Tensor&b) { return a.logaddexp(b); },
           [](const Tensor&a, const Tensor&b) { return a.logaddexp2(b); },
           [](const Tensor&a, const Tensor&b) { return a.isclose(b); }})
    expect_kind([&] { op(f32({2, 3}), f32({4})); }, ErrorKind::Runtime, {"{2, 3}", "{4}"});
  expect_kind([] { f32({2, 3}).atan2(f32({4})); }, ErrorKind::Runtime, {"atan2"});
  expect_kind([] { f32({2, 3}).fmod(f32({4})); }, ErrorKind::Runtime, {"fmod"});
  expect_kind([] { f32({2, 3}).logaddexp2(f32({4})); }, ErrorKind::Runtime, {"logaddexp2"});
}

TEST(ApiMathErrors, DimensionsOutOfRangeAreIndexErrors) {
  expect_kind([] { f32({3}).cummax(1); }, ErrorKind::Index, {"cummax"});
  expect_kind([] { f32({3}).cummin(-2); }, ErrorKind::Index, {"cummin"});
  expect_kind([] { f32({3}).logcumsumexp(1); }, ErrorKind::Index, {"logcumsumexp"});
  expect_kind([] { f32({3}).softmin(2); }, ErrorKind::Index, {"softmin"});
  expect_kind([] { f32({3}).normalize(2.0, 1); }, ErrorKind::Index, {"normalize"});
  expect_kind([] { f32({3}).diagonal(); }, ErrorKind::Index, {"diagonal"});
  expect_kind([] { f32({3, 4}).unfold(2, 1, 1); }, ErrorKind::Index, {"unfold"});
}

TEST(ApiMathErrors, BadArguments) {
  expect_kind([] { f32({3, 4}).unfold(1, 5, 1); }, ErrorKind::Runtime, {"unfold", "size", "{3, 4}"});
  expect_kind([] { f32({3, 4}).unfold(1, 2, 0); }, ErrorKind::Runtime, {"unfold", "step"});
  expect_kind([] { f32({2, 3, 4}).diag(); }, ErrorKind::Runtime, {"diag", "{2, 3, 4}"});
  expect_kind([] { f32({2, 3, 4}).diagonal(0, 1, -2); }, ErrorKind::Runtime, {"diagonal", "{2, 3, 4}"});
  expect_kind([] { f32({3}).isclose(Tensor::zeros({3}, lazygrad::kFloat64)); }, ErrorKind::Runtime,
              {"isclose", "float32", "float64"});
  expect_kind([] { f32({3}).isclose(f32({3}), -1.0); }, ErrorKind::Runtime, {"isclose", "rtol"});
  expect_kind([] { f32({3}).isclose(f32({3}), 0.0, -1.0); }, ErrorKind::Runtime, {"isclose", "atol"});
}

TEST(ApiMathErrors, Im2colArguments) {
  Tensor x = f32({1, 2, 3, 4});
  expect_kind([&] { lazygrad::unfold(x, 0); }, ErrorKind::Runtime,
              {"unfold", "kernel_size", "greater than zero"});
  expect_kind([&] { lazygrad::unfold(x, 2, 1, -1); }, ErrorKind::Runtime,
              {"unfold", "padding", "non-negative"});
  expect_kind([&] { lazygrad::unfold(x, 2, 1, 0, 0); }, ErrorKind::Runtime, {"unfold", "stride"});
  expect_kind([&] { lazygrad::unfold(x, {1, 2, 3}); }, ErrorKind::Runtime, {"unfold", "kernel_size"});
  expect_kind([&] { lazygrad::unfold(x, 5); }, ErrorKind::Runtime,
              {"unfold", "{1, 2, 3, 4}", "no sliding block"});
  expect_kind([] { lazygrad::unfold(f32({3, 4}), 2); }, ErrorKind::Runtime, {"unfold", "{3, 4}"});
}

TEST(ApiMathErrors, DtypesPyTorchDoesNotImplement) {
  Tensor i = Tensor::zeros({3}, lazygrad::kInt64), b = Tensor::zeros({3}, lazygrad::kBool);
  expect_kind([&] { i.logaddexp(i); }, ErrorKind::Runtime, {"logaddexp", "int64"});
  expect_kind([&] { i.logaddexp2(i); }, ErrorKind::Runtime, {"logaddexp2", "int64"});
  expect_kind([&] { i.logcumsumexp(0); }, ErrorKind::Runtime, {"logcumsumexp", "int64"});
  expect_kind([&] { b.fmod(b); }, ErrorKind::Runtime, {"fmod", "bool"});
  expect_kind([&] { i.normalize(); }, ErrorKind::Runtime, {"normalize", "int64"});
}

}  // namespace
