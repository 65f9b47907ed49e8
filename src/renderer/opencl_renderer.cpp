// OpenCL C: the C-style base with OpenCL's qualifiers, overloaded math, as_type bit casts and a
// kernel per work-item. Scalar code for now (Target::vector_bytes 0).
#include "renderer/c_style.h"
#include "renderer/renderer.h"

namespace lazygrad {

namespace {

// A scalar argument arrives as its float64 bits; a device without doubles still needs a float32
// one, so the bits are rounded to float (to nearest even) with integer steps.
constexpr const char* kBitsF64ToF32 = R"(static inline float lg_bits_f64(long b) {
  ulong u = (ulong)b, m = u & 0xfffffffffffffUL;
  uint s = (uint)(u >> 32) & 0x80000000u;
  int e = (int)((u >> 52) & 0x7ff), fe = e - 1023 + 127;
  if (e == 0x7ff) return as_float(s | 0x7f800000u | (m ? 0x400000u : 0u));
  if (fe >= 255) return as_float(s | 0x7f800000u);
  int sh = 29;
  uint head = (uint)fe << 23;
  if (fe <= 0) {
    if (fe < -24) return as_float(s);
    m |= 1UL << 52;
    sh = 30 - fe;
    head = 0;
  }
  ulong r = m >> sh, rem = m & ((1UL << sh) - 1), mid = 1UL << (sh - 1);
  uint bits = s | head | (uint)r;
  if (rem > mid || (rem == mid && (r & 1))) bits++;  /* a carry moves into the exponent, as it should */
  return as_float(bits);
}
)";

CStyleLanguage opencl_language(Target t) {
  CStyleLanguage c;
  c.target = std::move(t);
  // No contraction: a * b + c is two roundings, as on the CPU (OpenCL C contracts by default).
  c.preamble =
      std::string("#pragma OPENCL FP_CONTRACT OFF\n") +
      (c.target.float64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "") +
      "typedef char int8_t;\ntypedef uchar uint8_t;\ntypedef short int16_t;\ntypedef ushort uint16_t;\n"
      "typedef int int32_t;\ntypedef uint uint32_t;\ntypedef long int64_t;\ntypedef ulong uint64_t;\n";
  c.kernel_prefix = "__kernel void ";
  c.buffer_prefix = "__global ";
  c.global_id = "(int64_t)get_global_id(0)";
  c.group_id = "(int64_t)get_group_id(0)";
  c.local_id = "(int64_t)get_local_id(0)";
  c.local_prefix = "__local ";
  c.barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
  c.float_suffix = false;
  c.signed_wraps = false;  // OpenCL C has no -fwrapv
  c.bool_storage = "uchar";
  c.nan32 = "as_float(0x7fc00000u)";
  c.nan64 = "as_double(0x7ff8000000000000UL)";
  c.inf32 = "as_float(0x7f800000u)";
  c.inf64 = "as_double(0x7ff0000000000000UL)";
  c.helpers["lg_fbits"] =
      "static inline uint lg_fbits(float x) { return as_uint(x); }\n"
      "static inline float lg_bitsf(uint u) { return as_float(u); }\n";
  c.helpers["lg_vfma_1"] =
      "static inline float lg_vfma_1(float a, float b, float c) { return fma(a, b, c); }\n";
  c.helpers["lg_bits_f64"] = c.target.float64
                                 ? "static inline double lg_bits_f64(long b) { return as_double(b); }\n"
                                 : kBitsF64ToF32;
  return c;
}

}  // namespace

std::unique_ptr<Renderer> make_opencl_renderer(Target target) {
  target.language = "OpenCL C";
  return std::make_unique<CStyleRenderer>(opencl_language(std::move(target)));
}

}  // namespace lazygrad
