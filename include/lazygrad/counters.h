// GlobalCounters: what the runtime did, for tests and tools (tinygrad has the same).
#pragma once

#include <atomic>
#include <cstdint>

namespace lazygrad {

struct GlobalCounters {
  static inline int64_t kernel_count = 0;   // kernels launched
  static inline int64_t compile_count = 0;  // compiler processes run (disk-cache misses)
  static inline int64_t cache_hits = 0;     // kernels loaded from the disk cache
  static inline int64_t global_ops = 0;     // FLOPs of the kernels launched
  static inline int64_t global_mem = 0;     // bytes read and written by the kernels launched
  static inline double time_sum_s = 0;      // seconds spent running kernels
  static inline double compile_s = 0;       // seconds spent in the compiler
  static inline int64_t beam_searches = 0;  // BEAM searches run (not answered by the disk cache)
  // What is alive now, not what ran, so reset() leaves them (as tinygrad's). Atomic: a buffer's
  // last reference can drop on any thread. Buffers over a mapped file count in buffers_live only.
  static inline std::atomic<int64_t> mem_used = 0;      // bytes of the live buffers' memory
  static inline std::atomic<int64_t> buffers_live = 0;  // buffers whose memory is allocated
  static void reset() {
    kernel_count = compile_count = cache_hits = global_ops = global_mem = beam_searches = 0;
    time_sum_s = compile_s = 0;
  }
};

}  // namespace lazygrad
