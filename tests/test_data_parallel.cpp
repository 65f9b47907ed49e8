// DataParallel (lazygrad/multi.h): the MLP's training step with the batch split across devices and
// the gradients all-reduced equals the step on one device with the whole batch, over 10 Adam
// steps, on 2 and 4 virtual CPU devices and on CPU + CL (where OpenCL is found); and the Jit
// captures and replays the multi-device step.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <memory>
#include <string>
#include <vector>

#include "../models/mlp.h"
#include "training_run.h"

using namespace lazygrad;

namespace {

using test::expect_same_run;
using test::TrainingRun;

std::shared_ptr<nn::Module> make_mlp() { return std::make_shared<models::MLP>(); }

std::vector<std::pair<Tensor, Tensor>> batches() { return test::training_batches(); }

TrainingRun one_device() {
  Tensor::manual_seed(0);
  auto model = make_mlp();
  optim::Adam opt(model->parameters(), 1e-3);
  TrainingRun r;
  for (const auto& [x, y] : batches()) {
    Tensor loss = (*model)(x).cross_entropy(y);
    loss.backward();
    opt.step({loss});
    opt.zero_grad();
    r.losses.push_back(loss.item<float>());
  }
  for (const Tensor& p : model->parameters()) r.params.push_back(p.to("CPU").realize());
  return r;
}

// One data-parallel step: every replica's loss and backward, the all-reduce, every optimizer's
// update, realized as one schedule; returns the whole batch's loss (on the first device).
Tensor dp_step(const DataParallel& dp, std::vector<std::unique_ptr<optim::Adam>>& opts, const Tensor& x,
               const Tensor& y) {
  Tensor total = dp.backward(
      x, y, [](nn::Module& m, const Tensor& xs, const Tensor& ys) { return m(xs).cross_entropy(ys); });
  std::vector<Tensor> targets{total};
  for (auto& opt : opts) {
    for (const Tensor& t : opt->schedule_step()) targets.push_back(t);
    opt->zero_grad();
  }
  realize(targets);
  return total;
}

TrainingRun data_parallel(const std::vector<std::string>& devices, bool jit) {
  Tensor::manual_seed(0);  // the first replica is made first: one device's initial values
  DataParallel dp(make_mlp, devices);
  std::vector<std::unique_ptr<optim::Adam>> opts;
  for (size_t i = 0; i < dp.size(); i++)
    opts.push_back(std::make_unique<optim::Adam>(dp.replica(i).parameters(), 1e-3));
  Jit step(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{dp_step(dp, opts, in[0], in[1])}; });
  TrainingRun r;
  for (const auto& [x, y] : batches())
    r.losses.push_back((jit ? step({x, y})[0] : dp_step(dp, opts, x, y)).item<float>());
  if (jit) {
    EXPECT_GT(step.captured_kernels(), 0u) << "the Jit captured the multi-device step";
  }
  for (size_t i = 0; i < dp.size(); i++) {
    const std::vector<Tensor> params = dp.replica(i).parameters();
    for (size_t j = 0; j < params.size(); j++) {
      Tensor p = params[j].to("CPU").realize();
      if (i == 0) {
        r.params.push_back(p);
      } else {  // every replica holds the same values, bit for bit
        EXPECT_TRUE(p.eq(r.params[j]).all().item<bool>()) << "replica " << i << " parameter " << j;
      }
    }
  }
  return r;
}

}  // namespace

TEST(DataParallel, TwoAndFourCpuDevicesTrainAsOne) {
  const TrainingRun want = one_device();
  expect_same_run(data_parallel({"CPU", "CPU:1"}, false), want, "2 devices");
  expect_same_run(data_parallel({"CPU", "CPU:1", "CPU:2", "CPU:3"}, false), want, "4 devices");
}

TEST(DataParallel, TheJitReplaysTheMultiDeviceStep) {
  expect_same_run(data_parallel({"CPU", "CPU:1"}, true), one_device(), "2 devices under the Jit");
}

TEST(DataParallel, CpuAndOpenCl) {
  bool have_cl = false;
  for (const DeviceInfo& d : devices()) have_cl |= d.name == "CL" && d.available;
  if (!have_cl) GTEST_SKIP() << "no OpenCL device";
  expect_same_run(data_parallel({"CPU", "CL"}, false), one_device(), "CPU + CL");
}

TEST(DataParallel, BadSetupsAreErrors) {
  EXPECT_THROW(DataParallel(make_mlp, {}), Error);
  EXPECT_THROW(DataParallel(make_mlp, {"CPU", "cpu:0"}), Error);
  DataParallel dp(make_mlp, {"CPU", "CPU:1", "CPU:2"});
  try {
    dp.scatter(Tensor::ones({2, 784}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 rows cannot be split across 3 devices"), std::string::npos)
        << e.what();
  }
  Tensor p = Tensor::ones({3}).requires_grad(true);
  EXPECT_THROW(p.set_grad(Tensor::ones({4})), Error);
  EXPECT_THROW(p.set_grad(Tensor::ones({3}, kFloat32, "CPU:1")), Error);
}
