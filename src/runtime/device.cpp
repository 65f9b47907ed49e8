// The device registry and what every backend shares: the pool of freed blocks, copies through the
// host, and DEVICE.
#include "runtime/device.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "lazygrad/error.h"

namespace lazygrad {

// ---- PooledAllocator -----------------------------------------------------------------------------
// Buffer memory comes from a pool of freed allocations, reused by size: a fresh allocation of a large
// buffer on the CPU makes the kernel that first writes it pay a page fault per 4 KiB (measured: most
// of the time of a 64 MB elementwise add), a reused one does not; elsewhere it saves a driver call.

struct PooledAllocator::State {
  std::mutex mu;
  std::multimap<size_t, void*> free;
  size_t pooled = 0;
};

std::shared_ptr<PooledAllocator::State> PooledAllocator::make_state() { return std::make_shared<State>(); }

void* PooledAllocator::alloc(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (auto it = state_->free.find(bytes); it != state_->free.end()) {
      void* p = it->second;
      state_->free.erase(it);
      state_->pooled -= bytes;
      return p;
    }
  }
  void* p = raw_alloc(bytes);
  if (!p && release_spare()) p = raw_alloc(bytes);  // the pooled memory may make room
  return p;
}

void* PooledAllocator::alloc_zeroed(size_t bytes) {
  void* p = raw_alloc_zeroed(bytes);
  if (!p && release_spare()) p = raw_alloc_zeroed(bytes);
  return p;
}

// Called from ~Buffer, so it never throws: memory it cannot keep (or track) is freed.
void PooledAllocator::free(void* handle, size_t bytes) noexcept {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->pooled + bytes <= kMaxPooled) {
      try {
        state_->free.emplace(bytes, handle);
        state_->pooled += bytes;
        return;
      } catch (const std::bad_alloc&) {
      }
    }
  }
  raw_free(handle);
}

bool PooledAllocator::release_spare() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->free.empty()) return false;
  for (auto& [bytes, p] : state_->free) raw_free(p);
  state_->free.clear();
  state_->pooled = 0;
  return true;
}

// ---- compiles -------------------------------------------------------------------------------------

std::shared_ptr<Program> LoadedPrograms::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = programs_.find(key);
  return it == programs_.end() ? nullptr : it->second.lock();
}

std::shared_ptr<Program> LoadedPrograms::keep(const std::string& key, std::shared_ptr<Program> p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = programs_.find(key); it != programs_.end())
    if (auto held = it->second.lock()) return held;
  if (programs_.size() >= 4096) std::erase_if(programs_, [](const auto& e) { return e.second.expired(); });
  programs_[key] = p;
  return p;
}

void Device::compile_batch(std::span<CompileJob> jobs) {
  for (CompileJob& j : jobs) {
    try {
      j.program = compile(j.name, *j.source);
    } catch (const InterruptedError&) {
      throw;
    } catch (const std::exception& e) {
      j.error = e.what();
    }
  }
}

// ---- copies ----------------------------------------------------------------------------------------

void Device::transfer(void* dst, Device& from, void* src, size_t bytes) {
  if (void* host = from.allocator().host_ptr(src)) {
    allocator().copyin(dst, {static_cast<const std::byte*>(host), bytes});
    return;
  }
  if (void* host = allocator().host_ptr(dst)) {
    from.allocator().copyout({static_cast<std::byte*>(host), bytes}, src);
    return;
  }
  std::vector<std::byte> staging(bytes);
  from.allocator().copyout(staging, src);
  allocator().copyin(dst, staging);
}

// ---- the registry ----------------------------------------------------------------------------------

namespace {

const std::vector<Backend>& backends() {
  static const std::vector<Backend> all{{"CPU", &open_cpu_device, &list_cpu_devices},
                                        {"CL", &open_cl_device, &list_cl_devices},
                                        {"CUDA", &open_cuda_device, &list_cuda_devices},
                                        {"WEBGPU", &open_webgpu_device, &list_webgpu_devices}};
  return all;
}

// Devices live until the process ends (buffers held by static objects may outlive main), so they
// are never destroyed.
struct Registry {
  std::mutex mu;
  std::map<std::string, Device*> open;
  std::string default_name;
  bool default_set = false;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

std::string canonical_device(const std::string& name) {
  std::string up;
  for (char c : name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  size_t colon = up.find(':');
  std::string kind = up.substr(0, colon);
  int index = 0;
  if (colon != std::string::npos) {
    std::string num = up.substr(colon + 1);
    bool digits = !num.empty() && num.size() < 6 &&
                  std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) throw Error("device '" + name + "': the index after ':' is not a number");
    index = std::stoi(num);
  }
  bool known =
      std::any_of(backends().begin(), backends().end(), [&](const Backend& b) { return b.kind == kind; });
  if (!known) {
    std::string kinds;
    for (const Backend& b : backends()) kinds += (kinds.empty() ? "" : ", ") + b.kind;
    throw Error("device '" + name + "' is unknown (devices: " + kinds + ", with an optional :index)");
  }
  return index == 0 ? kind : kind + ":" + std::to_string(index);
}

Device& device(const std::string& name) {
  std::string canon = canonical_device(name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto it = r.open.find(canon); it != r.open.end()) return *it->second;
  size_t colon = canon.find(':');
  std::string kind = canon.substr(0, colon);
  int index = colon == std::string::npos ? 0 : std::stoi(canon.substr(colon + 1));
  for (const Backend& b : backends())
    if (b.kind == kind) {
      Device* d = b.open(canon, index).release();
      r.open[canon] = d;
      return *d;
    }
  throw Error("device '" + name + "' is unknown");  // canonical_device checked the kind
}

Device& cpu_device() {
  static Device& d = device("CPU");
  return d;
}

std::string default_device() {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.default_set) return r.default_name;
  }
  const char* env = std::getenv("DEVICE");
  std::string name = env && *env ? canonical_device(env) : "CPU";
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.default_set) {
    r.default_name = name;
    r.default_set = true;
  }
  return r.default_name;
}

void set_default_device(const std::string& name) {
  std::string canon = canonical_device(name);
  device(canon);  // an Error now, naming why, if it cannot be opened
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.default_name = canon;
  r.default_set = true;
}

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  for (const Backend& b : backends())
    for (DeviceInfo& d : b.list()) out.push_back(std::move(d));
  return out;
}

}  // namespace lazygrad
