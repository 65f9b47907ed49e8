// Jit (tinygrad's TinyJit): the second call of a step function is captured as the list of kernels
// it launched; later calls replay that list on the new inputs' buffers, with no scheduling, no code
// generation and no compiler. Values that change between steps must be Variables (learning rates),
// random draws (their counters move on) or input tensors; everything else is baked in.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "lazygrad/tensor.h"

namespace lazygrad {

class Jit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit Jit(Fn fn);

  // Calls fn, or replays it from the third call on. Inputs must keep their shapes and dtypes; the
  // returned tensors are the captured output buffers, overwritten by the next call (copy what you keep).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  // Called by code that keeps host-side state for its kernels (an optimizer's step count and bias
  // corrections, set into Variables): while a Jit captures, `hook` is recorded and runs again before
  // every replay, in order; outside a capture this does nothing.
  static void on_replay(std::function<void()> hook);

  int calls() const;
  size_t captured_kernels() const;  // 0 until the second call
  void reset();                     // forget the capture: the next calls run fn again

  // The capture, read-only, for code that writes it out (export_webgpu); its type is internal
  // (src/engine/jit_capture.h). An Error before the second call.
  struct Captured;
  Captured captured() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace lazygrad
