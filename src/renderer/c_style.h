// The C-style base renderer: one statement per linear IR step, for every language of the C family.
// A language is a CStyleLanguage: its target and the handful of spellings in which C dialects
// differ (tinygrad's renderer/cstyle.py does the same with class attributes). c_renderer.cpp and
// opencl_renderer.cpp and cuda_renderer.cpp fill one each; a new C-family backend (Metal) adds one
// more.
#pragma once

#include <map>
#include <string>

#include "codegen/linearize.h"
#include "codegen/target.h"
#include "renderer/renderer.h"

namespace lazygrad {

struct CStyleLanguage {
  Target target;
  std::string preamble;  // includes, typedefs, pragmas at the top of every kernel
  // Typedefs and helpers guarded by #ifndef (guarded_definition): a translation unit of several
  // kernels (the CPU builds a schedule's new kernels with one compiler process) then holds each
  // definition once, and two different definitions of one name fail to compile rather than one of
  // them serving both.
  bool guarded_definitions = false;
  // A statement `NAME(v);` that pins a loaded vector v in a register (NAME, from the preamble), or empty. GCC
  // otherwise treats a vector loaded from read-only memory as that memory and reads it again as the operand
  // of each FMA that uses it: a register tile then loads each vector once per row of the tile.
  std::string keep_in_register;
  bool masked_loads = false;  // lanes loaded under a per-lane validity as one masked load (C, AVX-512)
  // Rows ahead that a reduction loop prefetches what it will load from a large buffer far apart
  // each trip (c_style.cpp, prefetch); 0: none.
  int prefetch_rows = 0;
  std::string kernel_prefix;               // before a work-group kernel's name: "__kernel void "
  bool launch_bounds = false;              // CUDA's __launch_bounds__(its group size) after the prefix
  std::string restrict_kw = "restrict";    // a pointer no other aliases (CUDA C++: "__restrict__")
  std::string buffer_prefix;               // before a buffer parameter's type: "__global "
  std::string global_id;                   // this work-item's global index: "get_global_id(0)"
  std::string group_id, local_id;          // its group's index and its index in the group
  std::string local_prefix;                // before an array the group shares: "__local "
  std::string barrier;                     // the group waits, and its local memory writes are seen
  bool float_suffix = true;                // C's sinf and sqrtf; OpenCL C overloads sin and sqrt instead
  bool signed_wraps = true;                // signed overflow wraps (C with -fwrapv); else done unsigned
  std::string bool_storage = "_Bool";      // how a bool is stored (OpenCL forbids bool in a buffer)
  std::string nan32, nan64, inf32, inf64;  // the literals
  // Helpers by name (as the base calls them) whose code this language spells its own way: lg_fbits
  // (float bits and back), lg_vfma_1 (a * b + c with one rounding), lg_bits_f64 (a scalar argument
  // from its float64 bits).
  std::map<std::string, std::string> helpers;
  // lg_mma_f16 and lg_mma_bf16 (d[4] += a x b: one mma.sync.m16n8k16 per warp) where the language
  // has them in helpers; else a target with tensor cores emulates them through local memory.
};

// The source of one kernel in `lang`. On a target with thread slices (the CPU) it defines
// `int <name>_entry(void* const* bufs, const int64_t* vars, int64_t gstart, int64_t gend,
// const volatile int* stop)`, returning the kernel's error word; otherwise the work-group kernel
// `<name>(buffers..., one int64 per scalar argument (its float64 bits for a float), int* lg_err,
// uint lg_launch)`, one work-item per global index (one work-group per global index when the kernel
// has Local or Group pieces), which reports an error word by an atomic compare-and-swap into
// lg_err[0] (and its launch in lg_err[1]) when lg_err[0] is still 0.
std::string render_c_style(const CStyleLanguage& lang, const Kernel& k, const LinearKernel& lin);

// A Renderer for a C-family language: every one of them is a CStyleLanguage and this.
class CStyleRenderer : public Renderer {
 public:
  explicit CStyleRenderer(CStyleLanguage lang) : lang_(std::move(lang)) {}
  const Target& target() const override { return lang_.target; }
  std::string render(const Kernel& k, const LinearKernel& lin) const override {
    return render_c_style(lang_, k, lin);
  }

 private:
  CStyleLanguage lang_;
};

// A kernel with a TensorCore opt, rendered whole (tensor_core_kernel.cpp), with the same ABI.
std::string render_tensor_core(const CStyleLanguage& lang, const Kernel& k);
// What goes before a work-group kernel's name: the language's prefix, and where it has them, the
// launch bounds of the kernel's group size (the opts' local size, else the target's block size).
std::string kernel_head_prefix(const CStyleLanguage& lang, const Kernel& k);
// The definitions of the base's helpers (lg_h2f, lg_f2bf, ...) that `code` calls, in lang's spelling.
std::string helper_definitions(const CStyleLanguage& lang, const std::string& code);
// A typedef or helper, in a language with guarded_definitions wrapped in #ifndef guards named by it
// and a hash of its code.
std::string guarded_definition(const CStyleLanguage& lang, const std::string& name, const std::string& code);

}  // namespace lazygrad
