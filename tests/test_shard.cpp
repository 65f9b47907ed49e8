// Sharded tensors (Tensor::shard, multi/shard.h): which device holds which rows, ops on sharded
// values against the same ops on one device (elementwise, reductions along and across the split,
// matmuls split along either axis, movement ops that keep or break the split), gradients, the MLP's
// training step sharded over 2 and 4 virtual CPU devices and CPU + CL against one device, and errors.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <memory>
#include <string>
#include <vector>

#include "../models/mlp.h"
#include "lazygrad/counters.h"
#include "training_run.h"

using namespace lazygrad;

namespace {

const std::vector<std::string> kTwo{"CPU", "CPU:1"};
const std::vector<std::string> kThree{"CPU", "CPU:1", "CPU:2"};
const std::vector<std::string> kFour{"CPU", "CPU:1", "CPU:2", "CPU:3"};

Tensor sample(const Shape& shape, uint64_t seed) {
  Tensor::manual_seed(seed);
  return Tensor::randn(shape).realize();
}

// got (sharded or not) equals want (on one device) exactly.
void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); i++) ASSERT_EQ(g[i], w[i]) << what << ", element " << i;
}

// Sums over the split axis add the devices' partial sums: another order than one device's.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(got.to("CPU").allclose(want, 1e-5, 1e-5))
      << what << ": max difference " << (got.to("CPU") - want).abs().max().item<float>();
}

bool have_cl() {
  for (const DeviceInfo& d : devices())
    if (d.name == "CL" && d.available) return true;
  return false;
}

}  // namespace

TEST(Shard, EachDeviceHoldsItsRows) {
  Tensor x = Tensor::arange(21, kFloat32).reshape({7, 3});
  Tensor s = x.shard(kThree, 0);
  EXPECT_EQ(s.device(), "CPU,CPU:1,CPU:2");
  EXPECT_EQ(s.devices(), kThree);
  EXPECT_TRUE(s.is_sharded());
  EXPECT_FALSE(x.is_sharded());
  EXPECT_EQ(s.shape(), (Shape{7, 3}));
  // 7 rows on 3 devices: 3, 2 and 2 (the first 7 % 3 devices one more).
  std::vector<Tensor> parts = s.shards();
  ASSERT_EQ(parts.size(), 3u);
  const std::vector<std::pair<int64_t, int64_t>> rows{{0, 3}, {3, 5}, {5, 7}};
  for (size_t i = 0; i < 3; i++) {
    EXPECT_EQ(parts[i].device(), kThree[i]);
    expect_equal(parts[i], x.narrow(0, rows[i].first, rows[i].second - rows[i].first),
                 "part " + std::to_string(i));
  }
  expect_equal(s, x, "gathered");
  expect_equal(s.to("CPU:2"), x, "gathered on CPU:2");
  EXPECT_EQ(s.to("CPU:2").device(), "CPU:2");
  // Replicated: the whole value on each device.
  Tensor r = x.shard(kTwo);
  for (const Tensor& p : r.shards()) expect_equal(p, x, "replica on " + p.device());
  // Along the last axis.
  Tensor c = x.shard(kTwo, -1);
  EXPECT_EQ(c.shards()[0].shape(), (Shape{7, 2}));
  EXPECT_EQ(c.shards()[1].shape(), (Shape{7, 1}));
  expect_equal(c, x, "split along the columns");
  // to(tuple) is shard(tuple), replicated; a factory on a tuple is replicated too.
  EXPECT_EQ(x.to("CPU,CPU:1").device(), "CPU,CPU:1");
  Tensor z = Tensor::zeros({2, 2}, kFloat32, "CPU,CPU:1");
  EXPECT_EQ(z.device(), "CPU,CPU:1");
  expect_equal(z + 1, Tensor::ones({2, 2}), "replicated constant");
}

TEST(Shard, ElementwiseRunsOnEachDevice) {
  Tensor a = sample({6, 5}, 1), b = sample({6, 5}, 2);
  Tensor want = (a * b + 1).exp2() / (b.abs() + 2);
  Tensor sa = a.shard(kTwo, 0), sb = b.shard(kTwo, 0);
  realize({sa, sb});
  GlobalCounters::reset();
  Tensor got = ((sa * sb + 1).exp2() / (sb.abs() + 2)).realize();
  EXPECT_EQ(GlobalCounters::kernel_count, 2) << "one fused kernel per device, no copies";
  expect_equal(got, want, "split along rows");
  // Split along different axes, replicated, and a scalar: aligned to the first split operand.
  expect_equal(a.shard(kTwo, 0) + b.shard(kTwo, 1), a + b, "rows + columns");
  expect_equal(a.shard(kThree, 1) * b.shard(kThree), a * b, "columns * replicated");
  expect_equal(a.shard(kTwo, 0) * 0.5f - 1, a * 0.5f - 1, "with a scalar");
  expect_equal(a.shard(kTwo, 0).where(a.shard(kTwo, 0) > 0, b.shard(kTwo, 1)), a.where(a > 0, b), "where");
}

TEST(Shard, ReductionsAlongAndAcrossTheSplit) {
  Tensor x = sample({7, 6}, 3);
  for (const auto& devs : {kTwo, kThree}) {
    const std::string n = std::to_string(devs.size()) + " devices";
    Tensor s = x.shard(devs, 0);
    expect_equal(s.sum(1), x.sum(1), "sum along another axis, " + n);
    expect_close(s.sum(0), x.sum(0), "sum across the split, " + n);
    expect_close(s.sum(), x.sum(), "sum of all, " + n);
    expect_equal(s.max(0), x.max(0), "max across the split, " + n);
    expect_close(s.mean(0, true), x.mean(0, true), "mean across the split, " + n);
    // A sum across the split ends replicated: each device holds the whole result.
    for (const Tensor& p : s.sum(0).shards()) EXPECT_EQ(p.shape(), (Shape{6}));
  }
  Tensor i = Tensor::arange(12, kInt32).reshape({4, 3});
  expect_equal(i.shard(kTwo, 0).prod(0).to(kFloat32), i.prod(0).to(kFloat32), "int product across the split");
}

TEST(Shard, MatmulSplitAlongEitherAxis) {
  Tensor a = sample({9, 8}, 4), b = sample({8, 5}, 5);
  Tensor want = a.matmul(b);
  expect_close(a.shard(kTwo, 0).matmul(b.shard(kTwo)), want, "rows of a");
  expect_close(a.shard(kTwo).matmul(b.shard(kTwo, 1)), want, "columns of b");
  expect_close(a.shard(kTwo, 1).matmul(b.shard(kTwo, 0)), want, "the contraction (an all-reduce)");
  expect_close(a.shard(kFour, 0).matmul(b.shard(kFour, 0)), want, "rows of a and of b, 4 devices");
}

TEST(Shard, MovementOpsKeepOrMoveRows) {
  Tensor x = sample({6, 4}, 6);
  for (const auto& devs : {kTwo, kFour}) {
    const std::string n = std::to_string(devs.size()) + " devices";
    Tensor s = x.shard(devs, 0);
    expect_equal(s.reshape({24}), x.reshape({24}), "reshape that keeps the split, " + n);
    expect_equal(s.reshape({4, 6}), x.reshape({4, 6}), "reshape that crosses the parts, " + n);
    expect_equal(s.reshape({2, 3, 4}), x.reshape({2, 3, 4}), "reshape splitting the rows, " + n);
    expect_equal(s.permute({1, 0}), x.permute({1, 0}), "permute, " + n);
    expect_equal(s.narrow(0, 1, 4), x.narrow(0, 1, 4), "shrink across parts, " + n);
    expect_equal(s.narrow(1, 1, 2), x.narrow(1, 1, 2), "shrink along another axis, " + n);
    expect_equal(s.pad({1, 2, 3, 1}), x.pad({1, 2, 3, 1}), "pad of both axes, " + n);
    expect_equal(s.flip({0}), x.flip({0}), "flip of the split axis, " + n);
    expect_equal(s.unsqueeze(1).expand({6, 3, 4}), x.unsqueeze(1).expand({6, 3, 4}), "expand, " + n);
    expect_equal(s.contiguous().t().contiguous() * 2, x.t() * 2, "transpose, " + n);
  }
  // A reshape that crosses the parts moves rows: the sum of the result is still exact per row.
  Tensor s = x.shard(kTwo, 0).reshape({3, 8});
  expect_equal(s.sum(1), x.reshape({3, 8}).sum(1), "reshape then sum along the new rows");
}

TEST(Shard, GradientsFlowBackToTheUnshardedTensor) {
  Tensor x = sample({6, 4}, 7).requires_grad(true), w = sample({4, 3}, 8).requires_grad(true);
  Tensor ref_loss = (x.matmul(w).relu() * 2).sum();
  ref_loss.backward();
  Tensor gx = x.grad().realize(), gw = w.grad().realize();
  x.zero_grad();
  w.zero_grad();
  Tensor loss = (x.shard(kThree, 0).matmul(w.shard(kThree)).relu() * 2).sum();
  loss.backward();
  EXPECT_EQ(x.grad().device(), "CPU");
  expect_close(loss, ref_loss, "loss");
  expect_equal(x.grad(), gx, "gradient of the split input");
  expect_close(w.grad(), gw, "gradient of the replicated weight");
}

namespace {

using test::expect_same_run;
using test::TrainingRun;

// The MLP trained with Adam on one device, or with its parameters replicated (shard_) and each
// batch split along its rows across `devices`.
TrainingRun train(const std::vector<std::string>& devices, bool jit = false) {
  const std::vector<std::pair<Tensor, Tensor>> batches = test::training_batches();
  Tensor::manual_seed(0);
  models::MLP model;
  if (!devices.empty())
    for (Tensor& p : model.parameters()) p.shard_(devices);
  optim::Adam opt(model.parameters(), 1e-3);
  auto step = [&](Tensor x, Tensor y) {
    if (!devices.empty()) {
      x = x.shard(devices, 0);
      y = y.shard(devices, 0);
    }
    Tensor loss = model(x).cross_entropy(y);
    loss.backward();
    std::vector<Tensor> targets{loss};
    for (const Tensor& t : opt.schedule_step()) targets.push_back(t);
    opt.zero_grad();
    realize(targets);
    return loss;
  };
  Jit jitted([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{step(in[0], in[1])}; });
  TrainingRun r;
  for (const auto& [x, y] : batches) r.losses.push_back((jit ? jitted({x, y})[0] : step(x, y)).item<float>());
  if (jit) {
    EXPECT_GT(jitted.captured_kernels(), 0u) << "the Jit captured the sharded step";
  }
  for (const Tensor& p : model.parameters()) {
    r.params.push_back(p.to("CPU").realize());
    if (p.is_sharded()) {  // every device holds the same values, bit for bit
      std::vector<Tensor> parts = p.shards();
      for (size_t i = 1; i < parts.size(); i++)
        EXPECT_TRUE(parts[i].to("CPU").eq(parts[0].to("CPU")).all().item<bool>()) << "replica " << i;
    }
  }
  return r;
}

}  // namespace

TEST(Shard, MlpTrainingStepEqualsOneDevice) {
  const TrainingRun want = train({});
  expect_same_run(train(kTwo), want, "2 devices");
  expect_same_run(train(kFour), want, "4 devices");
}

TEST(Shard, TheJitReplaysTheShardedStep) {
  expect_same_run(train(kTwo, true), train({}), "2 devices under the Jit");
}

TEST(Shard, MlpTrainingStepOnCpuAndOpenCl) {
  if (!have_cl()) GTEST_SKIP() << "no OpenCL device";
  expect_same_run(train({"CPU", "CL"}), train({}), "CPU + CL");
}

TEST(Shard, TheJitTakesShardedInputs) {
  Tensor w = sample({4, 3}, 10).shard(kTwo).realize();
  Jit step([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].matmul(w).relu().sum(0)}; });
  for (uint64_t seed = 11; seed < 15; seed++) {  // capture, then replays with new parts swapped in
    Tensor x = sample({6, 4}, seed);
    Tensor got = step({x.shard(kTwo, 0)})[0];
    EXPECT_EQ(got.device(), "CPU,CPU:1");
    expect_close(got, x.matmul(w.to("CPU")).relu().sum(0), "call " + std::to_string(seed - 10));
  }
  EXPECT_GT(step.captured_kernels(), 0u);
  // The captured kernels are for rows split across these devices: another split is an Error.
  try {
    step({sample({6, 4}, 15).shard(kTwo, 1)});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("split along axis 0"), std::string::npos) << e.what();
  }
}

TEST(Shard, AModuleMovedToATupleIsReplicated) {
  Tensor::manual_seed(0);
  models::MLP model;
  Tensor x = sample({5, 784}, 9);
  Tensor want = model(x).realize();
  model.to("CPU,CPU:1");
  for (const Tensor& p : model.parameters()) EXPECT_EQ(p.device(), "CPU,CPU:1");
  expect_close(model(x.shard(kTwo, 0)), want, "the forward pass with the batch split");
}

TEST(Shard, ErrorsNameTheShapesAndDevices) {
  Tensor x = Tensor::ones({2, 3});
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message([&] { x.shard(kThree, 0); }).find("has 2 rows, fewer than the 3 devices"),
            std::string::npos);
  EXPECT_NE(message([&] { x.shard({"CPU", "cpu:0"}); }).find("listed twice"), std::string::npos);
  EXPECT_NE(message([&] { x.shard({"CPU", "NOPE"}); }), "no error");
  Tensor s = x.shard(kTwo, 1);
  EXPECT_NE(message([&] {
              (s + Tensor::ones({2, 3}, kFloat32, "CPU:1").contiguous().realize()).realize();
            }).find("same device"),
            std::string::npos);
  EXPECT_NE(message([&] { (s + x.shard(kThree, 1)).realize(); }), "no error");
}
