// WGSL, WebGPU's shading language: a renderer of its own beside the C-style base, since WGSL is not
// a C dialect. Buffers are `array<T>` storage bindings, not pointers; the only scalar types are i32,
// u32, f32, f16 (an optional feature) and bool; constants may not be NaN or infinite; there is no
// goto, no union, no 64-bit integer. What lazygrad does about each (docs/webgpu.md):
// - float16 and bfloat16 are stored as 16 bits and computed in f32, as on every device; they, bool
//   and the 8- and 16-bit integers are packed four or two to a u32 word. A kernel reads its word
//   and extracts its lane; it writes its lane with atomicAnd and atomicOr, so work-items that share
//   a word never undo each other's writes.
// - 64-bit integers: the index math (int64 in the IR) is done in i32 where the IR's bounds show that
//   every value of it fits; a kernel with a 64-bit value that may not fit (int64 data, uint64 random
//   bits) is an Error naming the op. Buffers of int64, uint64 and float64 are refused where they are
//   made (Target::int64 and Target::float64 are false).
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
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "renderer/renderer.h"
#include "renderer/wgsl_helpers.h"
#include "runtime/buffer.h"

namespace lazygrad {

namespace {

bool wide_int(DType dt) { return dt == kInt64 || dt == kUInt64; }
bool half_float(DType dt) { return dt == kFloat16 || dt == kBFloat16; }
// Stored packed in u32 words: bool as a byte, the 8- and 16-bit types.
bool packed(DType dt) { return itemsize(dt) < 4; }

// The WGSL type a value of dt is computed in. 64-bit integers are index math, done in i32 where it
// fits (checked by the renderer); the narrow integers are held sign- or zero-extended.
std::string ctype(DType dt) {
  if (dt == kBool) return "bool";
  if (is_float(dt)) return "f32";
  if (wide_int(dt)) return "i32";
  return is_unsigned(dt) ? "u32" : "i32";
}

struct Range {
  int64_t lo, hi;
};

int64_t clamp64(__int128 v) {
  return v < INT64_MIN ? INT64_MIN : v > INT64_MAX ? INT64_MAX : static_cast<int64_t>(v);
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
    for (size_t i = 0; i < k_.buffers.size(); i++) {
      const DType dt = k_.buffers[i]->dtype;
      if (dt == kFloat64 || wide_int(dt))
        fail(std::string(k_.written[i] ? "STORE to" : "LOAD from") + " a buffer of " +
             std::string(dtype_name(dt)) + ": WGSL has no 64-bit types");
    }
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
  // index; others one work-item per index, in groups as the engine launches them (launch_dims).
  bool grouped() const { return !lin_.thread_ranges.empty(); }
  int64_t workgroup_size() const {
    if (grouped()) return k_.local_size;
    return std::max<int64_t>(1, std::min({t_.block_size, t_.max_local[0], t_.max_group_size,
                                          std::max<int64_t>(k_.global_size, 1)}));
  }

  // The first line says how the kernel binds and what its scalar arguments are, for the device
  // (runtime/webgpu/webgpu_device.cpp reads it): one letter per binding (r: read, w: written, e:
  // the error word, a: the arguments' uniform block), one per argument (i: i32, u: u32, f: f32).
  std::string head(bool errors, const std::string& code) {
    std::string bindings, vars;
    for (size_t i = 0; i < k_.buffers.size(); i++) bindings += k_.written[i] ? "w" : "r";
    if (errors) bindings += "e";
    const size_t args = k_.vars.size() + (errors ? 1 : 0);  // the launch's number after the variables
    if (args > 0) bindings += "a";
    for (size_t i = 0; i < k_.vars.size(); i++)
      vars += is_float(var_dtype(i)) ? "f" : var_dtype(i) == kUInt32 ? "u" : "i";
    std::ostringstream os;
    os << "// lazygrad-wgsl bindings=" << bindings << " vars=" << (vars.empty() ? "-" : vars)
       << " workgroup=" << workgroup_size() << "\n";
    int binding = 0;
    for (size_t i = 0; i < k_.buffers.size(); i++) {
      const DType dt = k_.buffers[i]->dtype;
      std::string elem = packed(dt) ? (k_.written[i] ? "atomic<u32>" : "u32") : ctype(dt);
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
        os << "var<workgroup> " << part_name(in.u) << ": array<" << ctype(acc_dtype(in.u)) << ", "
           << k_.local_size << ">;\n";
    os << wgsl::helper_definitions(code + extra_helpers_) << extra_helpers_;
    os << "\n@compute @workgroup_size(" << workgroup_size() << ")\nfn " << k_.name
       << "(@builtin(workgroup_id) lg_wid: vec3<u32>, @builtin(num_workgroups) lg_nwg: vec3<u32>, "
          "@builtin(local_invocation_index) lg_lid: u32) {\n";
    if (errors) os << "  var err: i32 = 0i;\n";
    for (size_t i = 0; i < k_.vars.size(); i++) {
      const std::string word = "lg_args[" + std::to_string(i / 4) + "][" + std::to_string(i % 4) + "]";
      const DType dt = var_dtype(i);
      os << "  let var" << i << ": " << ctype(dt) << " = "
         << (is_float(dt)    ? "bitcast<f32>(" + word + ")"
             : dt == kUInt32 ? word
             : dt == kBool   ? "bitcast<i32>(" + word + ") != 0i"
                             : "bitcast<i32>(" + word + ")")
         << ";\n";
    }
    for (const auto& l : lin_.locals)
      os << "  var " << name(l) << ": array<" << ctype(l->dtype) << ", " << l->src[0]->const_int() << ">;\n";
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
      const size_t i = k_.vars.size();
      out +=
          "  if (err != 0i) {\n    loop {\n      let r = atomicCompareExchangeWeak(&lg_err[0], 0i, err);\n"
          "      if (r.exchanged) { atomicStore(&lg_err[1], bitcast<i32>(lg_args[" +
          std::to_string(i / 4) + "][" + std::to_string(i % 4) +
          "])); break; }\n      if (r.old_value != 0i) { break; }\n    }\n  }\n";
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
  std::string type_of(const UOpPtr& u) const { return truncation(u) ? "f32" : ctype(u->dtype); }

  // ---- names, literals, types ------------------------------------------------------------------

  std::string name(const UOpPtr& u) {
    if (u->op == Ops::CONST) return literal(u);
    if (u->op == Ops::RANGE) {
      const auto& r = u->as<RangeArg>();
      if (r.kind == AxisKind::Local || r.kind == AxisKind::Group) return "l" + std::to_string(r.id);
      return r.kind == AxisKind::Global ? "g" : "r" + std::to_string(r.id);
    }
    if (u->op == Ops::DEFINE_GLOBAL) return "data" + std::to_string(u->as<int64_t>());
    if (u->op == Ops::DEFINE_VAR) return "var" + std::to_string(u->as<int64_t>());
    if (u->op == Ops::DEFINE_LOCAL) return "local" + std::to_string(u->as<int64_t>());
    auto it = names_.find(u.get());
    if (it != names_.end()) return it->second;
    std::string n = (u->op == Ops::REDUCE ? "acc"
                     : u->op == Ops::LOAD ? "val"
                                          : "alu") +
                    std::to_string(counter_++);
    names_[u.get()] = n;
    return n;
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

  // ---- 64-bit integers as i32 --------------------------------------------------------------------

  // Bounds of an integer node, from its sources' (the linear order computes sources first, so the
  // recursion is shallow). A DEFINE_VAR is what its bound says, else any i32 (the device checks the
  // value at launch).
  Range range(const UOpPtr& u) {
    if (auto it = ranges_.find(u.get()); it != ranges_.end()) return it->second;
    Range r = dtype_range(u->dtype);
    auto s = [&](size_t i) { return range(u->src[i]); };
    switch (u->op) {
      case Ops::CONST:
        if (!is_float(u->dtype)) r = {u->const_int(), u->const_int()};
        break;
      case Ops::RANGE:
        r = {0, u->src[0]->const_int() - 1};
        break;
      case Ops::DEFINE_VAR: {
        // A uint64 one (the random generator's counter and key) holds any 64 bits.
        r = u->dtype == kUInt64 ? Range{0, INT64_MAX} : Range{INT32_MIN, INT32_MAX};
        for (const VarBound& b : k_.var_bounds)
          if (static_cast<int64_t>(b.var) == u->as<int64_t>()) r = {b.lo, b.hi};
        break;
      }
      case Ops::ADD:
        if (wide_int(u->dtype))
          r = {clamp64(__int128(s(0).lo) + s(1).lo), clamp64(__int128(s(0).hi) + s(1).hi)};
        break;
      case Ops::MUL:
        if (wide_int(u->dtype)) {
          const Range a = s(0), b = s(1);
          const __int128 v[] = {__int128(a.lo) * b.lo, __int128(a.lo) * b.hi, __int128(a.hi) * b.lo,
                                __int128(a.hi) * b.hi};
          r = {clamp64(*std::min_element(v, v + 4)), clamp64(*std::max_element(v, v + 4))};
        }
        break;
      case Ops::IDIV:
        if (wide_int(u->dtype) && u->src[1]->is_const() && u->src[1]->const_int() > 0)
          r = {floor_div(s(0).lo, u->src[1]->const_int()), floor_div(s(0).hi, u->src[1]->const_int())};
        break;
      case Ops::MOD:
        if (wide_int(u->dtype) && u->src[1]->is_const() && u->src[1]->const_int() > 0) {
          const int64_t c = u->src[1]->const_int();
          r = s(0).lo >= 0 && s(0).hi < c ? s(0) : Range{0, c - 1};
        }
        break;
      case Ops::MAX:
        if (wide_int(u->dtype)) r = {std::max(s(0).lo, s(1).lo), std::max(s(0).hi, s(1).hi)};
        break;
      case Ops::WHERE:
        if (wide_int(u->dtype)) r = {std::min(s(1).lo, s(2).lo), std::max(s(1).hi, s(2).hi)};
        break;
      case Ops::CAST:
        if (wide_int(u->dtype) && !is_float(u->src[0]->dtype)) r = s(0);
        break;
      case Ops::CHECK_INDEX:
        r = s(0);
        break;
      default:
        break;
    }
    ranges_[u.get()] = r;
    return r;
  }

  // A 64-bit integer node is computed in i32: every value it can take must fit.
  // (float64 values inside a kernel, which the frontend makes for precision in arange's and
  // linspace's positions and fmod's quotient, are computed in f32, as a target without float64
  // accumulates its float sums in f32: docs/webgpu.md says what that costs.)
  void check_fits(const UOpPtr& u) {
    if (!wide_int(u->dtype) || truncation(u)) return;
    const Range r = range(u);
    if (r.lo >= INT32_MIN && r.hi <= INT32_MAX) return;
    const bool index = u->op != Ops::CAST && u->op != Ops::LOAD;
    fail(std::string(op_name(u->op)) + " of " + std::string(dtype_name(u->dtype)) + " values" +
         (index ? " (" + std::to_string(r.lo) + " to " + std::to_string(r.hi) + ")" : "") +
         ": WGSL has no 64-bit integers, and lazygrad computes 64-bit integers in 32 bits only where every "
         "value fits (index math below 2^31); keep int64 and uint64 data, and random bits, on the CPU");
  }

  // ---- statements ----------------------------------------------------------------------------------

  std::string indent(int depth) const { return std::string(4 + 2 * depth, ' '); }

  DType acc_dtype(const UOpPtr& red) const { return accumulator_dtype(*red, false, t_.float64); }
  bool acc_apart(const UOpPtr& red) const { return acc_dtype(red) != red->dtype; }
  std::string acc_name(const UOpPtr& red) { return name(red) + (acc_apart(red) ? "v" : ""); }

  std::string identity(const UOpPtr& red) {
    const DType dt = acc_dtype(red);
    const Ops op = red->as<ReduceArg>().op;
    if (dt == kBool) return op == Ops::MUL ? "true" : "false";
    if (op == Ops::ADD) return zero(dt);
    if (op == Ops::MUL) return is_float(dt) ? "1.0f" : int_literal(dt, 1);
    if (is_float(dt)) return "lg_f32(0xff800000u)";  // -inf
    return int_literal(dt, wide_int(dt) ? INT32_MIN : dtype_range(red->dtype).lo);
  }

  std::string combine(const UOpPtr& red, const std::string& a, const std::string& b) {
    const DType dt = acc_dtype(red);
    const Ops op = red->as<ReduceArg>().op;
    if (dt == kBool) return op == Ops::MUL ? a + " & " + b : a + " | " + b;
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
        return u->src.size() > 1 ? loop + ind + "  if (" + r + " < " + name(u->src[1]) + ") {\n" : loop;
      }
      case Step::Close:
        return ind + (u->src.size() > 1 ? "}}\n" : "}\n");
      case Step::AccInit:
        return ind + "var " + acc_name(u) + ": " + ctype(acc_dtype(u)) + " = " + identity(u) + ";\n";
      case Step::AccUpdate: {
        check_fits(u);
        std::string v = name(u->src[0]);
        if (acc_dtype(u) != u->src[0]->dtype && ctype(acc_dtype(u)) != ctype(u->src[0]->dtype))
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
    check_fits(u);
    if (u->op == Ops::LOAD && u->src.size() == 3) {  // gated: nothing is read where it is not valid
      const std::string n = name(u);
      return ind + "var " + n + ": " + ctype(u->dtype) + " = " + zero(u->dtype) + ";\n" + ind + "if (" +
             name(u->src[2]) + ") { " + n + " = " + load(u) + "; }\n";
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
    const std::string idx = name(u->src[1]);
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

  std::string store(const UOpPtr& u, const std::string& ind) {
    const UOpPtr& buf = u->src[0];
    const std::string idx = name(u->src[1]), v = name(u->src[2]);
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
    const std::string x = name(u->src[0]), tt = ctype(to), ft = ctype(from);
    if (truncation(u)) return "trunc(" + x + ")";
    if (truncation(u->src[0])) return half_float(to) ? round_16(to, x) : x;  // an integer, as a float
    if (to == kBool)
      return from == kBool ? x : is_float(from) ? "lg_ne_f(" + x + ", 0.0f)" : x + " != " + zero(from);
    if (from == kBool)
      return "select(" + zero(to) + ", " + (is_float(to) ? "1.0f" : int_literal(to, 1)) + ", " + x + ")";
    if (is_float(to)) {
      std::string v = is_float(from) ? x : int_to_float(u->src[0]);
      return half_float(to) ? round_16(to, v) : v;
    }
    if (is_float(from)) {
      // A float to an unsigned type goes through a signed integer, so a negative value wraps (-1.0 is
      // 255 in uint8), as the C renderer's casts do; uint32 takes values past 2^31 directly.
      if (tt == "u32")
        return wrap(to, "select(bitcast<u32>(i32(" + x + ")), u32(" + x + "), " + x + " >= 2147483648.0f)");
      return wrap(to, "i32(" + x + ")");
    }
    if (tt == ft) return wrap(to, x);
    return wrap(to, "bitcast<" + tt + ">(" + x + ")");
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
  std::unordered_map<const UOp*, std::string> names_;
  std::unordered_map<const UOp*, Range> ranges_;
  std::unordered_set<const UOp*> truncations_;  // casts to int64 computed as trunc in f32
  std::unordered_set<std::string> division_helpers_, shift_helpers_;
  std::string extra_helpers_;  // helpers made for this kernel's types (division, shifts)
  std::vector<DType> var_dtypes_;
  int counter_ = 0;
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
  t.int64 = false;
  t.keeps_subnormals = limits.keeps_subnormals;
  return t;
}

std::unique_ptr<Renderer> make_wgsl_renderer(Target target, WgslLimits limits) {
  target.language = "WGSL";
  return std::make_unique<WgslRenderer>(std::move(target), limits);
}

}  // namespace lazygrad
