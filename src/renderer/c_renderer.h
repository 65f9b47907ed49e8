// Linear IR to C source for the CPU device.
#pragma once

#include <string>

#include "codegen/linearize.h"

namespace lazygrad {

// A complete C translation unit defining
// `int <name>_entry(void* const* bufs, const int64_t* vars, int64_t gstart, int64_t gend)`.
std::string render_c(const Kernel& k, const LinearKernel& lin);

}  // namespace lazygrad
