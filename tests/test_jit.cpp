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

// A live lazy tensor that reads the old value of a tensor the step updates is computed before the
// update, in the step's schedule (as PyTorch would have computed it already): the update stays in
// place and the capture holds both.
TEST(Jit, CapturesAStepWhoseLiveTensorReadsTheOldValue) {
  Tensor w = Tensor::ones({4}).contiguous().realize();
  Tensor keep;
  Jit f([&](const std::vector<Tensor>& in) {
    keep = w * 2;  // a live lazy tensor reading w's old value
    w.assign(w + in[0]);
    w.realize();
    return std::vector<Tensor>{w};
  });
  for (int call = 1; call <= 5; call++) {
    auto out = f({Tensor::ones({4})});
    EXPECT_EQ(out[0].to_vector<float>(), std::vector<float>(4, 1.0f + call)) << "call " << call;
    EXPECT_EQ(keep.to_vector<float>(), std::vector<float>(4, 2.0f * call)) << "call " << call;
  }
}

// What still cannot be captured: a graph that no tensor holds reads the old value, so the update
// goes to a copy; the error names the tensor.
TEST(Jit, RefusesToCaptureAStepThatCopiesOnWrite) {
  Tensor w = Tensor::ones({4}).contiguous().realize();
  std::shared_ptr<const UOp> held;
  Jit f([&](const std::vector<Tensor>& in) {
    held = (w * 2).uop();  // not a tensor: nothing can compute it before the update
    w.assign(w + in[0]);
    w.realize();
    return std::vector<Tensor>{w};
  });
  f({Tensor::ones({4})});
  try {
    f({Tensor::ones({4})});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("{4} float32"), std::string::npos) << e.what();
  }
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

namespace {

// tinygrad's beautiful_mnist loop, small: a BatchNorm whose running statistics the step does not
// realize itself, opt.step() with no arguments, and the returned loss kept alive into the next
// step (loss = step(x, y)). Under the Jit and eagerly, the same losses and the same state.
struct BnNet {
  std::shared_ptr<nn::Sequential> model;
  std::shared_ptr<nn::BatchNorm1d> bn;
  std::unique_ptr<optim::Adam> opt;
  explicit BnNet(uint64_t seed) {
    Tensor::manual_seed(seed);
    bn = std::make_shared<nn::BatchNorm1d>(8);
    model =
        std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 8), bn, std::make_shared<nn::ReLU>(),
                                         std::make_shared<nn::Linear>(8, 3));
    opt = std::make_unique<optim::Adam>(model->parameters(), 0.01);
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    opt->zero_grad();
    Tensor loss = model->forward(x).cross_entropy(y);
    loss.backward();
    opt->step();
    return loss;
  }
};

}  // namespace

TEST(Jit, TinygradsTrainingLoopEqualsTheEagerRun) {
  Tensor::manual_seed(3);
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 8; i++) {
    xs.push_back(Tensor::randn({16, 6}).realize());
    ys.push_back(Tensor::randint(0, 3, {16}).realize());
  }
  BnNet eager(11), jitted(11);
  Jit step([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{jitted.step(in[0], in[1])}; });
  Tensor eager_loss, jit_loss;  // each step's loss kept alive while the next step runs
  for (int i = 0; i < 8; i++) {
    eager_loss = eager.step(xs[i], ys[i]);
    jit_loss = step({xs[i], ys[i]})[0];
    EXPECT_NEAR(jit_loss.item<float>(), eager_loss.item<float>(), 1e-5) << "step " << i;
  }
  EXPECT_GE(step.captured_kernels(), 1u);
  auto close = [](const Tensor& a, const Tensor& b) {
    auto x = a.to_vector<float>(), y = b.to_vector<float>();
    for (size_t k = 0; k < x.size(); k++) EXPECT_NEAR(x[k], y[k], 1e-5) << k;
  };
  close(jitted.bn->running_mean, eager.bn->running_mean);
  close(jitted.bn->running_var, eager.bn->running_var);
  EXPECT_EQ(jitted.bn->num_batches_tracked.item<int64_t>(), 8);
  auto pe = eager.model->parameters(), pj = jitted.model->parameters();
  for (size_t k = 0; k < pe.size(); k++) close(pj[k], pe[k]);
}
