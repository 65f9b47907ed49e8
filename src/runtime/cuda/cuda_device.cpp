// The CUDA device: NVIDIA GPUs through the driver API (cuda_api.h), kernels in CUDA C++ compiled by
// NVRTC (nvrtc.h) to machine code for the GPU's compute capability, cached on disk (keyed by a hash
// of the source, the sm_XX and the NVRTC version), and run on one stream per device in the device's
// primary context. Both libraries are opened at run time, so lazygrad builds and runs without CUDA,
// and `lazygrad info` says why it is missing. CUDA_VISIBLE_DEVICES chooses which GPUs are CUDA,
// CUDA:1, ... (the driver applies it).
//
// The kernel ABI is OpenCL's (cl_device.cpp): buffers, then one int64 per scalar var, then the
// error buffer (two ints) and the launch id; synchronize() reads and clears the error pair.
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "debug.h"
#include "lazygrad/error.h"
#include "renderer/renderer.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"

namespace lazygrad {

namespace {

using namespace cuda;

void check(CUresult code, const std::string& what) {
  if (code == CUDA_SUCCESS) return;
  std::string msg = "CUDA: " + what + " failed: " + error_name(code);
  if (code == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemoryError(msg);
  throw Error(msg);
}

int attribute(CUdevice d, int which) {
  int v = 0;
  check(api().cuDeviceGetAttribute(&v, which, d), "cuDeviceGetAttribute");
  return v;
}

std::string device_label(int index) { return index == 0 ? "CUDA" : "CUDA:" + std::to_string(index); }

// How many GPUs the driver gives; Error with the reason when CUDA cannot be used at all.
int gpu_count() {
  const Api& cu = api();
  if (!cu.error.empty()) throw Error("CUDA: " + cu.error);
  int n = 0;
  check(cu.cuDeviceGetCount(&n), "cuDeviceGetCount");
  if (n == 0) throw Error("CUDA: no GPU (the driver found none; check CUDA_VISIBLE_DEVICES)");
  if (std::string why = nvrtc_missing(); !why.empty()) throw Error("CUDA: " + why);
  return n;
}

struct Gpu {
  CUdevice dev = 0;
  std::string name;
  int sm = 0;  // compute capability, 10 * major + minor
};

Gpu gpu(int index) {
  Gpu g;
  check(api().cuDeviceGet(&g.dev, index), "cuDeviceGet " + std::to_string(index));
  char name[256] = {};
  check(api().cuDeviceGetName(name, sizeof name - 1, g.dev), "cuDeviceGetName");
  g.name = name;
  g.sm = 10 * attribute(g.dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
         attribute(g.dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  return g;
}

DeviceInfo describe(const std::string& label, const Gpu& g) {
  size_t bytes = 0;
  check(api().cuDeviceTotalMem(&bytes, g.dev), "cuDeviceTotalMem");
  int driver = 0;
  check(api().cuDriverGetVersion(&driver), "cuDriverGetVersion");
  return {label,
          g.name + ", sm_" + std::to_string(g.sm) + ", " +
              std::to_string(attribute(g.dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)) + " SMs, " +
              std::to_string(bytes >> 20) + " MiB, driver " + std::to_string(driver / 1000) + "." +
              std::to_string(driver % 1000 / 10) + ", NVRTC " + nvrtc_version(),
          true};
}

// ---- what buffers and programs share ---------------------------------------------------------------

// Pinned host memory that copies pass through, two halves used in turn, so one half is filled (or
// read) on the host while the other moves over the bus.
constexpr size_t kStagingBytes = size_t(8) << 20;

// A device's context, stream, error buffer and staging. Programs and the allocator hold it. It is
// never destroyed: devices live until the process ends, and the primary context with them.
struct Session {
  Gpu gpu;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr errors = 0;  // two ints: the first failing launch's error bits, and its launch id
  std::array<std::byte*, 2> staging{};
  std::array<CUevent, 2> staged{};  // recorded after the copy that last used each half
  std::mutex copy_mu;               // one copy through the staging at a time
  // Launches enqueue under the shared lock; synchronize() reads and clears the error buffer under
  // the exclusive one (as on OpenCL).
  mutable std::shared_mutex enqueue_mu;

  // The driver's calls act on the calling thread's current context: each entry point sets it
  // (compiles and copies come from worker threads too).
  void enter() const { check(api().cuCtxSetCurrent(context), "cuCtxSetCurrent"); }
};

std::shared_ptr<Session> open_session(const Gpu& g) {
  const Api& cu = api();
  auto s = std::make_shared<Session>();
  s->gpu = g;
  check(cu.cuDevicePrimaryCtxRetain(&s->context, g.dev), "cuDevicePrimaryCtxRetain on " + g.name);
  s->enter();
  check(cu.cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cu.cuMemAlloc(&s->errors, 2 * sizeof(int)), "cuMemAlloc of the error buffer");
  check(cu.cuMemsetD32Async(s->errors, 0, 2, s->stream), "cuMemsetD32Async of the error buffer");
  for (size_t i = 0; i < 2; i++) {
    void* p = nullptr;
    check(cu.cuMemHostAlloc(&p, kStagingBytes / 2, CU_MEMHOSTALLOC_PORTABLE),
          "cuMemHostAlloc of the staging");
    s->staging[i] = static_cast<std::byte*>(p);
    check(cu.cuEventCreate(&s->staged[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  check(cu.cuStreamSynchronize(s->stream), "cuStreamSynchronize");
  return s;
}

CUdeviceptr as_ptr(void* handle) { return reinterpret_cast<CUdeviceptr>(handle); }

class CudaAllocator final : public PooledAllocator {
 public:
  explicit CudaAllocator(std::shared_ptr<Session> s) : s_(std::move(s)) {}

  // Through the staging, half by half; returns once src has been read (the last half may still be
  // on its way: the stream orders it before every later launch and copy).
  void copyin(void* dst, std::span<const std::byte> src) override {
    const Api& cu = api();
    std::lock_guard<std::mutex> lock(s_->copy_mu);
    s_->enter();
    const size_t half = kStagingBytes / 2;
    for (size_t off = 0, i = 0; off < src.size(); off += half, i ^= 1) {
      const size_t n = std::min(half, src.size() - off);
      check(cu.cuEventSynchronize(s_->staged[i]), "cuEventSynchronize");  // the half is free again
      std::memcpy(s_->staging[i], src.data() + off, n);
      check(cu.cuMemcpyHtoDAsync(as_ptr(dst) + off, s_->staging[i], n, s_->stream),
            "cuMemcpyHtoDAsync of " + std::to_string(n) + " bytes");
      check(cu.cuEventRecord(s_->staged[i], s_->stream), "cuEventRecord");
    }
  }

  // After every launch before it (one stream): the next half is in flight while this one is copied
  // out on the host.
  void copyout(std::span<std::byte> dst, void* src) override {
    const Api& cu = api();
    std::lock_guard<std::mutex> lock(s_->copy_mu);
    s_->enter();
    const size_t half = kStagingBytes / 2;
    auto issue = [&](size_t off, size_t i) {
      const size_t n = std::min(half, dst.size() - off);
      check(cu.cuEventSynchronize(s_->staged[i]), "cuEventSynchronize");
      check(cu.cuMemcpyDtoHAsync(s_->staging[i], as_ptr(src) + off, n, s_->stream),
            "cuMemcpyDtoHAsync of " + std::to_string(n) + " bytes");
      check(cu.cuEventRecord(s_->staged[i], s_->stream), "cuEventRecord");
    };
    if (dst.empty()) return;
    issue(0, 0);
    for (size_t off = 0, i = 0; off < dst.size(); off += half, i ^= 1) {
      if (off + half < dst.size()) issue(off + half, i ^ 1);
      check(cu.cuEventSynchronize(s_->staged[i]), "cuEventSynchronize after cuMemcpyDtoHAsync");
      std::memcpy(dst.data() + off, s_->staging[i], std::min(half, dst.size() - off));
    }
  }

 protected:
  void* raw_alloc(size_t bytes) override {
    s_->enter();
    CUdeviceptr p = 0;
    if (CUresult r = api().cuMemAlloc(&p, bytes); r != CUDA_SUCCESS) {
      debug_log(2, "CUDA: cuMemAlloc of " + std::to_string(bytes) + " bytes failed: " + error_name(r));
      return nullptr;
    }
    return reinterpret_cast<void*>(p);
  }

  void raw_free(void* handle) noexcept override {
    if (api().cuCtxSetCurrent(s_->context) == CUDA_SUCCESS) api().cuMemFree(as_ptr(handle));
  }

 private:
  std::shared_ptr<Session> s_;
};

// ---- programs --------------------------------------------------------------------------------------

struct LaunchScratch {
  std::vector<CUdeviceptr> buffers;  // the buffers', then the error buffer's
  std::vector<long long> vars;
  std::vector<void*> params;
};

class CudaProgram final : public Program {
 public:
  CudaProgram(std::shared_ptr<const Session> s, CUmodule module, CUfunction fn, std::string name)
      : s_(std::move(s)),
        limits_(cuda_target(s_->gpu.sm)),
        module_(module),
        fn_(fn),
        name_(std::move(name)) {}
  ~CudaProgram() override {
    if (api().cuCtxSetCurrent(s_->context) == CUDA_SUCCESS) api().cuModuleUnload(module_);
  }

  LaunchResult launch(const LaunchArgs& a) const override {
    const Api& cu = api();
    for (size_t i = 0; i < 3; ++i)
      if (a.dims.grid[i] < 1 || a.dims.local[i] < 1 || a.dims.grid[i] > limits_.max_grid[i] ||
          a.dims.local[i] > limits_.max_local[i])
        throw Error("CUDA: launch of " + name_ + ": grid " + sizes(a.dims.grid) + " and block " +
                    sizes(a.dims.local) + " are outside what the GPU launches");
    // The argument values, then an array of their addresses (cuLaunchKernel's kernelParams), in
    // this thread's scratch: cleared, not freed, so a launch allocates nothing once warm.
    thread_local LaunchScratch scratch;
    scratch.buffers.assign(a.buffers.size() + 1, 0);
    for (size_t i = 0; i < a.buffers.size(); i++) scratch.buffers[i] = as_ptr(a.buffers[i]);
    scratch.buffers.back() = s_->errors;
    scratch.vars.assign(a.vars.begin(), a.vars.end());
    unsigned launch_id = a.launch_id;
    scratch.params.clear();
    for (size_t i = 0; i + 1 < scratch.buffers.size(); i++) scratch.params.push_back(&scratch.buffers[i]);
    for (auto& v : scratch.vars) scratch.params.push_back(&v);
    scratch.params.push_back(&scratch.buffers.back());
    scratch.params.push_back(&launch_id);
    std::vector<void*>& params = scratch.params;

    s_->enter();
    CUevent start = nullptr, end = nullptr;
    if (a.timed) {
      check(cu.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
      check(cu.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate");
    }
    auto g = [](int64_t v) { return static_cast<unsigned>(v); };
    {
      std::shared_lock<std::shared_mutex> order(s_->enqueue_mu);
      if (start) check(cu.cuEventRecord(start, s_->stream), "cuEventRecord");
      // The message is built only on failure: a launch allocates nothing.
      if (CUresult r = cu.cuLaunchKernel(fn_, g(a.dims.grid[0]), g(a.dims.grid[1]), g(a.dims.grid[2]),
                                         g(a.dims.local[0]), g(a.dims.local[1]), g(a.dims.local[2]), 0,
                                         s_->stream, params.data(), nullptr);
          r != CUDA_SUCCESS)
        check(r, "cuLaunchKernel of " + name_ + " (grid " + sizes(a.dims.grid) + ", block " +
                     sizes(a.dims.local) + ")");
      if (end) check(cu.cuEventRecord(end, s_->stream), "cuEventRecord");
    }
    if (!a.timed) return {0, -1};
    float ms = 0;
    CUresult r = cu.cuEventSynchronize(end);
    if (r == CUDA_SUCCESS) r = cu.cuEventElapsedTime(&ms, start, end);
    cu.cuEventDestroy(start);
    cu.cuEventDestroy(end);
    check(r, "timing kernel " + name_);
    return {0, ms * 1e-3};
  }

 private:
  static std::string sizes(const std::array<int64_t, 3>& v) {
    return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
  }

  std::shared_ptr<const Session> s_;
  Target limits_;  // the grid and block sizes the GPU launches
  CUmodule module_;
  CUfunction fn_;
  std::string name_;
};

// ---- the device ------------------------------------------------------------------------------------

class CudaDevice final : public Device {
 public:
  CudaDevice(const std::string& name, const Gpu& g)
      : Device(name),
        s_(open_session(g)),
        allocator_(s_),
        info_(describe(name, g)),
        renderer_(make_cuda_renderer(cuda_target(g.sm))),
        arch_("sm_" + std::to_string(g.sm)),
        identity_(arch_ + "\nNVRTC " + nvrtc_version()) {}

  DeviceInfo info() const override { return info_; }
  Allocator& allocator() override { return allocator_; }
  const Renderer& renderer() const override { return *renderer_; }
  const Session& session() const { return *s_; }

  std::shared_ptr<Program> compile(const std::string& name, const std::string& source) override {
    std::string entry = name + "-" + hex64(fnv1a(source + "\n" + identity_));
    if (auto p = loaded_.find(entry)) return p;
    // The cached machine code when it is this source's and its checksum holds; else NVRTC.
    const std::string base = cache_dir() + "/" + entry;
    std::string cubin;
    auto src = read_file(base + ".cu");
    auto bin = read_file(base + ".cubin");
    auto sum = read_file(base + ".sum");
    if (src && bin && sum && *src == source && !bin->empty() && *sum == hex64(fnv1a(*bin))) {
      cubin = std::move(*bin);
      record_cache_hit();
    } else {
      auto t0 = std::chrono::steady_clock::now();
      cubin = nvrtc_compile(source, name, arch_);
      record_compile(base, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      write_file_atomic(base + ".cu", source);
      write_file_atomic(base + ".cubin", cubin);
      write_file_atomic(base + ".sum", hex64(fnv1a(cubin)));
    }
    const Api& cu = api();
    s_->enter();
    CUmodule module = nullptr;
    check(cu.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData of " + name);
    CUfunction fn = nullptr;
    if (CUresult r = cu.cuModuleGetFunction(&fn, module, name.c_str()); r != CUDA_SUCCESS) {
      cu.cuModuleUnload(module);
      check(r, "cuModuleGetFunction " + name);
    }
    return loaded_.keep(entry, std::make_shared<CudaProgram>(s_, module, fn, name));
  }

  DeferredError synchronize() override {
    const Api& cu = api();
    s_->enter();
    check(cu.cuStreamSynchronize(s_->stream), "cuStreamSynchronize (a kernel failed on the GPU)");
    std::unique_lock<std::shared_mutex> order(s_->enqueue_mu);
    int errors[2] = {0, 0};
    check(cu.cuMemcpyDtoHAsync(errors, s_->errors, sizeof errors, s_->stream),
          "cuMemcpyDtoHAsync of the errors");
    check(cu.cuStreamSynchronize(s_->stream), "cuStreamSynchronize");
    if (errors[0] == 0) return {};
    check(cu.cuMemsetD32Async(s_->errors, 0, 2, s_->stream), "cuMemsetD32Async of the errors");
    check(cu.cuStreamSynchronize(s_->stream), "cuStreamSynchronize");
    return {errors[0], static_cast<uint32_t>(errors[1])};
  }

  // Between GPUs without the host: on one GPU a device-to-device copy, between two a peer copy
  // (the driver stages it when the GPUs have no direct path). src is complete once its device's
  // stream has drained; the copy is complete when this returns, so either side may move on.
  void transfer(void* dst, Device& from, void* src, size_t bytes) override {
    auto* other = dynamic_cast<CudaDevice*>(&from);
    if (!other) return Device::transfer(dst, from, src, bytes);
    const Api& cu = api();
    other->session().enter();
    check(cu.cuStreamSynchronize(other->session().stream), "cuStreamSynchronize on " + from.name());
    s_->enter();
    if (other->s_ == s_)
      check(cu.cuMemcpyDtoDAsync(as_ptr(dst), as_ptr(src), bytes, s_->stream), "cuMemcpyDtoDAsync");
    else
      check(cu.cuMemcpyPeerAsync(as_ptr(dst), s_->context, as_ptr(src), other->session().context, bytes,
                                 s_->stream),
            "cuMemcpyPeerAsync from " + from.name());
    check(cu.cuStreamSynchronize(s_->stream), "cuStreamSynchronize after a copy from " + from.name());
  }

 private:
  std::shared_ptr<Session> s_;
  CudaAllocator allocator_;
  DeviceInfo info_;
  std::unique_ptr<Renderer> renderer_;
  std::string arch_;       // "sm_90": NVRTC's target
  std::string identity_;   // what a cached cubin is valid for: the arch and the NVRTC version
  LoadedPrograms loaded_;  // by their entry's name
};

}  // namespace

std::unique_ptr<Device> open_cuda_device(const std::string& name, int index) {
  int n = gpu_count();
  if (index < 0 || index >= n)
    throw Error(name + ": the driver has " + std::to_string(n) + " GPU" + (n == 1 ? "" : "s") +
                " (CUDA_VISIBLE_DEVICES chooses which)");
  return std::make_unique<CudaDevice>(name, gpu(index));
}

std::vector<DeviceInfo> list_cuda_devices() {
  try {
    int n = gpu_count();
    std::vector<DeviceInfo> out;
    for (int i = 0; i < n; i++) out.push_back(describe(device_label(i), gpu(i)));
    return out;
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (why.rfind("CUDA: ", 0) == 0) why.erase(0, 6);
    return {{"CUDA", why, false}};
  }
}

}  // namespace lazygrad
