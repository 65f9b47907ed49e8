#include "runtime/interrupt.h"

#include <signal.h>

#include <atomic>
#include <mutex>

#include "lazygrad/error.h"

namespace lazygrad {

namespace {

// Set by the handler, read by the runtime and by kernels on the pool's threads: a lock-free atomic
// (async-signal-safe), which kernels read through a `const volatile int*` as plain loads.
std::atomic<int> g_flag{0};
static_assert(std::atomic<int>::is_always_lock_free && sizeof(std::atomic<int>) == sizeof(int));

std::mutex g_mu;
int g_depth = 0;  // live scopes
bool g_installed = false;
struct sigaction g_previous;

extern "C" void on_sigint(int sig) {
  if (g_flag.load()) {  // the second Ctrl-C: to the previous handler, delivered when this one returns
    sigaction(SIGINT, &g_previous, nullptr);
    raise(sig);
    return;
  }
  g_flag.store(1);
}

}  // namespace

InterruptScope::InterruptScope() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_depth++ > 0) return;
  g_flag.store(0);
  struct sigaction previous;
  if (sigaction(SIGINT, nullptr, &previous) != 0 || previous.sa_handler == SIG_IGN) return;
  struct sigaction ours = {};
  ours.sa_handler = on_sigint;
  sigemptyset(&ours.sa_mask);
  ours.sa_flags = SA_RESTART;  // a read or wait the signal lands in goes on; the flag is read after
  g_previous = previous;
  g_installed = sigaction(SIGINT, &ours, nullptr) == 0;
}

InterruptScope::~InterruptScope() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (--g_depth > 0 || !g_installed) return;
  sigaction(SIGINT, &g_previous, nullptr);
  g_installed = false;
  // A Ctrl-C that came after the last check (or while an error of another kind unwound) was turned
  // into no InterruptedError: it goes where it would have gone without lazygrad.
  if (g_flag.exchange(0)) raise(SIGINT);
}

const volatile int* interrupt_flag() { return reinterpret_cast<const volatile int*>(&g_flag); }

bool interrupted() { return g_flag.load() != 0; }

void throw_interrupted(const std::string& where) {
  g_flag.store(0);
  throw InterruptedError("interrupted (Ctrl-C, SIGINT) " + where);
}

}  // namespace lazygrad
