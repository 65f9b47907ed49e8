// Learning-rate schedulers (torch.optim.lr_scheduler). Each computes PyTorch's chainable form: the
// next lr from the optimizer's current one, not from a closed formula, because that is what
// PyTorch's step() does and the two differ in the last bits. They run on the host only: the
// optimizer hands the lr to its kernels through Variables, so a new lr compiles nothing.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <utility>

#include "lazygrad/error.h"
#include "lazygrad/optim.h"
#include "nn/optim_checks.h"

namespace lazygrad::optim {

namespace {

// Python's a % b for b > 0: never negative.
int64_t floor_mod(int64_t a, int64_t b) { return ((a % b) + b) % b; }

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  // PyTorch's group.setdefault('initial_lr', group['lr']): the first scheduler fixes the base.
  if (!optimizer.initial_lr()) optimizer.set_initial_lr(optimizer.lr());
  base_lr_ = *optimizer.initial_lr();
}

void LRScheduler::step() {
  step_count_ += 1;
  last_epoch_ += 1;
  const double lr = get_lr();
  optimizer_.set_lr(lr);
  last_lr_ = lr;
}

// ---------------------------------------------------------------- StepLR, MultiStepLR, ExponentialLR

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  check(step_size > 0, "StepLR: step_size must be positive, got " + std::to_string(step_size));
  initial_step();
}

double StepLR::get_lr() {
  const double lr = optimizer_.lr();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lr;
  return lr * gamma_;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  initial_step();
}

double MultiStepLR::get_lr() {
  const auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  const double lr = optimizer_.lr();
  return hits == 0 ? lr : lr * std::pow(gamma_, static_cast<double>(hits));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}

double ExponentialLR::get_lr() { return last_epoch_ == 0 ? optimizer_.lr() : optimizer_.lr() * gamma_; }

// ---------------------------------------------------------------- LinearLR

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  // start_factor 0 would divide by zero at epoch 1 (PyTorch raises ZeroDivisionError there).
  check(start_factor > 0 && start_factor <= 1,
        "LinearLR: start_factor must be in (0, 1], got " + num(start_factor));
  check(end_factor >= 0 && end_factor <= 1, "LinearLR: end_factor must be in [0, 1], got " + num(end_factor));
  initial_step();
}

double LinearLR::get_lr() {
  const double lr = optimizer_.lr();
  if (last_epoch_ == 0) return lr * start_factor_;
  if (last_epoch_ > total_iters_) return lr;
  const double delta = end_factor_ - start_factor_;
  return lr * (1.0 + delta / (static_cast<double>(total_iters_) * start_factor_ +
                              static_cast<double>(last_epoch_ - 1) * delta));
}

// ---------------------------------------------------------------- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  check(T_max > 0, "CosineAnnealingLR: T_max must be positive, got " + std::to_string(T_max));
  initial_step();
}

double CosineAnnealingLR::get_lr() {
  const double pi = std::numbers::pi, T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  const double lr = optimizer_.lr();
  if (last_epoch_ == 0) return lr;
  // At the bottom of a period the ratio below would be 0 / 0: step up by the closed form instead.
  if (floor_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0)
    return lr + (base_lr_ - eta_min_) * (1 - std::cos(pi / T)) / 2;
  return (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
}

// ---------------------------------------------------------------- LambdaLR

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(optimizer), lr_lambda_(std::move(lr_lambda)) {
  check(static_cast<bool>(lr_lambda_), "LambdaLR: lr_lambda is an empty function");
  initial_step();
}

double LambdaLR::get_lr() { return base_lr_ * lr_lambda_(last_epoch_); }

// ---------------------------------------------------------------- OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start,
                       const std::string& anneal_strategy, bool cycle_momentum, double base_momentum,
                       double max_momentum, double div_factor, double final_div_factor, bool three_phase)
    : LRScheduler(optimizer),
      total_steps_(total_steps),
      linear_(anneal_strategy == "linear"),
      cycle_momentum_(cycle_momentum) {
  check(total_steps > 0, "OneCycleLR: expected a positive total_steps, got " + std::to_string(total_steps));
  check(pct_start >= 0 && pct_start <= 1, "OneCycleLR: expected pct_start in [0, 1], got " + num(pct_start));
  check(anneal_strategy == "cos" || anneal_strategy == "linear",
        "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '" + anneal_strategy + "'");
  const double initial_lr = max_lr / div_factor, min_lr = initial_lr / final_div_factor;
  const double steps = static_cast<double>(total_steps);
  // This scheduler owns the start of the schedule (PyTorch sets group['initial_lr'] here).
  optimizer_.set_initial_lr(initial_lr);
  base_lr_ = initial_lr;
  if (three_phase) {
    phases_ = {{pct_start * steps - 1, initial_lr, max_lr, max_momentum, base_momentum},
               {2 * pct_start * steps - 2, max_lr, initial_lr, base_momentum, max_momentum},
               {steps - 1, initial_lr, min_lr, max_momentum, max_momentum}};
  } else {
    phases_ = {{pct_start * steps - 1, initial_lr, max_lr, max_momentum, base_momentum},
               {steps - 1, max_lr, min_lr, base_momentum, max_momentum}};
  }
  if (cycle_momentum_) optimizer_.set_momentum(max_momentum);
  initial_step();
}

double OneCycleLR::get_lr() {
  check(last_epoch_ <= total_steps_, "OneCycleLR: tried to step " + std::to_string(last_epoch_ + 1) +
                                         " times; total_steps is " + std::to_string(total_steps_));
  const bool linear = linear_;
  auto anneal = [linear](double start, double end, double pct) {
    return linear ? (end - start) * pct + start
                  : end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
  };
  const double step = static_cast<double>(last_epoch_);
  double start_step = 0;
  for (size_t k = 0; k < phases_.size(); k++) {
    const Phase& phase = phases_[k];
    if (step <= phase.end_step || k + 1 == phases_.size()) {
      // PyTorch raises ZeroDivisionError here; say why instead.
      check(phase.end_step != start_step, "OneCycleLR: phase " + std::to_string(k) +
                                              " of the schedule has no steps (it ends at step " +
                                              num(phase.end_step) +
                                              ", where the one before ends); choose "
                                              "another pct_start or total_steps");
      const double pct = (step - start_step) / (phase.end_step - start_step);
      if (cycle_momentum_) optimizer_.set_momentum(anneal(phase.start_momentum, phase.end_momentum, pct));
      return anneal(phase.start_lr, phase.end_lr, pct);
    }
    start_step = phase.end_step;
  }
  return optimizer_.lr();  // not reached: the last phase always matches
}

}  // namespace lazygrad::optim
