// Autograd: the rules of the primitives, accumulation, detach/NoGrad, errors, and the
// finite-difference checker on composed ops.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>

#include "expect_error.h"

using namespace lazygrad;

namespace {
Tensor leaf(std::vector<float> v, const Shape& s) { return Tensor::from_vector(v, s).requires_grad(true); }
void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}
}  // namespace

TEST(Autograd, BroadcastMulAndSum) {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3}), b = leaf({10, 20, 30}, {3});
  ((a * b).sum() + a.sum()).backward();
  expect_near(a.grad().to_vector<float>(), {11, 21, 31, 11, 21, 31});
  expect_near(b.grad().to_vector<float>(), {5, 7, 9});  // broadcast: summed over the expanded axis
}

TEST(Autograd, UnaryRules) {
  Tensor x = leaf({0.5f, 1.0f, 2.0f}, {3});
  auto g = [&](const Tensor& y) { return y.sum().gradient({x})[0].to_vector<float>(); };
  expect_near(g(x.exp()), {std::exp(0.5f), std::exp(1.0f), std::exp(2.0f)});
  expect_near(g(x.log()), {2.0f, 1.0f, 0.5f});
  expect_near(g(x.sqrt()), {0.5f / std::sqrt(0.5f), 0.5f, 0.5f / std::sqrt(2.0f)});
  expect_near(g(x.sin()), {std::cos(0.5f), std::cos(1.0f), std::cos(2.0f)});
  expect_near(g(x.reciprocal()), {-4.0f, -1.0f, -0.25f});
  expect_near(g(x.pow(3)), {0.75f, 3.0f, 12.0f});
  expect_near(g(x / (x + 1)), {1 / 2.25f, 1 / 4.0f, 1 / 9.0f});
}

TEST(Autograd, ReluHasZeroGradientAtZeroLikePyTorch) {
  Tensor x = leaf({-1, 0, 2}, {3});
  x.relu().sum().backward();
  expect_near(x.grad().to_vector<float>(), {0, 0, 1});
}

TEST(Autograd, MaxSharesTiesAndProdHandlesZeros) {
  Tensor x = leaf({1, 3, 3, 2}, {4});
  x.max().backward();
  expect_near(x.grad().to_vector<float>(), {0, 0.5f, 0.5f, 0});
  Tensor y = leaf({2, 0, 3, 0, 5, 4}, {2, 3});
  y.prod(1).sum().backward();
  expect_near(y.grad().to_vector<float>(), {0, 6, 0, 20, 0, 0});
  Tensor m = leaf({1, 5, 2, 2}, {4});
  m.maximum(Tensor::full({4}, 2.0f)).sum().backward();
  expect_near(m.grad().to_vector<float>(), {0, 1, 0.5f, 0.5f});
}

TEST(Autograd, MovementOpsRouteGradientsBack) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = x.permute({1, 0}).pad({1, 1}).flip(0).slice(1, 0, 3);  // {3, 3}
  (y.reshape({9}).expand({2, 9}) * Tensor::arange(18).to(kFloat32).reshape({2, 9})).sum().backward();
  // y[i][k] is x[k - 1][2 - i] (k = 1, 2), weighted by (i*3 + k) + (9 + i*3 + k) after the expand.
  expect_near(x.grad().to_vector<float>(), {23, 17, 11, 25, 19, 13});
  auto r = gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].permute({1, 0}).pad({1, 1}).flip(0).slice(1, 0, 3);
      },
      {x.detach()});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Autograd, SoftmaxMatchesClosedForm) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor s = x.softmax(0);
  s.select(0, 2).backward();
  auto p = s.to_vector<float>();
  expect_near(x.grad().to_vector<float>(), {-p[2] * p[0], -p[2] * p[1], p[2] * (1 - p[2])});
}

TEST(Autograd, GradientsAccumulateUntilZeroGrad) {
  Tensor x = leaf({1, 2}, {2});
  (x * 3).sum().backward();
  (x * 4).sum().backward();
  expect_near(x.grad().to_vector<float>(), {7, 7});
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  (x * x).sum().backward();
  expect_near(x.grad().to_vector<float>(), {2, 4});
}

TEST(Autograd, DetachAndNoGradCutTheGraph) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = (x * x.detach()).sum();  // d/dx = x (the detached factor is a constant)
  y.backward();
  expect_near(x.grad().to_vector<float>(), {1, 2});
  x.zero_grad();
  Tensor z;
  {
    NoGrad guard;
    z = x * 5;
    EXPECT_FALSE(z.requires_grad());
  }
  EXPECT_TRUE((x * 5).requires_grad());
  (x.sum() + (z * x).sum()).backward();  // z is a constant here
  expect_near(x.grad().to_vector<float>(), {6, 11});
}

TEST(Autograd, BackwardIsLazyAndFusesWithTheUpdate) {
  Tensor w = leaf({1, 2, 3, 4}, {4});
  Tensor x = Tensor::from_vector(std::vector<float>{1, 1, 2, 2}, {4});
  GlobalCounters::reset();
  Tensor loss = ((w * x).sum() - 3).pow(2);
  loss.backward();
  EXPECT_EQ(GlobalCounters::kernel_count, 0);  // nothing ran yet
  {
    NoGrad guard;
    w.assign(w - w.grad() * 0.01);
  }
  realize({loss, w});
  // w.grad is still held and reads w: it is computed too, before the update writes w in place.
  EXPECT_LE(GlobalCounters::kernel_count, 4);
  expect_near(w.grad().to_vector<float>(), {28, 28, 56, 56}, 1e-4f);
  // loss = (1 + 2 + 6 + 8 - 3)^2 = 196; dloss/dw = 2 * 14 * x = 28 * x
  EXPECT_FLOAT_EQ(loss.item<float>(), 196.0f);
  expect_near(w.to_vector<float>(), {1 - 0.28f, 2 - 0.28f, 3 - 0.56f, 4 - 0.56f}, 1e-5f);
}

TEST(Autograd, GradcheckOnComposedOps) {
  Tensor::manual_seed(1);
  Tensor a = Tensor::randn({3, 4}, kFloat64), b = Tensor::randn({4}, kFloat64).abs() + 0.5;
  auto check = [&](const char* what, const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
    auto r = gradcheck(fn, {a, b});
    EXPECT_TRUE(r.ok) << what << ": " << r.message;
  };
  check("log_softmax", [](const std::vector<Tensor>& in) { return (in[0] * in[1]).log_softmax(1); });
  check("div and sqrt", [](const std::vector<Tensor>& in) { return (in[0] / in[1].sqrt()).sum(0); });
  check("max and min",
        [](const std::vector<Tensor>& in) { return in[0].max(1) - (in[0] * in[1]).min(0).sum(); });
  check("where and pow",
        [](const std::vector<Tensor>& in) { return where(in[0] > 0, in[0].pow(in[1]), in[0] * in[1]); });
  check("cat, stack and mean", [](const std::vector<Tensor>& in) {
    return Tensor::cat({in[0], in[1].reshape({1, 4})}, 0).mean(0) + Tensor::stack({in[1], in[1]}, 0).sum(0);
  });
}

TEST(Autograd, GradcheckOnLayers) {
  // The composed layers of issue 3 through finite differences too (small shapes: 2 evaluations per
  // input element).
  Tensor::manual_seed(2);
  Tensor x = Tensor::randn({2, 2, 5, 5}, kFloat64), w = Tensor::randn({3, 2, 3, 3}, kFloat64);
  auto conv = gradcheck([](const std::vector<Tensor>& in) { return in[0].conv2d(in[1], std::nullopt, 2, 1); },
                        {x, w});
  EXPECT_TRUE(conv.ok) << "conv2d: " << conv.message;
  // conv2d's input gradient is given by a function (a transposed convolution, src/tensor/conv.cpp):
  // it is differentiable in turn. The input gradient as a function of the weight, with a fixed
  // upstream gradient, checked by finite differences; with dilation and groups, and stride 2.
  Tensor xg = Tensor::randn({2, 4, 6, 6}, kFloat64), wg = Tensor::randn({4, 2, 3, 3}, kFloat64);
  Tensor up = Tensor::randn({2, 4, 2, 2}, kFloat64);
  auto second = gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tensor xx = in[0].detach();
        xx.requires_grad(true);
        return xx.conv2d(in[1], std::nullopt, 2, 1, 2, 2).gradient({xx}, up)[0];
      },
      {xg, wg});
  EXPECT_TRUE(second.ok) << "conv2d input gradient, differentiated: " << second.message;
  Tensor a = Tensor::randn({3, 4}, kFloat64), b = Tensor::randn({4, 5}, kFloat64);
  auto mm = gradcheck([](const std::vector<Tensor>& in) { return in[0].matmul(in[1]).tanh(); }, {a, b});
  EXPECT_TRUE(mm.ok) << "matmul: " << mm.message;
  Tensor gamma = Tensor::randn({4}, kFloat64);
  auto ln = gradcheck([](const std::vector<Tensor>& in) { return in[0].layer_norm({4}, in[1]); }, {a, gamma});
  EXPECT_TRUE(ln.ok) << "layer_norm: " << ln.message;
  Tensor target = Tensor::from_vector(std::vector<int64_t>{1, 0, 3}, {3});
  auto ce = gradcheck(
      [&](const std::vector<Tensor>& in) {
        return in[0].cross_entropy(target, std::nullopt, -100, "mean", 0.1);
      },
      {a});
  EXPECT_TRUE(ce.ok) << "cross_entropy: " << ce.message;
  auto pool = gradcheck([](const std::vector<Tensor>& in) { return in[0].avg_pool2d(2, 1); }, {x});
  EXPECT_TRUE(pool.ok) << "avg_pool2d: " << pool.message;
}

TEST(Autograd, BadUseIsAnError) {
  auto names = [](const std::function<void()>& f, const std::string& op) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one from " << op;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  };
  Tensor x = leaf({1, 2}, {2});
  names([&] { (x * 2).backward(); }, "backward");  // not a scalar, no gradient given
  names([&] { Tensor::from_vector(std::vector<int64_t>{1, 2}, {2}).requires_grad(true); }, "requires_grad");
  names([&] { Tensor::ones({2}).sum().backward(); }, "backward");  // nothing requires grad
  names([&] { (x * 2).backward(Tensor::ones({3})); }, "backward");
}

TEST(Autograd, GradientsStillFlowAfterTheOutputWasRead) {
  // PyTorch differentiates a tensor whose value was printed; so must we, though realizing it
  // replaced its graph by its buffer.
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor h = x * x;
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1, 4, 9}));
  Tensor y = (h * 2).sum();  // built on the realized h
  y.realize();
  y.backward();
  expect_near(x.grad().to_vector<float>(), {4, 8, 12});
}

TEST(Autograd, ReshapesOfLeavesKeepTheLeafInTheGraph) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  auto g = (x.reshape({3, 2}) * Tensor::arange(6).to(kFloat32).reshape({3, 2})).sum().gradient({x})[0];
  expect_near(g.to_vector<float>(), {0, 1, 2, 3, 4, 5});
  Tensor s = Tensor::full({}, 3.0f).requires_grad(true);  // a 0-d leaf
  expect_near((s.unsqueeze(0) * 2).sum().gradient({s})[0].to_vector<float>(), {2});
}

// An in-place update of a leaf between its forward pass and backward() (issue 13: w.grad was left
// undefined with no error). With gradients recorded PyTorch refuses the update itself; under NoGrad
// the gradient is the leaf's, where the forward pass read it, and a gradient that needs the value
// the update overwrote is refused, as PyTorch refuses it.
TEST(Autograd, InPlaceUpdateOfALeafBetweenForwardAndBackward) {
  Tensor w = leaf({1, 2, 3}, {3});
  Tensor x = Tensor::from_vector(std::vector<float>{4, 5, 6}, {3});
  Tensor y = (w * x).sum();
  try {
    w += 1;
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leaf"), std::string::npos) << e.what();
  }
  {  // lazily updated: the forward graph still reads w's old node
    NoGrad guard;
    w += 1;
  }
  y.backward();
  ASSERT_TRUE(w.grad().defined());
  expect_near(w.grad().to_vector<float>(), {4, 5, 6}, 0);
  expect_near(w.to_vector<float>(), {2, 3, 4}, 0);
  w.zero_grad();
  // Realized in place in between, and the gradient needs w's old value: refused.
  Tensor z = (w * w).sum();
  {
    NoGrad guard;
    w.assign(w * 10).realize();
  }
  EXPECT_EQ(z.item<float>(), 4 + 9 + 16);  // computed before the update overwrote w
  try {
    z.backward();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified in place"), std::string::npos) << e.what();
  }
  // A gradient that does not read the overwritten value is still the leaf's (d(w * x)/dw = x).
  Tensor u = (w * x).sum();
  u.realize();
  {
    NoGrad guard;
    w.assign(w + 1).realize();
  }
  u.backward();
  expect_near(w.grad().to_vector<float>(), {4, 5, 6}, 0);
}

// The other order: a leaf updated under NoGrad, then read, and the forward realized before
// backward() (which realizes the update too). The update was the leaf's; the gradient is the
// leaf's, and realizing the gradient does not run the update again (issue 16: w.grad was left
// undefined, or a false "modified in place" refusal, as `with no_grad: w.copy_(v)` then training).
TEST(Autograd, ALeafUpdatedUnderNoGradThenReadKeepsItsGradient) {
  Tensor w = leaf({1, 2, 3}, {3});
  {
    NoGrad guard;
    w.assign(w * 10);
  }
  Tensor y = (w * w).sum();
  EXPECT_EQ(y.item<float>(), 100 + 400 + 900);
  y.backward();
  ASSERT_TRUE(w.grad().defined());
  expect_near(w.grad().to_vector<float>(), {20, 40, 60}, 0);
  expect_near(w.to_vector<float>(), {10, 20, 30}, 0);  // updated once, not again by the gradient
  // Unrealized all along: the same gradient.
  Tensor v = leaf({1, 2, 3}, {3});
  {
    NoGrad guard;
    v.assign(Tensor::from_vector(std::vector<float>{4, 5, 6}, {3}));
  }
  (v * v).sum().backward();
  expect_near(v.grad().to_vector<float>(), {8, 10, 12}, 0);
}

TEST(Autograd, AnIntegerResultEndsTheGradientGraphAsInPyTorch) {
  // torch: x.int().requires_grad and x.int().float().requires_grad are False, and backward of the
  // latter raises "element 0 of tensors does not require grad and does not have a grad_fn".
  Tensor x = leaf({1.5f, 2.5f}, {2});
  EXPECT_FALSE(x.to(kInt32).requires_grad());
  EXPECT_FALSE(x.to(kInt32).to(kFloat32).requires_grad());
  EXPECT_FALSE(x.gt(2).requires_grad());
  EXPECT_FALSE(x.argmax().requires_grad());
  EXPECT_TRUE(x.to(kFloat64).requires_grad());  // a float cast keeps it
  expect_error([&] { x.to(kInt32).to(kFloat32).sum().backward(); }, {"backward", "does not require grad"});
  EXPECT_FALSE(x.grad().defined());
  // A float path next to the integer one still carries its gradient (torch: 2 for each element).
  (x * 2 + x.to(kInt32)).sum().backward();
  expect_near(x.grad().to_vector<float>(), {2, 2});
}

TEST(Autograd, RoundingOpsAndSignHaveZeroGradients) {
  // trunc goes through an integer cast and sign through comparisons, yet their results require
  // grad and their gradient is 0, as PyTorch's trunc, floor, ceil, round and sign are (x.grad is
  // zeros, not None).
  for (auto op : {&Tensor::trunc, &Tensor::floor, &Tensor::ceil, &Tensor::round, &Tensor::sign}) {
    Tensor x = leaf({1.5f, -2.5f, 3.0f}, {3});
    Tensor y = (x.*op)();
    EXPECT_TRUE(y.requires_grad());
    y.sum().backward();
    ASSERT_TRUE(x.grad().defined());
    expect_near(x.grad().to_vector<float>(), {0, 0, 0});
  }
}

// Values from PyTorch 1.13 (float32), bases {0, -0, 1, 2, -2, 0.5, 3}. Through exp2(y * log2|x|)
// the chain rule gave NaN at a zero base; pow's gradient is PyTorch's formula instead.
namespace {
void expect_same(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << got[i];
    else if (std::isinf(want[i]))
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    else
      EXPECT_NEAR(got[i], want[i], 1e-5f * std::max(1.0f, std::abs(want[i]))) << "at " << i;
  }
}
const std::vector<float> kBases{0.0f, -0.0f, 1, 2, -2, 0.5f, 3};
const float kInf = INFINITY, kNaN = NAN;
}  // namespace

TEST(Autograd, PowGradientAtAZeroBaseIsPyTorchs) {
  auto dx = [](double e) {
    Tensor x = leaf(kBases, {7});
    (x.pow(e) + x * 0).sum().backward();
    return x.grad().to_vector<float>();
  };
  expect_same(dx(0), {0, 0, 0, 0, 0, 0, 0});  // x ** 0: 0 everywhere, also at 0
  expect_same(dx(2), {0, -0.0f, 2, 4, -4, 1, 6});
  expect_same(dx(-1), {-kInf, -kInf, -1, -0.25f, -0.25f, -4, -1 / 9.0f});
  expect_same(dx(-0.5), {-kInf, -kInf, -0.5f, -0.17677669f, kNaN, -1.4142135f, -0.09622505f});
  expect_same(dx(2.5), {0, 0, 2.5f, 7.071068f, kNaN, 0.8838835f, 12.99038f});
  // A tensor exponent: the base's gradient is 0 where the exponent is 0, the exponent's is 0 where
  // the base is 0 and the exponent >= 0.
  Tensor x = leaf(kBases, {7}), e = leaf(std::vector<float>(7, 0.0f), {7});
  x.pow(e).sum().backward();
  expect_same(x.grad().to_vector<float>(), {0, 0, 0, 0, 0, 0, 0});
  expect_same(e.grad().to_vector<float>(), {0, 0, 0, 0.6931472f, kNaN, -0.6931472f, 1.0986123f});
  Tensor y = leaf(kBases, {7}), f = leaf(std::vector<float>(7, 2.5f), {7});
  y.pow(f).sum().backward();
  expect_same(y.grad().to_vector<float>(), {0, 0, 2.5f, 7.071068f, kNaN, 0.8838835f, 12.99038f});
  expect_same(f.grad().to_vector<float>(), {0, 0, 0, 3.9210324f, kNaN, -0.12253226f, 17.125671f});
  // A zero base to tensor exponents {0, 1, 2, 0.5, -1, -0.5}: 0 for exponents >= 0, -inf below.
  Tensor p = leaf({0, 1, 2, 0.5f, -1, -0.5f}, {6});
  Tensor::zeros({6}).pow(p).sum().backward();
  expect_same(p.grad().to_vector<float>(), {0, 0, 0, 0, -kInf, -kInf});
}

TEST(Autograd, DivisionGradientsAtOverflowAreTorchs) {
  // sigmoid written as exp(x) / (1 + exp(x)): PyTorch 1.13 gives NaN at x = 300 in float32 (inf / inf
  // forward too) and 0 in float64; lazygrad gives the same, and the same at the other points.
  Tensor x32 = leaf({300, -300, 0, 50, 20}, {5});
  (x32.exp() / (x32.exp() + 1)).sum().backward();
  expect_same(x32.grad().to_vector<float>(), {kNaN, 0, 0.25f, 0, 2.0611537e-09f});
  Tensor x64 = Tensor::from_vector<double>({300, -300, 0, 700, 800}, {5}).requires_grad(true);
  (x64.exp() / (x64.exp() + 1)).sum().backward();
  std::vector<double> g = x64.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0);
  EXPECT_NEAR(g[1], 5.14820022e-131, 1e-138);
  EXPECT_EQ(g[2], 0.25);
  EXPECT_EQ(g[3], 0);
  EXPECT_TRUE(std::isnan(g[4]));  // exp(800) is inf in float64 too
}

TEST(Autograd, ComparisonsOfTensorsThatRequireGradHaveZeroGradients) {
  // torch: x < y is a bool that does not require grad; used as a mask in a float graph, the
  // gradient flows through the float operand only (tinygrad's test_cmp_lt_backwards).
  Tensor x = leaf({1, -2, 3, 0}, {4}), y = leaf({0, 0, 5, 0}, {4});
  for (const Tensor& c : {x.lt(y), x.ne(y), x.eq(y), x.ge(y), x.gt(0), x.le(0)}) {
    EXPECT_EQ(c.dtype(), kBool);
    EXPECT_FALSE(c.requires_grad());
  }
  (x * x.lt(0)).sum().backward();
  expect_near(x.grad().to_vector<float>(), {0, 1, 0, 0});
  x.zero_grad();
  (x * x.ne(0) + y * x.lt(y)).sum().backward();
  expect_near(x.grad().to_vector<float>(), {1, 1, 1, 0});
  expect_near(y.grad().to_vector<float>(), {0, 1, 1, 0});
  x.zero_grad();
  lazygrad::where(x.gt(y), x, y * 2).sum().backward();
  expect_near(x.grad().to_vector<float>(), {1, 0, 0, 0});
}
