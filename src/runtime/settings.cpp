// Settings from the environment, and what `lazygrad info` reports.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "debug.h"
#include "lazygrad/error.h"
#include "lazygrad/runtime.h"
#include "runtime/cpu/llvm_compiler.h"
#include "runtime/device.h"

namespace lazygrad {

namespace {
std::string env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}
int env_int(const char* name, int fallback) {
  std::string v = env(name);
  if (v.empty()) return fallback;
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    throw Error(std::string("settings: ") + name + "=" + v + " is not an integer");
  }
}

Settings& mutable_settings() {
  static Settings s = [] {
    Settings s;
    s.debug = env_int("DEBUG", 0);
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    s.threads = std::max(1, env_int("THREADS", cores > 0 ? cores : 1));
    s.flush_denormals = env_int("FTZ", 1) != 0;
    s.noopt = env_int("NOOPT", 0) != 0;
    s.beam = std::max(0, env_int("BEAM", 0));
    s.viz = env_int("VIZ", 0) != 0;
    s.viz_path = env("VIZ_OUT", s.viz_path);
    s.cc = env("CC", "cc");
    // IEEE semantics: no -ffast-math, no FMA contraction (results match PyTorch's op-by-op ones);
    // -fwrapv makes signed overflow wrap as it does in PyTorch.
    s.cflags =
        env("LAZYGRAD_CFLAGS", "-O2 -march=native -fPIC -shared -fwrapv -fno-math-errno -ffp-contract=off");
    // The in-process compiler where the build has it: same kernels, same values, a third of the
    // compile time (docs/devices.md, "How the CPU's compiler is chosen").
    s.cpu_compiler = env("LAZYGRAD_CPU_COMPILER", llvm_compiler_built() ? "llvm" : "cc");
    if (s.cpu_compiler != "cc" && s.cpu_compiler != "llvm")
      throw Error("settings: LAZYGRAD_CPU_COMPILER=" + s.cpu_compiler +
                  " is not a CPU compiler (cc or llvm)");
    std::string xdg = env("XDG_CACHE_HOME", env("HOME", "/tmp") + "/.cache");
    s.cache_dir = env("LAZYGRAD_CACHE", xdg + "/lazygrad");
    return s;
  }();
  return s;
}
}  // namespace

const Settings& settings() { return mutable_settings(); }
void set_debug(int level) { mutable_settings().debug = level; }
void set_threads(int n) {
  if (n < 1) throw Error("set_threads: need at least 1 thread, got " + std::to_string(n));
  mutable_settings().threads = n;
}

void set_noopt(bool on) { mutable_settings().noopt = on; }
void set_flush_denormals(bool on) { mutable_settings().flush_denormals = on; }
void set_beam(int width) { mutable_settings().beam = std::max(0, width); }
void set_viz(const std::string& path) {
  mutable_settings().viz = !path.empty();
  if (!path.empty()) mutable_settings().viz_path = path;
}

void debug_log(int level, const std::string& line) {
  if (!debug_at(level)) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << line << "\n";
}

std::string version() { return "0.1.0"; }

}  // namespace lazygrad
