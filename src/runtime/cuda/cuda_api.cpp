// Opens the CUDA driver (cuda_api.h) and says why it cannot be used when it cannot.
#include "runtime/cuda/cuda_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace lazygrad::cuda {

namespace {

template <class Fn>
void bind(void* lib, Fn& fn, const char* name, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
}

Api open_api() {
  Api a;
  const char* forced = std::getenv("LAZYGRAD_CUDA_DRIVER");
  a.path = forced && *forced ? forced : "libcuda.so.1";
  // Never closed: the driver keeps threads and atexit handlers that must outlive any unload.
  void* lib = dlopen(a.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::string why = dlerror();
    a.error = "no CUDA driver (" + why + ")";
    return a;
  }
  std::string missing;
  bind(lib, a.cuInit, "cuInit", missing);
  bind(lib, a.cuDriverGetVersion, "cuDriverGetVersion", missing);
  bind(lib, a.cuGetErrorName, "cuGetErrorName", missing);
  bind(lib, a.cuDeviceGetCount, "cuDeviceGetCount", missing);
  bind(lib, a.cuDeviceGet, "cuDeviceGet", missing);
  bind(lib, a.cuDeviceGetName, "cuDeviceGetName", missing);
  bind(lib, a.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  bind(lib, a.cuDeviceTotalMem, "cuDeviceTotalMem_v2", missing);
  bind(lib, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  bind(lib, a.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  bind(lib, a.cuCtxSynchronize, "cuCtxSynchronize", missing);
  bind(lib, a.cuMemAlloc, "cuMemAlloc_v2", missing);
  bind(lib, a.cuMemFree, "cuMemFree_v2", missing);
  bind(lib, a.cuMemHostAlloc, "cuMemHostAlloc", missing);
  bind(lib, a.cuMemFreeHost, "cuMemFreeHost", missing);
  bind(lib, a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  bind(lib, a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  bind(lib, a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  bind(lib, a.cuMemcpyPeerAsync, "cuMemcpyPeerAsync", missing);
  bind(lib, a.cuMemsetD32Async, "cuMemsetD32Async", missing);
  bind(lib, a.cuStreamCreate, "cuStreamCreate", missing);
  bind(lib, a.cuStreamSynchronize, "cuStreamSynchronize", missing);
  bind(lib, a.cuEventCreate, "cuEventCreate", missing);
  bind(lib, a.cuEventRecord, "cuEventRecord", missing);
  bind(lib, a.cuEventSynchronize, "cuEventSynchronize", missing);
  bind(lib, a.cuEventElapsedTime, "cuEventElapsedTime", missing);
  bind(lib, a.cuEventDestroy, "cuEventDestroy_v2", missing);
  bind(lib, a.cuModuleLoadData, "cuModuleLoadData", missing);
  bind(lib, a.cuModuleGetFunction, "cuModuleGetFunction", missing);
  bind(lib, a.cuModuleUnload, "cuModuleUnload", missing);
  bind(lib, a.cuLaunchKernel, "cuLaunchKernel", missing);
  if (!missing.empty()) {
    a.error = "the CUDA driver " + a.path + " lacks " + missing;
    return a;
  }
  if (CUresult r = a.cuInit(0); r != CUDA_SUCCESS) {
    // The toolkit's stub (lib64/stubs/libcuda.so, for linking only) answers CUDA_ERROR_STUB_LIBRARY:
    // no NVIDIA driver is installed. CUDA_ERROR_NO_DEVICE: a driver without a GPU it can use.
    a.error = r == CUDA_ERROR_STUB_LIBRARY ? "no CUDA driver (" + a.path + " is the toolkit's stub library)"
              : r == CUDA_ERROR_NO_DEVICE  ? "no GPU (cuInit: CUDA_ERROR_NO_DEVICE)"
                                           : "cuInit failed: " + std::to_string(r);
    if (r != CUDA_ERROR_STUB_LIBRARY && r != CUDA_ERROR_NO_DEVICE) {
      const char* name = nullptr;
      if (a.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) a.error = std::string("cuInit failed: ") + name;
    }
  }
  return a;
}

}  // namespace

const Api& api() {
  static const Api a = open_api();
  return a;
}

std::string error_name(CUresult code) {
  const char* name = nullptr;
  if (api().cuGetErrorName && api().cuGetErrorName(code, &name) == CUDA_SUCCESS && name) return name;
  return "CUDA error " + std::to_string(code);
}

}  // namespace lazygrad::cuda
