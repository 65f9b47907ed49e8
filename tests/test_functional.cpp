// Losses, normalization, attention and dropout. Forward values and gradients against PyTorch
// through tests/fixtures/functional.txt (written by scripts/fixtures_functional.py); dropout, which
// is random, by its moments, its determinism for a seed and its edge cases; bad input by the errors.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_functional
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "expect_error.h"
#include "fixture_harness.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::Shape;
using lazygrad::Tensor;

// The optional tensor inputs of a case, in order after the required ones: each is present when the
// case has the flag of its name (scripts/fixtures_functional.py writes them that way).
class Optionals {
 public:
  Optionals(const Case& c, const Ins& x, size_t first) : c_(c), x_(x), next_(first) {}
  std::optional<Tensor> next(const std::string& flag) {
    if (!c_.flag(flag)) return std::nullopt;
    return x_.at(next_++);
  }

 private:
  const Case& c_;
  const Ins& x_;
  size_t next_;
};

std::string reduction(const Case& c) { return c.has("reduction") ? c.str("reduction") : "mean"; }
std::optional<double> opt_double(const Case& c, const std::string& key) {
  if (!c.has(key) || c.get(key).kind == "none") return std::nullopt;
  return c.f(key);
}

// batch_norm's output, or (form running_mean / running_var) a running statistic after the call.
Tensor batch_norm_case(const Case& c, const Ins& x) {
  bool running = c.flag("running");  // running_mean and running_var, inputs 1 and 2
  std::optional<Tensor> rm = running ? std::optional(x.at(1)) : std::nullopt;
  std::optional<Tensor> rv = running ? std::optional(x.at(2)) : std::nullopt;
  Optionals o(c, x, running ? 3 : 1);
  std::optional<Tensor> w = o.next("weight"), b = o.next("bias");
  Tensor out =
      x.at(0).batch_norm(rm, rv, w, b, c.flag("training"), c.f_or("momentum", 0.1), c.f_or("eps", 1e-5));
  if (!c.has("form")) return out;
  return c.str("form") == "running_mean" ? *rm : *rv;
}

const fixtures::OpTable& functional_ops() {
  static const fixtures::OpTable table = {
      {"cross_entropy",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 2);
         return x.at(0).cross_entropy(x.at(1), o.next("weight"), c.i_or("ignore_index", -100), reduction(c),
                                      c.f_or("label_smoothing", 0.0));
       }},
      {"nll_loss",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 2);
         return x.at(0).nll_loss(x.at(1), o.next("weight"), c.i_or("ignore_index", -100), reduction(c));
       }},
      {"binary_cross_entropy",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 2);
         return x.at(0).binary_cross_entropy(x.at(1), o.next("weight"), reduction(c));
       }},
      {"binary_cross_entropy_with_logits",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 2);
         std::optional<Tensor> w = o.next("weight"), pw = o.next("pos_weight");
         return x.at(0).binary_cross_entropy_with_logits(x.at(1), w, reduction(c), pw);
       }},
      {"mse_loss", [](const Case& c, const Ins& x) { return x.at(0).mse_loss(x.at(1), reduction(c)); }},
      {"l1_loss", [](const Case& c, const Ins& x) { return x.at(0).l1_loss(x.at(1), reduction(c)); }},
      {"smooth_l1_loss",
       [](const Case& c, const Ins& x) {
         return x.at(0).smooth_l1_loss(x.at(1), reduction(c), c.f_or("beta", 1.0));
       }},
      {"kl_div", [](const Case& c,
                    const Ins& x) { return x.at(0).kl_div(x.at(1), reduction(c), c.flag("log_target")); }},
      {"layer_norm",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 1);
         std::optional<Tensor> w = o.next("weight"), b = o.next("bias");
         return x.at(0).layer_norm(c.ints("normalized_shape"), w, b, c.f_or("eps", 1e-5));
       }},
      {"group_norm",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 1);
         std::optional<Tensor> w = o.next("weight"), b = o.next("bias");
         return x.at(0).group_norm(c.i("num_groups"), w, b, c.f_or("eps", 1e-5));
       }},
      {"rms_norm",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 1);
         return x.at(0).rms_norm(c.ints("normalized_shape"), o.next("weight"), opt_double(c, "eps"));
       }},
      {"batch_norm", batch_norm_case},
      {"batch_norm.running_mean", batch_norm_case},
      {"batch_norm.running_var", batch_norm_case},
      {"scaled_dot_product_attention",
       [](const Case& c, const Ins& x) {
         Optionals o(c, x, 3);
         return lazygrad::scaled_dot_product_attention(x.at(0), x.at(1), x.at(2), o.next("mask"), 0.0,
                                                       c.flag("is_causal"), opt_double(c, "scale"));
       }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(FunctionalParity, functional_ops(), "functional.txt")

// ------------------------------------------------------------------ class indices of other integer dtypes

// PyTorch takes int64 class indices only; lazygrad takes any integer dtype, and ignore_index is
// compared in int64 (-100 must not wrap to 156 in a uint8 target).
TEST(CrossEntropy, AnyIntegerTargetDtype) {
  Tensor::manual_seed(21);
  Tensor logits = Tensor::randn({5, 7}).realize();
  std::vector<int64_t> labels = {1, 6, 0, 3, 2};
  std::vector<float> want =
      logits.cross_entropy(Tensor::from_vector(labels, {5}), std::nullopt, -100, "none").to_vector<float>();
  std::vector<uint8_t> small(labels.begin(), labels.end());
  EXPECT_EQ(
      logits.cross_entropy(Tensor::from_vector(small, {5}), std::nullopt, -100, "none").to_vector<float>(),
      want);
}

// ------------------------------------------------------------------ binary_cross_entropy at 0 and 1

// A probability of exactly 0 or 1 (a saturated sigmoid in float32) gives a finite gradient. PyTorch
// has its own backward there ((p - t) / max(p (1 - p), 1e-12), up to 1e12); the composed one is the
// derivative of the clamped logs: 0 where a log is clamped.
TEST(BinaryCrossEntropy, GradientIsFiniteAtZeroAndOne) {
  Tensor p = Tensor::from_vector<float>({0, 0, 1, 1}, {4}).requires_grad(true);
  Tensor t = Tensor::from_vector<float>({0, 1, 0, 1}, {4});
  Tensor loss = p.binary_cross_entropy(t, std::nullopt, "none");
  std::vector<Tensor> g = loss.sum().gradient({p});
  EXPECT_EQ(loss.to_vector<float>(), (std::vector<float>{0, 100, 100, 0}));
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{1, 0, 0, -1}));
}

// ------------------------------------------------------------------ dropout

TEST(Dropout, KeepsAboutOneMinusPAndScalesByItsInverse) {
  Tensor::manual_seed(11);
  const double p = 0.3;
  std::vector<float> y = Tensor::ones({20000}).dropout(p).to_vector<float>();
  size_t zeros = 0;
  double sum = 0;
  for (float v : y) {
    if (v == 0) {
      zeros++;
    } else {
      EXPECT_FLOAT_EQ(v, static_cast<float>(1 / (1 - p)));
    }
    sum += v;
  }
  // Binomial(20000, 0.3): the standard deviation of the dropped fraction is 0.0032.
  EXPECT_NEAR(static_cast<double>(zeros) / y.size(), p, 0.015);
  EXPECT_NEAR(sum / y.size(), 1.0, 0.03);  // the expectation is kept
}

TEST(Dropout, SameSeedSameMaskNextDrawDifferent) {
  Tensor x = Tensor::arange(1, 1001).to(lazygrad::kFloat32);
  Tensor::manual_seed(42);
  std::vector<float> a = x.dropout(0.5).to_vector<float>();
  std::vector<float> b = x.dropout(0.5).to_vector<float>();
  Tensor::manual_seed(42);
  std::vector<float> again = x.dropout(0.5).to_vector<float>();
  EXPECT_EQ(a, again);
  EXPECT_NE(a, b);
}

TEST(Dropout, EdgeCases) {
  Tensor x = Tensor::from_vector<float>({1.5f, -2.0f, NAN, INFINITY, 0.0f}, {5});
  // Not training, or p = 0: the input itself.
  EXPECT_EQ(x.dropout(0.5, false).uop(), x.uop());
  EXPECT_EQ(x.dropout(0.0).uop(), x.uop());
  // p = 1: everything dropped, as input * 0 (NaN and inf give NaN, as in PyTorch).
  std::vector<float> all = x.dropout(1.0).to_vector<float>();
  EXPECT_EQ(all[0], 0.0f);
  EXPECT_EQ(all[1], 0.0f);
  EXPECT_TRUE(std::isnan(all[2]));
  EXPECT_TRUE(std::isnan(all[3]));
  EXPECT_EQ(all[4], 0.0f);
  // float64 in, float64 out; an empty tensor stays empty.
  EXPECT_EQ(Tensor::ones({4}, lazygrad::kFloat64).dropout(0.5).dtype(), lazygrad::kFloat64);
  EXPECT_EQ(Tensor::ones({0, 3}).dropout(0.5).to_vector<float>().size(), 0u);
}

TEST(Dropout, GradientIsTheSameMaskTimesTheScale) {
  Tensor::manual_seed(3);
  const double p = 0.4;
  Tensor x = (Tensor::rand({6, 7}) + 0.5).realize().requires_grad(true);
  Tensor y = x.dropout(p);
  std::vector<Tensor> g = (y * 3).sum().gradient({x});
  ASSERT_EQ(g.size(), 1u);
  std::vector<float> yv = y.to_vector<float>(), xv = x.to_vector<float>(), gv = g[0].to_vector<float>();
  size_t kept = 0;
  for (size_t i = 0; i < yv.size(); i++) {
    bool keep = yv[i] != 0;  // x >= 0.5, so only a dropped element is 0
    kept += keep;
    EXPECT_FLOAT_EQ(gv[i], keep ? static_cast<float>(3 / (1 - p)) : 0.0f) << "element " << i;
    if (keep) {
      EXPECT_FLOAT_EQ(yv[i], xv[i] * static_cast<float>(1 / (1 - p)));
    }
  }
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, yv.size());
}

TEST(Attention, DropoutInsideIsSeeded) {
  Tensor::manual_seed(9);
  Tensor q = Tensor::randn({2, 3, 4}).realize(), k = Tensor::randn({2, 5, 4}).realize(),
         v = Tensor::randn({2, 5, 4}).realize();
  auto attend = [&](uint64_t seed) {
    Tensor::manual_seed(seed);
    return q.scaled_dot_product_attention(k, v, std::nullopt, 0.5).to_vector<float>();
  };
  std::vector<float> a = attend(100);
  EXPECT_EQ(a, attend(100));  // the seed fixes the dropped attention weights
  EXPECT_NE(a, attend(101));  // (a new counter, not a new kernel)
}

// ------------------------------------------------------------------ batch_norm's state

TEST(BatchNorm, RunningStatsStayOutOfTheGradientGraph) {
  Tensor::manual_seed(5);
  Tensor x = Tensor::randn({4, 3, 2}).realize().requires_grad(true);
  Tensor rm = Tensor::zeros({3}).realize(), rv = Tensor::ones({3}).realize();
  Tensor y = x.batch_norm(rm, rv, std::nullopt, std::nullopt, true);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(rm.requires_grad());
  EXPECT_FALSE(rv.requires_grad());
  // The updated statistics depend on x only through detached values: no gradient reaches x.
  Tensor through_stats = (rm + rv).sum().gradient({x})[0];
  Tensor through_output = (y * Tensor::arange(24).reshape({4, 3, 2})).sum().gradient({x})[0];
  for (float v : through_stats.to_vector<float>()) EXPECT_EQ(v, 0.0f);
  float largest = 0;
  for (float v : through_output.to_vector<float>()) largest = std::max(largest, std::abs(v));
  EXPECT_GT(largest, 0.1f);
}

// ------------------------------------------------------------------ errors

TEST(FunctionalErrors, Losses) {
  Tensor logits = Tensor::zeros({5, 7}), labels = Tensor::zeros({5}, lazygrad::kInt64);
  expect_error([&] { logits.cross_entropy(labels, std::nullopt, -100, "avg"); }, "cross_entropy", "avg");
  expect_error([&] { logits.cross_entropy(Tensor::zeros({4}, lazygrad::kInt64)); }, "cross_entropy",
               "{5, 7}");
  expect_error([&] { logits.cross_entropy(Tensor::zeros({5})); }, "cross_entropy", "float32");
  expect_error(
      [&] {
        logits.cross_entropy(Tensor::zeros({5, 7}), std::nullopt, 3);
      },
      "cross_entropy", "ignore_index");
  expect_error([&] { logits.cross_entropy(labels, Tensor::ones({6})); }, "cross_entropy", "{6}");
  expect_error([&] { logits.cross_entropy(labels, std::nullopt, -100, "mean", 1.5); }, "cross_entropy",
               "label_smoothing");
  expect_error(
      [&] {
        Tensor::zeros({5, 7}, lazygrad::kInt64).cross_entropy(labels);
      },
      "cross_entropy", "int64");
  expect_error([&] { Tensor::zeros({}).cross_entropy(labels); }, "cross_entropy");
  expect_error([&] { logits.nll_loss(Tensor::zeros({5, 2}, lazygrad::kInt64)); }, "nll_loss", "{5, 2}");
  expect_error([&] { logits.nll_loss(labels, std::nullopt, -100, "batchmean"); }, "nll_loss", "batchmean");

  Tensor p = Tensor::full({3, 4}, 0.5);
  expect_error([&] { p.binary_cross_entropy(Tensor::zeros({4})); }, "binary_cross_entropy", "{3, 4}");
  expect_error([&] { p.binary_cross_entropy(p, Tensor::ones({2, 3, 4})); }, "binary_cross_entropy", "weight");
  expect_error([&] { p.binary_cross_entropy_with_logits(p, std::nullopt, "mean", Tensor::ones({3})); },
               "binary_cross_entropy_with_logits", "pos_weight");
  expect_error([&] { p.mse_loss(Tensor::zeros({3})); }, "mse_loss", "{3, 4}");
  expect_error([&] { Tensor::zeros({3}, lazygrad::kInt32).mse_loss(Tensor::zeros({3}, lazygrad::kInt32)); },
               "mse_loss", "int32");
  expect_error([&] { p.l1_loss(Tensor::zeros({2, 4})); }, "l1_loss", "{2, 4}");
  expect_error([&] { p.smooth_l1_loss(p, "mean", -1.0); }, "smooth_l1_loss", "beta");
  expect_error([&] { p.kl_div(p, "batch"); }, "kl_div", "batch");
}

TEST(FunctionalErrors, Normalization) {
  Tensor x = Tensor::zeros({2, 6, 5});
  expect_error([&] { x.layer_norm({6}); }, "layer_norm", "{2, 6, 5}");
  expect_error([&] { x.layer_norm({}); }, "layer_norm");
  expect_error([&] { x.layer_norm({5}, Tensor::ones({6})); }, "layer_norm", "weight");
  expect_error([&] { Tensor::zeros({2, 5}, lazygrad::kInt64).layer_norm({5}); }, "layer_norm", "int64");
  expect_error([&] { x.rms_norm({6, 6}); }, "rms_norm", "{6, 6}");
  expect_error([&] { x.group_norm(4); }, "group_norm", "num_groups=4");
  expect_error([&] { x.group_norm(0); }, "group_norm", "num_groups=0");
  expect_error([&] { x.group_norm(3, Tensor::ones({5})); }, "group_norm", "weight");
  expect_error([&] { Tensor::zeros({6}).batch_norm(Tensor::zeros({6}), Tensor::ones({6})); }, "batch_norm",
               "{6}");
  expect_error(
      [&] {
        Tensor::zeros({1, 3}).batch_norm(std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
      },
      "batch_norm", "more than 1 value per channel");
  expect_error([&] { x.batch_norm(std::nullopt, std::nullopt); }, "batch_norm", "running_mean");
  expect_error([&] { x.batch_norm(Tensor::zeros({5}), Tensor::ones({6})); }, "batch_norm", "running_mean");
}

TEST(FunctionalErrors, AttentionAndDropout) {
  Tensor q = Tensor::zeros({2, 3, 4}), k = Tensor::zeros({2, 5, 4}), v = Tensor::zeros({2, 5, 6});
  const char* op = "scaled_dot_product_attention";
  expect_error(
      [&] {
        lazygrad::scaled_dot_product_attention(q, Tensor::zeros({2, 5, 3}), v);
      },
      op, "{2, 5, 3}");
  expect_error(
      [&] {
        lazygrad::scaled_dot_product_attention(q, k, Tensor::zeros({2, 4, 6}));
      },
      op, "{2, 4, 6}");
  expect_error(
      [&] {
        lazygrad::scaled_dot_product_attention(q, k, v, Tensor::ones({3, 5}, lazygrad::kBool), 0, true);
      },
      op, "is_causal");
  expect_error([&] { lazygrad::scaled_dot_product_attention(q, k, v, Tensor::zeros({3, 4})); }, op, "{3, 4}");
  expect_error([&] { lazygrad::scaled_dot_product_attention(q, k.to(lazygrad::kFloat64), v); }, op,
               "float64");
  expect_error([&] { lazygrad::scaled_dot_product_attention(Tensor::zeros({4}), k, v); }, op, "{4}");
  expect_error([&] { q.dropout(1.5); }, "dropout", "1.5");
  expect_error([&] { q.dropout(-0.1); }, "dropout");
  expect_error([&] { Tensor::zeros({3}, lazygrad::kInt64).dropout(0.5); }, "dropout", "int64");
}

}  // namespace
