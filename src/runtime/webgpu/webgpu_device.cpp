// The WebGPU device: kernels are WGSL (renderer/wgsl_renderer.cpp), run by the GPUDevice of a page
// in one headless Chromium per process (chromium.h). The device is the page's `lg` object
// (page_script.cpp) seen from C++:
// - Allocator: a GPUBuffer per allocation, named by an id (the handle); bytes cross the pipe as
//   base64, in pieces of at most 16 MiB.
// - Compiler: the WGSL text made into a compute pipeline in the page; the WGSL compiler's messages
//   are the Error. Nothing is cached on disk (Chromium keeps its own shader cache in its profile,
//   which lives as long as the process).
// - Program: a dispatch with the kernel's bindings. Launches, writes and frees need no answer: they
//   are queued here and sent with the next call that does (a read, a compile, synchronize), so a
//   schedule of kernels costs one round trip, not one per kernel.
// - Kernel errors: OpenCL's scheme, an error word the first failing launch writes with a compare-
//   and-swap, read by synchronize().
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "debug.h"
#include "lazygrad/error.h"
#include "lazygrad/json.h"
#include "renderer/renderer.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"
#include "runtime/webgpu/chromium.h"
#include "runtime/webgpu/kernel_head.h"
#include "runtime/webgpu/page_script.h"

namespace lazygrad {

namespace {

constexpr size_t kPiece = size_t(16) << 20;  // bytes per copy message

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::byte* p, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = static_cast<uint32_t>(p[i]) << 16;
    if (i + 1 < n) v |= static_cast<uint32_t>(p[i + 1]) << 8;
    if (i + 2 < n) v |= static_cast<uint32_t>(p[i + 2]);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < n ? kBase64[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kBase64[v & 63] : '=';
  }
  return out;
}

// Decodes into out, which must have exactly the decoded size.
void unbase64(const std::string& text, std::byte* out, size_t n) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (o >= n) throw Error("WEBGPU: a read gave more bytes than asked for");
      out[o++] = static_cast<std::byte>((acc >> bits) & 0xff);
    }
  }
  if (o != n) throw Error("WEBGPU: a read gave " + std::to_string(o) + " bytes, not " + std::to_string(n));
}

int64_t number(const json::Value& v, const char* key) {
  const json::Value* m = v.find(key);
  if (!m || m->kind != json::Kind::Number)
    throw Error(std::string("WEBGPU: the adapter did not say its ") + key);
  return static_cast<int64_t>(std::stod(m->text));
}

std::string string_of(const std::string& json_text) {
  const json::Value v = json::parse(json_text);
  return v.kind == json::Kind::String ? v.text : "";
}

// The page's GPUDevice, shared by the allocator, the programs and the device.
struct Page {
  webgpu::Chromium& browser;
  std::mutex mu;
  std::string pending;  // calls that need no answer, sent before the next one that does
  int64_t next_buffer = 1, next_program = 1;
  int64_t max_per_dimension = 65535;

  explicit Page(webgpu::Chromium& b) : browser(b) {}

  void queue(const std::string& js) {
    std::lock_guard<std::mutex> lock(mu);
    pending += pending.empty() ? js : ", " + js;
    if (pending.size() >= kPiece) send_locked("undefined");  // large writes go as they come
  }
  // The JSON text of expression's value, after everything queued.
  std::string call(const std::string& expression) {
    std::lock_guard<std::mutex> lock(mu);
    return send_locked(expression);
  }

 private:
  std::string send_locked(const std::string& expression) {
    std::string all = pending.empty() ? expression : pending + ", " + expression;
    pending.clear();
    return browser.evaluate(all);
  }
};

int64_t id_of(void* handle) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(handle)); }

class WebGpuAllocator final : public PooledAllocator {
 public:
  explicit WebGpuAllocator(std::shared_ptr<Page> page) : page_(std::move(page)) {}

  void copyin(void* dst, std::span<const std::byte> src) override {
    for (size_t off = 0; off < src.size(); off += kPiece) {
      const size_t n = std::min(kPiece, src.size() - off);
      page_->queue("lg.write(" + std::to_string(id_of(dst)) + ", " + std::to_string(off) + ", \"" +
                   base64(src.data() + off, n) + "\")");
    }
  }

  // After every launch queued before it (one queue, in order).
  void copyout(std::span<std::byte> dst, void* src) override {
    for (size_t off = 0; off < dst.size(); off += kPiece) {
      const size_t n = std::min(kPiece, dst.size() - off);
      const std::string text = string_of(page_->call("lg.read(" + std::to_string(id_of(src)) + ", " +
                                                     std::to_string(off) + ", " + std::to_string(n) + ")"));
      unbase64(text, dst.data() + off, n);
    }
  }

 protected:
  void* raw_alloc(size_t bytes) override {
    const int64_t id = next_id();
    const std::string why =
        string_of(page_->call("lg.alloc(" + std::to_string(id) + ", " + std::to_string(bytes) + ")"));
    if (!why.empty()) {
      // Null is the contract (the caller names the bytes); WebGPU's reason is for DEBUG.
      debug_log(2, "WEBGPU: a buffer of " + std::to_string(bytes) + " bytes: " + why);
      return nullptr;
    }
    return reinterpret_cast<void*>(static_cast<uintptr_t>(id));
  }
  // WebGPU gives every new buffer zeroed: a fill of zeros need not run.
  void* raw_alloc_zeroed(size_t bytes) override { return raw_alloc(bytes); }

  void raw_free(void* handle) noexcept override {
    try {
      page_->queue("lg.free(" + std::to_string(id_of(handle)) + ")");
    } catch (const std::exception&) {  // the buffer stays in the page until it closes
    }
  }

 private:
  int64_t next_id() {
    std::lock_guard<std::mutex> lock(page_->mu);
    return page_->next_buffer++;
  }
  std::shared_ptr<Page> page_;
};

using webgpu::KernelHead;

class WebGpuProgram final : public Program {
 public:
  WebGpuProgram(std::shared_ptr<Page> page, int64_t pid, std::string name, KernelHead head)
      : page_(std::move(page)), pid_(pid), name_(std::move(name)), head_(std::move(head)) {}
  ~WebGpuProgram() override {
    try {
      page_->queue("lg.release(" + std::to_string(pid_) + ")");
    } catch (const std::exception&) {
    }
  }

  LaunchResult launch(const LaunchArgs& a) const override {
    if (a.dims.local[0] != head_.workgroup || a.dims.local[1] != 1 || a.dims.local[2] != 1)
      throw Error("WEBGPU: kernel " + name_ + " was built for work-groups of " +
                  std::to_string(head_.workgroup) + ", not " + std::to_string(a.dims.local[0]));
    // Groups along x up to the limit per dimension, then rows of them (the kernel's index reads
    // both, and its bound check stops the last row's extra groups).
    const int64_t groups = a.dims.grid[0], max = page_->max_per_dimension;
    const int64_t gx = std::min(groups, max), gy = (groups + gx - 1) / gx;
    if (gy > max || a.dims.grid[1] != 1 || a.dims.grid[2] != 1)
      throw Error("WEBGPU: kernel " + name_ + ": " + std::to_string(groups) +
                  " work-groups are more than one dispatch holds");
    std::string ids, args;
    size_t b = 0;
    for (char k : head_.bindings) {
      if (k == 'a') continue;
      if (k == 'e') {
        ids += std::string(ids.empty() ? "" : ",") + "-1";
        continue;
      }
      if (b >= a.buffers.size()) throw Error("WEBGPU: kernel " + name_ + " was given too few buffers");
      ids += (ids.empty() ? "" : ",") + std::to_string(id_of(a.buffers[b++]));
    }
    if (a.vars.size() != head_.vars.size())
      throw Error("WEBGPU: kernel " + name_ + " takes " + std::to_string(head_.vars.size()) +
                  " arguments, not " + std::to_string(a.vars.size()));
    for (size_t i = 0; i < a.vars.size(); i++) {
      if (head_.vars[i] == 'w') {  // 64 bits as two words, low first (a vec2<u32> in the kernel)
        const uint64_t bits = static_cast<uint64_t>(a.vars[i]);
        args +=
            (args.empty() ? "" : ",") + std::to_string(bits & 0xffffffffu) + "," + std::to_string(bits >> 32);
        continue;
      }
      args += (args.empty() ? "" : ",") + std::to_string(word(i, a.vars[i]));
    }
    if (head_.bindings.find('e') != std::string::npos)
      args += (args.empty() ? "" : ",") + std::to_string(a.launch_id);
    const std::string call = "(" + std::to_string(pid_) + ", [" + ids + "], [" + args + "], " +
                             std::to_string(gx) + ", " + std::to_string(gy) + ")";
    if (!a.timed) {
      page_->queue("lg.run" + call);
      return {0, -1};
    }
    return {0, std::stod(page_->call("lg.timed" + call))};
  }

 private:
  // A scalar argument (int64 bits; a float's float64 bits) as the 32-bit word the kernel reads.
  uint32_t word(size_t i, int64_t bits) const {
    const char kind = head_.vars[i];
    if (kind == 'f') {
      double d;
      std::memcpy(&d, &bits, 8);
      const float f = static_cast<float>(d);
      uint32_t w;
      std::memcpy(&w, &f, 4);
      return w;
    }
    const bool fits = kind == 'u' ? bits >= 0 && bits <= UINT32_MAX : bits >= INT32_MIN && bits <= INT32_MAX;
    if (!fits)
      throw Error("WEBGPU: kernel " + name_ + ": its argument " + std::to_string(i) + " is " +
                  std::to_string(bits) + ", which WGSL's 32-bit integers do not hold");
    return static_cast<uint32_t>(bits);
  }

  std::shared_ptr<Page> page_;
  int64_t pid_;
  std::string name_;
  KernelHead head_;
};

std::mutex info_mu;
std::string opened_detail;  // the device's info line once it is open (list_webgpu_devices)

class WebGpuDevice final : public Device {
 public:
  explicit WebGpuDevice(const std::string& name)
      : Device(name), page_(std::make_shared<Page>(webgpu::browser())), allocator_(page_) {
    page_->call(webgpu::page_script());
    const json::Value init = json::parse(page_->call("lg.init()"));
    if (const json::Value* e = init.find("error")) throw Error("WEBGPU: " + e->text);
    const json::Value& l = *init.find("limits");
    WgslLimits limits;
    limits.max_storage_buffers = number(l, "maxStorageBuffersPerShaderStage");
    limits.max_workgroup_size =
        std::min(number(l, "maxComputeInvocationsPerWorkgroup"), number(l, "maxComputeWorkgroupSizeX"));
    limits.max_workgroups_per_dimension = number(l, "maxComputeWorkgroupsPerDimension");
    limits.workgroup_storage = number(l, "maxComputeWorkgroupStorageSize");
    limits.keeps_subnormals = init.find("subnormals")->boolean;
    page_->max_per_dimension = limits.max_workgroups_per_dimension;
    renderer_ = make_wgsl_renderer(webgpu_target(limits), limits);
    const json::Value* adapter = init.find("adapter");
    detail_ = "WebGPU in " + webgpu::browser().version() + ", adapter " +
              (adapter && !adapter->text.empty() ? adapter->text : "(unnamed)") + ", " +
              std::to_string(limits.max_storage_buffers) + " storage buffers per kernel, bindings up to " +
              std::to_string(number(l, "maxStorageBufferBindingSize") >> 20) + " MiB, subnormals " +
              (limits.keeps_subnormals ? "kept" : "flushed");
    std::lock_guard<std::mutex> lock(info_mu);
    opened_detail = detail_;
  }

  DeviceInfo info() const override { return {name(), detail_, true}; }
  Allocator& allocator() override { return allocator_; }
  const Renderer& renderer() const override { return *renderer_; }

  std::shared_ptr<Program> compile(const std::string& name, const std::string& source) override {
    const std::string key = name + "-" + hex64(fnv1a(source));
    if (auto p = loaded_.find(key)) return p;
    const KernelHead head = webgpu::read_kernel_head(name, source);
    int64_t pid;
    {
      std::lock_guard<std::mutex> lock(page_->mu);
      pid = page_->next_program++;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::string messages =
        string_of(page_->call("lg.compile(" + std::to_string(pid) + ", " + json::quote(source) + ", " +
                              json::quote(name) + ", " + json::quote(head.bindings) + ")"));
    record_compile(cache_dir() + "/" + key,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!messages.empty())
      throw Error("compile: the WGSL of " + name + " does not compile:\n" + messages + "\n--- source ---\n" +
                  source);
    return loaded_.keep(key, std::make_shared<WebGpuProgram>(page_, pid, name, head));
  }

  DeferredError synchronize() override {
    const json::Value v = json::parse(page_->call("lg.sync()"));
    if (v.kind != json::Kind::Array || v.items.size() != 2)
      throw Error("WEBGPU: synchronize gave no error word");
    const int bits = std::stoi(v.items[0].text);
    return {bits, static_cast<uint32_t>(std::stoll(v.items[1].text))};
  }

 private:
  std::shared_ptr<Page> page_;
  WebGpuAllocator allocator_;
  std::unique_ptr<Renderer> renderer_;
  std::string detail_;
  LoadedPrograms loaded_;
};

}  // namespace

std::unique_ptr<Device> open_webgpu_device(const std::string& name, int index) {
  if (index != 0) throw Error(name + ": there is one WebGPU device, WEBGPU (the page's GPUDevice)");
  return std::make_unique<WebGpuDevice>(name);
}

// Cheap: it starts no browser (many callers list devices only to look for another kind). Once the
// device is open, its line says what the adapter is.
std::vector<DeviceInfo> list_webgpu_devices() {
  {
    std::lock_guard<std::mutex> lock(info_mu);
    if (!opened_detail.empty()) return {{"WEBGPU", opened_detail, true}};
  }
  const std::string chromium = webgpu::find_chromium();
  if (chromium.empty())
    return {{"WEBGPU", "no Chromium (chromium on PATH, or LAZYGRAD_CHROMIUM), in which WebGPU runs", false}};
  return {{"WEBGPU", "WebGPU in headless Chromium (" + chromium + "), started when first used", true}};
}

}  // namespace lazygrad
