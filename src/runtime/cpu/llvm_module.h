// The plain C interface between lazygrad and its in-process compiler, liblazygrad_llvm.so (built from
// llvm_module.cpp against clang's and LLVM 19's libraries). lazygrad opens the module with dlopen's
// RTLD_LOCAL, so clang's symbols never enter the process's global scope: PoCL, the OpenCL device
// here, loads clang 15's libclang-cpp into the same process, and libclang-cpp's symbols carry no
// version, so one linked in directly would take the other's calls (a double free at exit, seen).
// Nothing of lazygrad's is linked into the module and no exception crosses: results and errors
// are returned as malloc'd bytes, which the caller frees.
#pragma once

#include <cstddef>

extern "C" {

constexpr int kLlvmModuleVersion = 1;

struct LazygradLlvmModule {
  int version;              // kLlvmModuleVersion
  const char* description;  // "clang 19.1.7 and LLVM 19.1.7, in process, for rocketlake"
  // The object code of one C translation unit: 0 with *object (*object_size bytes); else nonzero
  // with *error, clang's diagnostics.
  int (*compile)(const char* source, size_t source_size, const char* file, char** object, size_t* object_size,
                 char** error);
  // The object loaded in a JIT library of its own: a handle; else null with *error.
  void* (*load)(const char* object, size_t object_size, const char* name, char** error);
  void* (*find)(void* loaded, const char* symbol);  // null where the object has no such symbol
  void (*unload)(void* loaded);
};

// The module's one exported symbol.
const LazygradLlvmModule* lazygrad_llvm_module();
}
