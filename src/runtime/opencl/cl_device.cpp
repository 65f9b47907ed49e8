// The OpenCL device: kernels are OpenCL C, built by the driver, cached on disk as the driver's
// binary (keyed by a hash of the source, the driver and the build options), and run on one in-order
// command queue per device. The library is opened at run time (cl_api.h), so lazygrad builds and
// runs where there is no OpenCL, and says why in `lazygrad info`.
//
// The kernel ABI (what the OpenCL renderer emits and launch() passes): the buffers in order
// (__global pointers), then the scalar vars (long each), then the error buffer (__global int*, two
// ints), then the launch id (uint). A kernel that fails does
//   if (atomic_cmpxchg(&err[0], 0, bits) == 0) err[1] = launch_id;
// and synchronize() reads and clears the pair.
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "debug.h"
#include "lazygrad/counters.h"
#include "lazygrad/error.h"
#include "renderer/renderer.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"
#include "runtime/opencl/cl_api.h"

namespace lazygrad {

namespace {

using namespace cl;

// ---- errors, ownership, queries --------------------------------------------------------------------

// Throws Error naming the call and the code. Memory the driver would not give is an
// OutOfMemoryError (buffers are often allocated at their first use, so a copy or a launch can be
// what finds out).
void check(cl_int code, const std::string& what) {
  if (code == CL_SUCCESS) return;
  std::string msg = "CL: " + what + " failed: " + error_name(code);
  if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_HOST_MEMORY) throw OutOfMemoryError(msg);
  throw Error(msg);
}

// Releases an OpenCL object through the table's clRelease* entry. Objects exist only once api()
// has loaded, so the entry is set.
template <auto Release>
struct Releaser {
  template <class T>
  void operator()(T* handle) const noexcept {
    (api().*Release)(handle);
  }
};
template <class Handle, auto Release>
using Owned = std::unique_ptr<std::remove_pointer_t<Handle>, Releaser<Release>>;
using ContextPtr = Owned<cl_context, &Api::clReleaseContext>;
using QueuePtr = Owned<cl_command_queue, &Api::clReleaseCommandQueue>;
using MemPtr = Owned<cl_mem, &Api::clReleaseMemObject>;
using ProgramPtr = Owned<cl_program, &Api::clReleaseProgram>;
using KernelPtr = Owned<cl_kernel, &Api::clReleaseKernel>;
using EventPtr = Owned<cl_event, &Api::clReleaseEvent>;

// Drivers pad some strings with NULs or spaces (device names, build logs).
std::string trimmed(std::string s) {
  auto blank = [](char c) { return c == '\0' || std::isspace(static_cast<unsigned char>(c)); };
  while (!s.empty() && blank(s.back())) s.pop_back();
  size_t start = 0;
  while (start < s.size() && blank(s[start])) ++start;
  return s.substr(start);
}

// A string property, through clGet*Info (size first, then the bytes).
template <class Object, class Param, class Getter>
std::string info_string(Getter get, Object object, Param param, const char* call) {
  size_t size = 0;
  check(get(object, param, 0, nullptr, &size), call);
  std::string s(size, '\0');
  if (size > 0) check(get(object, param, size, s.data(), nullptr), call);
  return trimmed(std::move(s));
}

std::string platform_string(cl_platform_id p, cl_platform_info param) {
  return info_string(api().clGetPlatformInfo, p, param, "clGetPlatformInfo");
}

std::string device_string(cl_device_id d, cl_device_info param) {
  return info_string(api().clGetDeviceInfo, d, param, "clGetDeviceInfo");
}

template <class T>
T device_value(cl_device_id d, cl_device_info param) {
  T v{};
  check(api().clGetDeviceInfo(d, param, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

int64_t as_int64(uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); }

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---- which platform and device ---------------------------------------------------------------------

// The entry of `names` a setting picks: an index, or the first name containing it (case does not
// matter); -1 when none does.
int pick(const std::string& want, const std::vector<std::string>& names) {
  bool index = !want.empty() && want.size() < 9 &&
               std::all_of(want.begin(), want.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (index) {
    size_t i = std::stoul(want);
    return i < names.size() ? static_cast<int>(i) : -1;
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (lower(names[i]).find(lower(want)) != std::string::npos) return static_cast<int>(i);
  return -1;
}

// "0 'Portable Computing Language', 1 'NVIDIA CUDA'": what a setting could have picked.
std::string listing(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + std::to_string(i) + " '" + names[i] + "'";
  return out;
}

struct DeviceList {
  std::vector<cl_device_id> ids;
  cl_int error = CL_SUCCESS;  // why the list is empty, when the driver said something else than "none"
};

DeviceList devices_of(cl_platform_id p) {
  DeviceList out;
  cl_uint n = 0;
  out.error = api().clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
  if (out.error != CL_SUCCESS || n == 0) return out;
  out.ids.resize(n);
  out.error = api().clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, out.ids.data(), nullptr);
  if (out.error != CL_SUCCESS) out.ids.clear();
  return out;
}

std::string no_device(const std::string& platform, const DeviceList& d) {
  std::string why = d.error == CL_SUCCESS || d.error == CL_DEVICE_NOT_FOUND
                        ? ""
                        : " (clGetDeviceIDs: " + error_name(d.error) + ")";
  return "CL: no device on platform '" + platform + "'" + why;
}

// The platform in use and its devices in lazygrad's order: index 0 is "CL", 1 is "CL:1".
struct Found {
  cl_platform_id platform = nullptr;
  std::string platform_name, platform_version;
  std::vector<cl_device_id> devices;
};

// What CL_PLATFORM and CL_DEVICE choose; Error with the reason when there is nothing to use.
Found discover() {
  const Api& cl = api();
  if (!cl.error.empty()) throw Error("CL: " + cl.error);
  const std::string kNoPlatform =
      "CL: no OpenCL platform (the ICD loader found no vendor; install pocl-opencl-icd, or check "
      "OCL_ICD_VENDORS)";
  cl_uint n = 0;
  cl_int err = cl.clGetPlatformIDs(0, nullptr, &n);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && n == 0)) throw Error(kNoPlatform);
  check(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(n);
  check(cl.clGetPlatformIDs(n, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<std::string> names;
  for (cl_platform_id p : platforms) names.push_back(platform_string(p, CL_PLATFORM_NAME));

  Found f;
  int chosen = -1;
  if (std::string want = env("CL_PLATFORM"); !want.empty()) {
    chosen = pick(want, names);
    if (chosen < 0) throw Error("CL: CL_PLATFORM=" + want + " matches no platform (" + listing(names) + ")");
    DeviceList d = devices_of(platforms[chosen]);
    if (d.ids.empty()) throw Error(no_device(names[chosen], d));
    f.devices = std::move(d.ids);
  } else {
    DeviceList first;
    for (size_t i = 0; i < platforms.size() && chosen < 0; ++i) {
      DeviceList d = devices_of(platforms[i]);
      if (i == 0) first = d;
      if (!d.ids.empty()) {
        chosen = static_cast<int>(i);
        f.devices = std::move(d.ids);
      }
    }
    if (chosen < 0 && platforms.size() == 1) throw Error(no_device(names[0], first));
    if (chosen < 0) throw Error("CL: no device on any platform (" + listing(names) + ")");
  }
  f.platform = platforms[chosen];
  f.platform_name = names[chosen];
  f.platform_version = platform_string(f.platform, CL_PLATFORM_VERSION);

  if (std::string want = env("CL_DEVICE"); !want.empty()) {
    std::vector<std::string> device_names;
    for (cl_device_id d : f.devices) device_names.push_back(device_string(d, CL_DEVICE_NAME));
    int i = pick(want, device_names);
    if (i < 0)
      throw Error("CL: CL_DEVICE=" + want + " matches no device of platform '" + f.platform_name + "' (" +
                  listing(device_names) + ")");
    // The chosen one to the front, the others after it in the driver's order.
    std::rotate(f.devices.begin(), f.devices.begin() + i, f.devices.begin() + i + 1);
  }
  return f;
}

std::string device_label(size_t index) { return index == 0 ? "CL" : "CL:" + std::to_string(index); }

// cl_khr_fp64, unless CL_NO_FP64 turns it off (to test the float32-only paths on a device with it).
bool has_fp64(cl_device_id d) {
  std::string extensions = " " + device_string(d, CL_DEVICE_EXTENSIONS) + " ";
  if (extensions.find(" cl_khr_fp64 ") == std::string::npos) return false;
  std::string off = env("CL_NO_FP64");
  return off.empty() || off == "0";
}

// Whether float arithmetic keeps subnormal values: the device says, unless CL_NO_DENORM asks it to
// flush them (-cl-denorms-are-zero; to test the parity suites' skips on a device that does).
bool keeps_subnormals(cl_device_id d) {
  std::string flush = env("CL_NO_DENORM");
  if (!flush.empty() && flush != "0") return false;
  return (device_value<cl_device_fp_config>(d, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_DENORM) != 0;
}

DeviceInfo describe(const std::string& name, const Found& f, cl_device_id d) {
  auto units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  auto mib = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE) >> 20;
  return {name,
          device_string(d, CL_DEVICE_NAME) + ", " + f.platform_name + " " + f.platform_version + ", " +
              std::to_string(units) + " compute units, " + std::to_string(mib) + " MiB, fp64 " +
              (has_fp64(d) ? "yes" : "no"),
          true};
}

Target make_target(cl_device_id d) {
  Target t;
  t.language = "OpenCL C";
  t.vector_bytes = 0;
  t.thread_slices = false;
  t.scratch = false;
  t.interrupt_polls = false;
  t.local_memory = as_int64(device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE));
  auto dims = device_value<cl_uint>(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  std::vector<size_t> sizes(std::max<cl_uint>(dims, 3), 1);
  check(api().clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t), sizes.data(), nullptr),
        "clGetDeviceInfo");
  for (size_t i = 0; i < 3; ++i) t.max_local[i] = as_int64(sizes[i]);
  t.max_group_size = as_int64(device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  t.max_grid = {INT32_MAX, INT32_MAX, INT32_MAX};
  // A grouped reduction's default width (docs/devices.md, "Work-groups"): on a CPU device (PoCL) its
  // float SIMD lanes, which it fills with a group's work-items (16 with AVX-512: a row sum 3-6x
  // faster than one work-item per row, bench/reductions.cpp; 64 and 256 were slower than none); on
  // a GPU 256, tinygrad's first choice too.
  const bool cpu = (device_value<cl_device_type>(d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) != 0;
  t.group_reduction = std::min<int64_t>(
      cpu ? std::max<cl_uint>(device_value<cl_uint>(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT), 1) : 256,
      t.max_group_size);
  t.float64 = has_fp64(d);
  t.float16 = true;
  t.int64 = true;
  t.keeps_subnormals = keeps_subnormals(d);
  // Tensor-core products emulated through local memory (renderer/tensor_core_kernel.cpp): to test
  // the kernels the CUDA device runs on its tensor cores, here.
  const std::string emulate = env("LAZYGRAD_TC_EMULATE");
  t.tensor_cores = !emulate.empty() && emulate != "0";
  return t;
}

// ---- what buffers and programs share ---------------------------------------------------------------

// A device's context, queue and error buffer. Programs and the allocator hold it, so a Program
// that outlives its Device still launches on (and releases into) a live context.
struct Session {
  cl_device_id device = nullptr;
  std::string device_name;
  ContextPtr context;
  QueuePtr queue;
  MemPtr errors;  // two cl_ints: the first failing launch's error bits, and its launch id
  // Launches enqueue under the shared lock; synchronize() reads and clears the error buffer under
  // the exclusive one, so no launch's error lands between the read and the clear and is lost.
  mutable std::shared_mutex enqueue_mu;
};

std::shared_ptr<Session> open_session(cl_device_id d) {
  const Api& cl = api();
  auto s = std::make_shared<Session>();
  s->device = d;
  s->device_name = device_string(d, CL_DEVICE_NAME);
  cl_int err = CL_SUCCESS;
  s->context.reset(cl.clCreateContext(nullptr, 1, &d, nullptr, nullptr, &err));
  check(err, "clCreateContext on " + s->device_name);
  s->queue.reset(cl.clCreateCommandQueue(s->context.get(), d, CL_QUEUE_PROFILING_ENABLE, &err));
  check(err, "clCreateCommandQueue on " + s->device_name);
  cl_int zeros[2] = {0, 0};
  s->errors.reset(cl.clCreateBuffer(s->context.get(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros,
                                    zeros, &err));
  check(err, "clCreateBuffer of the error buffer");
  return s;
}

cl_mem as_mem(void* handle) { return static_cast<cl_mem>(handle); }

class ClAllocator final : public PooledAllocator {
 public:
  explicit ClAllocator(std::shared_ptr<const Session> s) : s_(std::move(s)) {}

  void copyin(void* dst, std::span<const std::byte> src) override {
    if (src.empty()) return;  // OpenCL rejects a copy of 0 bytes
    check(api().clEnqueueWriteBuffer(s_->queue.get(), as_mem(dst), CL_TRUE, 0, src.size(), src.data(), 0,
                                     nullptr, nullptr),
          "clEnqueueWriteBuffer of " + std::to_string(src.size()) + " bytes");
  }

  // Blocking, on the in-order queue: it runs after every kernel enqueued before it.
  void copyout(std::span<std::byte> dst, void* src) override {
    if (dst.empty()) return;
    check(api().clEnqueueReadBuffer(s_->queue.get(), as_mem(src), CL_TRUE, 0, dst.size(), dst.data(), 0,
                                    nullptr, nullptr),
          "clEnqueueReadBuffer of " + std::to_string(dst.size()) + " bytes");
  }

 protected:
  void* raw_alloc(size_t bytes) override {
    cl_int err = CL_SUCCESS;
    MemPtr mem(api().clCreateBuffer(s_->context.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
    if (!mem || err != CL_SUCCESS) {
      // Null is the contract (the caller names the bytes); the driver's reason is for DEBUG.
      debug_log(2, "CL: clCreateBuffer of " + std::to_string(bytes) + " bytes failed: " + error_name(err));
      return nullptr;
    }
    return mem.release();
  }

  void raw_free(void* handle) noexcept override { api().clReleaseMemObject(as_mem(handle)); }

 private:
  std::shared_ptr<const Session> s_;
};

// ---- programs --------------------------------------------------------------------------------------

class ClProgram final : public Program {
 public:
  ClProgram(std::shared_ptr<const Session> s, ProgramPtr program, KernelPtr kernel, std::string name)
      : s_(std::move(s)), program_(std::move(program)), kernel_(std::move(kernel)), name_(std::move(name)) {}

  LaunchResult launch(const LaunchArgs& a) const override {
    const Api& cl = api();
    std::array<size_t, 3> global{}, local{};
    for (size_t i = 0; i < 3; ++i) {
      if (a.dims.grid[i] < 1 || a.dims.local[i] < 1)
        throw Error("CL: launch of " + name_ + ": grid " + sizes(a.dims.grid) + " and local " +
                    sizes(a.dims.local) + " must be positive");
      global[i] = static_cast<size_t>(a.dims.grid[i]) * static_cast<size_t>(a.dims.local[i]);
      local[i] = static_cast<size_t>(a.dims.local[i]);
    }
    cl_uint work_dim = 3;
    while (work_dim > 1 && global[work_dim - 1] == 1) --work_dim;

    cl_event done = nullptr;
    {
      // Arguments are the kernel object's state until the enqueue reads them: one launch at a time.
      std::lock_guard<std::mutex> lock(args_mu_);
      cl_uint index = 0;
      auto arg = [&](size_t size, const void* value) {
        check(cl.clSetKernelArg(kernel_.get(), index, size, value),
              "clSetKernelArg " + std::to_string(index) + " of kernel " + name_);
        ++index;
      };
      for (void* b : a.buffers) {
        cl_mem mem = as_mem(b);
        arg(sizeof mem, &mem);
      }
      for (int64_t v : a.vars) {
        cl_long value = v;
        arg(sizeof value, &value);
      }
      cl_mem errors = s_->errors.get();
      arg(sizeof errors, &errors);
      cl_uint id = a.launch_id;
      arg(sizeof id, &id);
      std::shared_lock<std::shared_mutex> order(s_->enqueue_mu);
      check(cl.clEnqueueNDRangeKernel(s_->queue.get(), kernel_.get(), work_dim, nullptr, global.data(),
                                      local.data(), 0, nullptr, a.timed ? &done : nullptr),
            "clEnqueueNDRangeKernel of " + name_ + " (grid " + sizes(a.dims.grid) + ", local " +
                sizes(a.dims.local) + ")");
    }
    if (!a.timed) return {0, -1};
    EventPtr event(done);
    check(cl.clWaitForEvents(1, &done), "clWaitForEvents for kernel " + name_);
    cl_ulong start = 0, end = 0;
    check(cl.clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
          "clGetEventProfilingInfo for kernel " + name_);
    check(cl.clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr),
          "clGetEventProfilingInfo for kernel " + name_);
    return {0, end > start ? static_cast<double>(end - start) * 1e-9 : 0.0};
  }

 private:
  static std::string sizes(const std::array<int64_t, 3>& v) {
    return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
  }

  std::shared_ptr<const Session> s_;
  ProgramPtr program_;  // before kernel_: released after it
  KernelPtr kernel_;
  std::string name_;
  mutable std::mutex args_mu_;
};

// ---- the device ------------------------------------------------------------------------------------

class ClDevice final : public Device {
 public:
  ClDevice(const std::string& name, const Found& f, cl_device_id d)
      : Device(name), s_(open_session(d)), allocator_(s_), info_(describe(name, f, d)) {
    // Correctly rounded / and sqrt, as on the CPU. A device that cannot (the option is then
    // implementation-defined, and some drivers reject it) builds without it.
    auto fp = device_value<cl_device_fp_config>(d, CL_DEVICE_SINGLE_FP_CONFIG);
    const bool rounded = fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT;
    if (!rounded) debug_log(1, name + ": " + s_->device_name + " has no correctly rounded divide and sqrt");
    renderer_ = make_opencl_renderer(make_target(d));
    // -w: generated code warns about what is meant (x != x on an integer, a NaN test the base writes
    // for every dtype), and PoCL prints a compiler's warnings to the process's stderr. A target
    // that flushes subnormals (CL_NO_DENORM) is compiled to flush them.
    options_ = std::string("-w") + (rounded ? " -cl-fp32-correctly-rounded-divide-sqrt" : "") +
               (renderer_->target().keeps_subnormals ? "" : " -cl-denorms-are-zero");
    // A binary is valid for one driver on one device with one set of options.
    identity_ = f.platform_name + "\n" + f.platform_version + "\n" + s_->device_name + "\n" +
                device_string(d, CL_DRIVER_VERSION) + "\n" + options_;
  }

  DeviceInfo info() const override { return info_; }
  Allocator& allocator() override { return allocator_; }
  const Renderer& renderer() const override { return *renderer_; }

  std::shared_ptr<Program> compile(const std::string& name, const std::string& source) override {
    // The entry's name: the kernel's name and the hash of what its binary depends on. The name is
    // part of it because one source may hold several kernels, each a Program of its own.
    std::string entry = name + "-" + hex64(fnv1a(source + "\n" + identity_));
    if (auto p = loaded_.find(entry)) return p;
    // Builds run outside the lock, so a schedule's new kernels build in parallel.
    std::string base = cache_dir() + "/" + entry;
    ProgramPtr built = load_cached(base, source);
    if (built) {
      record_cache_hit();
    } else {
      built = build(base, name, source);
    }
    cl_int err = CL_SUCCESS;
    KernelPtr kernel(api().clCreateKernel(built.get(), name.c_str(), &err));
    check(err, "clCreateKernel " + name);
    return loaded_.keep(entry, std::make_shared<ClProgram>(s_, std::move(built), std::move(kernel), name));
  }

  DeferredError synchronize() override {
    const Api& cl = api();
    check(cl.clFinish(s_->queue.get()), "clFinish");
    cl_int errors[2] = {0, 0};
    std::unique_lock<std::shared_mutex> order(s_->enqueue_mu);
    check(cl.clEnqueueReadBuffer(s_->queue.get(), s_->errors.get(), CL_TRUE, 0, sizeof errors, errors, 0,
                                 nullptr, nullptr),
          "clEnqueueReadBuffer of the error buffer");
    if (errors[0] == 0) return {};
    const cl_int zeros[2] = {0, 0};
    check(cl.clEnqueueWriteBuffer(s_->queue.get(), s_->errors.get(), CL_TRUE, 0, sizeof zeros, zeros, 0,
                                  nullptr, nullptr),
          "clEnqueueWriteBuffer of the error buffer");
    return {errors[0], static_cast<uint32_t>(errors[1])};
  }

 private:
  // The cached binary, built for this device; null when there is none, when it is not this source's
  // or its checksum fails, or when the driver will not load it (a driver update the version string
  // missed): then the caller builds from source.
  ProgramPtr load_cached(const std::string& base, const std::string& source) const {
    auto src = read_file(base + ".cl");
    auto bin = read_file(base + ".clbin");
    auto sum = read_file(base + ".sum");
    if (!src || !bin || !sum) return nullptr;
    if (*src != source || bin->empty() || *sum != hex64(fnv1a(*bin))) {
      debug_log(3, "cache: " + base + ".clbin is corrupt or stale, rebuilding");
      return nullptr;
    }
    const Api& cl = api();
    size_t size = bin->size();
    auto bytes = reinterpret_cast<const unsigned char*>(bin->data());
    cl_int status = CL_SUCCESS, err = CL_SUCCESS;
    ProgramPtr p(
        cl.clCreateProgramWithBinary(s_->context.get(), 1, &s_->device, &size, &bytes, &status, &err));
    if (err == CL_SUCCESS) err = status;
    if (err == CL_SUCCESS)
      err = cl.clBuildProgram(p.get(), 1, &s_->device, options_.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      debug_log(3, "cache: " + base + ".clbin does not load (" + error_name(err) + "), rebuilding");
      return nullptr;
    }
    return p;
  }

  ProgramPtr build(const std::string& base, const std::string& name, const std::string& source) const {
    const Api& cl = api();
    const char* text = source.c_str();
    size_t length = source.size();
    cl_int err = CL_SUCCESS;
    ProgramPtr p(cl.clCreateProgramWithSource(s_->context.get(), 1, &text, &length, &err));
    check(err, "clCreateProgramWithSource for " + name);
    auto t0 = std::chrono::steady_clock::now();
    cl_int built = cl.clBuildProgram(p.get(), 1, &s_->device, options_.c_str(), nullptr, nullptr);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    record_compile(base, dt);
    if (built != CL_SUCCESS) {
      // A failure other than the compiler's own (bad options, no memory) says which in the header line.
      std::string code = built == CL_BUILD_PROGRAM_FAILURE ? "" : " (" + error_name(built) + ")";
      throw Error("compile: OpenCL build of " + name + " failed" + code + ":\n" + build_log(p.get()) +
                  "\n--- source ---\n" + source);
    }
    store(base, source, p.get());
    return p;
  }

  std::string build_log(cl_program p) const {
    size_t size = 0;
    const Api& cl = api();
    if (cl.clGetProgramBuildInfo(p, s_->device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS)
      return "(no build log)";
    std::string log(size, '\0');
    if (size > 0 && cl.clGetProgramBuildInfo(p, s_->device, CL_PROGRAM_BUILD_LOG, size, log.data(),
                                             nullptr) != CL_SUCCESS)
      return "(no build log)";
    return trimmed(std::move(log));
  }

  // The source, the driver's binary and its checksum, each written atomically; the source first, so
  // a reader that finds a binary finds the source it was built from. A driver that gives no binary
  // leaves no entry (the kernel builds again next time).
  void store(const std::string& base, const std::string& source, cl_program p) const {
    const Api& cl = api();
    size_t size = 0;
    if (cl.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS ||
        size == 0) {
      debug_log(3, "cache: the driver gave no binary for " + base + ", not cached");
      return;
    }
    std::string bin(size, '\0');
    auto bytes = reinterpret_cast<unsigned char*>(bin.data());
    if (cl.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bytes, &bytes, nullptr) != CL_SUCCESS) {
      debug_log(3, "cache: the driver gave no binary for " + base + ", not cached");
      return;
    }
    write_file_atomic(base + ".cl", source);
    write_file_atomic(base + ".clbin", bin);
    write_file_atomic(base + ".sum", hex64(fnv1a(bin)));
  }

  std::shared_ptr<const Session> s_;
  ClAllocator allocator_;
  DeviceInfo info_;
  std::unique_ptr<Renderer> renderer_;
  std::string options_;    // clBuildProgram's
  std::string identity_;   // what a binary is valid for: platform, device, driver and options
  LoadedPrograms loaded_;  // by their entry's name
};

}  // namespace

std::unique_ptr<Device> open_cl_device(const std::string& name, int index) {
  Found f = discover();
  size_t n = f.devices.size();
  if (index < 0 || static_cast<size_t>(index) >= n)
    throw Error(name + ": platform '" + f.platform_name + "' has " + std::to_string(n) + " device" +
                (n == 1 ? "" : "s"));
  return std::make_unique<ClDevice>(name, f, f.devices[index]);
}

std::vector<DeviceInfo> list_cl_devices() {
  try {
    Found f = discover();
    std::vector<DeviceInfo> out;
    for (size_t i = 0; i < f.devices.size(); ++i) out.push_back(describe(device_label(i), f, f.devices[i]));
    return out;
  } catch (const std::exception& e) {
    // The name column says CL already: the reason without the prefix the Error carries.
    std::string why = e.what();
    if (why.rfind("CL: ", 0) == 0) why.erase(0, 4);
    return {{"CL", why, false}};
  }
}

}  // namespace lazygrad
