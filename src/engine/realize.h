// Realize: schedule, compile (in parallel, through the disk cache), run, and report.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/optimize.h"
#include "ir/uop.h"
#include "runtime/device.h"
#include "runtime/interrupt.h"

namespace lazygrad {

// Computes the targets; returns for each one what it is now (a view of its buffer).
// Contract: each target is held by exactly two references that the caller replaces or drops
// afterwards (its owner and the vector); the scheduler counts any other holder as a later reader,
// but for the graphs in `passive` (autograd's graphs kept for a later backward pass): those only
// record what was read, and learn from the buffers' versions when it was overwritten.
// `then` runs with the results before an interrupt deferred by in-place writes is raised (KernelRun),
// so the caller's tensors are pointed at what was computed: a live reader of an overwritten buffer
// must not keep its lazy graph.
// devices[i]: where targets[i] is computed (create_schedule).
std::vector<UOpPtr> realize_uops(const std::vector<UOpPtr>& targets, const std::vector<std::string>& devices,
                                 const std::vector<UOpPtr>& passive = {},
                                 const std::function<void(const std::vector<UOpPtr>&)>& then = {});

class Device;
class Program;

// A kernel made ready to launch: the source of its optimized form, the program, and its sizes.
struct Compiled {
  UOpPtr sink;  // the lowered kernel's graph (keeps cache keys alive)
  Device* device = nullptr;
  std::string name, source, error;
  std::shared_ptr<Program> program;
  int64_t global_size = 0, work_per_item = 1, flops_per_item = 0;  // of the optimized kernel
  LaunchDims dims;                                                 // devices with work-groups
};
// Applies opts, linearizes and renders for k.device (does not compile).
std::shared_ptr<Compiled> render_kernel(const Kernel& k, std::span<const Opt> opts);
// Compiles each item's source, in parallel; a failure is stored in item->error, and thrown after all
// finish unless keep_going.
void compile_programs(std::span<const std::shared_ptr<Compiled>> items, bool keep_going = false);

// One kernel launch or copy, ready to run again: what the Jit captures and replays.
struct ExecItem {
  std::string name;
  std::shared_ptr<Program> program;  // null for a copy, and for a kernel of an empty tensor
  bool copy = false;                 // a copy between devices: buffers[0] gets buffers[1]'s bytes
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<bool> written;                         // buffers[i] is stored to (its version moves on)
  std::vector<std::shared_ptr<VariableState>> vars;  // read at each launch
  int64_t global_size = 0, work_per_item = 1, flops_per_item = 0;
  LaunchDims dims;
  std::vector<VarBound> var_bounds;       // checked at each launch
  std::vector<std::string> index_errors;  // the kernel's index checks, by error bit (Kernel::index_errors)
  bool in_place = false;                  // it writes into a buffer that was there before (an assign)
  bool zero_fill = false;  // it only fills a fresh output with zeros (fills_fresh_output_with_zeros)
  std::string source;      // the kernel's code as compiled; kept only while a Jit captures (export_webgpu)
};

// Throws lazygrad::Error if a Variable that positions a read or a write (narrow, narrow_assign) is
// outside its kernel's bounds now.
void check_var_bounds(const std::string& name, const std::vector<std::shared_ptr<VariableState>>& vars,
                      const std::vector<VarBound>& bounds);

// One run of kernels (a schedule, a Jit replay) that Ctrl-C may stop (runtime/interrupt.h): before
// a kernel, or inside a long one, until a kernel that writes in place has run. From then on the run
// goes to its end, so that no step is left half applied and no lazy tensor reads a buffer already
// overwritten, and the interrupt is raised by finish(). The callers check the Variable positions of
// all their items first (check_var_bounds).
class KernelRun {
 public:
  // Launches one item (counters, DEBUG=2, kernel errors as lazygrad::Error); returns its seconds.
  // On a device without a return code a kernel's error is raised at the next sync() (finish()
  // syncs): the run goes on meanwhile, as PyTorch's CUDA kernels report theirs.
  double run(const ExecItem& item);
  // From now on the run goes to its end: for a run that has moved state on before its first kernel
  // (a Jit replay's hooks: an optimizer's step count).
  void commit() { committed_ = true; }
  void finish();  // after the last item: sync(), then a deferred interrupt
  // Waits for the devices this run launched on; raises the first error a kernel of it reported.
  void sync();

 private:
  InterruptScope scope_;
  bool committed_ = false;  // an in-place kernel has run
  // Launches on devices that report errors at synchronize(): launch_id -> the item's name and index
  // checks, and the devices to wait for.
  std::vector<std::pair<std::string, std::vector<std::string>>> deferred_;
  std::vector<Device*> devices_;
};

// For the compiler fuzzer and tests: while set, chooses the opts of every kernel compiled (instead
// of NOOPT, BEAM or the defaults). `key` tells the kernels compiled under one chooser from those of
// another (or of none) in the process's cache of compiled kernels. An empty chooser restores the
// usual choice.
using OptsChooser = std::function<std::vector<Opt>(const Kernel&)>;
void set_opts_chooser(OptsChooser chooser, int64_t key);

// What a Jit records while it captures: the launches, and host code to run again before each
// replay (an optimizer advancing its step count and bias corrections).
struct Capture {
  std::vector<ExecItem> items;
  std::vector<std::function<void()>> replay_hooks;
};

// While set, every item realize launches is appended to capture->items (null stops capturing).
void set_capture(Capture* capture);
Capture* current_capture();

}  // namespace lazygrad
