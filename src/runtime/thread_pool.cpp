#include "runtime/thread_pool.h"

#include <chrono>
#include <stdexcept>

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

namespace {

constexpr uint64_t kChunkMask = 0xffff;

uint64_t pack(uint32_t generation, int total, int next) {
  return uint64_t(generation) << 32 | uint64_t(total) << 16 | uint64_t(next);
}

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int threads, bool flush_denormals) : flush_denormals_(flush_denormals) {
  for (int i = 1; i < threads; i++) workers_.emplace_back([this] { loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::take_chunks(uint32_t generation) {
  uint64_t w = work_.load(std::memory_order_acquire);
  while (true) {
    const int total = static_cast<int>(w >> 16 & kChunkMask), next = static_cast<int>(w & kChunkMask);
    if (static_cast<uint32_t>(w >> 32) != generation || next >= total) return;
    // Acquire: the job this generation published comes with its chunk.
    if (!work_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      continue;
    (*job_)(next);
    // Release: the chunk's writes are seen by the caller that sees it finished.
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == total) finished_.notify_one();
    w = work_.load(std::memory_order_acquire);
  }
}

void ThreadPool::loop() {
  DenormalGuard guard(flush_denormals_);  // the runtime's own threads only
  uint32_t seen = 0;
  while (true) {
    // Watch for the next job, then sleep until one is published. sleeping_ is counted before the
    // generation is checked again, so a job published meanwhile is either seen here or woken for.
    auto until = std::chrono::steady_clock::now() + kSpin;
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen; i++, g = generation_.load(std::memory_order_acquire)) {
      relax();
      if (i % 64 == 63 && std::chrono::steady_clock::now() > until) {
        sleeping_.fetch_add(1);
        generation_.wait(seen);
        sleeping_.fetch_sub(1);
      }
    }
    seen = g;
    if (stop_.load()) return;
    take_chunks(seen);
  }
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (n > static_cast<int>(kChunkMask))
    throw std::invalid_argument("ThreadPool::run: more than 65535 chunks");
  std::lock_guard<std::mutex> lock(running_);
  job_ = &fn;
  finished_.store(0, std::memory_order_relaxed);
  const uint32_t g = generation_.load(std::memory_order_relaxed) + 1;
  work_.store(pack(g, n, 0), std::memory_order_release);
  generation_.store(g);
  if (sleeping_.load() > 0) generation_.notify_all();
  {
    DenormalGuard guard(flush_denormals_);  // the caller's mode restored after its chunks
    take_chunks(g);
  }
  // The chunks the workers took: wait for them, watching a moment before sleeping.
  auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0, f; (f = finished_.load(std::memory_order_acquire)) != n; i++) {
    relax();
    if (i % 64 == 63 && std::chrono::steady_clock::now() > until)
      finished_.wait(f, std::memory_order_acquire);
  }
  job_ = nullptr;
}

}  // namespace lazygrad
