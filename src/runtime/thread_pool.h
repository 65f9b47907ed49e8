// A fixed pool of worker threads that run the chunks of a kernel's outer range.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lazygrad {

// `threads` threads run a job's chunks: the caller of run() and threads - 1 workers. A worker that
// finished a job watches for the next one for a moment (kSpin) before it sleeps: a GPT-2 decode
// step is about 200 kernels of 5-500 us, and waking a sleeping thread cost 28-78 us a kernel on
// the 2-vCPU VMs (a condition variable's futex, then the scheduler), a third of the step.
class ThreadPool {
 public:
  ThreadPool(int threads, bool flush_denormals);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  // The threads that run a job, the caller included.
  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(0..n-1), each once, on the caller and the workers, and returns when all have. Calls
  // from several threads take turns.
  void run(int n, const std::function<void(int)>& fn);

  // How long a worker watches for the next job before it sleeps.
  static constexpr std::chrono::microseconds kSpin{200};

 private:
  void loop();
  // Takes and runs chunks of the job published as `generation` until none is left.
  void take_chunks(uint32_t generation);

  std::vector<std::thread> workers_;
  const bool flush_denormals_;
  std::mutex running_;  // one job at a time
  // The job: its generation (32 bits), chunk count and next chunk (16 bits each) in one word, so a
  // worker late for one job cannot take a chunk of the next one with the old count.
  std::atomic<uint64_t> work_{0};
  std::atomic<uint32_t> generation_{0};  // what sleeping workers wait on
  std::atomic<int> sleeping_{0}, finished_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* job_ = nullptr;  // set before its generation is published
};

// Sets FTZ/DAZ on the calling thread while alive and restores the previous mode after.
class DenormalGuard {
 public:
  explicit DenormalGuard(bool enable);
  ~DenormalGuard();

 private:
  unsigned saved_ = 0;
  bool active_ = false;
};

}  // namespace lazygrad
