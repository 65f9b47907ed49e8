// WGSL helper functions (wgsl_helpers.h). The C-style base's helpers (c_style.cpp) are the model:
// the same steps on 32-bit words, so a value is the same bits on every device where the hardware
// rounds as IEEE says.
//
// NaN and infinity: WGSL rejects a constant expression whose value is NaN or infinite (a shader-
// creation error), and lets compilers assume no operand is either. So such values are made at run
// time from their bits (lg_f32: a call of a user function is never a constant expression), NaN is
// tested on the bits (lg_isnan), and every builtin whose result WGSL leaves open at the edges
// (division by zero, sqrt and log of negatives, sin of infinity) is guarded to give PyTorch's value.
//
// Without branches: every helper is select() and non-short-circuit & and |. SwiftShader's compiler
// took minutes (and then lost the device) on a reduction loop whose body inlined a few dozen
// helpers with `if`s and `&&`s; the same kernel branch-free builds in 50 ms.
#include "renderer/wgsl_helpers.h"

#include <cstring>
#include <vector>

namespace lazygrad::wgsl {

namespace {

struct Helper {
  const char* name;  // with its "(": how a call of it reads
  const char* code;
};

const Helper kHelpers[] = {
    {"lg_f32(", "fn lg_f32(bits: u32) -> f32 { return bitcast<f32>(bits); }\n"},
    {"lg_isnan(", "fn lg_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"},
    {"lg_isinf(", "fn lg_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }\n"},
    // max that propagates NaN, as torch.maximum does (WGSL's max leaves NaN open).
    {"lg_max_f(", "fn lg_max_f(a: f32, b: f32) -> f32 { return select(b, a, (a > b) | lg_isnan(a)); }\n"},
    {"lg_lt_f(", "fn lg_lt_f(a: f32, b: f32) -> bool { return (a < b) & !lg_isnan(a) & !lg_isnan(b); }\n"},
    {"lg_ne_f(", "fn lg_ne_f(a: f32, b: f32) -> bool { return (a != b) | lg_isnan(a) | lg_isnan(b); }\n"},
    // x * 0 and x * -0.0: a signed zero, NaN for NaN and infinities. Vulkan compilers may fold
    // x * 0 to 0 (SwiftShader does, without SignedZeroInfNanPreserve): the frontend's trunc keeps
    // -0.0 by x * 0, and a NaN must stay NaN. Done on the bits, which no float folding touches.
    {"lg_mul_zero(", R"(fn lg_mul_zero(x: f32, sign: u32) -> f32 {
  return select(bitcast<f32>((bitcast<u32>(x) ^ sign) & 0x80000000u), lg_f32(0x7fc00000u), lg_isnan(x) | lg_isinf(x));
}
)"},
    // a / b with IEEE's values at b == 0, which WGSL leaves open: 0/0 and NaN/0 are NaN, else an
    // infinity of the operands' combined sign. Elsewhere WGSL's division, which the spec allows to
    // be 2.5 ulp off (SwiftShader's gave IEEE's quotients in test_webgpu; a correction by the fma
    // residual made them an ulp off there: its fma is perhaps not fused).
    {"lg_div(", R"(fn lg_div(a: f32, b: f32) -> f32 {
  let inf = lg_f32(((bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u) | 0x7f800000u);
  let at_zero = select(inf, lg_f32(0x7fc00000u), (a == 0.0f) | lg_isnan(a));
  return select(a / b, at_zero, (b == 0.0f) & !lg_isnan(b));
}
)"},
    {"lg_sqrt(", R"(fn lg_sqrt(x: f32) -> f32 {
  return select(select(sqrt(x), x, lg_isinf(x)), lg_f32(0x7fc00000u), lg_isnan(x) | (x < 0.0f));
}
)"},
    {"lg_log2(", R"(fn lg_log2(x: f32) -> f32 {
  let edge = select(select(log2(x), x, lg_isinf(x)), lg_f32(0xff800000u), x == 0.0f);
  return select(edge, lg_f32(0x7fc00000u), lg_isnan(x) | (x < 0.0f));
}
)"},
    {"lg_log(", R"(fn lg_log(x: f32) -> f32 {
  let edge = select(select(log(x), x, lg_isinf(x)), lg_f32(0xff800000u), x == 0.0f);
  return select(edge, lg_f32(0x7fc00000u), lg_isnan(x) | (x < 0.0f));
}
)"},
    // 2^x and e^x by the C renderer's series (c_style.cpp, exp_helper: the same clamps, reduction
    // and coefficients), within an ulp or two of libm, where WGSL's exp2 may be off by 3 + 2|x| ulp.
    // n is rounded by round(), not by the C code's magic-number addition, which a WGSL compiler may
    // fold away ((c + M) - M is c to a compiler that reassociates: SwiftShader's exp was 10% off).
    // 2^n is two factors, so a subnormal result rounds once and an overflow gives inf. A NaN passes
    // the clamps and the arithmetic keeps it.
    {"lg_exp2(", R"(fn lg_exp2(x: f32) -> f32 {
  let c = select(select(x, 128.0f, x > 128.0f), -150.0f, x < -150.0f);
  let n = round(c);
  let f = c - n;
  var p = 0.000154614449f;
  p = fma(p, f, 0.0013400428f);
  p = fma(p, f, 0.00961805694f);
  p = fma(p, f, 0.0555032715f);
  p = fma(p, f, 0.240226507f);
  p = fma(p, f, 0.693147182f);
  p = fma(p, f, 1.0f);
  return lg_exp2_scale(p, n);
}
)"},
    {"lg_exp(", R"(fn lg_exp(x: f32) -> f32 {
  let c = select(select(x, 89.0f, x > 89.0f), -104.0f, x < -104.0f);
  let n = round(c * 1.44269504f);
  var f = fma(n, -0.693359375f, c);
  f = fma(n, 0.00021219444f, f);
  var p = 0.00139411085f;
  p = fma(p, f, 0.00837512594f);
  p = fma(p, f, 0.0416663513f);
  p = fma(p, f, 0.166664153f);
  p = fma(p, f, 0.5f);
  p = fma(p, f, 1.0f);
  p = fma(p, f, 1.0f);
  return lg_exp2_scale(p, n);
}
)"},
    {"lg_exp2_scale(", R"(fn lg_exp2_scale(p: f32, n: f32) -> f32 {
  let e = u32(i32(select(n, 0.0f, lg_isnan(n))) + 254i);
  let e1 = e >> 1u;
  return select(p * bitcast<f32>(e1 << 23u) * bitcast<f32>((e - e1) << 23u), n, lg_isnan(n));
}
)"},
    // sin and cos as Cephes' sinf and cosf: the argument reduced by pi/4 in three parts, then a
    // polynomial on [-pi/4, pi/4] (about an ulp up to |x| of a few thousand). WGSL promises its own
    // sin only to 2^-11 absolute on [-pi, pi] (SwiftShader's was 5e-5 off).
    {"lg_sincos(", R"(fn lg_sincos(v: f32, cosine: bool) -> f32 {
  let a = abs(v);
  var j = u32(min(a, 1.0e8f) * 1.27323954f);
  j = j + (j & 1u);
  let y = f32(j);
  j = j & 7u;
  let flip = j > 3u;
  j = select(j, j - 4u, flip);
  let negative = select((v < 0.0f), (j > 1u), cosine) != flip;
  let x = ((a - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
  let z = x * x;
  let s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * x + x;
  let c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
  let odd = (j == 1u) | (j == 2u);
  let r = select(select(s, c, odd), select(c, s, odd), cosine);
  let big = select(sin(v), cos(v), cosine);
  return select(select(select(r, -r, negative), big, a > 1.0e8f), lg_f32(0x7fc00000u), lg_isnan(v) | lg_isinf(v));
}
)"},
    {"lg_sin(", "fn lg_sin(x: f32) -> f32 { return lg_sincos(x, false); }\n"},
    {"lg_cos(", "fn lg_cos(x: f32) -> f32 { return lg_sincos(x, true); }\n"},
    // float16 and bfloat16: stored as 16 bits, computed in f32, rounded to nearest even (c_style.cpp's
    // lg_h2f and friends, on u32). A half subnormal is m * 2^-24, exact in f32.
    {"lg_h2f(", R"(fn lg_h2f(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  let normal = s | ((e + 112u) << 23u) | (m << 13u);
  let special = s | 0x7f800000u | (m << 13u);
  let small = bitcast<u32>(f32(m) * 5.9604644775390625e-8f) | s;
  return bitcast<f32>(select(select(normal, special, e == 31u), small, e == 0u));
}
)"},
    {"lg_f2h(", R"(fn lg_f2h(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  let s = (u >> 16u) & 0x8000u;
  let a = u & 0x7fffffffu;
  let special = s | 0x7c00u | select(0u, 0x200u, a > 0x7f800000u);
  let e = a >> 23u;
  let m = (a & 0x7fffffu) | 0x800000u;
  let sh = clamp(126i - i32(e), 1i, 31i);
  var r = m >> u32(sh);
  let rem = m & ((1u << u32(sh)) - 1u);
  let mid = 1u << u32(sh - 1i);
  r = r + select(0u, 1u, (rem > mid) | ((rem == mid) & ((r & 1u) != 0u)));
  let normal = s | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
  let finite = select(select(normal, s | r, a < 0x38800000u), s, a < 0x33000000u);
  return select(select(finite, s | 0x7c00u, a >= 0x477ff000u), special, a >= 0x7f800000u);
}
)"},
    {"lg_bf2f(", "fn lg_bf2f(h: u32) -> f32 { return bitcast<f32>(h << 16u); }\n"},
    {"lg_f2bf(", R"(fn lg_f2bf(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  return select((u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u, (u >> 16u) | 0x40u, (u & 0x7fffffffu) > 0x7f800000u);
}
)"},
    // An index that must lie in [lo, hi) (or equal the exempt value e): its error bit otherwise.
    {"lg_check_index(",
     R"(fn lg_check_index(i: i32, lo: i32, hi: i32, bit: i32, err: ptr<function, i32>) -> i32 {
  *err = *err | select(0i, bit, (i < lo) | (i >= hi));
  return i;
}
)"},
    {"lg_check_index_or(",
     R"(fn lg_check_index_or(i: i32, lo: i32, hi: i32, e: i32, bit: i32, err: ptr<function, i32>) -> i32 {
  *err = *err | select(0i, bit, ((i < lo) | (i >= hi)) & (i != e));
  return i;
}
)"},
};

}  // namespace

std::string helper_definitions(const std::string& code) {
  // Helpers call helpers: grow the set until it is closed. WGSL's module-scope declarations may
  // come in any order, so the table's order is kept.
  std::vector<bool> used(std::size(kHelpers), false);
  std::string seen = code;
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < std::size(kHelpers); i++)
      if (!used[i] && seen.find(kHelpers[i].name) != std::string::npos) {
        used[i] = true;
        seen += kHelpers[i].code;
        grew = true;
      }
  }
  std::string out;
  for (size_t i = 0; i < std::size(kHelpers); i++)
    if (used[i]) out += kHelpers[i].code;
  return out;
}

std::string int_division_helpers(const std::string& t) {
  const std::string sig = "(a: " + t + ", b: " + t + ", err: ptr<function, i32>) -> " + t + " {\n";
  if (t == "u32")
    return "fn lg_idiv_u32" + sig +
           "  *err = *err | select(0i, 1i, b == 0u);\n  return select(a / select(b, 1u, b == 0u), 0u, b == "
           "0u);\n}\n" +
           "fn lg_mod_u32" + sig +
           "  *err = *err | select(0i, 2i, b == 0u);\n  return select(a % select(b, 1u, b == 0u), 0u, b == "
           "0u);\n}\n";
  // Rounding toward -inf, as Python's // and %; b == -1 is a negation that wraps (MIN // -1 is MIN).
  // The divisor is made 1 where it is 0 or -1, so the division itself never traps or overflows.
  return "fn lg_idiv_i32" + sig +
         "  *err = *err | select(0i, 1i, b == 0i);\n"
         "  let d = select(b, 1i, (b == 0i) | (b == -1i));\n"
         "  let q = a / d;\n"
         "  let floor = q - select(0i, 1i, (a % d != 0i) & ((a < 0i) != (d < 0i)));\n"
         "  return select(select(floor, bitcast<i32>(0u - bitcast<u32>(a)), b == -1i), 0i, b == 0i);\n}\n"
         "fn lg_mod_i32" +
         sig +
         "  *err = *err | select(0i, 2i, b == 0i);\n"
         "  let d = select(b, 1i, (b == 0i) | (b == -1i));\n"
         "  let r = a % d;\n"
         "  return select(select(r, r + d, (r != 0i) & ((r < 0i) != (d < 0i))), 0i, (b == 0i) | (b == "
         "-1i));\n}\n";
}

}  // namespace lazygrad::wgsl
