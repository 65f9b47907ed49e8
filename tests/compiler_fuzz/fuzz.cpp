// Running, comparing, minimizing and reporting (fuzz.h).
#include "fuzz.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "calls.h"
#include "codegen/optimize.h"
#include "engine/beam.h"
#include "engine/realize.h"
#include "generate.h"
#include "multi/shard.h"
#include "renderer/renderer.h"
#include "runtime/device.h"

namespace lazygrad::fuzz {

namespace {

// How far from the reference a float may be, in units of the reference's bound (reference.h).
constexpr double kTolerance = 4;

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))) * 3; }

// The sampled opts of one kernel: a random walk of up to four BEAM extensions from the required
// or the default opts. Seeded by the mode and the kernel's name, so a program run again (and a
// smaller program with the same kernel) gets the same opts.
std::vector<Opt> sampled_opts(const Kernel& k, uint64_t seed) {
  uint64_t h = seed;
  for (char c : k.name) h = mix(h, static_cast<unsigned char>(c));
  std::mt19937_64 rng(h);
  const Target& target = device(k.device).renderer().target();  // work-groups on CL, lanes on the CPU
  std::vector<Opt> opts = rng() % 2 ? required_opts(k) : default_opts(k, target);
  for (int steps = static_cast<int>(rng() % 5); steps > 0; steps--) {
    auto next = extensions(k, opts, target);
    if (next.empty()) break;
    opts = next[rng() % next.size()];
  }
  return opts;
}

// The opts sampled for each kernel in the last run, for the report: "name [opts]".
std::vector<std::string>& sampled_log() {
  static std::vector<std::string> log;
  return log;
}

// Sets a mode for its lifetime.
class ModeScope {
 public:
  // fresh: a cache key of its own, so that every kernel is compiled (and its opts logged) again.
  explicit ModeScope(const Mode& m, bool fresh = false) {
    if (is_device_tuple(m.device)) {  // a sharded mode: made on the first device, then sharded
      set_default_device(split_devices(m.device)[0]);
      set_shard_inputs(split_devices(m.device));
    } else {
      set_default_device(m.device);
    }
    set_noopt(m.noopt);
    sampled_log().clear();
    if (m.opts_seed) {
      uint64_t seed = m.opts_seed;
      set_opts_chooser(
          [seed](const Kernel& k) {
            std::vector<Opt> opts = sampled_opts(k, seed);
            sampled_log().push_back(k.name + " [" + opts_str(opts) + "]");
            return opts;
          },
          static_cast<int64_t>(fresh ? mix(seed, 0xf7e54) : seed));
    }
  }
  ~ModeScope() {
    set_default_device("CPU");
    set_shard_inputs({});
    set_noopt(false);
    set_opts_chooser(nullptr, 0);
  }
};

std::string num_text(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// Steps no output depends on are dropped, and the rest renumbered.
Program prune(const Program& p) {
  std::vector<bool> live(p.steps.size(), false);
  for (int o : p.outputs) live[o] = true;
  for (size_t k = p.steps.size(); k-- > 0;)
    if (live[k])
      for (int i : p.steps[k].in) live[i] = true;
  std::vector<int> index(p.steps.size(), -1);
  Program out;
  out.seed = p.seed;
  for (size_t k = 0; k < p.steps.size(); k++) {
    if (!live[k]) continue;
    Step s = p.steps[k];
    for (int& i : s.in) i = index[i];
    index[k] = static_cast<int>(out.steps.size());
    out.steps.push_back(std::move(s));
  }
  for (int o : p.outputs) out.outputs.push_back(index[o]);
  return out;
}

// Step k replaced by an input holding its reference values (a cut: everything above it is gone).
Program cut(const Program& p, size_t k, const RefTensor& value) {
  Program q = p;
  Step s;
  s.op = Op::Input;
  s.shape = value.shape;
  s.dtype = value.dtype;
  for (int64_t e = 0; e < value.numel(); e++) s.values.push_back(value.value(e));
  q.steps[k] = std::move(s);
  return prune(q);
}

// Every use of step k read from `by` instead (k's input of the same shape and dtype).
Program bypass(const Program& p, size_t k, int by) {
  Program q = p;
  for (size_t j = k + 1; j < q.steps.size(); j++)
    for (int& i : q.steps[j].in)
      if (i == static_cast<int>(k)) i = by;
  for (int& o : q.outputs)
    if (o == static_cast<int>(k)) o = by;
  return prune(q);
}

}  // namespace

std::vector<Mode> modes_for(uint64_t seed, int samples, const std::string& device) {
  const std::string prefix = device == "CPU" ? "" : device + " ";
  std::vector<Mode> out = {{prefix + "default", 0, false, device}, {prefix + "NOOPT", 0, true, device}};
  for (int k = 0; k < samples; k++) {
    uint64_t s = mix(mix(seed, 0x5eed), k + 1) | 1;
    out.push_back({prefix + "opts:" + std::to_string(s), s, false, device});
  }
  return out;
}

Outcome run_lazygrad(const Program& p, const Mode& m, bool fresh) {
  Outcome o;
  ModeScope scope(m, fresh);
  std::vector<Tensor> v;
  try {
    for (const Step& s : p.steps) {
      try {
        v.push_back(apply_step(s, v));
      } catch (const Error& e) {
        // An Error while building the graph: an op or a case lazygrad refuses (not the compiler's).
        // An Error from a Realize step ran kernels: that one counts.
        if (s.op == Op::Realize) throw;
        o.error = std::string(op_name(s.op)) + ": " + e.what();
        o.unsupported = true;
        return o;
      }
    }
    std::vector<Tensor> outs;
    for (int k : p.outputs) outs.push_back(v[k]);
    realize(outs);
    for (const Tensor& t : outs) {
      o.shapes.push_back(t.shape());
      o.dtypes.push_back(t.dtype());
      if (is_float(t.dtype())) {
        o.values.push_back(t.to_vector<double>());
        o.ints.emplace_back();
      } else {
        o.ints.push_back(t.to_vector<int64_t>());
        o.values.emplace_back();
      }
    }
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

std::optional<Mismatch> compare(const Program& p, const std::vector<RefTensor>& ref, const Outcome& got) {
  if (!got.error.empty()) return Mismatch{0, -1, "lazygrad threw: " + got.error.substr(0, 400)};
  for (size_t o = 0; o < p.outputs.size(); o++) {
    const RefTensor& want = ref[p.outputs[o]];
    std::string name = "v" + std::to_string(p.outputs[o]);
    if (got.shapes[o] != want.shape)
      return Mismatch{
          o, -1,
          name + " has shape " + shape_text(got.shapes[o]) + ", the reference " + shape_text(want.shape)};
    if (got.dtypes[o] != want.dtype)
      return Mismatch{o, -1,
                      name + " is " + std::string(dtype_name(got.dtypes[o])) + ", the reference " +
                          std::string(dtype_name(want.dtype))};
    for (int64_t e = 0; e < want.numel(); e++) {
      std::string at = name + "[" + std::to_string(e) + "]";
      if (!want.is_float_type()) {
        int64_t g = got.ints[o][e];
        if (want.index_limit >= 0 && (g < 0 || g >= want.index_limit))
          return Mismatch{
              o, e,
              at + " is " + std::to_string(g) + ", not an index below " + std::to_string(want.index_limit)};
        if (!want.choices.empty() && !want.choices[e].empty()) {
          bool ok = std::find(want.choices[e].begin(), want.choices[e].end(), g) != want.choices[e].end();
          if (!ok && !want.dc[e])
            return Mismatch{o, e, at + " is " + std::to_string(g) + ", not one of the near ties"};
          continue;
        }
        if (want.dc[e] || g == want.i[e]) continue;
        return Mismatch{
            o, e, at + " is " + std::to_string(g) + ", the reference says " + std::to_string(want.i[e])};
      }
      if (want.dc[e]) continue;
      double g = got.values[o][e], w = want.f[e];
      bool ok = std::isnan(w)   ? std::isnan(g)
                : std::isinf(w) ? g == w
                                : std::fabs(g - w) <= kTolerance * want.err[e];
      if (!ok)
        return Mismatch{o, e,
                        at + " is " + num_text(g) + ", the reference says " + num_text(w) + " (bound " +
                            num_text(kTolerance * want.err[e]) + ")"};
    }
  }
  return std::nullopt;
}

std::optional<Mismatch> check(const Program& p, const Mode& m) {
  std::vector<RefTensor> ref;
  try {
    ref = interpret(p);
  } catch (const Invalid&) {
    return std::nullopt;  // a reduced program PyTorch would refuse: not a reproducer
  }
  Outcome got = run_lazygrad(p, m);
  if (got.unsupported) return std::nullopt;
  return compare(p, ref, got);
}

Program minimize(Program p, const Mode& m, int attempts) {
  auto first = check(p, m);
  if (!first) return p;
  if (first->element >= 0) {  // a value differs: that output alone
    p.outputs = {p.outputs[first->output]};
    p = prune(p);
  } else {  // an exception, from some output's kernels: drop the outputs it does not need
    for (size_t o = p.outputs.size(); o-- > 0 && p.outputs.size() > 1 && attempts > 0;) {
      Program q = p;
      q.outputs.erase(q.outputs.begin() + static_cast<std::ptrdiff_t>(o));
      q = prune(q);
      attempts--;
      if (check(q, m)) p = q;
    }
  }
  bool changed = true;
  while (changed && attempts > 0) {
    changed = false;
    std::vector<RefTensor> ref = interpret(p);
    for (size_t k = p.steps.size(); k-- > 0 && attempts > 0;) {
      const Step& s = p.steps[k];
      if (s.op == Op::Input) continue;
      // Bypass: the step's own input of the same shape and dtype takes its place.
      for (int i : s.in) {
        if (ref[i].shape != ref[k].shape || ref[i].dtype != ref[k].dtype) continue;
        Program q = bypass(p, k, i);
        attempts--;
        if (check(q, m)) {
          p = q;
          changed = true;
          break;
        }
      }
      if (changed) break;
      // Cut: the step's value as an input (not for the output itself, which would leave nothing).
      if (static_cast<int>(k) == p.outputs[0]) continue;
      Program q = cut(p, k, ref[k]);
      attempts--;
      if (check(q, m)) {
        p = q;
        changed = true;
        break;
      }
    }
  }
  return p;
}

std::string report(const Program& p, const Mode& m, const Mismatch& mm) {
  std::ostringstream os;
  os << "FAIL seed " << p.seed << ", mode " << m.name << ": " << mm.what << "\n";
  os << "// Reproducer (" << p.steps.size() << " steps; mode " << m.name
     << (m.noopt       ? ": set_noopt(true) first"
         : m.opts_seed ? ": sampled opts, see fuzz.cpp"
                       : "")
     << "):\n";
  os << to_cpp(p);
  if (m.opts_seed) {
    run_lazygrad(p, m, true);  // again, compiling each kernel anew: the opts each kernel got
    for (const std::string& k : sampled_log()) os << "  // kernel " << k << "\n";
  }
  std::vector<RefTensor> ref = interpret(p);
  for (int o : p.outputs) {
    const RefTensor& r = ref[o];
    os << "  // v" << o << " " << shape_text(r.shape) << " " << dtype_name(r.dtype) << ", the reference: {";
    for (int64_t e = 0; e < r.numel() && e < 64; e++)
      os << (e ? ", " : "") << (r.dc[e] ? "?" : num_text(r.value(e)));
    os << (r.numel() > 64 ? ", ..." : "") << "}\n";
  }
  return os.str();
}

}  // namespace lazygrad::fuzz
