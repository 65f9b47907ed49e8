// Tensor cores (codegen/tensor_cores.h): which kernels are products the tensor cores take, the
// opt's place in the optimizer and BEAM, the kernels run on OpenCL with the mma emulated through
// local memory (this binary runs with LAZYGRAD_TC_EMULATE=1) against the CPU's results, the same
// on a GPU where there is one, and the kernels in CUDA C++ compiled by NVRTC to machine code for
// sm_80 and sm_90 (ptxas checks the mma instruction). Cases skip, saying why, where there is no
// OpenCL device, no GPU or no NVRTC.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cmath>

#include "codegen/optimize.h"
#include "codegen/tensor_cores.h"
#include "engine/beam.h"
#include "engine/schedule.h"
#include "forced_opts.h"
#include "renderer/renderer.h"
#include "runtime/cuda/nvrtc.h"
#include "skip_without_cl.h"

using namespace lazygrad;

namespace {

Kernel only_kernel(const Tensor& t) {
  Schedule s = create_schedule({t.uop()}, {t.device()});
  EXPECT_EQ(s.kernels.size(), 1u);
  return s.kernels.at(0);
}

Tensor rand(const Shape& shape, DType dt, const std::string& device = "CPU") {
  return Tensor::rand(shape, dt, device).sub(0.5).realize();
}

bool uses_tensor_cores(const std::vector<std::string>& used) {
  return std::any_of(used.begin(), used.end(), [](const std::string& s) { return s.rfind("C0:", 0) == 0; });
}

TEST(TensorCores, MatchReadsTheAxesAndTheStrides) {
  Tensor a = rand({2, 32, 64}, kFloat16), b = rand({64, 48}, kFloat16);
  auto m = match_tensor_core(only_kernel(a.matmul(b)));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->operand, kFloat16);
  EXPECT_EQ(m->out, kFloat16);
  EXPECT_EQ(m->size(m->m_axis), 32);
  EXPECT_EQ(m->size(m->n_axis), 48);
  EXPECT_EQ(m->size(m->k_axis), 64);
  ASSERT_EQ(m->batch_axes.size(), 1u);
  EXPECT_EQ(m->size(m->batch_axes[0]), 2);
  // A[i, m, k] at 2048 i + 64 m + k; B[k, n] at 48 k + n; C[i, m, n] at 1536 i + 48 m + n.
  EXPECT_EQ(m->a.coef[m->m_axis], 64);
  EXPECT_EQ(m->a.coef[m->k_axis], 1);
  EXPECT_EQ(m->a.coef[m->batch_axes[0]], 2048);
  EXPECT_EQ(m->b.coef[m->k_axis], 48);
  EXPECT_EQ(m->b.coef[m->n_axis], 1);
  EXPECT_EQ(m->b.coef[m->batch_axes[0]], 0);
  EXPECT_EQ(m->c.coef[m->n_axis], 1);
  // A transposed operand is a stride, not a copy.
  Tensor bt = rand({48, 64}, kBFloat16);
  auto mt = match_tensor_core(only_kernel(rand({32, 64}, kBFloat16).matmul(bt.transpose(0, 1))));
  ASSERT_TRUE(mt);
  EXPECT_EQ(mt->operand, kBFloat16);
  EXPECT_EQ(mt->b.coef[mt->k_axis], 1);
  EXPECT_EQ(mt->b.coef[mt->n_axis], 64);
  // float32 results of 16-bit operands (the widening fused into the product) qualify.
  auto mf = match_tensor_core(
      only_kernel(rand({16, 32}, kFloat16).to(kFloat32).matmul(rand({32, 8}, kFloat16).to(kFloat32))));
  ASSERT_TRUE(mf);
  EXPECT_EQ(mf->out, kFloat32);

  // What does not qualify: float32 operands, sizes the mma does not divide, anything fused in.
  EXPECT_FALSE(match_tensor_core(only_kernel(rand({32, 64}, kFloat32).matmul(rand({64, 48}, kFloat32)))));
  EXPECT_FALSE(match_tensor_core(only_kernel(rand({24, 64}, kFloat16).matmul(rand({64, 48}, kFloat16)))));
  EXPECT_FALSE(match_tensor_core(only_kernel(rand({32, 64}, kFloat16).matmul(rand({64, 12}, kFloat16)))));
  EXPECT_FALSE(match_tensor_core(only_kernel(rand({32, 40}, kFloat16).matmul(rand({40, 48}, kFloat16)))));
  EXPECT_FALSE(
      match_tensor_core(only_kernel(rand({32, 64}, kFloat16).matmul(rand({64, 48}, kFloat16)).relu())));
  EXPECT_FALSE(match_tensor_core(only_kernel(rand({32, 64}, kFloat16).add(1))));
}

TEST(TensorCores, TheOptInTheOptimizerAndBeam) {
  Kernel big = only_kernel(rand({256, 256}, kFloat16).matmul(rand({256, 128}, kFloat16)));
  Kernel small = only_kernel(rand({16, 16}, kFloat16).matmul(rand({16, 8}, kFloat16)));
  const Target sm90 = cuda_target(90), sm75 = cuda_target(75);
  EXPECT_TRUE(sm90.tensor_cores);
  EXPECT_FALSE(sm75.tensor_cores);                       // no m16n8k16 before sm_80
  EXPECT_EQ(opts_str(default_opts(big, sm90)), "C0:4");  // large: the defaults use them
  EXPECT_EQ(opts_str(default_opts(small, sm90)).find("C0"), std::string::npos);  // too small to pay
  EXPECT_EQ(opts_str(default_opts(big, sm75)).find("C0"), std::string::npos);
  EXPECT_EQ(opts_str(default_opts(big, cpu_target())).find("C0"), std::string::npos);

  const std::vector<Opt> tc{{AxisKind::TensorCore, 0, 2}};
  Kernel applied = apply_opts(big, tc);
  ASSERT_TRUE(applied.tensor_core);
  EXPECT_EQ(applied.local_size, 128);  // four warps
  EXPECT_EQ(applied.global_size, (256 / 32) * (128 / 16) / 4);
  EXPECT_EQ(misfit(applied, sm90), "");
  EXPECT_EQ(misfit(applied, cpu_target()), "it has no tensor cores");
  EXPECT_TRUE(fit_to_target(big, tc, cpu_target()).empty());  // taken out where it cannot run
  // It stands alone, and takes T of 1, 2 or 4 that divides the product.
  using Opts = std::vector<Opt>;
  EXPECT_THROW(apply_opts(big, Opts{{AxisKind::TensorCore, 0, 2}, {AxisKind::Upcast, 0, 2}}), Error);
  EXPECT_THROW(apply_opts(big, Opts{{AxisKind::TensorCore, 0, 3}}), Error);
  EXPECT_THROW(apply_opts(small, Opts{{AxisKind::TensorCore, 0, 2}}), Error);
  EXPECT_THROW(apply_opts(only_kernel(rand({32, 32}, kFloat32).matmul(rand({32, 32}, kFloat32))), tc), Error);

  // BEAM starts from the unoptimized kernel: each warp tile that fits is a move.
  std::vector<std::string> moves;
  for (const auto& e : extensions(big, {}, sm90)) moves.push_back(opts_str(e));
  for (const char* t : {"C0:1", "C0:2", "C0:4"})
    EXPECT_NE(std::find(moves.begin(), moves.end(), t), moves.end()) << t;
  for (const auto& e : extensions(big, {}, cpu_target())) EXPECT_NE(opts_str(e).substr(0, 1), "C");
}

// The product on `dev` with the tensor cores' kernel (warp tile t), as a float64 vector.
std::vector<double> with_tensor_cores(const std::string& dev, const Tensor& a, const Tensor& b, int64_t t,
                                      bool widen) {
  ForcedOpts forced([t](const Kernel& k, const KernelAxes&) {
    return match_tensor_core(k) ? std::vector<Opt>{{AxisKind::TensorCore, 0, t}} : required_opts(k);
  });
  Tensor ac = a.to(dev), bc = b.to(dev);
  if (widen) ac = ac.to(kFloat32), bc = bc.to(kFloat32);
  Tensor c = ac.matmul(bc).realize();  // the product alone (to_vector<double> would fuse a cast in)
  EXPECT_TRUE(uses_tensor_cores(forced.used)) << "no kernel took the tensor cores";
  return c.to_vector<double>();
}

// Products on `dev` that the random ones below may miss, against the CPU's.
void fixed_products(const std::string& dev) {
  struct Case {
    Shape a, b;
    bool transpose_b = false, widen = false;
    int64_t t = 1;
  };
  // The random products below cover batches, broadcasts and transposes; these, what they may not.
  const Case cases[] = {
      {{16, 16}, {16, 8}},                       // one mma: one warp of four busy
      {{64, 48}, {48, 64}, false, false, 4},     // the largest warp tile, 64 x 32: two of them
      {{2, 32, 32}, {32, 24}, false, false, 1},  // B broadcast over A's batch
      {{32, 48}, {32, 48}, true, false, 2},      // B transposed: its K is contiguous
  };

  for (DType dt : {kFloat16, kBFloat16})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " case " + std::to_string(&c - cases));
      Tensor a = rand(c.a, dt), b = rand(c.b, dt);
      Tensor bb = c.transpose_b ? b.transpose(-2, -1) : b;
      Tensor aa = c.widen ? a.to(kFloat32) : a, bw = c.widen ? bb.to(kFloat32) : bb;
      std::vector<double> want = aa.matmul(bw).to_vector<double>();
      std::vector<double> got = with_tensor_cores(dev, a, bb, c.t, c.widen);
      ASSERT_EQ(got.size(), want.size());
      // float32 sums of exact products, in another order: within a rounding of the output dtype.
      const double tol = c.widen ? 1e-5 : dt == kFloat16 ? 2e-3 : 1.6e-2;
      for (size_t i = 0; i < got.size(); i++)
        ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << i;
    }
}

// Random products on `dev`: sizes, warp tiles, batches (on one side or both), either operand
// transposed, float16 or bfloat16, widened or not; a fixed seed.
void random_products(const std::string& dev) {
  uint64_t state = 0x7c0ffee;
  auto next = [&](int64_t n) {  // 0 .. n-1
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(n));
  };
  for (int c = 0; c < 8; c++) {
    const DType dt = next(2) ? kFloat16 : kBFloat16;
    const int64_t t = int64_t(1) << next(3), m = 16 * t * (1 + next(2)), n = 8 * t * (1 + next(3)),
                  k = 16 * (1 + next(3));
    const bool ta = next(2), tb = next(2), widen = next(3) == 0;
    Shape batch_a, batch_b;
    switch (next(3)) {
      case 1:
        batch_a = batch_b = {1 + next(3)};
        break;
      case 2:
        batch_a = {2, 1 + next(2)};  // B broadcast over A's batch
        break;
      default:
        break;
    }
    SCOPED_TRACE("case " + std::to_string(c) + ": " + std::string(dtype_name(dt)) + " t " +
                 std::to_string(t) + " m n k " + std::to_string(m) + " " + std::to_string(n) + " " +
                 std::to_string(k) + (ta ? " A^T" : "") + (tb ? " B^T" : "") + (widen ? " widened" : ""));
    auto operand = [&](Shape batch, int64_t rows, int64_t cols, bool transposed) {
      Shape shape = batch;
      shape.push_back(transposed ? cols : rows);
      shape.push_back(transposed ? rows : cols);
      Tensor x = rand(shape, dt);
      return transposed ? x.transpose(-2, -1) : x;
    };
    Tensor a = operand(batch_a, m, k, ta), b = operand(batch_b, k, n, tb);
    Tensor aa = widen ? a.to(kFloat32) : a, bw = widen ? b.to(kFloat32) : b;
    std::vector<double> want = aa.matmul(bw).to_vector<double>();
    std::vector<double> got = with_tensor_cores(dev, a, b, t, widen);
    ASSERT_EQ(got.size(), want.size());
    const double tol = widen ? 1e-5 : dt == kFloat16 ? 2e-3 : 1.6e-2;
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << i;
  }
}

TEST(TensorCores, EmulatedOnClTheyEqualTheCpu) {
  SKIP_WITHOUT_CL();
  if (!device("CL").renderer().target().tensor_cores) GTEST_SKIP() << "LAZYGRAD_TC_EMULATE is not set";
  fixed_products("CL");
}

TEST(TensorCores, EmulatedOnClRandomProductsEqualTheCpu) {
  SKIP_WITHOUT_CL();
  if (!device("CL").renderer().target().tensor_cores) GTEST_SKIP() << "LAZYGRAD_TC_EMULATE is not set";
  random_products("CL");
}

// On a GPU with tensor cores (scripts/gpu-check.sh runs this suite with DEVICE=CUDA): the mma
// itself, in the layout the emulation assumes.
TEST(TensorCores, OnCudaTheyEqualTheCpu) {
  std::string why = "no CUDA device";
  for (const DeviceInfo& d : devices())
    if (d.name == "CUDA") why = d.available ? "" : d.detail;
  if (!why.empty()) GTEST_SKIP() << why;
  if (!device("CUDA").renderer().target().tensor_cores) GTEST_SKIP() << "this GPU has no mma.sync.m16n8k16";
  fixed_products("CUDA");
  random_products("CUDA");
}

TEST(TensorCores, CudaKernelsCompileWithNvrtc) {
  if (std::string why = nvrtc_missing(); !why.empty()) GTEST_SKIP() << why;
  auto renderer = make_cuda_renderer(cuda_target(80));
  const Kernel kernels[] = {
      only_kernel(rand({64, 64}, kFloat16).matmul(rand({64, 64}, kFloat16))),
      only_kernel(
          rand({2, 64, 32}, kBFloat16).matmul(rand({32, 64}, kBFloat16).transpose(0, 1).transpose(0, 1))),
      only_kernel(rand({64, 32}, kBFloat16).to(kFloat32).matmul(rand({32, 64}, kBFloat16).to(kFloat32))),
  };
  for (const Kernel& k : kernels)
    for (int64_t t : {1, 2, 4}) {
      Kernel applied = apply_opts(k, std::vector<Opt>{{AxisKind::TensorCore, 0, t}});
      const std::string source = renderer->render(applied, linearize(applied));
      ASSERT_NE(source.find("mma.sync.aligned.m16n8k16.row.col.f32"), std::string::npos) << source;
      for (const char* arch : {"sm_80", "sm_90"})  // machine code: ptxas reads the mma too
        EXPECT_NO_THROW(nvrtc_compile(source, k.name, arch)) << arch << "\n" << source;
    }
}

}  // namespace
