// WGSL, WebGPU's shading language: a renderer of its own beside the C-style base, since WGSL is not
// a C dialect. Buffers are `array<T>` storage bindings, not pointers; the only scalar types are i32,
// u32, f32, f16 (an optional feature) and bool; constants may not be NaN or infinite; there is no
// goto, no union, no 64-bit integer. What lazygrad does about each (docs/webgpu.md):
// - float16 and bfloat16 are stored as 16 bits and computed in f32, as on every device; they, bool
//   and the 8- and 16-bit integers are packed four or two to a u32 word. A kernel reads its word
//   and extracts its lane; it writes its lane with atomicAnd and atomicOr, so work-items that share
//   a word never undo each other's writes.
// - 64-bit integers: a value the IR's bounds show to fit in 32 bits (the index math, int64 in the
//   IR, of almost every kernel) is an i32; any other int64 or uint64 value (int64 data, sums that
//   PyTorch widens to int64, argmax's indices, the random generator's uint64 arithmetic) is a
//   vec2<u32> of its low and high words, and int64 and uint64 buffers are array<vec2<u32>>, the
//   host's little-endian layout. Branch-free helpers (wgsl_helpers.cpp) do their arithmetic,
//   comparisons, shifts, floor division and conversions as the CPU does them. Buffers of float64 are
//   refused where they are made (Target::float64 is false).
// - NaN, infinity and the edges of the math builtins: helpers (wgsl_helpers.cpp).
// - A kernel binds its buffers, plus an error word when it can raise one: more storage buffers than
//   the device allows per kernel (maxStorageBuffersPerShaderStage) is an Error naming the kernel.
// Scalar code (no vector lanes): one work-item per output element, or with Local and Group opts one
// work-group per output, whose grouped reductions combine through workgroup memory.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numbers>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "renderer/node_names.h"
#include "renderer/renderer.h"
#include "renderer/wgsl_helpers.h"
#include "runtime/buffer.h"

namespace lazygrad {

namespace {

bool wide_int(DType dt) { return dt == kInt64 || dt == kUInt64; }
bool half_float(DType dt) { return dt == kFloat16 || dt == kBFloat16; }
// Stored packed in u32 words: bool as a byte, the 8- and 16-bit types.
bool packed(DType dt) { return itemsize(dt) < 4; }

// The WGSL type a value of dt is computed in. A 64-bit integer is an i32 where its bounds show that
// it fits (index math), else a vec2<u32> (WgslWriter::wide); the narrow integers are held sign- or
// zero-extended. float64 values inside a kernel, which the frontend makes for precision in arange's
// and linspace's positions and fmod's quotient, are computed in f32, as a target without float64
// accumulates its float sums in f32: docs/webgpu.md says what that costs.
std::string ctype(DType dt) {
  if (dt == kBool) return "bool";
  if (is_float(dt)) return "f32";
  if (wide_int(dt)) return "i32";
  return is_unsigned(dt) ? "u32" : "i32";
}

struct Range {
  int64_t lo, hi;
};

// The range [lo, hi] of exact results, or every int64 where one of them does not fit (the values
// wrap): a range is always sound, as two's complement bit patterns (a uint64 past 2^63 is a negative
// pattern), so that only values that truly fit are computed in 32 bits.
Range range64(__int128 lo, __int128 hi) {
  if (lo < INT64_MIN || hi > INT64_MAX) return {INT64_MIN, INT64_MAX};
  return {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

Range dtype_range(DType dt) {
  if (dt == kBool) return {0, 1};
  if (is_float(dt) || wide_int(dt)) return {INT64_MIN, INT64_MAX};
  const int bits = bit_width(dt);
  if (is_unsigned(dt)) return {0, (int64_t(1) << bits) - 1};
  return {-(int64_t(1) << (bits - 1)), (int64_t(1) << (bits - 1)) - 1};
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

class WgslWriter {
 public:
  WgslWriter(const Target& t, const WgslLimits& limits, const Kernel& k, const LinearKernel& lin)
      : t_(t), limits_(limits), k_(k), lin_(lin) {}

  std::string render() {
    if (k_.tensor_core) fail("tensor-core products are not built for WGSL");
    if (lin_.lanes > 1) fail("vector lanes are not built for WGSL");
    if (k_.global_size > INT32_MAX)
      fail(std::to_string(k_.global_size) + " work-items: the global index is an i32 (at most 2^31 - 1)");
    for (size_t i = 0; i < k_.buffers.size(); i++)
      if (k_.buffers[i]->dtype == kFloat64)
        fail(std::string(k_.written[i] ? "STORE to" : "LOAD from") + " a buffer of float64: WGSL has no f64");
    find_truncations();
    std::ostringstream body;
    for (const Inst& in : lin_.insts) body << line(in);
    const std::string code = body.str();
    const bool errors = code.find("&err") != std::string::npos;
    const size_t storage = k_.buffers.size() + (errors ? 1 : 0);
    if (static_cast<int64_t>(storage) > limits_.max_storage_buffers)
      fail("it binds " + std::to_string(storage) + " storage buffers (" + std::to_string(k_.buffers.size()) +
           " tensors" + (errors ? " and its error word" : "") + "), more than the " +
           std::to_string(limits_.max_storage_buffers) +
           " a WebGPU kernel may (maxStorageBuffersPerShaderStage)");
    return head(errors, code) + code + tail(errors);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("render: kernel " + k_.name + ": " + why + " (WGSL, docs/webgpu.md)");
  }

  // A kernel with Local or Group pieces runs one work-group of local_size work-items per global
  // index; others one work-item per index, in groups: work_groups decides both for the engine's
  // launch too (codegen/linearize.h).
  bool grouped() const { return work_groups(k_, t_).per_index; }
  int64_t workgroup_size() const { return work_groups(k_, t_).size; }

  // A scalar argument held as vec2<u32> (a uint64 one, or an int64 one whose bound passes 2^31).
  bool wide_var(size_t i) {
    const DType dt = var_dtype(i);
    return wide_int(dt) && !fits_i32(dt, var_range(i, dt));
  }
  // The word of the arguments' uniform block where argument i starts (a wide one takes two).
  size_t var_word(size_t i) {
    size_t w = 0;
    for (size_t j = 0; j < i; j++) w += wide_var(j) ? 2 : 1;
    return w;
  }
  static std::string arg_word(size_t w) {
    return "lg_args[" + std::to_string(w / 4) + "][" + std::to_string(w % 4) + "]";
  }

  // The first line says how the kernel binds and what its scalar arguments are, for the device
  // (runtime/webgpu/webgpu_device.cpp reads it): one letter per binding (r: read, w: written, e:
  // the error word, a: the arguments' uniform block), one per argument (i: i32, u: u32, f: f32,
  // w: 64 bits as two words, low first).
  std::string head(bool errors, const std::string& code) {
    std::string bindings, vars;
    for (size_t i = 0; i < k_.buffers.size(); i++) bindings += k_.written[i] ? "w" : "r";
    if (errors) bindings += "e";
    const size_t launch_word = var_word(k_.vars.size());  // the launch's number after the variables
    const size_t args = launch_word + (errors ? 1 : 0);
    if (args > 0) bindings += "a";
    for (size_t i = 0; i < k_.vars.size(); i++)
      vars += wide_var(i) ? "w" : is_float(var_dtype(i)) ? "f" : var_dtype(i) == kUInt32 ? "u" : "i";
    std::ostringstream os;
    os << "// lazygrad-wgsl bindings=" << bindings << " vars=" << (vars.empty() ? "-" : vars)
       << " workgroup=" << workgroup_size() << "\n";
    int binding = 0;
    for (size_t i = 0; i < k_.buffers.size(); i++) {
      const DType dt = k_.buffers[i]->dtype;
      std::string elem = packed(dt)     ? (k_.written[i] ? "atomic<u32>" : "u32")
                         : wide_int(dt) ? "vec2<u32>"
                                        : ctype(dt);
      os << "@group(0) @binding(" << binding++ << ") var<storage, " << (k_.written[i] ? "read_write" : "read")
         << "> data" << i << ": array<" << elem << ">;\n";
    }
    if (errors)
      os << "@group(0) @binding(" << binding++
         << ") var<storage, read_write> lg_err: array<atomic<i32>, 2>;\n";
    if (args > 0)
      os << "@group(0) @binding(" << binding++ << ") var<uniform> lg_args: array<vec4<u32>, "
         << (args + 3) / 4 << ">;\n";
    // A grouped reduction's partial results, one per work-item of the group.
    for (const Inst& in : lin_.insts)
      if (in.step == Step::AccGroup)
        os << "var<workgroup> " << part_name(in.u) << ": array<" << acc_type(in.u) << ", " << k_.local_size
           << ">;\n";
    os << wgsl::helper_definitions(code + extra_helpers_) << extra_helpers_;
    os << "\n@compute @workgroup_size(" << workgroup_size() << ")\nfn " << k_.name
       << "(@builtin(workgroup_id) lg_wid: vec3<u32>, @builtin(num_workgroups) lg_nwg: vec3<u32>, "
          "@builtin(local_invocation_index) lg_lid: u32) {\n";
    if (errors) os << "  var err: i32 = 0i;\n";
    for (size_t i = 0; i < k_.vars.size(); i++) {
      const std::string word = arg_word(var_word(i));
      const DType dt = var_dtype(i);
      if (wide_var(i)) {
        os << "  let var" << i << ": vec2<u32> = vec2<u32>(" << word << ", " << arg_word(var_word(i) + 1)
           << ");\n";
        continue;
      }
      os << "  let var" << i << ": " << ctype(dt) << " = "
         << (is_float(dt)    ? "bitcast<f32>(" + word + ")"
             : dt == kUInt32 ? word
             : dt == kBool   ? "bitcast<i32>(" + word + ") != 0i"
                             : "bitcast<i32>(" + word + ")")
         << ";\n";
    }
    for (const auto& l : lin_.locals)
      os << "  var " << name(l) << ": array<" << (wide_int(l->dtype) ? "vec2<u32>" : ctype(l->dtype)) << ", "
         << l->src[0]->const_int() << ">;\n";
    // The dispatch is up to 65535 groups along x, then rows of them along y (webgpu_device.cpp).
    if (!grouped()) {
      os << "  let g: i32 = i32((lg_wid.x + lg_wid.y * lg_nwg.x) * " << workgroup_size() << "u + lg_lid);\n"
         << "  if (g < " << k_.global_size << "i) {\n";
      return os.str();
    }
    // One group per global index: its index is the group's, uniform across it (workgroupBarrier()
    // may be reached only in uniform control flow, and the bound check only skips the last row's
    // extra groups whole); the local index cut into the pieces, the Group piece fastest.
    os << "  let g: i32 = i32(lg_wid.x + lg_wid.y * lg_nwg.x);\n  let lid: i32 = i32(lg_lid);\n";
    int64_t stride = k_.local_size;
    for (const auto& r : lin_.thread_ranges) {
      const int64_t n = r->src[0]->const_int();
      stride /= n;
      os << "  let " << name(r) << ": i32 = lid" << (stride > 1 ? " / " + std::to_string(stride) + "i" : "")
         << (stride * n < k_.local_size ? " % " + std::to_string(n) + "i" : "") << ";\n";
    }
    os << "  if (g < " << k_.global_size << "i) {\n";
    return os.str();
  }

  std::string tail(bool errors) {
    std::string out = "  }\n";
    if (errors) {
      // The first failing launch's error word and its number (the argument after the variables).
      out +=
          "  if (err != 0i) {\n    loop {\n      let r = atomicCompareExchangeWeak(&lg_err[0], 0i, err);\n"
          "      if (r.exchanged) { atomicStore(&lg_err[1], bitcast<i32>(" +
          arg_word(var_word(k_.vars.size())) +
          ")); break; }\n      if (r.old_value != 0i) { break; }\n    }\n  }\n";
    }
    return out + "}\n";
  }

  // A float cast to a 64-bit integer whose every user casts it back to a float is trunc (the
  // frontend's trunc, floor, ceil, remainder and pow go through int64 so, and take x itself where
  // |x| is too large for that): such a cast is computed in f32, as trunc(x), and needs no 64-bit
  // integer at all.
  void find_truncations() {
    std::unordered_map<const UOp*, std::vector<const UOp*>> users;
    for (const Inst& in : lin_.insts)
      for (const UOpPtr& src : in.u->src) users[src.get()].push_back(in.u.get());
    for (const Inst& in : lin_.insts) {
      const UOp& u = *in.u;
      if (in.step != Step::Compute || u.op != Ops::CAST || !wide_int(u.dtype) || !is_float(u.src[0]->dtype))
        continue;
      const auto& us = users[&u];
      if (!us.empty() && std::all_of(us.begin(), us.end(),
                                     [](const UOp* x) { return x->op == Ops::CAST && is_float(x->dtype); }))
        truncations_.insert(&u);
    }
  }
  bool truncation(const UOpPtr& u) const { return truncations_.count(u.get()) != 0; }
  // The WGSL type node u is held in.
  std::string type_of(const UOpPtr& u) {
    return truncation(u) ? "f32" : wide(u) ? "vec2<u32>" : ctype(u->dtype);
  }

  // ---- names, literals, types ------------------------------------------------------------------

  std::string name(const UOpPtr& u) {
    return u->op == Ops::CONST ? literal(u) : names_(u);  // WGSL has no vector lanes: no "lane"
  }

  static std::string f32_literal(double v) {
    const float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    // NaN, infinities and subnormals from their bits at run time: WGSL rejects the first two as
    // constants, and a compiler may flush the last.
    // So are the largest floats, whose 9 digits (3.40282347e+38) lie past FLT_MAX, which WGSL
    // rejects as not representable.
    if (std::isnan(f) || std::isinf(f) || (f != 0 && std::fabs(f) < 1.17549435e-38f) ||
        std::fabs(f) > 1e38f) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "lg_f32(0x%08xu)", bits);
      return buf;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", f);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s + "f";
  }

  std::string int_literal(DType dt, int64_t v) {
    if (ctype(dt) == "u32") return std::to_string(static_cast<uint32_t>(v)) + "u";
    if (v < INT32_MIN || v > INT32_MAX)
      fail("the constant " + std::to_string(v) + " (" + std::string(dtype_name(dt)) +
           ") does not fit in 32 bits, and WGSL has no 64-bit integers");
    if (v == INT32_MIN) return "(-2147483647i - 1i)";
    return std::to_string(v) + "i";
  }

  std::string literal(const UOpPtr& c) {
    if (is_float(c->dtype)) return f32_literal(c->const_double());
    if (c->dtype == kBool) return c->const_int() ? "true" : "false";
    if (wide(c)) return wide_literal(c->const_int());
    return int_literal(c->dtype, c->const_int());
  }

  std::string zero(DType dt) { return dt == kBool ? "false" : is_float(dt) ? "0.0f" : int_literal(dt, 0); }

  // A value computed in i32 or u32 brought back into a narrow dtype's range: it wraps, as C's
  // assignment to an int8_t does.
  static std::string wrap(DType dt, const std::string& e) {
    if (dt == kInt8 || dt == kInt16) {
      const std::string sh = dt == kInt8 ? "24u" : "16u";
      return "((" + e + ") << " + sh + ") >> " + sh;
    }
    if (dt == kUInt8) return "((" + e + ") & 0xffu)";
    if (dt == kUInt16) return "((" + e + ") & 0xffffu)";
    return e;
  }

  // ---- 64-bit integers: i32 where they fit, else vec2<u32> ---------------------------------------

  // Bounds of an integer node, from its sources' (the linear order computes sources first, so the
  // recursion is shallow), as int64 bit patterns (range64). A DEFINE_VAR is what its bound says; an
  // int64 one without a bound any i32 (the device checks the value at launch), a uint64 one (the
  // random generator's counter and key) any 64 bits.
  Range range(const UOpPtr& u) {
    if (auto it = ranges_.find(u.get()); it != ranges_.end()) return it->second;
    Range r = dtype_range(u->dtype);
    auto s = [&](size_t i) { return range(u->src[i]); };
    const bool w = wide_int(u->dtype);
    // A constant count of a 64-bit shift, when it shifts within the width.
    auto count = [&]() -> std::optional<int64_t> {
      const UOpPtr& c = u->src[1];
      if (!c->is_const() || c->const_int() < 0 || c->const_int() > 63) return std::nullopt;
      return c->const_int();
    };
    switch (u->op) {
      case Ops::CONST:
        if (!is_float(u->dtype)) r = {u->const_int(), u->const_int()};
        break;
      case Ops::RANGE:
        r = {0, u->src[0]->const_int() - 1};
        break;
      case Ops::DEFINE_VAR:
        r = var_range(static_cast<size_t>(u->as<int64_t>()), u->dtype);
        break;
      case Ops::ADD:
        if (w) r = range64(__int128(s(0).lo) + s(1).lo, __int128(s(0).hi) + s(1).hi);
        break;
      case Ops::MUL:
        if (w) {
          const Range a = s(0), b = s(1);
          const __int128 v[] = {__int128(a.lo) * b.lo, __int128(a.lo) * b.hi, __int128(a.hi) * b.lo,
                                __int128(a.hi) * b.hi};
          r = range64(*std::min_element(v, v + 4), *std::max_element(v, v + 4));
        }
        break;
      case Ops::IDIV:  // by a positive constant; a uint64 only where its pattern is its value
        if (w && u->src[1]->is_const() && u->src[1]->const_int() > 0 && (u->dtype == kInt64 || s(0).lo >= 0))
          r = {floor_div(s(0).lo, u->src[1]->const_int()), floor_div(s(0).hi, u->src[1]->const_int())};
        break;
      case Ops::MOD:
        if (w && u->src[1]->is_const() && u->src[1]->const_int() > 0) {
          const int64_t c = u->src[1]->const_int();
          r = s(0).lo >= 0 && s(0).hi < c ? s(0) : Range{0, c - 1};
        }
        break;
      case Ops::MAX:  // unsigned order is the patterns' order only where none is negative
        if (w && (u->dtype == kInt64 || (s(0).lo >= 0 && s(1).lo >= 0)))
          r = {std::max(s(0).lo, s(1).lo), std::max(s(0).hi, s(1).hi)};
        break;
      case Ops::AND:  // within [0, x] for a non-negative x
        if (w && (s(0).lo >= 0 || s(1).lo >= 0))
          r = {0, s(0).lo >= 0 && s(1).lo >= 0 ? std::min(s(0).hi, s(1).hi)
                  : s(0).lo >= 0               ? s(0).hi
                                               : s(1).hi};
        break;
      case Ops::SHL:
        if (w && count()) r = range64(__int128(s(0).lo) << *count(), __int128(s(0).hi) << *count());
        break;
      case Ops::SHR:
        if (!w) break;
        if (u->dtype == kInt64 || s(0).lo >= 0) {
          // Monotonic in the value; any count (PyTorch's shifted-out counts included) lands between
          // the value and its sign.
          r = count() ? Range{s(0).lo >> *count(), s(0).hi >> *count()}
                      : Range{std::min<int64_t>(s(0).lo, 0), std::max<int64_t>(s(0).hi, 0)};
        } else if (count() && *count() > 0) {  // a uint64 of any 64 bits
          r = {0, static_cast<int64_t>(~uint64_t{0} >> *count())};
        }
        break;
      case Ops::WHERE:
        if (w) r = {std::min(s(1).lo, s(2).lo), std::max(s(1).hi, s(2).hi)};
        break;
      case Ops::CAST:
        // To 64 bits from an integer, the same pattern (sign-extended, as C converts).
        if (w && !is_float(u->src[0]->dtype)) r = s(0);
        break;
      case Ops::CHECK_INDEX: {
        // What passes the check; a value that fails it sets the kernel's error bit, and realize
        // raises instead of returning the kernel's results.
        const IndexCheck c = IndexCheck::from(u->as<std::vector<int64_t>>());
        int64_t lo = std::min(c.lo, c.hi - 1), hi = std::max(c.lo, c.hi - 1);
        if (c.exempt) lo = std::min(lo, *c.exempt), hi = std::max(hi, *c.exempt);
        r = {lo, hi};
        break;
      }
      default:
        break;
    }
    ranges_[u.get()] = r;
    return r;
  }

  // A Variable's values: its narrow bounds where the kernel has them, else every value of its dtype
  // (an int64 Variable may hold 5e9: two words).
  Range var_range(size_t i, DType dt) const {
    Range r = dtype_range(dt);
    for (const VarBound& b : k_.var_bounds)
      if (b.var == i) r = {b.lo, b.hi};
    return r;
  }

  static bool fits_i32(DType dt, Range r) {
    return r.lo >= (dt == kUInt64 ? 0 : INT32_MIN) && r.hi <= INT32_MAX;
  }

  // A 64-bit integer node held as vec2<u32>: one whose values may not fit in an i32 (a uint64 one
  // in the i32 holds only values below 2^31, so that i32 comparisons and division order it right).
  bool wide(const UOpPtr& u) {
    if (!wide_int(u->dtype) || truncation(u)) return false;
    if (u->op == Ops::REDUCE) return true;  // accumulators: no bound is tracked through their loops
    return !fits_i32(u->dtype, range(u));
  }

  // A value as a vec2<u32>: an i32 sign-extended (a narrow uint64 is non-negative), a u32 or a bool
  // zero-extended.
  std::string as_wide(const UOpPtr& u) {
    if (wide(u)) return name(u);
    const DType dt = u->dtype;
    if (dt == kBool) return "vec2<u32>(select(0u, 1u, " + name(u) + "), 0u)";
    if (ctype(dt) == "u32") return "vec2<u32>(" + name(u) + ", 0u)";
    return "lg_wide_i32(" + name(u) + ")";
  }

  // An integer as an i32 (an index, a loop bound): a vec2's low word, the value wherever it fits (an
  // index read from data always does, or its CHECK_INDEX has set an error bit, which realize raises).
  std::string as_i32(const UOpPtr& u) { return wide(u) ? "bitcast<i32>(" + name(u) + ".x)" : name(u); }

  static std::string wide_literal(int64_t v) {
    const uint64_t bits = static_cast<uint64_t>(v);
    return "vec2<u32>(" + std::to_string(bits & 0xffffffffu) + "u, " + std::to_string(bits >> 32) + "u)";
  }

  // ---- statements ----------------------------------------------------------------------------------

  std::string indent(int depth) const { return std::string(4 + 2 * depth, ' '); }

  DType acc_dtype(const UOpPtr& red) const { return accumulator_dtype(*red, false, t_.float64); }
  bool acc_apart(const UOpPtr& red) const { return acc_dtype(red) != red->dtype; }
  std::string acc_name(const UOpPtr& red) { return name(red) + (acc_apart(red) ? "v" : ""); }
  // A 64-bit integer reduction accumulates in a vec2<u32> (wide), every other in its dtype's type.
  std::string acc_type(const UOpPtr& red) { return wide(red) ? "vec2<u32>" : ctype(acc_dtype(red)); }

  std::string identity(const UOpPtr& red) {
    const DType dt = acc_dtype(red);
    const Ops op = red->as<ReduceArg>().op;
    if (dt == kBool) return op == Ops::MUL ? "true" : "false";
    if (wide(red))
      return wide_literal(op == Ops::ADD ? 0 : op == Ops::MUL ? 1 : dt == kInt64 ? INT64_MIN : 0);
    if (op == Ops::ADD) return zero(dt);
    if (op == Ops::MUL) return is_float(dt) ? "1.0f" : int_literal(dt, 1);
    if (is_float(dt)) return "lg_f32(0xff800000u)";  // -inf
    return int_literal(dt, dtype_range(red->dtype).lo);
  }

  std::string combine(const UOpPtr& red, const std::string& a, const std::string& b) {
    const DType dt = acc_dtype(red);
    const Ops op = red->as<ReduceArg>().op;
    if (dt == kBool) return op == Ops::MUL ? a + " & " + b : a + " | " + b;
    if (wide(red)) {
      const std::string fn = op == Ops::ADD   ? "lg_add64"
                             : op == Ops::MUL ? "lg_mul64"
                             : dt == kInt64   ? "lg_max_i64"
                                              : "lg_max_u64";
      return call(fn, a + ", " + b);
    }
    if (op == Ops::MAX) return is_float(dt) ? "lg_max_f(" + a + ", " + b + ")" : "max(" + a + ", " + b + ")";
    return wrap(red->dtype, a + (op == Ops::ADD ? " + " : " * ") + b);
  }

  std::string line(const Inst& in) {
    const UOpPtr& u = in.u;
    const std::string ind = indent(in.depth);
    switch (in.step) {
      case Step::Open: {
        const std::string r = name(u), n = literal(u->src[0]);
        std::string loop =
            ind + "for (var " + r + ": i32 = 0i; " + r + " < " + n + "; " + r + " = " + r + " + 1i) {\n";
        return u->src.size() > 1 ? loop + ind + "  if (" + r + " < " + as_i32(u->src[1]) + ") {\n" : loop;
      }
      case Step::Close:
        return ind + (u->src.size() > 1 ? "}}\n" : "}\n");
      case Step::AccInit:
        return ind + "var " + acc_name(u) + ": " + acc_type(u) + " = " + identity(u) + ";\n";
      case Step::AccUpdate: {
        std::string v = name(u->src[0]);
        if (wide(u))
          v = as_wide(u->src[0]);
        else if (acc_dtype(u) != u->src[0]->dtype && ctype(acc_dtype(u)) != ctype(u->src[0]->dtype))
          v = ctype(acc_dtype(u)) + "(" + v + ")";
        return ind + acc_name(u) + " = " + combine(u, acc_name(u), v) + ";\n";
      }
      case Step::AccGroup:
        return group_combine(u, ind);
      case Step::AccFinish: {
        if (!acc_apart(u)) return "";
        std::string v = acc_name(u);
        if (ctype(acc_dtype(u)) != ctype(u->dtype)) v = ctype(u->dtype) + "(" + v + ")";
        if (half_float(u->dtype)) v = round_16(u->dtype, v);
        return ind + "let " + name(u) + ": " + ctype(u->dtype) + " = " + v + ";\n";
      }
      case Step::Compute:
        break;
    }
    // After a grouped reduction every work-item of the group holds the same values: one stores.
    if (u->op == Ops::STORE && lin_.group_range)
      return ind + "if (" + name(lin_.group_range) + " == 0i) {\n" + store(u, ind + "  ") + ind + "}\n";
    if (u->op == Ops::STORE) return store(u, ind);
    if (u->op == Ops::LOAD && u->src.size() == 3) {  // gated: nothing is read where it is not valid
      const std::string n = name(u);
      const std::string z = wide(u) ? "vec2<u32>(0u)" : zero(u->dtype);
      const std::string decl = ind + "var " + n + ": " + type_of(u) + " = " + z + ";\n";
      if (never_an_element(u)) return decl;
      return decl + ind + "if (" + name(u->src[2]) + ") { " + n + " = " + load(u) + "; }\n";
    }
    const std::string e = expr(u);
    return ind + "let " + name(u) + ": " + type_of(u) + " = " + e + ";\n";
  }

  // A grouped reduction's partial results combined (c_style.cpp's group_combine, in WGSL): each
  // work-item's accumulator into workgroup memory, a tree over the Group piece (sizes that are not a
  // power of two fold their top part in first), and the group's value read back by every work-item.
  // The last barrier lets the array be written again (a grouped reduction inside a loop).
  std::string part_name(const UOpPtr& red) { return name(red) + "p"; }
  std::string group_combine(const UOpPtr& u, const std::string& ind) {
    const std::string part = part_name(u), acc = acc_name(u), gl = name(lin_.group_range);
    const int64_t n = lin_.group_range->src[0]->const_int();
    int64_t top = 1;
    while (top * 2 < n) top *= 2;
    const std::string mine = part + "[lid]", other = part + "[lid + lg_s]";
    return ind + mine + " = " + acc + ";\n" + ind + "workgroupBarrier();\n" + ind +
           "for (var lg_s: i32 = " + std::to_string(top) + "i; lg_s > 0i; lg_s = lg_s >> 1u) {\n" + ind +
           "  if ((" + gl + " < lg_s) & (" + gl + " + lg_s < " + std::to_string(n) + "i)) { " + mine + " = " +
           combine(u, mine, other) + "; }\n" + ind + "  workgroupBarrier();\n" + ind + "}\n" + ind + acc +
           " = " + part + "[lid - " + gl + "];\n" + ind + "workgroupBarrier();\n";
  }

  // ---- memory -------------------------------------------------------------------------------------

  // The word of packed element `i` in a buffer of dt, as an expression, and its lane's shift.
  static int per_word(DType dt) { return 4 / static_cast<int>(itemsize(dt)); }

  std::string load(const UOpPtr& u) {
    const UOpPtr& buf = u->src[0];
    const std::string idx = as_i32(u->src[1]);
    if (buf->op == Ops::DEFINE_LOCAL) return name(buf) + "[" + idx + "]";
    const size_t i = buf->as<int64_t>();
    const DType dt = k_.buffers[i]->dtype;
    if (!packed(dt)) return name(buf) + "[" + idx + "]";
    const int n = per_word(dt), bits = 32 / n;
    const std::string w = "u32(" + idx + ")";
    std::string word = name(buf) + "[" + w + " >> " + (n == 4 ? "2u" : "1u") + "]";
    if (k_.written[i]) word = "atomicLoad(&" + word + ")";
    const std::string mask = bits == 8 ? "0xffu" : "0xffffu";
    const std::string lane = "((" + word + " >> ((" + w + " & " + std::to_string(n - 1) + "u) * " +
                             std::to_string(bits) + "u)) & " + mask + ")";
    switch (dt) {
      case kBool:
        return "(" + lane + " != 0u)";
      case kInt8:
        return "(bitcast<i32>(" + lane + " << 24u) >> 24u)";
      case kInt16:
        return "(bitcast<i32>(" + lane + " << 16u) >> 16u)";
      case kFloat16:
        return "lg_h2f(" + lane + ")";
      case kBFloat16:
        return "lg_bf2f(" + lane + ")";
      default:
        return lane;  // uint8, uint16
    }
  }

  // A gated access at a constant negative index (a cat's empty piece: `if (false) { data1[-1i] }`)
  // reads or writes nothing wherever it runs, and WGSL refuses the shader for the constant index
  // even in dead code (the compiler fuzzer's seed 5356): it is left out.
  static bool never_an_element(const UOpPtr& u) {
    const bool gated = u->src.size() == (u->op == Ops::LOAD ? 3u : 4u);
    return gated && u->src[1]->is_const() && u->src[1]->const_int() < 0;
  }

  std::string store(const UOpPtr& u, const std::string& ind) {
    if (never_an_element(u)) return "";
    const UOpPtr& buf = u->src[0];
    const std::string idx = as_i32(u->src[1]);
    const std::string v = wide_int(u->src[2]->dtype) ? as_wide(u->src[2]) : name(u->src[2]);
    const std::string gate = u->src.size() == 4 ? "if (" + name(u->src[3]) + ") " : "";
    if (buf->op == Ops::DEFINE_LOCAL) return ind + gate + "{ " + name(buf) + "[" + idx + "] = " + v + "; }\n";
    const size_t i = buf->as<int64_t>();
    const DType dt = k_.buffers[i]->dtype;
    if (!packed(dt)) return ind + gate + "{ " + name(buf) + "[" + idx + "] = " + v + "; }\n";
    const int n = per_word(dt), bits = 32 / n;
    const std::string mask = bits == 8 ? "0xffu" : "0xffffu";
    std::string value;
    switch (dt) {
      case kBool:
        value = "select(0u, 1u, " + v + ")";
        break;
      case kFloat16:
        value = "lg_f2h(" + v + ")";
        break;
      case kBFloat16:
        value = "lg_f2bf(" + v + ")";
        break;
      case kInt8:
      case kInt16:
        value = "(bitcast<u32>(" + v + ") & " + mask + ")";
        break;
      default:
        value = "(" + v + " & " + mask + ")";
    }
    // The lane is cleared and set with two atomics: other work-items write the other lanes of the
    // word at the same time, and each touches only its own bits.
    const std::string word = name(buf) + "[lg_w >> " + (n == 4 ? "2u" : "1u") + "]";
    return ind + gate + "{\n" + ind + "  let lg_w = u32(" + idx + ");\n" + ind + "  let lg_s = (lg_w & " +
           std::to_string(n - 1) + "u) * " + std::to_string(bits) + "u;\n" + ind + "  atomicAnd(&" + word +
           ", ~(" + mask + " << lg_s));\n" + ind + "  atomicOr(&" + word + ", " + value + " << lg_s);\n" +
           ind + "}\n";
  }

  // ---- expressions --------------------------------------------------------------------------------

  static std::string round_16(DType dt, const std::string& e) {
    return dt == kFloat16 ? "lg_h2f(lg_f2h(" + e + "))" : "lg_bf2f(lg_f2bf(" + e + "))";
  }

  // A 16-bit float result rounded to its dtype after every op, as PyTorch rounds (c_style.cpp, expr).
  std::string expr(const UOpPtr& u) {
    std::string e = unrounded_expr(u);
    if (!half_float(u->dtype) || u->op == Ops::LOAD || u->op == Ops::WHERE || u->op == Ops::MAX ||
        u->op == Ops::CAST)
      return e;
    return round_16(u->dtype, e);
  }

  std::string cast(const UOpPtr& u) {
    const DType to = u->dtype, from = u->src[0]->dtype;
    const UOpPtr& src = u->src[0];
    const std::string x = name(src), tt = ctype(to), ft = ctype(from);
    if (truncation(u)) return "trunc(" + x + ")";
    if (truncation(src)) return half_float(to) ? round_16(to, x) : x;  // an integer, as a float
    if (wide(src)) {
      if (to == kBool) return "((" + x + ".x | " + x + ".y) != 0u)";
      if (is_float(to)) {
        const std::string v = call(from == kInt64 ? "lg_i64_to_f32" : "lg_u64_to_f32", x);
        return half_float(to) ? round_16(to, v) : v;
      }
      if (wide(u)) return x;  // int64 and uint64: the same bits
      // A narrower integer (or a 64-bit one that fits) is the low word, wrapped to its width.
      return wrap(to, tt == "u32" ? x + ".x" : "bitcast<i32>(" + x + ".x)");
    }
    if (wide(u)) {
      if (is_float(from)) return call(to == kInt64 ? "lg_f32_to_i64" : "lg_f32_to_u64", x);
      return as_wide(src);
    }
    if (to == kBool)
      return from == kBool ? x : is_float(from) ? "lg_ne_f(" + x + ", 0.0f)" : x + " != " + zero(from);
    if (from == kBool)
      return "select(" + zero(to) + ", " + (is_float(to) ? "1.0f" : int_literal(to, 1)) + ", " + x + ")";
    if (is_float(to)) {
      std::string v = is_float(from) ? x : int_to_float(src);
      return half_float(to) ? round_16(to, v) : v;
    }
    if (is_float(from)) {
      // As the C renderer's casts on x86-64: a signed type by cvttss2si's rule (lg_f32_to_i32), an
      // unsigned one through int64, so a negative value wraps (-1.0 is 255 in uint8) and uint32
      // takes values past 2^31; then wrapped to the width.
      if (tt == "u32") return wrap(to, "lg_f32_to_i64(" + x + ").x");
      return wrap(to, "lg_f32_to_i32(" + x + ")");
    }
    if (tt == ft) return wrap(to, x);
    return wrap(to, "bitcast<" + tt + ">(" + x + ")");
  }

  // An op of 64-bit integers with a vec2<u32> among its sources or as its result: done on vec2s
  // by the helpers, and where the result fits in an i32, its low word. Sums, products and bitwise
  // ops of values that fit need only the low words.
  std::string wide_arith(const UOpPtr& u) {
    auto w = [&](size_t i) { return as_wide(u->src[i]); };
    const bool is_signed = u->dtype == kInt64, out = wide(u);
    const char* infix = u->op == Ops::ADD   ? " + "
                        : u->op == Ops::MUL ? " * "
                        : u->op == Ops::AND ? " & "
                        : u->op == Ops::OR  ? " | "
                        : u->op == Ops::XOR ? " ^ "
                                            : nullptr;
    if (infix && !out) return as_i32(u->src[0]) + infix + as_i32(u->src[1]);
    std::string e;
    switch (u->op) {
      case Ops::ADD:
        e = call("lg_add64", w(0) + ", " + w(1));
        break;
      case Ops::MUL:
        e = call("lg_mul64", w(0) + ", " + w(1));
        break;
      case Ops::AND:
      case Ops::OR:
      case Ops::XOR:
        e = "(" + w(0) + infix + w(1) + ")";
        break;
      case Ops::MAX:
        e = call(is_signed ? "lg_max_i64" : "lg_max_u64", w(0) + ", " + w(1));
        break;
      case Ops::IDIV:
      case Ops::MOD:
        e = call(std::string(u->op == Ops::IDIV ? "lg_idiv_" : "lg_mod_") + (is_signed ? "i64" : "u64"),
                 w(0) + ", " + w(1) + ", &err");
        break;
      case Ops::SHL:
        e = constant_shift(u);
        if (e.empty()) e = call("lg_shl64", w(0) + ", " + w(1));
        break;
      case Ops::SHR:
        e = constant_shift(u);
        if (e.empty()) e = call(is_signed ? "lg_shr_i64" : "lg_shr_u64", w(0) + ", " + w(1));
        break;
      case Ops::WHERE:
        e = "select(" + w(2) + ", " + w(1) + ", " + name(u->src[0]) + ")";
        break;
      case Ops::CHECK_INDEX: {
        const IndexCheck c = IndexCheck::from(u->as<std::vector<int64_t>>());
        std::string args = w(0) + ", " + wide_literal(c.lo) + ", " + wide_literal(c.hi) + ", ";
        if (c.exempt) args += wide_literal(*c.exempt) + ", ";
        e = call(c.exempt ? "lg_check_index64_or" : "lg_check_index64",
                 args + std::to_string(c.error_bit) + "i, &err");
        break;
      }
      default:
        fail(std::string("no WGSL for ") + std::string(op_name(u->op)) + " of 64-bit integers");
    }
    return out ? e : "bitcast<i32>((" + e + ").x)";
  }

  // A 64-bit shift by a constant count within [0, 64) as word shifts and a swizzle (the random
  // generator's rotations by 32 are two of them), or "" for another count.
  std::string constant_shift(const UOpPtr& u) {
    const UOpPtr& c = u->src[1];
    if (!c->is_const() || c->const_int() < 0 || c->const_int() > 63) return "";
    const int64_t k = c->const_int();
    const std::string a = as_wide(u->src[0]);
    if (k == 0) return a;
    const std::string x = a + ".x", y = a + ".y", m = std::to_string(k % 32) + "u",
                      back = std::to_string(32 - k % 32) + "u";
    auto arith = [&](const std::string& count) {  // the high word shifted in its sign
      return "bitcast<u32>(bitcast<i32>(" + y + ") >> " + count + ")";
    };
    if (u->op == Ops::SHL)
      return k < 32
                 ? "vec2<u32>(" + x + " << " + m + ", (" + y + " << " + m + ") | (" + x + " >> " + back + "))"
                 : "vec2<u32>(0u, " + x + " << " + m + ")";
    const bool is_signed = u->dtype == kInt64;
    if (k < 32)
      return "vec2<u32>((" + x + " >> " + m + ") | (" + y + " << " + back + "), " +
             (is_signed ? arith(m) : y + " >> " + m) + ")";
    return is_signed ? "vec2<u32>(" + arith(m) + ", " + arith("31u") + ")"
                     : "vec2<u32>(" + y + " >> " + m + ", 0u)";
  }

  // A comparison of 64-bit integers of which one is a vec2<u32>.
  std::string wide_compare(const UOpPtr& u) {
    const std::string a = as_wide(u->src[0]), b = as_wide(u->src[1]);
    if (u->op == Ops::CMPNE) return "any(" + a + " != " + b + ")";
    return call(u->src[0]->dtype == kInt64 ? "lg_lt_i64" : "lg_lt_u64", a + ", " + b);
  }

  bool any_wide_source(const UOpPtr& u) {
    return std::any_of(u->src.begin(), u->src.end(), [&](const UOpPtr& s) { return wide(s); });
  }

  // An integer as the nearest f32 (ties to even), as C converts: WGSL leaves the rounding of a
  // 32-bit integer to the implementation (SwiftShader's u32 rounded 3316551526 up to 3316551680,
  // not to the nearest 3316551424). Above 2^24 it is split in 16-bit halves, each exact as a float,
  // so their sum is the one rounding.
  std::string int_to_float(const UOpPtr& src) {
    const std::string x = name(src);
    const Range r = range(src);
    if (bit_width(src->dtype) < 32 || (r.lo > -(int64_t(1) << 24) && r.hi < (int64_t(1) << 24)))
      return "f32(" + x + ")";
    if (ctype(src->dtype) == "u32") return "fma(f32(" + x + " >> 16u), 65536.0f, f32(" + x + " & 0xffffu))";
    return "fma(f32(" + x + " >> 16u), 65536.0f, f32(" + x + " & 0xffffi))";
  }

  std::string divmod(const UOpPtr& u, const char* op, const char* helper) {
    const UOpPtr &a = u->src[0], &b = u->src[1];
    const bool safe_divisor = b->is_const() && b->const_int() > 0;
    const bool non_negative = is_unsigned(a->dtype) || range(a).lo >= 0;
    if (safe_divisor && non_negative) return name(a) + " " + op + " " + name(b);
    const std::string t = ctype(u->dtype);
    if (!division_helpers_.count(t)) {
      division_helpers_.insert(t);
      extra_helpers_ += wgsl::int_division_helpers(t);
    }
    return wrap(u->dtype, std::string("lg_") + helper + "_" + t + "(" + name(a) + ", " + name(b) + ", &err)");
  }

  // PyTorch's shifts (src/ir/ops.h): a count outside [0, bits) shifts every bit out.
  std::string shift(const UOpPtr& u) {
    const DType dt = u->dtype;
    const std::string t = ctype(dt), fn = std::string(u->op == Ops::SHL ? "lg_shl_" : "lg_shr_") +
                                          std::string(dtype_name(dt));
    if (!shift_helpers_.count(fn)) {
      shift_helpers_.insert(fn);
      const std::string bits = std::to_string(wide_int(dt) ? 32 : bit_width(dt)) + (t == "u32" ? "u" : "i");
      const bool u32 = t == "u32";
      const std::string outside = u32 ? "b >= " + bits : "(b < 0i) | (b >= " + bits + ")";
      const std::string out = u->op == Ops::SHL ? (u32 ? "0u" : "0i") : (u32 ? "0u" : "a >> 31u");
      const std::string shifted = u->op == Ops::SHL ? wrap(dt, "a << u32(b)") : "a >> u32(b)";
      extra_helpers_ += "fn " + fn + "(a: " + t + ", b: " + t + ") -> " + t + " {\n  return select(" +
                        shifted + ", " + out + ", " + outside + ");\n}\n";
    }
    return fn + "(" + name(u->src[0]) + ", " + name(u->src[1]) + ")";
  }

  std::string unrounded_expr(const UOpPtr& u) {
    if (u->op != Ops::LOAD && u->op != Ops::CAST && wide_int(u->dtype) && (wide(u) || any_wide_source(u)))
      return wide_arith(u);
    if ((u->op == Ops::CMPLT || u->op == Ops::CMPNE) && any_wide_source(u)) return wide_compare(u);
    auto s = [&](size_t i) { return name(u->src[i]); };
    const DType dt = u->dtype;
    const DType in = u->src.empty() ? dt : u->src[0]->dtype;
    std::string e;
    switch (u->op) {
      case Ops::LOAD:
        return load(u);
      case Ops::EXP2: {
        // exp(x) reaches us as exp2(x * log2(e)): e^x from x itself (c_style.cpp does the same).
        const UOpPtr& m = u->src[0];
        if (m->op == Ops::MUL && m->src[1]->is_const(std::numbers::log2e))
          return call("lg_exp", name(m->src[0]));
        return call("lg_exp2", s(0));
      }
      case Ops::LOG2:
        return call("lg_log2", s(0));
      case Ops::SIN: {
        // cos(x) reaches us as sin(pi/2 + x * -1).
        const UOpPtr& a = u->src[0];
        if (a->op == Ops::ADD && a->src[0]->is_const(std::numbers::pi / 2) && a->src[1]->op == Ops::MUL &&
            a->src[1]->src[1]->is_const(-1))
          return call("lg_cos", name(a->src[1]->src[0]));
        return call("lg_sin", s(0));
      }
      case Ops::SQRT:
        return call("lg_sqrt", s(0));
      case Ops::RECIPROCAL:
        return call("lg_div", "1.0f, " + s(0));
      case Ops::CAST:
        return cast(u);
      case Ops::MUL:
        if (dt == kBool) return s(0) + " & " + s(1);
        // log(x) reaches us as log2(x) * ln(2); x * (1/y) is x / y, one rounding.
        if (u->src[0]->op == Ops::LOG2 && u->src[1]->is_const(std::numbers::ln2))
          return call("lg_log", name(u->src[0]->src[0]));
        if (is_float(dt) && u->src[1]->op == Ops::RECIPROCAL)
          return call("lg_div", s(0) + ", " + name(u->src[1]->src[0]));
        for (size_t z : {1, 0})  // a product with a constant zero (lg_mul_zero says why)
          if (is_float(dt) && u->src[z]->is_const() && u->src[z]->const_double() == 0)
            return call("lg_mul_zero",
                        s(1 - z) + ", " + (std::signbit(u->src[z]->const_double()) ? "0x80000000u" : "0u"));
        return wrap(dt, s(0) + " * " + s(1));
      case Ops::ADD:
        return dt == kBool ? s(0) + " | " + s(1) : wrap(dt, s(0) + " + " + s(1));
      case Ops::MAX:
        if (dt == kBool) return s(0) + " | " + s(1);
        return is_float(dt) ? call("lg_max_f", s(0) + ", " + s(1)) : "max(" + s(0) + ", " + s(1) + ")";
      case Ops::AND:
        return s(0) + " & " + s(1);
      case Ops::OR:
        return s(0) + " | " + s(1);
      case Ops::XOR:
        return dt == kBool ? s(0) + " != " + s(1) : s(0) + " ^ " + s(1);
      case Ops::CMPLT:
        if (in == kBool) return "!" + s(0) + " & " + s(1);  // only false < true
        return is_float(in) ? call("lg_lt_f", s(0) + ", " + s(1)) : s(0) + " < " + s(1);
      case Ops::CMPNE:
        return is_float(in) ? call("lg_ne_f", s(0) + ", " + s(1)) : s(0) + " != " + s(1);
      case Ops::IDIV:
        return divmod(u, "/", "idiv");
      case Ops::MOD:
        return divmod(u, "%", "mod");
      case Ops::SHL:
      case Ops::SHR:
        return shift(u);
      case Ops::WHERE:
        return "select(" + s(2) + ", " + s(1) + ", " + s(0) + ")";
      case Ops::CHECK_INDEX: {
        const IndexCheck c = IndexCheck::from(u->as<std::vector<int64_t>>());
        std::string args = s(0) + ", " + int_literal(kInt64, c.lo) + ", " + int_literal(kInt64, c.hi) + ", ";
        if (c.exempt) args += int_literal(kInt64, *c.exempt) + ", ";
        return call(c.exempt ? "lg_check_index_or" : "lg_check_index",
                    args + std::to_string(c.error_bit) + "i, &err");
      }
      default:
        fail(std::string("no WGSL for ") + std::string(op_name(u->op)));
    }
  }

  // A call of a helper (helper_definitions finds it in the kernel's text and defines it).
  static std::string call(const std::string& fn, const std::string& args) { return fn + "(" + args + ")"; }

  DType var_dtype(size_t i) {
    if (var_dtypes_.empty()) var_dtypes_ = kernel_var_dtypes(k_);
    return var_dtypes_[i];
  }

  const Target& t_;
  const WgslLimits& limits_;
  const Kernel& k_;
  const LinearKernel& lin_;
  NodeNames names_;
  std::unordered_map<const UOp*, Range> ranges_;
  std::unordered_set<const UOp*> truncations_;  // casts to int64 computed as trunc in f32
  std::unordered_set<std::string> division_helpers_, shift_helpers_;
  std::string extra_helpers_;  // helpers made for this kernel's types (division, shifts)
  std::vector<DType> var_dtypes_;
};

class WgslRenderer : public Renderer {
 public:
  WgslRenderer(Target t, WgslLimits limits) : target_(std::move(t)), limits_(limits) {}
  const Target& target() const override { return target_; }
  std::string render(const Kernel& k, const LinearKernel& lin) const override {
    return WgslWriter(target_, limits_, k, lin).render();
  }

 private:
  Target target_;
  WgslLimits limits_;
};

// The work-items default_opts gives a grouped reduction: a GPU's few hundred, as on CUDA.
constexpr int64_t kGroupReduction = 256;

}  // namespace

Target webgpu_target(const WgslLimits& limits) {
  Target t;
  t.language = "WGSL";
  t.vector_bytes = 0;
  t.thread_slices = false;
  t.scratch = false;
  t.interrupt_polls = false;
  // Work-groups share workgroup memory: grouped reductions (Group opts) and Local pieces.
  t.local_memory = limits.workgroup_storage;
  t.group_reduction = std::min<int64_t>(kGroupReduction, limits.max_workgroup_size);
  t.max_local = {limits.max_workgroup_size, 1, 1};
  t.max_group_size = limits.max_workgroup_size;
  // Groups along x up to the per-dimension limit, then rows of them along y (the kernel's index).
  t.max_grid = {limits.max_workgroups_per_dimension * limits.max_workgroups_per_dimension, 1, 1};
  t.block_size = std::min<int64_t>(64, limits.max_workgroup_size);
  t.float64 = false;
  t.float16 = true;  // stored as 16 bits, computed in f32
  t.int64 = true;    // emulated: vec2<u32> values and buffers (wgsl_helpers.cpp)
  t.keeps_subnormals = limits.keeps_subnormals;
  // Every buffer is a storage binding; one more is kept for a kernel's error word.
  t.max_buffers = limits.max_storage_buffers - 1;
  return t;
}

std::unique_ptr<Renderer> make_wgsl_renderer(Target target, WgslLimits limits) {
  target.language = "WGSL";
  return std::make_unique<WgslRenderer>(std::move(target), limits);
}

}  // namespace lazygrad
