// Optimizers (torch.optim.SGD, Adam, AdamW, and LAMB) and gradient clipping (torch.nn.utils).
//
// Every update is recorded lazily with assign under NoGrad, so it fuses with the backward pass
// that computes the gradients. The optimizer's own state (momentum buffers, Adam's moments) is
// kept in tensors with buffers of their own, updated by assign like the parameters. Whatever
// changes from one step to the next (the learning rate, the bias corrections, a cycled momentum) is
// a Variable: a kernel argument, never a constant in a kernel's source, so the steps after the
// second compile nothing.
#include "lazygrad/optim.h"

#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <utility>

#include "lazygrad/error.h"
#include "lazygrad/jit.h"
#include "lazygrad/profile.h"
#include "nn/optim_checks.h"

namespace lazygrad::optim {

// ---------------------------------------------------------------- Optimizer

Optimizer::Optimizer(std::vector<Tensor> params, double lr, std::string name)
    : params_(std::move(params)), lr_(lr), name_(std::move(name)) {
  check(!params_.empty(), name_ + ": got an empty parameter list");
  check(lr >= 0, name_ + ": invalid learning rate: " + num(lr));
  for (size_t i = 0; i < params_.size(); i++) {
    const Tensor& p = params_[i];
    check(p.defined(), name_ + ": parameter " + std::to_string(i) + " is an undefined tensor",
          ErrorKind::Runtime);
    check(p.is_leaf(), name_ + ": can't optimize a non-leaf Tensor (parameter " + std::to_string(i) +
                           ", shape " + shape_str(p.shape()) +
                           ", is computed from tensors that require grad)");
    for (size_t k = 0; k < i; k++)
      check(params_[k].impl() != p.impl(),
            name_ + ": parameters " + std::to_string(k) + " and " + std::to_string(i) +
                " are the same tensor (it would be updated twice)",
            ErrorKind::Runtime);
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

int64_t Optimizer::memory_footprint() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < params_.size(); i++)
    for (const Tensor& s : state_of(i)) bytes += s.memory_footprint();
  return bytes;
}

namespace {
// The defined ones of `state`, for state_of (a state slot stays undefined until used).
std::vector<Tensor> defined(std::initializer_list<Tensor> state) {
  std::vector<Tensor> out;
  for (const Tensor& t : state)
    if (t.defined()) out.push_back(t);
  return out;
}
}  // namespace

std::vector<Tensor> Optimizer::schedule_step() {
  // The Variables a recorded step reads are about to change. Realizing that step now would not be
  // enough: the graphs built since (the next forward and backward pass) contain its updates and
  // would compute them again, with the new values.
  for (const Tensor& t : pending_)
    check(t.is_realized(),
          name_ +
              ": the step recorded by the last schedule_step() was not realized; realize "
              "the tensors it returned before building the next step's graph",
          ErrorKind::Runtime);
  NoGrad no_grad;
  const ProfileScope scope("optimizer");
  std::vector<Tensor> targets;
  std::vector<size_t> stepped;
  for (size_t i = 0; i < params_.size(); i++) {
    Tensor grad = params_[i].grad();
    if (!grad.defined()) continue;
    advance(i);
    update(i, grad, targets);
    stepped.push_back(i);
  }
  steps_ += 1;
  pending_ = targets;
  // A Jit replaying this step does not call it again: the host-side part runs before each replay.
  Jit::on_replay([this, stepped] {
    for (size_t i : stepped) advance(i);
    steps_ += 1;
  });
  return targets;
}

void Optimizer::step(const std::vector<Tensor>& also_realize) {
  std::vector<Tensor> targets = schedule_step();
  // The gradients are realized too: a lazy gradient still alive reads the old parameters, and
  // the scheduler would then write each update to a new buffer instead of in place.
  for (const Tensor& p : params_) {
    Tensor grad = p.grad();
    if (grad.defined()) targets.push_back(grad);
  }
  targets.insert(targets.end(), also_realize.begin(), also_realize.end());
  realize(std::move(targets));
}

Tensor Optimizer::zero_state(size_t i) const {
  const Tensor& p = params_[i];
  // All-zero bytes are 0 in every dtype; a host copy costs no kernel (zeros().contiguous() would).
  std::vector<std::byte> zeros(p.nbytes());
  return Tensor::from_bytes(zeros.data(), zeros.size(), p.shape(), p.dtype(), p.device());
}

Variable Optimizer::scalar_for(size_t i, double value) const {
  return Variable(value, params_[i].dtype() == kFloat64 ? kFloat64 : kFloat32);
}

// ---------------------------------------------------------------- SGD

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double dampening, double weight_decay,
         bool nesterov, bool maximize)
    : Optimizer(std::move(params), lr, "SGD"),
      momentum_(momentum),
      dampening_(dampening),
      weight_decay_(weight_decay),
      nesterov_(nesterov),
      maximize_(maximize),
      state_(this->params().size()) {
  check(momentum >= 0, "SGD: invalid momentum value: " + num(momentum));
  check(weight_decay >= 0, "SGD: invalid weight_decay value: " + num(weight_decay));
  check(!nesterov || (momentum > 0 && dampening == 0),
        "SGD: Nesterov momentum requires a momentum and zero dampening (got momentum " + num(momentum) +
            ", dampening " + num(dampening) + ")");
}

std::vector<Tensor> SGD::state_of(size_t i) const {
  return state_.at(i) ? defined({state_[i]->momentum_buffer}) : std::vector<Tensor>{};
}

void SGD::advance(size_t i) {
  if (!state_[i]) state_[i] = ParamState{Tensor(), scalar_for(i, lr()), scalar_for(i, momentum_)};
  state_[i]->lr.set(lr());
  state_[i]->momentum.set(momentum_);
}

void SGD::update(size_t i, const Tensor& grad, std::vector<Tensor>& targets) {
  ParamState& s = *state_[i];
  Tensor p = params()[i];  // a handle: the assign below writes the model's tensor
  Tensor d = maximize_ ? -grad : grad;
  if (weight_decay_ != 0) d = d + p * weight_decay_;
  // Checked on the host each step, as PyTorch does (OneCycleLR may turn momentum on later).
  if (momentum_ != 0) {
    Tensor momentum = s.momentum.tensor();
    if (!s.momentum_buffer.defined()) {
      s.momentum_buffer = zero_state(i);
      s.momentum_buffer.assign(d);  // PyTorch's first step: the buffer is the gradient itself
    } else {
      s.momentum_buffer.assign(s.momentum_buffer * momentum + d * (1 - dampening_));
    }
    targets.push_back(s.momentum_buffer);
    d = nesterov_ ? d + s.momentum_buffer * momentum : s.momentum_buffer;
  }
  p.assign(p - d * s.lr.tensor());
  targets.push_back(p);
}

// ---------------------------------------------------------------- Adam, AdamW

Adam::Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
           double weight_decay, bool amsgrad, bool maximize)
    : Adam(std::move(params), lr, betas, eps, weight_decay, amsgrad, maximize, WeightDecay::L2, "Adam") {}

Adam::Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
           double weight_decay, bool amsgrad, bool maximize, WeightDecay decay, std::string name)
    : Optimizer(std::move(params), lr, name),
      betas_(betas),
      eps_(eps),
      weight_decay_(weight_decay),
      amsgrad_(amsgrad),
      maximize_(maximize),
      decay_(decay),
      state_(this->params().size()) {
  check(eps >= 0, name + ": invalid epsilon value: " + num(eps));
  check(betas.first >= 0 && betas.first < 1,
        name + ": invalid beta parameter at index 0: " + num(betas.first));
  check(betas.second >= 0 && betas.second < 1,
        name + ": invalid beta parameter at index 1: " + num(betas.second));
  check(weight_decay >= 0, name + ": invalid weight_decay value: " + num(weight_decay));
}

AdamW::AdamW(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, bool amsgrad, bool maximize)
    : Adam(std::move(params), lr, betas, eps, weight_decay, amsgrad, maximize, WeightDecay::Decoupled,
           "AdamW") {}

std::vector<Tensor> Adam::state_of(size_t i) const {
  return state_.at(i) ? defined({state_[i]->exp_avg, state_[i]->exp_avg_sq, state_[i]->max_exp_avg_sq})
                      : std::vector<Tensor>{};
}

void Adam::advance(size_t i) {
  if (!state_[i]) {
    state_[i] = ParamState{zero_state(i),
                           zero_state(i),
                           amsgrad_ ? zero_state(i) : Tensor(),
                           0,
                           scalar_for(i, 0),
                           scalar_for(i, 0),
                           scalar_for(i, 0),
                           scalar_for(i, 0),
                           scalar_for(i, 1)};
  }
  ParamState& s = *state_[i];
  const double beta1 = betas_.first, beta2 = betas_.second;
  // PyTorch's non-capturable path: the bias corrections in float64 on the host, rounded to the
  // parameter's dtype where the kernel reads them.
  s.step += 1;
  const double t = static_cast<double>(s.step);
  s.beta1.set(beta1);
  s.one_minus_beta1.set(1 - beta1);
  s.step_size.set(lr() / (1 - std::pow(beta1, t)));
  s.bias_correction2_sqrt.set(std::sqrt(1 - std::pow(beta2, t)));
  if (weight_decay_ != 0 && decay_ == WeightDecay::Decoupled) s.decay.set(1 - lr() * weight_decay_);
}

void Adam::update(size_t i, const Tensor& grad, std::vector<Tensor>& targets) {
  ParamState& s = *state_[i];
  Tensor p = params()[i];
  const double beta2 = betas_.second;
  Tensor g = maximize_ ? -grad : grad;
  Tensor decayed = p;
  if (weight_decay_ != 0 && decay_ == WeightDecay::L2) g = g + p * weight_decay_;
  if (weight_decay_ != 0 && decay_ == WeightDecay::Decoupled) decayed = p * s.decay.tensor();
  s.exp_avg.assign(s.exp_avg * s.beta1.tensor() + g * s.one_minus_beta1.tensor());
  s.exp_avg_sq.assign(s.exp_avg_sq * beta2 + g * (1 - beta2) * g);  // addcmul's order: (value * g) * g
  targets.push_back(s.exp_avg);
  targets.push_back(s.exp_avg_sq);
  Tensor second_moment = s.exp_avg_sq;
  if (amsgrad_) {
    s.max_exp_avg_sq.assign(s.max_exp_avg_sq.maximum(s.exp_avg_sq));
    targets.push_back(s.max_exp_avg_sq);
    second_moment = s.max_exp_avg_sq;
  }
  Tensor denom = second_moment.sqrt() / s.bias_correction2_sqrt.tensor() + eps_;
  p.assign(decayed - s.exp_avg / denom * s.step_size.tensor());
  targets.push_back(p);
}

// ---------------------------------------------------------------- LAMB

LAMB::LAMB(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
           double weight_decay)
    : Optimizer(std::move(params), lr, "LAMB"),
      betas_(betas),
      eps_(eps),
      weight_decay_(weight_decay),
      state_(this->params().size()) {
  check(eps >= 0, "LAMB: invalid epsilon value: " + num(eps));
  check(betas.first >= 0 && betas.first < 1, "LAMB: invalid beta parameter at index 0: " + num(betas.first));
  check(betas.second >= 0 && betas.second < 1,
        "LAMB: invalid beta parameter at index 1: " + num(betas.second));
  check(weight_decay >= 0, "LAMB: invalid weight_decay value: " + num(weight_decay));
}

std::vector<Tensor> LAMB::state_of(size_t i) const {
  return state_.at(i) ? defined({state_[i]->exp_avg, state_[i]->exp_avg_sq}) : std::vector<Tensor>{};
}

void LAMB::advance(size_t i) {
  if (!state_[i]) {
    state_[i] =
        ParamState{zero_state(i),    zero_state(i),   0, scalar_for(i, 0), scalar_for(i, 0), scalar_for(i, 0),
                   scalar_for(i, 1), scalar_for(i, 1)};
  }
  ParamState& s = *state_[i];
  const double beta1 = betas_.first, beta2 = betas_.second;
  s.step += 1;
  const double t = static_cast<double>(s.step);
  s.lr.set(lr());
  s.beta1.set(beta1);
  s.one_minus_beta1.set(1 - beta1);
  s.bias_correction1.set(1 - std::pow(beta1, t));
  s.bias_correction2.set(1 - std::pow(beta2, t));
}

void LAMB::update(size_t i, const Tensor& grad, std::vector<Tensor>& targets) {
  ParamState& s = *state_[i];
  Tensor p = params()[i];
  const double beta2 = betas_.second;

  s.exp_avg.assign(s.exp_avg * s.beta1.tensor() + grad * s.one_minus_beta1.tensor());
  s.exp_avg_sq.assign(s.exp_avg_sq * beta2 + grad * grad * (1 - beta2));
  targets.push_back(s.exp_avg);
  targets.push_back(s.exp_avg_sq);
  Tensor m_hat = s.exp_avg / s.bias_correction1.tensor();
  Tensor v_hat = s.exp_avg_sq / s.bias_correction2.tensor();
  Tensor update = m_hat / (v_hat.sqrt() + eps_);
  if (weight_decay_ != 0) update = update + p * weight_decay_;
  // The trust ratio: how large the step is next to the weights, per tensor (layer).
  Tensor weight_norm = p.square().sum().sqrt(), update_norm = update.square().sum().sqrt();
  Tensor ratio = where(weight_norm > 0, where(update_norm > 0, weight_norm / update_norm, 1.0), 1.0);
  p.assign(p - s.lr.tensor() * ratio * update);
  targets.push_back(p);
}

// ---------------------------------------------------------------- gradient clipping

namespace {
// The gradients of the parameters that have one, as handles that write into them.
std::vector<Tensor> gradients_of(const std::vector<Tensor>& parameters, const char* fn) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < parameters.size(); i++) {
    check(parameters[i].defined(),
          std::string(fn) + ": parameter " + std::to_string(i) + " is an undefined tensor",
          ErrorKind::Runtime);
    Tensor g = parameters[i].grad();
    if (g.defined()) grads.push_back(g);
  }
  return grads;
}
}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGrad no_grad;
  std::vector<Tensor> grads = gradients_of(parameters, "clip_grad_norm_");
  if (grads.empty()) return Tensor::zeros({});
  std::vector<Tensor> norms;
  DType dtype = grads[0].dtype();
  for (const Tensor& g : grads) {
    norms.push_back(g.norm(norm_type));
    dtype = promote_types(dtype, g.dtype());
  }
  for (Tensor& n : norms) n = n.to(dtype);
  // PyTorch's two forms: the max of the per-tensor norms for inf, else the norm of the norms.
  const bool inf = norm_type == std::numeric_limits<double>::infinity();
  Tensor total = inf && norms.size() == 1 ? norms[0]
                 : inf                    ? Tensor::stack(norms).max()
                                          : Tensor::stack(norms).norm(norm_type);
  if (error_if_nonfinite) {
    const double value = total.item<double>();
    check(std::isfinite(value),
          "clip_grad_norm_: the total norm of order " + num(norm_type) + " of the gradients is " +
              num(value) + ", so it cannot be clipped (error_if_nonfinite=false scales them by it anyway)",
          ErrorKind::Runtime);
  }
  // Multiplying by a coefficient clamped to 1 (rather than testing it) keeps the whole thing lazy.
  Tensor coef = (max_norm / (total + 1e-6)).clamp(std::optional<Scalar>(), std::optional<Scalar>(1.0));
  for (Tensor& g : grads) g.assign(g * coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGrad no_grad;
  for (Tensor& g : gradients_of(parameters, "clip_grad_value_"))
    g.assign(g.clamp(std::optional<Scalar>(-clip_value), std::optional<Scalar>(clip_value)));
}

}  // namespace lazygrad::optim
