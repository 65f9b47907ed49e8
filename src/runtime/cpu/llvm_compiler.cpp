// The CPU's in-process compiler, as lazygrad sees it: liblazygrad_llvm.so (llvm_module.cpp, clang and
// LLVM 19) opened with dlopen the first time it is asked for, and its C interface wrapped in
// lazygrad's types. Where the module was not built or does not open, the same functions say why,
// and the CPU compiles with `cc` processes.
#include "runtime/cpu/llvm_compiler.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "lazygrad/error.h"
#include "runtime/cpu/llvm_module.h"

namespace lazygrad {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModuleName = "liblazygrad_llvm.so";

// Where the module may be: LAZYGRAD_LLVM_MODULE; beside the program or Python extension that holds
// this code (a build tree's programs, an installed bin/ with its ../lib, the Python package); where
// this build put it; where `cmake --install` puts it.
std::vector<fs::path> module_candidates() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("LAZYGRAD_LLVM_MODULE"); env && *env) return {env};
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_candidates), &info) && info.dli_fname) {
    std::error_code ec;
    const fs::path here = fs::canonical(info.dli_fname, ec).parent_path();
    if (!ec) out.insert(out.end(), {here / kModuleName, here.parent_path() / "lib" / kModuleName});
  }
#ifdef LAZYGRAD_LLVM_MODULE_BUILT
  out.push_back(LAZYGRAD_LLVM_MODULE_BUILT);
#endif
#ifdef LAZYGRAD_LLVM_MODULE_INSTALLED
  out.push_back(LAZYGRAD_LLVM_MODULE_INSTALLED);
#endif
  return out;
}

struct Opened {
  const LazygradLlvmModule* module = nullptr;
  std::string why;  // when it is null
};

// RTLD_LOCAL: clang's and LLVM's symbols stay out of the process's global scope (llvm_module.h).
const Opened& opened() {
  static const Opened o = [] {
    Opened o;
#ifndef LAZYGRAD_LLVM_MODULE_BUILT
    if (!std::getenv("LAZYGRAD_LLVM_MODULE")) {
      o.why =
          "not built: LLVM 19 was not found when lazygrad was configured (apt-get install llvm-19-dev "
          "libclang-cpp19-dev, then configure again)";
      return o;
    }
#endif
    std::string tried;
    for (const fs::path& p : module_candidates()) {
      std::error_code ec;
      if (!fs::exists(p, ec)) {
        tried += (tried.empty() ? "" : ", ") + p.string();
        continue;
      }
      void* handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        o.why = "not loaded: " + std::string(dlerror());
        return o;
      }
      auto entry = reinterpret_cast<const LazygradLlvmModule* (*)()>(dlsym(handle, "lazygrad_llvm_module"));
      const LazygradLlvmModule* m = entry ? entry() : nullptr;
      if (!m || m->version != kLlvmModuleVersion) {
        o.why = "not loaded: " + p.string() + " is not this lazygrad's compiler module (rebuild it)";
        return o;
      }
      o.module = m;
      return o;
    }
    o.why = "not found: no " + std::string(kModuleName) + " (looked at " + tried +
            "; LAZYGRAD_LLVM_MODULE names it)";
    return o;
  }();
  return o;
}

const LazygradLlvmModule& module_or_throw() {
  const Opened& o = opened();
  if (!o.module) throw Error("compile: LAZYGRAD_CPU_COMPILER=llvm: the in-process compiler is " + o.why);
  return *o.module;
}

// Takes the module's malloc'd text.
std::string take(char* text) {
  std::string s = text ? text : "";
  std::free(text);
  return s;
}

std::atomic<int64_t> loaded_count{0};

class LoadedObject : public JitObject {
 public:
  explicit LoadedObject(void* handle) : handle_(handle) { loaded_count++; }
  ~LoadedObject() override {
    opened().module->unload(handle_);  // a handle means the module is open
    loaded_count--;
  }
  void* find(const std::string& symbol) override { return opened().module->find(handle_, symbol.c_str()); }

 private:
  void* handle_;
};

}  // namespace

bool llvm_compiler_built() { return opened().module != nullptr; }
int64_t jit_objects_loaded() { return loaded_count; }

std::string llvm_compiler_description() {
  const Opened& o = opened();
  return o.module ? o.module->description : o.why;
}

std::string compile_c_in_process(const std::string& source, const std::string& file) {
  const LazygradLlvmModule& m = module_or_throw();
  char *object = nullptr, *error = nullptr;
  size_t size = 0;
  if (m.compile(source.data(), source.size(), file.c_str(), &object, &size, &error) != 0)
    throw Error("compile: " + take(error) + "\n--- source ---\n" + source);
  std::string out(object, size);
  std::free(object);
  return out;
}

std::unique_ptr<JitObject> load_object(const std::string& object, const std::string& name, std::string* why) {
  const Opened& o = opened();
  if (!o.module) {
    if (why) *why = o.why;
    return nullptr;
  }
  char* error = nullptr;
  void* handle = o.module->load(object.data(), object.size(), name.c_str(), &error);
  if (!handle) {
    const std::string reason = take(error);
    if (why) *why = reason;
    return nullptr;
  }
  return std::make_unique<LoadedObject>(handle);
}

}  // namespace lazygrad
