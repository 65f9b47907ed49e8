// A vendor's library opened at run time (OpenCL, the CUDA driver, NVRTC): lazygrad builds and runs
// without it, and says why a device is missing when it is not there.
#pragma once

#include <dlfcn.h>

#include <string>

namespace lazygrad {

// Sets fn to the library's entry point `name`; adds the name to `missing` when it has none.
template <class Fn>
void bind_symbol(void* lib, Fn& fn, const char* name, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
}

}  // namespace lazygrad
