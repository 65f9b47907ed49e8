// The WebGPU device (docs/webgpu.md): WGSL kernels run in one headless Chromium for the whole test
// process, on its WebGPU adapter (SwiftShader here), compared with the CPU's results: elementwise
// float32 and int32 ops, the packed narrow dtypes, reductions, a matrix product, NaN and infinity at
// the edges WGSL leaves open, kernel errors, and the Errors for what WGSL cannot hold (float64 and
// int64 data, too many buffers in one kernel). Every case skips, saying why, where there is no
// Chromium or no WebGPU adapter.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "expect_error.h"
#include "renderer/renderer.h"
#include "runtime/device.h"

using namespace lazygrad;

namespace {

const char* kDev = "WEBGPU";

// Why WEBGPU cannot run here, or "" when it can (opening it starts the process's browser, once).
std::string webgpu_missing() {
  try {
    device(kDev);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

#define SKIP_WITHOUT_WEBGPU()                                                                   \
  do {                                                                                          \
    if (std::string why = webgpu_missing(); !why.empty()) GTEST_SKIP() << "no WebGPU: " << why; \
  } while (0)

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

using Ts = std::vector<Tensor>;

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
  EXPECT_FALSE(t.int64);
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
  expect_error([] { Tensor::arange(5, kInt64, kDev).realize(); }, {"WEBGPU", "int64", "64-bit"});
  // int64 values inside one kernel (stored as float32): the cast that makes them is named.
  Tensor x = Tensor::from_vector<float>({1e10f, 2}, {2}, kDev);
  expect_error([&] { (x.to(kInt64) + 1).to(kFloat32).realize(); }, {"CAST", "int64", "64-bit"});
  // Random bits are uint64 arithmetic.
  expect_error([] { Tensor::rand({4}, kFloat32, kDev).realize(); }, {"uint64", "64-bit"});
}

TEST(WebGpu, AKernelWithMoreBuffersThanTheDeviceBindsIsAnErrorNamingIt) {
  SKIP_WITHOUT_WEBGPU();
  // One fused sum of 16 buffers, with its output 17 storage bindings: more than WebGPU's 8 and than
  // SwiftShader's 10.
  std::vector<Tensor> parts;
  for (int i = 0; i < 16; i++)
    parts.push_back(Tensor::full({5}, static_cast<float>(i), kFloat32, kDev).realize());
  Tensor sum = parts[0];
  for (int i = 1; i < 16; i++) sum = sum + parts[i];
  expect_error([&] { sum.realize(); }, {"kernel", "storage buffers", "maxStorageBuffersPerShaderStage"});
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
