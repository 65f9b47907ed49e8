// C for the CPU device: GCC or clang vector extensions for lanes, libm, a kernel per thread slice.
#include "renderer/c_style.h"
#include "renderer/renderer.h"

namespace lazygrad {

Target cpu_target() { return cpu_target(host_cpu()); }

Target cpu_target(const CpuModel& cpu) {
  Target t;
  t.language = "C";
  t.cpu = cpu;
  t.vector_bytes = cpu.vector_bytes;
  t.thread_slices = true;
  t.scratch = true;
  t.interrupt_polls = true;
  return t;
}

namespace {

CStyleLanguage c_language() {
  CStyleLanguage c;
  c.target = cpu_target();
  // GCC 12's loop if-conversion miscompiles some of these kernels at -O2 with AVX-512VL: a vector
  // product reduction whose select reads `r < k | r == k` came out as the identity on three lanes
  // of four (the compiler fuzzer's seed 3306; right at -O0, with clang, and with UBSan). Our
  // loops carry their own vectors, so the loss is small (measured in docs/testing.md). Its SLP
  // vectorizer (with AVX2 or AVX-512) made a uint8 min of signs, 255 - max(255 - x) over a row
  // unrolled 4 then 2, 255 where every value was 1 (the compiler fuzzer's seed 3634; right at -O0,
  // with clang, and without SLP); our kernels' vectors are our own, so it is off too (no change in
  // bench_sgemm or the training steps: docs/testing.md).
  // GCC's -march=native tunes an Intel core with AVX-512 (Skylake-X, Ice Lake, Rocket Lake, and
  // Xeons that a hypervisor reports as one of these) to prefer 256-bit vectors: the lane-by-lane
  // fmaf of a 16-lane FMA (vector_fma) then became two ymm halves and shuffles, and an sgemm ran at
  // 12 GFLOP/s on a Xeon where OpenBLAS ran 295. Our vectors are as wide as the machine's on purpose.
  c.preamble =
      "#include <math.h>\n#include <stdint.h>\n"
      "#if defined(__GNUC__) && !defined(__clang__)\n"
      "#pragma GCC optimize(\"no-tree-loop-if-convert\", \"no-tree-slp-vectorize\")\n"
      "#if defined(__x86_64__)\n#pragma GCC target(\"prefer-vector-width=512\")\n#endif\n#endif\n"
      "#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)\n"
      "#define LG_IN_REGISTER(x) __asm__(\"\" : \"+v\"(x))\n"
      "#else\n#define LG_IN_REGISTER(x) (void)(x)\n#endif\n";
  // GCC's alone: clang (CC=clang, LAZYGRAD_CPU_COMPILER=llvm) has no "v" register for some vector
  // types (a vector of 16 bools: "couldn't allocate output register"), and needs no pin.
  c.keep_in_register = "LG_IN_REGISTER";
  c.guarded_definitions = true;  // runtime/cpu builds kernels in batches
  c.masked_loads = true;
  c.prefetch_rows = 4;
  c.float_suffix = true;
  c.bool_storage = "_Bool";
  c.nan32 = "__builtin_nanf(\"\")";
  c.nan64 = "__builtin_nan(\"\")";
  c.inf32 = "__builtin_inff()";
  c.inf64 = "__builtin_inf()";
  return c;
}

}  // namespace

const Renderer& c_renderer() {
  static const CStyleRenderer r(c_language());
  return r;
}

}  // namespace lazygrad
