#include "engine/beam.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <sstream>

#include "debug.h"
#include "engine/realize.h"
#include "ir/variable_state.h"
#include "lazygrad/counters.h"
#include "lazygrad/runtime.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"
#include "runtime/interrupt.h"

namespace lazygrad {

namespace {

constexpr int kMaxRounds = 4;
constexpr int64_t kMaxExpansion = 64;  // copies of the body a candidate may unroll (code size)

// Buffers to time on: the kernel's inputs as they are (zeros where not computed yet), and copies of
// what it writes, so timing never changes the user's data.
std::vector<std::shared_ptr<Buffer>> scratch_buffers(const Kernel& k) {
  std::vector<std::shared_ptr<Buffer>> out;
  for (size_t i = 0; i < k.buffers.size(); i++) {
    const auto& b = k.buffers[i];
    if (!k.written[i] && b->allocated()) {
      out.push_back(b);
      continue;
    }
    auto s = std::make_shared<Buffer>(b->device, b->dtype, b->size);
    if (!b->nbytes()) {
    } else if (b->allocated()) {
      s->dev().transfer(s->handle(), b->dev(), b->handle(), b->nbytes());
    } else {
      s->copyin(std::vector<std::byte>(b->nbytes()));
    }
    out.push_back(s);
  }
  return out;
}

double time_kernel(const Compiled& c, const std::vector<std::shared_ptr<Buffer>>& bufs,
                   const std::vector<int64_t>& vars) {
  std::vector<void*> handles;
  for (const auto& b : bufs) handles.push_back(b->handle());
  LaunchArgs args;
  args.buffers = handles;
  args.vars = vars;
  args.global_size = c.global_size;
  args.work_per_item = c.work_per_item;
  args.dims = c.dims;
  args.stop = interrupt_flag();
  args.timed = true;
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    // Error flags do not matter here; an interrupted run is no timing, and beam_opts throws after it.
    LaunchResult r = c.program->launch(args);
    if (interrupted()) break;
    best = std::min(best, r.seconds);
    if (best > 1.0) break;  // a slow candidate: once is enough to rank it
  }
  // A candidate's error (a division by zero on the scratch's zeros) is no error of the user's: a
  // device that reports errors at synchronize() forgets it here.
  c.device->synchronize();
  return best;
}

}  // namespace

// Every one-step extension of opts that fits the kernel.
std::vector<std::vector<Opt>> extensions(const Kernel& k, const std::vector<Opt>& opts,
                                         const Target& target) {
  KernelAxes ax = kernel_axes(k);
  bool has_vector =
      std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.kind == AxisKind::Vector; });
  std::vector<std::vector<Opt>> out;
  // The tensor cores' product, which stands alone (codegen/tensor_cores.h), in each warp tile.
  if (target.tensor_cores && opts.empty()) {
    for (int64_t t : {1, 2, 4}) {
      std::vector<Opt> tc{{AxisKind::TensorCore, 0, t}};
      try {
        if (misfit(apply_opts(k, tc), target).empty()) out.push_back(std::move(tc));
      } catch (const Error&) {
        // not a product the tensor cores take, or not in this tile
      }
    }
  }
  for (size_t a = 0; a < ax.ranges.size(); a++) {
    bool output = a < ax.n_output;
    std::vector<Opt> moves;
    if (!has_vector && target.vector_bytes > 0)
      for (int64_t w : {16, 8, 4}) moves.push_back({AxisKind::Vector, static_cast<int>(a), w});
    for (int64_t u : {2, 3, 4, 8})
      moves.push_back({output ? AxisKind::Upcast : AxisKind::Unroll, static_cast<int>(a), u});
    if (output && a > 0) moves.push_back({AxisKind::Global, static_cast<int>(a), 0});  // loop order
    // The whole rest of an output axis as a loop inside the kernel (what it does not move is staged).
    int64_t rest = ax.sizes[a];
    for (const Opt& o : opts)
      if (o.axis == static_cast<int>(a) && o.kind != AxisKind::Global) rest /= o.amount;
    if (output && rest > 1) moves.push_back({AxisKind::Loop, static_cast<int>(a), rest});
    // Work-groups: local sizes along output axes, a grouped reduction along a reduction axis.
    if (!target.thread_slices && target.local_memory > 0)
      for (int64_t l : {2, 4, 8, 16, 32, 64, 128, 256})
        moves.push_back({output ? AxisKind::Local : AxisKind::Group, static_cast<int>(a), l});
    for (const Opt& m : moves) {
      std::vector<Opt> next = opts;
      next.push_back(m);
      int64_t expansion = 1;
      for (const Opt& o : next)
        if (o.kind == AxisKind::Upcast || o.kind == AxisKind::Unroll) expansion *= o.amount;
      if (expansion > kMaxExpansion) continue;
      try {
        if (!misfit(apply_opts(k, next), target).empty()) continue;
      } catch (const Error&) {
        continue;
      }
      out.push_back(std::move(next));
    }
  }
  return out;
}

namespace {

std::string cache_path(const Kernel& k, int width) {
  const Settings& s = settings();
  // The unoptimized source names the kernel by what it computes (in the device's language), not by
  // where its buffers live; choices are kept per kind of device.
  std::string key = render_kernel(k, {})->source + "\nDEVICE=" + device(k.device).kind() +
                    "\nBEAM=" + std::to_string(width) + " THREADS=" + std::to_string(s.threads) + "\n" +
                    (s.cpu_compiler == "llvm" ? "llvm" : s.cc + " " + s.cflags);
  return cache_dir() + "/beam-" + hex64(fnv1a(key)) + ".txt";
}

}  // namespace

std::optional<std::vector<Opt>> parse_opts(const std::string& text) {
  std::vector<Opt> out;
  std::istringstream in(text);
  std::string word;
  const std::string kinds = kAxisLetters;
  while (in >> word) {
    size_t colon = word.find(':');
    if (word.size() < 4 || kinds.find(word[0]) == std::string::npos || colon == std::string::npos)
      return std::nullopt;
    try {
      out.push_back({static_cast<AxisKind>(kinds.find(word[0])), std::stoi(word.substr(1, colon - 1)),
                     std::stoll(word.substr(colon + 1))});
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return out;
}

std::vector<Opt> beam_opts(const Kernel& k, int width, const Target& target) {
  std::string path = cache_path(k, width);
  if (auto text = read_file(path)) {
    if (auto opts = parse_opts(*text)) {
      try {
        apply_opts(k, *opts);
        return *opts;
      } catch (const Error&) {
      }  // a stale or damaged entry: search again
    }
  }
  auto t_start = std::chrono::steady_clock::now();
  GlobalCounters::beam_searches++;
  auto bufs = scratch_buffers(k);
  std::vector<int64_t> vars;
  for (const auto& v : k.vars) vars.push_back(v->bits.load());
  struct Timed {
    std::vector<Opt> opts;
    double t;
  };
  // Times a round of candidates; the ones that fail to compile drop out.
  auto run_round = [&](const std::vector<std::vector<Opt>>& cands) {
    std::vector<std::shared_ptr<Compiled>> compiled;
    for (const auto& c : cands) compiled.push_back(render_kernel(k, c));
    compile_programs(compiled, /*keep_going=*/true);
    std::vector<Timed> out;
    for (size_t i = 0; i < cands.size(); i++)
      if (compiled[i]->error.empty()) out.push_back({cands[i], time_kernel(*compiled[i], bufs, vars)});
    throw_if_interrupted("during the BEAM search for kernel " + k.name);  // nothing cached
    std::sort(out.begin(), out.end(), [](const Timed& a, const Timed& b) { return a.t < b.t; });
    return out;
  };
  std::vector<Timed> beam = run_round({required_opts(k), default_opts(k, target)});
  Timed best = beam.at(0);
  size_t tried = beam.size();
  std::set<std::vector<std::pair<int, int64_t>>> seen;
  for (int round = 0; round < kMaxRounds; round++) {
    std::vector<std::vector<Opt>> cands;
    for (size_t b = 0; b < beam.size() && b < static_cast<size_t>(width); b++)
      for (auto& next : extensions(k, beam[b].opts, target)) {
        std::vector<std::pair<int, int64_t>> key;
        for (const Opt& o : next) key.push_back({static_cast<int>(o.kind) * 1000 + o.axis, o.amount});
        if (seen.insert(key).second) cands.push_back(std::move(next));
      }
    if (cands.empty()) break;
    beam = run_round(cands);
    tried += cands.size();
    if (beam.empty() || beam[0].t >= best.t * 0.99) break;  // no better by more than noise
    best = beam[0];
  }
  write_file_atomic(path, opts_str(best.opts));
  if (debug_at(2)) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    debug_log(2, "beam: " + k.name + " -> [" + opts_str(best.opts) + "] " + std::to_string(best.t * 1e6) +
                     " us, " + std::to_string(tried) + " candidates in " + std::to_string(s) + " s");
  }
  return best.opts;
}

}  // namespace lazygrad
