// Opens NVRTC (nvrtc.h) and compiles with it.
#include "runtime/cuda/nvrtc.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "lazygrad/error.h"
#include "runtime/shared_library.h"

namespace lazygrad {

namespace {

using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;

struct Nvrtc {
  std::string error, path;
  int major = 0, minor = 0;
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;
};

Nvrtc open_nvrtc() {
  Nvrtc n;
  std::vector<std::string> paths;
  if (const char* forced = std::getenv("LAZYGRAD_NVRTC"); forced && *forced) {
    paths.push_back(forced);
  } else {
    const char* names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    std::vector<std::string> dirs{""};
    if (const char* cuda = std::getenv("CUDA_PATH"); cuda && *cuda)
      dirs.push_back(std::string(cuda) + "/lib64/");
    dirs.push_back("/usr/local/cuda/lib64/");
    for (const auto& d : dirs)
      for (const char* name : names) paths.push_back(d + name);
  }
  void* lib = nullptr;
  std::string first_error;
  for (const auto& p : paths) {
    lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed, like the driver
    if (lib) {
      n.path = p;
      break;
    }
    if (first_error.empty()) first_error = dlerror();
  }
  if (!lib) {
    n.error =
        "no NVRTC (" + first_error + (paths.size() > 1 ? "; nor in $CUDA_PATH or /usr/local/cuda" : "") + ")";
    return n;
  }
  std::string missing;
  bind_symbol(lib, n.nvrtcVersion, "nvrtcVersion", missing);
  bind_symbol(lib, n.nvrtcGetErrorString, "nvrtcGetErrorString", missing);
  bind_symbol(lib, n.nvrtcCreateProgram, "nvrtcCreateProgram", missing);
  bind_symbol(lib, n.nvrtcDestroyProgram, "nvrtcDestroyProgram", missing);
  bind_symbol(lib, n.nvrtcCompileProgram, "nvrtcCompileProgram", missing);
  bind_symbol(lib, n.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", missing);
  bind_symbol(lib, n.nvrtcGetProgramLog, "nvrtcGetProgramLog", missing);
  bind_symbol(lib, n.nvrtcGetPTXSize, "nvrtcGetPTXSize", missing);
  bind_symbol(lib, n.nvrtcGetPTX, "nvrtcGetPTX", missing);
  bind_symbol(lib, n.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", missing);
  bind_symbol(lib, n.nvrtcGetCUBIN, "nvrtcGetCUBIN", missing);
  if (!missing.empty()) {
    n.error = "NVRTC " + n.path + " lacks " + missing;
    return n;
  }
  if (n.nvrtcVersion(&n.major, &n.minor) != 0) n.error = "NVRTC " + n.path + ": nvrtcVersion failed";
  return n;
}

const Nvrtc& nvrtc() {
  static const Nvrtc n = open_nvrtc();
  return n;
}

// Destroys the program on every path out of nvrtc_compile.
struct ProgramGuard {
  nvrtcProgram p = nullptr;
  ~ProgramGuard() {
    if (p) nvrtc().nvrtcDestroyProgram(&p);
  }
};

}  // namespace

std::string nvrtc_missing() { return nvrtc().error; }

std::string nvrtc_version() {
  const Nvrtc& n = nvrtc();
  return n.error.empty() ? std::to_string(n.major) + "." + std::to_string(n.minor) : "";
}

std::string nvrtc_compile(const std::string& source, const std::string& what, const std::string& arch) {
  const Nvrtc& n = nvrtc();
  if (!n.error.empty()) throw Error("CUDA: " + n.error);
  ProgramGuard prog;
  auto fail = [&](const std::string& call, nvrtcResult r) {
    return Error("compile: NVRTC " + call + " of " + what + " failed: " + n.nvrtcGetErrorString(r));
  };
  if (nvrtcResult r =
          n.nvrtcCreateProgram(&prog.p, source.c_str(), (what + ".cu").c_str(), 0, nullptr, nullptr))
    throw fail("nvrtcCreateProgram", r);
  const std::string gpu = "--gpu-architecture=" + arch;
  // -default-device: the base's helpers are device functions. --fmad=false: a * b + c is rounded
  // twice, as on the CPU (fused multiply-adds are written explicitly, lg_vfma_1).
  const char* options[] = {gpu.c_str(), "-default-device", "--fmad=false", "--std=c++17", "-w"};
  nvrtcResult built = n.nvrtcCompileProgram(prog.p, 5, options);
  if (built != 0) {
    size_t size = 0;
    std::string log;
    if (n.nvrtcGetProgramLogSize(prog.p, &size) == 0 && size > 1) {
      log.resize(size);
      if (n.nvrtcGetProgramLog(prog.p, log.data()) != 0) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    throw Error("compile: NVRTC build of " + what + " for " + arch + " failed (" +
                n.nvrtcGetErrorString(built) + "):\n" + log + "\n--- source ---\n" + source);
  }
  const bool cubin = arch.rfind("sm_", 0) == 0;
  size_t size = 0;
  if (nvrtcResult r = cubin ? n.nvrtcGetCUBINSize(prog.p, &size) : n.nvrtcGetPTXSize(prog.p, &size))
    throw fail(cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", r);
  std::string image(size, '\0');
  if (nvrtcResult r = cubin ? n.nvrtcGetCUBIN(prog.p, image.data()) : n.nvrtcGetPTX(prog.p, image.data()))
    throw fail(cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", r);
  return image;
}

}  // namespace lazygrad
