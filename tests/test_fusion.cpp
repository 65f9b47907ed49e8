// Fusion and scheduling, counted with GlobalCounters: how many kernels each expression costs.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cmath>

#include "ir/uop.h"
#include "lazygrad/variable.h"

using namespace lazygrad;

namespace {
int64_t kernels_to_realize(Tensor t) {
  GlobalCounters::reset();
  t.realize();
  return GlobalCounters::kernel_count;
}
Tensor input(const Shape& shape, float scale = 1.0f) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; i++) v[i] = scale * static_cast<float>((i * 37) % 23 - 11);
  return Tensor::from_vector(v, shape);
}
}  // namespace

TEST(Fusion, ElementwiseChainAndReduceIsOneKernel) {
  Tensor a = input({64, 33}), b = input({64, 33}, 0.5f), c = input({64, 33}, -0.25f);
  Tensor y = ((a + b) * c).relu().sum(1);
  EXPECT_EQ(kernels_to_realize(y), 1);
  auto av = a.to_vector<float>(), bv = b.to_vector<float>(), cv = c.to_vector<float>();
  auto yv = y.to_vector<float>();
  ASSERT_EQ(yv.size(), 64u);
  for (int i = 0; i < 64; i++) {
    float acc = 0;
    for (int j = 0; j < 33; j++) acc += std::max(0.0f, (av[i * 33 + j] + bv[i * 33 + j]) * cv[i * 33 + j]);
    EXPECT_FLOAT_EQ(yv[i], acc);
  }
}

TEST(Fusion, MovementOpsAreFreeUntilUsed) {
  Tensor x = input({4, 6});
  x.realize();
  GlobalCounters::reset();
  Tensor v = x.reshape({2, 3, 4}).permute({2, 0, 1}).reshape({4, 1, 6}).expand({4, 5, 6});
  v.realize();  // a view of a realized buffer: nothing to compute
  EXPECT_EQ(GlobalCounters::kernel_count, 0);
  EXPECT_TRUE(v.is_realized());
  // Used by a consumer, it becomes that consumer's index math: still one kernel.
  Tensor s = (v * 2).sum();
  EXPECT_EQ(kernels_to_realize(s), 1);
  auto xv = x.to_vector<float>();
  float expect = 0;
  for (float f : xv) expect += 2 * f * 5;
  EXPECT_FLOAT_EQ(s.item<float>(), expect);
}

TEST(Fusion, SoftmaxIsAtMostThreeKernels) {
  Tensor x = input({16, 33}, 0.1f);
  EXPECT_LE(kernels_to_realize(x.softmax(-1)), 3);
  EXPECT_LE(kernels_to_realize(x.log_softmax(1)), 3);
}

// An elementwise value that a matrix product would recompute for every output column (uint8 pixels
// scaled to [0, 1], a division per element) is computed once into its own buffer; a cheap cast alone
// stays fused (docs/optimizer.md, "The scheduler's part").
TEST(Fusion, CostlyValueReadByAProductIsComputedOnce) {
  std::vector<uint8_t> px(64 * 96);
  for (size_t i = 0; i < px.size(); i++) px[i] = static_cast<uint8_t>((i * 37) % 256);
  Tensor x = Tensor::from_vector(px, {64, 96}), w = input({96, 32}, 0.01f);
  EXPECT_EQ(kernels_to_realize(x.to(kFloat32).div(255).matmul(w)), 2);
  EXPECT_EQ(kernels_to_realize(x.to(kFloat32).matmul(w)), 1);
  Tensor y = x.to(kFloat32).div(255).matmul(w);
  auto yv = y.to_vector<float>(), wv = w.to_vector<float>();
  for (int i = 0; i < 64; i += 7)
    for (int j = 0; j < 32; j += 5) {
      double acc = 0;
      for (int k = 0; k < 96; k++)
        acc += static_cast<double>(static_cast<float>(px[i * 96 + k]) / 255.0f) * wv[k * 32 + j];
      EXPECT_NEAR(yv[i * 32 + j], acc, 1e-5);
    }
}

// A gather of random rows (beautiful_mnist's X_train[Tensor.randint(...)]): the random indices get
// a kernel of their own, and the one-hot mask stays fused so lowering folds it into one load per
// element. When the generator's cost was charged to the mask, the mask was stored and the gather
// looped over every row of the table (issue 16: 5.4 s per batch of 32 Fashion-MNIST images).
TEST(Fusion, AGatherOfRandomRowsLoadsEachRowOnce) {
  Tensor table = input({600, 96}, 0.5f);
  table.realize();
  Tensor::manual_seed(3);
  Tensor rows = table.index(0, Tensor::randint(0, 600, {32}));
  GlobalCounters::reset();
  rows.realize();
  EXPECT_LE(GlobalCounters::kernel_count, 2);
  EXPECT_LT(GlobalCounters::global_ops, 32 * 600);  // a loop over the table would be 32 * 600 * 96
  auto tv = table.to_vector<float>(), rv = rows.to_vector<float>();
  for (int i = 0; i < 32; i++) {  // each output row is one of the table's rows
    bool found = false;
    for (int r = 0; r < 600 && !found; r++)
      found = std::equal(rv.begin() + i * 96, rv.begin() + i * 96 + 96, tv.begin() + r * 96);
    EXPECT_TRUE(found) << "row " << i;
  }
}

// With enough rows, a row's max and sum are computed once per row inside the kernel that reads them
// back (docs/optimizer.md): softmax and log_softmax are one kernel each, and give the same values.
TEST(Fusion, SoftmaxOverManyRowsIsOneKernel) {
  Tensor x = input({128, 40}, 0.1f);
  Tensor y = x.softmax(-1), z = x.log_softmax(1), m = x - x.mean(1, true);
  EXPECT_EQ(kernels_to_realize(y), 1);
  EXPECT_EQ(kernels_to_realize(z), 1);
  EXPECT_EQ(kernels_to_realize(m), 1);
  auto xv = x.to_vector<float>(), yv = y.to_vector<float>(), zv = z.to_vector<float>(),
       mv = m.to_vector<float>();
  for (int r = 0; r < 128; r++) {
    double mx = -1e30, sum = 0, mean = 0;
    for (int c = 0; c < 40; c++) mx = std::max<double>(mx, xv[r * 40 + c]);
    for (int c = 0; c < 40; c++) sum += std::exp(xv[r * 40 + c] - mx), mean += xv[r * 40 + c] / 40.0;
    for (int c = 0; c < 40; c++) {
      EXPECT_NEAR(yv[r * 40 + c], std::exp(xv[r * 40 + c] - mx) / sum, 1e-6);
      EXPECT_NEAR(zv[r * 40 + c], xv[r * 40 + c] - mx - std::log(sum), 1e-5);
      EXPECT_NEAR(mv[r * 40 + c], xv[r * 40 + c] - mean, 1e-5);
    }
  }
  // The loss and the normalization the docs count (docs/ops_semantics.md): one kernel each from 64 rows on.
  Tensor labels = Tensor::from_vector(std::vector<int64_t>(128, 3), {128});
  EXPECT_EQ(kernels_to_realize(x.cross_entropy(labels)), 1);
  EXPECT_EQ(kernels_to_realize(x.layer_norm({40})), 1);
  // A row statistic inside a reduction over the other axis is not fused: it would be redone per row.
  EXPECT_EQ(kernels_to_realize((x - x.mean(1, true)).sum(0)), 2);
}

TEST(Fusion, RealizingTwiceRunsNothing) {
  Tensor y = (input({8, 8}) * 3).exp().sum(0);
  EXPECT_EQ(kernels_to_realize(y), 1);
  EXPECT_EQ(kernels_to_realize(y), 0);
  GlobalCounters::reset();
  y.to_vector<float>();
  EXPECT_EQ(GlobalCounters::kernel_count, 0);  // y is a view of its buffer: read directly
}

TEST(Fusion, RealizeManySharesWork) {
  Tensor x = input({32, 32});
  Tensor m = x.max(1, true);
  Tensor a = (x - m).exp(), b = (x - m) * 2;
  GlobalCounters::reset();
  realize({a, b});
  EXPECT_EQ(GlobalCounters::kernel_count, 3);  // the max once, then one kernel per output
}

TEST(Fusion, CountersReportWork) {
  Tensor a = input({1024}), b = input({1024});
  GlobalCounters::reset();
  (a + b).realize();
  EXPECT_EQ(GlobalCounters::kernel_count, 1);
  EXPECT_EQ(GlobalCounters::global_ops, 1024);          // one add per element
  EXPECT_EQ(GlobalCounters::global_mem, 3 * 1024 * 4);  // two inputs read, one output written
}

TEST(Fusion, InPlaceUpdateIsSeenThroughHandlesAndViews) {
  Tensor x = Tensor::zeros({2, 3}).contiguous();
  x.realize();
  Tensor alias = x;             // a second handle on the same data
  Tensor row = x.select(0, 1);  // a view of row 1
  x += 1;
  EXPECT_EQ(alias.to_vector<float>(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(row.to_vector<float>(), std::vector<float>(3, 1.0f));
  row *= 5;  // writes through the view into x
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 1, 1, 5, 5, 5}));
  Tensor col = x.slice(1, 0, 3, 2);  // columns 0 and 2
  col.assign(Tensor::full({2, 2}, 7.0f));
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{7, 1, 7, 7, 5, 7}));
}

TEST(Fusion, AssignReadingItsOwnTargetInAnotherOrder) {
  Tensor x = Tensor::arange(6).to(kFloat32).contiguous();
  x.realize();
  x.assign(x.flip(0) + x);  // every element reads another element of the buffer it writes
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(6, 5.0f));
}

TEST(Fusion, EmptyTensorsRunNoKernel) {
  Tensor e = Tensor::ones({0, 3}) * 2;
  EXPECT_EQ(kernels_to_realize(e), 0);
  EXPECT_TRUE(e.to_vector<float>().empty());
  EXPECT_EQ(Tensor::ones({0, 3}).sum(0).to_vector<float>(), std::vector<float>(3, 0.0f));
}

TEST(Fusion, PendingGraphsKeepTheDataTheyWereBuiltOn) {
  // As in PyTorch: y is x * 2 of x as it was when y was written, whenever y is computed.
  Tensor x = Tensor::arange(4).to(kFloat32).contiguous();
  x.realize();
  Tensor y = x * 2;
  Tensor v = x.flip(0);  // a view follows x, as a PyTorch view does
  x += 10;
  x.realize();
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{10, 11, 12, 13}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 2, 4, 6}));
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{13, 12, 11, 10}));
}

TEST(Fusion, AssignWithoutOtherReadersWritesInPlace) {
  Tensor x = Tensor::zeros({3, 5}).contiguous();
  x.realize();
  auto buffer_of = [](const Tensor& t) {
    UOpPtr keep = t.uop();
    const UOp* u = keep.get();
    while (u->op != Ops::BUFFER) u = u->src[0].get();
    return u->as<std::shared_ptr<Buffer>>().get();
  };
  const Buffer* before = buffer_of(x);
  for (int i = 0; i < 3; i++) x += 1;  // three pending assigns, realized together
  GlobalCounters::reset();
  x.realize();
  EXPECT_EQ(buffer_of(x), before);
  EXPECT_EQ(GlobalCounters::kernel_count, 3);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(15, 3.0f));
}

TEST(Fusion, ReductionOfAReductionIsOneLoopNest) {
  Tensor x = input({7, 33});
  Tensor y = x.sum(1).max(0);
  EXPECT_EQ(kernels_to_realize(y), 1);
  auto v = x.to_vector<float>();
  float best = -1e30f;
  for (int i = 0; i < 7; i++) {
    float s = 0;
    for (int j = 0; j < 33; j++) s += v[i * 33 + j];
    best = std::max(best, s);
  }
  EXPECT_FLOAT_EQ(y.item<float>(), best);
  // Through an expand it would be recomputed per element: then it gets its own kernel.
  EXPECT_EQ(kernels_to_realize(x - x.sum(1, true)), 2);
}

TEST(Fusion, ViewsOfComputedValuesInsideOneKernel) {
  // A flip over every axis of a computed value, then more work: one kernel whose index math
  // undoes the flip (a regression: a simplification once dropped the offset's constant).
  Tensor y = input({2, 3});
  Tensor z = (y * 2).flip({0, 1}) + 1;
  EXPECT_EQ(kernels_to_realize(z), 1);
  auto v = y.to_vector<float>(), out = z.to_vector<float>();
  for (int i = 0; i < 6; i++) EXPECT_FLOAT_EQ(out[i], v[5 - i] * 2 + 1);
}

TEST(Fusion, AGraphBuiltBeforeARealizeReadsItsResult) {
  // w holds z's pending assign; realizing z runs it. Computing w later reads z's buffer: the
  // assign is not applied a second time (and a Variable changed since is not read again).
  Tensor z = Tensor::from_vector(std::vector<float>{1, 2}, {2});
  Variable v(1.0);
  z.assign(z + v.tensor());
  Tensor w = z * 2;
  z.realize();
  v.set(100.0);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{2, 3}));
}

// The random generator costs a dozen integer ops per element: read by every column of a matrix
// product, it is computed once, in a kernel of its own (issue 13: it ran inside the product's
// reduction, 7.75 M ops for a product of 2 M FLOPs).
TEST(Fusion, RandomInputOfAProductIsComputedOnce) {
  Tensor b = Tensor::ones({100, 100}).contiguous().realize();
  GlobalCounters::reset();
  Tensor c = Tensor::rand({100, 100}).matmul(b);
  c.realize();
  EXPECT_LE(GlobalCounters::global_ops, 2500000);
  EXPECT_EQ(GlobalCounters::kernel_count, 2);
  // every column of c is the row sum of the same random matrix
  auto v = c.to_vector<float>();
  for (int i = 0; i < 100; i++) EXPECT_FLOAT_EQ(v[i * 100 + 7], v[i * 100]);
}

// A residual stream, h = h + f(norm(h)) layer after layer: every layer's normalization and the
// next residual read h, so h is stored once per layer rather than recomputed by each reader from
// all earlier layers' outputs (GPT-2's last layer norm read 44 buffers: work grew with the square of
// the depth). Twice the layers read about twice the bytes, and the values are those of a stream
// realized layer by layer.
TEST(Fusion, AResidualStreamIsStoredOncePerLayer) {
  auto stream = [](int layers, bool eager) {
    Tensor h = input({64, 64}, 0.01f);
    for (int i = 0; i < layers; i++) {
      Tensor w = input({64, 64}, 0.001f * static_cast<float>(i + 1));
      Tensor n = h - h.mean(-1, true);
      h = h + n.matmul(w).relu();
      if (eager) h.realize();
    }
    return h;
  };
  auto bytes_read = [&](int layers) {
    Tensor h = stream(layers, false);
    GlobalCounters::reset();
    h.realize();
    return GlobalCounters::global_mem;
  };
  const int64_t eight = bytes_read(8), sixteen = bytes_read(16);
  EXPECT_LT(sixteen, 2.3 * static_cast<double>(eight))
      << eight << " bytes for 8 layers, " << sixteen << " for 16";
  std::vector<float> lazy = stream(16, false).to_vector<float>(), eager = stream(16, true).to_vector<float>();
  ASSERT_EQ(lazy.size(), eager.size());
  for (size_t i = 0; i < lazy.size(); i++)
    ASSERT_NEAR(lazy[i], eager[i], 1e-5f * (1 + std::abs(eager[i]))) << i;
}
