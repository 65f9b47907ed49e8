#include "runtime/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace lazygrad {

DenormalGuard::DenormalGuard(bool enable) {
#if defined(__x86_64__) || defined(__i386__)
  if (!enable) return;
  saved_ = _mm_getcsr();
  _mm_setcsr(saved_ | 0x8040);  // FTZ (bit 15) and DAZ (bit 6)
  active_ = true;
#else
  (void)enable;
#endif
}

DenormalGuard::~DenormalGuard() {
#if defined(__x86_64__) || defined(__i386__)
  if (active_) _mm_setcsr(saved_);
#endif
}

ThreadPool::ThreadPool(int threads, bool flush_denormals) {
  for (int i = 0; i < threads; i++) workers_.emplace_back([this, flush_denormals] { loop(flush_denormals); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::loop(bool flush_denormals) {
  DenormalGuard guard(flush_denormals);  // the runtime's own threads only
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    while (next_ < total_) {
      int i = next_++;
      const auto* job = job_;
      lock.unlock();
      (*job)(i);
      lock.lock();
      if (++finished_ == total_) done_.notify_all();
    }
  }
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  next_ = 0;
  total_ = n;
  finished_ = 0;
  generation_++;
  wake_.notify_all();
  done_.wait(lock, [&] { return finished_ == total_; });
  job_ = nullptr;
}

}  // namespace lazygrad
