// The profiler (lazygrad/profile.h): scopes name the layers, a realize listener charges each
// kernel to them by their share of its FLOPs, and the roofline's ceilings are measured here.
#include "lazygrad/profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

#include "engine/trace.h"
#include "lazygrad/nn.h"
#include "lazygrad/runtime.h"
#include "lazygrad/tensor.h"

namespace lazygrad {

namespace {

std::atomic<int> profiles_running{0};

// Scope ids (UOp::scope): 1 + an index here. A module's scope is keyed by its address, a label's by
// the label; the table only grows (a few entries per layer ever profiled).
struct ScopeEntry {
  const nn::Module* module;  // null for a label
  std::string label;         // the module's type, or the label
};
struct Scopes {
  std::mutex mu;
  std::vector<ScopeEntry> entries;
  std::unordered_map<const nn::Module*, uint32_t> by_module;
  std::unordered_map<std::string, uint32_t> by_label;
};
Scopes& scopes() {
  static Scopes s;
  return s;
}

uint32_t scope_of(const nn::Module* module, const std::string& label) {
  Scopes& s = scopes();
  std::lock_guard<std::mutex> lock(s.mu);
  uint32_t& id = module ? s.by_module[module] : s.by_label[label];
  if (id == 0) {
    s.entries.push_back({module, label});
    id = static_cast<uint32_t>(s.entries.size());
  } else if (module) {
    s.entries[id - 1].label = label;  // another module may now live at that address
  }
  return id;
}

ScopeEntry scope_entry(uint32_t id) {
  Scopes& s = scopes();
  std::lock_guard<std::mutex> lock(s.mu);
  return id == 0 || id > s.entries.size() ? ScopeEntry{nullptr, "(no layer)"} : s.entries[id - 1];
}

double best_seconds(const std::function<void()>& fn) {
  double best = 1e30;
  for (int i = 0; i < 3; i++) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

std::string with_commas(double v) {
  std::string s = std::to_string(static_cast<long long>(v + 0.5));
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string si(double v, const char* unit) {
  static const char* const prefixes[] = {"", "K", "M", "G", "T"};
  size_t p = 0;
  for (; v >= 1000 && p < 4; p++) v /= 1000;
  char out[32];
  if (p == 0)
    std::snprintf(out, sizeof out, "%.0f %s", v, unit);
  else
    std::snprintf(out, sizeof out, "%.2f %s%s", v, prefixes[p], unit);
  return out;
}

}  // namespace

ProfileScope::ProfileScope(const nn::Module& module) {
  if (profiles_running.load(std::memory_order_relaxed) == 0) return;
  active_ = true;
  previous_ = exchange_scope(scope_of(&module, module.type_name()));
}

ProfileScope::ProfileScope(const std::string& label) {
  if (profiles_running.load(std::memory_order_relaxed) == 0) return;
  active_ = true;
  previous_ = exchange_scope(scope_of(nullptr, label));
}

ProfileScope::~ProfileScope() {
  if (active_) exchange_scope(previous_);
}

double Roofline::attainable_gflops(double intensity) const { return std::min(gflops, intensity * gbs); }

Roofline measure_roofline(const std::string& device_name) {
  const std::string device = device_name.empty() ? default_device() : device_name;
  static std::mutex mu;
  static std::map<std::string, Roofline> measured;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = measured.find(device); it != measured.end()) return it->second;
  Roofline r;
  r.device = device;
  constexpr int64_t n = 1024, elements = int64_t{1} << 24;
  Tensor a = Tensor::rand({n, n}, kFloat32, device).realize();
  Tensor b = Tensor::rand({n, n}, kFloat32, device).realize();
  a.matmul(b).realize();  // compiled (or loaded) before it is timed
  r.gflops = 2.0 * n * n * n / best_seconds([&] { a.matmul(b).realize(); }) * 1e-9;
  Tensor x = Tensor::rand({elements}, kFloat32, device).realize();
  (x + 1).realize();
  r.gbs = 2.0 * 4 * elements / best_seconds([&] { (x + 1).realize(); }) * 1e-9;
  measured[device] = r;
  return r;
}

Profile profile(const std::function<void()>& fn, const nn::Module* model) {
  Profile p;
  p.roofline = measure_roofline();
  std::map<uint32_t, size_t> row_of;  // scope -> index in p.layers
  auto row = [&](uint32_t scope) -> LayerProfile& {
    auto [it, fresh] = row_of.try_emplace(scope, p.layers.size());
    if (fresh) {
      ScopeEntry e = scope_entry(scope);
      LayerProfile& l = p.layers.emplace_back();
      l.name = l.type = e.label;
      l.parameters = -1;  // named below, once the model's names are known
    }
    return p.layers[it->second];
  };
  std::vector<std::vector<std::pair<uint32_t, double>>> kernel_scopes;  // per kernel: scope, share
  RealizeListener listener([&](const RealizeTrace& trace) {
    for (const TracedKernel& k : trace.kernels) {
      if (k.global_size == 0 && !k.copy) continue;  // not launched
      std::map<uint32_t, double> flops;
      double total = 0;
      for (const auto& u : k.nodes) {
        const auto f = static_cast<double>(node_flops(*u));
        if (f == 0) continue;
        flops[u->scope.load(std::memory_order_relaxed)] += f;
        total += f;
      }
      if (total == 0) flops[k.nodes.empty() ? 0 : k.nodes.back()->scope.load()] = total = 1;
      KernelProfile& kp = p.kernels.emplace_back();
      kp.name = k.name;
      kp.device = k.device;
      kp.flops = k.flops;
      kp.bytes = k.bytes;
      kp.seconds = k.seconds;
      auto& shares = kernel_scopes.emplace_back();
      for (const auto& [scope, f] : flops) shares.emplace_back(scope, f / total);
      for (const auto& [scope, share] : shares) {
        LayerProfile& l = row(scope);
        l.flops += share * static_cast<double>(k.flops);
        l.bytes += share * static_cast<double>(k.bytes);
        l.seconds += share * k.seconds;
        l.kernels++;
        l.shared_kernels += shares.size() > 1;
      }
    }
  });
  profiles_running++;
  auto t0 = std::chrono::steady_clock::now();
  try {
    fn();
  } catch (...) {
    profiles_running--;
    throw;
  }
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  profiles_running--;

  // Names: a module's place in the model, else its type; a type met twice is numbered.
  std::unordered_map<const nn::Module*, std::string> names;
  if (model)
    for (const auto& [name, m] : model->named_modules()) names.emplace(m, name.empty() ? "(model)" : name);
  std::map<std::string, int> seen;
  for (const auto& [scope, index] : row_of) {
    LayerProfile& l = p.layers[index];
    ScopeEntry e = scope_entry(scope);
    l.parameters = 0;
    if (!e.module) continue;
    auto it = names.find(e.module);
    if (it != names.end()) {
      l.name = it->second;
      for (const Tensor& t : e.module->parameters(false)) l.parameters += t.numel();
    } else if (int n = seen[l.type]++; n > 0) {
      l.name = l.type + "#" + std::to_string(n);
    }
  }
  for (size_t i = 0; i < p.kernels.size(); i++)
    for (const auto& [scope, share] : kernel_scopes[i])
      p.kernels[i].shares.emplace_back(p.layers[row_of.at(scope)].name, share);
  return p;
}

std::string Profile::table() const {
  std::string out;
  char line[400];
  std::snprintf(line, sizeof line, "roofline on %s (measured): %.1f GFLOP/s, %.1f GB/s\n",
                roofline.device.c_str(), roofline.gflops, roofline.gbs);
  out += line;
  std::snprintf(line, sizeof line, "%-22s %-14s %11s %11s %11s %8s %9s %8s %9s %6s\n", "layer", "type",
                "params", "FLOPs", "bytes", "kernels", "time ms", "GFLOP/s", "roof GF/s", "roof%");
  out += line;
  LayerProfile total;
  for (const auto& l : layers) {
    const double achieved = l.seconds > 0 ? l.flops / l.seconds * 1e-9 : 0;
    const double roof = l.bytes > 0 ? roofline.attainable_gflops(l.flops / l.bytes) : roofline.gflops;
    std::string kernels = std::to_string(l.kernels);
    if (l.shared_kernels) kernels += "(" + std::to_string(l.shared_kernels) + "s)";
    std::snprintf(line, sizeof line, "%-22s %-14s %11s %11s %11s %8s %9.3f %8.2f %9.2f %5.1f%%\n",
                  l.name.c_str(), l.type.c_str(), with_commas(static_cast<double>(l.parameters)).c_str(),
                  si(l.flops, "").c_str(), si(l.bytes, "B").c_str(), kernels.c_str(), l.seconds * 1e3,
                  achieved, roof, roof > 0 ? 100 * achieved / roof : 0.0);
    out += line;
    total.parameters += l.parameters;
    total.flops += l.flops;
    total.bytes += l.bytes;
    total.seconds += l.seconds;
  }
  std::snprintf(line, sizeof line, "%-22s %-14s %11s %11s %11s %8zu %9.3f %8.2f\n", "total", "",
                with_commas(static_cast<double>(total.parameters)).c_str(), si(total.flops, "").c_str(),
                si(total.bytes, "B").c_str(), kernels.size(), total.seconds * 1e3,
                total.seconds > 0 ? total.flops / total.seconds * 1e-9 : 0.0);
  out += line;
  std::snprintf(line, sizeof line,
                "kernels: %zu launched, %.3f ms in kernels, %.3f ms in all (compiling included)\n",
                kernels.size(), total.seconds * 1e3, seconds * 1e3);
  out += line;
  bool any_shared = false;
  for (const auto& k : kernels) {
    if (k.shares.size() < 2) continue;
    if (!any_shared) out += "shared kernels (a layer's FLOPs share of each):\n";
    any_shared = true;
    out += "  " + k.name + ":";
    for (const auto& [name, share] : k.shares) {
      std::snprintf(line, sizeof line, " %s %.1f%%", name.c_str(), share * 100);
      out += line;
    }
    out += "\n";
  }
  if (!any_shared) out += "no kernel was shared between layers\n";
  return out;
}

}  // namespace lazygrad
