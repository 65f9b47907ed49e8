#include "engine/trace.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "engine/viz.h"
#include "lazygrad/runtime.h"

namespace lazygrad {

namespace {
struct Listeners {
  std::mutex mu;
  std::vector<const std::function<void(const RealizeTrace&)>*> fns;
  // fns.size(), read without the lock: every kernel launch asks (realize_traced), a Jit's replays too.
  std::atomic<size_t> count{0};
};
Listeners& listeners() {
  static Listeners l;
  return l;
}
}  // namespace

RealizeListener::RealizeListener(std::function<void(const RealizeTrace&)> fn) : fn_(std::move(fn)) {
  std::lock_guard<std::mutex> lock(listeners().mu);
  listeners().fns.push_back(&fn_);
  listeners().count = listeners().fns.size();
}

RealizeListener::~RealizeListener() {
  std::lock_guard<std::mutex> lock(listeners().mu);
  std::erase(listeners().fns, &fn_);
  listeners().count = listeners().fns.size();
}

bool realize_traced() { return settings().viz || listeners().count.load(std::memory_order_relaxed) > 0; }

void publish(const RealizeTrace& trace) {
  std::vector<const std::function<void(const RealizeTrace&)>*> fns;
  {
    std::lock_guard<std::mutex> lock(listeners().mu);
    fns = listeners().fns;
  }
  for (const auto* fn : fns) (*fn)(trace);
  if (settings().viz) write_viz_page(trace, settings().viz_path);
}

int64_t node_flops(const UOp& u) {
  if (u.op == Ops::REDUCE_AXIS) return u.src[0]->numel();
  // A scalar's op (a constant's reciprocal) is folded or done once per launch: nothing per element.
  return is_alu(u.op) && !u.shape.empty() ? u.numel() : 0;
}

}  // namespace lazygrad
