// PyTorch parity of the elementwise math ops and activations (src/tensor/math.cpp): forward values
// and gradients from tests/fixtures/math.txt (written by scripts/fixtures_math.py), which also checks
// the gradients of the elementwise ops that predate autograd. Then integer shifts past the type's
// width (PyTorch's definition), and the errors these ops raise.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_math
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "expect_error.h"
#include "fixture_harness.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::Scalar;
using lazygrad::Shape;
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

// ---- integer shifts: PyTorch's definition where C's shift is undefined ----

// PyTorch's rule (ATen's lshift/rshift kernels since 2.1; the 1.13 on this machine gives whatever
// the hardware does, e.g. int32 >> 32 is the input): a count outside [0, bits) shifts every bit
// out. Written with C++20's defined shifts of in-range counts.
template <class T>
T torch_shl(T a, T s) {
  constexpr int bits = sizeof(T) * 8;
  if (s < 0 || s >= bits) return 0;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << s);
}
template <class T>
T torch_shr(T a, T s) {
  constexpr int bits = sizeof(T) * 8;
  if (s < 0 || s >= bits) return std::is_signed_v<T> && a < 0 ? T(-1) : T(0);
  return static_cast<T>(a >> s);
}

template <class T>
void check_shifts() {
  constexpr int64_t bits = sizeof(T) * 8;
  std::vector<int64_t> counts{0, 1, bits - 1, bits, bits + 1, 40, 70, 127};
  if (std::is_signed_v<T>) counts.insert(counts.end(), {-1, -2, -bits, -70});
  // 64 values per count: whole vector lanes as well as the scalar code.
  std::vector<T> a, s;
  for (int64_t c : counts)
    for (int k = 0; k < 64; k++) {
      a.push_back(static_cast<T>(k % 2 ? -(k * 37 + 5) : k * 1001 + 3));
      s.push_back(static_cast<T>(c));
    }
  Shape shape{static_cast<int64_t>(a.size())};
  Tensor ta = Tensor::from_vector(a, shape), ts = Tensor::from_vector(s, shape);
  std::vector<T> shl = (ta << ts).template to_vector<T>(), shr = (ta >> ts).template to_vector<T>();
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_EQ(shl[i], torch_shl(a[i], s[i]))
        << lazygrad::dtype_name(ta.dtype()) << " " << +a[i] << " << " << +s[i];
    EXPECT_EQ(shr[i], torch_shr(a[i], s[i]))
        << lazygrad::dtype_name(ta.dtype()) << " " << +a[i] << " >> " << +s[i];
  }
  std::vector<int64_t> literal_counts{bits - 1, bits, 70};
  if (std::is_signed_v<T>) literal_counts.push_back(-1);
  for (int64_t c : literal_counts) {  // a constant count (the C compiler sees the literal)
    std::vector<T> l = (ta << Scalar(c)).template to_vector<T>(),
                   r = (ta >> Scalar(c)).template to_vector<T>();
    for (size_t i = 0; i < 64; i++) {
      EXPECT_EQ(l[i], torch_shl(a[i], static_cast<T>(c))) << +a[i] << " << " << c;
      EXPECT_EQ(r[i], torch_shr(a[i], static_cast<T>(c))) << +a[i] << " >> " << c;
    }
  }
}

TEST(IntegerShifts, CountsOutsideTheWidthAreDefinedAsInPyTorch) {
  check_shifts<int8_t>();
  check_shifts<int16_t>();
  check_shifts<int32_t>();
  check_shifts<int64_t>();
  check_shifts<uint8_t>();
  check_shifts<uint16_t>();
  check_shifts<uint32_t>();
  check_shifts<uint64_t>();
}

TEST(IntegerShifts, TheIssuesCases) {
  // int32 >> 32 returned its input and << 40 gave 0 by luck (C leaves both undefined).
  Tensor x = Tensor::from_vector<int32_t>({5, -5, 1}, {3});
  EXPECT_EQ((x >> 32).to_vector<int32_t>(), (std::vector<int32_t>{0, -1, 0}));
  EXPECT_EQ((x << 40).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ((x << -1).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ((x >> -1).to_vector<int32_t>(), (std::vector<int32_t>{0, -1, 0}));
  EXPECT_EQ((x << 31).to_vector<int32_t>(), (std::vector<int32_t>{INT32_MIN, INT32_MIN, INT32_MIN}));
  // PyTorch refuses bool << bool ("not implemented for 'Bool'"); bool << int shifts as int64.
  Tensor b = Tensor::from_vector<bool>({true, false}, {2});
  expect_error([&] { (void)(b << b); }, {"bitwise_left_shift", "bool"});
  expect_error([&] { (void)(b >> b); }, {"bitwise_right_shift", "bool"});
  EXPECT_EQ((b << 3).to_vector<int64_t>(), (std::vector<int64_t>{8, 0}));
}

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
