// Opens the CUDA driver (cuda_api.h) and says why it cannot be used when it cannot.
#include "runtime/cuda/cuda_api.h"

#include <dlfcn.h>

#include <cstdlib>

#include "runtime/shared_library.h"

namespace lazygrad::cuda {

namespace {

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
  bind_symbol(lib, a.cuInit, "cuInit", missing);
  bind_symbol(lib, a.cuDriverGetVersion, "cuDriverGetVersion", missing);
  bind_symbol(lib, a.cuGetErrorName, "cuGetErrorName", missing);
  bind_symbol(lib, a.cuDeviceGetCount, "cuDeviceGetCount", missing);
  bind_symbol(lib, a.cuDeviceGet, "cuDeviceGet", missing);
  bind_symbol(lib, a.cuDeviceGetName, "cuDeviceGetName", missing);
  bind_symbol(lib, a.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  bind_symbol(lib, a.cuDeviceTotalMem, "cuDeviceTotalMem_v2", missing);
  bind_symbol(lib, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  bind_symbol(lib, a.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  bind_symbol(lib, a.cuCtxSynchronize, "cuCtxSynchronize", missing);
  bind_symbol(lib, a.cuMemAlloc, "cuMemAlloc_v2", missing);
  bind_symbol(lib, a.cuMemFree, "cuMemFree_v2", missing);
  bind_symbol(lib, a.cuMemHostAlloc, "cuMemHostAlloc", missing);
  bind_symbol(lib, a.cuMemFreeHost, "cuMemFreeHost", missing);
  bind_symbol(lib, a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  bind_symbol(lib, a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  bind_symbol(lib, a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  bind_symbol(lib, a.cuMemcpyPeerAsync, "cuMemcpyPeerAsync", missing);
  bind_symbol(lib, a.cuMemsetD32Async, "cuMemsetD32Async", missing);
  bind_symbol(lib, a.cuStreamCreate, "cuStreamCreate", missing);
  bind_symbol(lib, a.cuStreamSynchronize, "cuStreamSynchronize", missing);
  bind_symbol(lib, a.cuEventCreate, "cuEventCreate", missing);
  bind_symbol(lib, a.cuEventRecord, "cuEventRecord", missing);
  bind_symbol(lib, a.cuEventSynchronize, "cuEventSynchronize", missing);
  bind_symbol(lib, a.cuEventElapsedTime, "cuEventElapsedTime", missing);
  bind_symbol(lib, a.cuEventDestroy, "cuEventDestroy_v2", missing);
  bind_symbol(lib, a.cuModuleLoadData, "cuModuleLoadData", missing);
  bind_symbol(lib, a.cuModuleGetFunction, "cuModuleGetFunction", missing);
  bind_symbol(lib, a.cuModuleUnload, "cuModuleUnload", missing);
  bind_symbol(lib, a.cuLaunchKernel, "cuLaunchKernel", missing);
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
