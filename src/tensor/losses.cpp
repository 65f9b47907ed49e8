// Losses of torch.nn.functional, composed from Tensor ops (so autograd differentiates them through
// the primitives). A class index picks its log-probability through a one-hot comparison with an
// arange along the class dimension: the gather fuses into the loss kernel and needs no index op.
#include <algorithm>
#include <cmath>
#include <string>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

std::string dtype_str(DType dt) { return std::string(dtype_name(dt)); }

void require_float(const Tensor& t, const char* op, const char* what) {
  require(is_float(t.dtype()), std::string(op) + ": expected a floating-point " + what + ", got " +
                                   dtype_str(t.dtype()) + " of shape " + shape_str(t.shape()));
}

// An optional tensor argument; an undefined Tensor counts as absent too.
bool given(const std::optional<Tensor>& t) { return t && t->defined(); }

void check_reduction(const std::string& reduction, const char* op, bool batchmean_ok = false) {
  bool ok = reduction == "mean" || reduction == "sum" || reduction == "none" ||
            (batchmean_ok && reduction == "batchmean");
  require(ok,
          std::string(op) + ": '" + reduction +
              "' is not a valid value for reduction (expected 'none', 'mean'" +
              (batchmean_ok ? ", 'batchmean'" : "") + " or 'sum')",
          ErrorKind::Value);
}

// log(v) clamped below at -100, as in PyTorch's binary_cross_entropy, so that a probability of
// exactly 0 or 1 gives a finite loss. Where v == 0 the value is the constant -100 and the log reads
// 1 instead, so that the gradient there is 0 rather than 0 * (1 / 0) = NaN.
Tensor clamped_log(const Tensor& v) {
  Tensor nonzero = v.ne(0);
  return v.where(nonzero, 1).log().maximum(Tensor::full_like(v, -100.0)).where(nonzero, -100.0);
}

Tensor reduce_loss(const Tensor& loss, const std::string& reduction) {
  if (reduction == "none") return loss;
  return reduction == "sum" ? loss.sum() : loss.mean();
}

void check_broadcast(const Tensor& a, const Tensor& b, const char* op, const char* a_name,
                     const char* b_name) {
  const Shape &x = a.shape(), &y = b.shape();
  size_t n = std::max(x.size(), y.size());
  for (size_t i = 0; i < n; i++) {
    int64_t p = i < n - x.size() ? 1 : x[i - (n - x.size())];
    int64_t q = i < n - y.size() ? 1 : y[i - (n - y.size())];
    require(p == q || p == 1 || q == 1, std::string(op) + ": " + a_name + " of shape " + shape_str(x) +
                                            " and " + b_name + " of shape " + shape_str(y) +
                                            " cannot be broadcast");
  }
}

// PyTorch expands a loss's weight to the target's shape (so it may not be larger).
void check_expands_to(const Tensor& t, const Shape& shape, const char* op, const char* name) {
  bool ok = t.dim() <= static_cast<int64_t>(shape.size());
  for (size_t i = 0; ok && i < t.shape().size(); i++) {
    int64_t have = t.shape()[t.shape().size() - 1 - i], want = shape[shape.size() - 1 - i];
    ok = have == want || have == 1;
  }
  require(ok, std::string(op) + ": " + name + " of shape " + shape_str(t.shape()) +
                  " cannot be expanded to the target's shape " + shape_str(shape));
}

void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  require(input.shape() == target.shape(),
          std::string(op) + ": target of shape " + shape_str(target.shape()) +
              " must have the shape of the input, " + shape_str(input.shape()),
          ErrorKind::Value);
}

// A per-class vector [C] as a tensor that broadcasts along the class dimension of an n-d input.
Tensor along_class_dim(const Tensor& per_class, int64_t ndim, int64_t class_dim) {
  Shape s(static_cast<size_t>(ndim), 1);
  s[static_cast<size_t>(class_dim)] = per_class.numel();
  return per_class.reshape(s);
}

void check_class_weight(const std::optional<Tensor>& weight, int64_t classes, const char* op) {
  if (!given(weight)) return;
  require(weight->dim() == 1 && weight->numel() == classes,
          std::string(op) + ": weight should be a 1-D tensor with one element for each of the " +
              std::to_string(classes) + " classes, got shape " + shape_str(weight->shape()));
}

// nll_loss with label smoothing, on log-probabilities (PyTorch's cross_entropy on class indices is
// nll_loss of log_softmax plus a smoothing term that spreads label_smoothing over every class).
Tensor nll_from_log_probs(const Tensor& logp, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t ignore_index, const std::string& reduction, double label_smoothing,
                          const char* op) {
  int64_t class_dim = logp.dim() == 1 ? 0 : 1;
  int64_t classes = logp.shape()[static_cast<size_t>(class_dim)];
  require(!is_float(target.dtype()) && target.dtype() != kBool,
          std::string(op) + ": expected class indices of an integer dtype, got " + dtype_str(target.dtype()) +
              " target of shape " + shape_str(target.shape()) + " for input of shape " +
              shape_str(logp.shape()));
  Shape expected = logp.shape();
  expected.erase(expected.begin() + class_dim);
  require(target.shape() == expected,
          std::string(op) + ": expected target of shape " + shape_str(expected) + " for input of shape " +
              shape_str(logp.shape()) + ", got " + shape_str(target.shape()),
          // PyTorch: a batch size that differs is a ValueError, other shape mismatches a RuntimeError
          logp.dim() > 1 && (target.dim() == 0 || target.shape()[0] != expected[0]) ? ErrorKind::Value
                                                                                    : ErrorKind::Runtime);
  check_class_weight(weight, classes, op);

  // In int64, so that ignore_index compares as written whatever the target's integer dtype; a
  // target that is neither a class nor ignore_index is an Error at realize ("Target 3 is out of
  // bounds" in PyTorch).
  IndexOp checked_for = std::string(op) == "nll_loss" ? IndexOp::NllLoss : IndexOp::CrossEntropy;
  Tensor index = checked_index(target, {0, classes, class_dim, checked_for, ignore_index});
  Tensor valid = index.ne(ignore_index);
  Tensor classes_along = along_class_dim(Tensor::arange(classes), logp.dim(), class_dim);
  // True at [n, target[n], ...]; a row whose target is ignored has no true entry.
  Tensor one_hot = index.unsqueeze(class_dim).eq(classes_along).logical_and(valid.unsqueeze(class_dim));
  Tensor picked = logp.where(one_hot, 0).sum(class_dim);  // where, not a product: 0 * -inf would be NaN
  Tensor class_weight =
      given(weight) ? along_class_dim(weight->to(logp.dtype()), logp.dim(), class_dim) : Tensor();
  // w[target] where the target counts, 0 where it is ignored: the loss's factor and "mean"'s divisor.
  Tensor target_weight = given(weight) ? class_weight.expand(logp.shape()).where(one_hot, 0).sum(class_dim)
                                       : valid.to(logp.dtype());
  Tensor loss = -(picked * target_weight);
  if (label_smoothing > 0) {
    Tensor all = given(weight) ? (logp * class_weight).sum(class_dim) : logp.sum(class_dim);
    Tensor smooth = (-all).where(valid, 0);
    loss = loss * (1 - label_smoothing) + smooth * (label_smoothing / static_cast<double>(classes));
  }
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  // "mean" is a weighted mean. With every target ignored it is NaN and its gradient 0, as in
  // PyTorch: the NaN is a constant, so no 1 / 0 reaches the gradient.
  Tensor total = target_weight.sum();
  Tensor none_counted = total.eq(0);
  return (loss.sum() / total.where(none_counted.logical_not(), 1))
      .where(none_counted.logical_not(), std::nan(""));
}

}  // namespace

Tensor Tensor::nll_loss(const Tensor& target, const std::optional<Tensor>& weight, int64_t ignore_index,
                        const std::string& reduction) const {
  check_reduction(reduction, "nll_loss");
  require_float(*this, "nll_loss", "input");
  require(dim() >= 1,
          "nll_loss: expected an input of shape [C] or [N, C, d1, ...], got " + shape_str(shape()));
  return nll_from_log_probs(*this, target, weight, ignore_index, reduction, 0.0, "nll_loss");
}

Tensor Tensor::cross_entropy(const Tensor& target, const std::optional<Tensor>& weight, int64_t ignore_index,
                             const std::string& reduction, double label_smoothing) const {
  check_reduction(reduction, "cross_entropy");
  require_float(*this, "cross_entropy", "input");
  require(dim() >= 1,
          "cross_entropy: expected an input of shape [C] or [N, C, d1, ...], got " + shape_str(shape()));
  require(
      label_smoothing >= 0 && label_smoothing <= 1,
      "cross_entropy: label_smoothing must be between 0.0 and 1.0, got " + std::to_string(label_smoothing));
  int64_t class_dim = dim() == 1 ? 0 : 1;
  Tensor logp = log_softmax(class_dim);
  // PyTorch tells the two kinds of target apart by shape alone.
  if (target.shape() != shape())
    return nll_from_log_probs(logp, target, weight, ignore_index, reduction, label_smoothing,
                              "cross_entropy");

  require(is_float(target.dtype()),
          "cross_entropy: expected a floating-point target with class probabilities, got " +
              dtype_str(target.dtype()) + " of shape " + shape_str(target.shape()));
  require(ignore_index < 0, "cross_entropy: ignore_index (" + std::to_string(ignore_index) +
                                ") is not supported for class-probability targets");
  int64_t classes = shape()[static_cast<size_t>(class_dim)];
  check_class_weight(weight, classes, "cross_entropy");
  Tensor p = target;
  if (label_smoothing > 0) p = p * (1 - label_smoothing) + label_smoothing / static_cast<double>(classes);
  Tensor terms = logp * p;
  if (given(weight)) terms = terms * along_class_dim(*weight, dim(), class_dim);
  if (reduction == "none") return -terms.sum(class_dim);
  if (reduction == "sum") return -terms.sum();
  // "mean" averages over the positions (numel / C), not over the classes; an empty input gives NaN.
  if (numel() == 0) return -terms.sum() * std::nan("");
  return -terms.sum() / static_cast<double>(numel() / classes);
}

Tensor Tensor::binary_cross_entropy(const Tensor& target, const std::optional<Tensor>& weight,
                                    const std::string& reduction) const {
  const char* op = "binary_cross_entropy";
  check_reduction(reduction, op);
  require_float(*this, op, "input");
  check_same_shape(*this, target, op);
  if (given(weight)) check_expands_to(*weight, target.shape(), op, "weight");
  Tensor loss = -(target * clamped_log(*this) + (1 - target) * clamped_log(1 - *this));
  if (given(weight)) loss = loss * *weight;
  return reduce_loss(loss, reduction);
}

Tensor Tensor::binary_cross_entropy_with_logits(const Tensor& target, const std::optional<Tensor>& weight,
                                                const std::string& reduction,
                                                const std::optional<Tensor>& pos_weight) const {
  const char* op = "binary_cross_entropy_with_logits";
  check_reduction(reduction, op);
  require_float(*this, op, "input");
  check_same_shape(*this, target, op);
  if (given(weight)) check_expands_to(*weight, target.shape(), op, "weight");
  if (given(pos_weight)) check_expands_to(*pos_weight, target.shape(), op, "pos_weight");
  // softplus(-x) = -log(sigmoid(x)) in PyTorch's stable form: m + log(exp(-m) + exp(-x - m)) with
  // m = max(-x, 0), so no exp overflows.
  Tensor m = neg().relu();
  Tensor softplus_neg = m + ((-m).exp() + (-*this - m).exp()).log();
  Tensor loss = given(pos_weight) ? (1 - target) * *this + ((*pos_weight - 1) * target + 1) * softplus_neg
                                  : (1 - target) * *this + softplus_neg;
  if (given(weight)) loss = loss * *weight;
  return reduce_loss(loss, reduction);
}

Tensor Tensor::mse_loss(const Tensor& target, const std::string& reduction) const {
  check_reduction(reduction, "mse_loss");
  require_float(*this, "mse_loss", "input");
  check_broadcast(*this, target, "mse_loss", "input", "target");
  Tensor d = *this - target;
  return reduce_loss(d * d, reduction);
}

Tensor Tensor::l1_loss(const Tensor& target, const std::string& reduction) const {
  check_reduction(reduction, "l1_loss");
  require_float(*this, "l1_loss", "input");
  check_broadcast(*this, target, "l1_loss", "input", "target");
  return reduce_loss((*this - target).abs(), reduction);
}

Tensor Tensor::smooth_l1_loss(const Tensor& target, const std::string& reduction, double beta) const {
  check_reduction(reduction, "smooth_l1_loss");
  require_float(*this, "smooth_l1_loss", "input");
  check_broadcast(*this, target, "smooth_l1_loss", "input", "target");
  require(beta >= 0, "smooth_l1_loss: beta must not be negative, got " + std::to_string(beta));
  Tensor d = (*this - target).abs();
  if (beta == 0) return reduce_loss(d, reduction);  // PyTorch falls back to l1_loss
  return reduce_loss((d * d * (0.5 / beta)).where(d.lt(beta), d - 0.5 * beta), reduction);
}

Tensor Tensor::kl_div(const Tensor& target, const std::string& reduction, bool log_target) const {
  check_reduction(reduction, "kl_div", true);
  require_float(*this, "kl_div", "input");
  check_broadcast(*this, target, "kl_div", "input", "target");
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - *this);
  } else {
    // PyTorch's xlogy(t, t) - t * x, with xlogy(0, 0) = 0. Where t == 0 the gradient with respect
    // to the target is NaN (0 * log 0 in the branch not taken), as PyTorch's xlogy gives (0 / 0).
    Tensor xlogx = (target * target.log()).where(target.ne(0), 0);
    loss = xlogx - target * *this;
  }
  if (reduction == "batchmean") return dim() == 0 ? loss.sum() : loss.sum() / static_cast<double>(shape()[0]);
  return reduce_loss(loss, reduction);
}

}  // namespace lazygrad
