// What a realize did, for whoever listens: the profiler (lazygrad/profile.h) and VIZ=1
// (engine/viz.cpp). While nobody listens nothing is recorded, so a normal run pays one check.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/uop.h"

namespace lazygrad {

struct TracedKernel {
  std::string name, device, source;  // source: the generated code (empty for a copy)
  bool copy = false;
  int64_t global_size = 0, flops = 0, bytes = 0;  // flops and bytes as the launch counted them
  double seconds = 0;                             // the launch (0 when it was not launched)
  std::vector<UOpPtr> nodes;   // the tensor-level nodes it computes, sources first, its result last
  std::vector<UOpPtr> inputs;  // what it reads from memory: buffers, other kernels' results
};

struct RealizeTrace {
  std::vector<TracedKernel> kernels;  // in the order they ran
  double seconds = 0;                 // the whole realize: schedule, compile, run
};

// Calls `fn` after each realize (on the thread that realized) while this object lives.
class RealizeListener {
 public:
  explicit RealizeListener(std::function<void(const RealizeTrace&)> fn);
  ~RealizeListener();
  RealizeListener(const RealizeListener&) = delete;
  RealizeListener& operator=(const RealizeListener&) = delete;

 private:
  std::function<void(const RealizeTrace&)> fn_;
};

bool realize_traced();                    // someone listens, or VIZ=1
void publish(const RealizeTrace& trace);  // to every listener, then to VIZ

// The FLOPs a tensor-level node costs per its definition (an ALU op: one per element; a
// reduction: one per element reduced); movement and memory ops, and ops on scalars, cost none.
int64_t node_flops(const UOp& u);

}  // namespace lazygrad
