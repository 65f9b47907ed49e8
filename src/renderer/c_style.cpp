// The C-style renderer: one statement per linear IR step, in the dialect a CStyleLanguage describes.
// Half-precision values live in float registers, rounded to their dtype after every op as PyTorch
// rounds them; integer // and % round toward -inf like Python's, and a zero divisor sets the
// kernel's error flag instead of trapping.
#include "renderer/c_style.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <numbers>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "codegen/stage.h"
#include "ir/walk.h"
#include "renderer/node_names.h"
#include "runtime/buffer.h"
#include "runtime/disk_cache.h"
#include "shape/size.h"

namespace lazygrad {

namespace {

// The C type a value of dt is computed in, and the type it is stored as.
std::string compute_type(DType dt) {
  switch (dt) {
    case kBool:
      return "_Bool";
    case kFloat16:
    case kBFloat16:
    case kFloat32:
      return "float";
    case kFloat64:
      return "double";
    default:
      return std::string(dtype_name(dt)) + "_t";
  }
}
std::string storage_type(DType dt) {
  return dt == kFloat16 || dt == kBFloat16 ? "uint16_t" : compute_type(dt);
}

// Helper functions, each emitted only into kernels that call it (DEBUG=4 stays short).
struct Helper {
  const char* name;
  const char* code;
};
const Helper kHelpers[] = {
    // float16 and bfloat16 are stored as 16 bits and computed in float; rounding is to nearest even.
    {"lg_h2f(", R"(static inline float lg_h2f(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
  if (e == 0) {
    if (m == 0) u = s;
    else { e = 113; while (!(m & 0x400)) { m <<= 1; e--; } u = s | (e << 23) | ((m & 0x3ff) << 13); }
  } else if (e == 31) u = s | 0x7f800000 | (m << 13);
  else u = s | ((e + 112) << 23) | (m << 13);
  union { uint32_t u; float f; } c = {u}; return c.f;
}
)"},
    {"lg_f2h(", R"(static inline uint16_t lg_f2h(float f) {
  union { float f; uint32_t u; } c = {f};
  uint32_t u = c.u, s = (u >> 16) & 0x8000, a = u & 0x7fffffff;
  if (a >= 0x7f800000) return (uint16_t)(s | 0x7c00 | (a > 0x7f800000 ? 0x200 : 0));
  if (a >= 0x477ff000) return (uint16_t)(s | 0x7c00);
  if (a < 0x38800000) {
    if (a < 0x33000000) return (uint16_t)s;
    uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000, sh = 126 - e;
    uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), mid = 1u << (sh - 1);
    if (rem > mid || (rem == mid && (r & 1))) r++;
    return (uint16_t)(s | r);
  }
  uint32_t r = a + 0xfff + ((a >> 13) & 1) - 0x38000000;
  return (uint16_t)(s | (r >> 13));
}
)"},
    {"lg_bf2f(",
     R"(static inline float lg_bf2f(uint16_t h) { union { uint32_t u; float f; } c = {(uint32_t)h << 16}; return c.f; }
)"},
    {"lg_f2bf(", R"(static inline uint16_t lg_f2bf(float f) {
  union { float f; uint32_t u; } c = {f};
  if ((c.u & 0x7fffffff) > 0x7f800000) return (uint16_t)((c.u >> 16) | 0x40);
  return (uint16_t)((c.u + 0x7fff + ((c.u >> 16) & 1)) >> 16);
}
)"},
    // An index that must lie in [lo, hi) (or, for the second, equal the exempt value e): its error
    // bit otherwise (CHECK_INDEX).
    {"lg_check_index(",
     "static inline int64_t lg_check_index(int64_t i, int64_t lo, int64_t hi, int bit, int* err) "
     "{ if (i < lo || i >= hi) *err |= bit; return i; }\n"},
    {"lg_check_index_or(",
     "static inline int64_t lg_check_index_or(int64_t i, int64_t lo, int64_t hi, int64_t e, int bit, "
     "int* err) { if ((i < lo || i >= hi) && i != e) *err |= bit; return i; }\n"},
    // max that propagates NaN, as torch.maximum does.
    {"lg_fmaxf(", "static inline float lg_fmaxf(float a, float b) { return (a > b || a != a) ? a : b; }\n"},
    {"lg_fmax(", "static inline double lg_fmax(double a, double b) { return (a > b || a != a) ? a : b; }\n"},
    {"lg_bits_f64(",
     "static inline double lg_bits_f64(int64_t b) { union { int64_t i; double d; } u = {b}; return u.d; }\n"},
};

// Floor division and modulo with a zero check, per integer type used.
std::string int_helpers(const std::string& t, bool is_unsigned_type) {
  std::ostringstream os;
  if (is_unsigned_type) {
    os << "static inline " << t << " lg_idiv_" << t << "(" << t << " a, " << t
       << " b, int* err) { if (b == 0) { *err |= 1; return 0; } return a / b; }\n";
    os << "static inline " << t << " lg_mod_" << t << "(" << t << " a, " << t
       << " b, int* err) { if (b == 0) { *err |= 2; return 0; } return a % b; }\n";
  } else {
    // b == -1 is done as a negation so MIN / -1 wraps (as in PyTorch) instead of trapping.
    os << "static inline " << t << " lg_idiv_" << t << "(" << t << " a, " << t
       << " b, int* err) { if (b == 0) { *err |= 1; return 0; } if (b == -1) return (" << t
       << ")(0 - (uint64_t)a); " << t
       << " q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n";
    os << "static inline " << t << " lg_mod_" << t << "(" << t << " a, " << t
       << " b, int* err) { if (b == 0) { *err |= 2; return 0; } if (b == -1) return 0; " << t
       << " r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n";
  }
  return os.str();
}

// Shifts as the IR defines them (src/ir/ops.h, PyTorch's): a count outside [0, bits) shifts every
// bit out, where C's shift would be undefined. The left shift is done unsigned, so no signed
// overflow either; an 8- or 16-bit operand is promoted to int, which holds any in-range result.
std::string shift_helpers(DType dt) {
  bool u = is_unsigned(dt);
  std::string t = compute_type(dt), ut = u ? t : "u" + t, bits = std::to_string(bit_width(dt));
  std::string outside = std::string(u ? "" : "b < 0 || ") + "b >= " + bits;
  std::string shifted_out = u ? "0" : "a >> " + std::to_string(bit_width(dt) - 1);  // the sign in every bit
  std::string head = "static inline " + t + " lg_sh";
  std::string args = "_" + t + "(" + t + " a, " + t + " b) { return (" + outside + ") ? ";
  return head + "l" + args + "0 : (" + t + ")((" + ut + ")a << b); }\n" + head + "r" + args + shifted_out +
         " : a >> b; }\n";
}

// The C operator of a binary op that is one operator in C, for scalars and vectors alike (else null).
const char* infix(Ops op) {
  switch (op) {
    case Ops::ADD:
      return " + ";
    case Ops::MUL:
      return " * ";
    case Ops::AND:
      return " & ";
    case Ops::OR:
      return " | ";
    case Ops::XOR:
      return " ^ ";
    case Ops::CMPLT:
      return " < ";
    case Ops::CMPNE:
      return " != ";
    default:
      return nullptr;
  }
}

// Bytes of one lane of dt's vector: bools as bytes, 16-bit floats as the float they compute in.
size_t lane_bytes(DType dt) {
  return dt == kBool ? 1 : (dt == kFloat16 || dt == kBFloat16) ? 4 : itemsize(dt);
}

std::string literal(const UOp& c, const CStyleLanguage& lang) {
  DType dt = c.dtype;
  if (is_float(dt)) {
    double v = c.const_double();
    bool f32 = dt != kFloat64;
    if (std::isnan(v)) return f32 ? lang.nan32 : lang.nan64;
    if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f32 ? lang.inf32 : lang.inf64);
    char buf[64];
    if (f32)
      std::snprintf(buf, sizeof buf, "%.9gf", static_cast<float>(v));
    else
      std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos) s.insert(s.size() - (f32 ? 1 : 0), ".0");
    return s;
  }
  if (dt == kBool) return c.const_int() ? "1" : "0";
  int64_t v = c.const_int();
  if (dt == kUInt64) return std::to_string(static_cast<uint64_t>(v)) + "ULL";
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  // Index math is int64: small literals read best bare (C widens them in the expression).
  if (dt == kInt64) return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
  return "(" + compute_type(dt) + ")" + std::to_string(v) + "LL";
}

// A helper's code in this language: its own spelling where it has one.
std::string helper_code(const CStyleLanguage& lang, const std::string& call, const std::string& code) {
  auto it = lang.helpers.find(call.substr(0, call.find('(')));
  return it != lang.helpers.end() ? it->second : code;
}

}  // namespace

std::string guarded_definition(const CStyleLanguage& lang, const std::string& name, const std::string& code) {
  if (!lang.guarded_definitions) return code;
  const std::string guard = "LG_DEF_" + name + "_" + hex64(fnv1a(code));
  return "#ifndef " + guard + "\n#define " + guard + "\n" + code + "#endif\n";
}

std::string helper_definitions(const CStyleLanguage& lang, const std::string& code) {
  std::string out;
  for (const Helper& h : kHelpers)
    if (code.find(h.name) != std::string::npos) {
      const std::string name(h.name, std::strlen(h.name) - 1);  // "lg_f2h(" is lg_f2h
      out += guarded_definition(lang, name, helper_code(lang, h.name, h.code));
    }
  return out;
}

namespace {

class CRenderer {
 public:
  CRenderer(const CStyleLanguage& lang, const Kernel& k, const LinearKernel& lin)
      : lang_(lang), k_(k), lin_(lin), work_groups_(!lang.target.thread_slices) {
    for (const Inst& in : lin_.insts)
      for (const UOpPtr& s : in.u->src) users_[s.get()]++;
  }

  std::string render() {
    if (!work_groups_ && !lin_.thread_ranges.empty())
      throw Error("render: kernel " + k_.name + ": " + lang_.target.language +
                  " has no work-groups (Local and Group opts)");
    const std::unordered_map<size_t, int64_t> polls = poll_every();
    // Loops opened as two (polled_loop) are closed as two, and what they hold is indented once more:
    // one entry per open loop, true for a strip-mined one.
    std::vector<bool> open_strips;
    auto g_poll = polls.find(kGlobalLoop);
    const bool g_strip_mined = g_poll != polls.end() && strip_mined(0, g_poll->second);
    if (g_strip_mined) strip_indent_ += 2;
    std::ostringstream body;
    for (size_t i = 0; i < lin_.insts.size(); i++) {
      const Inst& in = lin_.insts[i];
      if (in.step == Step::Open) {
        open_.push_back(in.u);
        auto p = polls.find(i);
        const int64_t trips = in.u->src[0]->const_int();
        open_strips.push_back(p != polls.end() && strip_mined(trips, p->second));
        if (p == polls.end()) {
          body << line(in);
          continue;
        }
        body << polled_loop(name(in.u), "0", literal(*in.u->src[0], lang_), trips, p->second,
                            indent(in.depth));
        if (open_strips.back()) strip_indent_ += 2;
        continue;
      }
      body << line(in);
      if (in.step == Step::Close) {
        open_.pop_back();
        const bool strip = open_strips.back();
        open_strips.pop_back();
        if (strip) {
          strip_indent_ -= 2;
          body << indent(in.depth) << "}\n";
        }
      }
    }
    std::ostringstream kernel;
    kernel << (work_groups_ ? work_group_head() : slice_head());
    // Scratch for staged loads: on the CPU one block per call (each thread calls with its own
    // range), error bit 2 when it cannot be had, each buffer in it on a 64-byte boundary (malloc's
    // 16 let every other AVX-512 load of a staged panel straddle two cache lines: an sgemm ran 8%
    // slower on a Xeon); on a work-group device an array of the work-item's own.
    std::string frees;
    std::ostringstream carve;
    int64_t scratch_bytes = 0;
    for (const auto& l : lin_.locals) {
      std::string n = name(l), t = storage_type(l->dtype);
      const int64_t count = l->src[0]->const_int();
      if (work_groups_) {
        kernel << "  " << t << " " << n << "[" << count << "];\n";
        continue;
      }
      carve << "  " << t << "* restrict " << n << " = (" << t << "*)(lg_scratch + " << scratch_bytes
            << ");\n";
      scratch_bytes += (count * static_cast<int64_t>(itemsize(l->dtype)) + 63) / 64 * 64;
    }
    if (scratch_bytes > 0) {
      kernel << "  char* lg_block = (char*)__builtin_malloc(" << scratch_bytes + 63 << ");\n"
             << "  if (!lg_block) return 4;\n"
             << "  char* lg_scratch = (char*)(((__UINTPTR_TYPE__)lg_block + 63) & ~(__UINTPTR_TYPE__)63);\n"
             << carve.str();
      frees = "__builtin_free(lg_block);";
    }
    if (lin_.lanes > 1) {
      kernel << "  const " << vtype(kInt64) << " lane = {";
      for (int64_t l = 0; l < lanes(); l++) kernel << (l ? ", " : "") << l;
      kernel << "};\n";
    }
    if (work_groups_ && work_groups(k_, lang_.target).per_index)  // as the engine launches it
      kernel << group_head();
    else if (work_groups_)
      kernel << "  const int64_t g = " << lang_.global_id << ";\n  if (g < " << k_.global_size << ") {\n";
    else if (g_poll == polls.end())
      kernel << "  for (int64_t g = gstart; g < gend; g++) {\n";
    else
      kernel << polled_loop("g", "gstart", "gend", 0, g_poll->second, "  ");
    kernel << body.str() << (g_strip_mined ? "    }\n  }\n" : "  }\n")
           << (polls.empty() ? "" : "lg_interrupted:;\n") << (frees.empty() ? "" : "  " + frees + "\n");
    if (work_groups_)
      kernel << "  if (err && atomic_cmpxchg(&lg_err[0], 0, err) == 0) lg_err[1] = (int)lg_launch;\n}\n";
    else
      kernel << "  return err;\n}\n\n" << slice_entry();
    std::string k = kernel.str();
    std::ostringstream os;
    os << lang_.preamble;
    for (const auto& t : typedefs_) os << guarded_definition(lang_, t.first, t.second);
    os << helper_definitions(lang_, k);
    for (const auto& h : helpers_)  // in the order added: a helper may call an earlier one
      os << guarded_definition(lang_, h.first, h.second);
    os << k;
    return os.str();
  }

 private:
  std::string helper_code(const std::string& call, const std::string& code) const {
    return lazygrad::helper_code(lang_, call, code);
  }

  std::string storage_type(DType dt) const {
    return dt == kBool ? lang_.bool_storage : lazygrad::storage_type(dt);
  }

  // The CPU's kernel function over [gstart, gend), which returns its error word.
  std::string slice_head() {
    std::ostringstream os;
    os << "\nstatic int " << k_.name << "(";
    for (size_t i = 0; i < k_.buffers.size(); i++)
      os << (k_.written[i] ? "" : "const ") << storage_type(k_.buffers[i]->dtype) << "* restrict data" << i
         << ", ";
    for (size_t i = 0; i < k_.vars.size(); i++)
      os << "const " << compute_type(var_dtype(i)) << " var" << i << ", ";
    os << "int64_t gstart, int64_t gend, const volatile int* lg_stop) {\n  int err = 0;\n";
    return os.str();
  }

  // Its entry point: buffers and scalar arguments from arrays (a float argument as float64 bits).
  std::string slice_entry() {
    std::ostringstream os;
    os << "int " << k_.name
       << "_entry(void* const* bufs, const int64_t* vars, int64_t gstart, int64_t gend, const volatile int* "
          "lg_stop) "
          "{\n  return "
       << k_.name << "(";
    for (size_t i = 0; i < k_.buffers.size(); i++)
      os << "(" << storage_type(k_.buffers[i]->dtype) << "*)bufs[" << i << "], ";
    for (size_t i = 0; i < k_.vars.size(); i++) {
      std::string v = "vars[" + std::to_string(i) + "]";
      os << "(" << compute_type(var_dtype(i)) << ")"
         << (is_float(var_dtype(i)) ? "lg_bits_f64(" + v + ")" : v) << ", ";
    }
    os << "gstart, gend, lg_stop);\n}\n";
    return os.str();
  }

  // A work-group kernel: one work-item per global index; scalar arguments as int64 bits.
  std::string work_group_head() {
    std::ostringstream os;
    os << "\n" << kernel_head_prefix(lang_, k_) << k_.name << "(";
    for (size_t i = 0; i < k_.buffers.size(); i++)
      os << lang_.buffer_prefix << (k_.written[i] ? "" : "const ") << storage_type(k_.buffers[i]->dtype)
         << "* " << lang_.restrict_kw << " data" << i << ", ";
    for (size_t i = 0; i < k_.vars.size(); i++) os << "long var" << i << "_bits, ";
    os << lang_.buffer_prefix << "int* lg_err, uint lg_launch) {\n  int err = 0;\n";
    for (size_t i = 0; i < k_.vars.size(); i++) {
      std::string v = "var" + std::to_string(i) + "_bits";
      os << "  const " << compute_type(var_dtype(i)) << " var" << i << " = (" << compute_type(var_dtype(i))
         << ")" << (is_float(var_dtype(i)) ? "lg_bits_f64(" + v + ")" : v) << ";\n";
    }
    return os.str();
  }

  // A kernel with Local or Group pieces: one work-group per global index (exactly as many as there
  // are, so every work-item reaches every barrier), its local index cut into the pieces (the Group
  // piece fastest), and the local memory of its grouped reductions.
  std::string group_head() {
    std::ostringstream os;
    for (const Inst& in : lin_.insts)
      if (in.step == Step::AccGroup)
        os << "  " << lang_.local_prefix << storage_type(lin_.acc_dtype(in.u)) << " " << part_name(in.u)
           << "[" << k_.local_size << "];\n";
    os << "  const int64_t g = " << lang_.group_id << ";\n  const int64_t lid = " << lang_.local_id << ";\n";
    int64_t stride = k_.local_size;
    for (const auto& r : lin_.thread_ranges) {
      const int64_t n = r->src[0]->const_int();
      stride /= n;
      os << "  const int64_t " << name(r) << " = lid" << (stride > 1 ? " / " + std::to_string(stride) : "")
         << (stride * n < k_.local_size ? " % " + std::to_string(n) : "") << ";\n";
    }
    return os.str() + "  {\n";
  }

  // A grouped reduction's partial results: each work-item's accumulator into local memory, then
  // combined pairwise in a tree over the Group piece (the pieces from the largest power of two
  // below its size on folded into the ones before: any size works), and the group's value read
  // back by every work-item. The barrier at the end lets the array be written again (a grouped
  // reduction inside a loop).
  std::string group_combine(const UOpPtr& u, const std::string& ind) {
    const std::string part = part_name(u), acc = acc_name(u), gl = name(lin_.group_range);
    const int64_t n = lin_.group_range->src[0]->const_int();
    int64_t top = 1;
    while (top * 2 < n) top *= 2;
    const std::string mine = part + "[lid]", other = part + "[lid + lg_s]";
    return ind + mine + " = " + acc + ";\n" + ind + lang_.barrier + "\n" + ind +
           "for (int64_t lg_s = " + std::to_string(top) + "; lg_s > 0; lg_s >>= 1) {\n" + ind + "  if (" +
           gl + " < lg_s && " + gl + " + lg_s < " + std::to_string(n) + ") " + mine + " = " +
           combine(u, mine, other) + ";\n" + ind + "  " + lang_.barrier + "\n" + ind + "}\n" + ind + acc +
           " = " + part + "[lid - " + gl + "];\n" + ind + lang_.barrier + "\n";
  }
  std::string part_name(const UOpPtr& red) { return name(red) + "p"; }

  // a and b, two values of reduction u's accumulator, combined by its op.
  std::string combine(const UOpPtr& u, const std::string& a, const std::string& b) {
    Ops op = u->as<ReduceArg>().op;
    DType at = lin_.acc_dtype(u);
    if ((op == Ops::ADD || op == Ops::MUL) && !lang_.signed_wraps && (at == kInt32 || at == kInt64))
      return wrapping(at, op, a, b);
    if (op == Ops::ADD || op == Ops::MUL) return a + infix(op) + b;
    return max_expr(u->dtype, a, b);
  }

  static constexpr size_t kGlobalLoop = SIZE_MAX;  // poll_every's key for the loop over g
  static constexpr int64_t kPollWork = 1 << 20;    // steps of work between two reads of the flag

  // Where the kernel reads the interrupt flag (runtime/interrupt.h): in the outermost loops one trip
  // of which is at most kPollWork steps (one step: one instruction of the linear IR), every 2^k trips
  // so that about kPollWork steps pass between reads, and in no loop deeper. The index of each such
  // loop's Open (kGlobalLoop for the loop over g) -> 2^k. A kernel that writes into a buffer in place
  // (an assign: a parameter's update) never stops half done: it has no polls.
  std::unordered_map<size_t, int64_t> poll_every() const {
    std::unordered_map<size_t, int64_t> masks;
    if (k_.in_place || !lang_.target.interrupt_polls) return masks;
    struct Loop {
      size_t open;
      int64_t trips, body = 0;  // body: steps of one trip
      std::vector<size_t> inner;
    };
    std::vector<Loop> loops{{kGlobalLoop, 1, 0, {}}};
    std::vector<size_t> open{0};
    for (size_t i = 0; i < lin_.insts.size(); i++) {
      const Inst& in = lin_.insts[i];
      if (in.step == Step::Open) {
        loops[open.back()].inner.push_back(loops.size());
        open.push_back(loops.size());
        loops.push_back({i, in.u->src[0]->const_int(), 0, {}});
      } else if (in.step == Step::Close) {
        const Loop& l = loops[open.back()];
        open.pop_back();
        Loop& outer = loops[open.back()];
        outer.body = saturating_add(outer.body, saturating_mul(l.trips, std::max<int64_t>(l.body, 1)));
      } else {
        loops[open.back()].body = saturating_add(loops[open.back()].body, 1);
      }
    }
    for (std::vector<size_t> todo{0}; !todo.empty();) {
      const Loop& l = loops[todo.back()];
      todo.pop_back();
      if (l.body > kPollWork && !l.inner.empty()) {
        todo.insert(todo.end(), l.inner.begin(), l.inner.end());
        continue;
      }
      int64_t every = 1;
      while (every * 2 * std::max<int64_t>(l.body, 1) <= kPollWork) every *= 2;
      masks[l.open] = every;
    }
    return masks;
  }

  // The loop of r over [from, to) with a read of the flag every `every` trips (bit 30 of the error
  // word, then out). Strip-mined: an outer loop steps `every` at a time and reads the flag, and the
  // loop over the trips themselves is the loop it was, with no test in it (a test in every trip of a
  // sum cost 10%: bench/interrupt_polls.cpp), and a constant trip count where `every` divides the
  // loop's (`trips`, 0 when not known). Left open: the caller closes one brace more.
  static std::string polled_loop(const std::string& r, const std::string& from, const std::string& to,
                                 int64_t trips, int64_t every, const std::string& ind) {
    auto loop = [](const std::string& v, const std::string& lo, const std::string& hi,
                   const std::string& step) {
      return "for (int64_t " + v + " = " + lo + "; " + v + " < " + hi + "; " + v + step + ") {\n";
    };
    auto read = [](const std::string& at) {
      return at + "if (*lg_stop) {\n" + at + "  err |= " + std::to_string(1 << kInterruptedBit) + ";\n" + at +
             "  goto lg_interrupted;\n" + at + "}\n";
    };
    if (every == 1) return ind + loop(r, from, to, "++") + read(ind + "  ");
    if (!strip_mined(trips, every)) return read(ind) + ind + loop(r, from, to, "++");  // short as a whole
    const std::string at = r + "_at", end = r + "_end", n = std::to_string(every);
    if (trips > 0 && trips % every == 0)
      return ind + loop(at, from, to, " += " + n) + read(ind + "  ") + ind + "  " +
             loop(r, at, at + " + " + n, "++");
    return ind + loop(at, from, to, " += " + n) + read(ind + "  ") + ind + "  const int64_t " + end + " = " +
           to + " - " + at + " < " + n + " ? " + to + " : " + at + " + " + n + ";\n" + ind + "  " +
           loop(r, at, end, "++");
  }

  // polled_loop cuts a loop of `trips` (0: not known) read every `every` trips into two loops, unless
  // it reads every trip or the whole loop is as short as the steps between two reads (one read before
  // it then).
  static bool strip_mined(int64_t trips, int64_t every) {
    return every > 1 && !(trips > 0 && every >= trips);
  }

  // The dtype of scalar argument i, from its DEFINE_VAR in the kernel.
  DType var_dtype(size_t i) {
    if (var_dtypes_.empty()) var_dtypes_ = kernel_var_dtypes(k_);
    return var_dtypes_[i];
  }

  std::string name(const UOpPtr& u) { return u->op == Ops::CONST ? literal(*u, lang_) : names_(u); }

  std::string indent(int depth) const { return std::string(4 + 2 * depth + strip_indent_, ' '); }

  std::string line(const Inst& in) {
    const UOpPtr& u = in.u;
    std::string ind = indent(in.depth);
    switch (in.step) {
      case Step::Open: {
        std::string r = name(u);
        std::string loop = ind + "for (int64_t " + r + " = 0; " + r + " < " + literal(*u->src[0], lang_) +
                           "; " + r + "++) {\n";
        // A loop with a bound of its own (a grouped reduction's partial last trip): every work-item
        // runs the same trips and skips those past its bound. PoCL cannot form its work-item loops
        // around a loop whose trip count differs between work-items when barriers follow (an
        // assertion in its ParallelRegion; the compiler fuzzer's seed 87 on CL).
        return u->src.size() > 1 ? loop + ind + "  if (" + r + " < " + name(u->src[1]) + ") {\n" : loop;
      }
      case Step::Close:
        return ind + (u->src.size() > 1 ? "}}\n" : "}\n");
      case Step::AccInit: {
        if (!lin_.vector_acc(u)) return ind + acc_type(u) + " " + acc_name(u) + " = " + identity(u) + ";\n";
        return ind + vtype(u->dtype) + " " + acc_name(u) + " = " + lanes_of(identity(u)) + ";\n";
      }
      case Step::AccUpdate: {
        std::string acc = acc_name(u), v = name(u->src[0]);
        // A vector bool accumulator holds 0/1 bytes; its operand may be a mask. An operand that is one
        // value for every lane goes into each lane (linearize.h: over_lanes).
        if (lin_.vector_acc(u) && !lin_.is_vector(u->src[0].get()))
          v = "(" + vtype(u->dtype) + ")" + lanes_of(v);
        else if (lin_.vector_acc(u) && u->dtype == kBool)
          v = as_bytes(u->src[0]);
        Ops op = u->as<ReduceArg>().op;
        if (!lin_.vector_acc(u)) return ind + acc + " = " + combine(u, acc, v) + ";\n";
        if (lin_.fused.count(u.get())) {  // a * b + acc, one rounding (linearize.h)
          const UOpPtr& m = u->src[0];
          return ind + acc + " = " + vector_fma(lin_.acc_dtype(u)) + "(" + as_vector(m->src[0]) + ", " +
                 as_vector(m->src[1]) + ", " + acc + ");\n";
        }
        if (op == Ops::ADD) return ind + acc + " += " + v + ";\n";
        if (op == Ops::MUL) return ind + acc + " *= " + v + ";\n";
        if (u->dtype != kBool) {  // NaN wins, as in torch.max
          std::string m = is_float(u->dtype) ? "((" + acc + " > " + v + ") | (" + acc + " != " + acc + "))"
                                             : "(" + acc + " > " + v + ")";
          return ind + acc + " = " + select(u->dtype, m, acc, v) + ";\n";
        }
        return ind + acc + " |= " + v + ";\n";  // max of 0/1 bytes
      }
      case Step::AccGroup:
        return group_combine(u, ind);
      case Step::AccFinish: {
        // A scalar accumulator of a wider type: the value is the accumulator rounded to the dtype.
        if (!lin_.vector_acc(u)) {
          const std::string v = rounded_16(u->dtype, "(" + compute_type(u->dtype) + ")" + acc_name(u));
          return ind + compute_type(u->dtype) + " " + name(u) + " = " + v + ";\n";
        }
        // A vector accumulator: its lanes, combined in a balanced tree.
        Ops op = u->as<ReduceArg>().op;
        if (op == Ops::ADD && u->dtype != kBool && (lanes() & (lanes() - 1)) == 0) return halving_sum(u, ind);
        std::vector<std::string> terms;
        for (int64_t l = 0; l < lanes(); l++) terms.push_back(acc_name(u) + "[" + std::to_string(l) + "]");
        while (terms.size() > 1) {
          std::vector<std::string> next;
          for (size_t i = 0; i + 1 < terms.size(); i += 2)
            next.push_back(op == Ops::ADD   ? "(" + terms[i] + " + " + terms[i + 1] + ")"
                           : op == Ops::MUL ? "(" + terms[i] + " * " + terms[i + 1] + ")"
                                            : max_expr(u->dtype, terms[i], terms[i + 1]));
          terms = std::move(next);
        }
        return ind + compute_type(u->dtype) + " " + name(u) + " = " + rounded_16(u->dtype, terms[0]) + ";\n";
      }
      case Step::Compute:
        break;
    }
    if (!vec(u)) {
      // After a grouped reduction every work-item of the group holds the same values: one stores.
      if (u->op == Ops::STORE && lin_.group_range)
        return ind + "if (" + name(lin_.group_range) + " == 0) " + store(u, "");
      if (u->op == Ops::STORE) return ind + store(u, "");
      return ind + compute_type(u->dtype) + " " + name(u) + " = " + expr(u) + ";\n";
    }
    if (u->op == Ops::STORE) return vector_store(u, ind);
    if (u->op == Ops::LOAD) {
      if (std::string half = half_load(u, ind); !half.empty()) return half;
      if (std::string strided = strided_load(u, ind); !strided.empty()) return strided;
      if (auto base = contiguous_base(u)) {
        std::string n = name(u), copy = "__builtin_memcpy(&" + n + ", " + name(u->src[0]) + " + (" + *base +
                                        "), sizeof(" + n + "));\n";
        if (u->src.size() == 2) {
          std::string pin;
          // Only a vector used more than once: one used once (a row stream's row, read by one
          // FMA) is better left to GCC, which folds it into the FMA as its memory operand instead of
          // holding it in a register beside the accumulators (decode's matrix-vector products: 23-27
          // GB/s pinned, 28-30 not; bench_matvec_orders on the Xeon).
          if (!lang_.keep_in_register.empty() && users_[u.get()] > 1 &&
              static_cast<int64_t>(itemsize(u->dtype)) * lanes() <= lang_.target.vector_bytes)
            pin = ind + lang_.keep_in_register + "(" + n + ");\n";
          return ind + vtype(u->dtype) + " " + n + ";\n" + prefetch(u, *base, ind) + ind + copy + pin;
        }
        if (!vec(u->src[2]))
          return ind + vtype(u->dtype) + " " + n + " = {0};\n" + ind + "if (" + name(u->src[2]) + ") " + copy;
        // Validity per lane (a padded window, a padded axis): 16 lanes of 32 bits are one masked
        // load where the compiler has AVX-512 (a masked-out lane is never read, so it cannot fault).
        if (std::string fn = masked_load(u); !fn.empty())
          return ind + vtype(u->dtype) + " " + n + " = " + fn + "(" + name(u->src[0]) + " + (" + *base +
                 "), " + name(u->src[2]) + ");\n";
        // Otherwise one load where every lane is valid (inside the image), lane by lane at the
        // edges, where a lane past the buffer must not be read.
        std::string all, lanes;
        for (int64_t l = 0; l < this->lanes(); l++) {
          std::string i = std::to_string(l), v = name(u->src[2]) + "[" + i + "]";
          all += (l ? " & " : "") + v;
          lanes += (l ? ", " : "") + v + " ? " + name(u->src[0]) + "[(" + *base + ") + " + i + "] : 0";
        }
        return ind + vtype(u->dtype) + " " + n + ";\n" + ind + "if (" + all + ") " + copy + ind + "else " +
               n + " = (" + vtype(u->dtype) + "){" + lanes + "};\n";
      }
    }
    if (std::string e = vector_expr(u); !e.empty()) {
      auto mb = mask_bytes_.find(u.get());
      std::string t = mb != mask_bytes_.end() ? mask_type(mb->second) : vtype(u->dtype);
      return ind + t + " " + name(u) + " = " + e + ";\n";
    }
    // Lane by lane: the scalar expression once per lane.
    std::string lanes;
    for (int64_t l = 0; l < this->lanes(); l++) {
      lane_ = l;
      lanes += (l ? ", " : "") + expr(u);
    }
    lane_ = -1;
    return ind + vtype(u->dtype) + " " + name(u) + " = {" + lanes + "};\n";
  }

  std::string store(const UOpPtr& u, const std::string& ind) {
    std::string v = ref(u->src[2]);
    if (u->dtype == kFloat16) v = "lg_f2h(" + v + ")";
    if (u->dtype == kBFloat16) v = "lg_f2bf(" + v + ")";
    // A store past a padded axis's end (a Pad opt) is gated: it does nothing there.
    const std::string gate = u->src.size() == 4 ? "if (" + ref(u->src[3]) + ") " : "";
    return ind + gate + name(u->src[0]) + "[" + ref(u->src[1]) + "] = " + v + ";\n";
  }

  std::string vector_store(const UOpPtr& u, const std::string& ind) {
    auto base = contiguous_base(u);
    const bool lane_gate = u->src.size() == 4 && vec(u->src[3]);
    if (!base || lane_gate) {
      std::string out;
      for (int64_t l = 0; l < lanes(); l++) {
        lane_ = l;
        out += store(u, ind);
      }
      lane_ = -1;
      return out;
    }
    std::string v = name(u->src[2]), out;
    if (!vec(u->src[2]) || mask_bytes_.count(u->src[2].get())) {  // one value for every lane, or a mask
      v = name(u) + "_v";
      out = ind + vtype(u->dtype) + " " + v + " = " +
            (vec(u->src[2]) ? as_bytes(u->src[2]) : lanes_of(name(u->src[2]))) + ";\n";
    }
    const std::string gate = u->src.size() == 4 ? "if (" + name(u->src[3]) + ") " : "";
    return out + ind + gate + "__builtin_memcpy(" + name(u->src[0]) + " + (" + *base + "), &" + v +
           ", sizeof(" + v + "));\n";
  }

  // A vector load in a one-row tile's reduction loop (Kernel::one_row_tile), or in a staging copy's
  // loop (codegen/stage.h), that steps a kilobyte or more through a buffer of a megabyte or more: a
  // matrix-vector product x @ W down W's rows [K, N], a piece of each row per output tile, or the
  // copy of a matrix product's column panel of B, 64 columns of each row.
  // Each trip is on another 4 KiB page, where the hardware prefetchers (which follow a stream within
  // a page) do not reach, so every row waited for memory: the load is prefetched prefetch_rows trips
  // ahead (12 products [768, 3072]: 14 to 16-20 GB/s; [128, 768] x [768, 3072]: 164-173 to 168-183
  // GFLOP/s; Zen 4, 2 threads). A tile of several rows reads from the caches what one row loaded,
  // and is not prefetched. The address is integer
  // arithmetic: past the buffer's end it is never read, and a prefetch does not fault.
  std::string prefetch(const UOpPtr& u, const std::string& base, const std::string& ind) {
    if (!lang_.prefetch_rows || open_.empty() || open_.back()->as<RangeArg>().kind != AxisKind::Loop ||
        u->src[0]->op != Ops::DEFINE_GLOBAL)
      return "";
    const bool staging = open_.back()->as<RangeArg>().id >= kFirstStageRangeId;
    if (!k_.one_row_tile && !staging) return "";
    const Buffer& b = *k_.buffers.at(static_cast<size_t>(u->src[0]->as<int64_t>()));
    if (b.nbytes() < (size_t(1) << 20)) return "";
    auto aff = affine_in(u->src[1], open_.back().get());
    const int64_t step = aff ? aff->second * static_cast<int64_t>(itemsize(u->dtype)) : 0;
    if (step < 1024 && step > -1024) return "";
    return ind + "__builtin_prefetch((const void*)((__UINTPTR_TYPE__)(" + name(u->src[0]) + " + (" + base +
           ")) + " + std::to_string(lang_.prefetch_rows * step) + "));\n";
  }

  // The scalar index of lane 0 when a LOAD or STORE touches consecutive elements, one per lane
  // (16-bit floats convert lane by lane instead).
  std::optional<std::string> contiguous_base(const UOpPtr& u) {
    DType dt = u->op == Ops::LOAD ? u->dtype : u->src[2]->dtype;
    if (dt == kFloat16 || dt == kBFloat16) return std::nullopt;
    auto aff = affine_in(u->src[1], lin_.vector_of.at(u.get()));
    if (!aff || aff->second != 1) return std::nullopt;
    return inline_index(aff->first);
  }

  // Index math written out in place (its atoms are values already computed).
  std::string inline_index(const UOpPtr& u) {
    if (u->op == Ops::CONST || u->op == Ops::RANGE || u->op == Ops::DEFINE_VAR || names_.named(u.get()))
      return name(u);
    if (u->op == Ops::ADD) return "(" + inline_index(u->src[0]) + " + " + inline_index(u->src[1]) + ")";
    if (u->op == Ops::MUL) return "(" + inline_index(u->src[0]) + " * " + inline_index(u->src[1]) + ")";
    throw Error("render_c: cannot write index " + std::string(op_name(u->op)) + " in place");
  }

  // Ops the compiler's vector types do directly (a scalar operand is broadcast); empty if none.
  std::string vector_expr(const UOpPtr& u) {
    auto plain = [](DType dt) { return dt != kBool && dt != kFloat16 && dt != kBFloat16; };
    auto op = [&](size_t i) { return scalar_operand(u->src[i]); };
    if (u->dtype == kBool && u->op != Ops::CAST && u->op != Ops::LOAD) return mask_expr(u);
    // A 16-bit float result is rounded after every op (expr): lane by lane, as the scalar code does,
    // where x * (1/y) is a division too. Only selections are exact on lanes. (On lanes x * (1/y) was
    // x times 1/y rounded to float16, 227.375 for 227.5, unrounded besides: a fused argmin compared
    // its quotients with a minimum computed one by one, matched none and returned an index past its
    // axis; the compiler fuzzer's seed 8010.)
    if (!plain(u->dtype) && u->dtype != kBool && u->op != Ops::WHERE && u->op != Ops::MAX) return "";
    switch (u->op) {
      case Ops::ADD:
      case Ops::AND:
      case Ops::OR:
      case Ops::XOR:
        return op(0) + infix(u->op) + op(1);
      case Ops::MUL:
        if (u->src[0]->op == Ops::LOG2) return "";
        if (is_float(u->dtype) && u->src[1]->op == Ops::RECIPROCAL && plain(u->dtype)) {
          // x * (1/y) is x / y on lanes too, a scalar y included: one rounding, as PyTorch's float
          // division and as the scalar rendering (a multiply by 1/y, once tried here for softmax's
          // 1/sum, is an ulp off on some lanes, so one value differed between a vector kernel and a
          // scalar one: the compiler fuzzer's seed 12448, a sin of a quotient near 3e10).
          return scalar_operand(u->src[0]) + " / " + scalar_operand(u->src[1]->src[0]);
        }
        return op(0) + " * " + op(1);
      case Ops::RECIPROCAL:
        return plain(u->dtype) ? std::string(u->dtype == kFloat64 ? "1.0" : "1.0f") + " / " + name(u->src[0])
                               : "";
      case Ops::WHERE: {
        if (!vec(u->src[0]))
          return name(u->src[0]) + " ? " + as_vector(u->src[1]) + " : " + as_vector(u->src[2]);
        return select(u->dtype, as_mask(u->src[0], lane_bytes(u->dtype)), as_vector(u->src[1]),
                      as_vector(u->src[2]));
      }
      case Ops::MAX: {  // NaN wins, as in torch.maximum
        std::string a = as_vector(u->src[0]), b = as_vector(u->src[1]);
        std::string m = is_float(u->dtype) ? "((" + a + " > " + b + ") | (" + a + " != " + a + "))"
                                           : "(" + a + " > " + b + ")";
        return select(u->dtype, m, a, b);
      }
      case Ops::CAST: {
        DType from = u->src[0]->dtype, to = u->dtype;
        if (!vec(u->src[0])) return "";
        if (to == kBool && plain(from)) {  // x != 0, a mask as wide as x's lanes
          mask_bytes_[u.get()] = lane_bytes(from);
          return "(" + mask_type(lane_bytes(from)) + ")(" + name(u->src[0]) + " != 0)";
        }
        if (!plain(to)) return "";
        if (from == kBool)  // 0/1 lanes of the result's width, then converted
          return "__builtin_convertvector(" +
                 (mask_width(u->src[0]) ? as_mask(u->src[0], lane_bytes(to)) + " & 1" : name(u->src[0])) +
                 ", " + vtype(to) + ")";
        if (!plain(from)) return "";
        return "__builtin_convertvector(" + name(u->src[0]) + ", " + vtype(to) + ")";
      }
      case Ops::EXP2: {
        if (compute_type(u->dtype) != "float") return "";
        const UOpPtr& m = u->src[0];  // exp(x) arrives as exp2(x * log2(e))
        bool exp = m->op == Ops::MUL && m->src[1]->is_const(std::numbers::log2e);
        return vector_exp(exp) + "(" + name(exp ? m->src[0] : m) + ")";
      }
      default:
        return "";
    }
  }

  // exp and exp2 on float vectors (libm has no vector form without -ffast-math): 2^x = 2^n * 2^f,
  // n = round(x), f in [-1/2, 1/2], and e^x = 2^n * e^r, r = x - n ln 2 in two parts (Cody-Waite,
  // ln2_hi has 9 bits so n * ln2_hi is exact); 2^n is applied as two factors so that subnormal
  // results round once and overflow gives inf. Within 1 ulp of libm on every float32 input (checked
  // exhaustively, FTZ off; tests/test_optimize.cpp keeps a sample). What keeps it cheap (GCC 12,
  // AVX-512: 22 instructions per vector for exp2, was 35; the clamp is 6 of them):
  // - the series' multiply-adds are fused (lg_vfma): kernels compile with -ffp-contract=off, which
  //   keeps elementwise ops rounding as PyTorch's do, but the series has no such contract;
  // - the series is degree 6 (below);
  // - n is rounded with the magic number 1.5 * 2^23 + 254, so the sum's low bits are n + 254 and
  //   give the factors' exponent fields e1 = (n + 254) >> 1 and e2 = n + 254 - e1 (both in
  //   [52, 191] for n in [-150, 128]) by shifts alone, the magic's own bits shifting out past bit
  //   31: no float-to-int conversion, no bias to add;
  // - a NaN needs no select of its own: it passes the clamp and the arithmetic leaves it a NaN.
  std::string vector_exp(bool natural) { return exp_helper(natural, true); }

  // The helper above for vector lanes, or for one float: the same steps in the same order with the
  // same constants, so a value is the same bits wherever it is computed (a fused argmin compares a
  // row's sigmoids, computed on vector lanes for the minimum and one by one for the comparison, with
  // that minimum: libm's expf differs from the series by an ulp on some inputs, and then nothing
  // matched and the index ran past its axis; the compiler fuzzer's seed 6288).
  std::string exp_helper(bool natural, bool vector) {
    const std::string w = vector ? std::to_string(lanes()) : "1";
    std::string fn = std::string(natural ? "lg_vexp_" : "lg_vexp2_") + w;
    if (has_helper(fn)) return fn;
    const std::string v = vector ? vtype(kFloat32) : "float", m = vector ? mask_type(kFloat32) : "",
                      u = vector ? vtype(kUInt32) : "uint32_t", sel_fn = "lg_vsel_" + w,
                      fma = vector ? vector_fma() : scalar_fma();
    if (vector && !has_helper(sel_fn))
      helpers_.emplace_back(sel_fn, "static inline " + v + " " + sel_fn + "(" + m + " c, " + v + " a, " + v +
                                        " b) { return (" + v + ")((c & (" + m + ")a) | (~c & (" + m +
                                        ")b)); }\n");
    // A constant in every lane (z + c: lg_vfma takes vectors), a select, and bits as float and back.
    auto k = [&](const std::string& c) { return vector ? "z + " + c : c; };
    auto sel = [&](const std::string& c, const std::string& a, const std::string& b) {
      return vector ? sel_fn + "(" + c + ", " + a + ", " + b + ")" : "(" + c + " ? " + a + " : " + b + ")";
    };
    auto as_bits = [&](const std::string& x) { return vector ? "(" + u + ")" + x : "lg_fbits(" + x + ")"; };
    auto as_float = [&](const std::string& x) {
      return vector ? "(" + v + ")(" + x + ")" : "lg_bitsf(" + x + ")";
    };
    auto f32 = [&](double x) { return literal(*const_uop(kFloat32, x), lang_); };
    std::string lo = natural ? "-104.0f" : "-150.0f", hi = natural ? "89.0f" : "128.0f",
                magic = f32(12582912.0 + 254);
    std::string body = "static inline " + v + " " + fn + "(" + v + " x) {\n" +
                       (vector ? "  const " + v + " z = {0};\n" : "") + "  " + v +
                       " c = " + sel("x < " + lo, k(lo), sel("x > " + hi, k(hi), "x")) + ";\n";
    if (natural)
      body += "  " + v + " m = " + fma + "(c, " + k("1.44269504f") + ", " + k(magic) + "), n = m - " + magic +
              ";\n  " + v + " f = " + fma + "(n, " + k("-0.693359375f") + ", c);\n  f = " + fma + "(n, " +
              k("2.12194440e-4f") + ", f);\n";
    else
      body += "  " + v + " m = c + " + magic + ", n = m - " + magic + ", f = c - n;\n";
    // Degree 6, Chebyshev interpolants (near minimax: mpmath.chebyfit) of e^f on [-ln2/2, ln2/2] and
    // of 2^f on [-1/2, 1/2]: relative error 2e-9, below the float coefficients' own rounding (2e-8);
    // one multiply-add fewer than degree 7's Taylor series for the same 1 ulp.
    static const double kExp[7] = {1.0, 1.0, 0.5, 0.166664153, 0.0416663513, 0.00837512594, 0.00139411085};
    static const double kExp2[7] = {1.0,           0.693147182,  0.240226507,   0.0555032715,
                                    0.00961805694, 0.0013400428, 0.000154614449};
    const double* coef = natural ? kExp : kExp2;
    body += "  " + v + " p = " + k(f32(coef[6])) + ";\n";
    for (int j = 5; j >= 0; j--) body += "  p = " + fma + "(p, f, " + k(f32(coef[j])) + ");\n";
    body += "  " + u + " e = " + as_bits("m") + ", e1 = e >> 1;\n";
    body += "  return p * " + as_float("e1 << 23") + " * " + as_float("(e - e1) << 23") + ";\n}\n";
    helpers_.emplace_back(fn, body);
    return fn;
  }

  // a * b + c on one float, rounded as lg_vfma rounds each lane (below).
  std::string scalar_fma() {
    if (!has_helper("lg_vfma_1"))
      helpers_.emplace_back(
          "lg_vfma_1",
          helper_code("lg_vfma_1",
                      "static inline float lg_vfma_1(float a, float b, float c) {\n#if "
                      "defined(__clang__)\n#pragma clang fp contract(fast)\n  return a * b + "
                      "c;\n#elif defined(FP_FAST_FMAF)\n  return __builtin_fmaf(a, b, c);\n#else\n"
                      "  return a * b + c;\n#endif\n}\n"));
    if (!has_helper("lg_fbits"))
      helpers_.emplace_back("lg_fbits",
                            helper_code("lg_fbits",
                                        "static inline uint32_t lg_fbits(float x) { uint32_t u; "
                                        "__builtin_memcpy(&u, &x, 4); return u; }\nstatic inline float "
                                        "lg_bitsf(uint32_t u) { float x; __builtin_memcpy(&x, &u, 4); "
                                        "return x; }\n"));
    return "lg_vfma_1";
  }

  // A load whose lanes read base + lane / 2 (each value for two lanes: a pooling gradient): half a
  // vector loaded at once and each lane duplicated by one shuffle; empty where u is not such a load.
  std::string half_load(const UOpPtr& u, const std::string& ind) {
    if (u->src.size() != 2 || lanes() < 4 || lanes() % 2 != 0 || u->dtype == kFloat16 ||
        u->dtype == kBFloat16 || u->dtype == kBool)
      return "";
    auto base = halved_in(u->src[1], lin_.vector_of.at(u.get()));
    if (!base) return "";
    const std::string elem = compute_type(u->dtype), h = vtype(u->dtype) + "_half", n = name(u);
    if (!typedefs_.count(h))
      typedefs_[h] = "typedef " + elem + " " + h + " __attribute__((vector_size(" +
                     std::to_string(lane_bytes(u->dtype) * lanes() / 2) + ")));\n";
    std::string pairs;
    for (int64_t l = 0; l < lanes(); l++) pairs += ", " + std::to_string(l / 2);
    return ind + h + " " + n + "_h;\n" + ind + "__builtin_memcpy(&" + n + "_h, " + name(u->src[0]) + " + (" +
           inline_index(*base) + "), sizeof(" + n + "_h));\n" + ind + vtype(u->dtype) + " " + n +
           " = __builtin_shufflevector(" + n + "_h, " + n + "_h" + pairs + ");\n";
  }

  // A load whose lanes read base + 2 * lane (a 2x2 pooling window's columns): the 2 * lanes - 1
  // values from base loaded at once (never one past the last lane's) and every second one taken by
  // a shuffle; empty where u is not such a load.
  std::string strided_load(const UOpPtr& u, const std::string& ind) {
    if (u->src.size() != 2 || lanes() < 4 || u->dtype == kFloat16 || u->dtype == kBFloat16 ||
        u->dtype == kBool)
      return "";
    auto aff = affine_in(u->src[1], lin_.vector_of.at(u.get()));
    if (!aff || aff->second != 2) return "";
    const std::string elem = compute_type(u->dtype), d = vtype(u->dtype) + "_double", n = name(u);
    if (!typedefs_.count(d))
      typedefs_[d] = "typedef " + elem + " " + d + " __attribute__((vector_size(" +
                     std::to_string(lane_bytes(u->dtype) * lanes() * 2) + ")));\n";
    std::string evens;
    for (int64_t l = 0; l < lanes(); l++) evens += ", " + std::to_string(2 * l);
    return ind + d + " " + n + "_d;\n" + ind + "__builtin_memcpy(&" + n + "_d, " + name(u->src[0]) + " + (" +
           inline_index(aff->first) + "), sizeof(" + elem + ") * " + std::to_string(2 * lanes() - 1) +
           ");\n" + ind + vtype(u->dtype) + " " + n + " = __builtin_shufflevector(" + n + "_d, " + n + "_d" +
           evens + ");\n";
  }

  // The helper that loads u's 16 lanes of 32 bits under its per-lane validity with one AVX-512
  // masked load (the mask's lanes gathered into a 16-bit mask; GCC and clang both have the
  // builtins, and both vectorize the gathering), lane by lane where the kernel is compiled without
  // AVX-512; empty where the language has no such loads or the lanes are not 16 of 32 bits.
  std::string masked_load(const UOpPtr& u) {
    const DType dt = u->dtype;
    if (!lang_.masked_loads || lanes() != 16 || (dt != kFloat32 && dt != kInt32 && dt != kUInt32)) return "";
    auto mb = mask_bytes_.find(u->src[2].get());
    const std::string m = mb != mask_bytes_.end() ? mask_type(mb->second) : vtype(u->src[2]->dtype);
    const std::string v = vtype(dt), fn = "lg_mload_" + v.substr(3) + "_" + m.substr(3);
    const bool f = dt == kFloat32;
    const std::string elem = f ? "float" : dt == kInt32 ? "int32_t" : "uint32_t";
    if (!has_helper(fn))
      helpers_.emplace_back(
          fn,
          "static inline " + v + " " + fn + "(const " + elem + "* p, " + m + " m) {\n  " + v +
              " r;\n#if defined(__AVX512F__)\n  unsigned short k = 0;\n  for (int l = 0; l < 16; l++) k |= "
              "(unsigned short)((m[l] != 0) << l);\n  r = (" +
              v + ")" +
              (f ? "__builtin_ia32_loadups512_mask(p, (" + v + "){0}, k)"
                 : "__builtin_ia32_loaddqusi512_mask((const int*)p, (lg_int32x16){0}, k)") +
              ";\n#else\n  for (int l = 0; l < 16; l++) r[l] = m[l] ? p[l] : 0;\n#endif\n  return r;\n}\n");
    if (!f) vtype(kInt32);  // the builtin's operand type, declared for the helper
    return fn;
  }

  // a * b + c on float (or double) vectors with one rounding where the target has a fused
  // multiply-add (the kernel itself compiles with -ffp-contract=off). GCC applies a function's
  // optimize attribute only when it is not inlined, so there it is fmaf lane by lane, which GCC's
  // loop vectorizer turns into one vfmadd per vector (with SLP off too: checked in the assembly,
  // GCC 12, AVX-512); clang's pragma holds for the inlined code too.
  std::string vector_fma(DType dt = kFloat32) {
    const bool wide = dt == kFloat64;
    std::string v = vtype(dt), w = std::to_string(lanes()), fn = (wide ? "lg_vfmad_" : "lg_vfma_") + w;
    if (!has_helper(fn))
      helpers_.emplace_back(fn, "static inline " + v + " " + fn + "(" + v + " a, " + v + " b, " + v +
                                    " c) {\n#if defined(__clang__)\n#pragma clang fp contract(fast)\n"
                                    "  return a * b + c;\n#elif defined(" +
                                    (wide ? "FP_FAST_FMA" : "FP_FAST_FMAF") + ")\n  " + v +
                                    " r;\n  for (int i = 0; i < " + w +
                                    "; i++) r[i] = " + (wide ? "__builtin_fma" : "__builtin_fmaf") +
                                    "(a[i], b[i], c[i]);\n  return r;\n#else\n"
                                    "  return a * b + c;\n#endif\n}\n");
    return fn;
  }

  // Bools on vector lanes are -1/0 masks as wide as the lanes of the comparison that made them (what
  // the compiler's vector comparisons give): logical ops, `!` (x != true) and where on them are then
  // one bitwise op each, where 0/1 bytes cost a narrowing and a widening per op (relu's x <= 0,
  // composed as (x < 0) | !(x != 0), spent 13 instructions per vector on them). They become 0/1
  // bytes only where a bool is stored, cast to a number or reduced; a loaded bool is 0/1 bytes until
  // a mask is asked of it. Sets u's mask width; u is a bool op on vector lanes (not a cast or load).
  std::string mask_expr(const UOpPtr& u) {
    size_t w = 0;  // the operands' common width: the first mask operand's, else bytes
    if (u->op == Ops::CMPLT || u->op == Ops::CMPNE) {
      if (u->src[0]->dtype != kBool) {  // a comparison of numbers: the compiler's own mask
        w = lane_bytes(u->src[0]->dtype);
        mask_bytes_[u.get()] = w;
        return "(" + mask_type(w) + ")(" + scalar_operand(u->src[0]) + infix(u->op) +
               scalar_operand(u->src[1]) + ")";
      }
    }
    for (const auto& s : u->src) w = w ? w : mask_width(s);
    if (!w) w = 1;
    mask_bytes_[u.get()] = w;
    auto m = [&](size_t i, bool invert = false) { return as_mask(u->src[i], w, invert); };
    // Scalar masks combine as int (C's promotion), which clang will not narrow into a vector of
    // narrower lanes ("implicit conversion would cause truncation"; GCC does): a combination of
    // scalars only is cast back to the lanes' type, a scalar that then broadcasts.
    const std::string lane = "int" + std::to_string(w * 8) + "_t";
    auto of = [&](const std::string& expr, std::initializer_list<size_t> operands) {
      bool any_vector = false;
      for (size_t i : operands) any_vector = any_vector || vec(u->src[i]);
      return any_vector ? "(" + expr + ")" : "((" + lane + ")(" + expr + "))";
    };
    switch (u->op) {
      case Ops::AND:
      case Ops::MUL:
        return of(m(0) + " & " + m(1), {0, 1});
      case Ops::OR:
      case Ops::ADD:  // bool + bool as _Bool: 1 + 1 is true
      case Ops::MAX:
        return of(m(0) + " | " + m(1), {0, 1});
      case Ops::XOR:
      case Ops::CMPNE:
        return of(m(0) + " ^ " + m(1), {0, 1});
      case Ops::CMPLT:  // only false < true
        return of(m(0, true) + " & " + m(1), {0, 1});
      case Ops::WHERE:
        return of(of(m(0) + " & " + m(1), {0, 1}) + " | " + of(m(0, true) + " & " + m(2), {0, 2}), {0, 1, 2});
      default:
        mask_bytes_.erase(u.get());
        return "";  // lane by lane, 0/1 bytes
    }
  }

  // The lane width of bool vector x held as a mask, 0 if it is 0/1 bytes (or not a vector).
  size_t mask_width(const UOpPtr& x) const {
    auto it = mask_bytes_.find(x.get());
    return it != mask_bytes_.end() && vec(x) ? it->second : 0;
  }

  // Bool x as a mask operand of `bytes`-wide lanes (inverted: ~mask): a mask converted if its width
  // differs, 0/1 bytes negated, a scalar as a scalar of the lanes' type (which broadcasts).
  std::string as_mask(const UOpPtr& x, size_t bytes, bool invert = false) {
    std::string t = mask_type(bytes), n = name(x);
    if (!vec(x)) {
      std::string elem = "int" + std::to_string(bytes * 8) + "_t";
      return "((" + elem + ")" + (invert ? "(" + n + " - 1)" : "-" + n) + ")";
    }
    std::string m = mask_width(x) == bytes ? n
                    : mask_width(x)        ? "__builtin_convertvector(" + n + ", " + t + ")"
                                           : "(-__builtin_convertvector(" + n + ", " + t + "))";
    return invert ? "(~" + m + ")" : m;
  }

  // Bool vector x as 0/1 bytes (as _Bool stores them).
  std::string as_bytes(const UOpPtr& x) {
    size_t w = mask_width(x);
    if (!w) return name(x);
    return "(" + (w == 1 ? name(x) : "__builtin_convertvector(" + name(x) + ", " + vtype(kBool) + ")") +
           " & 1)";
  }

  // An operand of a vector op: a vector as it is; a scalar in the lanes' element type, since a
  // scalar broadcasts only without narrowing (a _Bool as int8_t).
  std::string scalar_operand(const UOpPtr& x) {
    if (vec(x)) return name(x);
    if (x->dtype == kBool) return "(int8_t)" + name(x);
    return name(x);
  }

  // Lanes of a where m is -1, of b where m is 0 (bitwise, so any value passes through unchanged).
  std::string select(DType dt, const std::string& m, const std::string& a, const std::string& b) {
    std::string mt = mask_type(dt);
    return "(" + vtype(dt) + ")((" + m + " & (" + mt + ")" + a + ") | (~" + m + " & (" + mt + ")" + b + "))";
  }

  // A vector of x's values: x itself, or a scalar repeated in every lane.
  std::string as_vector(const UOpPtr& x) {
    if (vec(x)) return name(x);
    return "((" + vtype(x->dtype) + ")" + lanes_of(scalar_operand(x)) + ")";
  }

  // The signed integer vector type as wide as dt's vector type (for masks and bitwise selects).
  std::string mask_type(DType dt) { return mask_type(lane_bytes(dt)); }
  std::string mask_type(size_t bytes) {
    std::string bits = std::to_string(bytes * 8);
    return vector_type("lg_mask" + bits + "x" + std::to_string(lanes()), "int" + bits + "_t", bytes);
  }

  // Declares vector type t of this kernel's lanes of elem (bytes each), once.
  std::string vector_type(const std::string& t, const std::string& elem, size_t bytes) {
    if (!typedefs_.count(t))
      typedefs_[t] = "typedef " + elem + " " + t + " __attribute__((vector_size(" +
                     std::to_string(bytes * lanes()) + ")));\n";
    return t;
  }

  bool vec(const UOpPtr& u) const { return lin_.is_vector(u.get()); }
  int64_t lanes() const { return lin_.lanes; }

  // A sum's lanes folded in halves (lane i plus lane i + 8, then + 4, + 2, + 1): a balanced tree
  // too, as whole-vector shuffles and adds: about 10 instructions for 16 floats where GCC makes 31
  // of a lane-by-lane tree (it extracts each lane). x @ W.T finishes one such sum per output
  // (GPT-2's LM head, lanes along the reduction: 8 sums per 48 x 8 vector FMAs); the head kernel
  // ran 10-15% faster with it (2 threads, interleaved runs).
  std::string halving_sum(const UOpPtr& u, const std::string& ind) {
    std::string h = name(u) + "h", out = ind + vtype(u->dtype) + " " + h + " = " + acc_name(u) + ";\n";
    for (int64_t half = lanes() / 2; half >= 1; half /= 2) {
      std::string lanes_from;
      for (int64_t l = 0; l < lanes(); l++) lanes_from += ", " + std::to_string(half + l % half);
      out += ind + h + " += __builtin_shufflevector(" + h + ", " + h + lanes_from + ");\n";
    }
    return out + ind + compute_type(u->dtype) + " " + name(u) + " = " + rounded_16(u->dtype, h + "[0]") +
           ";\n";
  }
  // A 16-bit float reduction's lanes are float32: its value is their combination rounded to its dtype,
  // as a scalar accumulator's is (the compiler fuzzer's seed 209047: a float16 product that overflows
  // to inf compared unrounded with its rounded self).
  std::string rounded_16(DType dt, const std::string& v) {
    return dt == kFloat16 || dt == kBFloat16 ? round_16(dt, v) : v;
  }
  // The accumulator's variable: the reduction's own name, unless AccFinish makes the value from it.
  std::string acc_name(const UOpPtr& red) { return name(red) + (lin_.acc_apart(red) ? "v" : ""); }
  std::string lanes_of(const std::string& v) {
    std::string out = "{";
    for (int64_t l = 0; l < lanes(); l++) out += (l ? ", " : "") + v;
    return out + "}";
  }

  // A value of node x: in a lane-by-lane expression, this lane of a vector.
  std::string ref(const UOpPtr& x) {
    std::string n = name(x);
    if (lane_ < 0 || !vec(x)) return n;
    n += "[" + std::to_string(lane_) + "]";
    return mask_bytes_.count(x.get()) ? "(" + n + " & 1)" : n;  // a mask lane is -1 for true
  }

  // The vector type of dt with this kernel's lanes (bools as 0/1 bytes), declared on first use.
  std::string vtype(DType dt) {
    std::string elem = dt == kBool ? "int8_t" : compute_type(dt);
    std::string t = "lg_" +
                    std::string(elem == "int8_t"   ? "int8"
                                : elem == "float"  ? "float"
                                : elem == "double" ? "double"
                                                   : elem.substr(0, elem.size() - 2)) +
                    "x" + std::to_string(lanes());
    return vector_type(t, elem, lane_bytes(dt));
  }

  // The accumulator's C type, by the one rule (codegen/linearize.h).
  std::string acc_type(const UOpPtr& red) { return compute_type(lin_.acc_dtype(red)); }

  std::string identity(const UOpPtr& red) {
    DType dt = red->dtype;
    Ops op = red->as<ReduceArg>().op;
    if (op == Ops::ADD) return is_float(dt) ? "0.0" : "0";
    if (op == Ops::MUL) return is_float(dt) ? "1.0" : "1";
    if (is_float(dt)) return "-" + (dt == kFloat64 ? lang_.inf64 : lang_.inf32);
    if (dt == kBool || is_unsigned(dt)) return "0";
    return literal(*const_int_uop(dt, dt == kInt64 ? INT64_MIN : -(int64_t(1) << (bit_width(dt) - 1))),
                   lang_);
  }

  // Signed + and * wrap in two's complement, as PyTorch's do. C compiles with -fwrapv; a language
  // whose compiler may assume they never overflow (OpenCL C: clang folded an argmin of int32 squares
  // that overflowed, the compiler fuzzer's seed 3 on CL) does the ones that can overflow in the
  // unsigned type, where wrapping is defined. Index math, whose bounds the IR knows, stays as it is.
  bool may_overflow(const UOpPtr& u) const {
    if (lang_.signed_wraps) return false;
    if (u->dtype == kInt32) return true;
    return u->dtype == kInt64 && (u->vmin() == INT64_MIN || u->vmax() == INT64_MAX);
  }
  std::string wrapping(DType dt, Ops op, const std::string& a, const std::string& b) const {
    const std::string ut = dt == kInt32 ? "uint32_t" : "uint64_t";
    return "(" + compute_type(dt) + ")((" + ut + ")" + a + infix(op) + "(" + ut + ")" + b + ")";
  }

  std::string max_expr(DType dt, const std::string& a, const std::string& b) {
    if (dt == kFloat64) return "lg_fmax(" + a + ", " + b + ")";
    if (is_float(dt)) return "lg_fmaxf(" + a + ", " + b + ")";
    return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
  }

  std::string divmod(const UOpPtr& u, const char* c_op, const char* helper) {
    const UOpPtr &a = u->src[0], &b = u->src[1];
    std::string x = ref(a), y = ref(b);
    // Index math and known-positive divisors need no check: C's / and % agree with floor there.
    bool safe_divisor = b->is_const() && b->const_int() > 0;
    bool non_negative = is_unsigned(a->dtype) || (a->dtype == kInt64 && a->vmin() >= 0);
    if (safe_divisor && non_negative) return x + " " + c_op + " " + y;
    std::string t = compute_type(u->dtype);
    if (!has_helper(t)) helpers_.emplace_back(t, int_helpers(t, is_unsigned(u->dtype)));
    return std::string("lg_") + helper + "_" + t + "(" + x + ", " + y + ", &err)";
  }

  // A float16 or bfloat16 result, computed in float, rounded to its dtype after every op, as
  // PyTorch rounds after each: the value a kernel computes and compares is then the value it
  // stores (a fused argmin of x / y compared unrounded quotients with the rounded minimum it had
  // stored, and matched none). Selections (max, where) and loads are already exact.
  std::string expr(const UOpPtr& u) {
    std::string e = unrounded_expr(u);
    bool sixteen = u->dtype == kFloat16 || u->dtype == kBFloat16;
    if (!sixteen || u->op == Ops::LOAD || u->op == Ops::WHERE || u->op == Ops::MAX || u->op == Ops::CAST)
      return e;
    return round_16(u->dtype, e);
  }
  static std::string round_16(DType dt, const std::string& e) {
    return dt == kFloat16 ? "lg_h2f(lg_f2h(" + e + "))" : "lg_bf2f(lg_f2bf(" + e + "))";
  }

  std::string unrounded_expr(const UOpPtr& u) {
    auto s = [&](size_t i) { return ref(u->src[i]); };
    bool f32 = is_float(u->dtype) && u->dtype != kFloat64;
    std::string fs = f32 && lang_.float_suffix ? "f" : "";
    switch (u->op) {
      case Ops::LOAD: {
        std::string v = s(0) + "[" + s(1) + "]";
        if (u->dtype == kFloat16) v = "lg_h2f(" + v + ")";
        if (u->dtype == kBFloat16) v = "lg_bf2f(" + v + ")";
        if (u->src.size() == 3) v = s(2) + " ? " + v + " : (" + compute_type(u->dtype) + ")0";
        return v;
      }
      case Ops::EXP2: {
        // exp(x) reaches us as exp2(x * log2(e)); e^x from x itself is exact where the product is not.
        // float32 (and the 16-bit floats, computed in it) take the vector lanes' series, one lane.
        const UOpPtr& m = u->src[0];
        const bool natural = m->op == Ops::MUL && m->src[1]->is_const(std::numbers::log2e);
        const std::string arg = natural ? ref(m->src[0]) : s(0);
        if (f32) return exp_helper(natural, false) + "(" + arg + ")";
        return (natural ? "exp(" : "exp2(") + arg + ")";
      }
      case Ops::LOG2:
        return "log2" + fs + "(" + s(0) + ")";
      case Ops::SIN: {
        // cos(x) reaches us as sin(pi/2 + x * -1).
        const UOpPtr& a = u->src[0];
        if (a->op == Ops::ADD && a->src[0]->is_const(std::numbers::pi / 2) && a->src[1]->op == Ops::MUL &&
            a->src[1]->src[1]->is_const(-1))
          return "cos" + fs + "(" + ref(a->src[1]->src[0]) + ")";
        return "sin" + fs + "(" + s(0) + ")";
      }
      case Ops::SQRT:
        return "sqrt" + fs + "(" + s(0) + ")";
      case Ops::RECIPROCAL:
        return (f32 ? "1.0f / " : "1.0 / ") + s(0);
      case Ops::CAST: {
        DType to = u->dtype;
        std::string x = s(0);  // a 16-bit float source already holds a value of its dtype (expr)
        if (to == kBool) return x + " != 0";
        // A float to an unsigned type goes through int64, so a negative value wraps (-1.0 is 255 in
        // uint8) on every device, as PyTorch's CPU casts: C leaves it undefined, and x86 code wraps
        // where OpenCL saturates to 0. uint64 takes values past 2^63 directly.
        if (is_float(u->src[0]->dtype) && is_unsigned(to) && to != kBool)
          return to == kUInt64 ? "(" + x + " < 0 ? (uint64_t)(int64_t)" + x + " : (uint64_t)" + x + ")"
                               : "(" + compute_type(to) + ")(int64_t)" + x;
        std::string v = "(" + compute_type(to) + ")" + x;
        if (to == kFloat16) return "lg_h2f(lg_f2h(" + v + "))";  // round to what float16 can hold
        if (to == kBFloat16) return "lg_bf2f(lg_f2bf(" + v + "))";
        return v;
      }
      case Ops::MUL:
        // log(x) reaches us as log2(x) * ln(2).
        if (u->src[0]->op == Ops::LOG2 && u->src[1]->is_const(std::numbers::ln2))
          return "log" + fs + "(" + ref(u->src[0]->src[0]) + ")";
        // x * (1/y) is rendered as x / y: one rounding, as PyTorch's division.
        if (is_float(u->dtype) && u->src[1]->op == Ops::RECIPROCAL)
          return s(0) + " / " + ref(u->src[1]->src[0]);
        return may_overflow(u) ? wrapping(u->dtype, Ops::MUL, s(0), s(1)) : s(0) + infix(Ops::MUL) + s(1);
      case Ops::ADD:
        return may_overflow(u) ? wrapping(u->dtype, Ops::ADD, s(0), s(1)) : s(0) + infix(Ops::ADD) + s(1);
      case Ops::MAX:
        return max_expr(u->dtype, s(0), s(1));
      case Ops::AND:
      case Ops::OR:
      case Ops::XOR:
      case Ops::CMPLT:
      case Ops::CMPNE:
        return s(0) + infix(u->op) + s(1);
      case Ops::IDIV:
        return divmod(u, "/", "idiv");
      case Ops::MOD:
        return divmod(u, "%", "mod");
      case Ops::SHL:
      case Ops::SHR: {
        std::string t = compute_type(u->dtype);
        if (!has_helper("lg_shift_" + t)) helpers_.emplace_back("lg_shift_" + t, shift_helpers(u->dtype));
        return std::string(u->op == Ops::SHL ? "lg_shl_" : "lg_shr_") + t + "(" + s(0) + ", " + s(1) + ")";
      }
      case Ops::WHERE:
        return s(0) + " ? " + s(1) + " : " + s(2);
      case Ops::CHECK_INDEX: {
        IndexCheck c = IndexCheck::from(u->as<std::vector<int64_t>>());
        auto lit = [&](int64_t v) { return literal(*index_const(v), lang_); };
        std::string range = s(0) + ", " + lit(c.lo) + ", " + lit(c.hi) + ", ";
        if (c.exempt) range += lit(*c.exempt) + ", ";
        return std::string(c.exempt ? "lg_check_index_or(" : "lg_check_index(") + range +
               std::to_string(c.error_bit) + ", &err)";
      }
      default:
        throw Error("render_c: no C for " + std::string(op_name(u->op)));
    }
  }

  const CStyleLanguage& lang_;
  const Kernel& k_;
  const LinearKernel& lin_;
  const bool work_groups_;  // one work-item per global index (else the CPU's thread slices)
  NodeNames names_;
  std::unordered_map<const UOp*, int> users_;                 // how many of the kernel's steps read each node
  std::vector<std::pair<std::string, std::string>> helpers_;  // name, code
  bool has_helper(const std::string& n) const {
    return std::any_of(helpers_.begin(), helpers_.end(), [&](const auto& h) { return h.first == n; });
  }
  std::unordered_map<const UOp*, size_t> mask_bytes_;  // bool vectors held as masks: their lane width
  std::vector<DType> var_dtypes_;
  std::map<std::string, std::string> typedefs_;
  int64_t lane_ = -1;         // the lane a lane-by-lane expression is for (-1: scalar code)
  int strip_indent_ = 0;      // two spaces more inside each strip-mined loop (polled_loop)
  std::vector<UOpPtr> open_;  // the loops open at the line being written, innermost last (prefetch)
};

}  // namespace

std::string kernel_head_prefix(const CStyleLanguage& lang, const Kernel& k) {
  if (!lang.launch_bounds) return lang.kernel_prefix;
  return lang.kernel_prefix + "__launch_bounds__(" + std::to_string(work_groups(k, lang.target).size) + ") ";
}

std::string render_c_style(const CStyleLanguage& lang, const Kernel& k, const LinearKernel& lin) {
  if (k.tensor_core) return render_tensor_core(lang, k);
  return CRenderer(lang, k, lin).render();
}

std::vector<DType> kernel_var_dtypes(const Kernel& k) {
  std::vector<DType> out(k.vars.size(), kInt64);
  for (const UOp* u : toposort(k.sink.get()))
    if (u->op == Ops::DEFINE_VAR) out[static_cast<size_t>(u->as<int64_t>())] = u->dtype;
  return out;
}

}  // namespace lazygrad
