// `lazygrad bench`: what this machine does with lazygrad, in a minute: the roofline's ceilings
// (measured), one training step profiled per layer, and the step's speed run fused and replayed by
// the Jit. The comparisons with peers (OpenBLAS, PyTorch) are the programs under bench/
// (docs/benchmarks.md); this command needs no data set and no peer.
#include <lazygrad/lazygrad.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "command.h"
#include "option_values.h"
#include "train_step.h"

namespace lazygrad::cli {

namespace {

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// Seconds per step over `steps` steps, after `warmup` (compiling, and the Jit's capture).
double seconds_per_step(TrainStep& step, const Tensor& images, const Tensor& labels, int64_t steps) {
  for (int i = 0; i < 3; i++) step(images, labels).item<float>();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; i++) step(images, labels).item<float>();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(steps);
}

}  // namespace

int cmd_bench(const Args& args) {
  Options opts = parse_options(args, {"--model", "--batch-size", "--steps"});
  no_positionals(opts);
  const std::string model = parse_choice("--model", opts.get("--model").value_or("mlp"), {"mlp", "cnn"});
  const int64_t batch = parse_int("--batch-size", opts.get("--batch-size").value_or("128"), 1);
  const int64_t steps = parse_int("--steps", opts.get("--steps").value_or("20"), 1);

  std::cout << "machine: " << cpu_model_name() << ", " << settings().threads << " threads; device "
            << default_device() << "; CPU kernels by " << cpu_kernel_compiler() << "\n";
  Tensor::manual_seed(0);
  const Tensor images = Tensor::randint(0, 256, {batch, 28, 28}, kUInt8).realize();
  const Tensor labels = Tensor::randint(0, 10, {batch}).realize();
  {
    TrainStep step(make_model(model), 1e-3, false);
    step(images, labels).item<float>();
    const Profile p = profile([&] { step(images, labels).item<float>(); }, &step.model());
    std::cout << "\none training step of the " << model << ", batch " << batch << " (Adam), profiled:\n"
              << p.table();
  }
  std::printf("\n%-8s %10s %12s\n", "step", "ms/step", "items/s");
  for (bool jit : {false, true}) {
    TrainStep step(make_model(model), 1e-3, jit);
    const double s = seconds_per_step(step, images, labels, steps);
    std::printf("%-8s %10.3f %12.0f\n", jit ? "Jit" : "fused", s * 1e3, static_cast<double>(batch) / s);
  }
  return 0;
}

}  // namespace lazygrad::cli
