// The profiler: what a piece of work costs, layer by layer (TinyTorch's "systems from the first
// page"). profile(fn) runs fn once, tracing every realize in it, and charges each kernel to the
// layers whose graph nodes it computes, by their share of its FLOPs: a kernel fused across two
// layers (a Linear's bias add with the ReLU after it) is split between them and listed as shared.
// A layer's backward is charged to the layer, the optimizer's step to "optimizer". docs/profile.md
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace lazygrad::nn {
class Module;
}

namespace lazygrad {

// The ceilings of a roofline, measured on the device with lazygrad's own kernels (a 1024x1024
// float32 matrix product, and x + 1 over 64 MiB), best of three; measured once per process.
struct Roofline {
  std::string device;
  double gflops = 0;  // the compute ceiling, GFLOP/s
  double gbs = 0;     // the memory ceiling, GB/s
  // What a kernel of this arithmetic intensity (FLOPs per byte) can reach: min(gflops, intensity * gbs).
  double attainable_gflops(double intensity) const;
};
Roofline measure_roofline(const std::string& device = "");

struct LayerProfile {
  std::string name;        // the module's dotted name in the model ("features.0"), else its type
  std::string type;        // "Linear", or a scope's label ("optimizer", "loss")
  int64_t parameters = 0;  // elements of its own parameters
  double flops = 0;        // its share of the FLOPs of the kernels that computed its nodes
  double bytes = 0;        // likewise of the bytes they read and wrote
  double seconds = 0;      // likewise of their time
  int kernels = 0;         // launches that computed some of its nodes
  int shared_kernels = 0;  // of those, launches that computed other layers' nodes too
};

struct KernelProfile {
  std::string name, device;
  int64_t flops = 0, bytes = 0;
  double seconds = 0;
  std::vector<std::pair<std::string, double>> shares;  // layer name -> its share of this kernel
};

struct Profile {
  std::vector<LayerProfile> layers;    // in the order they first ran
  std::vector<KernelProfile> kernels;  // every launch, in order
  Roofline roofline;
  double seconds = 0;  // fn's whole time, compiling included
  // The report: a row per layer (parameters, FLOPs, bytes, kernels, time, GFLOP/s, the roofline's
  // attainable GFLOP/s at the layer's intensity and the share of it reached), the totals, and the
  // kernels that were shared between layers.
  std::string table() const;
};

// Runs fn once under the profiler. With `model`, layers are named by their place in it and their
// parameters are counted. Kernels replayed by a Jit are not seen (they are not realized again).
Profile profile(const std::function<void()>& fn, const nn::Module* model = nullptr);

// Runs fn once and writes one VIZ page (docs/viz.md) of every realize in it to `path`; throws
// naming the file when it cannot be written.
void write_viz(const std::function<void()>& fn, const std::string& path);

// Charges the graph nodes made while it lives (and their gradients) to a layer. nn's layers open
// one in forward(); a module of your own may too. Nested, the innermost wins. Costs one atomic load
// when no profile runs.
class ProfileScope {
 public:
  explicit ProfileScope(const nn::Module& module);
  explicit ProfileScope(const std::string& label);  // work that is not a module's: "optimizer"
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  uint32_t previous_ = 0;
  bool active_ = false;
};

}  // namespace lazygrad
