// Deep and widely shared graphs (issue 13): chains of 100,000 ops realize and differentiate (every
// graph walk is a loop, not recursion, and the scheduler cuts a kernel at kMaxKernelDepth ops), and
// a chain of composed activations costs walks linear in its size (no walk revisits a shared node).
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>

#include "engine/schedule.h"
#include "ir/uop.h"
#include "ir/walk.h"

using namespace lazygrad;

namespace {
Tensor vec(std::vector<float> v) {
  Shape s{static_cast<int64_t>(v.size())};
  return Tensor::from_vector(v, s);
}
}  // namespace

TEST(DeepGraphs, SixThousandAdditionsRealize) {
  Tensor y = vec({1, 2, 3});
  for (int i = 0; i < 6000; i++) y = y + 1;
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{6001, 6002, 6003}));
}

TEST(DeepGraphs, HundredThousandOpsRealizeAsSeveralKernels) {
  Tensor y = vec({0.5f, 1.0f});
  for (int i = 0; i < 50000; i++) y = (y * 0.5f + 0.25f).relu();  // 3 ops a step, no folding
  GlobalCounters::reset();
  auto v = y.to_vector<float>();
  EXPECT_NEAR(v[0], 0.5f, 1e-6);  // the fixed point of x / 2 + 1/4
  EXPECT_NEAR(v[1], 0.5f, 1e-6);
  EXPECT_GE(GlobalCounters::kernel_count, 150000 / 256);  // cut every kMaxKernelDepth ops or so
}

TEST(DeepGraphs, EightThousandMultipliesThenAGradient) {
  Tensor x = vec({1, 2}).requires_grad(true);
  Tensor y = x;
  for (int i = 0; i < 8000; i++) y = y * 1.0001f;
  y.sum().backward();
  float want = std::pow(1.0001f, 8000.0f);
  auto g = x.grad().to_vector<float>();
  EXPECT_NEAR(g[0], want, 1e-3 * want);
  EXPECT_NEAR(g[1], want, 1e-3 * want);
}

TEST(DeepGraphs, ThreeThousandReshapePermutePairs) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; i++) v[i] = static_cast<float>(i);
  Tensor x = Tensor::from_vector(v, {4, 6}), y = x;
  for (int i = 0; i < 3000; i++) y = y.reshape({6, 4}).permute({1, 0});
  // Each pair is a fixed permutation of the 24 elements; 3000 of them compose to some permutation:
  // the same one a host loop gives.
  std::vector<float> h = v;
  for (int i = 0; i < 3000; i++) {
    std::vector<float> n(24);
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 6; c++) n[r * 6 + c] = h[c * 4 + r];  // reshape to 6x4, transpose to 4x6
    h = n;
  }
  EXPECT_EQ((y + 0).to_vector<float>(), h);
}

TEST(DeepGraphs, ALongChainIsDestroyedWithoutRecursion) {
  auto x = make_uop(Ops::CONST, kFloat32, {}, 1.0);
  UOpPtr u = x;
  for (int i = 0; i < 300000; i++) u = make_uop(Ops::SQRT, kFloat32, {u});
  u.reset();  // ~UOp releases the chain in a loop
  SUCCEED();
}

// Composed activations share their input many times over: tanh of tanh of ... is a DAG whose tree
// (what a walk that forgets what it visited sees) doubles with each layer. The kernel's name took
// over 40 s for tanh x4 that way.
TEST(DeepGraphs, WalksOverSharedGraphsVisitEachNodeOnce) {
  auto check = [](const char* what, const std::function<Tensor(Tensor)>& f, int times) {
    Tensor y = vec({0.1f, 0.2f, 0.3f});
    for (int i = 0; i < times; i++) y = f(y);
    walk_counts().visits = 0;
    walk_counts().nodes = 0;
    y.realize();
    int64_t visits = walk_counts().visits, nodes = walk_counts().nodes;
    EXPECT_GT(nodes, 0) << what;
    EXPECT_LE(visits, 2 * nodes) << what << ": " << visits << " visits of " << nodes << " nodes";
  };
  check(
      "tanh x8", [](Tensor t) { return t.tanh(); }, 8);
  check(
      "sigmoid x8", [](Tensor t) { return t.sigmoid(); }, 8);
  check(
      "softplus x6", [](Tensor t) { return t.softplus(); }, 6);
  check(
      "mish x3", [](Tensor t) { return t.mish(); }, 3);
  check(
      "32 reshape/permute pairs",
      [](Tensor t) {
        return (t.reshape({3, 1}).permute({1, 0}).reshape({3}) * 1.5f);
      },
      32);
}

// The graph printed for DEBUG=5 names a node met again instead of printing it again.
TEST(DeepGraphs, GraphTextIsLinearInTheGraph) {
  Tensor y = vec({0.1f, 0.2f});
  for (int i = 0; i < 12; i++) y = y.tanh();
  std::string text = y.uop()->str();
  EXPECT_LT(text.size(), 200000u);
  EXPECT_NE(text.find("(above)"), std::string::npos);
}

// Models whose fused kernel once had a name longer than a file name may be ("kernel cache: cannot
// write"): a product then tanh, a Linear and Tanh, a one-step RNN cell.
TEST(DeepGraphs, ModelsWithComposedActivationsRun) {
  Tensor::manual_seed(2);
  Tensor x = Tensor::randn({4, 8}), w = Tensor::randn({8, 16}), u = Tensor::randn({16, 16});
  Tensor h = Tensor::zeros({4, 16});
  EXPECT_EQ(x.matmul(w).tanh().to_vector<float>().size(), 64u);
  nn::Sequential seq(std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::Tanh>());
  EXPECT_EQ(seq.forward(x).to_vector<float>().size(), 64u);
  Tensor h1 = (x.matmul(w) + h.matmul(u)).tanh();  // one step of an RNN
  for (float v : h1.to_vector<float>()) EXPECT_LE(std::fabs(v), 1.0f);
}
