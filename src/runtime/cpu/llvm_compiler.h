// The CPU's in-process compiler (LAZYGRAD_CPU_COMPILER=llvm): a kernel's C compiled by clang and
// LLVM 19 inside the process (liblazygrad_llvm.so over Debian's libclang-cpp19 and libLLVM-19, opened
// once), its object loaded by ORC's JIT linker. No compiler process, no link step, no dlopen per
// kernel: docs/devices.md has the costs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace lazygrad {

// Whether the in-process compiler is here (LLVM 19 was found when lazygrad was configured and its
// module opens), and what it is ("clang 19.1.7 and LLVM 19.1.7, in process, for sapphirerapids"), or
// why it is absent.
bool llvm_compiler_built();
std::string llvm_compiler_description();

// The object code (ELF, relocatable) of one C translation unit, compiled at -O2 for this machine
// with the C path's semantics: -fwrapv, -ffp-contract=off, no math errno. `file` names it in
// diagnostics. Error with clang's diagnostics and the source when it does not compile. Thread-safe.
std::string compile_c_in_process(const std::string& source, const std::string& file);

// An object loaded into the process, in a JIT library of its own (kernels of one name are different
// kernels); unloaded when destroyed.
class JitObject {
 public:
  virtual ~JitObject() = default;
  // The address of `symbol`, or null when the object does not define it.
  virtual void* find(const std::string& symbol) = 0;
};
// Null when the object does not load (corrupt): its reason in *why.
std::unique_ptr<JitObject> load_object(const std::string& object, const std::string& name, std::string* why);
// How many objects are loaded now.
int64_t jit_objects_loaded();

}  // namespace lazygrad
