// Ctrl-C (SIGINT) during a computation: a long kernel stops inside its loops and a schedule or a Jit
// replay between kernels, with InterruptedError; what was being computed stays unrealized and is
// computed right when asked again; a Jit whose capture was interrupted captures again; outside a
// computation SIGINT does what it did before (a second Ctrl-C goes there too, an ignored one stays
// ignored); a kernel that writes in place has no reads of the flag, every long loop nest has one.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "codegen/optimize.h"
#include "engine/realize.h"
#include "engine/schedule.h"
#include "expect_error.h"
#include "runtime/interrupt.h"

using namespace lazygrad;

namespace {

volatile sig_atomic_t g_seen_by_ours = 0;
extern "C" void count_sigint(int) { g_seen_by_ours = g_seen_by_ours + 1; }

using Handler = void (*)(int);

Handler current_handler() {
  struct sigaction sa;
  sigaction(SIGINT, nullptr, &sa);
  return sa.sa_handler;
}

// Installs `h` for SIGINT for the test's lifetime, as a program of the user's would.
class WithHandler {
 public:
  explicit WithHandler(Handler h) {
    struct sigaction sa = {};
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
    g_seen_by_ours = 0;
  }
  ~WithHandler() { sigaction(SIGINT, &old_, nullptr); }

 private:
  struct sigaction old_;
};

// The kernel that computes t from realized inputs, rendered with the default opts.
std::shared_ptr<Compiled> only_kernel(const Tensor& t) {
  Schedule s = create_schedule({t.uop()});
  EXPECT_EQ(s.kernels.size(), 1u);
  const Kernel& k = s.kernels.at(0);
  return render_kernel(k, default_opts(k));
}
std::string kernel_source(const Tensor& t) { return only_kernel(t)->source; }

}  // namespace

TEST(Interrupt, StopsALongKernelInsideItsLoops) {
  WithHandler ours(count_sigint);
  // 2^40 additions in one reduction: hours of work unless the kernel reads the flag as it goes.
  Tensor big = Tensor::ones({int64_t{1} << 40}).sum();
  compile_programs(std::vector<std::shared_ptr<Compiled>>{only_kernel(big)});  // realize finds it compiled
  std::thread ctrl_c([] {  // as a terminal's Ctrl-C, to the process, while the kernel runs
    while (current_handler() == &count_sigint) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // lazygrad holds SIGINT: into the kernel
    kill(getpid(), SIGINT);
  });
  expect_error([&] { big.realize(); }, {"interrupted", "SIGINT", "in kernel r_1099511627776"});
  ctrl_c.join();
  EXPECT_EQ(g_seen_by_ours, 0) << "lazygrad held SIGINT while it computed";
  EXPECT_EQ(current_handler(), &count_sigint) << "and gave it back after";
  EXPECT_FALSE(interrupted());
  EXPECT_EQ(Tensor::ones({1000}).sum().item<float>(), 1000.0f);  // the next computation runs
}

TEST(Interrupt, StopsAScheduleBetweenKernelsAndTheTensorStaysLazy) {
  Tensor x = Tensor::arange(1000).to(kFloat32) * 0.01;
  Tensor y = (x.softmax(0) * 2).sum();
  {
    InterruptScope computing;  // as a computation in progress holds it
    raise(SIGINT);             // delivered at once: sets the flag
    EXPECT_TRUE(interrupted());
    expect_error([&] { y.realize(); }, {"interrupted", "before its kernels were compiled"});
  }
  EXPECT_FALSE(interrupted());
  EXPECT_NEAR(y.item<float>(), 2.0f, 1e-5);  // asked again, computed right
}

// A call that stops before its capture is done does not count: the next one captures, instead of
// replaying nothing; a replay stopped before its kernels leaves the next one whole.
TEST(Interrupt, AJitReplayStopsAndAnInterruptedCaptureIsCapturedAgain) {
  Jit step([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0].exp() * 2).sum(0)}; });
  Tensor x = Tensor::arange(12).to(kFloat32).reshape({3, 4}).realize();
  const std::vector<float> want = (x.exp() * 2).sum(0).to_vector<float>();
  EXPECT_EQ(step({x})[0].to_vector<float>(), want);  // call 1: eager
  {
    InterruptScope computing;
    raise(SIGINT);
    expect_error([&] { step({x}); }, {"interrupted"});  // call 2, the capture, stopped
  }
  EXPECT_EQ(step.calls(), 1);
  EXPECT_EQ(step({x})[0].to_vector<float>(), want);  // captured now
  EXPECT_EQ(step.calls(), 2);
  EXPECT_GT(step.captured_kernels(), 0u);
  {
    InterruptScope computing;
    raise(SIGINT);
    expect_error([&] { step({x}); }, {"interrupted"});  // a replay, stopped
  }
  EXPECT_EQ(step({x})[0].to_vector<float>(), want);  // and the next replay is whole
}

TEST(Interrupt, ASecondCtrlCGoesToTheHandlerThatWasThere) {
  WithHandler ours(count_sigint);
  {
    InterruptScope computing;
    raise(SIGINT);
    EXPECT_TRUE(interrupted());
    EXPECT_EQ(g_seen_by_ours, 0);
    raise(SIGINT);  // the user insists
    EXPECT_EQ(g_seen_by_ours, 1);
  }
  // The first was never turned into an InterruptedError: it went there too, as the scope ended.
  EXPECT_EQ(g_seen_by_ours, 2);
  EXPECT_FALSE(interrupted());
  EXPECT_EQ(current_handler(), &count_sigint);
}

TEST(Interrupt, ACtrlCTooLateToBeCheckedGoesToTheHandlerThatWasThere) {
  WithHandler ours(count_sigint);
  EXPECT_EQ(Tensor::ones({10}).sum().item<float>(), 10.0f);
  {
    InterruptScope computing;
    EXPECT_EQ(Tensor::ones({11}).sum().item<float>(), 11.0f);
    raise(SIGINT);  // after the computation's last check, before its scope ended
  }
  EXPECT_EQ(g_seen_by_ours, 1);
  EXPECT_FALSE(interrupted());
}

// A step function interrupted while it is being captured: the capture is dropped and the next call
// captures (fn's own SIGINT, as if Ctrl-C came while fn built its graph).
TEST(Interrupt, AnInterruptedCaptureIsCapturedAgain) {
  int fn_calls = 0;
  Jit step([&](const std::vector<Tensor>& in) {
    if (++fn_calls == 2) raise(SIGINT);
    return std::vector<Tensor>{(in[0] * 3 + 1).sum(0)};
  });
  Tensor x = Tensor::arange(12).to(kFloat32).reshape({3, 4}).realize();
  const std::vector<float> want = (x * 3 + 1).sum(0).to_vector<float>();
  InterruptScope computing;
  EXPECT_EQ(step({x})[0].to_vector<float>(), want);
  expect_error([&] { step({x}); }, {"interrupted", "before its kernels were compiled"});
  EXPECT_EQ(step.calls(), 1);
  EXPECT_EQ(step.captured_kernels(), 0u);
  EXPECT_EQ(step({x})[0].to_vector<float>(), want);
  EXPECT_EQ(step.calls(), 2);
  EXPECT_GT(step.captured_kernels(), 0u);
  EXPECT_EQ(step({x})[0].to_vector<float>(), want);  // a replay
}

// A replay whose hooks moved host state on (an optimizer's step count) is not stopped half done: its
// kernels all run, the parameter updates included, and the interrupt comes after.
TEST(Interrupt, AReplayWhoseHooksRanGoesToItsEnd) {
  Tensor w = Tensor::zeros({4}).contiguous().realize();
  int hook_runs = 0;
  bool ctrl_c = false;
  Jit step([&](const std::vector<Tensor>& in) {
    Jit::on_replay([&] {
      hook_runs++;
      if (ctrl_c) raise(SIGINT);
    });
    w.assign(w + in[0]);
    return std::vector<Tensor>{w.sum()};
  });
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4}).realize();
  for (int i = 1; i <= 3; i++) EXPECT_EQ(step({x})[0].item<float>(), 10.0f * i);
  EXPECT_EQ(hook_runs, 1);  // the third call replayed
  ctrl_c = true;
  {
    InterruptScope computing;
    expect_error([&] { step({x}); }, {"interrupted", "after the in-place writes"});
  }
  EXPECT_EQ(hook_runs, 2);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{4, 8, 12, 16}));  // the fourth step, whole
  ctrl_c = false;
  EXPECT_EQ(step({x})[0].item<float>(), 50.0f);
}

TEST(Interrupt, AnIgnoredSigintStaysIgnored) {
  WithHandler ignored(SIG_IGN);
  {
    InterruptScope computing;
    EXPECT_EQ(current_handler(), SIG_IGN);
    raise(SIGINT);
    EXPECT_FALSE(interrupted());
  }
  EXPECT_EQ(current_handler(), SIG_IGN);
}

TEST(Interrupt, LongLoopsReadTheFlagAndInPlaceWritesDoNot) {
  // A long reduction reads it in its reduction loop, a short elementwise kernel in its loop over g.
  EXPECT_NE(kernel_source(Tensor::ones({int64_t{1} << 40}).sum()).find("*lg_stop"), std::string::npos);
  Tensor a = Tensor::arange(4096).to(kFloat32).realize();
  EXPECT_NE(kernel_source(a * 2 + 1).find("*lg_stop"), std::string::npos);
  // An update in place (an optimizer's step) never stops half done.
  Tensor w = Tensor::zeros({4096}).contiguous().realize();
  w.assign(w * 0.5 + a);
  EXPECT_EQ(kernel_source(w).find("*lg_stop"), std::string::npos);
}
