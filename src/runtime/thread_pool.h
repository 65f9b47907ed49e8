// A fixed pool of worker threads that run the chunks of a kernel's outer range.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lazygrad {

class ThreadPool {
 public:
  explicit ThreadPool(int threads, bool flush_denormals);
  ~ThreadPool();
  int size() const { return static_cast<int>(workers_.size()); }
  // Runs fn(0..n-1) on the workers and waits for all of them.
  void run(int n, const std::function<void(int)>& fn);

 private:
  void loop(bool flush_denormals);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  int next_ = 0, total_ = 0, finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
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
