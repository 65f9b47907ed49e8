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
