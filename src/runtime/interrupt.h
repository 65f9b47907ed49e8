// Ctrl-C during a computation. While lazygrad runs kernels (an InterruptScope lives), SIGINT sets a
// flag instead of ending the process: the runtime reads it before each kernel, and every long
// kernel reads it in its loops (about every 2^20 steps of work, see renderer/c_renderer.cpp) and
// returns early. The computation then ends with InterruptedError (KeyboardInterrupt in Python). A
// second Ctrl-C before that goes to the handler that was there before (the default ends the
// process), and so does one that came too late to be checked (the last scope delivers it as it ends).
// Outside a computation SIGINT does what it did before; a SIGINT the process ignores stays ignored.
#pragma once

#include <string>

namespace lazygrad {

class InterruptScope {
 public:
  InterruptScope();   // the first live scope (on any thread) installs the handler and clears the flag
  ~InterruptScope();  // the last one restores the previous handler (and raises a SIGINT left unchecked)
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// The flag kernels read: non-zero once SIGINT came during a computation.
const volatile int* interrupt_flag();
bool interrupted();
// Clears the flag and throws InterruptedError saying where the computation stopped ("before kernel
// E_3").
[[noreturn]] void throw_interrupted(const std::string& where);
inline void throw_if_interrupted(const std::string& where) {
  if (interrupted()) throw_interrupted(where);
}

}  // namespace lazygrad
