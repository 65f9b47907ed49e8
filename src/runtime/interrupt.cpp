#include "runtime/interrupt.h"

#include <signal.h>

#include <mutex>
#include <type_traits>

#include "lazygrad/error.h"

namespace lazygrad {

namespace {

// Kernels read the flag as `const volatile int*`.
static_assert(std::is_same_v<sig_atomic_t, int>);
volatile sig_atomic_t g_flag = 0;

std::mutex g_mu;
int g_depth = 0;  // live scopes
bool g_installed = false;
struct sigaction g_previous;

extern "C" void on_sigint(int sig) {
  if (g_flag) {  // the second Ctrl-C: to the previous handler, delivered when this one returns
    sigaction(SIGINT, &g_previous, nullptr);
    raise(sig);
    return;
  }
  g_flag = 1;
}

}  // namespace

InterruptScope::InterruptScope() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_depth++ > 0) return;
  g_flag = 0;
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
}

const volatile int* interrupt_flag() { return &g_flag; }

bool interrupted() { return g_flag != 0; }

void throw_interrupted(const std::string& where) {
  g_flag = 0;
  throw InterruptedError("interrupted (Ctrl-C, SIGINT) " + where);
}

}  // namespace lazygrad
