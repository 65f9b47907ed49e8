// The Fashion-MNIST MLP's training step (784-512-512-10, batch 128, Adam, under the Jit) on one
// device, data-parallel with replicas (DataParallel), and with sharded tensors (the parameters
// replicated by shard_, the batch split along its rows), on 2 and 4 virtual CPU devices. The
// reference is the one-device step in the same run. Virtual CPU devices share the machine's cores:
// this measures what the split costs on one machine, not a speed-up (docs/multi.md).
//
//   bench_data_parallel_step [--steps N]
#include <lazygrad/lazygrad.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "../models/mlp.h"
#include "bench_util.h"

using namespace lazygrad;

namespace {

constexpr int64_t kBatch = 128;

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::cerr << argv0 << ": " << why << "\n";
  std::cerr << "usage: " << argv0 << " [--steps N]\n";
  std::exit(why.empty() ? 0 : 2);
}

struct Timing {
  double ms_per_step = 0;
  double launches_per_step = 0;
  float last_loss = 0;
};

// Times `steps` calls of a captured step (after 3 that compile and capture it).
Timing time_steps(int64_t steps, const std::function<Tensor(const Tensor&, const Tensor&)>& step) {
  Tensor::manual_seed(3);
  Tensor x = Tensor::rand({kBatch, 784}).realize(), y = Tensor::randint(0, 10, {kBatch}).realize();
  Jit jit([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{step(in[0], in[1])}; });
  for (int i = 0; i < 3; i++) jit({x, y})[0].realize();
  Timing t;
  const int64_t launches0 = GlobalCounters::kernel_count;
  const double t0 = bench::now_s();
  Tensor loss;
  for (int64_t i = 0; i < steps; i++) loss = jit({x, y})[0];
  t.last_loss = loss.item<float>();
  t.ms_per_step = (bench::now_s() - t0) * 1e3 / static_cast<double>(steps);
  t.launches_per_step =
      static_cast<double>(GlobalCounters::kernel_count - launches0) / static_cast<double>(steps);
  return t;
}

Timing one_device_or_sharded(int64_t steps, const std::vector<std::string>& devices) {
  Tensor::manual_seed(0);
  models::MLP model;
  if (!devices.empty())
    for (Tensor& p : model.parameters()) p.shard_(devices);
  optim::Adam opt(model.parameters(), 1e-3);
  return time_steps(steps, [&](Tensor x, Tensor y) {
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
  });
}

Timing replicas(int64_t steps, const std::vector<std::string>& devices) {
  Tensor::manual_seed(0);
  DataParallel dp([] { return std::make_shared<models::MLP>(); }, devices);
  std::vector<std::unique_ptr<optim::Adam>> opts;
  for (size_t i = 0; i < dp.size(); i++)
    opts.push_back(std::make_unique<optim::Adam>(dp.replica(i).parameters(), 1e-3));
  return time_steps(steps, [&](const Tensor& x, const Tensor& y) {
    Tensor loss = dp.backward(
        x, y, [](nn::Module& m, const Tensor& xs, const Tensor& ys) { return m(xs).cross_entropy(ys); });
    std::vector<Tensor> targets{loss};
    for (auto& opt : opts) {
      for (const Tensor& t : opt->schedule_step()) targets.push_back(t);
      opt->zero_grad();
    }
    realize(targets);
    return loss;
  });
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 100;
  for (int i = 1; i < argc; i++) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--steps"});
    if (f.name == "--steps")
      steps = bench::int_flag(usage, argv[0], f.name, f.value);
    else
      usage(argv[0], "unknown argument '" + f.text + "'");
  }
  std::cout << "CPU: " << bench::cpu_model() << ", " << settings().threads << " threads; CPU kernels by "
            << cpu_kernel_compiler() << "\n"
            << "MLP 784-512-512-10, batch " << kBatch << ", Adam, under the Jit; " << steps
            << " timed steps\n"
            << "virtual CPU devices share this machine's cores: the ratio is the split's cost here\n\n";
  std::printf("%-34s %10s %14s %12s %12s\n", "variant", "ms/step", "launches/step", "vs 1 device",
              "last loss");
  const Timing base = one_device_or_sharded(steps, {});
  auto row = [&](const std::string& name, const Timing& t) {
    std::printf("%-34s %10.2f %14.0f %11.2fx %12.6f\n", name.c_str(), t.ms_per_step, t.launches_per_step,
                t.ms_per_step / base.ms_per_step, t.last_loss);
  };
  row("one device (CPU)", base);
  const std::vector<std::string> two{"CPU", "CPU:1"}, four{"CPU", "CPU:1", "CPU:2", "CPU:3"};
  row("replicas, CPU,CPU:1", replicas(steps, two));
  row("sharded, CPU,CPU:1", one_device_or_sharded(steps, two));
  row("replicas, CPU,CPU:1,CPU:2,CPU:3", replicas(steps, four));
  row("sharded, CPU,CPU:1,CPU:2,CPU:3", one_device_or_sharded(steps, four));
}
