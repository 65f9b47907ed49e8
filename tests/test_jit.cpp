// The Jit: replays equal eager runs, compile nothing, and refuse inputs of a new shape.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <memory>
#include <numbers>

using namespace lazygrad;

TEST(Jit, ReplaysWithNewInputsAndCompilesNothing) {
  Jit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 2 + in[1]).sum(1).relu()}; });
  for (int call = 1; call <= 6; call++) {
    Tensor x = Tensor::full({3, 5}, static_cast<float>(call)), y = Tensor::arange(5).to(kFloat32) - 2;
    realize({x, y});  // the inputs' own kernels are not the step's
    int64_t compiles = GlobalCounters::compile_count;
    GlobalCounters::kernel_count = 0;
    auto out = f({x, y});
    EXPECT_EQ(out[0].to_vector<float>(), std::vector<float>(3, 10.0f * call)) << "call " << call;
    if (call >= 3) {
      EXPECT_EQ(GlobalCounters::compile_count, compiles);
      EXPECT_EQ(GlobalCounters::kernel_count, static_cast<int64_t>(f.captured_kernels()));
    }
  }
  EXPECT_GE(f.captured_kernels(), 1u);
}

TEST(Jit, WrongInputsAreAnError) {
  Jit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1}; });
  for (int i = 0; i < 3; i++) f({Tensor::ones({4})});
  EXPECT_THROW(f({Tensor::ones({5})}), Error);
  EXPECT_THROW(f({Tensor::ones({4}, kFloat64)}), Error);
  EXPECT_THROW(f({Tensor::ones({4}), Tensor::ones({4})}), Error);
}

namespace {

// A small MLP trained with SGD under a cosine learning-rate schedule (a Variable, set on the host
// before each step, outside the jitted function) and dropout.
struct Trainer {
  Tensor w1, w2;
  Variable lr{0.0};
  int step = 0;
  void schedule() { lr.set(0.05 + 0.45 * (1 + std::cos(std::numbers::pi * step++ / 20.0))); }
  Trainer() {
    Tensor::manual_seed(5);
    w1 = (Tensor::randn({8, 6}) * 0.3).requires_grad(true);
    w2 = (Tensor::randn({3, 8}) * 0.3).requires_grad(true);
  }
  std::vector<Tensor> train_step(const std::vector<Tensor>& in) {
    Tensor loss = in[0].linear(w1).relu().dropout(0.2).linear(w2).cross_entropy(in[1]);
    loss.backward();
    {
      NoGrad no_grad;
      for (Tensor* p : {&w1, &w2}) {
        p->assign(*p - p->grad() * lr.tensor());
        p->zero_grad();
      }
    }
    realize({loss, w1, w2});
    return {loss};
  }
};

}  // namespace

TEST(Jit, TrainingStepsEqualTheEagerRun) {
  Tensor::manual_seed(9);
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 20; i++) {
    xs.push_back(Tensor::randn({4, 6}).realize());
    ys.push_back(Tensor::randint(0, 3, {4}).realize());
  }
  Trainer eager, jitted;
  Jit step([&](const std::vector<Tensor>& in) { return jitted.train_step(in); });
  std::vector<float> eager_losses, jit_losses;
  Tensor::manual_seed(42);
  for (int i = 0; i < 20; i++) {
    eager.schedule();
    eager_losses.push_back(eager.train_step({xs[i], ys[i]})[0].item<float>());
  }
  Tensor::manual_seed(42);
  int64_t compiles_after_capture = 0;
  for (int i = 0; i < 20; i++) {
    jitted.schedule();
    jit_losses.push_back(step({xs[i], ys[i]})[0].item<float>());
    if (i == 1) compiles_after_capture = GlobalCounters::compile_count;
  }
  EXPECT_EQ(GlobalCounters::compile_count, compiles_after_capture) << "a replay compiled a kernel";
  for (int i = 0; i < 20; i++) EXPECT_NEAR(jit_losses[i], eager_losses[i], 1e-5) << "step " << i;
  auto a = eager.w1.to_vector<float>(), b = jitted.w1.to_vector<float>();
  for (size_t k = 0; k < a.size(); k++) EXPECT_NEAR(a[k], b[k], 1e-5);
}

TEST(Jit, RefusesToCaptureAStepThatCopiesOnWrite) {
  Tensor w = Tensor::ones({4}).contiguous().realize();
  Tensor keep;
  Jit f([&](const std::vector<Tensor>& in) {
    keep = w * 2;  // a live lazy tensor reading w's old value
    w.assign(w + in[0]);
    w.realize();
    return std::vector<Tensor>{w};
  });
  f({Tensor::ones({4})});
  EXPECT_THROW(f({Tensor::ones({4})}), Error);
}

namespace {

// Adam under a cosine schedule, with dropout: the optimizer's step count and bias corrections live
// on the host and advance before each replay (Jit::on_replay); the scheduler runs outside the step.
struct AdamTrainer {
  Tensor w1, w2;
  std::unique_ptr<optim::Adam> opt;
  std::unique_ptr<optim::CosineAnnealingLR> sched;
  AdamTrainer() {
    Tensor::manual_seed(6);
    w1 = (Tensor::randn({8, 6}) * 0.3).requires_grad(true);
    w2 = (Tensor::randn({3, 8}) * 0.3).requires_grad(true);
    opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w1, w2}, 0.01);
    sched = std::make_unique<optim::CosineAnnealingLR>(*opt, 20);
  }
  std::vector<Tensor> train_step(const std::vector<Tensor>& in) {
    Tensor loss = in[0].linear(w1).relu().dropout(0.2).linear(w2).cross_entropy(in[1]);
    loss.backward();
    opt->step({loss});
    opt->zero_grad();
    return {loss};
  }
};

}  // namespace

TEST(Jit, AdamWithACosineScheduleAndDropoutEqualsTheEagerRun) {
  Tensor::manual_seed(10);
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 20; i++) {
    xs.push_back(Tensor::randn({4, 6}).realize());
    ys.push_back(Tensor::randint(0, 3, {4}).realize());
  }
  AdamTrainer eager, jitted;
  Jit step([&](const std::vector<Tensor>& in) { return jitted.train_step(in); });
  std::vector<float> eager_losses, jit_losses;
  Tensor::manual_seed(43);
  for (int i = 0; i < 20; i++) {
    eager_losses.push_back(eager.train_step({xs[i], ys[i]})[0].item<float>());
    eager.sched->step();
  }
  Tensor::manual_seed(43);
  int64_t compiles_after_capture = 0;
  for (int i = 0; i < 20; i++) {
    jit_losses.push_back(step({xs[i], ys[i]})[0].item<float>());
    jitted.sched->step();
    if (i == 1) compiles_after_capture = GlobalCounters::compile_count;
  }
  EXPECT_EQ(GlobalCounters::compile_count, compiles_after_capture) << "a replay compiled a kernel";
  for (int i = 0; i < 20; i++) EXPECT_NEAR(jit_losses[i], eager_losses[i], 1e-5) << "step " << i;
  auto a = eager.w2.to_vector<float>(), b = jitted.w2.to_vector<float>();
  for (size_t k = 0; k < a.size(); k++) EXPECT_NEAR(a[k], b[k], 1e-5);
}
