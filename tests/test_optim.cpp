// lazygrad::optim against PyTorch: optimizers (parameters after each of 5 steps), schedulers (the lr
// and momentum over 30 steps) and gradient clipping, from tests/fixtures/optim.txt (written by
// scripts/fixtures_optim.py, which describes the format). Then what PyTorch cannot tell: that an
// update fuses with the backward pass and writes in place, that a changing learning rate compiles
// nothing new, and the errors.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ir/uop.h"
#include "runtime/buffer.h"

using namespace lazygrad;

namespace {

// ------------------------------------------------------------------ the fixture file

struct TensorSpec {
  std::string dtype;
  Shape shape;
  std::vector<std::string> values;
};

struct Record {
  std::string kind, name;
  std::map<std::string, std::string> args;
  std::map<std::string, TensorSpec> tensors;
  std::map<std::string, std::vector<double>> values;

  bool has(const std::string& key) const { return args.count(key) > 0; }
  const std::string& str(const std::string& key) const {
    auto it = args.find(key);
    if (it == args.end()) throw std::runtime_error(name + ": no arg " + key);
    return it->second;
  }
  double num(const std::string& key) const { return std::strtod(str(key).c_str(), nullptr); }
  double num(const std::string& key, double fallback) const { return has(key) ? num(key) : fallback; }
  int64_t integer(const std::string& key) const { return std::stoll(str(key)); }
  bool flag(const std::string& key) const { return has(key) && str(key) == "1"; }
  const TensorSpec& tensor(const std::string& role) const {
    auto it = tensors.find(role);
    if (it == tensors.end()) throw std::runtime_error(name + ": no tensor " + role);
    return it->second;
  }
  size_t count_tensors(const std::string& prefix) const {
    size_t n = 0;
    while (tensors.count(prefix + std::to_string(n))) n++;
    return n;
  }
};

Shape parse_shape(const std::string& text) {  // "[2,3]"
  Shape shape;
  std::stringstream ss(text.substr(1, text.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) shape.push_back(std::stoll(item));
  return shape;
}

const std::vector<Record>& records() {
  static const std::vector<Record> all = [] {
    const char* dir = std::getenv("LAZYGRAD_TEST_FIXTURES");
    std::string path = std::string(dir && *dir ? dir : LAZYGRAD_FIXTURE_DIR) + "/optim.txt";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path + " (run scripts/fixtures_optim.py)");
    std::vector<Record> out;
    std::string line;
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::string tag;
      if (!(ss >> tag) || tag[0] == '#') continue;
      if (tag == "case") {
        out.emplace_back();
        ss >> out.back().kind >> out.back().name;
      } else if (tag == "arg") {
        std::string key, value;
        ss >> key >> value;
        out.back().args[key] = value;
      } else if (tag == "tensor") {
        std::string role, shape;
        TensorSpec spec;
        ss >> role >> spec.dtype >> shape;
        spec.shape = parse_shape(shape);
        for (std::string v; ss >> v;) spec.values.push_back(v);
        out.back().tensors[role] = spec;
      } else if (tag == "values") {
        std::string role;
        ss >> role;
        for (std::string v; ss >> v;) out.back().values[role].push_back(std::strtod(v.c_str(), nullptr));
      } else if (tag != "end") {
        throw std::runtime_error(path + ": unknown line '" + line + "'");
      }
    }
    return out;
  }();
  return all;
}

std::vector<const Record*> records_of(const std::string& kind) {
  std::vector<const Record*> out;
  for (const Record& r : records())
    if (r.kind == kind) out.push_back(&r);
  return out;
}

Tensor tensor_from(const TensorSpec& spec) {
  if (spec.dtype == "float64") {
    std::vector<double> v;
    for (const auto& s : spec.values) v.push_back(std::strtod(s.c_str(), nullptr));
    return Tensor::from_vector(v, spec.shape);
  }
  std::vector<float> v;
  for (const auto& s : spec.values) v.push_back(std::strtof(s.c_str(), nullptr));
  return Tensor::from_vector(v, spec.shape);
}

void expect_close(const Tensor& actual, const TensorSpec& expected, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape) << what;
  std::vector<double> a = actual.to_vector<double>();
  for (size_t k = 0; k < a.size(); k++) {
    double e = std::strtod(expected.values[k].c_str(), nullptr);
    EXPECT_NEAR(a[k], e, atol + rtol * std::abs(e)) << what << " element " << k;
  }
}

// ------------------------------------------------------------------ building from a record

std::unique_ptr<optim::Optimizer> make_optimizer(const Record& r, std::vector<Tensor> params) {
  const std::string& algo = r.str("algo");
  const double lr = r.num("lr");
  const std::pair<double, double> betas = {r.num("beta1", 0.9), r.num("beta2", 0.999)};
  if (algo == "SGD")
    return std::make_unique<optim::SGD>(params, lr, r.num("momentum", 0), r.num("dampening", 0),
                                        r.num("weight_decay", 0), r.flag("nesterov"), r.flag("maximize"));
  if (algo == "Adam")
    return std::make_unique<optim::Adam>(params, lr, betas, r.num("eps", 1e-8), r.num("weight_decay", 0),
                                         r.flag("amsgrad"), r.flag("maximize"));
  if (algo == "AdamW")
    return std::make_unique<optim::AdamW>(params, lr, betas, r.num("eps", 1e-8), r.num("weight_decay", 1e-2),
                                          r.flag("amsgrad"), r.flag("maximize"));
  if (algo == "LAMB")
    return std::make_unique<optim::LAMB>(params, lr, betas, r.num("eps", 1e-6), r.num("weight_decay", 0));
  throw std::runtime_error(r.name + ": unknown optimizer " + algo);
}

// A scheduler named by `kind`, its arguments read with `prefix` ("" or "chain_").
std::unique_ptr<optim::LRScheduler> make_scheduler(const Record& r, const std::string& kind,
                                                   optim::Optimizer& opt, const std::string& prefix) {
  auto num = [&](const std::string& key) { return r.num(prefix + key); };
  auto integer = [&](const std::string& key) { return r.integer(prefix + key); };
  if (kind == "StepLR") return std::make_unique<optim::StepLR>(opt, integer("step_size"), num("gamma"));
  if (kind == "MultiStepLR") {
    std::vector<int64_t> milestones;
    std::stringstream ss(r.str(prefix + "milestones"));
    for (std::string m; std::getline(ss, m, ',');) milestones.push_back(std::stoll(m));
    return std::make_unique<optim::MultiStepLR>(opt, milestones, num("gamma"));
  }
  if (kind == "ExponentialLR") return std::make_unique<optim::ExponentialLR>(opt, num("gamma"));
  if (kind == "LinearLR")
    return std::make_unique<optim::LinearLR>(opt, num("start_factor"), num("end_factor"),
                                             integer("total_iters"));
  if (kind == "CosineAnnealingLR")
    return std::make_unique<optim::CosineAnnealingLR>(opt, integer("T_max"), num("eta_min"));
  if (kind == "OneCycleLR")
    return std::make_unique<optim::OneCycleLR>(
        opt, num("max_lr"), integer("total_steps"), num("pct_start"), r.str(prefix + "anneal_strategy"),
        r.flag(prefix + "cycle_momentum"), 0.85, 0.95, num("div_factor"), num("final_div_factor"),
        r.flag(prefix + "three_phase"));
  throw std::runtime_error(r.name + ": unknown scheduler " + kind);
}

// The fixtures' loss: sum_i sum(a_i * p_i * p_i + c_i * p_i).
Tensor quadratic_loss(const std::vector<Tensor>& params, const std::vector<Tensor>& a,
                      const std::vector<Tensor>& c) {
  Tensor loss;
  for (size_t i = 0; i < params.size(); i++) {
    Tensor term = (a[i] * params[i] * params[i] + c[i] * params[i]).sum();
    loss = loss.defined() ? loss + term : term;
  }
  return loss;
}

const Buffer* buffer_of(const Tensor& t) {
  UOpPtr u = t.uop();
  const UOp* b = u.get();
  while (b->op != Ops::BUFFER) b = b->src[0].get();
  return b->as<std::shared_ptr<Buffer>>().get();
}

// A one-layer classifier: x [8, 4] -> 3 classes, for the kernel counts.
struct TinyModel {
  Tensor x, y, w, b;
  std::vector<Tensor> params() const { return {w, b}; }
  Tensor loss() const { return x.linear(w, b).cross_entropy(y); }
};

TinyModel tiny_model() {
  std::vector<float> x(32), w(12);
  for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.7f * static_cast<float>(i));
  for (size_t i = 0; i < w.size(); i++) w[i] = 0.3f * std::cos(1.3f * static_cast<float>(i));
  return {Tensor::from_vector(x, {8, 4}),
          Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8}),
          Tensor::from_vector(w, {3, 4}).requires_grad(true),
          Tensor::from_vector(std::vector<float>(3, 0.0f), {3}).requires_grad(true)};
}

}  // namespace

// ------------------------------------------------------------------ parity with PyTorch

TEST(OptimParity, OptimizersMatchPyTorchOverFiveSteps) {
  auto cases = records_of("optimizer");
  EXPECT_EQ(cases.size(), 15u) << "optim.txt: optimizer cases";
  for (const Record* r : cases) {
    SCOPED_TRACE(r->name);
    const size_t n = r->count_tensors("param");
    std::vector<Tensor> params, a, c;
    for (size_t i = 0; i < n; i++) {
      params.push_back(tensor_from(r->tensor("param" + std::to_string(i))).requires_grad(true));
      a.push_back(tensor_from(r->tensor("a" + std::to_string(i))));
      c.push_back(tensor_from(r->tensor("c" + std::to_string(i))));
    }
    const bool f64 = params[0].dtype() == kFloat64;
    auto opt = make_optimizer(*r, params);
    std::unique_ptr<optim::LRScheduler> sched;
    if (r->has("cosine_T_max"))
      sched = std::make_unique<optim::CosineAnnealingLR>(*opt, r->integer("cosine_T_max"));
    if (r->has("onecycle_max_lr"))
      sched = std::make_unique<optim::OneCycleLR>(*opt, r->num("onecycle_max_lr"),
                                                  r->integer("onecycle_total_steps"));
    for (int step = 1; step <= 5; step++) {
      opt->zero_grad();
      quadratic_loss(params, a, c).backward();
      opt->step();
      if (sched) sched->step();
      for (size_t i = 0; i < n; i++) {
        std::string role = "step" + std::to_string(step) + "_param" + std::to_string(i);
        expect_close(params[i], r->tensor(role), f64 ? 1e-12 : 2e-5, f64 ? 1e-13 : 2e-6, role);
      }
    }
  }
}

TEST(OptimParity, SchedulersMatchPyTorchOverThirtySteps) {
  auto cases = records_of("scheduler");
  EXPECT_EQ(cases.size(), 11u) << "optim.txt: scheduler cases";
  for (const Record* r : cases) {
    SCOPED_TRACE(r->name);
    std::vector<Tensor> dummy = {Tensor::from_vector(std::vector<float>{0.0f}, {1}).requires_grad(true)};
    auto opt = make_optimizer(*r, dummy);
    std::vector<std::unique_ptr<optim::LRScheduler>> scheds;
    scheds.push_back(make_scheduler(*r, r->str("kind"), *opt, ""));
    if (r->has("chain")) scheds.push_back(make_scheduler(*r, r->str("chain"), *opt, "chain_"));
    const auto& lrs = r->values.at("lr");
    const auto& momenta = r->values.at("momentum");
    ASSERT_EQ(lrs.size(), 31u);
    for (size_t e = 0; e < lrs.size(); e++) {
      if (e > 0)
        for (auto& s : scheds) s->step();
      EXPECT_NEAR(opt->lr(), lrs[e], 1e-14 * std::abs(lrs[e]) + 1e-18) << "epoch " << e;
      EXPECT_NEAR(opt->momentum(), momenta[e], 1e-14) << "epoch " << e;
      EXPECT_EQ(scheds.back()->get_last_lr(), opt->lr());
    }
  }
}

TEST(OptimParity, ClipGradMatchesPyTorch) {
  auto cases = records_of("clip");
  EXPECT_EQ(cases.size(), 5u) << "optim.txt: clip cases";
  for (const Record* r : cases) {
    SCOPED_TRACE(r->name);
    std::vector<Tensor> params;
    Tensor loss;
    for (size_t i = 0; i < r->count_tensors("param"); i++) {
      params.push_back(tensor_from(r->tensor("param" + std::to_string(i))).requires_grad(true));
      Tensor term = (params[i] * tensor_from(r->tensor("grad" + std::to_string(i)))).sum();
      loss = loss.defined() ? loss + term : term;
    }
    loss.backward();  // the gradients are the fixture's
    if (r->has("clip_value")) {
      optim::clip_grad_value_(params, r->num("clip_value"));
    } else {
      Tensor total = optim::clip_grad_norm_(params, r->num("max_norm"), r->num("norm_type"));
      EXPECT_FALSE(total.is_realized()) << "the norm stays lazy";
      expect_close(total, r->tensor("total"), 1e-6, 1e-7, "total norm");
    }
    for (size_t i = 0; i < params.size(); i++)
      expect_close(params[i].grad(), r->tensor("clipped" + std::to_string(i)), 1e-6, 1e-7, "clipped grad");
  }
}

// ------------------------------------------------------------------ fusion, in-place updates, compiles

TEST(OptimKernels, AdamStepRunsWithTheBackwardPassInOneSchedule) {
  TinyModel m = tiny_model();
  {
    // The forward and backward pass alone: 8 kernels (docs/optim.md lists them).
    Tensor loss = m.loss();
    loss.backward();
    GlobalCounters::reset();
    realize({loss, m.w.grad(), m.b.grad()});
    EXPECT_EQ(GlobalCounters::kernel_count, 8);
  }

  optim::Adam opt(m.params(), 0.01);
  const Buffer* w_buffer = buffer_of(m.w);
  for (int step = 0; step < 3; step++) {
    opt.zero_grad();
    Tensor l = m.loss();
    l.backward();
    GlobalCounters::reset();
    opt.step({l});
    // Adam adds three elementwise kernels per parameter (m, v and the parameter; the scheduler
    // writes one output per kernel) and no reduction: the gradients are computed once.
    EXPECT_EQ(GlobalCounters::kernel_count, 8 + 3 * 2) << "step " << step;
    EXPECT_EQ(buffer_of(m.w), w_buffer) << "the update wrote a new buffer";
    EXPECT_TRUE(m.w.grad().is_realized());
    EXPECT_TRUE(l.is_realized());
  }
}

TEST(OptimKernels, SgdUpdateFusesIntoTheGradientKernels) {
  TinyModel m = tiny_model();
  optim::SGD opt(m.params(), 0.1);
  const Buffer* w_buffer = buffer_of(m.w);
  for (int step = 0; step < 2; step++) {
    opt.zero_grad();
    Tensor loss = m.loss();
    loss.backward();
    std::vector<Tensor> targets = opt.schedule_step();
    EXPECT_EQ(targets.size(), 2u);
    EXPECT_FALSE(m.w.is_realized()) << "schedule_step realizes nothing";
    opt.zero_grad();  // the update holds the gradients' graphs; nothing else reads the old weights
    targets.push_back(loss);
    GlobalCounters::reset();
    realize(targets);
    EXPECT_EQ(GlobalCounters::kernel_count, 8) << "the update costs no kernel of its own";
    EXPECT_EQ(buffer_of(m.w), w_buffer) << "the update wrote a new buffer";
  }
}

TEST(OptimKernels, AChangingLearningRateCompilesNothingAfterTheSecondStep) {
  TinyModel m = tiny_model();
  optim::Adam opt(m.params(), 0.05);
  optim::CosineAnnealingLR sched(opt, 10, 0.001);
  std::vector<double> lrs;
  std::vector<float> losses;
  int64_t loaded_after_step_2 = 0;
  for (int step = 1; step <= 10; step++) {
    opt.zero_grad();
    Tensor loss = m.loss();
    loss.backward();
    opt.step({loss});
    lrs.push_back(opt.lr());
    losses.push_back(loss.item<float>());
    sched.step();
    // Kernels compiled or loaded from the disk cache: none once the schedule has been seen twice.
    if (step == 2) loaded_after_step_2 = GlobalCounters::compile_count + GlobalCounters::cache_hits;
  }
  EXPECT_EQ(GlobalCounters::compile_count + GlobalCounters::cache_hits, loaded_after_step_2);
  for (size_t i = 1; i < lrs.size(); i++) EXPECT_LT(lrs[i], lrs[i - 1]);
  EXPECT_LT(losses.back(), losses.front());
}

// ------------------------------------------------------------------ behaviour

TEST(Optim, ParametersWithoutAGradientAreSkipped) {
  std::vector<float> init = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  Tensor used = Tensor::from_vector(init, {2, 3}).requires_grad(true);
  Tensor unused = Tensor::from_vector(init, {2, 3}).requires_grad(true);
  // Buffers rather than constants, so the kernels are those of the fixture cases (no new compile).
  Tensor a = Tensor::from_vector(std::vector<float>(6, 1.0f), {2, 3});
  Tensor c = Tensor::from_vector(std::vector<float>(6, 0.0f), {2, 3});
  optim::Adam opt({used, unused}, 0.1);
  for (int step = 0; step < 2; step++) {
    opt.zero_grad();
    quadratic_loss({used}, {a}, {c}).backward();
    opt.step();
  }
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_EQ(unused.to_vector<float>(), init);
  EXPECT_NE(used.to_vector<float>(), init);
}

TEST(Optim, ScheduleStepEqualsStepWhenTheCallerRealizes) {
  std::vector<float> init = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  // Buffers rather than constants, so the kernels are those of the fixture cases (no new compile).
  Tensor a = Tensor::from_vector(std::vector<float>(6, 1.0f), {2, 3});
  Tensor c = Tensor::from_vector(std::vector<float>(6, 0.0f), {2, 3});
  auto run = [&](bool lazily) {
    Tensor p = Tensor::from_vector(init, {2, 3}).requires_grad(true);
    optim::Adam opt({p}, 0.1);
    for (int step = 0; step < 3; step++) {
      opt.zero_grad();
      Tensor loss = quadratic_loss({p}, {a}, {c});
      loss.backward();
      if (lazily) {
        std::vector<Tensor> targets = opt.schedule_step();
        opt.zero_grad();
        targets.push_back(loss);
        realize(targets);
      } else {
        opt.step({loss});
      }
    }
    return p.to_vector<float>();
  };
  std::vector<float> eager = run(false), lazy = run(true);
  for (size_t k = 0; k < eager.size(); k++) EXPECT_FLOAT_EQ(lazy[k], eager[k]) << k;
}

TEST(OptimErrors, AStepThatWasNeverRealizedCannotBeFollowedByAnother) {
  Tensor p = Tensor::from_vector(std::vector<float>{0.5f, -1.0f}, {2}).requires_grad(true);
  optim::Adam opt({p}, 0.1);
  (p * p).sum().backward();
  opt.schedule_step();  // not realized: the next forward pass would contain this update
  opt.zero_grad();
  (p * p).sum().backward();
  EXPECT_THROW(opt.schedule_step(), Error);
  EXPECT_THROW(opt.step(), Error);
}

TEST(Optim, LambdaLRScalesTheBaseLearningRate) {
  optim::SGD opt({Tensor::from_vector(std::vector<float>{0.0f}, {1}).requires_grad(true)}, 0.2);
  optim::LambdaLR sched(opt, [](int64_t epoch) { return 1.0 / static_cast<double>(epoch + 1); });
  for (int64_t e = 0; e < 5; e++) {
    EXPECT_DOUBLE_EQ(sched.get_last_lr(), 0.2 / static_cast<double>(e + 1));
    EXPECT_EQ(sched.last_epoch(), e);
    sched.step();
  }
}

TEST(Optim, ClipGradNormWithoutGradientsIsZero) {
  Tensor p = Tensor::from_vector(std::vector<float>{1.0f}, {1}).requires_grad(true);
  EXPECT_EQ(optim::clip_grad_norm_({p}, 1.0).item<float>(), 0.0f);
}

// ------------------------------------------------------------------ errors

TEST(OptimErrors, BadArgumentsThrowNamingTheFunction) {
  Tensor p = Tensor::from_vector(std::vector<float>{1.0f, 2.0f}, {2}).requires_grad(true);
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { optim::SGD({}, 0.1); }), "SGD: got an empty parameter list");
  EXPECT_EQ(message([&] { optim::SGD({p}, -0.1); }), "SGD: invalid learning rate: -0.1");
  EXPECT_THROW(optim::SGD({p}, 0.1, -0.5), Error);
  EXPECT_THROW(optim::SGD({p}, 0.1, 0, 0, -1), Error);
  EXPECT_EQ(
      message([&] { optim::SGD({p}, 0.1, 0.9, 0.1, 0, true); }),
      "SGD: Nesterov momentum requires a momentum and zero dampening (got momentum 0.9, dampening 0.1)");
  EXPECT_EQ(message([&] {
              optim::Adam({p}, 0.1, {0.9, 1.0});
            }),
            "Adam: invalid beta parameter at index 1: 1");
  EXPECT_THROW(optim::AdamW({p}, 0.1, {-0.1, 0.999}), Error);
  EXPECT_THROW(optim::Adam({p}, 0.1, {0.9, 0.999}, -1e-8), Error);
  EXPECT_THROW(optim::LAMB({p}, 0.1, {0.9, 0.999}, 1e-6, -0.1), Error);
  EXPECT_THROW(optim::SGD({p, Tensor()}, 0.1), Error);
  EXPECT_EQ(message([&] {
              optim::Adam({p, p}, 0.1);
            }),
            "Adam: parameters 0 and 1 are the same tensor (it would be updated twice)");
  Tensor computed = p * 2;
  EXPECT_EQ(
      message([&] { optim::SGD({computed}, 0.1); }),
      "SGD: can't optimize a non-leaf Tensor (parameter 0, shape {2}, is computed from tensors that require "
      "grad)");

  optim::SGD opt({p}, 0.1, 0.9);
  EXPECT_THROW(optim::StepLR(opt, 0), Error);
  EXPECT_THROW(optim::CosineAnnealingLR(opt, 0), Error);
  EXPECT_THROW(optim::LinearLR(opt, 0.0), Error);
  EXPECT_THROW(optim::LinearLR(opt, 0.5, 1.5), Error);
  EXPECT_THROW(optim::LambdaLR(opt, nullptr), Error);
  EXPECT_THROW(optim::OneCycleLR(opt, 0.1, 0), Error);
  EXPECT_THROW(optim::OneCycleLR(opt, 0.1, 10, 1.5), Error);
  EXPECT_EQ(message([&] { optim::OneCycleLR(opt, 0.1, 10, 0.3, "cosine"); }),
            "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got 'cosine'");
  // pct_start * total_steps = 1: the warmup phase has no steps (PyTorch divides by zero).
  EXPECT_THROW(optim::OneCycleLR(opt, 0.1, 10, 0.1), Error);
  optim::OneCycleLR sched(opt, 0.1, 3);
  for (int i = 0; i < 3; i++) sched.step();  // epochs 1..3: total_steps + 1 values, as PyTorch
  EXPECT_EQ(message([&] { sched.step(); }), "OneCycleLR: tried to step 5 times; total_steps is 3");
}

TEST(OptimErrors, ClipGradNormOfNonFiniteGradientsThrowsWhenAsked) {
  // The shapes and the norm of the fixture case clip_norm2, so no new kernel.
  std::vector<float> values = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 0.0f};
  Tensor p = Tensor::from_vector(values, {2, 3}).requires_grad(true);
  Tensor q = Tensor::from_vector(values, {2, 3}).requires_grad(true);
  values[1] = INFINITY;
  ((p * Tensor::from_vector(values, {2, 3})).sum() + (q * q).sum()).backward();
  EXPECT_THROW(optim::clip_grad_norm_({p, q}, 1.0, 2.0, true), Error);
  EXPECT_THROW(optim::clip_grad_norm_({Tensor()}, 1.0), Error);
}
