// The kernel optimizer: every optimization gives the unoptimized kernel's answer (odd sizes, 1-sized
// axes, padded and masked views, every reduction kind), the defaults pick vector lanes and a
// register tile for a matrix product, and BEAM's choice is the default's answer, cached on disk.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <regex>
#include <string>

#include "codegen/cpu_model.h"
#include "codegen/optimize.h"
#include "engine/beam.h"
#include "engine/realize.h"
#include "engine/schedule.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

using namespace lazygrad;

namespace {

Tensor input(const Shape& shape, int salt = 0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; i++) v[i] = static_cast<float>(((i + salt) * 37) % 23 - 11) * 0.25f;
  return Tensor::from_vector(v, shape);
}

// The one kernel that computes t from realized inputs.
Kernel only_kernel(const Tensor& t) {
  Schedule s = create_schedule({t.uop()});
  EXPECT_EQ(s.kernels.size(), 1u);
  return s.kernels.at(0);
}

// Runs k with opts into a fresh copy of its output buffer; returns the output as doubles.
std::vector<double> run_with(const Kernel& k, const std::vector<Opt>& opts) {
  auto c = render_kernel(k, opts);
  std::vector<std::shared_ptr<Compiled>> one{c};
  compile_programs(one);
  std::vector<void*> ptrs;
  auto out = std::make_shared<Buffer>(k.buffers[0]->device, k.buffers[0]->dtype, k.buffers[0]->size);
  std::memset(out->host_ptr(), 0x7f, out->nbytes());  // not zero: a store that never happens shows
  for (size_t i = 0; i < k.buffers.size(); i++)
    ptrs.push_back(i == 0 ? out->handle() : k.buffers[i]->handle());
  std::vector<int64_t> vars;
  EXPECT_EQ(launch_slices(*c->program, ptrs, vars, c->global_size, c->work_per_item).error, 0) << c->name;
  std::vector<double> v(out->size);
  for (int64_t i = 0; i < out->size; i++) {
    if (out->dtype == kFloat32)
      v[i] = static_cast<const float*>(out->host_ptr())[i];
    else if (out->dtype == kInt32)
      v[i] = static_cast<const int32_t*>(out->host_ptr())[i];
    else if (out->dtype == kBool)  // the byte as stored: a bool must be 0 or 1
      v[i] = static_cast<const uint8_t*>(out->host_ptr())[i];
    else
      ADD_FAILURE() << "unexpected output dtype";
  }
  return v;
}

// Every opt list BEAM's first two rounds could try from the default and from nothing gives the
// unoptimized kernel's answer (float sums may differ in rounding: they add in another order).
void expect_all_opts_agree(const Tensor& t) {
  Kernel k = only_kernel(t);
  std::vector<double> want = run_with(k, {});
  std::vector<std::vector<Opt>> cands{default_opts(k)};
  for (auto& c : extensions(k, {})) cands.push_back(c);
  for (auto& c : extensions(k, default_opts(k))) cands.push_back(c);
  ASSERT_GT(cands.size(), 1u) << k.name;
  for (const auto& opts : cands) {
    std::vector<double> got = run_with(k, opts);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); i++)
      ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i])))
          << k.name << " [" << opts_str(opts) << "] at " << i;
  }
}

}  // namespace

TEST(Optimize, MatmulOddSizes) {
  expect_all_opts_agree(input({24, 36}).matmul(input({36, 40}, 1)));    // divisible by some tiles
  expect_all_opts_agree(input({17, 33}).matmul(input({33, 5}, 1)));     // by none but the 1-sized
  expect_all_opts_agree(input({8, 16}).matmul(input({1, 16}, 1).t()));  // x @ w.T: contiguous along k
}

TEST(Optimize, OneSizedAxesAndBroadcast) {
  expect_all_opts_agree((input({1, 32, 1, 8}) * input({4, 1, 1, 8}, 3)).sum(3));
  expect_all_opts_agree(input({16, 1}) + input({1, 24}, 5));
}

TEST(Optimize, PaddedAndMaskedViews) {
  // A convolution reads its input through a padded window: lanes whose validity differs.
  Tensor x = input({2, 3, 9, 16}), w = input({8, 3, 3, 3}, 2);
  expect_all_opts_agree(x.conv2d(w, std::nullopt, 1, 1));
  expect_all_opts_agree(input({4, 12}).pad({2, 2, 0, 4}) * 2.0f);
  expect_all_opts_agree(input({16, 16}).flip({1}).permute({1, 0}).contiguous());
}

TEST(Optimize, ReductionKinds) {
  expect_all_opts_agree(input({16, 48}).max(1));
  expect_all_opts_agree(input({32, 8}).sum(0));
  expect_all_opts_agree(input({8, 32}).abs().add(0.5f).prod(1));
  expect_all_opts_agree((input({16, 16}) < input({16, 16}, 1)).sum(1).cast(kInt32));
  expect_all_opts_agree(input({64}).exp().sum());
}

TEST(Optimize, ElementwiseLaneByLane) {
  // exp, comparisons and where have no vector form: they run lane by lane inside a vector kernel.
  Tensor a = input({8, 32}), b = input({8, 32}, 7);
  expect_all_opts_agree(where(a < b, a.exp(), b.abs().sqrt()));
  expect_all_opts_agree((a.cast(kInt32) * 3 + 1).cast(kFloat32));
}

// Bools on vector lanes are masks as wide as the comparison that made them: comparisons of every
// width (NaN included), logical ops and where across mask widths, a bool per row broadcast over the
// lanes, casts both ways, and bools loaded (through a padded window too), reduced and stored as 0/1.
TEST(Optimize, BoolVectors) {
  Tensor a = input({8, 48}), b = input({8, 48}, 5);
  Tensor q = a / b;  // inf and NaN where b is 0
  Tensor ai = (a * 4.0f).cast(kInt32), bi = (b * 4.0f).cast(kInt32);
  Tensor ad = a.cast(kFloat64), al = ai.cast(kInt64);
  expect_all_opts_agree((a < b) ^ (ai != bi));
  expect_all_opts_agree(((ad <= b.cast(kFloat64)) & (al > 1)) | (q != q) | (ai.cast(kInt16) < 2) |
                        (ai.cast(kInt8) == bi.cast(kInt8)));
  expect_all_opts_agree(where(a<0.0f, ai> bi, ad != 0.5) ^ (a.cast(kFloat16) < b.cast(kFloat16)));
  expect_all_opts_agree(where(ad < 0.0, a, b + 1.0f) + where(al > 2, ai, bi * 2).cast(kFloat32));
  expect_all_opts_agree((a < b).cast(kFloat32) + (ad > 0.0).cast(kFloat32) * 2.0f +
                        (q != q).cast(kInt32).cast(kFloat32) * 4.0f +
                        (ai < 1).cast(kInt64).cast(kFloat32) * 8.0f);
  expect_all_opts_agree((a.cast(kBool) & q.cast(kBool).logical_not()) | ai.cast(kBool).lt(b < 0.0f) |
                        (a < b).maximum(ad > 1.0));
  // Loaded bools (0/1 bytes) meet masks; a padded window's edges fall inside a vector.
  Tensor m = (a < b).realize();
  expect_all_opts_agree(where(m, a, b) + m.cast(kFloat32) +
                        (m.logical_not() & (a > 0.0f)).cast(kFloat32) * 2.0f);
  expect_all_opts_agree(m.lt(ad > 0.0) ^ where(a > 1.0f, m, ai < 0));
  expect_all_opts_agree(m.pad({8, 8, 1, 1}) | (input({10, 64}, 3) > 1.0f));
  expect_all_opts_agree(((a < b) & (ad > -1.0)).any(1));
  expect_all_opts_agree((a != b).all(0) | m.any(0));
  // A bool per row (scalar where the lanes run along the row) with bools per element.
  Tensor r = input({16, 1}), c = input({1, 32}, 3);
  expect_all_opts_agree(where(r<0.0f, c> 0.0f, (r + c) < 1.0f) ^ ((r > 0.5f) & (c < 0.0f)));
  expect_all_opts_agree((r < 0.0f).expand({16, 32}).contiguous());
}

// exp and exp2 on vector lanes are our own polynomials (libm has no vector form): within 1 ulp of
// libm on every class of float32 input, subnormal results included.
TEST(Optimize, VectorExpMatchesLibm) {
  set_flush_denormals(false);
  std::vector<float> x{0.0f,
                       -0.0f,
                       1.0f,
                       -1.0f,
                       0.5f,
                       1e-30f,
                       -1e-30f,
                       88.7f,
                       88.72f,
                       89.0f,
                       100.0f,
                       -87.3f,
                       -100.0f,
                       -103.9f,
                       -104.5f,
                       127.9f,
                       128.0f,
                       -126.5f,
                       -149.2f,
                       -150.0f,
                       -160.0f,
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN()};
  for (int i = 0; x.size() % 16 || i < 4000; i++)
    x.push_back(-160.0f + 255.0f * static_cast<float>((i * 7919) % 4000) / 4000.0f);
  Tensor t = Tensor::from_vector(x, {static_cast<int64_t>(x.size())});
  for (bool natural : {true, false}) {
    Tensor y = natural ? t.exp() : t.exp2();
    EXPECT_EQ(default_opts(only_kernel(y)).at(0).kind, AxisKind::Vector);
    std::vector<float> got = y.to_vector<float>();
    for (size_t i = 0; i < x.size(); i++) {
      float want = natural ? std::exp(x[i]) : std::exp2(x[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << x[i];
        continue;
      }
      int32_t a, b;
      std::memcpy(&a, &got[i], 4);
      std::memcpy(&b, &want, 4);
      EXPECT_LE(std::abs(static_cast<int64_t>(a) - b), 1)
          << (natural ? "exp(" : "exp2(") << x[i] << "): " << got[i] << " vs libm's " << want;
    }
  }
  set_flush_denormals(true);
}

// A row sum fused into its reader (gathered, so it stays a scalar double accumulator) used by vector
// lanes along the row: the generated C must convert it to the lanes' type (review finding).
TEST(Optimize, ScalarSumOperandOfVectorOps) {
  Tensor a = input({64, 16}), c = (input({16, 64}, 3) + 100.0f).realize();  // sums far from 0
  auto s = [&] { return c.t().sum(1, true); };  // lazy each time: fused into the reader
  std::vector<float> av = a.to_vector<float>(), sv = s().to_vector<float>();
  std::vector<float> q = (a / s()).to_vector<float>(), m = (a * s()).to_vector<float>();
  std::vector<bool> l;
  for (bool b : (a < s()).to_vector<bool>()) l.push_back(b);
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 16; j++) {
      EXPECT_FLOAT_EQ(q[i * 16 + j], av[i * 16 + j] / sv[i]);
      EXPECT_FLOAT_EQ(m[i * 16 + j], av[i * 16 + j] * sv[i]);
      EXPECT_EQ(l[i * 16 + j], av[i * 16 + j] < sv[i]);
    }
  expect_all_opts_agree(a / s());
}

TEST(Optimize, DefaultsTileAMatrixProduct) {
  Kernel k = only_kernel(input({64, 64}).matmul(input({64, 64}, 1)));
  std::vector<Opt> opts = default_opts(k);
  ASSERT_FALSE(opts.empty());
  EXPECT_EQ(opts[0].kind, AxisKind::Vector);
  EXPECT_EQ(opts[0].axis, 1);  // the columns: B's rows and C's rows are contiguous there
  int64_t tile = 1;
  for (const Opt& o : opts)
    if (o.kind == AxisKind::Upcast) tile *= o.amount;
  EXPECT_GE(tile, 4);  // rows of A shared across the tile
  Kernel opt = apply_opts(k, opts);
  EXPECT_EQ(opt.global_size * tile * 16, 64 * 64);
}

// The one fused multiply-add: a vector float sum of products accumulates with lg_vfma (one
// rounding, as BLAS). Kernels compile with contraction off and nothing else is fused: an elementwise
// a * b + c, alone or after a matrix product in the same kernel, stays two roundings.
TEST(Optimize, OnlyAVectorSumOfProductsIsFused) {
  Tensor a = input({32, 64}), b = input({64, 32}, 3), c = input({32, 32}, 5);
  Kernel mm = only_kernel(a.matmul(b) * c + c);
  auto fused = render_kernel(mm, default_opts(mm));
  ASSERT_NE(default_opts(mm).size(), 0u);
  EXPECT_NE(fused->source.find("= lg_vfma_16("), std::string::npos) << fused->source;
  EXPECT_EQ(fused->source.find("fp-contract=fast"), std::string::npos);
  Kernel ew = only_kernel(c * a.narrow(1, 0, 32) + c);
  auto plain = render_kernel(ew, default_opts(ew));
  EXPECT_EQ(plain->source.find("lg_vfma"), std::string::npos) << plain->source;
  EXPECT_EQ(plain->source.find("fp contract"), std::string::npos);
}

// x @ W.T with W too large for the L2 (GPT-2's LM head, x [128, 768] @ wte [50257, 768].T): lanes
// along the reduction, a tile of 4 rows of x by 4 rows of W, the columns (29 * 151 here, which no
// tile divides) padded to a multiple of 4, outermost, and a block of them (15, a divisor of the
// 1095 column tiles) a Loop inside the kernel, so the tile's rows are staged once for the block;
// each output's lanes are summed by halving shuffles. On a Zen 4 model, as CI's machines are.
TEST(Optimize, TransposedProductBlocksItsColumns) {
  Tensor x = input({16, 64}), w = input({29 * 151, 64}, 3);  // W: 1.1 MB
  Kernel k = only_kernel(x.matmul(w.t()));
  const Target zen4 = cpu_target(known_cpu("zen4"));
  std::vector<Opt> opts = default_opts(k, zen4);
  EXPECT_EQ(opts_str(opts), "V2:16 P1:4 U0:4 U1:4 G1:0 L1:15");
  auto c = render_kernel(k, opts);
  EXPECT_NE(c->source.find("local0"), std::string::npos) << "the row tile is staged";
  EXPECT_NE(c->source.find("__builtin_shufflevector"), std::string::npos) << "the lanes' sum halves";
  std::vector<double> got = run_with(k, opts), plain = run_with(k, {});
  std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>();
  ASSERT_EQ(got.size(), 16u * 29 * 151);
  for (size_t i = 0; i < got.size(); i++) {
    ASSERT_NEAR(got[i], plain[i], 1e-5 * (1 + std::abs(plain[i]))) << i;
    if (i % 97 != 0) continue;
    double want = 0;
    for (int64_t j = 0; j < 64; j++)
      want += static_cast<double>(xs[i / 4379 * 64 + j]) * ws[i % 4379 * 64 + j];
    ASSERT_NEAR(got[i], want, 1e-5 * (1 + std::abs(want))) << i;
  }
  // A W that stays in the L2 keeps the plain layout.
  Kernel small = only_kernel(x.matmul(input({64, 64}, 3).t()));
  EXPECT_EQ(opts_str(default_opts(small, zen4)), "V2:16 U0:4 U1:4");
}

// The register tile and blocking come from the machine model (codegen/cpu_model.h), pinned here for
// each kind measured (docs/optimizer.md, "The machine model"): on both AVX-512 kinds 8 rows by 2
// vectors of columns (16 accumulators: a Xeon's two FMA pipes with 4 cycles of latency need 8; 10
// loads per 16 FMAs stay under its 2 load ports, and they read 160 bytes where 4 rows by 4 vectors
// read 272), B in panels once it outgrows half the L2; on an AVX2 core (16 registers) 8 rows by
// one vector of 8 (as busy as 4 by 2 under 5 cycles of latency, with 64 bytes read per 8 FMAs
// against 80).
TEST(Optimize, TilesFollowTheMachineModel) {
  struct Case {
    const char* kind;
    const char* mm1024;
    const char* mm64;
    const char* conv;
  };
  const Case cases[] = {
      {"skylake-x", "V1:16 U0:4 U0:2 U1:2 G1:0 L0:128", "V1:16 U0:4 U0:2 U1:2", "V3:8 U1:4 U1:2 U2:2"},
      {"sapphire-rapids", "V1:16 U0:4 U0:2 U1:2 G1:0 L0:128", "V1:16 U0:4 U0:2 U1:2", "V3:8 U1:4 U1:2 U2:2"},
      {"zen4", "V1:16 U0:4 U0:2 U1:2 G1:0 L0:128", "V1:16 U0:4 U0:2 U1:2", "V3:8 U1:4 U1:2 U2:2"},
      {"haswell", "V1:8 U0:4 U0:2 G1:0 L0:128", "V1:8 U0:4 U0:2", "V3:8 U1:4 U1:2"},
  };
  Kernel mm1024 = only_kernel(input({1024, 1024}).matmul(input({1024, 1024}, 1)));
  Kernel mm64 = only_kernel(input({64, 64}).matmul(input({64, 64}, 1)));
  Kernel conv = only_kernel(input({8, 6, 12, 12}).conv2d(input({16, 6, 5, 5}, 2)));  // LeNet's second
  for (const Case& c : cases) {
    const Target t = cpu_target(known_cpu(c.kind));
    EXPECT_EQ(opts_str(default_opts(mm1024, t)), c.mm1024) << c.kind;
    EXPECT_EQ(opts_str(default_opts(mm64, t)), c.mm64) << c.kind;
    EXPECT_EQ(opts_str(default_opts(conv, t)), c.conv) << c.kind;
  }
  // The tile's loaded vectors stay in registers (GCC would read B again for each row's FMA).
  auto c = render_kernel(mm64, default_opts(mm64, cpu_target(known_cpu("skylake-x"))));
  EXPECT_NE(c->source.find("LG_IN_REGISTER(val"), std::string::npos) << c->source;
  // GCC vectorizes the lane-by-lane FMA at the kernel's width, not at -march=native's preferred 256
  // bits on Intel's AVX-512 cores (which split each 16-lane FMA in two: 12 GFLOP/s on a Xeon).
  EXPECT_NE(c->source.find("#pragma GCC target(\"prefer-vector-width=512\")"), std::string::npos);
  // A staged panel starts on a cache line: malloc's 16-byte alignment split AVX-512 loads in two.
  Kernel big = only_kernel(input({256, 1024}).matmul(input({1024, 1024}, 1)));
  auto staged = render_kernel(big, default_opts(big, cpu_target(known_cpu("sapphire-rapids"))));
  EXPECT_NE(staged->source.find("& ~(__UINTPTR_TYPE__)63)"), std::string::npos) << staged->source;
  EXPECT_NE(staged->source.find("local1 = (float*)(lg_scratch + 65536)"), std::string::npos)
      << staged->source;
  // Each kind's choice gives the unoptimized kernel's answer.
  Tensor a = input({24, 40}), b = input({40, 96}, 4);
  Kernel small = only_kernel(a.matmul(b));
  std::vector<double> want = run_with(small, {});
  for (const std::string& kind : known_cpu_kinds()) {
    std::vector<double> got = run_with(small, default_opts(small, cpu_target(known_cpu(kind))));
    for (size_t i = 0; i < want.size(); i++)
      ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << kind;
  }
}

// A Pad opt (tinygrad's PADTO): the padded indices store nothing, on a tile axis, on the
// vector lanes (each lane's store gated) and on an axis with a window's validity already.
TEST(Optimize, PaddedAxesStoreOnlyTheirRealIndices) {
  Tensor a = input({6, 10}), b = input({10, 67}, 2);
  Kernel mm = only_kernel(a.matmul(b));
  std::vector<double> want = run_with(mm, {});
  for (const std::vector<Opt>& opts : std::vector<std::vector<Opt>>{
           {{AxisKind::Pad, 1, 4}, {AxisKind::Upcast, 1, 4}},
           {{AxisKind::Pad, 1, 8}, {AxisKind::Upcast, 1, 2}},  // the last tile wholly past the end
           {{AxisKind::Pad, 1, 8}, {AxisKind::Upcast, 1, 4}, {AxisKind::Loop, 1, 2}},
           {{AxisKind::Pad, 0, 4}, {AxisKind::Upcast, 0, 4}, {AxisKind::Upcast, 1, 67}},  // 6 rows
           {{AxisKind::Pad, 0, 8}, {AxisKind::Upcast, 0, 4}, {AxisKind::Loop, 0, 2}},     // one tile of 8
           {{AxisKind::Pad, 1, 16}, {AxisKind::Vector, 1, 16}, {AxisKind::Upcast, 0, 2}},
           {{AxisKind::Pad, 0, 4},
            {AxisKind::Pad, 1, 8},
            {AxisKind::Vector, 1, 8},
            {AxisKind::Upcast, 0, 4}}}) {
    std::vector<double> got = run_with(mm, opts);  // the output's canary bytes past 6 x 67 stay
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); i++)
      ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << opts_str(opts);
  }
  // Off the vector lanes, the last tile moves back to end at the axis's end (no branch in the
  // loop; the stores the tile before made are what is gated): 67 columns in tiles of 4 start at
  // 63 at the latest. An axis shorter than its tile loads from its last real index instead.
  const std::string moved =
      render_kernel(mm, std::vector<Opt>{{AxisKind::Pad, 1, 4}, {AxisKind::Upcast, 1, 4}})->source;
  EXPECT_NE(moved.find(" : 63;"), std::string::npos) << moved;
  const std::string clamped =
      render_kernel(mm,
                    std::vector<Opt>{{AxisKind::Pad, 0, 8}, {AxisKind::Upcast, 0, 4}, {AxisKind::Loop, 0, 2}})
          ->source;
  EXPECT_NE(clamped.find(" : 5;"), std::string::npos) << clamped;
  // So does an in-place kernel (y += a @ b): a moved tile would read rows of y that the tile before
  // it stores.
  Tensor y = input({6, 67}, 3).contiguous().realize();
  y.assign(y + a.matmul(b));
  Kernel in_place = only_kernel(y);
  const std::vector<Opt> pad_tile{{AxisKind::Pad, 1, 4}, {AxisKind::Upcast, 1, 4}};
  const std::string in_place_src = render_kernel(in_place, pad_tile)->source;
  EXPECT_NE(in_place_src.find(" : 66;"), std::string::npos) << in_place_src;
  std::vector<double> acc_want = run_with(in_place, {}), acc_got = run_with(in_place, pad_tile);
  for (size_t i = 0; i < acc_want.size(); i++) ASSERT_EQ(acc_got[i], acc_want[i]) << i;
  Kernel window = only_kernel(input({2, 3, 12, 12}).conv2d(input({4, 3, 3, 3}, 1), std::nullopt, 1, 1));
  std::vector<double> w_want = run_with(window, {});
  std::vector<Opt> opts{{AxisKind::Pad, 3, 16}, {AxisKind::Vector, 3, 16}, {AxisKind::Upcast, 1, 4}};
  std::vector<double> w_got = run_with(window, opts);
  for (size_t i = 0; i < w_want.size(); i++)
    ASSERT_NEAR(w_got[i], w_want[i], 1e-5 * (1 + std::abs(w_want[i]))) << i;
  // Refused: an axis already a multiple, a reduction axis, a pad after a split.
  EXPECT_THROW(apply_opts(mm, std::vector<Opt>{{AxisKind::Pad, 0, 2}}), Error);
  EXPECT_THROW(apply_opts(mm, std::vector<Opt>{{AxisKind::Pad, 2, 4}}), Error);
  EXPECT_THROW(apply_opts(mm, std::vector<Opt>{{AxisKind::Upcast, 1, 67}, {AxisKind::Pad, 1, 4}}), Error);
}

// A matrix-vector product (a decode step's projection) keeps its output axis for the threads: the
// long-reduction panel layout is for products with rows to walk down.
// A matrix-vector product the scheduler does not split into row streams (K = 3071 has no pieces
// of rows to split into; see RowStream below): its tile is one row of columns, and it reads W
// (9 MiB) 3 KiB apart a trip: each load is prefetched 4 trips (rows of W) ahead, on the C renderer.
TEST(Optimize, MatrixVectorProduct) {
  Tensor x = input({1, 3071}), w = input({3071, 768}, 1);
  Kernel k = only_kernel(x.matmul(w));
  Kernel opt = apply_opts(k, default_opts(k));
  EXPECT_GE(opt.global_size, 2);
  EXPECT_TRUE(opt.one_row_tile) << opt.opts;
  const std::string src = render_kernel(k, default_opts(k))->source;
  EXPECT_NE(src.find("__builtin_prefetch("), std::string::npos) << src;
  EXPECT_NE(src.find(")) + 12288));"), std::string::npos) << src;
  // A matrix product's tile reuses each row of W it loads across its rows: only the copy of its
  // column panel into scratch prefetches, each vector of the panel's width (one loop copies them
  // all, one pass over W's rows). A small W stays cached.
  Kernel mm = only_kernel(input({64, 3071}).matmul(w));
  EXPECT_FALSE(apply_opts(mm, default_opts(mm)).one_row_tile);
  const std::string mm_src = render_kernel(mm, default_opts(mm))->source;
  auto count = [&](const std::string& pattern) {
    const std::regex re(pattern);
    return std::distance(std::sregex_iterator(mm_src.begin(), mm_src.end(), re), std::sregex_iterator());
  };
  const auto copy_loops = count(R"(for \(int64_t r1\d{5} )");  // the staging copies' ids, codegen/stage.h
  EXPECT_EQ(copy_loops, 1) << mm_src;
  EXPECT_GT(count(R"(__builtin_memcpy\(local)"), 1) << mm_src;
  EXPECT_EQ(count(R"(__builtin_prefetch\()"), count(R"(__builtin_memcpy\(local)")) << mm_src;
  Kernel small = only_kernel(input({1, 256}).matmul(input({256, 768}, 2)));  // 768 KiB
  EXPECT_EQ(render_kernel(small, default_opts(small))->source.find("__builtin_prefetch"), std::string::npos);
  std::vector<float> got = x.matmul(w).to_vector<float>(), xs = x.to_vector<float>(),
                     ws = w.to_vector<float>();
  for (int64_t j : {0, 1, 383, 767}) {
    double want = 0;
    for (int64_t i = 0; i < 3071; i++) want += static_cast<double>(xs[i]) * ws[i * 768 + j];
    EXPECT_NEAR(got[j], want, 1e-3 * (1 + std::abs(want))) << j;
  }
}

// x @ W with W [K, N] row-major read once into at most 4096 outputs (a decode step's products) is
// summed in 8 pieces of K / 8 rows (engine/schedule.cpp), and the pieces' kernel takes the whole
// row of outputs as its tile (row_stream, codegen/optimize.cpp): each thread streams its own rows.
// Not for x @ W.T (a dot product per row already), several rows of x (they reuse W), or a small W.
TEST(Optimize, RowStream) {
  Tensor x = input({1, 3072}), w = input({3072, 768}, 1);
  Schedule s = create_schedule({x.matmul(w).uop()});
  ASSERT_EQ(s.kernels.size(), 2u);
  const Kernel& pieces = s.kernels[0];
  EXPECT_EQ(pieces.name, "r_8_768_384");
  EXPECT_EQ(pieces.buffers[0]->size, 8 * 768);  // the partial sums, [8, 768]
  const std::vector<Opt> opts = default_opts(pieces);
  EXPECT_EQ(opts_str(opts), "V1:16 U1:48 N2:4");
  Kernel opt = apply_opts(pieces, opts);
  EXPECT_EQ(opt.global_size, 8);
  EXPECT_FALSE(opt.one_row_tile) << "whole rows: the hardware prefetchers follow them";
  const std::string src = render_kernel(pieces, opts)->source;
  EXPECT_EQ(src.find("__builtin_prefetch"), std::string::npos);
  // Each vector of W feeds one FMA: none is pinned in a register (GCC folds it into the FMA).
  EXPECT_EQ(src.find("LG_IN_REGISTER(val"), std::string::npos);
  // Its values, against the unoptimized kernel's; then the product's against float64.
  const std::vector<double> plain = run_with(pieces, required_opts(pieces)), tiled = run_with(pieces, opts);
  for (size_t i = 0; i < plain.size(); i++)
    ASSERT_NEAR(tiled[i], plain[i], 1e-4 * (1 + std::abs(plain[i]))) << i;
  std::vector<float> got = x.matmul(w).to_vector<float>(), xs = x.to_vector<float>(),
                     ws = w.to_vector<float>();
  for (int64_t j = 0; j < 768; j += 7) {
    double want = 0;
    for (int64_t i = 0; i < 3072; i++) want += static_cast<double>(xs[i]) * ws[i * 768 + j];
    ASSERT_NEAR(got[j], want, 1e-3 * (1 + std::abs(want))) << j;
  }
  // Assigned into a tensor that was there before (the ASSIGN is rebuilt over the split sum).
  Tensor y = Tensor::zeros({1, 768}).contiguous().realize();
  y.assign(x.matmul(w) * 2);
  std::vector<float> twice = y.to_vector<float>();
  for (size_t j = 0; j < twice.size(); j += 7) ASSERT_FLOAT_EQ(twice[j], 2 * got[j]) << j;
  // Not split: x @ W.T, two rows of x, W of 768 KiB.
  EXPECT_EQ(create_schedule({x.matmul(input({768, 3072}, 2).t()).uop()}).kernels.size(), 1u);
  EXPECT_EQ(create_schedule({input({2, 3072}).matmul(w).uop()}).kernels.size(), 1u);
  EXPECT_EQ(create_schedule({input({1, 256}).matmul(input({256, 768}, 2)).uop()}).kernels.size(), 1u);
}

// Gather, index and Embedding sum a one-hot mask over the table's rows; codegen turns that sum
// into one load per element (indices outside the table read 0, as the mask does).
TEST(Optimize, OneHotSumIsOneLoad) {
  Tensor table = Tensor::arange(1000 * 8).reshape({1000, 8}).to(kFloat32).realize();
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{3, 999, 0, -1}, {4}).realize();
  Kernel k = only_kernel(table.index(0, idx));
  EXPECT_EQ(k.work_per_item, 1) << "no loop over the 1000 rows";
  EXPECT_EQ(k.name.substr(0, 2), "E_");
  std::vector<float> got = table.index(0, idx).to_vector<float>();
  ASSERT_EQ(got.size(), 32u);
  for (int j = 0; j < 8; j++) {
    EXPECT_EQ(got[0 * 8 + j], 3 * 8 + j);
    EXPECT_EQ(got[1 * 8 + j], 999 * 8 + j);
    EXPECT_EQ(got[2 * 8 + j], j);
  }
  // index() wraps -1 to the last row as PyTorch does.
  for (int j = 0; j < 8; j++) EXPECT_EQ(got[3 * 8 + j], 999 * 8 + j);
  // 1000 is outside: the load stays guarded (it reads nothing outside the table) and the kernel's
  // index check makes it an error.
  Tensor outside = Tensor::from_vector(std::vector<int64_t>{1000}, {1});
  EXPECT_EQ(only_kernel(table.index(0, outside)).work_per_item, 1);
  EXPECT_THROW(table.index(0, outside).realize(), lazygrad::Error);
  // The gradient (a sum over the indices into each row) still loops, and is still right.
  Tensor w = Tensor::ones({4, 2});
  w.requires_grad(true);
  Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 3, 1}, {3});
  w.index(0, ids).sum().backward();
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{0, 0, 2, 2, 0, 0, 1, 1}));
}

// A weight gradient, x^T @ dy over a long batch axis: the vector lanes go along an axis that the
// register tile upcasts too, and the long-reduction panel split it once more; the Loop over the
// rest of that axis used to count without that split and did not fit (found training a GPT).
TEST(Optimize, AWeightGradientsTileFitsItsAxes) {
  Tensor x = input({2048, 256}), dy = input({2048, 16}, 5);
  Kernel k = only_kernel(x.t().matmul(dy));
  std::vector<Opt> opts = default_opts(k);
  ASSERT_NO_THROW(apply_opts(k, opts)) << opts_str(opts);
  std::vector<double> got = run_with(k, opts), want = run_with(k, {});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-3 * (1 + std::abs(want[i]))) << i;
}

// An output Loop around a reduction: what the reduction reads that the Loop does not move is copied
// once into scratch (codegen/stage.h), and the answer stays the same.
TEST(Optimize, LoopStagesWhatItRepeats) {
  auto expect_staged = [](const Tensor& t, const std::vector<Opt>& opts, bool staged) {
    Kernel k = only_kernel(t);
    auto c = render_kernel(k, opts);
    EXPECT_EQ(c->source.find("local0") != std::string::npos, staged)
        << k.name << " [" << opts_str(opts) << "]";
    std::vector<double> want = run_with(k, {}), got = run_with(k, opts);
    for (size_t i = 0; i < want.size(); i++)
      ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << k.name << " at " << i;
  };
  // Row tiles as a Loop: the panel of B each column tile reads (vector lanes, and scalar).
  Tensor a = input({17, 33}), b = input({33, 40}, 1);
  expect_staged(a.matmul(b), {{AxisKind::Vector, 1, 8}, {AxisKind::Loop, 0, 17}}, true);
  expect_staged(a.matmul(b), {{AxisKind::Upcast, 1, 5}, {AxisKind::Loop, 0, 17}}, true);
  // Output channels as a Loop: the padded input window is staged, zeros where it is padding.
  Tensor x = input({2, 3, 9, 16}), w = input({8, 3, 3, 3}, 2);
  expect_staged(x.conv2d(w, std::nullopt, 1, 1), {{AxisKind::Vector, 3, 16}, {AxisKind::Loop, 1, 8}}, true);
  // Two trips do not pay for the copy.
  expect_staged(input({2, 33}).matmul(b), {{AxisKind::Loop, 0, 2}}, false);
  // A softmax's exp(x - max), computed for the row's sum, is kept for the output (with and without
  // vector lanes); log_softmax's output recomputes only a subtraction, which is not worth a load.
  Tensor rows = input({64, 48});
  Kernel sm = only_kernel(rows.softmax(1)), lsm = only_kernel(rows.log_softmax(1));
  expect_staged(rows.softmax(1), default_opts(sm), true);
  expect_staged(rows.softmax(1), required_opts(sm), true);
  expect_staged(rows.log_softmax(1), default_opts(lsm), false);
}

TEST(Optimize, BadOptsAreErrors) {
  Kernel k = only_kernel(input({12, 10}).sum(1));
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Upcast, 0, 5}}), Error);  // 5 does not divide 12
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Upcast, 1, 2}}), Error);  // axis 1 is the reduction
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Unroll, 0, 2}}), Error);  // axis 0 is an output
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Vector, 0, 4}, {AxisKind::Vector, 1, 2}}), Error);
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Upcast, 7, 2}}), Error);
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Global, 1, 0}}), Error);  // not an output axis
  // Axes of size 1 have no number: here axis 0 is the 12 and axis 1 the reduction.
  Kernel k1 = only_kernel(input({1, 12, 10}).sum(2));
  EXPECT_NO_THROW(apply_opts(k1, std::vector<Opt>{{AxisKind::Upcast, 0, 4}, {AxisKind::Unroll, 1, 5}}));
  EXPECT_EQ(parse_opts("V1:16 U0:4").value(),
            (std::vector<Opt>{{AxisKind::Vector, 1, 16}, {AxisKind::Upcast, 0, 4}}));
  EXPECT_FALSE(parse_opts("V1:x").has_value());
}

TEST(Beam, ChoiceMatchesDefaultAndIsCachedForTheNextProcess) {
  // A private cache: the first search here is a real one.
  std::string dir =
      (std::filesystem::temp_directory_path() / ("lazygrad-beam-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  setenv("LAZYGRAD_CACHE", dir.c_str(), 1);
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  // The search and the reuse each run in a child process (settings are read once per process).
  auto child = [&](const std::string& filter) {
    std::string cmd =
        "BEAM=2 DEBUG=2 '" + exe + "' --gtest_filter=" + filter + " > '" + dir + "/" + filter + ".log' 2>&1";
    return std::system(cmd.c_str());
  };
  ASSERT_EQ(child("Beam.ChildSearches"), 0) << "see " << dir << "/Beam.ChildSearches.log";
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    entries += e.path().filename().string().rfind("beam-", 0) == 0;
  EXPECT_EQ(entries, 1);
  EXPECT_EQ(child("Beam.ChildReuses"), 0) << "see " << dir << "/Beam.ChildReuses.log";
  EXPECT_EQ(child("Beam.ChildSetBeam"), 0) << "see " << dir << "/Beam.ChildSetBeam.log";
  if (!HasFailure()) std::filesystem::remove_all(dir);
  unsetenv("LAZYGRAD_CACHE");
}

// Run by the test above in child processes (BEAM=2, a private cache); they pass trivially when run
// directly.
namespace {
Tensor beam_product() { return input({48, 32}).matmul(input({32, 64}, 1)); }
}  // namespace

TEST(Beam, ChildSearches) {
  if (settings().beam == 0) GTEST_SKIP() << "run by Beam.ChoiceMatchesDefaultAndIsCachedForTheNextProcess";
  Tensor x = beam_product();
  Kernel k = only_kernel(x);
  std::vector<Opt> chosen = beam_opts(k, settings().beam);
  std::vector<double> got = run_with(k, chosen), want = run_with(k, default_opts(k));
  for (size_t i = 0; i < want.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])));
  EXPECT_EQ(GlobalCounters::beam_searches, 1);
}

TEST(Beam, ChildReuses) {
  if (settings().beam == 0) GTEST_SKIP() << "run by Beam.ChoiceMatchesDefaultAndIsCachedForTheNextProcess";
  GlobalCounters::reset();
  Tensor x = beam_product();
  x.realize();
  EXPECT_EQ(GlobalCounters::beam_searches, 0);  // the first process's choice, from the disk
  EXPECT_EQ(GlobalCounters::compile_count, 0);  // and its kernel, compiled by the first process
}

// set_beam and set_threads in a running process: a kernel already compiled with the defaults is
// searched again, once per thread count, as the disk cache keys BEAM's choice (bench/sgemm does this).
TEST(Beam, ChildSetBeam) {
  if (settings().beam == 0) GTEST_SKIP() << "run by Beam.ChoiceMatchesDefaultAndIsCachedForTheNextProcess";
  int threads = settings().threads;
  auto product = [] { return input({40, 24}).matmul(input({24, 48}, 1)); };  // a shape no other test uses
  set_beam(0);
  product().realize();
  GlobalCounters::reset();
  set_beam(2);
  product().realize();
  EXPECT_EQ(GlobalCounters::beam_searches, 1);
  product().realize();
  EXPECT_EQ(GlobalCounters::beam_searches, 1);
  set_threads(threads + 1);
  product().realize();
  EXPECT_EQ(GlobalCounters::beam_searches, 2);
  set_threads(threads);
}

// Pooling's accesses on vector lanes: a 2x2 window's columns (every second value: a double-width
// load and a shuffle) and a pooling gradient's pooled values (each for two lanes: a half-width
// load and a shuffle), and a padded window's edges as one masked load; each kernel's defaults give
// the unoptimized kernel's answer.
TEST(Optimize, PoolingLanesLoadInPairsAndHalves) {
  Tensor x = input({2, 3, 24, 32}), p = input({2, 3, 12, 16}, 5);
  Tensor up = p.reshape({2, 3, 12, 1, 16, 1}).expand({2, 3, 12, 2, 16, 2}).reshape({2, 3, 24, 32});
  struct Case {
    Tensor t;
    const char* needs;
  };
  for (const Case& c : {Case{x.max_pool2d(2), "_double"}, Case{x * up + up, "_half"},
                        Case{x.conv2d(input({4, 3, 3, 3}, 1), std::nullopt, 1, 1), "lg_mload_"}}) {
    Kernel k = only_kernel(c.t);
    std::vector<Opt> opts = default_opts(k, cpu_target(known_cpu("zen4")));
    auto src = render_kernel(k, opts);
    EXPECT_NE(src->source.find(c.needs), std::string::npos) << opts_str(opts) << "\n" << src->source;
    std::vector<double> want = run_with(k, {}), got = run_with(k, opts);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); i++)
      ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << opts_str(opts) << " " << i;
  }
}
