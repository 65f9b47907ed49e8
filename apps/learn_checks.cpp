// The checkers of `lazygrad learn check` (apps/learn.cpp loads the learner's file and calls one).
// Each runs the learner's function on inputs of its own, compares with lazygrad's own answer (its
// autograd, scaled_dot_product_attention, optim::SGD, the kernels the scheduler makes), and when
// they differ, looks for the common mistakes by comparing with what each mistake would give, so
// that the message can say which one it is, why it is wrong and how to fix it.
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "learn.h"

namespace lazygrad::cli {

namespace {

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// The first few values, "[0.25, -1.5, ...]".
template <class T>
std::string values_str(const std::vector<T>& v, size_t max = 5) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < max; i++) s += (i ? ", " : "") + num(v[i]);
  return s + (v.size() > max ? ", ...]" : "]");
}

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::isfinite(got) && std::abs(got - want) <= atol + rtol * std::abs(want);
}

// The index of the first element of `got` not close to `want`; nullopt when all are.
template <class A, class B>
std::optional<size_t> first_mismatch(const std::vector<A>& got, const std::vector<B>& want,
                                     double rtol = 1e-4, double atol = 1e-5) {
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); i++)
    if (!close(got[i], want[i], rtol, atol)) return i;
  return std::nullopt;
}

template <class A, class B>
bool all_close(const std::vector<A>& got, const std::vector<B>& want, double rtol = 1e-3,
               double atol = 1e-5) {
  return !first_mismatch(got, want, rtol, atol);
}

// Runs the learner's code (and the realize that reads its result); an exception becomes the verdict.
std::optional<Verdict> run_learner(std::string_view function, const std::function<void()>& body) {
  try {
    body();
    return std::nullopt;
  } catch (const std::exception& e) {
    const std::string message = e.what();
    std::string fix =
        "Read the error: which op, which shapes? Print the shape of each intermediate tensor (t.size(0), "
        "t.size(1), ...) to see where it stops being what you meant.";
    // The errors the exercises' usual mistakes raise, and what they mean here.
    if (message.find("NoGrad") != std::string::npos)
      fix =
          "Update the parameters under a lazygrad::NoGrad (the starter's first line, `lazygrad::NoGrad "
          "no_grad;`): an optimizer's step is not part of the model's gradient graph.";
    else if (message.find("matmul") != std::string::npos)
      fix +=
          " matmul multiplies the last two axes, [..., T, D] @ [..., D, T]: to pair every query with "
          "every key, transpose k's last two axes, k.transpose(-2, -1).";
    return wrong(std::string(function) + " stopped with an error", "it threw: " + message,
                 "lazygrad checks what each op is given (shapes that do not broadcast, an axis out of "
                 "range, an in-place update of a parameter while gradients are recorded) and throws an "
                 "Error naming the op and the shapes.",
                 fix);
  }
}

Verdict undefined_result(std::string_view function) {
  return wrong(std::string(function) + " returned an undefined Tensor",
               "it returned Tensor() (a handle to nothing), not a result",
               "A default-constructed Tensor holds no data; every op on it throws.",
               "Return the tensor your computation produced.");
}

Tensor tensor(const std::vector<float>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

std::vector<float> random_values(std::mt19937& rng, size_t n, double low, double high) {
  std::uniform_real_distribution<float> d(static_cast<float>(low), static_cast<float>(high));
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

size_t numel(const Shape& shape) {
  size_t n = 1;
  for (int64_t s : shape) n *= static_cast<size_t>(s);
  return n;
}

}  // namespace

// ---- 1: sigmoid-backward ------------------------------------------------------------------------

Verdict check_sigmoid_backward(learn::SigmoidBackwardFn fn) {
  struct Case {
    Shape shape;
    std::vector<float> x, g;
  };
  std::mt19937 rng(1);
  std::vector<Case> cases;
  cases.push_back({{3, 4}, random_values(rng, 12, -4, 4), random_values(rng, 12, -2, 2)});
  cases.push_back({{2, 3, 5}, random_values(rng, 30, -20, 20), random_values(rng, 30, -2, 2)});
  // Saturated units: exp(-x) overflows float32 below x = -88.7.
  cases.push_back({{10},
                   {-100, -30, -5, -1, 0, 0.5f, 1, 5, 30, 100},
                   {0.5f, -1.5f, 2, 1, -0.25f, 3, 0.75f, -2, 1.25f, 4}});
  cases.push_back({{1}, {0}, {1}});
  const std::string_view fname = "sigmoid_backward";

  for (const Case& c : cases) {
    Tensor leaf = tensor(c.x, c.shape);
    leaf.requires_grad(true);
    leaf.sigmoid().backward(tensor(c.g, c.shape));
    const std::vector<float> want = leaf.grad().to_vector<float>();

    Tensor out;
    std::vector<float> got;
    if (auto threw = run_learner(fname, [&] {
          out = fn(tensor(c.x, c.shape), tensor(c.g, c.shape));
          if (out.defined() && out.shape() == c.shape) got = out.to_vector<float>();
        }))
      return *threw;
    if (!out.defined()) return undefined_result(fname);
    if (out.shape() != c.shape)
      return wrong("sigmoid_backward returned the wrong shape",
                   "for x and grad_output of shape " + shape_str(c.shape) + " it returned shape " +
                       shape_str(out.shape()),
                   "A backward rule returns the gradient of the op's input: one number per element of x, so "
                   "exactly x's shape. An elementwise op's gradient is elementwise too: no sum, no reshape.",
                   "Combine x and grad_output elementwise only (*, -, +, x.sigmoid()); drop any reduction.");
    const std::optional<size_t> bad = first_mismatch(got, want);
    if (!bad) continue;

    // Which mistake: compare with what each would give (in double on the host).
    std::vector<double> slope(got.size()), slope_times_g(got.size()), value_times_g(got.size()),
        negated(got.size());
    for (size_t i = 0; i < got.size(); i++) {
      const double s = 1 / (1 + std::exp(-static_cast<double>(c.x[i])));
      slope[i] = s * (1 - s);
      slope_times_g[i] = slope[i] * c.g[i];
      value_times_g[i] = s * c.g[i];
      negated[i] = -slope_times_g[i];
    }
    const size_t i = *bad;
    const std::string at = "for x = " + num(c.x[i]) + " and grad_output = " + num(c.g[i]) + " it returned " +
                           num(got[i]) + "; autograd (x.sigmoid().backward(grad_output)) gives " +
                           num(want[i]);
    if (!std::isfinite(got[i]))
      return wrong(
          "sigmoid_backward gives " + num(got[i]) + " where |x| is large", at,
          "exp(-x) overflows float32 (largest value about 3.4e38 = exp(88.7)) when x is below about -88: "
          "inf / inf is NaN, and inf * 0 too. Saturated units (|x| large) are common in training, and one "
          "NaN in a gradient spreads to every weight it touches.",
          "Write the derivative with sigmoid itself: with s = x.sigmoid(), which stays in [0, 1], the "
          "slope is a product of s and 1 - s, which cannot overflow.");
    if (all_close(got, c.g))
      return wrong("sigmoid_backward returns grad_output unchanged", at,
                   "Returning grad_output as it is, is the backward rule of the identity function, whose "
                   "slope is 1 everywhere. Sigmoid's slope is at most 1/4 (at x = 0) and goes to 0 for "
                   "large |x|: the chain rule multiplies grad_output by that slope.",
                   "Multiply grad_output by d sigmoid(x) / dx. Differentiate 1 / (1 + exp(-x)) and write the "
                   "result with s = x.sigmoid() itself (docs/learn/04-autograd.md).");
    if (all_close(got, slope))
      return wrong(
          "sigmoid_backward returns sigmoid's slope without multiplying by grad_output", at,
          "The chain rule: dL/dx = dL/dy * dy/dx. grad_output is dL/dy, what the ops after sigmoid sent "
          "back; the slope dy/dx alone is the gradient only when grad_output is all ones (as for "
          "y.sum().backward()).",
          "Multiply the slope by grad_output.");
    if (all_close(got, value_times_g))
      return wrong("sigmoid_backward multiplies grad_output by sigmoid(x), not by its slope", at,
                   "The backward rule needs the derivative of sigmoid at x. sigmoid(x) is the function's "
                   "value (exp is the function whose derivative is itself; sigmoid is not).",
                   "Differentiate 1 / (1 + exp(-x)) and write the result with s = x.sigmoid(): it is a "
                   "product of s and 1 - s.");
    if (all_close(got, negated))
      return wrong("sigmoid_backward has the wrong sign", at,
                   "Sigmoid increases everywhere, so its slope is positive: the gradient has the sign of "
                   "grad_output.",
                   "Check the signs in your derivative: d/dx (1 + exp(-x))^-1 = exp(-x) / (1 + exp(-x))^2.");
    return wrong("sigmoid_backward gives wrong values", at,
                 "The gradient of sigmoid at x, times grad_output. At x = 0: sigmoid(0) = 1/2 and its slope "
                 "is 1/4, so x = 0, grad_output = 1 must give 0.25.",
                 "Work out d/dx 1 / (1 + exp(-x)) on paper, write it with s = x.sigmoid(), and print what "
                 "your function returns for a few x (0, 2, -2) against your hand computation.");
  }
  return {true,
          "sigmoid_backward matches lazygrad's autograd on 4 inputs (shapes [3, 4], [2, 3, 5], [10], [1]; "
          "x from -100 to 100)",
          "",
          {}};
}

// ---- 2: attention -------------------------------------------------------------------------------

namespace {

// softmax(q k^T * scale, set to `masked` where j > i) @ v, with the softmax over `axis` and the mask
// applied before it (or, with mask_after, the weights of j > i zeroed after it): the mistakes to
// recognize.
Tensor attention_variant(const Tensor& q, const Tensor& k, const Tensor& v, double scale, int64_t axis,
                         bool mask_after, double masked) {
  const int64_t T = q.size(-2);
  Tensor future = Tensor::ones({T, T}, kBool).triu(1);
  Tensor scores = q.matmul(k.transpose(-2, -1)) * scale;
  if (mask_after) return (scores.softmax(-1) * future.logical_not().to(kFloat32)).matmul(v);
  return scores.masked_fill(future, masked).softmax(axis).matmul(v);
}

}  // namespace

Verdict check_causal_attention(learn::CausalAttentionFn fn) {
  const std::string_view fname = "causal_attention";
  const std::vector<Shape> shapes = {{1, 1, 4, 8}, {2, 3, 5, 4}, {2, 2, 7, 16}};
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  auto randn = [&](const Shape& shape) {
    std::vector<float> v(numel(shape));
    for (float& x : v) x = normal(rng);
    return v;
  };
  for (const Shape& shape : shapes) {
    const int64_t B = shape[0], H = shape[1], T = shape[2], D = shape[3];
    const std::vector<float> qs = randn(shape), ks = randn(shape), vs = randn(shape);
    const Tensor q = tensor(qs, shape), k = tensor(ks, shape), v = tensor(vs, shape);
    const std::vector<float> want =
        scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true).to_vector<float>();

    Tensor out;
    std::vector<float> got;
    if (auto threw = run_learner(fname, [&] {
          out = fn(q, k, v);
          if (out.defined() && out.shape() == shape) got = out.to_vector<float>();
        }))
      return *threw;
    if (!out.defined()) return undefined_result(fname);
    const std::string sizes = "q, k, v of shape " + shape_str(shape) + " (B = " + std::to_string(B) +
                              ", H = " + std::to_string(H) + ", T = " + std::to_string(T) +
                              ", D = " + std::to_string(D) + ")";
    if (out.shape() == Shape{B, H, T, T} && T != D)
      return wrong(
          "causal_attention returns the attention weights, not the output",
          "for " + sizes + " it returned shape " + shape_str(out.shape()) + ", the weights' [B, H, T, T]",
          "The weights (softmax of the scores) say how much each position reads from each other "
          "one; the output is what it reads: the weighted sum of the values.",
          "Multiply the weights by v: weights.matmul(v) is [B, H, T, D].");
    if (out.shape() != shape)
      return wrong(
          "causal_attention returned the wrong shape",
          "for " + sizes + " it returned shape " + shape_str(out.shape()) + "; expected " + shape_str(shape) +
              ", q's shape",
          "The scores pair every query with every key: q [B, H, T, D] times k transposed in its "
          "last two axes, [B, H, D, T], gives [B, H, T, T]; times v [B, H, T, D] gives [B, H, T, D]. "
          "matmul multiplies the last two axes and broadcasts the others.",
          "Transpose k's last two axes: k.transpose(-2, -1) (k.t() is for 2-D tensors only).");
    const std::optional<size_t> bad = first_mismatch(got, want);
    if (!bad) continue;

    if (all_close(got, vs))
      return wrong("causal_attention returns v unchanged",
                   "for " + sizes + " it returned v itself: each position copies its own value",
                   "Attention lets each position read the values of the positions before it, weighted by "
                   "how well its query matches their keys. Returning v reads nothing.",
                   "Write the TODO: scores from q and k, the scale, the causal mask, the softmax, then the "
                   "weights times v (docs/learn/09-attention.md).");
    for (float x : got)
      if (!std::isfinite(x))
        return wrong("causal_attention gives NaN or infinity", "for " + sizes + " its output holds " + num(x),
                     "Two mistakes give NaN here. A mask that also hides the diagonal (j >= i instead of "
                     "j > i) leaves position 0 no key at all: softmax of a row of -inf is 0/0. And a mask "
                     "multiplied into the scores turns -inf * 0 into NaN.",
                     "Mask only j > i (Tensor::ones({T, T}, kBool).triu(1) is true exactly there), and "
                     "put -inf into the scores with masked_fill (or where), not by multiplying.");
    const double sqrt_d = std::sqrt(static_cast<double>(D));
    constexpr double kInf = std::numeric_limits<double>::infinity();
    struct Mistake {
      double scale;
      int64_t axis;
      bool mask_after;
      double masked;  // the value the scores of j > i get
      const char* headline;
      const char* why;
      const char* fix;
    };
    const char* kScaleWhy =
        "q . k is a sum of D products: for entries of spread 1 its spread grows like sqrt(D). Large scores "
        "push the softmax toward one-hot weights, whose gradients vanish; dividing by sqrt(D) keeps the "
        "scores' spread near 1 whatever the head size.";
    const Mistake mistakes[] = {
        {1.0, -1, false, -kInf, "forgot the scale: the scores are not divided by sqrt(D)", kScaleWhy,
         "Divide the scores by std::sqrt(double(q.size(-1))) before the mask and the softmax."},
        {1.0 / static_cast<double>(D), -1, false, -kInf, "the scores are divided by D, not by sqrt(D)",
         kScaleWhy, "Divide by std::sqrt(double(q.size(-1)))."},
        {sqrt_d, -1, false, -kInf, "the scores are multiplied by sqrt(D) instead of divided", kScaleWhy,
         "Divide by std::sqrt(double(q.size(-1))) (or multiply by its reciprocal)."},
        {1.0 / sqrt_d, -2, false, -kInf, "the softmax runs over the wrong axis",
         "Each query's weights over the keys must sum to 1: the scores are [B, H, T (queries), T (keys)], "
         "so the softmax is over the last axis. softmax(-2) makes each key's weights over the queries sum "
         "to 1 instead.",
         "Use scores.softmax(-1)."},
        {1.0 / sqrt_d, -1, false, 0.0, "the mask sets the future's scores to 0, not to -inf",
         "A masked score must give the position no weight at all: exp(-inf) = 0. A score of 0 still has "
         "weight exp(0) = 1 in the softmax, as much as a key that matches moderately well, so each position "
         "still reads the future's values.",
         "masked_fill the scores of j > i with -INFINITY (from <cmath>), not with 0; multiplying the scores "
         "by a mask of zeros and ones sets them to 0 too."},
        {1.0 / sqrt_d, -1, true, -kInf, "the mask is applied after the softmax",
         "Zeroing the weights of j > i after the softmax leaves each row summing to less than 1: the "
         "future positions still took their share of the softmax. With -inf scores before it, the softmax "
         "spreads all of the weight over j <= i.",
         "Mask the scores (masked_fill with -INFINITY) before the softmax, and do not touch the weights "
         "after it."},
    };
    const std::string at = "for " + sizes + ", at element " + std::to_string(*bad) + " it returned " +
                           num(got[*bad]) + "; scaled_dot_product_attention(q, k, v, ..., is_causal) gives " +
                           num(want[*bad]);
    for (const Mistake& m : mistakes)
      if (all_close(got,
                    attention_variant(q, k, v, m.scale, m.axis, m.mask_after, m.masked).to_vector<float>()))
        return wrong(m.headline, at, m.why, m.fix);
    // A position sees the future when its output changes with a later position's key and value.
    if (T >= 2) {
      std::vector<float> k2 = ks, v2 = vs;
      for (size_t i = 0; i < k2.size(); i++)
        if (static_cast<int64_t>(i / static_cast<size_t>(D)) % T == T - 1) {
          k2[i] += 3.0f;
          v2[i] -= 5.0f;
        }
      std::vector<float> got2;
      if (auto threw = run_learner(
              fname, [&] { got2 = fn(q, tensor(k2, shape), tensor(v2, shape)).to_vector<float>(); }))
        return *threw;
      for (size_t i = 0; i < got.size() && i < got2.size(); i++) {
        const int64_t position = static_cast<int64_t>(i / static_cast<size_t>(D)) % T;
        if (position < T - 1 && !close(got2[i], got[i], 1e-5, 1e-6))
          return wrong(
              "forgot the mask (a position sees the future)",
              "for " + sizes + ", changing the key and value of the last position (" + std::to_string(T - 1) +
                  ") changed the output at position " + std::to_string(position),
              "In a causal model position i predicts what comes after it, so it may read positions j <= i "
              "only: in training it could otherwise copy the answer from the future, and when generating "
              "there is no future to read. The mask sets the scores of j > i to -inf before the softmax, so "
              "their weights are exp(-inf) = 0. (A score of 0 is not enough: exp(0) = 1.)",
              "Before the softmax: scores = scores.masked_fill(future, -INFINITY), with future = "
              "Tensor::ones({T, T}, lazygrad::kBool).triu(1), true where j > i; it broadcasts over B and H.");
      }
    }
    return wrong("causal_attention gives wrong values", at,
                 "out = softmax(q k^T / sqrt(D) with -inf where j > i, over the keys) @ v. Each step has its "
                 "own way to go wrong; the checker recognized none of the common ones.",
                 "Build it step by step on a small input (B = H = 1, T = 3, D = 2) and print each "
                 "intermediate: the scores [T, T], the masked scores (-inf above the diagonal), the weights "
                 "(rows summing to 1), the output.");
  }
  return {true,
          "causal_attention matches scaled_dot_product_attention(q, k, v, ..., is_causal) on 3 shapes "
          "([1, 1, 4, 8], [2, 3, 5, 4], [2, 2, 7, 16]), and no position sees the future",
          "",
          {}};
}

// ---- 3: sgd-momentum ----------------------------------------------------------------------------

namespace {

// What each rule, right or wrong, makes of the parameters over the steps, in double on the host,
// for the loss sum(a p^2 / 2 + b p) (gradient a p + b): [step][parameter][element].
enum class Rule { PyTorch, Plain, StaleVelocity, Ascent, AscentPlain, Dampened, DampenedFromZero, Nesterov };
using Trajectory = std::vector<std::vector<std::vector<double>>>;

Trajectory simulate(Rule rule, const std::vector<std::vector<float>>& p0,
                    const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                    double lr, double m, int steps) {
  Trajectory out;
  std::vector<std::vector<double>> p(p0.size()), v(p0.size()), first_v(p0.size());
  for (size_t i = 0; i < p0.size(); i++) p[i].assign(p0[i].begin(), p0[i].end());
  for (int s = 0; s < steps; s++) {
    for (size_t i = 0; i < p.size(); i++) {
      v[i].resize(p[i].size());
      first_v[i].resize(p[i].size());
      for (size_t j = 0; j < p[i].size(); j++) {
        const double g = a[i][j] * p[i][j] + b[i][j];
        double& vel = v[i][j];
        switch (rule) {
          case Rule::PyTorch:
          case Rule::Ascent:
          case Rule::Nesterov:
            vel = s == 0 ? g : m * vel + g;
            break;
          case Rule::Plain:
          case Rule::AscentPlain:
            vel = g;
            break;
          case Rule::StaleVelocity:  // the first step's velocity stored, never the later ones
            vel = s == 0 ? g : m * first_v[i][j] + g;
            break;
          case Rule::Dampened:
            vel = s == 0 ? g : m * vel + (1 - m) * g;
            break;
          case Rule::DampenedFromZero:
            vel = (s == 0 ? 0 : m * vel) + (1 - m) * g;
            break;
        }
        if (s == 0) first_v[i][j] = vel;
        const double step = rule == Rule::Nesterov ? g + m * vel : vel;
        p[i][j] += (rule == Rule::Ascent || rule == Rule::AscentPlain ? lr : -lr) * step;
      }
    }
    out.push_back(p);
  }
  return out;
}

bool matches(const std::vector<std::vector<std::vector<float>>>& got, const Trajectory& want) {
  if (got.size() != want.size()) return false;
  for (size_t s = 0; s < got.size(); s++)
    for (size_t i = 0; i < got[s].size(); i++)
      if (!all_close(got[s][i], want[s][i], 1e-4, 1e-5)) return false;
  return true;
}

}  // namespace

Verdict check_sgd_momentum(learn::SgdMomentumStepFn fn) {
  const std::string_view fname = "sgd_momentum_step";
  constexpr double lr = 0.1, momentum = 0.9;
  constexpr int steps = 3;
  const std::vector<Shape> shapes = {{2, 3}, {4}};
  std::mt19937 rng(3);
  std::vector<std::vector<float>> p0, a, b;
  for (const Shape& s : shapes) {
    p0.push_back(random_values(rng, numel(s), -2, 2));
    a.push_back(random_values(rng, numel(s), 0.5, 2));
    b.push_back(random_values(rng, numel(s), -1, 1));
  }
  auto make_params = [&] {
    std::vector<Tensor> params;
    for (size_t i = 0; i < shapes.size(); i++) {
      Tensor p = tensor(p0[i], shapes[i]);
      p.requires_grad(true);
      params.push_back(p);
    }
    return params;
  };
  auto backward = [&](std::vector<Tensor>& params) {
    Tensor loss = Tensor::zeros({});
    for (size_t i = 0; i < params.size(); i++) {
      Tensor& p = params[i];
      p.zero_grad();
      loss = loss + (tensor(a[i], shapes[i]) * p * p * 0.5 + tensor(b[i], shapes[i]) * p).sum();
    }
    loss.backward();
  };

  // lazygrad's own optimizer.
  std::vector<std::vector<std::vector<float>>> want(steps), got(steps);
  {
    std::vector<Tensor> params = make_params();
    optim::SGD sgd(params, lr, momentum);
    for (int s = 0; s < steps; s++) {
      backward(params);
      sgd.step();
      for (const Tensor& p : params) want[s].push_back(p.to_vector<float>());
    }
  }

  std::vector<Tensor> params = make_params(), velocity;
  std::vector<size_t> velocity_sizes;  // after each step
  for (int s = 0; s < steps; s++) {
    backward(params);
    std::vector<const TensorImpl*> before;
    for (const Tensor& p : params) before.push_back(p.impl().get());
    if (auto threw = run_learner(fname, [&] { fn(params, velocity, lr, momentum); })) return *threw;
    if (params.size() != shapes.size())
      return wrong("sgd_momentum_step changed the number of parameters",
                   "params held " + std::to_string(shapes.size()) + " tensors before step " +
                       std::to_string(s + 1) + " and " + std::to_string(params.size()) + " after it",
                   "An optimizer updates the model's parameters; it does not add or remove any.",
                   "Update each params[i] in place; leave the vector itself as it is.");
    for (size_t i = 0; i < params.size(); i++)
      if (params[i].impl().get() != before[i])
        return wrong("sgd_momentum_step replaced params[" + std::to_string(i) + "] instead of updating it",
                     "after step " + std::to_string(s + 1) + ", params[" + std::to_string(i) +
                         "] is a new tensor (params[i] = ... rebinds the handle in the vector)",
                     "The model holds its own handles to the same parameter data: a new tensor in this "
                     "vector is seen by nobody else, so the model would never learn. (It is also not a "
                     "leaf that requires grad, so the next backward would give it no gradient.)",
                     "Write into the parameter's own data: params[i].assign(params[i] - lr * v), or "
                     "params[i] -= lr * v, under NoGrad (the starter's first line).");
    if (auto threw = run_learner(fname, [&] {
          for (const Tensor& p : params) got[s].push_back(p.to_vector<float>());
        }))
      return *threw;
    if (s == 0 && got[0] == p0)
      return wrong("sgd_momentum_step did not change the parameters",
                   "after step 1 the parameters still hold their values before it, " + values_str(p0[0]),
                   "A step must move each parameter against its gradient, in place, so that the model "
                   "(which holds the same tensors) sees it.",
                   "For each parameter: v = momentum * v + g (v = g on the first step, when velocity is "
                   "empty; push_back it there), then params[i].assign(params[i] - lr * v).");
    velocity_sizes.push_back(velocity.size());
  }

  // The first step where the learner's parameters differ from optim::SGD's.
  int bad_step = -1;
  size_t bad_param = 0, bad_index = 0;
  for (int s = 0; s < steps && bad_step < 0; s++)
    for (size_t i = 0; i < got[s].size() && bad_step < 0; i++)
      if (auto j = first_mismatch(got[s][i], want[s][i])) bad_step = s, bad_param = i, bad_index = *j;
  if (bad_step < 0) {
    for (int s = 0; s < steps; s++)
      if (velocity_sizes[s] != params.size())
        return wrong(
            "velocity does not hold one tensor per parameter",
            "the parameters are right, but after step " + std::to_string(s + 1) + " velocity holds " +
                std::to_string(velocity_sizes[s]) + " tensors for " + std::to_string(params.size()) +
                " parameters",
            "The velocity is the optimizer's state, and the caller keeps it: the checker holds the "
            "vector between steps and passes it back each time, as an optimizer object would hold "
            "it (a static variable inside the function would be shared by every model).",
            "On the first step (velocity empty) push_back each parameter's v; on later steps read and "
            "replace velocity[i].");
    return {true,
            "sgd_momentum_step matches optim::SGD(params, lr = 0.1, momentum = 0.9) over 3 steps on 2 "
            "parameters, and keeps one velocity per parameter",
            "",
            {}};
  }

  const std::string at = "after step " + std::to_string(bad_step + 1) + ", params[" +
                         std::to_string(bad_param) + "] element " + std::to_string(bad_index) + " is " +
                         num(got[bad_step][bad_param][bad_index]) + "; optim::SGD gives " +
                         num(want[bad_step][bad_param][bad_index]) + " (lr = 0.1, momentum = 0.9)";
  auto is = [&](Rule r) { return matches(got, simulate(r, p0, a, b, lr, momentum, steps)); };
  const char* kVelocityWhy =
      "Momentum is a running sum of past gradients: v = momentum * v + g carries v from one step to the "
      "next, so steps along a steady direction grow (up to 1 / (1 - momentum) = 10 times) while "
      "zig-zags cancel. A velocity made afresh from each gradient is plain SGD.";
  if (is(Rule::Plain))
    return wrong(
        "the velocity is not kept from one step to the next",
        at + ". Step 1 is right (v = g on the first step), but every step moves as plain SGD, p -= lr * g",
        kVelocityWhy,
        "Keep each parameter's v in velocity[i] and start from it on the next step: velocity[i] = "
        "momentum * velocity[i] + g.");
  if (is(Rule::StaleVelocity))
    return wrong(
        "the new velocity is computed but not stored",
        at + ". From step 2 on, each step starts from step 1's velocity: velocity[i] keeps its first value",
        kVelocityWhy,
        "Store the new v back: velocity[i] = momentum * velocity[i] + g (a local Tensor v is a "
        "new handle; velocity[i] keeps the old one unless you assign to it).");
  if (is(Rule::Ascent) || is(Rule::AscentPlain))
    return wrong("the parameters move up the gradient (a sign error)", at + ", the same step the other way",
                 "The gradient points where the loss grows fastest; gradient descent steps against it.",
                 "Subtract: p = p - lr * v.");
  if (is(Rule::Dampened) || is(Rule::DampenedFromZero))
    return wrong(
        "the velocity averages the gradients: v = momentum * v + (1 - momentum) * g (dampening)", at,
        "That is an exponential moving average (Adam's first moment, or SGD with dampening = momentum). "
        "PyTorch's SGD adds the whole gradient, v = momentum * v + g; its dampening argument (default 0) "
        "would scale g by 1 - dampening. The average makes the steps 10 times smaller at momentum 0.9.",
        "v = momentum * v + g (and v = g on the first step).");
  if (is(Rule::Nesterov))
    return wrong(
        "the step is Nesterov's, p -= lr * (g + momentum * v)", at,
        "Nesterov momentum (SGD(..., nesterov = true)) steps by g + momentum * v, a look ahead along "
        "the velocity. Plain momentum, what optim::SGD(params, lr, momentum) does, steps by v itself.",
        "p = p - lr * v.");
  if (bad_step == 0)
    return wrong(
        "the first step is wrong", at,
        "On the first step there is no velocity yet, and PyTorch takes v = g: the first step is plain "
        "SGD, p - lr * g, with the gradient g = params[i].grad().",
        "Print g, v and the new p for the first step and compare with p - 0.1 * g by hand.");
  return wrong("sgd_momentum_step gives wrong values from step " + std::to_string(bad_step + 1), at,
               "PyTorch's rule: v = momentum * v + g (v = g on the first step), then p -= lr * v, with the "
               "gradient of this step and the velocity of the last.",
               "Print velocity[i] after each step and compare with the rule by hand on one element.");
}

// ---- 4: fusion-count ----------------------------------------------------------------------------

Verdict check_fusion_count(learn::KernelCountsFn fn) {
  using learn::KernelCounts;
  learn::KernelCounts predicted;
  if (auto threw = run_learner("predict_kernel_counts", [&] { predicted = fn(); })) return *threw;
  if (predicted.elementwise_chain < 0 && predicted.sum_of_product < 0 && predicted.centered < 0 &&
      predicted.softmax < 0 && predicted.softmax_few_rows < 0 && predicted.linear_relu < 0 &&
      predicted.two_matmuls < 0 && predicted.transpose < 0)
    return wrong("no predictions yet",
                 "every count in predict_kernel_counts() is still -1, the starter's placeholder",
                 "The exercise is to predict, from the scheduler's rules, how many kernels each expression "
                 "needs, and then to see where the rules surprised you.",
                 "Replace each -1 with the number of kernels you expect (docs/learn/05-scheduler.md has the "
                 "rules), then check again: each wrong prediction is explained.");

  Tensor::manual_seed(0);
  auto input = [](const Shape& shape) {
    Tensor t = Tensor::rand(shape);
    t.realize();
    return t;
  };
  const Tensor a = input({256, 256}), b = input({256, 256}), c = input({256, 256}), w = input({256, 256}),
               bias = input({256}), rows = input({8, 256});
  struct Expression {
    const char* code;
    int KernelCounts::*field;
    std::function<Tensor()> build;
    const char* rule;
  };
  const Expression expressions[] = {
      {"((a + b) * c).relu().exp()", &KernelCounts::elementwise_chain,
       [&] { return ((a + b) * c).relu().exp(); },
       "Elementwise ops fuse into whatever consumes them: the whole chain becomes one loop body that reads "
       "a, b and c once per element and writes one buffer. No intermediate result is stored."},
      {"(a * b).sum()", &KernelCounts::sum_of_product, [&] { return (a * b).sum(); },
       "A reduction fed by elementwise work is one kernel: the product is computed inside the sum's loop, "
       "element by element, and never stored."},
      {"a - a.mean()", &KernelCounts::centered, [&] { return a - a.mean(); },
       "A reduction read back through an expand (its one number subtracted from every element) is computed "
       "inside the reading kernel, once per row, only when there are at least 64 rows to share among the "
       "threads. a.mean() reduces everything to one number, one row: it gets a kernel of its own, and the "
       "subtraction reads its result in a second."},
      {"a.softmax(-1)", &KernelCounts::softmax, [&] { return a.softmax(-1); },
       "softmax is a max, an exp, a sum and a divide. Both reductions are broadcast back along their own "
       "rows, and there are 256 rows (at least 64): the reading kernel computes each row's max and sum once, "
       "before its loop over the row. The whole softmax is one kernel."},
      {"rows.softmax(-1)", &KernelCounts::softmax_few_rows, [&] { return rows.softmax(-1); },
       "The same softmax over 8 rows: fewer than 64 rows to share among the threads, so the per-row fusion "
       "does not apply, and a reduction read through an expand gets a kernel of its own (fusing it would "
       "recompute it for every element it is broadcast to): the max, the sum of exp, then the divide."},
      {"(a.matmul(w) + bias).relu()", &KernelCounts::linear_relu, [&] { return (a.matmul(w) + bias).relu(); },
       "A matmul is a reduction: the sum over k of a broadcast product a[i, k] * w[k, j], both read "
       "straight from their buffers through expands. Adding the bias and relu are elementwise on its "
       "result: they fuse into the same kernel, after the sum's loop."},
      {"a.matmul(b).matmul(c)", &KernelCounts::two_matmuls, [&] { return a.matmul(b).matmul(c); },
       "The second product reads the first through an expand: each element of a @ b is used by 256 outputs. "
       "Fused, the whole first reduction would be recomputed for each use, so a reduction read through an "
       "expand gets a kernel of its own: one kernel per matmul."},
      {"a.t()", &KernelCounts::transpose, [&] { return a.t(); },
       "Movement ops (reshape, permute, transpose, expand, shrink, ...) only change the view, how indices "
       "map "
       "to memory. Realizing a view of a buffer copies nothing: no kernel. (a.t().contiguous() would run "
       "one: contiguous forces a fresh buffer.)"},
  };

  Verdict v;
  int right = 0;
  std::string table = "\n  predicted  ran  expression\n";
  for (const Expression& e : expressions) {
    // With DEBUG set, lazygrad's lines on stderr say what the scheduler decided: name the expression
    // they are about.
    if (settings().debug > 0) std::cerr << "== " << e.code << "\n";
    Tensor y = e.build();
    const int64_t before = GlobalCounters::kernel_count;
    y.realize();
    const int ran = static_cast<int>(GlobalCounters::kernel_count - before);
    const int guess = predicted.*e.field;
    char line[160];
    std::snprintf(line, sizeof line, "  %9s  %3d  %s%s\n", guess < 0 ? "-" : std::to_string(guess).c_str(),
                  ran, e.code, guess == ran ? "" : "   <-");
    table += line;
    if (guess == ran) {
      right++;
      continue;
    }
    v.problems.push_back(
        {guess < 0 ? std::string(e.code) + ": no prediction (still -1); lazygrad ran " + std::to_string(ran) +
                         (ran == 1 ? " kernel" : " kernels")
                   : std::string(e.code) + ": you predicted " + std::to_string(guess) + ", lazygrad ran " +
                         std::to_string(ran) + (ran == 1 ? " kernel" : " kernels"),
         e.rule,
         "See the scheduler decide: `DEBUG=3 lazygrad learn check 4` prints, for each expression, the nodes "
         "that get a kernel of their own and why, and the kernels it runs. Then set the count to " +
             std::to_string(ran) + "."});
  }
  v.details = table;
  const int n = static_cast<int>(std::size(expressions));
  v.right = right == n;
  v.headline = v.right ? "all " + std::to_string(n) + " predictions match the kernels lazygrad ran"
                       : std::to_string(n - right) + " of " + std::to_string(n) +
                             " predictions differ from the "
                             "kernels lazygrad ran";
  return v;
}

}  // namespace lazygrad::cli
