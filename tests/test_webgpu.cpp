// The WebGPU device (docs/webgpu.md): WGSL kernels run in one headless Chromium for the whole test
// process, on its WebGPU adapter (SwiftShader here), compared with the CPU's results: elementwise
// float32 and int32 ops, the packed narrow dtypes, reductions, a matrix product, NaN and infinity at
// the edges WGSL leaves open, kernel errors, 64-bit integers (emulated as vec2<u32>) bit for bit at
// their edges, random numbers, and the Errors for what WGSL cannot hold (float64 data, too many
// buffers in one kernel). Every case skips, saying why, where there is no Chromium or no WebGPU
// adapter.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "expect_error.h"
#include "forced_opts.h"
#include "renderer/renderer.h"
#include "runtime/device.h"
#include "skip_without_webgpu.h"

using namespace lazygrad;

namespace {

const char* kDev = "WEBGPU";

// Values with the edges: zeros of both signs, negatives, large and small magnitudes.
std::vector<float> floats(size_t n, float scale = 3.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f);
  if (n > 2) v[1] = -0.0f, v[2] = 0.0f;
  return v;
}

// The same function of tensors made from `data` on the CPU and on WEBGPU: equal within tol
// (relative), NaN where the CPU has NaN, infinities of the same sign.
template <class T, class Fn>
void expect_like_cpu(const std::vector<std::vector<T>>& data, const Shape& shape, Fn fn, double tol = 1e-6) {
  std::vector<Tensor> cpu, gpu;
  for (const auto& d : data) {
    cpu.push_back(Tensor::from_vector<T>(d, shape, "CPU"));
    gpu.push_back(Tensor::from_vector<T>(d, shape, kDev));
  }
  Tensor want = fn(cpu), got = fn(gpu);
  ASSERT_EQ(got.device(), kDev);
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> w = want.to_vector<double>(), g = got.to_vector<double>();
  for (size_t i = 0; i < w.size(); i++) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "element " << i << ": " << g[i] << ", not NaN";
    } else if (std::isinf(w[i])) {
      EXPECT_EQ(g[i], w[i]) << "element " << i;
    } else {
      EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
    }
  }
}

// The same function on the CPU and on WEBGPU, equal bit for bit: integers as int64 (a uint64 as its
// bits), floats by their bits.
void expect_same_bits(const Tensor& want, const Tensor& got) {
  ASSERT_EQ(got.device(), kDev);
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  if (is_float(want.dtype())) {
    const std::vector<float> w = want.to_vector<float>(), g = got.to_vector<float>();
    for (size_t i = 0; i < w.size(); i++)
      EXPECT_EQ(std::bit_cast<uint32_t>(g[i]), std::bit_cast<uint32_t>(w[i]))
          << "element " << i << ": " << g[i] << ", the CPU " << w[i];
    return;
  }
  const std::vector<int64_t> w = want.to_vector<int64_t>(), g = got.to_vector<int64_t>();
  for (size_t i = 0; i < w.size(); i++) EXPECT_EQ(g[i], w[i]) << "element " << i;
}

template <class T, class Fn>
void expect_exactly_like_cpu(const std::vector<std::vector<T>>& data, const Shape& shape, Fn fn) {
  std::vector<Tensor> cpu, gpu;
  for (const auto& d : data) {
    cpu.push_back(Tensor::from_vector<T>(d, shape, "CPU"));
    gpu.push_back(Tensor::from_vector<T>(d, shape, kDev));
  }
  expect_same_bits(fn(cpu), fn(gpu));
}

using Ts = std::vector<Tensor>;

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min(), kMax64 = std::numeric_limits<int64_t>::max();

// int64 values at the edges: the extremes, the words' boundaries (2^31, 2^32), small ones of both
// signs, and large ones with bits in both words.
std::vector<int64_t> edge_int64s() {
  std::vector<int64_t> v{kMin64,
                         kMax64,
                         0,
                         1,
                         -1,
                         2,
                         -2,
                         7,
                         -7,
                         2147483647,
                         -2147483648,
                         2147483648,
                         -2147483649,
                         4294967295,
                         4294967296,
                         -4294967296,
                         4294967297,
                         kMin64 + 1,
                         kMax64 - 1,
                         1234567890123,
                         -987654321987654};
  for (int64_t k = 0; k < 11; k++)  // products and quotients with bits in both words
    v.push_back(static_cast<int64_t>(0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(k + 1)) >> (k * 5));
  return v;
}

}  // namespace

TEST(WebGpu, IsListedAndNamed) {
  bool listed = false;
  for (const DeviceInfo& d : devices())
    if (d.name == "WEBGPU") listed = true;
  EXPECT_TRUE(listed) << "devices() lists WEBGPU, available or not, with the reason";
  EXPECT_EQ(canonical_device("webgpu"), "WEBGPU");
  SKIP_WITHOUT_WEBGPU();
  const Target& t = device(kDev).renderer().target();
  EXPECT_EQ(t.language, "WGSL");
  EXPECT_FALSE(t.float64);
  EXPECT_TRUE(t.int64) << "emulated as vec2<u32>";
  expect_error([] { device("WEBGPU:1"); }, {"WEBGPU:1", "one WebGPU device"});
}

TEST(WebGpu, ElementwiseFloat32EqualsTheCpu) {
  SKIP_WITHOUT_WEBGPU();
  const size_t n = 1000;  // not a multiple of the work-group size: the last group is cut short
  std::vector<float> a = floats(n), b = floats(n, 2.0f), c = floats(n, 0.5f);
  for (size_t i = 0; i < n; i++) b[i] += 0.25f;
  expect_like_cpu<float>({a, b, c}, {10, 100},
                         [](const Ts& t) { return ((t[0] + t[1]) * t[2] - t[1]).relu(); });
  expect_like_cpu<float>(
      {a, b}, {10, 100}, [](const Ts& t) { return t[0] / t[1]; }, 1e-6);
  expect_like_cpu<float>(
      {a}, {n}, [](const Ts& t) { return t[0].exp() + t[0].exp2(); }, 2e-6);
  expect_like_cpu<float>(
      {a}, {n}, [](const Ts& t) { return t[0].abs().log() * t[0].abs().sqrt(); }, 1e-5);
  // WGSL's sin is accurate to an absolute 2^-11 in [-pi, pi] only; SwiftShader's does better.
  expect_like_cpu<float>(
      {a}, {n}, [](const Ts& t) { return t[0].sin() + (t[0] * 0.5f).cos(); }, 1e-5);
  expect_like_cpu<float>({a, b}, {n},
                         [](const Ts& t) { return t[0].maximum(t[1]).where(t[0] < t[1], t[1] * 2); });
  expect_like_cpu<float>(
      {a}, {n}, [](const Ts& t) { return t[0].sigmoid().tanh(); }, 1e-5);
  // Division: WGSL allows 2.5 ulp; SwiftShader's is IEEE's on these values (a / b * b - a exact).
  // Floor division and fmod of floats compute their quotient in float64, which WGSL computes in
  // f32 (docs/webgpu.md): within an ulp here, and the integer part right.
  expect_like_cpu<float>(
      {a, b}, {n}, [](const Ts& t) { return t[0].floor_divide(t[1]) + t[0].fmod(t[1]); }, 1e-6);
  expect_like_cpu<float>(
      {a, b}, {n}, [](const Ts& t) { return t[0] / t[1] * t[1] - t[0]; }, 0);
}

TEST(WebGpu, ElementwiseInt32EqualsTheCpu) {
  SKIP_WITHOUT_WEBGPU();
  std::vector<int32_t> a, b;
  for (int i = 0; i < 300; i++) {
    a.push_back((i * 7919) % 2001 - 1000);
    b.push_back((i * 104729) % 41 - 20);
  }
  a[0] = std::numeric_limits<int32_t>::max(), a[1] = std::numeric_limits<int32_t>::min();
  b[0] = b[1] = 3;
  for (int32_t& x : b)
    if (x == 0) x = 7;
  // + and * wrap in two's complement (a[0] + 3 and a[1] * 3), as in PyTorch.
  expect_like_cpu<int32_t>(
      {a, b}, {300}, [](const Ts& t) { return t[0] + t[1] * t[0] - t[1]; }, 0);
  // Floor division and modulo of negatives round toward -inf, as Python's.
  expect_like_cpu<int32_t>(
      {a, b}, {300}, [](const Ts& t) { return t[0].floor_divide(t[1]) * 1000 + t[0] % t[1]; }, 0);
  expect_like_cpu<int32_t>(
      {a, b}, {300}, [](const Ts& t) { return (t[0] & t[1]) ^ (t[0] | 12345); }, 0);
  expect_like_cpu<int32_t>(
      {a, b}, {300}, [](const Ts& t) { return t[0].maximum(t[1]).where(t[0] < t[1], -t[1]); }, 0);
  // Shift counts outside [0, 32) shift every bit out, as the IR (and PyTorch) define them.
  expect_like_cpu<int32_t>(
      {a, b}, {300}, [](const Ts& t) { return (t[0] << (t[1] + 12)) + (t[0] >> (t[1] + 20)); }, 0);
  expect_like_cpu<int32_t>(
      {a}, {300}, [](const Ts& t) { return t[0].to(kFloat32) * 0.5f; }, 0);
}

TEST(WebGpu, NarrowDtypesArePackedAndWrittenLaneByLane) {
  SKIP_WITHOUT_WEBGPU();
  // 37 elements: the last word of each output is partly written, and neighbouring work-items write
  // lanes of one word at once. Values within int8's range (a float outside an integer type's range
  // converts to what C leaves undefined), products that wrap.
  std::vector<float> a = floats(37, 100.0f), b = floats(37, 2.0f);
  expect_like_cpu<float>(
      {a, b}, {37}, [](const Ts& t) { return t[0] < t[1]; }, 0);
  expect_like_cpu<float>(
      {a, b}, {37}, [](const Ts& t) { return (t[0] < t[1]).logical_not() & (t[0] != 0); }, 0);
  for (DType dt : {kUInt8, kInt8, kInt16, kUInt16, kFloat16, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    expect_like_cpu<float>(
        {a}, {37}, [dt](const Ts& t) { return t[0].to(dt); }, 0);
    expect_like_cpu<float>(
        {a, b}, {37}, [dt](const Ts& t) { return t[0].to(dt) * t[1].to(dt) + t[0].to(dt); }, 0);
    expect_like_cpu<float>(
        {a}, {37}, [dt](const Ts& t) { return t[0].to(dt).to(kFloat32) + 1; }, 0);
  }
}

TEST(WebGpu, ReductionsEqualTheCpu) {
  SKIP_WITHOUT_WEBGPU();
  std::vector<float> a = floats(64 * 33);
  expect_like_cpu<float>(
      {a}, {64, 33}, [](const Ts& t) { return t[0].sum(1); }, 1e-5);
  expect_like_cpu<float>(
      {a}, {64, 33}, [](const Ts& t) { return t[0].sum(0) + t[0].max(0); }, 1e-5);
  expect_like_cpu<float>(
      {a}, {64, 33}, [](const Ts& t) { return t[0].softmax(1); }, 1e-5);
  expect_like_cpu<float>(
      {a}, {64, 33}, [](const Ts& t) { return t[0].sum(); }, 1e-5);
  expect_like_cpu<float>(
      {a}, {64, 33}, [](const Ts& t) { return (t[0] * 0.1f + 1).prod(1); }, 1e-5);
  std::vector<int32_t> i(64 * 33);
  for (size_t k = 0; k < i.size(); k++) i[k] = static_cast<int32_t>(k * 37 % 101) - 50;
  expect_like_cpu<int32_t>(
      {i}, {64, 33}, [](const Ts& t) { return t[0].max(1); }, 0);
  // max propagates NaN, as torch.max does.
  a[5] = std::nanf("");
  expect_like_cpu<float>({a}, {64, 33}, [](const Ts& t) { return t[0].max(1); });
}

TEST(WebGpu, GroupedReductionsShareWorkgroupMemory) {
  SKIP_WITHOUT_WEBGPU();
  // Rows long enough for a Group opt (docs/devices.md, "Work-groups"): 4 rows of 4000 get groups of
  // 256; rows of 1000 get 128, which does not divide them (each work-item's last trip is partial).
  std::vector<float> a = floats(4 * 4000), b = floats(3 * 1000, 0.25f);
  a[77] = std::nanf("");
  testing::internal::CaptureStderr();
  set_debug(2);
  expect_like_cpu<float>(
      {a}, {4, 4000}, [](const Ts& t) { return t[0].sum(1); }, 1e-5);
  set_debug(0);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("R1:256"), std::string::npos) << "the sum is a grouped reduction:\n" << log;
  expect_like_cpu<float>({a}, {4, 4000}, [](const Ts& t) { return t[0].max(1); });  // NaN in row 0 wins
  expect_like_cpu<float>(
      {b}, {3, 1000}, [](const Ts& t) { return t[0].sum(1) + t[0].max(1); }, 1e-5);
  expect_like_cpu<float>(
      {b}, {3, 1000}, [](const Ts& t) { return (t[0] * 0.01f).exp().prod(1); }, 1e-5);
  expect_like_cpu<float>(
      {b}, {3000}, [](const Ts& t) { return t[0].sum(); }, 1e-5);
  expect_like_cpu<float>(
      {b}, {3, 1000}, [](const Ts& t) { return t[0].softmax(1); }, 1e-5);
  std::vector<int32_t> i(3 * 1000);
  for (size_t k = 0; k < i.size(); k++) i[k] = static_cast<int32_t>(k * 7919 % 100003) - 50000;
  expect_like_cpu<int32_t>(
      {i}, {3, 1000}, [](const Ts& t) { return t[0].max(1) - t[0].min(1); }, 0);
  std::vector<float> bits = floats(3 * 1000);
  expect_like_cpu<float>(
      {bits}, {3, 1000}, [](const Ts& t) { return (t[0] > 2.9f).any(1); }, 0);
}

TEST(WebGpu, MatmulEqualsTheCpu) {
  SKIP_WITHOUT_WEBGPU();
  std::vector<float> a = floats(37 * 65), b = floats(65 * 19, 0.5f);
  Tensor x = Tensor::from_vector<float>(a, {37, 65}), w = Tensor::from_vector<float>(b, {65, 19});
  Tensor want = (x.matmul(w) + 1).relu();
  Tensor got = (x.to(kDev).matmul(w.to(kDev)) + 1).relu();
  const std::vector<float> g = got.to_vector<float>(), e = want.to_vector<float>();
  ASSERT_EQ(g.size(), e.size());
  for (size_t k = 0; k < g.size(); k++) EXPECT_NEAR(g[k], e[k], 1e-4 * (1 + std::fabs(e[k]))) << k;
}

TEST(WebGpu, NanAndInfinityAreIeeesAtEveryEdge) {
  SKIP_WITHOUT_WEBGPU();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> a{1, -1, 0, -0.0f, inf, -inf, nan, 2, -2, 0};
  std::vector<float> b{0, 0, 0, 0, inf, 2, 1, -0.0f, nan, -inf};
  expect_like_cpu<float>({a, b}, {10}, [](const Ts& t) { return t[0] / t[1]; });
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].log(); });
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].log2(); });
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].sqrt(); });
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].exp(); });
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].sin(); });
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].reciprocal(); });
  expect_like_cpu<float>({a, b}, {10}, [](const Ts& t) { return t[0].maximum(t[1]); });
  expect_like_cpu<float>({a, b}, {10}, [](const Ts& t) { return t[0].minimum(t[1]); });
  expect_like_cpu<float>(
      {a}, {10}, [](const Ts& t) { return t[0].isnan(); }, 0);
  expect_like_cpu<float>(
      {a}, {10}, [](const Ts& t) { return t[0] != t[0]; }, 0);
  expect_like_cpu<float>(
      {a, b}, {10}, [](const Ts& t) { return t[0] < t[1]; }, 0);
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].relu(); });
  // The largest float as a constant (its 9 digits lie past FLT_MAX, which WGSL rejects as a literal).
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return t[0].nan_to_num(); });
  // x * 0 is a signed zero, NaN for NaN and inf (a Vulkan compiler may fold it to 0); trunc keeps
  // -0.0 so (1 / trunc(-0.5) is -inf).
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return (t[0] * 0.0f).reciprocal(); });
  expect_like_cpu<float>({a}, {10}, [](const Ts& t) { return (t[0] * 0.5f).trunc().reciprocal(); });
  // NaN and infinities as constants in a kernel (WGSL rejects them as literals: made from bits).
  Tensor c = Tensor::full({3}, inf, kFloat32, kDev) + Tensor::full({3}, -inf, kFloat32, kDev).exp();
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{inf, inf, inf}));
  EXPECT_TRUE(std::isnan(Tensor::full({2}, nan, kFloat32, kDev).to_vector<float>()[1]));
  // The bits themselves, both ways.
  Tensor bits =
      Tensor::from_vector<int32_t>({0x7f800000, static_cast<int32_t>(0xff800000), 0x7fc00000, 1}, {4}, kDev);
  const std::vector<float> f = bits.bitcast(kFloat32).to_vector<float>();
  EXPECT_EQ(f[0], inf);
  EXPECT_EQ(f[1], -inf);
  EXPECT_TRUE(std::isnan(f[2]));
}

// WGSL's own sin reduced a large argument inexactly (the compiler fuzzer's seed 2864: sin of
// -909927552 was 1, not 0.99921), and Cephes' reduction by pi/4 in three parts, used below 1e8,
// lost digits near the multiples of pi/2 past a few thousand (cos of 5518.2075 was 9 ulp off).
// lg_reduce_pio2 reduces every float32 exactly: within 2 ulp of the CPU's libm everywhere.
TEST(WebGpu, SinAndCosOfLargeArgumentsAreReducedExactly) {
  SKIP_WITHOUT_WEBGPU();
  std::vector<float> x{1e8f,           -1e8f,        1e20f,        -1e20f,      3.4e38f,     FLT_MAX,
                       -FLT_MAX,       -909927552.f, -137498864.f, 5518.20752f, 4124.91113f,
                       7.72917892e28f,  // 16367173 * 2^72, the float32 closest to a multiple of pi/2
                       1e30f,          8192.5f,      1e6f,         123456.789f};
  for (int k = 10; k <= 127; k += 9) {  // multiples of pi and of pi/2 near 2^k
    const double p = std::ldexp(1.0, k);
    x.push_back(static_cast<float>(std::nearbyint(p / M_PI) * M_PI));
    x.push_back(static_cast<float>((std::nearbyint(p / M_PI) + 0.5) * M_PI));
  }
  const Shape shape{static_cast<int64_t>(x.size())};
  for (bool cosine : {false, true}) {
    auto f = [cosine](const Tensor& t) { return cosine ? t.cos() : t.sin(); };
    const std::vector<float> want = f(Tensor::from_vector<float>(x, shape, "CPU")).to_vector<float>();
    const std::vector<float> got = f(Tensor::from_vector<float>(x, shape, kDev)).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < x.size(); i++) {
      // The distance in ulps: the floats' bits, ordered as integers across zero.
      auto ordered = [](float v) {
        const int32_t b = std::bit_cast<int32_t>(v);
        return b < 0 ? static_cast<int64_t>(INT32_MIN) - b : static_cast<int64_t>(b);
      };
      EXPECT_LE(std::abs(ordered(got[i]) - ordered(want[i])), 2)
          << (cosine ? "cos(" : "sin(") << x[i] << ") is " << got[i] << ", the CPU's " << want[i];
    }
  }
}

// The compiler fuzzer's seeds 3256 and 3718: a Group piece the code no longer indexed (axis 2 of
// the argmin in two pieces of a cat is the range axis 3 splits) made the launch's groups 4
// work-items while the kernel was written for 5 (docs/devices.md, "Work-groups"; test_work_groups).
TEST(WebGpu, AGroupPieceTheCodeDoesNotIndexLaunchesAsWritten) {
  SKIP_WITHOUT_WEBGPU();
  ForcedOpts forced([](const Kernel& k, const KernelAxes& ax) {
    if (ax.reduces.size() != 2) return required_opts(k);
    return std::vector<Opt>{{AxisKind::Upcast, 0, 3}, {AxisKind::Group, 2, 4}, {AxisKind::Unroll, 3, 4}};
  });
  std::vector<float> x = floats(16 * 5);
  x[7] = x[12];  // a tie: the first index wins
  auto argmin_twice = [&x](const char* dev) {
    Tensor a = Tensor::from_vector<float>(x, {16, 5}, dev).argmin(0, true).to(kInt32);
    Tensor b = Tensor::from_vector<int32_t>({2, -1051818258, -2, -2, 2}, {1, 5}, dev);
    return Tensor::cat({a, b, a}, 0);
  };
  expect_same_bits(argmin_twice("CPU"), argmin_twice(kDev));
  EXPECT_NE(std::find(forced.used.begin(), forced.used.end(), "U0:3 R2:4 N3:4"), forced.used.end())
      << testing::PrintToString(forced.used);
}

// The compiler fuzzer's seed 3820: 27 of a group of 32 work-items run no trip of a reduction over
// 5 elements, and divided by the bytes past the 5th (zeros here) when the loads and the remainder
// were hoisted out of the loop: "integer division by zero" (test_work_groups).
TEST(WebGpu, AnIdleWorkItemOfAGroupedReductionReadsNothing) {
  SKIP_WITHOUT_WEBGPU();
  ForcedOpts forced([](const Kernel& k, const KernelAxes& ax) {
    if (ax.ranges.size() == ax.n_output) return required_opts(k);
    return std::vector<Opt>{{AxisKind::Group, static_cast<int>(ax.n_output), 32}};
  });
  std::vector<uint8_t> x(32, 7), y(32, 0);
  const std::vector<uint8_t> xs{9, 193, 10, 2, 105}, ys{8, 1, 3, 3, 4};
  std::copy(xs.begin(), xs.end(), x.begin());
  std::copy(ys.begin(), ys.end(), y.begin());
  Tensor a = Tensor::from_vector<uint8_t>(x, {32}, kDev).narrow(0, 0, 5);
  Tensor b = Tensor::from_vector<uint8_t>(y, {32}, kDev).narrow(0, 0, 5);
  EXPECT_EQ(a.remainder(b).min(0).item<uint8_t>(), 0);
  EXPECT_EQ(a.remainder(b).max(0).item<uint8_t>(), 2);
  EXPECT_NE(std::find(forced.used.begin(), forced.used.end(), "R0:32"), forced.used.end());
}

TEST(WebGpu, IntegerDivisionByZeroIsTheCpusError) {
  SKIP_WITHOUT_WEBGPU();
  Tensor a = Tensor::from_vector<int32_t>({1, 2, 3}, {3}, kDev),
         b = Tensor::from_vector<int32_t>({1, 0, 1}, {3}, kDev);
  expect_error([&] { a.floor_divide(b).realize(); }, {"division by zero"});
  // The error word is cleared: the next kernel runs.
  EXPECT_EQ((a + 1).to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 4}));
}

TEST(WebGpu, WhatWgslCannotHoldIsAnErrorSayingWhat) {
  SKIP_WITHOUT_WEBGPU();
  // Buffers are made when a tensor is realized.
  expect_error([] { Tensor::ones({3}, kFloat64, kDev).realize(); }, {"WEBGPU", "float64", "64-bit"});
  expect_error([] { (Tensor::ones({3}, kFloat32, kDev).to(kFloat64) * 2).realize(); },
               {"WEBGPU", "float64", "64-bit"});
}

TEST(WebGpu, AKernelWithMoreBuffersThanTheDeviceBindsIsSplit) {
  SKIP_WITHOUT_WEBGPU();
  // One fused sum of 16 buffers, with its output 17 storage bindings: more than WebGPU's 8 and than
  // SwiftShader's 10. The scheduler computes part of the sum into a buffer of its own first
  // (engine/buffer_limit.h), as many times as it takes.
  std::vector<Tensor> parts;
  for (int i = 0; i < 16; i++)
    parts.push_back(Tensor::full({5}, static_cast<float>(i), kFloat32, kDev).realize());
  Tensor sum = parts[0];
  for (int i = 1; i < 16; i++) sum = sum + parts[i];
  const int64_t kernels = GlobalCounters::kernel_count;
  EXPECT_EQ(sum.to_vector<float>(), std::vector<float>(5, 120.0f));
  EXPECT_GE(GlobalCounters::kernel_count - kernels, 2);
}

TEST(WebGpu, ALargeGridRunsAsRowsOfWorkGroups) {
  SKIP_WITHOUT_WEBGPU();
  // More than 65535 groups of 64: the dispatch needs a second dimension.
  const int64_t n = 65535 * 64 + 1000;
  Tensor x = Tensor::ones({n}, kFloat32, kDev);
  Tensor y = x * 2 + Tensor::arange(static_cast<double>(n), kFloat32, kDev);
  const std::vector<float> v = y.to_vector<float>();
  ASSERT_EQ(static_cast<int64_t>(v.size()), n);
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_EQ(v[n - 1], static_cast<float>(n - 1) + 2.0f);
  EXPECT_EQ(v[65535 * 64], static_cast<float>(65535 * 64) + 2.0f);
}

TEST(WebGpu, CompileErrorsCarryTheWgslMessage) {
  SKIP_WITHOUT_WEBGPU();
  const std::string bad = "// lazygrad-wgsl bindings=w vars=- workgroup=1\nfn broken( {\n";
  expect_error([&] { device(kDev).compile("broken", bad); }, {"broken", "does not compile", "line "});
  // The failed shader leaves no error behind for the next call to throw.
  EXPECT_EQ((Tensor::ones({2}, kFloat32, kDev) + 1).to_vector<float>(), (std::vector<float>{2, 2}));
}

// ---- 64-bit integers: vec2<u32> in the kernel, array<vec2<u32>> buffers ---------------------------

TEST(WebGpu, Int64BuffersKeepEveryBit) {
  SKIP_WITHOUT_WEBGPU();
  const std::vector<int64_t> v = edge_int64s();
  const int64_t n = static_cast<int64_t>(v.size());
  EXPECT_EQ(Tensor::from_vector<int64_t>(v, {n}, kDev).to_vector<int64_t>(), v);
  std::vector<uint64_t> u;
  for (int64_t x : v) u.push_back(static_cast<uint64_t>(x));
  EXPECT_EQ(Tensor::from_vector<uint64_t>(u, {n}, kDev).to_vector<uint64_t>(), u);
  // A copy through a kernel (a strided view: the index math stays i32) and back to the CPU.
  Tensor t = Tensor::from_vector<int64_t>(v, {n}, kDev).flip({0}).contiguous().to("CPU");
  EXPECT_EQ(t.to_vector<int64_t>(), std::vector<int64_t>(v.rbegin(), v.rend()));
}

TEST(WebGpu, Int64ArithmeticWrapsAsTheCpus) {
  SKIP_WITHOUT_WEBGPU();
  // Every pair of edge values: sums and differences that wrap, products whose high bits come from
  // the cross terms, negation of INT64_MIN.
  const std::vector<int64_t> e = edge_int64s();
  std::vector<int64_t> a, b;
  for (int64_t x : e)
    for (int64_t y : e) a.push_back(x), b.push_back(y);
  const Shape shape{static_cast<int64_t>(a.size())};
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [](const Ts& t) { return t[0] + t[1]; });
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [](const Ts& t) { return t[0] - t[1]; });
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [](const Ts& t) { return t[0] * t[1]; });
  expect_exactly_like_cpu<int64_t>({a}, shape, [](const Ts& t) { return -t[0]; });
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [](const Ts& t) { return (t[0] & t[1]) ^ (t[0] | ~t[1]); });
  expect_exactly_like_cpu<int64_t>({a, b}, shape,
                                   [](const Ts& t) { return t[0].maximum(t[1]) - t[0].minimum(t[1]); });
  expect_exactly_like_cpu<int64_t>(
      {a, b}, shape, [](const Ts& t) { return (t[0] < t[1]) + (t[0] == t[1]) * 2 + (t[0] > t[1]) * 4; });
  expect_exactly_like_cpu<int64_t>({a, b}, shape,
                                   [](const Ts& t) { return t[0].where(t[0] < t[1], t[1] * 3); });
  // The same bits as uint64: unsigned order, max and products.
  auto u = [](const Tensor& x) { return x.to(kUInt64); };
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [&](const Ts& t) { return u(t[0]) * u(t[1]) + u(t[1]); });
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [&](const Ts& t) { return u(t[0]) < u(t[1]); });
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [&](const Ts& t) { return u(t[0]).maximum(u(t[1])); });
  // Constants that do not fit in 32 bits, in the kernel.
  expect_exactly_like_cpu<int64_t>({a}, shape,
                                   [](const Ts& t) { return t[0] * int64_t{0x100000001} + Scalar(kMin64); });
}

TEST(WebGpu, Int64ShiftsAsPyTorchsAtEveryCount) {
  SKIP_WITHOUT_WEBGPU();
  // Counts 0, 1, 31, 32, 33, 63 and outside [0, 64): 64, 65, -1, 2^32 (every bit shifted out).
  const std::vector<int64_t> counts{0, 1, 31, 32, 33, 63, 64, 65, -1, 4294967296};
  std::vector<int64_t> a, c;
  for (int64_t x : edge_int64s())
    for (int64_t k : counts) a.push_back(x), c.push_back(k);
  const Shape shape{static_cast<int64_t>(a.size())};
  expect_exactly_like_cpu<int64_t>({a, c}, shape, [](const Ts& t) { return t[0] << t[1]; });
  expect_exactly_like_cpu<int64_t>({a, c}, shape, [](const Ts& t) { return t[0] >> t[1]; });
  expect_exactly_like_cpu<int64_t>({a, c}, shape,
                                   [](const Ts& t) { return t[0].to(kUInt64) >> t[1].to(kUInt64); });
  expect_exactly_like_cpu<int64_t>({a, c}, shape,
                                   [](const Ts& t) { return t[0].to(kUInt64) << t[1].to(kUInt64); });
  // Constant counts.
  for (int64_t k : {0, 31, 32, 63, 64}) {
    SCOPED_TRACE("count " + std::to_string(k));
    expect_exactly_like_cpu<int64_t>({a}, shape, [k](const Ts& t) { return (t[0] >> k) + (t[0] << k); });
  }
}

TEST(WebGpu, Int64FloorDivisionAndModuloOfNegatives) {
  SKIP_WITHOUT_WEBGPU();
  std::vector<int64_t> a, b;
  for (int64_t x : edge_int64s())
    for (int64_t y : edge_int64s())
      if (y != 0) a.push_back(x), b.push_back(y);
  const Shape shape{static_cast<int64_t>(a.size())};
  // Toward -inf, as Python's; INT64_MIN // -1 wraps to INT64_MIN and INT64_MIN % -1 is 0.
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [](const Ts& t) { return t[0].floor_divide(t[1]); });
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [](const Ts& t) { return t[0] % t[1]; });
  // Unsigned: the same bits, divisors past 2^63 among them.
  auto u = [](const Tensor& x) { return x.to(kUInt64); };
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [&](const Ts& t) { return u(t[0]).floor_divide(u(t[1])); });
  expect_exactly_like_cpu<int64_t>({a, b}, shape, [&](const Ts& t) { return u(t[0]) % u(t[1]); });
  // By constants.
  expect_exactly_like_cpu<int64_t>({a}, shape, [](const Ts& t) {
    return t[0].floor_divide(Scalar(int64_t{-3})) + t[0] % int64_t{10000000007};
  });
}

TEST(WebGpu, Int64DivisionByZeroIsTheCpusError) {
  SKIP_WITHOUT_WEBGPU();
  Tensor a = Tensor::from_vector<int64_t>({1, kMin64, 3}, {3}, kDev),
         b = Tensor::from_vector<int64_t>({1, 0, 4294967296}, {3}, kDev);
  expect_error([&] { a.floor_divide(b).realize(); }, {"division by zero"});
  expect_error([&] { (a % b).realize(); }, {"by zero"});
  expect_error([&] { a.to(kUInt64).floor_divide(b.to(kUInt64)).realize(); }, {"division by zero"});
  // The error word is cleared: the next kernel runs. A divisor whose low word is 0 is not zero.
  EXPECT_EQ(a.floor_divide(b + 1).to_vector<int64_t>(), (std::vector<int64_t>{0, kMin64, 0}));
}

TEST(WebGpu, Int64CastsBothWaysAsTheCpus) {
  SKIP_WITHOUT_WEBGPU();
  const std::vector<int64_t> v = edge_int64s();
  const Shape shape{static_cast<int64_t>(v.size())};
  // To floats: the nearest, ties to even (past 2^24, 2^32 and 2^63), of both signs.
  std::vector<int64_t> near{16777217,
                            16777219,
                            4294967297,
                            9007199254740993,
                            (int64_t{1} << 40) + (1 << 16) + 1,
                            (int64_t{1} << 40) + (1 << 16),
                            (int64_t{1} << 40) + (3 << 16)};
  for (size_t k = 0, n = near.size(); k < n; k++) near.push_back(-near[k]);
  for (DType to : {kFloat32, kFloat16, kBFloat16, kInt32, kUInt32, kInt16, kUInt8, kInt8, kBool}) {
    SCOPED_TRACE(std::string(dtype_name(to)));
    expect_exactly_like_cpu<int64_t>({v}, shape, [to](const Ts& t) { return t[0].to(to); });
    expect_exactly_like_cpu<int64_t>({v}, shape, [to](const Ts& t) { return t[0].to(kUInt64).to(to); });
    expect_exactly_like_cpu<int64_t>({near}, {static_cast<int64_t>(near.size())},
                                     [to](const Ts& t) { return t[0].to(to); });
  }
  // From narrower integers: sign- or zero-extended.
  for (DType from : {kInt32, kUInt32, kInt8, kUInt8, kInt16, kBool}) {
    SCOPED_TRACE(std::string(dtype_name(from)));
    expect_exactly_like_cpu<int64_t>({v}, shape,
                                     [from](const Ts& t) { return t[0].to(from).to(kInt64) * 3; });
    expect_exactly_like_cpu<int64_t>({v}, shape,
                                     [from](const Ts& t) { return t[0].to(from).to(kUInt64) * 3; });
  }
  // From floats: truncated toward zero, past 2^32 and negative; NaN and values past 2^63 as the CPU
  // gives them (INT64_MIN on x86-64). To uint64 only where every CPU agrees (below 2^64).
  const float nan = std::nanf("");
  std::vector<float> f{0.5f,        -0.5f,  -1.5f,   1e10f, -1e10f, 4294967296.0f * 3.5f,
                       16777217.0f, -3e18f, 9.2e18f, 1e19f, -1e19f, 3e38f,
                       nan,         -0.0f};
  const Shape fs{static_cast<int64_t>(f.size())};
  expect_exactly_like_cpu<float>({f}, fs, [](const Ts& t) { return t[0].to(kInt64); });
  std::vector<float> in_range{0.5f, -0.5f, -1.5f, 1e10f, -1e10f, 1.8e19f, 9.3e18f, 123456789.0f, -3e18f};
  expect_exactly_like_cpu<float>({in_range}, {static_cast<int64_t>(in_range.size())},
                                 [](const Ts& t) { return t[0].to(kUInt64); });
  // int8 and uint32 from floats of any size: through the same rules, wrapped to the width.
  expect_exactly_like_cpu<float>({f}, fs, [](const Ts& t) { return t[0].to(kInt8); });
  expect_exactly_like_cpu<float>({f}, fs, [](const Ts& t) { return t[0].to(kUInt32); });
}

TEST(WebGpu, Int64ReductionsArgmaxAndCumsum) {
  SKIP_WITHOUT_WEBGPU();
  // int32 values whose sum passes 2^31: PyTorch sums integers in int64.
  std::vector<int32_t> big(3 * 1000);
  for (size_t k = 0; k < big.size(); k++) big[k] = 2000000000 - static_cast<int32_t>(k * 7919 % 100003);
  expect_exactly_like_cpu<int32_t>({big}, {3, 1000}, [](const Ts& t) { return t[0].sum(1); });
  expect_exactly_like_cpu<int32_t>({big}, {3000}, [](const Ts& t) { return t[0].sum(); });
  std::vector<int64_t> v = edge_int64s();
  const Shape shape{static_cast<int64_t>(v.size())};
  expect_exactly_like_cpu<int64_t>({v}, shape, [](const Ts& t) { return t[0].sum(); });
  expect_exactly_like_cpu<int64_t>({v}, shape, [](const Ts& t) { return t[0].prod(); });
  expect_exactly_like_cpu<int64_t>({v}, shape, [](const Ts& t) { return t[0].max() - t[0].min(); });
  expect_exactly_like_cpu<int64_t>({v}, shape, [](const Ts& t) { return t[0].to(kUInt64).max(); });
  expect_exactly_like_cpu<int64_t>({v}, shape, [](const Ts& t) { return t[0].cumsum(0); });
  expect_exactly_like_cpu<int64_t>({v}, shape, [](const Ts& t) { return t[0].cumprod(0); });
  // argmax and argmin of 300000 values (int64 indices), the extreme near the end, ties first.
  std::vector<float> f = floats(300000);
  f[299990] = 5, f[299995] = 5, f[12] = -5;
  expect_exactly_like_cpu<float>({f}, {300000},
                                 [](const Ts& t) { return t[0].argmax() * 10 + t[0].argmin(); });
  expect_exactly_like_cpu<float>({f}, {300, 1000}, [](const Ts& t) { return t[0].argmax(1); });
  // sort and topk, whose indices are int64.
  std::vector<float> g = floats(1000);
  expect_exactly_like_cpu<float>({g}, {4, 250}, [](const Ts& t) { return t[0].topk(5, 1).indices; });
  expect_exactly_like_cpu<float>({g}, {10, 100}, [](const Ts& t) { return t[0].sort(1).indices; });
}

TEST(WebGpu, GroupedInt64ReductionsShareWorkgroupMemory) {
  SKIP_WITHOUT_WEBGPU();
  // Rows of 4000 int64 values (a Group opt of 256: vec2<u32> partial results in workgroup memory).
  std::vector<int64_t> v(4 * 4000);
  for (size_t k = 0; k < v.size(); k++)
    v[k] = static_cast<int64_t>(0x9e3779b97f4a7c15ULL * (k + 1)) >> (k % 40);
  testing::internal::CaptureStderr();
  set_debug(2);
  expect_exactly_like_cpu<int64_t>({v}, {4, 4000}, [](const Ts& t) { return t[0].sum(1); });
  set_debug(0);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("R1:256"), std::string::npos) << "the sum is a grouped reduction:\n" << log;
  expect_exactly_like_cpu<int64_t>({v}, {4, 4000}, [](const Ts& t) { return t[0].max(1) + t[0].min(1); });
  expect_exactly_like_cpu<int64_t>({v}, {4, 4000}, [](const Ts& t) { return (t[0] | 1).prod(1); });
}

TEST(WebGpu, RandomNumbersAreTheCpusBitForBit) {
  SKIP_WITHOUT_WEBGPU();
  // The counter-based generator (uint64 arithmetic: its counter and key are 64-bit arguments) gives
  // the same bits on every device for a seed.
  for (uint64_t seed : {0ULL, 1234ULL, 0xfedcba9876543210ULL}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Tensor::manual_seed(seed);
    Tensor want = Tensor::rand({3, 1001}, kFloat32, "CPU"), want2 = Tensor::rand({7}, kFloat32, "CPU");
    Tensor::manual_seed(seed);
    Tensor got = Tensor::rand({3, 1001}, kFloat32, kDev), got2 = Tensor::rand({7}, kFloat32, kDev);
    expect_same_bits(want, got);
    expect_same_bits(want2, got2);  // the next draw: the counter moved on
  }
  Tensor::manual_seed(7);
  Tensor want = Tensor::uniform({500}, -2.0, 3.0, kFloat16, "CPU");
  Tensor::manual_seed(7);
  expect_same_bits(want, Tensor::uniform({500}, -2.0, 3.0, kFloat16, kDev));
}

TEST(WebGpu, AnInt64VariablePastTwoToThe31IsTwoWords) {
  SKIP_WITHOUT_WEBGPU();
  // A Variable with no narrow bounds may hold any value of its dtype: an int64 one is a two-word
  // argument (it was taken as one i32 word, and 5e9 was refused at launch).
  std::vector<int64_t> v = {-3, 0, 7, INT64_C(1) << 40};
  Tensor cpu = Tensor::from_vector<int64_t>(v, {4}, "CPU"), dev = cpu.to(kDev);
  Variable shift(5e9, kInt64);
  auto f = [&](const Tensor& t) { return (t + shift.tensor()) * 3; };
  for (double value : {5e9, -7e9, 12.0}) {
    SCOPED_TRACE("value " + std::to_string(value));
    shift.set(value);
    EXPECT_EQ(f(dev).to("CPU").to_vector<int64_t>(), f(cpu).to_vector<int64_t>());
  }
}

TEST(WebGpu, ACatWithEmptyPiecesCompiles) {
  SKIP_WITHOUT_WEBGPU();
  // The empty pieces' loads are gated off at a constant index -1, which WGSL refuses even in dead
  // code (the compiler fuzzer's seed 5356): the renderer leaves them out.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = Tensor::from_vector<float>({inf, nan, 2.5f}, {3, 1}, "CPU");
  Tensor empty = Tensor::from_vector<float>({}, {3, 0}, "CPU");
  auto f = [](const Tensor& x, const Tensor& e) { return Tensor::cat({x, e, e}, 1).exp2(); };
  expect_same_bits(f(a, empty), f(a.to(kDev), empty.to(kDev)));
}
