#include "engine/realize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "codegen/linearize.h"
#include "codegen/optimize.h"
#include "debug.h"
#include "engine/beam.h"
#include "engine/kernel_export.h"
#include "engine/schedule.h"
#include "engine/trace.h"
#include "ir/variable_state.h"
#include "lazygrad/counters.h"
#include "lazygrad/runtime.h"
#include "renderer/renderer.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "shape/size.h"

namespace lazygrad {

namespace {

// Kernels seen in this process, by their lowered graph (equal graphs are one node), whether they
// were optimized, for BEAM its width and the thread count, as its disk cache is keyed (NOOPT, BEAM
// and THREADS can change at run time), and the opts chooser's key (0: none). Past kMaxCompiled it
// starts afresh: each entry holds a loaded object (a few memory mappings of the 65,530 Linux
// allows), and one dropped loads again from the disk cache in about a millisecond.
using CacheKey = std::tuple<const UOp*, bool, int, int, int64_t, const Device*>;
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
  std::map<std::pair<const UOp*, const Device*>, std::shared_ptr<Compiled>> fresh;
  bool noopt = settings().noopt;
  int beam = noopt ? 0 : settings().beam, beam_threads = beam > 0 ? settings().threads : 0;
  const Chooser& choose = chooser();
  for (size_t i = 0; i < kernels.size(); i++) {
    const Kernel& k = kernels[i];
    if (k.copy) continue;  // no code: run by the devices' copy path
    const Device* dev = &device(k.device);
    {
      std::lock_guard<std::mutex> lock(cache_mu);
      if (auto it = compiled_cache().find({k.sink.get(), noopt, beam, beam_threads, choose.key, dev});
          it != compiled_cache().end()) {
        out[i] = it->second;
        continue;
      }
    }
    if (auto it = fresh.find({k.sink.get(), dev}); it != fresh.end()) {
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
    const Target& target = dev->renderer().target();
    std::vector<Opt> opts = choose.fn  ? fit_to_target(k, choose.fn(k), target)
                            : noopt    ? required_opts(k)
                            : beam > 0 ? beam_opts(k, beam, target)
                                       : default_opts(k, target);
    fresh[{k.sink.get(), dev}] = out[i] = render_kernel(k, opts);
    todo.push_back(out[i]);
    export_cuda_kernel(k);  // LAZYGRAD_CUDA_EXPORT: the compile-only CUDA check's kernels
  }
  compile_programs(todo);
  std::lock_guard<std::mutex> lock(cache_mu);
  if (compiled_cache().size() + fresh.size() > kMaxCompiled) compiled_cache().clear();
  for (auto& [k, c] : fresh) compiled_cache()[{k.first, noopt, beam, beam_threads, choose.key, k.second}] = c;
  return out;
}

LaunchDims launch_dims(const Target& t, const Kernel& k) {
  LaunchDims d;
  if (t.thread_slices) return d;  // the CPU splits the global range itself
  // The groups the renderer wrote the kernel for (work_groups, codegen/linearize.h).
  const WorkGroups groups = work_groups(k, t);
  d.local[0] = groups.size;
  d.grid[0] = groups.count;  // checked against the target at launch (KernelRun)
  return d;
}

}  // namespace

std::shared_ptr<Compiled> render_kernel(const Kernel& k, std::span<const Opt> opts) {
  auto c = std::make_shared<Compiled>();
  c->sink = k.sink;
  c->device = &device(k.device);
  const Renderer& renderer = c->device->renderer();
  Kernel opt = apply_opts(k, opts);
  if (std::string why = misfit(opt, renderer.target()); !why.empty())
    throw Error("kernel " + k.name + " [" + opt.opts + "] does not fit " + renderer.target().language + ": " +
                why);
  // Accumulators the IR gives float64 (a float32 sum's) are float32 on a target without it.
  LinearKernel lin = linearize(opt, renderer.target().float64);
  c->name = opt.opts.empty() ? k.name : k.name + " [" + opt.opts + "]";
  c->global_size = opt.global_size;
  c->work_per_item = opt.work_per_item;
  // Per global index: with work-groups, that is local_size work-items running the kernel's code.
  c->flops_per_item = saturating_mul(lin.flops_per_item, opt.local_size);
  c->dims = launch_dims(renderer.target(), opt);
  c->source = renderer.render(opt, lin);
  if (debug_at(5)) debug_log(5, "IR of " + c->name + ":\n" + opt.sink->str());
  if (debug_at(4)) debug_log(4, c->source);
  return c;
}

// At most this many kernels in one compiler process: a schedule of hundreds still keeps every core
// busy, and one translation unit stays the size of a few kernels.
constexpr size_t kMaxBatch = 16;

void compile_programs(std::span<const std::shared_ptr<Compiled>> items, bool keep_going) {
  // One compiler process per core at a time, each building a batch of one device's kernels (the CPU
  // compiles a batch as one translation unit: one process start, one parse of the headers, one
  // link for all of them; runtime/cpu/cpu_device.cpp). Each device's kernels are cut into runs of
  // at most kMaxBatch, enough runs for every core.
  const size_t n_workers = std::min<size_t>(items.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::pair<Device*, std::vector<size_t>>> per_device;
  for (size_t j = 0; j < items.size(); j++) {
    auto it = std::find_if(per_device.begin(), per_device.end(),
                           [&](const auto& d) { return d.first == items[j]->device; });
    if (it == per_device.end()) it = per_device.insert(per_device.end(), {items[j]->device, {}});
    it->second.push_back(j);
  }
  std::vector<std::vector<size_t>> batches;
  for (const auto& [device, list] : per_device) {
    const size_t per = std::clamp<size_t>((list.size() + n_workers - 1) / n_workers, 1, kMaxBatch);
    for (size_t b = 0; b < list.size(); b += per)
      batches.emplace_back(list.begin() + b, list.begin() + std::min(b + per, list.size()));
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};  // a compiler Ctrl-C stopped: an interrupt, not a compile error
  auto worker = [&] {
    for (size_t b; (b = next++) < batches.size();) {
      std::vector<Device::CompileJob> jobs;
      for (size_t j : batches[b])
        jobs.push_back({items[j]->name.substr(0, items[j]->name.find(' ')), &items[j]->source, nullptr, ""});
      try {
        items[batches[b][0]]->device->compile_batch(jobs);
      } catch (const InterruptedError&) {
        stopped = true;
      } catch (const std::exception& e) {
        for (auto& job : jobs) job.error = e.what();
      }
      for (size_t k = 0; k < jobs.size(); k++) {
        items[batches[b][k]]->program = std::move(jobs[k].program);
        items[batches[b][k]]->error = std::move(jobs[k].error);
      }
    }
  };
  std::vector<std::thread> workers;
  for (size_t w = 1; w < std::min(n_workers, batches.size()); w++) workers.emplace_back(worker);
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

namespace {

// A kernel's error word as the Error it stands for: bit 0 from an integer //, bit 1 from an integer
// %, bit 2 when the scratch for its staged loads could not be allocated, from bit 3 on its index
// checks, and kInterruptedBit when it stopped at Ctrl-C (what it wrote is incomplete, and nothing
// reads it).
void raise_kernel_error(int err, const std::string& name, const std::vector<std::string>& index_errors) {
  if (err & (1 << kInterruptedBit)) throw_interrupted("in kernel " + name);
  if (err & 4) throw Error("kernel " + name + ": out of memory for its scratch (staged loads)");
  for (size_t i = 0; i < index_errors.size(); i++)
    if (err & (1 << (kFirstIndexErrorBit + i))) throw Error(index_errors[i] + " (in kernel " + name + ")");
  if (err)
    throw Error(std::string(err & 1 ? "floor_divide (//)" : "remainder (%)") +
                ": integer division by zero in kernel " + name);
}

void log_launch(const std::string& device, const std::string& name, const std::string& size, double dt,
                int64_t flops, int64_t bytes) {
  char line[320];
  std::snprintf(line, sizeof line, "*** %-4s %4lld %-28s %-17s %9.2f us %8.2f GFLOP/s %8.2f GB/s",
                device.c_str(), static_cast<long long>(GlobalCounters::kernel_count), name.c_str(),
                size.c_str(), dt * 1e6, dt > 0 ? flops / dt * 1e-9 : 0.0, dt > 0 ? bytes / dt * 1e-9 : 0.0);
  debug_log(2, line);
}

}  // namespace

double KernelRun::run(const ExecItem& item) {
  if (!committed_) throw_if_interrupted("before kernel " + item.name);
  committed_ |= item.in_place;
  // A zero fill of a buffer not yet allocated: memory the device gives as zeros, where it has such
  // (a Jit's replay finds the buffer allocated, and runs the kernel).
  if (item.zero_fill && item.buffers[0]->allocate_zeroed()) {
    item.buffers[0]->version++;
    if (debug_at(2)) log_launch(item.buffers[0]->device, item.name, "zeroed memory", 0, 0, 0);
    return 0;
  }
  std::vector<void*> handles;
  int64_t bytes = 0;
  for (const auto& b : item.buffers) {
    try {
      handles.push_back(b->handle());
    } catch (const OutOfMemoryError& e) {  // which kernel's buffer the device would not give
      throw OutOfMemoryError("kernel " + item.name + ": " + e.what());
    }
    bytes += static_cast<int64_t>(b->nbytes());
  }
  Device& dev = item.buffers[0]->dev();
  if (item.copy) {
    auto t0 = std::chrono::steady_clock::now();
    const Buffer& dst = *item.buffers[0];
    if (dst.nbytes()) dev.transfer(handles[0], item.buffers[1]->dev(), handles[1], dst.nbytes());
    item.buffers[0]->version++;
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    GlobalCounters::global_mem += static_cast<int64_t>(dst.nbytes());
    GlobalCounters::time_sum_s += dt;
    if (debug_at(2)) log_launch(dev.name(), item.name, "", dt, 0, static_cast<int64_t>(dst.nbytes()));
    return dt;
  }
  if (item.global_size == 0) return 0;  // an empty tensor: nothing to compute
  std::vector<int64_t> vars;            // read now: a Variable set after the graph was built still counts
  for (const auto& v : item.vars) vars.push_back(v->bits.load());
  const Target& target = dev.renderer().target();
  const bool deferred = !target.thread_slices;
  for (int a = 0; a < 3; a++)  // after the buffers: memory the device will not give is named first
    if (item.dims.grid[a] > target.max_grid[a])
      throw Error("kernel " + item.name + ": " + std::to_string(item.global_size) +
                  " work-items are more than " + target.language + " on " + dev.name() + " launches at once");
  LaunchArgs args;
  args.buffers = handles;
  args.vars = vars;
  args.global_size = item.global_size;
  args.work_per_item = item.work_per_item;
  args.dims = item.dims;
  args.stop = committed_ ? no_stop() : interrupt_flag();
  args.launch_id = static_cast<uint32_t>(deferred_.size());
  args.timed = debug_at(2) || realize_traced();  // DEBUG=2 and the profiler show each kernel's time
  if (deferred) {
    deferred_.emplace_back(item.name, item.index_errors);
    if (std::find(devices_.begin(), devices_.end(), &dev) == devices_.end()) devices_.push_back(&dev);
  }
  auto t0 = std::chrono::steady_clock::now();
  LaunchResult r = item.program->launch(args);
  for (size_t i = 0; i < item.written.size(); i++)
    if (item.written[i]) item.buffers[i]->version++;
  double dt = r.seconds >= 0 ? r.seconds
                             : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t flops = item.flops_per_item * item.global_size;
  GlobalCounters::kernel_count++;
  GlobalCounters::global_ops += flops;
  GlobalCounters::global_mem += bytes;
  GlobalCounters::time_sum_s += dt;
  if (debug_at(2))
    log_launch(dev.name(), item.name, "global " + std::to_string(item.global_size), dt, flops, bytes);
  raise_kernel_error(r.error, item.name, item.index_errors);
  return dt;
}

void KernelRun::sync() {
  std::vector<Device*> devices = std::move(devices_);
  auto launched = std::move(deferred_);
  devices_.clear();
  deferred_.clear();
  DeferredError first;
  for (Device* d : devices)
    if (DeferredError e = d->synchronize(); e.bits && !first.bits) first = e;
  if (!first.bits) return;
  if (first.launch_id >= launched.size())  // a launch of another run: named as well as it can be
    raise_kernel_error(first.bits, "(an earlier kernel)", {});
  raise_kernel_error(first.bits, launched[first.launch_id].first, launched[first.launch_id].second);
}

void KernelRun::finish() {
  sync();
  throw_if_interrupted(committed_ ? "after the in-place writes it had begun were done"
                                  : "after its last kernel");
}

std::vector<UOpPtr> realize_uops(const std::vector<UOpPtr>& targets, const std::vector<std::string>& devices,
                                 const std::vector<UOpPtr>& passive,
                                 const std::function<void(const std::vector<UOpPtr>&)>& then) {
  auto t_start = std::chrono::steady_clock::now();
  int64_t compiles_before = GlobalCounters::compile_count;
  double compile_s_before = GlobalCounters::compile_s;
  KernelRun run;  // Ctrl-C stops it from here on
  Schedule sched = create_schedule(targets, devices, passive);
  auto t_scheduled = std::chrono::steady_clock::now();
  // Every Variable position first: a bad one must stop the step before any kernel writes.
  for (const Kernel& k : sched.kernels) check_var_bounds(k.name, k.vars, k.var_bounds);
  throw_if_interrupted("before its kernels were compiled");
  auto compiled = compile_all(sched.kernels);
  auto t_compiled = std::chrono::steady_clock::now();
  double run_s = 0;
  int launched = 0;
  std::optional<RealizeTrace> trace;
  if (realize_traced()) trace.emplace();
  for (size_t i = 0; i < sched.kernels.size(); i++) {
    Kernel k = std::move(sched.kernels[i]);  // released after this step: intermediates free early
    if (trace) {
      TracedKernel& t = trace->kernels.emplace_back();
      t.device = k.device;
      t.copy = k.copy;
      t.nodes = std::move(k.traced_nodes);
      t.inputs = std::move(k.traced_inputs);
      if (const Compiled* c = compiled[i].get()) t.source = c->source;
      for (const auto& b : k.buffers) t.bytes += static_cast<int64_t>(b->nbytes());
    }
    ExecItem item;
    item.zero_fill = fills_fresh_output_with_zeros(k);  // before k's buffers move
    item.name = k.name;
    item.buffers = std::move(k.buffers);
    item.written = std::move(k.written);
    item.in_place = k.in_place;
    item.copy = k.copy;
    if (const Compiled* c = compiled[i].get()) {  // null for a copy
      item.name = c->name;
      item.program = c->program;
      item.vars = std::move(k.vars);
      item.global_size = c->global_size;
      item.work_per_item = c->work_per_item;
      item.flops_per_item = c->flops_per_item;
      item.dims = c->dims;
      item.var_bounds = std::move(k.var_bounds);
      item.index_errors = std::move(k.index_errors);
      if (capture_slot()) item.source = c->source;
    }
    if (item.global_size > 0 || item.copy) launched++;
    const double dt = run.run(item);
    run_s += dt;
    if (trace) {
      TracedKernel& t = trace->kernels.back();
      t.name = item.name;
      t.seconds = dt;
      t.global_size = item.global_size;
      t.flops = item.flops_per_item * item.global_size;
    }
    if (capture_slot()) capture_slot()->items.push_back(std::move(item));
  }
  if (debug_at(1)) {
    auto ms = [](auto from, auto to) { return std::chrono::duration<double, std::milli>(to - from).count(); };
    const auto now = std::chrono::steady_clock::now();
    char line[320];
    std::snprintf(
        line, sizeof line,
        "realize: %d kernels in %.2f ms (schedule %.2f ms, optimize, render and compile or load %.2f "
        "ms, run %.2f ms, %lld compiled in %.2f ms of compiler time)",
        launched, ms(t_start, now), ms(t_start, t_scheduled), ms(t_scheduled, t_compiled), run_s * 1e3,
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
  // Last: the tensors already hold what was computed, so a listener's error (VIZ cannot write its
  // page) leaves nothing half done.
  if (trace) {
    trace->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    publish(*trace);
  }
  return out;
}

}  // namespace lazygrad
