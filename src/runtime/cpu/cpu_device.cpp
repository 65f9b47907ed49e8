// The CPU device: kernels are C, compiled by the system compiler into a shared object (loaded with
// dlopen), or with LAZYGRAD_CPU_COMPILER=llvm by clang and LLVM inside the process into an object
// (loaded by ORC's JIT linker: runtime/cpu/llvm_compiler.h); cached on disk by a hash of the source
// and the compiler, and run on a thread pool.
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "codegen/cpu_model.h"
#include "debug.h"
#include "lazygrad/counters.h"
#include "lazygrad/error.h"
#include "renderer/renderer.h"
#include "runtime/cpu/llvm_compiler.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"
#include "runtime/interrupt.h"
#include "runtime/thread_pool.h"
#include "shape/size.h"

namespace lazygrad {

namespace {

// bufs, vars, the range of g to run, and the interrupt flag the kernel reads in its long loops.
using KernelFn = int (*)(void* const*, const int64_t*, int64_t, int64_t, const volatile int*);

// Kernels too small to pay for waking the workers run on the calling thread.
constexpr int64_t kMinParallelWork = 1 << 15;

std::string run_command(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    status = -1;
    return "popen failed";
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  status = pclose(p);
  return out;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A loaded kernel object (what unloads it when the last holder lets go: dlclose, or the JIT's
// library removed) and the kernel's entry.
struct Loaded {
  std::shared_ptr<void> owner;
  KernelFn fn = nullptr;
};

// Whether kernels are compiled in the process (LAZYGRAD_CPU_COMPILER=llvm) rather than by `cc`.
bool in_process() { return settings().cpu_compiler == "llvm"; }

// Owns its object: unloaded when the last holder (a schedule, realize's cache of compiled kernels, a
// Jit capture) lets it go, so a process that meets kernel after kernel (the compiler fuzzer: 13,000
// objects in 15 minutes) does not run out of memory mappings.
class CpuProgram : public Program {
 public:
  CpuProgram(Loaded loaded, ThreadPool* (*pool)())
      : owner_(std::move(loaded.owner)), fn_(loaded.fn), pool_(pool) {}
  CpuProgram(const CpuProgram&) = delete;
  CpuProgram& operator=(const CpuProgram&) = delete;
  LaunchResult launch(const LaunchArgs& a) const override {
    auto t0 = std::chrono::steady_clock::now();
    int err = run(a.buffers, a.vars, a.global_size, a.work_per_item, a.stop);
    return {err, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  }

 private:
  int run(std::span<void* const> buffers, std::span<const int64_t> vars, int64_t global_size,
          int64_t work_per_item, const volatile int* stop) const {
    const Settings& s = settings();
    int chunks = 1;
    if (saturating_mul(global_size, std::max<int64_t>(work_per_item, 1)) >= kMinParallelWork)
      chunks = static_cast<int>(std::min<int64_t>(s.threads, global_size));
    if (chunks <= 1) {
      DenormalGuard guard(s.flush_denormals);  // set for the kernel only, the caller's mode restored after
      return fn_(buffers.data(), vars.data(), 0, global_size, stop);
    }
    std::vector<int> errs(chunks, 0);
    pool_()->run(chunks, [&](int c) {
      int64_t begin = global_size * c / chunks, end = global_size * (c + 1) / chunks;
      errs[c] = fn_(buffers.data(), vars.data(), begin, end, stop);
    });
    int err = 0;
    for (int e : errs) err |= e;
    return err;
  }

  std::shared_ptr<void> owner_;
  KernelFn fn_;
  ThreadPool* (*pool_)();
};

ThreadPool* shared_pool() {
  static std::mutex mu;
  static std::unique_ptr<ThreadPool> pool;
  static std::pair<int, bool> made{0, false};
  std::lock_guard<std::mutex> lock(mu);
  std::pair<int, bool> want{settings().threads, settings().flush_denormals};
  if (!pool || made != want) {  // THREADS or FTZ changed: a new pool with the new setting
    pool.reset();
    pool = std::make_unique<ThreadPool>(want.first, want.second);
    made = want;
  }
  return pool.get();
}

// Host memory, 64-byte aligned (a cache line; an AVX-512 vector).
class CpuAllocator : public PooledAllocator {
 public:
  void copyin(void* dst, std::span<const std::byte> src) override {
    if (!src.empty()) std::memcpy(dst, src.data(), src.size());
  }
  void copyout(std::span<std::byte> dst, void* src) override {
    if (!dst.empty()) std::memcpy(dst.data(), src, dst.size());
  }
  void* host_ptr(void* handle) const override { return handle; }

 protected:
  // A block of 2 MiB or more starts on a 2 MiB boundary and asks for transparent huge pages
  // (MADV_HUGEPAGE; the kernel's default here is `madvise`): fewer TLB misses where a kernel streams
  // it (GPT-2's decode steps read 500 MB of weights: 16.0-17.3 ms a token against 16.9-17.9 on 4 KiB
  // pages, bench_gpt2 alternating on the Xeon, 2026-12-03). A session in 2026-11 found a fresh
  // block's first touch much slower this way, but that was GPT-2's KV caches, which now come
  // zeroed from raw_alloc_zeroed's own pages; lazygrad generate's prompt measured the same with
  // and without. A checkpoint's weights are file pages of its mapping, which this does not reach.
  void* raw_alloc(size_t bytes) override {
    constexpr size_t kHugePage = size_t(2) << 20;
    if (bytes < kHugePage) return std::aligned_alloc(64, bytes);
    void* p = nullptr;  // posix_memalign: aligned_alloc wants a size that the alignment divides
    if (::posix_memalign(&p, kHugePage, bytes) != 0) return nullptr;
    (void)::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: if refused, 4 KiB pages serve
    return p;
  }
  void raw_free(void* handle) noexcept override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = mapped_.find(handle); it != mapped_.end()) {
        ::munmap(handle, it->second);
        mapped_.erase(it);
        return;
      }
    }
    std::free(handle);
  }
  // A megabyte or more of zeros as fresh pages: the OS zeroes each as it is first touched, so a
  // buffer written in part (GPT-2's KV caches, 24 of 3 MiB, of which a 130-token prompt writes an
  // eighth) costs only what is used; a fill kernel faulted in every page (24 ms of a 200 ms prompt).
  // Smaller ones are cheaper filled.
  void* raw_alloc_zeroed(size_t bytes) override {
    if (bytes < (size_t(1) << 20)) return nullptr;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    try {
      std::lock_guard<std::mutex> lock(mu_);
      mapped_.emplace(p, bytes);
    } catch (const std::bad_alloc&) {
      ::munmap(p, bytes);
      return nullptr;
    }
    return p;
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, size_t> mapped_;  // the blocks raw_alloc_zeroed mapped, and their sizes
};

DeviceInfo cpu_info(const std::string& name) {
  std::string compiler;
  bool ok = true;
  if (in_process()) {
    ok = llvm_compiler_built();
    compiler =
        ok ? llvm_compiler_description() : "LAZYGRAD_CPU_COMPILER=llvm: " + llvm_compiler_description();
  } else {
    int status = 0;
    std::string v = run_command(quote(settings().cc) + " --version", status);
    ok = status == 0;
    compiler = ok ? v.substr(0, v.find('\n')) : "compiler '" + settings().cc + "' not found";
  }
  return {name, compiler + ", " + std::to_string(settings().threads) + " threads; " + host_cpu().describe(),
          ok};
}

// "CPU", and "CPU:1", "CPU:2", ...: virtual devices over the same cores and kernel objects, each
// with its own memory, so that code for several devices can be tested on one machine.
// glibc maps every block above 128 KiB afresh and unmaps it when freed (until its threshold adapts
// to a freed block): a kernel's staging scratch (codegen/stage.h) and a first forward's activations
// then pay a page fault per 4 KiB on every call. Blocks up to 64 MiB come from the heap instead,
// which keeps what is freed for the next allocation.
void keep_freed_memory() {
#if defined(__GLIBC__)
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  (void)once;
#endif
}

class CpuDevice : public Device {
 public:
  explicit CpuDevice(std::string name) : Device(std::move(name)) { keep_freed_memory(); }
  DeviceInfo info() const override { return cpu_info(name()); }
  Allocator& allocator() override { return allocator_; }
  const Renderer& renderer() const override { return c_renderer(); }

  std::shared_ptr<Program> compile(const std::string& name, const std::string& source) override {
    return in_process() ? compile_in_process(name, source) : compile_c(name, source);
  }

  // The jobs loaded or in the cache take their program from there; the others (two or more) are
  // built as one translation unit, which includes each kernel's source with its function and entry
  // renamed after its cache key. One compiler process then pays its start, the headers' parse and
  // the link once for the batch (docs/devices.md has the numbers). A batch that fails to build is
  // built again one kernel at a time, so that each error names its kernel.
  void compile_batch(std::span<CompileJob> jobs) override {
    if (in_process()) return Device::compile_batch(jobs);  // no process to share: one at a time
    std::vector<Pending> misses;
    std::vector<std::pair<size_t, size_t>> repeats;  // a job whose kernel an earlier miss is, and that one
    for (size_t i = 0; i < jobs.size(); i++) {
      const std::string key = key_of(*jobs[i].source);
      auto same = std::find_if(misses.begin(), misses.end(), [&](const Pending& m) { return m.key == key; });
      if (same != misses.end()) {
        repeats.push_back({i, same->job});
        continue;
      }
      if ((jobs[i].program = found(jobs[i].name, key, *jobs[i].source))) continue;
      misses.push_back({i, key, cache_dir() + "/" + jobs[i].name + "-" + key});
    }
    bool built = false;
    if (misses.size() > 1) {
      try {
        build_batch(jobs, misses);
        built = true;
      } catch (const InterruptedError&) {
        throw;
      } catch (const Error& e) {
        debug_log(3, std::string("compile: a batch of ") + std::to_string(misses.size()) +
                         " kernels failed to build; building them one by one:\n" + e.what());
      }
    }
    for (const Pending& m : misses) {
      CompileJob& job = jobs[m.job];
      try {
        if (!built) {
          job.program = compile_c(job.name, *job.source);
          continue;
        }
        Loaded fn = load(m.base + ".so", job.name, m.key);
        if (!fn.fn)
          throw Error("compile: built " + m.base + ".so but could not load " + job.name + ": " + dlerror());
        job.program = keep(m.key, fn);
      } catch (const InterruptedError&) {
        throw;
      } catch (const std::exception& e) {
        job.error = e.what();
      }
    }
    for (const auto& [job, first] : repeats) {
      jobs[job].program = jobs[first].program;
      jobs[job].error = jobs[first].error;
    }
  }

 private:
  CpuAllocator allocator_;

  struct Pending {
    size_t job;
    std::string key, base;  // the cache key, and the entry's path without its extension
  };

  static std::string key_of(const std::string& source) {
    const Settings& s = settings();
    if (in_process()) return hex64(fnv1a(source + "\n" + llvm_compiler_description()));
    return hex64(fnv1a(source + "\n" + s.cc + "\n" + s.cflags));
  }

  // A kernel compiled by clang and LLVM in this process: its object cached on disk (`.o`, with the
  // source and a checksum, as the C path's `.so`) and linked into the process by ORC's JIT.
  static std::shared_ptr<Program> compile_in_process(const std::string& name, const std::string& source) {
    const std::string key = key_of(source);
    if (auto p = found(name, key, source)) return p;
    const std::string base = cache_dir() + "/" + name + "-" + key;
    auto t0 = std::chrono::steady_clock::now();
    const std::string object = compile_c_in_process(source, name + "-" + key + ".c");
    record_compile(base, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    write_file_atomic(base + ".c", source);
    write_file_atomic(base + ".sum", hex64(fnv1a(object)));
    write_file_atomic(base + ".o", object);
    std::string why;
    Loaded fn = load_jit(object, name, &why);
    if (!fn.fn) throw Error("compile: compiled " + name + " in process but could not load it: " + why);
    return keep(key, fn);
  }

  // The entry of an object loaded by the JIT (null if it does not load).
  static Loaded load_jit(const std::string& object, const std::string& name, std::string* why) {
    std::shared_ptr<JitObject> o = load_object(object, name, why);
    if (!o) return {};
    auto fn = reinterpret_cast<KernelFn>(o->find(name + "_entry"));
    if (!fn) {
      if (why && why->empty()) *why = "no symbol " + name + "_entry";
      return {};
    }
    return {std::move(o), fn};
  }

  // The kernel's program if some holder has it loaded now or the disk cache has it (else null).
  static std::shared_ptr<Program> found(const std::string& name, const std::string& key,
                                        const std::string& source) {
    if (auto p = loaded_.find(key)) return p;
    Loaded fn = load_cached(cache_dir() + "/" + name + "-" + key, name, key, source);
    if (!fn.fn) return nullptr;
    record_cache_hit();
    return keep(key, fn);
  }

  // The program of a loaded object, registered under its key (or the one another thread registered
  // meanwhile: one program per kernel).
  static std::shared_ptr<Program> keep(const std::string& key, Loaded fn) {
    return loaded_.keep(key, std::make_shared<CpuProgram>(fn, &shared_pool));
  }

  static std::shared_ptr<Program> compile_c(const std::string& name, const std::string& source) {
    const std::string key = key_of(source);
    if (auto p = found(name, key, source)) return p;
    // Compiles run outside the lock, so a schedule's new kernels build in parallel.
    std::string base = cache_dir() + "/" + name + "-" + key;
    try {
      build(base, source);
    } catch (const Error&) {
      // The folder deleted while the compiler wrote into it: once more, in the folder made again.
      std::error_code ec;
      if (interrupted() || std::filesystem::is_directory(base.substr(0, base.rfind('/')), ec)) throw;
      base = cache_dir() + "/" + name + "-" + key;
      build(base, source);
    }
    Loaded fn = load(base + ".so", name, key);
    if (!fn.fn) throw Error("compile: built " + base + ".so but could not load " + name + ": " + dlerror());
    return keep(key, fn);
  }

  // The entry of the object at `so`, and its handle (both null if it does not load). A kernel built
  // in a batch has its entry renamed after its key (`<name>_<key>_entry`), one built alone keeps
  // `<name>_entry`.
  static Loaded load(const std::string& so, const std::string& name, const std::string& key) {
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return {};
    std::shared_ptr<void> owner(h, [](void* p) { dlclose(p); });
    auto fn = reinterpret_cast<KernelFn>(dlsym(h, (name + "_" + key + "_entry").c_str()));
    if (!fn) fn = reinterpret_cast<KernelFn>(dlsym(h, (name + "_entry").c_str()));
    if (!fn) return {};
    return {std::move(owner), fn};
  }

  // An entry is valid when its stored source is ours and the object's checksum matches.
  static Loaded load_cached(const std::string& base, const std::string& name, const std::string& key,
                            const std::string& source) {
    const std::string ext = in_process() ? ".o" : ".so";
    auto src = read_file(base + ".c");
    auto object = read_file(base + ext);
    auto sum = read_file(base + ".sum");
    if (!src || !object || !sum) return {};
    if (*src != source || *sum != hex64(fnv1a(*object))) {
      debug_log(3, "cache: " + base + ext + " is corrupt or stale, rebuilding");
      return {};
    }
    if (!in_process()) return load(base + ".so", name, key);
    std::string why;
    Loaded fn = load_jit(*object, name, &why);
    if (!fn.fn) debug_log(3, "cache: " + base + ".o does not load (" + why + "), rebuilding");
    return fn;
  }

  // Runs the compiler on `c_file` into `so`; throws an InterruptedError or an Error (with `what`,
  // the source or the batch, on failure). Returns the compiler's seconds.
  static double run_compiler(const std::string& c_file, const std::string& so, const std::string& what) {
    const Settings& s = settings();
    // -lm: the object names libm's functions itself, so it loads into any process.
    std::string cmd = s.cc + " " + s.cflags + " -o " + quote(so) + " " + quote(c_file) + " -lm";
    auto t0 = std::chrono::steady_clock::now();
    int status = 0;
    std::string out = run_command(cmd, status);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (status != 0) {
      std::error_code ec;
      std::filesystem::remove(so, ec);
      // Ctrl-C reaches the compiler too (one process group): an interrupt, raised by the caller once
      // every compile of the schedule is back (the flag stays set), not a compile error.
      if (interrupted() || (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT))
        throw InterruptedError("interrupted (Ctrl-C, SIGINT) while compiling kernel " +
                               c_file.substr(c_file.rfind('/') + 1));
      throw Error("compile: `" + cmd + "` failed:\n" + out + "\n--- source ---\n" + what);
    }
    return dt;
  }

  // Puts the object `tmp_so` (with checksum `sum`) in place as entry `base`'s object, by a hard link
  // (a batch's object serves each of its kernels) or else a copy, then a rename.
  static void install(const std::string& tmp_so, const std::string& so_bytes, const std::string& base) {
    write_file_atomic(base + ".sum", hex64(fnv1a(so_bytes)));
    const std::string tmp = base + ".so.link." + std::to_string(getpid()) + "." + std::to_string(counter_++);
    std::error_code ec;
    std::filesystem::create_hard_link(tmp_so, tmp, ec);
    if (ec) write_file_atomic(tmp, so_bytes);
    replace_file(tmp, base + ".so");
  }

  static void build(const std::string& base, const std::string& source) {
    std::string tmp = base + ".build." + std::to_string(getpid()) + "." + std::to_string(counter_++);
    // The source goes in place first: the object then names the same file in every build, so its
    // bytes (and checksum) do not depend on which process built it.
    write_file_atomic(base + ".c", source);
    record_compile(base, run_compiler(base + ".c", tmp + ".so", source));
    auto so = read_file(tmp + ".so");
    if (!so) throw Error("compile: compiler wrote no " + tmp + ".so");
    write_file_atomic(base + ".sum", hex64(fnv1a(*so)));
    replace_file(tmp + ".so", base + ".so");
  }

  // The misses of a batch built by one compiler: a translation unit that includes each one's source
  // (written in place first, as build() does) with its function and entry renamed after its key.
  // The unit is named by a hash of its text and stays in the folder, so processes that build the
  // same batch at once compile the same file into the same bytes (each entry's checksum is of the
  // batch's object, which every entry of the batch gets).
  static void build_batch(std::span<const CompileJob> jobs, const std::vector<Pending>& misses) {
    std::string unit;
    for (const Pending& m : misses) {
      const std::string& name = jobs[m.job].name;
      if (m.base.find_first_of("\"\\\n") != std::string::npos)
        throw Error("compile: the cache path " + m.base + " cannot be #included");
      write_file_atomic(m.base + ".c", *jobs[m.job].source);
      unit += "#define " + name + " " + name + "_" + m.key + "\n#define " + name + "_entry " + name + "_" +
              m.key + "_entry\n#include \"" + m.base + ".c\"\n#undef " + name + "\n#undef " + name +
              "_entry\n";
    }
    const std::string dir = cache_dir(), unit_c = dir + "/batch-" + hex64(fnv1a(unit)) + ".c";
    const std::string tmp =
        dir + "/batch.build." + std::to_string(getpid()) + "." + std::to_string(counter_++);
    write_file_atomic(unit_c, unit);
    const double dt = run_compiler(unit_c, tmp + ".so", unit);
    auto so = read_file(tmp + ".so");
    if (!so) throw Error("compile: compiler wrote no " + tmp + ".so");
    for (const Pending& m : misses) {
      record_compile(m.base, dt / static_cast<double>(misses.size()));
      install(tmp + ".so", *so, m.base);
    }
    std::error_code ec;
    std::filesystem::remove(tmp + ".so", ec);
  }

  // Shared by the CPU devices, by the source's hash: one object per kernel in the process.
  static inline LoadedPrograms loaded_;
  static inline std::atomic<int> counter_{0};
};

}  // namespace

std::string cpu_kernel_compiler() {
  if (in_process()) return llvm_compiler_built() ? llvm_compiler_description() + ", -O2" : "llvm (not built)";
  return settings().cc + " " + settings().cflags;
}

std::unique_ptr<Device> open_cpu_device(const std::string& name, int) {
  return std::make_unique<CpuDevice>(name);
}

// The CPU is always there; the entry says whether its compiler is.
std::vector<DeviceInfo> list_cpu_devices() { return {cpu_info("CPU")}; }

}  // namespace lazygrad
