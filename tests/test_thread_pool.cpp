// The CPU runtime's thread pool: every chunk once, its writes seen by the caller, jobs published
// to spinning and to sleeping workers, several callers, and the denormal mode of the threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

using namespace lazygrad;

namespace {

// Runs n chunks that each count themselves; true when each ran exactly once.
bool each_chunk_once(ThreadPool& pool, int n) {
  std::vector<std::atomic<int>> ran(static_cast<size_t>(n));
  pool.run(n, [&](int i) { ran[static_cast<size_t>(i)].fetch_add(1); });
  for (auto& r : ran)
    if (r.load() != 1) return false;
  return true;
}

}  // namespace

TEST(ThreadPool, EveryChunkRunsOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads, false);
    EXPECT_EQ(pool.size(), threads);
    for (int n : {1, 2, 3, 7, 100})
      for (int rep = 0; rep < 200; rep++) ASSERT_TRUE(each_chunk_once(pool, n)) << threads << " " << n;
  }
}

TEST(ThreadPool, NoChunksIsNothing) {
  ThreadPool pool(2, false);
  bool ran = false;
  pool.run(0, [&](int) { ran = true; });
  EXPECT_FALSE(ran);
}

// The chunks' plain writes are the caller's to read when run returns.
TEST(ThreadPool, ChunkWritesAreSeenAfterRun) {
  ThreadPool pool(3, false);
  std::vector<int64_t> out(3000);
  for (int rep = 0; rep < 500; rep++) {
    pool.run(3, [&](int c) {
      for (size_t i = static_cast<size_t>(c) * 1000; i < static_cast<size_t>(c + 1) * 1000; i++)
        out[i] = static_cast<int64_t>(i) * rep;
    });
    for (size_t i = 0; i < out.size(); i += 999) ASSERT_EQ(out[i], static_cast<int64_t>(i) * rep);
  }
}

// A job published after the workers went to sleep (past kSpin) wakes them; none is lost.
TEST(ThreadPool, JobsReachSleepingWorkers) {
  ThreadPool pool(2, false);
  for (int rep = 0; rep < 20; rep++) {
    std::this_thread::sleep_for(ThreadPool::kSpin * 3);
    std::atomic<int> on_others{0};
    const auto caller = std::this_thread::get_id();
    // Chunks long enough that the woken worker takes some of them.
    pool.run(64, [&](int) {
      if (std::this_thread::get_id() != caller) on_others.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
    if (on_others.load() > 0) return;
  }
  FAIL() << "the worker never took a chunk of a job published while it slept";
}

TEST(ThreadPool, CallersFromSeveralThreadsTakeTurns) {
  ThreadPool pool(2, false);
  std::atomic<int> bad{0};
  auto caller = [&] {
    for (int rep = 0; rep < 500; rep++)
      if (!each_chunk_once(pool, 5)) bad.fetch_add(1);
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(ThreadPool, TooManyChunksIsAnError) {
  ThreadPool pool(2, false);
  EXPECT_THROW(pool.run(70000, [](int) {}), std::invalid_argument);
  EXPECT_TRUE(each_chunk_once(pool, 4));  // and the pool still works
}

#if defined(__x86_64__) || defined(__i386__)
// FTZ and DAZ are on in every chunk, the caller's included, when the pool flushes denormals, and
// off when it does not; the caller's own mode is back after run.
TEST(ThreadPool, DenormalModeOfEveryChunk) {
  constexpr unsigned kFtzDaz = 0x8040;
  const unsigned before = _mm_getcsr();
  for (bool flush : {true, false}) {
    ThreadPool pool(2, flush);
    std::vector<unsigned> modes(16);
    pool.run(16, [&](int i) {
      modes[static_cast<size_t>(i)] = _mm_getcsr() & kFtzDaz;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
    for (unsigned m : modes) EXPECT_EQ(m, flush ? kFtzDaz : 0u) << flush;
    EXPECT_EQ(_mm_getcsr(), before);
  }
}
#endif
