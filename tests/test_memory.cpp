// Live memory (GlobalCounters::buffers_live and mem_used): the counters follow buffers' lives, and a
// training loop's memory is flat: once warmed up, the same buffers are alive at a late step as at
// an early one, under the Jit and eagerly. A step that leaks one buffer shows up as a difference.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

using namespace lazygrad;

namespace {

struct Live {
  int64_t buffers = 0, bytes = 0;
};
Live live() { return {GlobalCounters::buffers_live.load(), GlobalCounters::mem_used.load()}; }

}  // namespace

TEST(Memory, CountersFollowBuffers) {
  const Live before = live();
  {
    Tensor a = Tensor::empty({1000}, kFloat32);
    EXPECT_EQ(live().buffers, before.buffers) << "a buffer counts once its memory is allocated";
    Tensor b = (Tensor::ones({1000}) * 3).realize();
    EXPECT_EQ(live().buffers, before.buffers + 1);
    EXPECT_EQ(live().bytes, before.bytes + 4000);
    Tensor c = b.to(kFloat64).realize();
    EXPECT_EQ(live().buffers, before.buffers + 2);
    EXPECT_EQ(live().bytes, before.bytes + 12000);
  }
  EXPECT_EQ(live().buffers, before.buffers);
  EXPECT_EQ(live().bytes, before.bytes);
  GlobalCounters::reset();  // counts what ran, not what is alive
  EXPECT_EQ(live().buffers, before.buffers);
}

namespace {

// An MLP for Fashion-MNIST's shapes, 784-64-10, trained with Adam and cross-entropy on random
// batches of 32, fresh each step (as a data loader's), reading the loss each step; returns the live
// memory after `early` and after `late` steps. Not models/mlp.h's 784-512-512-10 for time: that
// one is flat as well, but its 500 steps took 25 to 55 s per loop on a busy 2-core machine.
std::pair<Live, Live> train(bool jit, int early, int late) {
  Tensor::manual_seed(0);
  nn::Sequential model(std::make_shared<nn::Linear>(784, 64), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(64, 10));
  optim::Adam opt(model.parameters(), 1e-3);
  auto step = [&](const std::vector<Tensor>& in) {
    Tensor loss = model(in[0]).cross_entropy(in[1]);
    loss.backward();
    opt.step({loss});
    opt.zero_grad();
    return std::vector<Tensor>{loss};
  };
  Jit jitted(step);
  std::pair<Live, Live> out;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= late; i++) {
    Tensor x = Tensor::rand({32, 784}).realize();
    Tensor y = Tensor::randint(0, 10, {32}).realize();
    const float loss = (jit ? jitted({x, y}) : step({x, y}))[0].item<float>();
    EXPECT_TRUE(std::isfinite(loss)) << "step " << i;
    if (i == early) out.first = live();
    if (i == late) out.second = live();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << (jit ? "jit" : "eager") << ": " << late << " steps in " << s << " s; step " << early << ": "
            << out.first.buffers << " buffers, " << out.first.bytes << " bytes; step " << late << ": "
            << out.second.buffers << " buffers, " << out.second.bytes << " bytes\n";
  return out;
}

}  // namespace

TEST(Memory, JitTrainingIsFlat) {
  const auto [early, late] = train(true, 50, 500);
  EXPECT_EQ(late.buffers, early.buffers);
  EXPECT_EQ(late.bytes, early.bytes);
}

TEST(Memory, EagerTrainingIsFlat) {
  const auto [early, late] = train(false, 50, 500);
  EXPECT_EQ(late.buffers, early.buffers);
  EXPECT_EQ(late.bytes, early.bytes);
}

namespace {
bool on_cpu() { return default_device().rfind("CPU", 0) == 0; }
}  // namespace

// A large zeros().contiguous() is memory the CPU's allocator gives as zeros (fresh pages), with no
// kernel run; it is counted like any buffer, and written and read like one.
TEST(Memory, LargeZerosAreZeroedMemory) {
  const int64_t kernels = GlobalCounters::kernel_count;
  Live with_z;
  {
    Tensor z = Tensor::zeros({512, 1024}).contiguous().realize();  // 2 MiB
    if (on_cpu()) {
      EXPECT_EQ(GlobalCounters::kernel_count, kernels) << "no fill kernel ran";
    }
    with_z = live();
    z.narrow_assign(0, 3, Tensor::ones({2, 1024}));
    std::vector<float> v = z.to_vector<float>();
    for (int64_t i = 0; i < 512 * 1024; i += 997)
      ASSERT_EQ(v[i], i / 1024 == 3 || i / 1024 == 4 ? 1.0f : 0.0f) << i;
    Tensor ints = Tensor::zeros({1024, 1024}, kInt32).contiguous().realize();
    EXPECT_EQ(ints.abs().sum().item<int64_t>(), 0);
  }
  EXPECT_EQ(live().buffers, with_z.buffers - 1) << "counted like any buffer";
  EXPECT_EQ(live().bytes, with_z.bytes - 512 * 1024 * 4);
  // The block freed above went to the pool holding ones; zeros never come from the pool.
  Tensor again = Tensor::zeros({512, 1024}).contiguous().realize();
  EXPECT_EQ(again.abs().sum().item<float>(), 0.0f);
  // -0.0 is not zero bits: a fill, whose sign every element keeps.
  std::vector<float> neg = Tensor::full({512, 1024}, -0.0).contiguous().realize().to_vector<float>();
  for (int64_t i = 0; i < 512 * 1024; i += 1009) ASSERT_TRUE(std::signbit(neg[i])) << i;
}

// Under a Jit the fill is captured: each replay zeroes the buffer again before the step's write at
// a new row, so no earlier step's row is left in it.
TEST(Memory, ZerosInAJitStepAreZeroEveryReplay) {
  Variable row(0, kInt64);
  Jit step([&](const std::vector<Tensor>& in) {
    Tensor z = Tensor::zeros({512, 1024}).contiguous().realize();
    z.narrow_assign(0, row, in[0]);
    return std::vector<Tensor>{z.sum()};
  });
  for (int64_t call = 0; call < 6; call++) {
    row.set(static_cast<double>(call * 7));
    Tensor x = Tensor::full({1, 1024}, static_cast<float>(call + 1)).realize();
    EXPECT_EQ(step({x})[0].item<float>(), 1024.0f * static_cast<float>(call + 1)) << "call " << call;
  }
}

// memory_footprint (TinyTorch's): a tensor's bytes; a module's parameters, gradients, buffers and
// its optimizer's state, each counted as it comes to exist.
TEST(MemoryFootprint, ATensorIsItsElementsTimesTheirSize) {
  EXPECT_EQ(Tensor::zeros({3, 5}, kFloat32).memory_footprint(), 60);
  EXPECT_EQ(Tensor::zeros({7}, kFloat16).memory_footprint(), 14);
  EXPECT_EQ(Tensor::zeros({2, 2}, kFloat64).memory_footprint(), 32);
  EXPECT_EQ(Tensor::zeros({0, 4}, kFloat32).memory_footprint(), 0);
}

TEST(MemoryFootprint, AModelsParametersGradientsAndAdamsState) {
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(20, 30), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::BatchNorm1d>(30), std::make_shared<nn::Linear>(30, 4));
  const int64_t params = (20 * 30 + 30 + 30 + 30 + 30 * 4 + 4) * 4;  // weights, biases, BatchNorm's affine
  const int64_t buffers = (30 + 30) * 4 + 8;                         // running mean and var, an int64 count
  optim::Adam adam(model->parameters(), 1e-3);
  nn::MemoryFootprint f = model->memory_footprint(&adam);
  EXPECT_EQ(f.parameters, params);
  EXPECT_EQ(f.buffers, buffers);
  EXPECT_EQ(f.gradients, 0) << "no backward yet";
  EXPECT_EQ(f.optimizer_state, 0) << "Adam makes its state at its first step";

  Tensor x = Tensor::randn({8, 20});
  (*model)(x).square().mean().backward();
  adam.step();
  f = model->memory_footprint(&adam);
  EXPECT_EQ(f.gradients, params);
  EXPECT_EQ(f.optimizer_state, 2 * params) << "exp_avg and exp_avg_sq, one each per parameter";
  EXPECT_EQ(adam.memory_footprint(), 2 * params);
  EXPECT_EQ(f.total(), 4 * params + buffers);
  EXPECT_EQ(model->memory_footprint().optimizer_state, 0) << "without its optimizer a module has none";

  model->zero_grad();
  EXPECT_EQ(model->memory_footprint(&adam).gradients, 0);
}

TEST(MemoryFootprint, OnlyThisModulesShareOfTheOptimizersState) {
  auto a = std::make_shared<nn::Linear>(10, 10), b = std::make_shared<nn::Linear>(10, 2);
  std::vector<Tensor> both = a->parameters();
  for (const Tensor& p : b->parameters()) both.push_back(p);
  optim::SGD sgd(both, 0.1, /*momentum=*/0.9);
  (*b)((*a)(Tensor::randn({4, 10}))).sum().backward();
  sgd.step();
  EXPECT_EQ(a->memory_footprint(&sgd).optimizer_state, (100 + 10) * 4) << "one momentum buffer each";
  EXPECT_EQ(b->memory_footprint(&sgd).optimizer_state, (20 + 2) * 4);
  optim::SGD plain(b->parameters(), 0.1);
  (*b)(Tensor::randn({4, 10})).sum().backward();
  plain.step();
  EXPECT_EQ(b->memory_footprint(&plain).optimizer_state, 0) << "SGD without momentum keeps nothing";
  optim::Adam amsgrad(b->parameters(), 1e-3, {0.9, 0.999}, 1e-8, 0, /*amsgrad=*/true);
  (*b)(Tensor::randn({4, 10})).sum().backward();
  amsgrad.step();
  EXPECT_EQ(b->memory_footprint(&amsgrad).optimizer_state, 3 * (20 + 2) * 4) << "and the running maximum";
}

// docs/milestones.md quotes these for the Fashion-MNIST MLP (669,706 float32 parameters).
TEST(MemoryFootprint, TheMlpAfterOneAdamStep) {
  auto model =
      std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(784, 512), std::make_shared<nn::ReLU>(),
                                       std::make_shared<nn::Linear>(512, 512), std::make_shared<nn::ReLU>(),
                                       std::make_shared<nn::Linear>(512, 10));
  optim::Adam adam(model->parameters(), 1e-3);
  (*model)(Tensor::rand({8, 784})).cross_entropy(Tensor::zeros({8}, kInt64)).backward();
  adam.step();
  const nn::MemoryFootprint f = model->memory_footprint(&adam);
  EXPECT_EQ(f.parameters, 2'678'824);
  EXPECT_EQ(f.gradients, 2'678'824);
  EXPECT_EQ(f.optimizer_state, 5'357'648);
  EXPECT_EQ(f.buffers, 0);
}
