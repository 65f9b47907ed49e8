// What the runtime knows about itself: settings read from the environment, devices, the compiler
// and the kernel cache. `lazygrad info` prints these.
#pragma once

#include <string>
#include <vector>

namespace lazygrad {

struct Settings {
  int debug = 0;    // DEBUG: 1 summary per realize, 2 a line per kernel, 3 schedule, 4 source, 5 IR
  int threads = 1;  // THREADS: worker threads for kernels (default: the core count)
  bool flush_denormals = true;  // FTZ: flush denormals on the runtime's worker threads (FTZ=0 turns it off)
  std::string cc;               // CC: the C compiler for CPU kernels
  std::string cflags;           // flags passed to it
  // LAZYGRAD_CPU_COMPILER: "llvm" (clang and LLVM inside the process; the default where the build has
  // them) or "cc" (the compiler above, a process per batch of kernels): docs/devices.md
  std::string cpu_compiler = "cc";
  std::string cache_dir;  // LAZYGRAD_CACHE, else $XDG_CACHE_HOME/lazygrad, else ~/.cache/lazygrad
  bool noopt = false;     // NOOPT=1: kernels as lowered, no upcast, unroll or vectors
  int beam = 0;           // BEAM=N: search N candidates wide for each new kernel's optimizations
  // VIZ=1: after each realize, write a self-contained HTML page of it (graph, kernels, their source and
  // time) to viz_path (VIZ_OUT, default lazygrad-viz.html in the working folder): docs/viz.md
  bool viz = false;
  std::string viz_path = "lazygrad-viz.html";
};

// Read once from the environment; set_* change them for this process (tests use these).
const Settings& settings();
void set_debug(int level);
void set_threads(int n);
void set_noopt(bool on);
void set_flush_denormals(bool on);
void set_beam(int width);
// VIZ on, writing to `path`; an empty path turns it off.
void set_viz(const std::string& path);

struct DeviceInfo {
  std::string name;    // "CPU", "CL", "CL:1"
  std::string detail;  // what runs kernels there: compiler and version, core count
  bool available = false;
};
// Every device found, and for each known kind that is missing, one unavailable entry saying why
// (no library, no platform, no device).
std::vector<DeviceInfo> devices();
// What compiles CPU kernels in this process, for a benchmark's header: "clang 19.1.7 and LLVM 19.1.7,
// in process, for rocketlake, -O2" or "cc -O2 -march=native ..." (settings().cpu_compiler).
std::string cpu_kernel_compiler();
// Where tensors go when no device is given: DEVICE from the environment (canonical: "cl:0" is
// "CL"), else "CPU". set_default_device changes it for the process; Error when the device is
// unknown or missing.
std::string default_device();
void set_default_device(const std::string& name);

std::string version();

}  // namespace lazygrad
