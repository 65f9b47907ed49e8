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
    // sin and cos: the argument reduced exactly to x in [-pi/4, pi/4] and its quadrant (below), then
    // Cephes' sinf and cosf polynomials on x: within 1.6 ulp of the correctly rounded value over the
    // whole float32 range (about an ulp on average). WGSL promises its own sin only to 2^-11 absolute
    // on [-pi, pi] (SwiftShader's was 5e-5 off), and a reduction by pi/4 in three f32 parts, Cephes',
    // loses digits near the multiples of pi/2 past a few thousand and all of them past 2^24.
    {"lg_sincos(", R"(fn lg_sincos(v: f32, cosine: bool) -> f32 {
  let a = abs(v);
  let reduced = lg_reduce_pio2(a);
  let small = a <= 0.785398163f;
  let x = select(reduced.x, a, small);
  var j = select(u32(reduced.y) * 2u, 0u, small);
  let flip = j > 3u;
  j = select(j, j - 4u, flip);
  let negative = select((v < 0.0f), (j > 1u), cosine) != flip;
  let z = x * x;
  let s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * x + x;
  let c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
  let odd = j == 2u;
  let r = select(select(s, c, odd), select(c, s, odd), cosine);
  return select(select(r, -r, negative), lg_f32(0x7fc00000u), lg_isnan(v) | lg_isinf(v));
}
)"},
    // a = |v| > pi/4 as q * pi/2 + x, x in [-pi/4, pi/4]: (x, q mod 4). Payne and Hanek's reduction,
    // exact for every float32: a is m * 2^e (m of 24 bits), and a * 2/pi mod 4 needs only the bits
    // of 2/pi from 2^(1 - e) on (the earlier ones make multiples of 4): 96 of them from the table
    // (a zero word first, for e down to -30), times m, give a * 2/pi mod 4 as a 64-bit fixed-point
    // number with 62 fraction bits. No float32 lies closer to a multiple of pi/2 than 2^-30 quadrants
    // (16367173 * 2^72, by trying every float32), so a remainder keeps 32 significant bits and more,
    // and the ulp or so of a sin or cos is the polynomials'. Rounded to the nearest quadrant,
    // the remainder is normalized and multiplied by pi/2 (as 0xc90fdaa2 / 2^31) in integers, and
    // rounded once to f32. All in 32-bit words, without branches; below pi/4 (e < -24) it is
    // garbage the caller does not use.
    {"lg_reduce_pio2(", R"(fn lg_reduce_pio2(a: f32) -> vec2<f32> {
  var two_over_pi = array<u32, 8>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu);
  let b = bitcast<u32>(a);
  let first = u32(max(i32(b >> 23u) - 120i, 0i));
  let i = min(first >> 5u, 4u);
  let o = first & 31u;
  let w2 = (two_over_pi[i] << o) | ((two_over_pi[i + 1u] >> 1u) >> (31u - o));
  let w1 = (two_over_pi[i + 1u] << o) | ((two_over_pi[i + 2u] >> 1u) >> (31u - o));
  let w0 = (two_over_pi[i + 2u] << o) | ((two_over_pi[i + 3u] >> 1u) >> (31u - o));
  let m = (b & 0x7fffffu) | 0x800000u;
  let p0 = lg_mul32x32(m, w0);
  let p1 = lg_mul32x32(m, w1);
  let f0 = p0.y + p1.x;
  let f1 = p1.y + m * w2 + select(0u, 1u, f0 < p0.y);
  let q = (f1 + 0x20000000u) >> 30u;
  let rest = vec2<u32>(f0, f1 - (q << 30u));
  let negative = (rest.y >> 31u) != 0u;
  let mag = select(rest, lg_neg64(rest), negative);
  let n = select(countLeadingZeros(mag.y), 32u + countLeadingZeros(mag.x), mag.y == 0u);
  let t1 = select((mag.y << n) | ((mag.x >> 1u) >> (31u - n)), mag.x << (n - 32u), n >= 32u);
  let t0 = select(mag.x << n, 0u, n >= 32u);
  let hi = lg_mul32x32(t1, 0xc90fdaa2u);
  let lo = lg_mul32x32(t0, 0xc90fdaa2u);
  let low = hi.x + lo.y;
  let x = ldexp(lg_u64_to_f32(vec2<u32>(low, hi.y + select(0u, 1u, low < hi.x))), -61i - i32(n));
  return vec2<f32>(select(x, -x, negative), f32(q & 3u));
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
    // ---- 64-bit integers (int64, uint64): a vec2<u32> (low word, high word), the little-endian
    // layout of the host's int64, so buffers need no conversion at copy-in and copy-out. Two's
    // complement: add, subtract, multiply and the bitwise ops are the same for both; comparisons,
    // max, right shifts, division and conversions come in a signed and an unsigned form.
    {"lg_wide_i32(",
     "fn lg_wide_i32(x: i32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(x), bitcast<u32>(x >> 31u)); }\n"},
    {"lg_add64(", R"(fn lg_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
)"},
    {"lg_sub64(", R"(fn lg_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
)"},
    {"lg_neg64(", "fn lg_neg64(a: vec2<u32>) -> vec2<u32> { return lg_sub64(vec2<u32>(0u), a); }\n"},
    // The 64-bit product of two u32 from 16-bit partial products (WGSL has no widening multiply):
    // the middle column's sum stays below 2^18, and the high word is exact.
    {"lg_mul32x32(", R"(fn lg_mul32x32(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
)"},
    // The low 64 bits of a * b: the cross products only reach the high word, where they wrap.
    {"lg_mul64(", R"(fn lg_mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let p = lg_mul32x32(a.x, b.x);
  return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}
)"},
    {"lg_lt_u64(", R"(fn lg_lt_u64(a: vec2<u32>, b: vec2<u32>) -> bool {
  return (a.y < b.y) | ((a.y == b.y) & (a.x < b.x));
}
)"},
    {"lg_lt_i64(", R"(fn lg_lt_i64(a: vec2<u32>, b: vec2<u32>) -> bool {
  return (bitcast<i32>(a.y) < bitcast<i32>(b.y)) | ((a.y == b.y) & (a.x < b.x));
}
)"},
    {"lg_max_u64(",
     "fn lg_max_u64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(b, a, lg_lt_u64(b, a)); }\n"},
    {"lg_max_i64(",
     "fn lg_max_i64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(b, a, lg_lt_i64(b, a)); }\n"},
    // PyTorch's shifts (src/ir/ops.h): a count outside [0, 64) shifts every bit out; a negative
    // int64 count has a high word, as every count past 2^32 does. Within, the words shift by
    // m = count % 32 and the bits crossing between them by 32 - m, done as two shifts (by 1, then
    // by 31 - m) so that no shift count reaches 32: WGSL takes a count modulo the width.
    {"lg_shl64(", R"(fn lg_shl64(a: vec2<u32>, c: vec2<u32>) -> vec2<u32> {
  let m = c.x & 31u;
  let carry = (a.x >> 1u) >> (31u - m);
  let r = select(vec2<u32>(a.x << m, (a.y << m) | carry), vec2<u32>(0u, a.x << m), (c.x & 32u) != 0u);
  return select(r, vec2<u32>(0u), (c.y != 0u) | (c.x >= 64u));
}
)"},
    {"lg_shr_u64(", R"(fn lg_shr_u64(a: vec2<u32>, c: vec2<u32>) -> vec2<u32> {
  let m = c.x & 31u;
  let carry = (a.y << 1u) << (31u - m);
  let r = select(vec2<u32>((a.x >> m) | carry, a.y >> m), vec2<u32>(a.y >> m, 0u), (c.x & 32u) != 0u);
  return select(r, vec2<u32>(0u), (c.y != 0u) | (c.x >= 64u));
}
)"},
    {"lg_shr_i64(", R"(fn lg_shr_i64(a: vec2<u32>, c: vec2<u32>) -> vec2<u32> {
  let m = c.x & 31u;
  let sign = bitcast<u32>(bitcast<i32>(a.y) >> 31u);
  let hi = bitcast<u32>(bitcast<i32>(a.y) >> m);
  let carry = (a.y << 1u) << (31u - m);
  let r = select(vec2<u32>((a.x >> m) | carry, hi), vec2<u32>(hi, sign), (c.x & 32u) != 0u);
  return select(r, vec2<u32>(sign), (c.y != 0u) | (c.x >= 64u));
}
)"},
    // Unsigned a / b and a % b, one quotient bit a step (64 steps of shift and subtract, without
    // branches), as (quotient, remainder). The remainder's bit shifted out at the top (b >= 2^63)
    // means it is past b. b == 0 gives garbage: the callers select 0 there and set the error bit.
    {"lg_udivmod64(", R"(fn lg_udivmod64(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
  var q = vec2<u32>(0u);
  var r = vec2<u32>(0u);
  for (var i = 63i; i >= 0i; i = i - 1i) {
    let bit = (select(a.x, a.y, i >= 32i) >> u32(i & 31i)) & 1u;
    let over = (r.y >> 31u) != 0u;
    r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
    let take = over | !lg_lt_u64(r, b);
    r = select(r, lg_sub64(r, b), take);
    q = vec2<u32>((q.x << 1u) | select(0u, 1u, take), (q.y << 1u) | (q.x >> 31u));
  }
  return vec4<u32>(q, r);
}
)"},
    // Floor division and modulo with the zero divisor's error bits (1 and 2), as the C base's
    // lg_idiv_int64_t and lg_mod_int64_t: the magnitudes divided unsigned, then the signs, and one
    // step toward -inf where a remainder is left and the signs differ. b == -1 needs no case of its
    // own: |MIN| is 2^63 unsigned, and negated it wraps back to MIN, as MIN // -1 does on the CPU.
    {"lg_idiv_u64(", R"(fn lg_idiv_u64(a: vec2<u32>, b: vec2<u32>, err: ptr<function, i32>) -> vec2<u32> {
  let zero = (b.x | b.y) == 0u;
  *err = *err | select(0i, 1i, zero);
  return select(lg_udivmod64(a, b).xy, vec2<u32>(0u), zero);
}
)"},
    {"lg_mod_u64(", R"(fn lg_mod_u64(a: vec2<u32>, b: vec2<u32>, err: ptr<function, i32>) -> vec2<u32> {
  let zero = (b.x | b.y) == 0u;
  *err = *err | select(0i, 2i, zero);
  return select(lg_udivmod64(a, b).zw, vec2<u32>(0u), zero);
}
)"},
    {"lg_idiv_i64(", R"(fn lg_idiv_i64(a: vec2<u32>, b: vec2<u32>, err: ptr<function, i32>) -> vec2<u32> {
  let zero = (b.x | b.y) == 0u;
  *err = *err | select(0i, 1i, zero);
  let an = (a.y >> 31u) != 0u;
  let bn = (b.y >> 31u) != 0u;
  let qr = lg_udivmod64(select(a, lg_neg64(a), an), select(b, lg_neg64(b), bn));
  let q = select(qr.xy, lg_neg64(qr.xy), an != bn);
  let down = (an != bn) & ((qr.z | qr.w) != 0u);
  return select(select(q, lg_sub64(q, vec2<u32>(1u, 0u)), down), vec2<u32>(0u), zero);
}
)"},
    {"lg_mod_i64(", R"(fn lg_mod_i64(a: vec2<u32>, b: vec2<u32>, err: ptr<function, i32>) -> vec2<u32> {
  let zero = (b.x | b.y) == 0u;
  *err = *err | select(0i, 2i, zero);
  let an = (a.y >> 31u) != 0u;
  let bn = (b.y >> 31u) != 0u;
  let qr = lg_udivmod64(select(a, lg_neg64(a), an), select(b, lg_neg64(b), bn));
  let r = select(qr.zw, lg_neg64(qr.zw), an);
  let up = (an != bn) & ((qr.z | qr.w) != 0u);
  return select(select(r, lg_add64(r, b), up), vec2<u32>(0u), zero);
}
)"},
    // A float's magnitude truncated to 64 bits, for 0 <= a < 2^64: the high word is the quotient by
    // 2^32 (exact: a power of two), and what is left is below 2^32 and exact in f32 (a's ulp is at
    // least 2^9 where a >= 2^32), so u32() truncates it as C does.
    {"lg_f32_mag64(", R"(fn lg_f32_mag64(a: f32) -> vec2<u32> {
  let hi = floor(a * 2.3283064365386963e-10f);
  return vec2<u32>(u32(a - hi * 4294967296.0f), u32(hi));
}
)"},
    // Floats to integers as the CPU's kernels convert them on x86-64 (cvttss2si, truncation): NaN
    // and values outside the type give its minimum (INT32_MIN, INT64_MIN), where WGSL's i32()
    // saturates. To uint64 (c_style.cpp's cast): a negative value through int64, so it wraps; NaN
    // and values past 2^64 give all ones, as AVX-512's conversion (vcvttss2usi) does.
    {"lg_f32_to_i32(", R"(fn lg_f32_to_i32(x: f32) -> i32 {
  return select(-2147483647i - 1i, i32(x), (abs(x) < 2147483648.0f) & !lg_isnan(x));
}
)"},
    {"lg_f32_to_i64(", R"(fn lg_f32_to_i64(x: f32) -> vec2<u32> {
  let m = lg_f32_mag64(abs(x));
  let v = select(m, lg_neg64(m), x < 0.0f);
  return select(vec2<u32>(0u, 0x80000000u), v, (abs(x) < 9223372036854775808.0f) & !lg_isnan(x));
}
)"},
    {"lg_f32_to_u64(", R"(fn lg_f32_to_u64(x: f32) -> vec2<u32> {
  let big = !(x < 18446744073709551616.0f) | lg_isnan(x);
  return select(select(lg_f32_mag64(x), lg_f32_to_i64(x), x < 0.0f), vec2<u32>(0xffffffffu), big);
}
)"},
    // A 64-bit integer as the nearest f32 (ties to even), as C converts. With no high word, the
    // 16-bit halves, each exact as a float, make the one rounding; else the 32 bits from the highest
    // set one are rounded to 24 by hand, the bits below them a sticky bit, and scaled by ldexp.
    {"lg_u64_to_f32(", R"(fn lg_u64_to_f32(v: vec2<u32>) -> f32 {
  let small = fma(f32(v.x >> 16u), 65536.0f, f32(v.x & 0xffffu));
  let n = countLeadingZeros(v.y) & 31u;
  let top = (v.y << n) | ((v.x >> 1u) >> (31u - n));
  let sticky = (v.x << n) != 0u;
  let m = top >> 8u;
  let rest = top & 0xffu;
  let up = (rest > 0x80u) | ((rest == 0x80u) & (sticky | ((m & 1u) != 0u)));
  return select(small, ldexp(f32(m + select(0u, 1u, up)), i32(40u - n)), v.y != 0u);
}
)"},
    {"lg_i64_to_f32(", R"(fn lg_i64_to_f32(v: vec2<u32>) -> f32 {
  let negative = (v.y >> 31u) != 0u;
  let f = lg_u64_to_f32(select(v, lg_neg64(v), negative));
  return select(f, -f, negative);
}
)"},
    // CHECK_INDEX of a 64-bit index: its error bit where it lies outside [lo, hi) (and is not e).
    {"lg_check_index64(",
     R"(fn lg_check_index64(i: vec2<u32>, lo: vec2<u32>, hi: vec2<u32>, bit: i32, err: ptr<function, i32>) -> vec2<u32> {
  *err = *err | select(0i, bit, lg_lt_i64(i, lo) | !lg_lt_i64(i, hi));
  return i;
}
)"},
    {"lg_check_index64_or(",
     R"(fn lg_check_index64_or(i: vec2<u32>, lo: vec2<u32>, hi: vec2<u32>, e: vec2<u32>, bit: i32, err: ptr<function, i32>) -> vec2<u32> {
  *err = *err | select(0i, bit, (lg_lt_i64(i, lo) | !lg_lt_i64(i, hi)) & any(i != e));
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
