#include "engine/realize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "codegen/linearize.h"
#include "codegen/optimize.h"
#include "debug.h"
#include "engine/beam.h"
#include "engine/schedule.h"
#include "ir/variable_state.h"
#include "lazygrad/counters.h"
#include "lazygrad/runtime.h"
#include "renderer/c_renderer.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

namespace lazygrad {

namespace {

// Kernels seen in this process, by their lowered graph (equal graphs are one node), whether they
// were optimized, for BEAM its width and the thread count, as its disk cache is keyed (NOOPT, BEAM
// and THREADS can change at run time), and the opts chooser's key (0: none). Past kMaxCompiled it
// starts afresh: each entry holds a loaded object (a few memory mappings of the 65,530 Linux
// allows), and one dropped loads again from the disk cache in about a millisecond.
using CacheKey = std::tuple<const UOp*, bool, int, int, int64_t>;
constexpr size_t kMaxCompiled = 2048;
std::map<CacheKey, std::shared_ptr<Compiled>>& compiled_cache() {
  static std::map<CacheKey, std::shared_ptr<Compiled>> cache;
  return cache;
}
std::mutex cache_mu;

struct Chooser {
  OptsChooser fn;
  int64_t key = 0;
};
Chooser& chooser() {
  static Chooser c;
  return c;
}

std::vector<std::shared_ptr<Compiled>> compile_all(const std::vector<Kernel>& kernels) {
  std::vector<std::shared_ptr<Compiled>> out(kernels.size()), todo;
  std::unordered_map<const UOp*, std::shared_ptr<Compiled>> fresh;
  bool noopt = settings().noopt;
  int beam = noopt ? 0 : settings().beam, beam_threads = beam > 0 ? settings().threads : 0;
  const Chooser& choose = chooser();
  for (size_t i = 0; i < kernels.size(); i++) {
    const Kernel& k = kernels[i];
    {
      std::lock_guard<std::mutex> lock(cache_mu);
      if (auto it = compiled_cache().find({k.sink.get(), noopt, beam, beam_threads, choose.key});
          it != compiled_cache().end()) {
        out[i] = it->second;
        continue;
      }
    }
    if (auto it = fresh.find(k.sink.get()); it != fresh.end()) {
      out[i] = it->second;
      continue;
    }
    if (k.global_size == 0) {  // an empty tensor: nothing runs (run_item), so nothing to compile
      auto c = std::make_shared<Compiled>();
      c->sink = k.sink;
      c->name = k.name;
      out[i] = c;
      continue;
    }
    std::vector<Opt> opts = choose.fn  ? choose.fn(k)
                            : noopt    ? required_opts(k)
                            : beam > 0 ? beam_opts(k, beam)
                                       : default_opts(k);
    fresh[k.sink.get()] = out[i] = render_kernel(k, opts);
    todo.push_back(out[i]);
  }
  compile_programs(todo);
  std::lock_guard<std::mutex> lock(cache_mu);
  if (compiled_cache().size() + fresh.size() > kMaxCompiled) compiled_cache().clear();
  for (auto& [k, c] : fresh) compiled_cache()[{k, noopt, beam, beam_threads, choose.key}] = c;
  return out;
}

}  // namespace

std::shared_ptr<Compiled> render_kernel(const Kernel& k, std::span<const Opt> opts) {
  auto c = std::make_shared<Compiled>();
  c->sink = k.sink;
  Kernel opt = apply_opts(k, opts);
  LinearKernel lin = linearize(opt);
  c->name = opt.opts.empty() ? k.name : k.name + " [" + opt.opts + "]";
  c->global_size = opt.global_size;
  c->work_per_item = opt.work_per_item;
  c->flops_per_item = lin.flops_per_item;
  c->source = render_c(opt, lin);
  if (debug_at(5)) debug_log(5, "IR of " + c->name + ":\n" + opt.sink->str());
  if (debug_at(4)) debug_log(4, c->source);
  return c;
}

void compile_programs(std::span<const std::shared_ptr<Compiled>> items, bool keep_going) {
  // One compiler process per core at a time.
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};  // a compiler Ctrl-C stopped: an interrupt, not a compile error
  auto worker = [&] {
    for (size_t j; (j = next++) < items.size();) {
      const std::string name = items[j]->name.substr(0, items[j]->name.find(' '));
      try {
        items[j]->program = cpu_device().compile(name, items[j]->source);
      } catch (const InterruptedError&) {
        stopped = true;
      } catch (const std::exception& e) {
        items[j]->error = e.what();
      }
    }
  };
  size_t n_workers = std::min<size_t>(items.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> workers;
  for (size_t w = 1; w < n_workers; w++) workers.emplace_back(worker);
  if (!items.empty()) worker();
  for (auto& w : workers) w.join();
  if (stopped || interrupted()) throw_interrupted("while compiling kernels");
  if (keep_going) return;
  for (const auto& c : items)
    if (!c->error.empty()) throw Error(c->error);
}

void set_opts_chooser(OptsChooser fn, int64_t key) {
  std::lock_guard<std::mutex> lock(cache_mu);
  chooser() = fn ? Chooser{std::move(fn), key} : Chooser{};
}

Capture*& capture_slot() {
  static Capture* capture = nullptr;
  return capture;
}

void set_capture(Capture* capture) { capture_slot() = capture; }
Capture* current_capture() { return capture_slot(); }

void check_var_bounds(const std::string& name, const std::vector<std::shared_ptr<VariableState>>& vars,
                      const std::vector<VarBound>& bounds) {
  for (const VarBound& b : bounds)
    if (int64_t v = vars[b.var]->bits.load(); v < b.lo || v > b.hi)
      throw Error("kernel " + name + ": a Variable position is " + std::to_string(v) + ", outside the [" +
                  std::to_string(b.lo) + ", " + std::to_string(b.hi) +
                  "] its narrow or narrow_assign allows");
}

double KernelRun::run(const ExecItem& item) {
  if (!committed_) throw_if_interrupted("before kernel " + item.name);
  committed_ |= item.in_place;
  std::vector<void*> ptrs;
  int64_t bytes = 0;
  for (const auto& b : item.buffers) {
    try {
      ptrs.push_back(b->data());
    } catch (const OutOfMemoryError& e) {  // which kernel's buffer the machine would not give
      throw OutOfMemoryError("kernel " + item.name + ": " + e.what());
    }
    bytes += static_cast<int64_t>(b->nbytes());
  }
  if (item.global_size == 0) return 0;  // an empty tensor: nothing to compute
  std::vector<int64_t> vars;            // read now: a Variable set after the graph was built still counts
  for (const auto& v : item.vars) vars.push_back(v->bits.load());
  auto t0 = std::chrono::steady_clock::now();
  int err = item.program->launch(ptrs, vars, item.global_size, item.work_per_item,
                                 committed_ ? no_stop() : interrupt_flag());
  for (size_t i = 0; i < item.written.size(); i++)
    if (item.written[i]) item.buffers[i]->version++;
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t flops = item.flops_per_item * item.global_size;
  GlobalCounters::kernel_count++;
  GlobalCounters::global_ops += flops;
  GlobalCounters::global_mem += bytes;
  GlobalCounters::time_sum_s += dt;
  if (debug_at(2)) {
    char line[256];
    std::snprintf(line, sizeof line, "*** CPU %4lld %-28s global %-10lld %9.2f us %8.2f GFLOP/s %8.2f GB/s",
                  static_cast<long long>(GlobalCounters::kernel_count), item.name.c_str(),
                  static_cast<long long>(item.global_size), dt * 1e6, dt > 0 ? flops / dt * 1e-9 : 0.0,
                  dt > 0 ? bytes / dt * 1e-9 : 0.0);
    debug_log(2, line);
  }
  // The kernel's error flag: bit 0 from an integer //, bit 1 from an integer %, bit 2 when the
  // scratch for its staged loads could not be allocated, from bit 3 on its index checks, and
  // kInterruptedBit when it stopped at Ctrl-C (what it wrote is incomplete, and nothing reads it).
  if (err & (1 << kInterruptedBit)) throw_interrupted("in kernel " + item.name);
  if (err & 4) throw Error("kernel " + item.name + ": out of memory for its scratch (staged loads)");
  for (size_t i = 0; i < item.index_errors.size(); i++)
    if (err & (1 << (kFirstIndexErrorBit + i)))
      throw Error(item.index_errors[i] + " (in kernel " + item.name + ")");
  if (err)
    throw Error(std::string(err & 1 ? "floor_divide (//)" : "remainder (%)") +
                ": integer division by zero in kernel " + item.name);
  return dt;
}

void KernelRun::finish() {
  throw_if_interrupted(committed_ ? "after the in-place writes it had begun were done"
                                  : "after its last kernel");
}

std::vector<UOpPtr> realize_uops(const std::vector<UOpPtr>& targets, const std::vector<UOpPtr>& passive,
                                 const std::function<void(const std::vector<UOpPtr>&)>& then) {
  auto t_start = std::chrono::steady_clock::now();
  int64_t compiles_before = GlobalCounters::compile_count;
  double compile_s_before = GlobalCounters::compile_s;
  KernelRun run;  // Ctrl-C stops it from here on
  Schedule sched = create_schedule(targets, passive);
  // Every Variable position first: a bad one must stop the step before any kernel writes.
  for (const Kernel& k : sched.kernels) check_var_bounds(k.name, k.vars, k.var_bounds);
  throw_if_interrupted("before its kernels were compiled");
  auto compiled = compile_all(sched.kernels);
  double run_s = 0;
  int launched = 0;
  for (size_t i = 0; i < sched.kernels.size(); i++) {
    Kernel k = std::move(sched.kernels[i]);  // released after this step: intermediates free early
    const Compiled& c = *compiled[i];
    ExecItem item{c.name,
                  c.program,
                  std::move(k.buffers),
                  std::move(k.written),
                  std::move(k.vars),
                  c.global_size,
                  c.work_per_item,
                  c.flops_per_item,
                  std::move(k.var_bounds),
                  std::move(k.index_errors),
                  k.in_place};
    if (item.global_size > 0) launched++;
    run_s += run.run(item);
    if (capture_slot()) capture_slot()->items.push_back(std::move(item));
  }
  if (debug_at(1)) {
    double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    char line[256];
    std::snprintf(line, sizeof line,
                  "realize: %d kernels in %.2f ms (run %.2f ms, %lld compiled in %.2f ms of compiler time)",
                  launched, total * 1e3, run_s * 1e3,
                  static_cast<long long>(GlobalCounters::compile_count - compiles_before),
                  (GlobalCounters::compile_s - compile_s_before) * 1e3);
    debug_log(1, line);
  }
  remember_realized(sched.computed);
  std::vector<UOpPtr> out;
  for (const auto& t : targets) {
    auto it = sched.becomes.find(t.get());
    out.push_back(it == sched.becomes.end() ? t : it->second);
  }
  if (then) then(out);
  run.finish();
  return out;
}

}  // namespace lazygrad
