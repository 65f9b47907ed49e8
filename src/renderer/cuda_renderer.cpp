// CUDA C++: the C-style base with CUDA's thread indices, __shared__ arrays, __syncthreads and a
// __launch_bounds__ per kernel, compiled by NVRTC (runtime/cuda/nvrtc.h) with -default-device, so
// the base's `static inline` helpers are device functions without a qualifier of their own.
//
// No header is included: NVRTC finds cuda_fp16.h only with the toolkit's include folder, which a
// machine with the driver and NVRTC alone lacks. float16 and bfloat16 are stored as 16 bits and
// converted by the base's own helpers, bit for bit what every other device computes; the tensor-core
// products (mma.sync in inline PTX, codegen/tensor_cores.h) take the same 16-bit values in pairs.
#include "renderer/c_style.h"
#include "renderer/renderer.h"

namespace lazygrad {

Target cuda_target(int sm) {
  Target t;
  t.language = "CUDA C++";
  t.vector_bytes = 0;
  t.thread_slices = false;
  t.scratch = false;
  t.interrupt_polls = false;
  t.local_memory = 48 * 1024;  // __shared__ without opting in to more (cuFuncSetAttribute)
  t.max_local = {1024, 1024, 64};
  t.max_group_size = 1024;
  t.max_grid = {INT32_MAX, 65535, 65535};
  // Neither size is measured yet (no GPU when they were set): a grouped reduction over 8 warps, as
  // tinygrad starts from, and groups of 4 warps, one per scheduler of an SM.
  t.group_reduction = 256;
  t.block_size = 128;
  t.sm = sm;
  t.float64 = true;
  t.float16 = true;
  t.int64 = true;
  t.keeps_subnormals = true;  // NVRTC's default -ftz=false
  t.tensor_cores = sm >= 80;  // mma.sync.m16n8k16 with float16 and bfloat16
  return t;
}

namespace {

CStyleLanguage cuda_language(Target t) {
  CStyleLanguage c;
  c.target = std::move(t);
  // C's fixed-width names (NVRTC has no <stdint.h> without the toolkit's headers), the OpenCL-style
  // names the base's work-group kernel uses, and C's _Bool as C++'s bool.
  c.preamble =
      "typedef signed char int8_t;\ntypedef unsigned char uint8_t;\ntypedef short int16_t;\n"
      "typedef unsigned short uint16_t;\ntypedef int int32_t;\ntypedef unsigned int uint32_t;\n"
      "typedef long long int64_t;\ntypedef unsigned long long uint64_t;\ntypedef unsigned int uint;\n"
      "typedef bool _Bool;\n"
      "static inline int atomic_cmpxchg(int* p, int expected, int desired) "
      "{ return atomicCAS(p, expected, desired); }\n";
  c.kernel_prefix = "extern \"C\" __global__ void ";
  c.launch_bounds = true;  // the most threads a launch has: ptxas may give each more registers
  c.restrict_kw = "__restrict__";
  c.buffer_prefix = "";
  c.global_id = "((int64_t)blockIdx.x * blockDim.x + threadIdx.x)";
  c.group_id = "(int64_t)blockIdx.x";
  c.local_id = "(int64_t)threadIdx.x";
  c.local_prefix = "__shared__ ";
  c.barrier = "__syncthreads();";
  c.float_suffix = true;
  c.signed_wraps = false;  // no -fwrapv: signed sums are done unsigned
  c.bool_storage = "bool";
  c.nan32 = "__int_as_float(0x7fc00000)";
  c.nan64 = "__longlong_as_double(0x7ff8000000000000LL)";
  c.inf32 = "__int_as_float(0x7f800000)";
  c.inf64 = "__longlong_as_double(0x7ff0000000000000LL)";
  c.helpers["lg_fbits"] =
      "static inline uint32_t lg_fbits(float x) { return __float_as_uint(x); }\n"
      "static inline float lg_bitsf(uint32_t u) { return __uint_as_float(u); }\n";
  c.helpers["lg_vfma_1"] =
      "static inline float lg_vfma_1(float a, float b, float c) { return __fmaf_rn(a, b, c); }\n";
  // One warp's mma.sync.m16n8k16 (renderer/tensor_core_kernel.cpp): d += a x b in float32.
  for (const char* type : {"f16", "bf16"})
    c.helpers[std::string("lg_mma_") + type] =
        std::string("static inline void lg_mma_") + type +
        "(float* d, const uint32_t* a, const uint32_t* b) {\n"
        "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." +
        type + "." + type +
        ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
        "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
        "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), "
        "\"r\"(b[1]));\n}\n";
  c.helpers["lg_bits_f64"] =
      "static inline double lg_bits_f64(int64_t b) { return __longlong_as_double(b); }\n";
  return c;
}

}  // namespace

std::unique_ptr<Renderer> make_cuda_renderer(Target target) {
  target.language = "CUDA C++";
  return std::make_unique<CStyleRenderer>(cuda_language(std::move(target)));
}

}  // namespace lazygrad
