// A stand-in for NVIDIA's driver (libcuda.so.1) on a machine without a GPU, for test_cuda_mock:
// device memory is host memory, copies are memcpy, streams and events complete at once, and a
// kernel launch runs nothing (it is counted). It lets the CUDA device's own code run here: device
// discovery and `lazygrad info`, the allocator and its pool, copies through the pinned staging in
// halves, transfers between GPUs, the error buffer, the compile path and its cache. Loaded through
// LAZYGRAD_CUDA_DRIVER; MOCK_CUDA_GPUS sets how many GPUs it has (default 1), MOCK_CUDA_MEMORY the
// bytes each may allocate (default 1 GiB). Signatures as in cuda_api.h.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidDevice = 101;

struct Gpu {
  size_t used = 0;
  int context = 0;  // its primary context's address stands for it
};

std::mutex mu;
std::map<unsigned long long, std::pair<int, size_t>> allocations;  // pointer -> (gpu, bytes)
std::atomic<long> launches{0};
thread_local int current = -1;  // the calling thread's context: a GPU's index

int gpus() {
  const char* v = std::getenv("MOCK_CUDA_GPUS");
  return v ? std::atoi(v) : 1;
}
size_t memory() {
  const char* v = std::getenv("MOCK_CUDA_MEMORY");
  return v ? std::strtoull(v, nullptr, 10) : size_t(1) << 30;
}
Gpu& gpu(int i) {
  static Gpu all[16];
  return all[i];
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return kSuccess;
}
CUresult cuGetErrorName(CUresult r, const char** name) {
  *name = r == kOutOfMemory     ? "CUDA_ERROR_OUT_OF_MEMORY"
          : r == kInvalidDevice ? "CUDA_ERROR_INVALID_DEVICE"
                                : "CUDA_ERROR_MOCK";
  return kSuccess;
}
CUresult cuDeviceGetCount(int* n) {
  *n = gpus();
  return kSuccess;
}
CUresult cuDeviceGet(int* d, int i) {
  if (i < 0 || i >= gpus()) return kInvalidDevice;
  *d = i;
  return kSuccess;
}
CUresult cuDeviceGetName(char* name, int len, int d) {
  std::snprintf(name, static_cast<size_t>(len), "Mock GPU %d", d);
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int* v, int attribute, int) {
  switch (attribute) {
    case 75:  // compute capability major
      *v = 9;
      break;
    case 76:  // minor
      *v = 0;
      break;
    case 16:  // SMs
      *v = 4;
      break;
    default:
      *v = 0;
  }
  return kSuccess;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int) {
  *bytes = memory();
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) {
  *ctx = &gpu(d).context;
  return kSuccess;
}
CUresult cuCtxSetCurrent(void* ctx) {
  for (int i = 0; i < gpus(); i++)
    if (ctx == &gpu(i).context) current = i;
  return kSuccess;
}
CUresult cuCtxSynchronize() { return kSuccess; }

CUresult cuMemAlloc_v2(unsigned long long* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu);
  if (current < 0) return kInvalidValue;  // no context set: the device forgot to enter()
  if (gpu(current).used + bytes > memory()) return kOutOfMemory;
  void* m = std::malloc(bytes);
  if (!m) return kOutOfMemory;
  *p = reinterpret_cast<unsigned long long>(m);
  allocations[*p] = {current, bytes};
  gpu(current).used += bytes;
  return kSuccess;
}
CUresult cuMemFree_v2(unsigned long long p) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = allocations.find(p);
  if (it == allocations.end()) return kInvalidValue;
  gpu(it->second.first).used -= it->second.second;
  allocations.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return kSuccess;
}
CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned) {
  *p = std::malloc(bytes);
  return *p ? kSuccess : kOutOfMemory;
}
CUresult cuMemFreeHost(void* p) {
  std::free(p);
  return kSuccess;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t n, void*) {
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return kSuccess;
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, size_t n, void*) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return kSuccess;
}
CUresult cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t n, void*) {
  std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return kSuccess;
}
CUresult cuMemcpyPeerAsync(unsigned long long dst, void*, unsigned long long src, void*, size_t n, void*) {
  std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return kSuccess;
}
CUresult cuMemsetD32Async(unsigned long long dst, unsigned value, size_t n, void*) {
  auto* p = reinterpret_cast<unsigned*>(dst);
  for (size_t i = 0; i < n; i++) p[i] = value;
  return kSuccess;
}
CUresult cuStreamCreate(void** s, unsigned) {
  static int stream;
  *s = &stream;
  return kSuccess;
}
CUresult cuStreamSynchronize(void*) { return kSuccess; }
CUresult cuEventCreate(void** e, unsigned) {
  *e = new int(0);
  return kSuccess;
}
CUresult cuEventRecord(void*, void*) { return kSuccess; }
CUresult cuEventSynchronize(void*) { return kSuccess; }
CUresult cuEventElapsedTime(float* ms, void*, void*) {
  *ms = 0.001f;
  return kSuccess;
}
CUresult cuEventDestroy_v2(void* e) {
  delete static_cast<int*>(e);
  return kSuccess;
}
CUresult cuModuleLoadData(void** m, const void* image) {
  if (!image) return kInvalidValue;
  *m = new int(0);
  return kSuccess;
}
CUresult cuModuleGetFunction(void** f, void*, const char*) {
  static int function;
  *f = &function;
  return kSuccess;
}
CUresult cuModuleUnload(void* m) {
  delete static_cast<int*>(m);
  return kSuccess;
}
CUresult cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                        void**, void**) {
  launches++;
  return kSuccess;
}

// For the test: how many launches there were, and the bytes GPU d has allocated.
long mock_cuda_launches() { return launches; }
size_t mock_cuda_used(int d) {
  std::lock_guard<std::mutex> lock(mu);
  return gpu(d).used;
}

}  // extern "C"
