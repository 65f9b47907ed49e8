// lazygrad::optim: optimizers, learning-rate schedulers and gradient clipping, as torch.optim and
// torch.nn.utils.clip_grad_* (names, argument order, defaults and formulas of PyTorch 1.13).
//
// An optimizer records its update lazily, with `assign` under NoGrad, so the update fuses with the
// backward pass that made the gradients. Values that change from step to step (the learning rate,
// Adam's bias corrections, a cycled momentum) are Variables, i.e. kernel arguments: a new value
// compiles nothing, and a captured Jit replays with it. docs/optim.md has the details.
//
//   optim::Adam opt(model.parameters(), 1e-3);
//   optim::CosineAnnealingLR sched(opt, 100);
//   for (...) {
//     opt.zero_grad();
//     Tensor loss = model(x).cross_entropy(y);
//     loss.backward();
//     opt.step({loss});  // forward, backward and update in one schedule
//     sched.step();
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lazygrad/tensor.h"
#include "lazygrad/variable.h"

namespace lazygrad::optim {

// The base of every optimizer: one parameter group (PyTorch's param_groups[0]). The parameters are
// handles that share data with the model's tensors, so an update is seen by the model.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Schedulers hold a reference to their optimizer, and the state tensors must not be shared by
  // two optimizers: an optimizer is neither copied nor moved.
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Forgets every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  // Records the update of every parameter that has a gradient and realizes it in one schedule
  // with the gradients (so the backward pass still pending runs there too, and the updates write
  // the parameters in place) and `also_realize` (typically the loss). Parameters without a
  // gradient are skipped, as in PyTorch.
  void step(const std::vector<Tensor>& also_realize = {});
  // Records the update without realizing it and returns the tensors to realize (the updated
  // parameters and optimizer state), for one schedule with other outputs. Drop the gradients
  // before realizing (they hold graphs that read the old parameters) so that the updates write in
  // place and SGD's fuses into the gradient's kernel:
  //   auto targets = opt.schedule_step(); opt.zero_grad(); targets.push_back(loss); realize(targets);
  // Throws if the step recorded by the previous call was not realized: the next step changes the
  // Variables it reads, and the graphs built on its results would compute it again with them.
  std::vector<Tensor> schedule_step();

  const std::vector<Tensor>& params() const { return params_; }
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }  // read by the next step (what a scheduler sets)
  // The learning rate schedulers start from (PyTorch's group['initial_lr']): set by the first
  // scheduler attached, from lr().
  std::optional<double> initial_lr() const { return initial_lr_; }
  void set_initial_lr(double lr) { initial_lr_ = lr; }
  // What OneCycleLR cycles: SGD's momentum, beta1 of the Adam family.
  virtual double momentum() const = 0;
  virtual void set_momentum(double momentum) = 0;
  int64_t steps_recorded() const { return steps_; }  // calls of step()/schedule_step() so far
  // The state tensors kept for parameter i (Adam's exp_avg and exp_avg_sq; SGD's momentum buffer),
  // those that exist yet: none before the first step.
  virtual std::vector<Tensor> state_of(size_t i) const = 0;
  // Their bytes, over every parameter (what nn::Module::memory_footprint counts per module).
  int64_t memory_footprint() const;

 protected:
  // `name` prefixes error messages ("Adam: invalid learning rate: -1").
  Optimizer(std::vector<Tensor> params, double lr, std::string name);
  // Records the update of parameter i, whose gradient is `grad`, with assign (NoGrad is active), and
  // appends the parameter and the state tensors it assigned to `targets`.
  virtual void update(size_t i, const Tensor& grad, std::vector<Tensor>& targets) = 0;
  // Moves parameter i's host-side state to its next step (step count, the Variables the update
  // reads: learning rate, bias corrections). Separate from update() because a Jit replay runs only
  // this part again (the kernels are replayed).
  virtual void advance(size_t i) = 0;
  // A zero tensor shaped and typed like parameter i, backed by a buffer of its own (no kernel).
  Tensor zero_state(size_t i) const;
  // A Variable of the dtype parameter i computes in (float64 for float64 parameters, else float32).
  Variable scalar_for(size_t i, double value) const;

 private:
  std::vector<Tensor> params_;
  double lr_;
  std::optional<double> initial_lr_;
  std::string name_;
  int64_t steps_ = 0;
  std::vector<Tensor> pending_;  // what the last schedule_step() returned
};

// torch.optim.SGD: d = grad (+ weight_decay * p); with momentum, buf = momentum * buf +
// (1 - dampening) * d (buf = d on its first step) and d = buf, or d + momentum * buf with nesterov;
// p -= lr * d. maximize follows the gradient upwards.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0, double dampening = 0,
      double weight_decay = 0, bool nesterov = false, bool maximize = false);
  double momentum() const override { return momentum_; }
  void set_momentum(double momentum) override { momentum_ = momentum; }
  std::vector<Tensor> state_of(size_t i) const override;

 private:
  void update(size_t i, const Tensor& grad, std::vector<Tensor>& targets) override;
  void advance(size_t i) override;
  struct ParamState {
    Tensor momentum_buffer;  // undefined until the first step with momentum
    Variable lr{0}, momentum{0};
  };
  double momentum_, dampening_, weight_decay_;
  bool nesterov_, maximize_;
  std::vector<std::optional<ParamState>> state_;
};

// torch.optim.Adam (weight decay added to the gradient) and, through AdamW, decoupled weight decay.
// m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2, p -= lr / (1 - beta1^t) * m /
// (sqrt(v) / sqrt(1 - beta2^t) + eps); amsgrad divides by the running maximum of v instead.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
       double eps = 1e-8, double weight_decay = 0, bool amsgrad = false, bool maximize = false);
  double momentum() const override { return betas_.first; }
  void set_momentum(double beta1) override { betas_.first = beta1; }
  std::pair<double, double> betas() const { return betas_; }
  std::vector<Tensor> state_of(size_t i) const override;

 protected:
  enum class WeightDecay { L2, Decoupled };  // Adam adds it to the gradient; AdamW shrinks p
  Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
       double weight_decay, bool amsgrad, bool maximize, WeightDecay decay, std::string name);

 private:
  void update(size_t i, const Tensor& grad, std::vector<Tensor>& targets) override;
  void advance(size_t i) override;
  struct ParamState {
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
    int64_t step = 0;  // per parameter, as PyTorch counts it
    // Per-step values computed on the host in float64, as PyTorch does, and read by the kernels.
    Variable beta1{0}, one_minus_beta1{0}, step_size{0}, bias_correction2_sqrt{0}, decay{0};
  };
  std::pair<double, double> betas_;
  double eps_, weight_decay_;
  bool amsgrad_, maximize_;
  WeightDecay decay_;
  std::vector<std::optional<ParamState>> state_;
};

// torch.optim.AdamW: p *= 1 - lr * weight_decay, then Adam's update without weight decay.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
        double eps = 1e-8, double weight_decay = 1e-2, bool amsgrad = false, bool maximize = false);
};

// LAMB (You et al. 2019, as tinygrad writes it; PyTorch has none): Adam's bias-corrected moments
// give u = m_hat / (sqrt(v_hat) + eps) + weight_decay * p, and p -= lr * r * u with the trust ratio
// r = ||p|| / ||u|| over the whole tensor (1 where either norm is 0).
class LAMB : public Optimizer {
 public:
  LAMB(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
       double eps = 1e-6, double weight_decay = 0);
  double momentum() const override { return betas_.first; }
  void set_momentum(double beta1) override { betas_.first = beta1; }
  std::pair<double, double> betas() const { return betas_; }
  std::vector<Tensor> state_of(size_t i) const override;

 private:
  void update(size_t i, const Tensor& grad, std::vector<Tensor>& targets) override;
  void advance(size_t i) override;
  struct ParamState {
    Tensor exp_avg, exp_avg_sq;
    int64_t step = 0;
    Variable lr{0}, beta1{0}, one_minus_beta1{0}, bias_correction1{0}, bias_correction2{0};
  };
  std::pair<double, double> betas_;
  double eps_, weight_decay_;
  std::vector<std::optional<ParamState>> state_;
};

// ---- learning-rate schedulers (torch.optim.lr_scheduler), each PyTorch's chainable formula ----
// A scheduler sets the optimizer's lr when it is made (epoch 0) and at each step(); call it after
// the optimizer's step, as in PyTorch. It keeps a reference: the optimizer must outlive it.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  void step();
  double get_last_lr() const { return last_lr_; }  // one parameter group: a number, not a list
  int64_t last_epoch() const { return last_epoch_; }

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Derived constructors end with it, as PyTorch's _initial_step: epoch 0 sets the first lr.
  void initial_step() { step(); }
  // The lr of epoch last_epoch_, from the optimizer's current lr (PyTorch's get_lr()).
  virtual double get_lr() = 0;
  Optimizer& optimizer_;
  double base_lr_;  // the optimizer's initial_lr
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;  // calls of step(), the initial one included

 private:
  double last_lr_ = 0;
};

// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 private:
  double get_lr() override;
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma at each milestone (a milestone given twice multiplies twice).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 private:
  double get_lr() override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 private:
  double get_lr() override;
  double gamma_;
};

// The factor of base_lr goes linearly from start_factor to end_factor over total_iters epochs and
// stays there: a linear warmup.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 private:
  double get_lr() override;
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// Cosine from base_lr down to eta_min over T_max epochs (then back up: a period of 2 T_max).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 private:
  double get_lr() override;
  int64_t T_max_;
  double eta_min_;
};

// lr = base_lr * lr_lambda(epoch).
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda);

 private:
  double get_lr() override;
  std::function<double(int64_t)> lr_lambda_;
};

// The 1cycle policy: lr rises from max_lr / div_factor to max_lr over pct_start of total_steps,
// then anneals to max_lr / div_factor / final_div_factor ("cos" or "linear"); with cycle_momentum
// the optimizer's momentum (SGD) or beta1 (Adam family) moves the opposite way between
// max_momentum and base_momentum. three_phase comes back to the initial lr before the final
// anneal. Stepping past total_steps throws.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start = 0.3,
             const std::string& anneal_strategy = "cos", bool cycle_momentum = true,
             double base_momentum = 0.85, double max_momentum = 0.95, double div_factor = 25.0,
             double final_div_factor = 1e4, bool three_phase = false);

 private:
  double get_lr() override;
  struct Phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
  };
  int64_t total_steps_;
  bool linear_, cycle_momentum_;
  std::vector<Phase> phases_;
};

// ---- gradient clipping (torch.nn.utils) ----
// Scales the gradients of `parameters` (those that have one) in place by
// min(1, max_norm / (total_norm + 1e-6)), where total_norm is the norm_type-norm of all gradients
// together, and returns total_norm. Both stay lazy, so they fuse into the step that follows.
// error_if_nonfinite reads the norm now (a realize) and throws if it is NaN or infinite.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every gradient to [-clip_value, clip_value] in place (lazily).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace lazygrad::optim
