// PyTorch-parity fixture harness, shared by the tests/test_*.cpp files that check lazygrad against
// PyTorch through text fixtures (tests/fixtures/*.txt, written by scripts that use
// scripts/fixtures_lib.py, whose docstring documents the format).
//
// Header-only: only tests/test_*.cpp are compiled, so everything here is `inline` (one definition
// per test binary) in namespace `fixtures`.
//
// A test file is its op table plus one macro:
//
//   #include "fixture_harness.h"
//   namespace {
//   using fixtures::Case; using fixtures::Ins; using lazygrad::Tensor;
//   const fixtures::OpTable& ops() {
//     static const fixtures::OpTable table = {
//         {"exp", [](const Case&, const Ins& x) { return x.at(0).exp(); }},
//         {"add.tt", [](const Case&, const Ins& x) { return x.at(0) + x.at(1); }},
//         {"sum", [](const Case& c, const Ins& x) { return x.at(0).sum(c.axes("axes"), c.flag("keepdim")); }},
//     };
//     return table;
//   }
//   LAZYGRAD_FIXTURE_SUITE(MathParity, ops(), "math.txt")
//   }  // namespace
//
// Each case becomes the test Fixtures/MathParity.Case/<case name>; MathParityFixtures.LoadedAndComplete
// checks that the files load and that the table and the cases cover each other. The directory comes
// from LAZYGRAD_TEST_FIXTURES (CTest sets it; by hand: LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures).
//
// What a case checks: the op's output against PyTorch's (dtype and shape exactly, integers and bools
// exactly, floats within a per-dtype tolerance or the case's `tol`; NaN matches NaN, inf matches inf
// of the same sign). With `requires_grad` lines, the inputs named there are built as leaves
// (requires_grad(true) on the base tensor, before the case's views), and the gradients of
// sum(out * upstream) with respect to them are compared with PyTorch's `grad` lines (tolerance:
// `gradtol`, else `tol`, else the per-dtype default).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "lazygrad/lazygrad.h"
#include "renderer/renderer.h"
#include "runtime/device.h"

namespace fixtures {

using lazygrad::DType;
using lazygrad::Scalar;
using lazygrad::Shape;
using lazygrad::Tensor;

// ------------------------------------------------------------------ dtype names (PyTorch's spelling)

inline const std::vector<std::pair<std::string, DType>>& dtype_names() {
  static const std::vector<std::pair<std::string, DType>> names = {
      {"bool", lazygrad::kBool},        {"uint8", lazygrad::kUInt8},     {"int8", lazygrad::kInt8},
      {"int16", lazygrad::kInt16},      {"uint16", lazygrad::kUInt16},   {"int32", lazygrad::kInt32},
      {"uint32", lazygrad::kUInt32},    {"int64", lazygrad::kInt64},     {"uint64", lazygrad::kUInt64},
      {"float16", lazygrad::kFloat16},  {"bfloat16", lazygrad::kBFloat16}, {"float32", lazygrad::kFloat32},
      {"float64", lazygrad::kFloat64}};
  return names;
}

inline DType parse_dtype(const std::string& name) {
  for (const auto& [n, dt] : dtype_names())
    if (n == name) return dt;
  throw std::runtime_error("fixture: unknown dtype '" + name + "'");
}

inline std::string name_of(DType dt) {
  for (const auto& [n, d] : dtype_names())
    if (d == dt) return n;
  return "dtype#" + std::to_string(static_cast<int>(dt));
}

inline bool is_float_name(const std::string& n) {
  return n == "float16" || n == "bfloat16" || n == "float32" || n == "float64";
}

inline std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// ------------------------------------------------------------------ half conversions (for from_bytes)

inline uint16_t float_to_half_bits(float f) {  // round to nearest even
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t mant = x & 0x7fffffu;
  const int exp = static_cast<int>((x >> 23) & 0xffu);
  if (exp == 0xff) return sign | 0x7c00u | (mant ? 0x200u : 0u);
  const int e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00u;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t m = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  uint16_t h = static_cast<uint16_t>(sign | (e << 10) | (mant >> 13));
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rolls into the exponent correctly
  return h;
}

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// ------------------------------------------------------------------ fixture model

using Tokens = std::vector<std::string>;

struct Arg {
  std::string kind;  // int float bool ints none dtype str
  Tokens toks;
};

// A tensor as a fixture line gives it: dtype, shape and row-major values (the `out`, `upstream` and
// `grad` lines, and an input's base tensor).
struct TensorSpec {
  std::string dtype;
  Shape shape;
  Tokens values;
};
using OutputSpec = TensorSpec;

struct InputSpec : TensorSpec {
  std::vector<Tokens> views;  // each: kind, args...; applied in order after the base is built
  bool requires_grad = false;
};

inline int64_t to_i64(const std::string& s) {
  size_t pos = 0;
  const long long v = std::stoll(s, &pos);
  if (pos != s.size()) throw std::runtime_error("fixture: bad integer '" + s + "'");
  return v;
}

inline Scalar make_scalar(const std::string& kind, const std::string& tok) {
  if (kind == "int") return Scalar(to_i64(tok));
  if (kind == "float") return Scalar(std::strtod(tok.c_str(), nullptr));
  if (kind == "bool") return Scalar(tok == "1");
  throw std::runtime_error("fixture: '" + kind + "' is not a scalar kind");
}

using Tolerance = std::pair<double, double>;  // rtol, atol

struct Case {
  std::string name, file;
  int line = 0;
  std::string op;
  std::vector<std::pair<std::string, Arg>> args;
  std::vector<InputSpec> ins;
  OutputSpec out;
  std::optional<Tolerance> tol;
  // gradients (all empty when no input requires grad)
  std::optional<TensorSpec> upstream;
  std::vector<std::pair<size_t, TensorSpec>> grads;  // input index -> expected gradient
  std::optional<Tolerance> gradtol;

  bool wants_grad() const { return !grads.empty(); }

  // ---- the op's arguments (`arg` lines), for the op tables
  const Arg* find(const std::string& key) const {
    for (const auto& [k, a] : args)
      if (k == key) return &a;
    return nullptr;
  }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  const Arg& get(const std::string& key) const {
    const Arg* a = find(key);
    if (!a) throw std::runtime_error("fixture: case " + name + " lacks arg '" + key + "'");
    return *a;
  }
  int64_t i(const std::string& key) const { return to_i64(get(key).toks.at(0)); }
  int64_t i_or(const std::string& key, int64_t dflt) const { return has(key) ? i(key) : dflt; }
  double f(const std::string& key) const { return std::strtod(get(key).toks.at(0).c_str(), nullptr); }
  double f_or(const std::string& key, double dflt) const { return has(key) ? f(key) : dflt; }
  bool flag(const std::string& key) const { return has(key) && get(key).toks.at(0) == "1"; }
  std::string str(const std::string& key) const { return get(key).toks.at(0); }
  std::vector<int64_t> ints(const std::string& key) const {
    std::vector<int64_t> v;
    for (const auto& t : get(key).toks) v.push_back(to_i64(t));
    return v;
  }
  std::optional<int64_t> opt_int(const std::string& key) const {
    const Arg& a = get(key);
    if (a.kind == "none") return std::nullopt;
    return to_i64(a.toks.at(0));
  }
  Scalar scalar(const std::string& key) const {
    const Arg& a = get(key);
    return make_scalar(a.kind, a.toks.at(0));
  }
  DType dtype(const std::string& key) const { return parse_dtype(str(key)); }
  std::optional<DType> opt_dtype(const std::string& key) const {
    return has(key) ? std::optional<DType>(dtype(key)) : std::nullopt;
  }
  lazygrad::Axes axes(const std::string& key) const {  // absent: all axes; int: Axes(int); ints: a list
    if (!has(key)) return lazygrad::Axes();
    const Arg& a = get(key);
    if (a.kind == "int") return lazygrad::Axes(i(key));
    return lazygrad::Axes(ints(key));
  }
  // The op table key: "<op>.<form>" when the case has a form argument, else "<op>".
  std::string key() const { return has("form") ? op + "." + str("form") : op; }

  std::string describe() const {
    std::ostringstream os;
    os << "case " << name << " (" << file << ":" << line << "): op " << key();
    for (const auto& [k, a] : args) {
      if (k == "form") continue;
      os << " " << k << "=" << a.kind;
      for (const auto& t : a.toks) os << ":" << t;
    }
    for (size_t n = 0; n < ins.size(); ++n) {
      os << "\n  input " << n << ": " << ins[n].dtype << shape_text(ins[n].shape);
      if (ins[n].values.size() <= 12) {
        os << " {";
        for (size_t j = 0; j < ins[n].values.size(); ++j) os << (j ? " " : "") << ins[n].values[j];
        os << "}";
      }
      if (ins[n].requires_grad) os << " requires_grad";
      for (const auto& v : ins[n].views) {
        os << " ." << v[0] << "(";
        for (size_t j = 1; j < v.size(); ++j) os << (j > 1 ? "," : "") << v[j];
        os << ")";
      }
    }
    os << "\n  expected: " << out.dtype << shape_text(out.shape);
    return os.str();
  }
};

// ------------------------------------------------------------------ loading

inline Tokens split(const std::string& line) {
  Tokens t;
  std::istringstream is(line);
  for (std::string w; is >> w;) t.push_back(w);
  return t;
}

inline Shape parse_shape(const std::string& tok) {
  if (tok.size() < 2 || tok.front() != '[' || tok.back() != ']')
    throw std::runtime_error("fixture: bad shape '" + tok + "'");
  Shape s;
  std::string body = tok.substr(1, tok.size() - 2);
  std::istringstream is(body);
  for (std::string d; std::getline(is, d, ',');) s.push_back(to_i64(d));
  return s;
}

// The cases of one or more fixture files, by name and in file order.
struct FixtureSet {
  std::map<std::string, Case> cases;
  std::vector<std::string> order;
  std::string error;  // set when the fixtures could not be loaded
};

// Parses one file into `set`; throws std::runtime_error naming file:line on a malformed record.
inline void load_file(const std::filesystem::path& path, FixtureSet& set) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::optional<Case> cur;
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(path.string() + ":" + std::to_string(lineno) + ": " + why);
  };
  // "<tag> <dtype> [<shape>] <values...>" starting at token `from`
  auto tensor_spec = [&](const Tokens& t, size_t from, const std::string& tag) {
    if (t.size() < from + 2) fail("'" + tag + "' needs a dtype and a shape");
    return TensorSpec{t[from], parse_shape(t[from + 1]), Tokens(t.begin() + static_cast<std::ptrdiff_t>(from) + 2, t.end())};
  };
  auto tolerance = [&](const Tokens& t) {
    if (t.size() != 3) fail("'" + t[0] + "' needs <rtol> <atol>");
    return Tolerance(std::strtod(t[1].c_str(), nullptr), std::strtod(t[2].c_str(), nullptr));
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    Tokens t = split(line);
    if (t.empty()) continue;
    const std::string& tag = t[0];
    if (tag == "case") {
      if (cur) fail("'case' inside a case");
      if (t.size() != 2) fail("'case' needs a name");
      cur.emplace();
      cur->name = t[1];
      cur->file = path.filename().string();
      cur->line = lineno;
      continue;
    }
    if (!cur) fail("'" + tag + "' outside a case");
    if (tag == "op") {
      cur->op = t.at(1);
    } else if (tag == "arg") {
      if (t.size() < 3) fail("'arg' needs a key and a kind");
      cur->args.emplace_back(t[1], Arg{t[2], Tokens(t.begin() + 3, t.end())});
    } else if (tag == "in") {
      InputSpec spec;
      static_cast<TensorSpec&>(spec) = tensor_spec(t, 1, tag);
      cur->ins.push_back(std::move(spec));
    } else if (tag == "view") {
      if (cur->ins.empty()) fail("'view' before any 'in'");
      cur->ins.back().views.emplace_back(t.begin() + 1, t.end());
    } else if (tag == "requires_grad") {
      if (t.size() != 2) fail("'requires_grad' needs an input index");
      const int64_t k = to_i64(t[1]);
      if (k < 0 || static_cast<size_t>(k) >= cur->ins.size()) fail("'requires_grad " + t[1] + "': no such input");
      if (!is_float_name(cur->ins[static_cast<size_t>(k)].dtype)) fail("'requires_grad " + t[1] + "': not a float input");
      cur->ins[static_cast<size_t>(k)].requires_grad = true;
    } else if (tag == "out") {
      cur->out = tensor_spec(t, 1, tag);
    } else if (tag == "upstream") {
      cur->upstream = tensor_spec(t, 1, tag);
    } else if (tag == "grad") {
      if (t.size() < 2) fail("'grad' needs an input index");
      const int64_t k = to_i64(t[1]);
      if (k < 0 || static_cast<size_t>(k) >= cur->ins.size()) fail("'grad " + t[1] + "': no such input");
      cur->grads.emplace_back(static_cast<size_t>(k), tensor_spec(t, 2, tag));
    } else if (tag == "tol") {
      cur->tol = tolerance(t);
    } else if (tag == "gradtol") {
      cur->gradtol = tolerance(t);
    } else if (tag == "end") {
      if (cur->op.empty() || cur->out.dtype.empty()) fail("case " + cur->name + " lacks 'op' or 'out'");
      // every requires_grad input has exactly one grad line, and the upstream is there to use
      for (size_t k = 0; k < cur->ins.size(); ++k) {
        const auto n = std::count_if(cur->grads.begin(), cur->grads.end(), [&](const auto& g) { return g.first == k; });
        if (cur->ins[k].requires_grad != (n == 1) || n > 1)
          fail("case " + cur->name + ": input " + std::to_string(k) + " needs one 'grad' line iff it has 'requires_grad'");
      }
      if (cur->wants_grad() && !cur->upstream) fail("case " + cur->name + " has 'grad' lines but no 'upstream'");
      if (set.cases.count(cur->name)) fail("duplicate case name " + cur->name);
      set.order.push_back(cur->name);
      set.cases.emplace(cur->name, std::move(*cur));
      cur.reset();
    } else {
      fail("unknown record '" + tag + "'");
    }
  }
  if (cur) throw std::runtime_error(path.string() + ": case " + cur->name + " has no 'end'");
}

// The fixture directory: LAZYGRAD_TEST_FIXTURES, else the source tree's (compiled in); empty if neither.
inline std::string fixture_dir() {
  const char* dir = std::getenv("LAZYGRAD_TEST_FIXTURES");
#ifdef LAZYGRAD_FIXTURE_DIR
  if (!dir || !*dir) dir = LAZYGRAD_FIXTURE_DIR;  // the source tree's, compiled in by CMake
#endif
  return dir ? dir : "";
}

// The cases of the named files (relative to $LAZYGRAD_TEST_FIXTURES), loaded once per distinct list.
// A load failure is kept in FixtureSet::error (and reported by every test) rather than thrown, so
// the test binary still starts and says what is wrong.
inline const FixtureSet& load_fixture_set(const std::vector<std::string>& files) {
  static std::map<std::vector<std::string>, std::unique_ptr<FixtureSet>> loaded;
  auto& slot = loaded[files];
  if (slot) return *slot;
  slot = std::make_unique<FixtureSet>();
  FixtureSet& set = *slot;
  const std::string dir = fixture_dir();
  if (dir.empty()) {
    set.error =
        "LAZYGRAD_TEST_FIXTURES is not set. Point it at the fixture directory, e.g.\n"
        "  LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/<test binary>\n"
        "(the fixtures are written by the scripts/*.py generators, e.g. /usr/bin/python3 scripts/make_fixtures.py)";
    return set;
  }
  try {
    if (files.empty()) throw std::runtime_error("no fixture files named");
    for (const auto& f : files) load_file(std::filesystem::path(dir) / f, set);
    if (set.order.empty()) throw std::runtime_error("the fixture files hold no cases");
  } catch (const std::exception& e) {
    set.error = std::string("loading the fixtures failed: ") + e.what();
    set.cases.clear();
    set.order.clear();
  }
  return set;
}

// The gtest parameters of a set: its case names, or one placeholder whose test reports the error.
// LAZYGRAD_PARITY_SAMPLE=1 keeps the first case of each op and dtype (of its output and its first
// input): what CI runs on a device whose compiler is slow to start (docs/devices.md).
inline std::vector<std::string> case_names(const FixtureSet& set) {
  if (!set.error.empty() || set.order.empty()) return {"fixtures_not_loaded"};
  const char* sample = std::getenv("LAZYGRAD_PARITY_SAMPLE");
  if (!sample || std::string(sample) != "1") return set.order;
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& name : set.order) {
    const Case& c = set.cases.at(name);
    if (seen.insert(c.op + "/" + c.out.dtype + "/" + (c.ins.empty() ? "" : c.ins[0].dtype)).second)
      out.push_back(name);
  }
  return out;
}

// ------------------------------------------------------------------ building inputs

template <class T>
Tensor from_ints(const Tokens& v, const Shape& shape) {
  std::vector<T> data;
  data.reserve(v.size());
  for (const auto& s : v) {
    if constexpr (std::is_same_v<T, uint64_t>) data.push_back(static_cast<T>(std::stoull(s)));
    else data.push_back(static_cast<T>(to_i64(s)));
  }
  return Tensor::from_vector<T>(data, shape);
}

template <uint16_t (*Convert)(float)>
Tensor from_half_bits(const Tokens& v, const Shape& shape, DType dt) {
  std::vector<uint16_t> bits;
  bits.reserve(v.size());
  // the values are exact half values, so going through float loses nothing
  for (const auto& s : v) bits.push_back(Convert(static_cast<float>(std::strtod(s.c_str(), nullptr))));
  return Tensor::from_bytes(bits.data(), bits.size() * sizeof(uint16_t), shape, dt);
}

using Builder = std::function<Tensor(const Tokens&, const Shape&)>;

inline const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"bool",
       [](const Tokens& v, const Shape& s) {
         std::vector<bool> d;
         for (const auto& x : v) d.push_back(x == "1");
         return Tensor::from_vector<bool>(d, s);
       }},
      {"uint8", from_ints<uint8_t>},
      {"int8", from_ints<int8_t>},
      {"int16", from_ints<int16_t>},
      {"uint16", from_ints<uint16_t>},
      {"int32", from_ints<int32_t>},
      {"uint32", from_ints<uint32_t>},
      {"int64", from_ints<int64_t>},
      {"uint64", from_ints<uint64_t>},
      {"float32",
       [](const Tokens& v, const Shape& s) {
         std::vector<float> d;
         for (const auto& x : v) d.push_back(std::strtof(x.c_str(), nullptr));
         return Tensor::from_vector<float>(d, s);
       }},
      {"float64",
       [](const Tokens& v, const Shape& s) {
         std::vector<double> d;
         for (const auto& x : v) d.push_back(std::strtod(x.c_str(), nullptr));
         return Tensor::from_vector<double>(d, s);
       }},
      {"float16",
       [](const Tokens& v, const Shape& s) { return from_half_bits<float_to_half_bits>(v, s, lazygrad::kFloat16); }},
      {"bfloat16",
       [](const Tokens& v, const Shape& s) { return from_half_bits<float_to_bf16_bits>(v, s, lazygrad::kBFloat16); }},
  };
  return table;
}

inline std::optional<int64_t> opt_tok(const std::string& t) {
  if (t == "none") return std::nullopt;
  return to_i64(t);
}

inline std::vector<int64_t> int_toks(const Tokens& v, size_t from) {
  std::vector<int64_t> out;
  for (size_t k = from; k < v.size(); ++k) out.push_back(to_i64(v[k]));
  return out;
}

// view kind -> how to apply it; v[0] is the kind, v[1..] its arguments
using ViewFn = std::function<Tensor(const Tensor&, const Tokens&)>;

inline const std::map<std::string, ViewFn>& view_table() {
  static const std::map<std::string, ViewFn> table = {
      {"permute", [](const Tensor& x, const Tokens& v) { return x.permute(int_toks(v, 1)); }},
      {"transpose", [](const Tensor& x, const Tokens& v) { return x.transpose(to_i64(v.at(1)), to_i64(v.at(2))); }},
      {"slice",
       [](const Tensor& x, const Tokens& v) {
         return x.slice(to_i64(v.at(1)), opt_tok(v.at(2)), opt_tok(v.at(3)), to_i64(v.at(4)));
       }},
      {"flip", [](const Tensor& x, const Tokens& v) { return x.flip(lazygrad::Axes(int_toks(v, 1))); }},
      {"expand", [](const Tensor& x, const Tokens& v) { return x.expand(int_toks(v, 1)); }},
      {"narrow",
       [](const Tensor& x, const Tokens& v) { return x.narrow(to_i64(v.at(1)), to_i64(v.at(2)), to_i64(v.at(3))); }},
      {"select", [](const Tensor& x, const Tokens& v) { return x.select(to_i64(v.at(1)), to_i64(v.at(2))); }},
      {"unsqueeze", [](const Tensor& x, const Tokens& v) { return x.unsqueeze(to_i64(v.at(1))); }},
      {"squeeze", [](const Tensor& x, const Tokens& v) { return x.squeeze(to_i64(v.at(1))); }},
      {"reshape", [](const Tensor& x, const Tokens& v) { return x.reshape(int_toks(v, 1)); }},
      {"pad",
       [](const Tensor& x, const Tokens& v) { return x.pad(int_toks(v, 3), make_scalar(v.at(1), v.at(2))); }},
  };
  return table;
}

// A tensor from a fixture line's dtype, shape and values (contiguous, no views).
inline Tensor make_tensor(const TensorSpec& spec) {
  auto b = builders().find(spec.dtype);
  if (b == builders().end()) throw std::runtime_error("fixture: no builder for dtype " + spec.dtype);
  return b->second(spec.values, spec.shape);
}

inline Tensor apply_views(Tensor t, const std::vector<Tokens>& views) {
  for (const auto& v : views) {
    auto f = view_table().find(v.at(0));
    if (f == view_table().end()) throw std::runtime_error("fixture: unknown view '" + v.at(0) + "'");
    t = f->second(t, v);
  }
  return t;
}

// An input as the op sees it: its base tensor with the views applied.
inline Tensor make_input(const InputSpec& in) { return apply_views(make_tensor(in), in.views); }

// ------------------------------------------------------------------ op tables

using Ins = std::vector<Tensor>;
// The lazygrad call of one op: the case gives the arguments, `inputs` the tensors (views applied).
using OpFn = std::function<Tensor(const Case&, const Ins& inputs)>;
using OpTable = std::map<std::string, OpFn>;  // Case::key() -> call

// ------------------------------------------------------------------ reading and comparing results

// Values as doubles (floats) or as 64-bit patterns (integers and bool; uint64 kept as its bits).
struct Values {
  bool is_float = false;
  bool is_u64 = false;
  std::vector<double> f;
  std::vector<int64_t> i;
  size_t size() const { return is_float ? f.size() : i.size(); }
  double as_double(size_t k) const {
    if (is_float) return f[k];
    return is_u64 ? static_cast<double>(static_cast<uint64_t>(i[k])) : static_cast<double>(i[k]);
  }
  std::string text(size_t k) const {
    if (is_float) {
      std::ostringstream os;
      os.precision(17);
      os << f[k];
      return os.str();
    }
    return is_u64 ? std::to_string(static_cast<uint64_t>(i[k])) : std::to_string(i[k]);
  }
};

template <class T>
Values read_as(const Tensor& t) {
  Values v;
  const std::vector<T> data = t.to_vector<T>();
  if constexpr (std::is_floating_point_v<T>) {
    v.is_float = true;
    v.f.assign(data.begin(), data.end());
  } else {
    v.is_u64 = std::is_same_v<T, uint64_t>;
    for (const auto& x : data) v.i.push_back(static_cast<int64_t>(x));
  }
  return v;
}

using Reader = std::function<Values(const Tensor&)>;

inline const std::map<DType, Reader>& readers() {
  static const std::map<DType, Reader> table = {
      {lazygrad::kBool, read_as<bool>},          {lazygrad::kUInt8, read_as<uint8_t>},
      {lazygrad::kInt8, read_as<int8_t>},        {lazygrad::kInt16, read_as<int16_t>},
      {lazygrad::kUInt16, read_as<uint16_t>},    {lazygrad::kInt32, read_as<int32_t>},
      {lazygrad::kUInt32, read_as<uint32_t>},    {lazygrad::kInt64, read_as<int64_t>},
      {lazygrad::kUInt64, read_as<uint64_t>},    {lazygrad::kFloat16, read_as<float>},
      {lazygrad::kBFloat16, read_as<float>},     {lazygrad::kFloat32, read_as<float>},
      {lazygrad::kFloat64, read_as<double>},
  };
  return table;
}

inline Values parse_expected(const TensorSpec& out) {
  Values v;
  v.is_float = is_float_name(out.dtype);
  v.is_u64 = out.dtype == "uint64";
  for (const auto& s : out.values) {
    if (out.dtype == "float32") v.f.push_back(std::strtof(s.c_str(), nullptr));
    else if (v.is_float) v.f.push_back(std::strtod(s.c_str(), nullptr));
    else if (v.is_u64) v.i.push_back(static_cast<int64_t>(std::stoull(s)));
    else v.i.push_back(to_i64(s));
  }
  return v;
}

inline Tolerance default_tolerance(const std::string& dtype) {
  if (dtype == "float64") return {1e-12, 1e-12};
  if (dtype == "float32") return {1e-5, 1e-6};
  return {1e-2, 1e-3};  // float16, bfloat16: lazygrad keeps fused intermediates in float32, torch rounds
}

inline bool float_close(double a, double e, double rtol, double atol) {
  if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
  if (std::isinf(e) || std::isinf(a)) return a == e;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

inline std::string index_text(size_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? static_cast<int64_t>(flat % static_cast<size_t>(shape[d])) : 0;
    flat = shape[d] ? flat / static_cast<size_t>(shape[d]) : flat;
  }
  return shape_text(idx);
}

inline std::string number_text(double x) {  // %g-like: 1e-12 stays 1e-12
  std::ostringstream os;
  os << x;
  return os.str();
}

// What a realized result looked like: dtype, shape and values read back with to_vector.
struct Actual {
  std::string dtype;
  Shape shape;
  Values values;
};

// Reads t back (this realizes it; lazygrad errors propagate to the caller).
inline Actual read_tensor(const Tensor& t) {
  return Actual{name_of(t.dtype()), t.shape(), readers().at(t.dtype())(t)};
}

// Compares a result with a fixture tensor, adding gtest failures that name `what` ("output",
// "grad of input 1"): dtype and shape exactly, then every element (integers exactly, floats within
// `tol`), listing the first ten differences with their indices.
inline void expect_matches(const Actual& actual, const TensorSpec& want, Tolerance tol, const std::string& what) {
  const Values expected = parse_expected(want);
  EXPECT_EQ(actual.dtype, want.dtype) << what << ": dtype differs from PyTorch's";
  ASSERT_EQ(shape_text(actual.shape), shape_text(want.shape)) << what << ": shape differs from PyTorch's";
  ASSERT_EQ(actual.values.size(), expected.size()) << what << ": to_vector returned a different element count";
  const auto [rtol, atol] = tol;
  size_t bad = 0;
  std::ostringstream detail;
  for (size_t k = 0; k < expected.size(); ++k) {
    bool ok;
    if (expected.is_float) {
      ok = float_close(actual.values.as_double(k), expected.f[k], rtol, atol);
    } else if (actual.values.is_float) {
      ok = false;  // dtype already reported; show the values anyway
    } else {
      ok = actual.values.i[k] == expected.i[k];
    }
    if (!ok && ++bad <= 10)
      detail << "\n    at " << index_text(k, want.shape) << " (flat " << k << "): expected " << expected.text(k)
             << ", got " << actual.values.text(k);
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << expected.size() << " elements differ"
                     << (expected.is_float ? " (rtol " + number_text(rtol) + ", atol " + number_text(atol) + ")"
                                           : std::string(" (exact)"))
                     << ":" << detail.str() << (bad > 10 ? "\n    ..." : "");
}

// ------------------------------------------------------------------ running one case

// How the runner gets gradients: out.gradient(leaves, upstream) (the default), or
// out.backward(upstream) and then each leaf's grad(). LAZYGRAD_TEST_GRAD_MODE=backward switches
// the default, so every fixture suite can exercise both paths without a rebuild.
enum class GradMode { kGradient, kBackward };

inline GradMode default_grad_mode() {
  const char* m = std::getenv("LAZYGRAD_TEST_GRAD_MODE");
  return m && std::string(m) == "backward" ? GradMode::kBackward : GradMode::kGradient;
}

// "what() of an exception" with its kind, for failure messages.
inline std::string exception_text(const std::exception& e) {
  if (dynamic_cast<const lazygrad::Error*>(&e)) return std::string("lazygrad::Error: ") + e.what();
  return std::string("exception (") + typeid(e).name() + "): " + e.what();
}

// Whether the default device's arithmetic keeps subnormal floats (its target says; FTZ=0 on the CPU).
inline bool default_device_keeps_subnormals() {
  return lazygrad::device(lazygrad::default_device()).renderer().target().keeps_subnormals;
}

// Whether a float the case reads or expects is subnormal (values inside the computation are not seen).
inline bool has_subnormals(const Case& c) {
  auto subnormal = [](const TensorSpec& t) {
    if (!is_float_name(t.dtype)) return false;
    const double tiny = t.dtype == "float64"   ? std::numeric_limits<double>::min()
                        : t.dtype == "float16" ? 6.103515625e-05
                                               : std::numeric_limits<float>::min();
    const Values v = parse_expected(t);
    for (size_t j = 0; j < v.size(); ++j)
      if (double x = std::fabs(v.as_double(j)); x != 0 && x < tiny) return true;
    return false;
  };
  if (subnormal(c.out)) return true;
  for (const auto& in : c.ins)
    if (subnormal(in)) return true;
  for (const auto& g : c.grads)
    if (subnormal(g.second)) return true;
  return false;
}

// A dtype the case reads or expects (an input, the output, a gradient) that the default device
// cannot hold (its target says: WGSL has no f64, an OpenCL device may lack cl_khr_fp64), or "" when
// it holds them all.
inline std::string dtype_the_device_lacks(const Case& c) {
  const lazygrad::Target& t = lazygrad::device(lazygrad::default_device()).renderer().target();
  auto lacks = [&](const std::string& dt) {
    return (dt == "float64" && !t.float64) || ((dt == "int64" || dt == "uint64") && !t.int64);
  };
  if (lacks(c.out.dtype)) return c.out.dtype;
  for (const auto& in : c.ins)
    if (lacks(in.dtype)) return in.dtype;
  for (const auto& g : c.grads)
    if (lacks(g.second.dtype)) return g.second.dtype;
  return "";
}

// Runs one case: builds the inputs (leaves first where the case wants gradients), calls the op from
// `ops`, builds the gradients, and compares the output and then each gradient with the fixture.
// Failures are gtest failures.
//
// The gradients are built from the still-lazy output, before anything is read back: reading the
// output realizes it, and a realized tensor stands for its buffer rather than for the graph that
// computed it, so differentiating it afterwards would see no path to the leaves. This is also how
// lazy code is meant to run: forward and backward realized together.
inline void run_fixture_case(const Case& c, const OpTable& ops, GradMode mode = default_grad_mode()) {
  SCOPED_TRACE(c.describe());
  if (!default_device_keeps_subnormals() && has_subnormals(c))
    GTEST_SKIP() << lazygrad::default_device() << " flushes subnormal floats to zero, and this case's values "
                 << "include subnormals, which PyTorch keeps (FTZ=0)";
  if (std::string dt = dtype_the_device_lacks(c); !dt.empty())
    GTEST_SKIP() << lazygrad::default_device() << " has no " << dt
                 << " (its target says; its buffers refuse it), and this case reads or expects one";
  auto fn = ops.find(c.key());
  ASSERT_NE(fn, ops.end()) << "the test has no entry for op '" << c.key() << "'";

  // Forward, lazily. A leaf is the base tensor: the case's views come after requires_grad, so they
  // are part of the differentiated graph (scripts/fixtures_lib.py differentiates w.r.t. the same base).
  std::vector<Tensor> leaves;  // in input order, one per requires_grad input
  Tensor out;
  try {
    Ins ins;
    for (const auto& in : c.ins) {
      Tensor base = make_tensor(in);
      if (in.requires_grad) base.requires_grad(true);
      ins.push_back(apply_views(base, in.views));
      if (in.requires_grad) leaves.push_back(base);
    }
    out = fn->second(c, ins);
  } catch (const std::exception& e) {
    FAIL() << "forward: " << exception_text(e);
  }
  ASSERT_TRUE(out.defined()) << "the op returned an undefined tensor";

  // Backward, lazily: d(sum(out * upstream)) / d(leaf), the quantity PyTorch's grad lines hold.
  // A failure here is reported after the forward check, which still runs.
  std::vector<Tensor> grads;
  std::string grad_error;
  if (c.wants_grad()) {
    try {
      const Tensor upstream = make_tensor(*c.upstream);
      if (mode == GradMode::kGradient) {
        grads = out.gradient(leaves, upstream);
        if (grads.size() != leaves.size())
          grad_error = "gradient() returned " + std::to_string(grads.size()) + " tensors for " +
                       std::to_string(leaves.size()) + " targets";
      } else {
        out.backward(upstream);
        for (const auto& leaf : leaves) grads.push_back(leaf.grad());
      }
    } catch (const std::exception& e) {
      grad_error = (mode == GradMode::kGradient ? "gradient(): " : "backward(): ") + exception_text(e);
    }
  }

  // Realize the output and the gradients in one schedule, then compare.
  Actual actual;
  try {
    std::vector<Tensor> all = {out};
    for (const auto& g : grads)
      if (g.defined()) all.push_back(g);
    lazygrad::realize(all);
    actual = read_tensor(out);
  } catch (const std::exception& e) {
    FAIL() << "realizing the output" << (grads.empty() ? "" : " and the gradients") << ": " << exception_text(e);
  }
  expect_matches(actual, c.out, c.tol ? *c.tol : default_tolerance(c.out.dtype), "output");
  if (!c.wants_grad()) return;
  ASSERT_TRUE(grad_error.empty()) << grad_error;

  size_t leaf = 0;
  for (size_t k = 0; k < c.ins.size(); ++k) {
    if (!c.ins[k].requires_grad) continue;
    const Tensor& g = grads[leaf++];
    const auto want = std::find_if(c.grads.begin(), c.grads.end(), [&](const auto& p) { return p.first == k; });
    const std::string what = "grad of input " + std::to_string(k);
    const Tolerance tol = c.gradtol ? *c.gradtol : c.tol ? *c.tol : default_tolerance(want->second.dtype);
    if (!g.defined()) {
      // PyTorch's grad of an unused input is None, written as zeros; an undefined grad matches that.
      const Values e = parse_expected(want->second);
      bool all_zero = true;
      for (size_t j = 0; j < e.size(); ++j) all_zero = all_zero && e.as_double(j) == 0.0;
      EXPECT_TRUE(all_zero) << what << ": no gradient reached this input, PyTorch's is nonzero";
      continue;
    }
    try {
      expect_matches(read_tensor(g), want->second, tol, what);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": reading it back threw: " << exception_text(e);
    }
  }
}

// Runs the case `name` of `set` (a fixture-set load error fails the test with its message).
inline void run_named_case(const FixtureSet& set, const std::string& name, const OpTable& ops,
                           GradMode mode = default_grad_mode()) {
  if (!set.error.empty()) FAIL() << set.error;
  if (set.order.empty()) FAIL() << "no fixture cases were found";
  run_fixture_case(set.cases.at(name), ops, mode);
}

// The set loaded, and the op table and the cases cover each other: every entry of the table has a
// case, and every case's op has an entry.
inline void expect_fixture_coverage(const FixtureSet& set, const OpTable& ops) {
  ASSERT_TRUE(set.error.empty()) << set.error;
  EXPECT_GT(set.cases.size(), 0u);
  std::map<std::string, int> per_op;
  for (const auto& [n, c] : set.cases) per_op[c.key()]++;
  for (const auto& [key, fn] : ops) {
    (void)fn;
    EXPECT_GT(per_op[key], 0) << "no fixture case exercises op '" << key << "'";
  }
  for (const auto& [key, count] : per_op)
    EXPECT_TRUE(ops.count(key)) << "fixtures use op '" << key << "' (" << count << " cases) the table lacks";
}

struct CaseParamName {
  std::string operator()(const ::testing::TestParamInfo<std::string>& info) const { return info.param; }
};

}  // namespace fixtures

// Defines the value-parameterized suite SUITE: one test Fixtures/SUITE.Case/<case> per case of the
// fixture files named after OPS (relative to $LAZYGRAD_TEST_FIXTURES), each run through OPS (an
// expression giving a const fixtures::OpTable&), plus SUITEFixtures.LoadedAndComplete.
//   LAZYGRAD_FIXTURE_SUITE(MathParity, math_ops(), "math.txt", "math_more.txt")
#define LAZYGRAD_FIXTURE_SUITE(SUITE, OPS, ...)                                                          \
  class SUITE : public ::testing::TestWithParam<std::string> {                                           \
   public:                                                                                               \
    static const ::fixtures::FixtureSet& fixture_set() { return ::fixtures::load_fixture_set({__VA_ARGS__}); } \
  };                                                                                                     \
  TEST_P(SUITE, Case) { ::fixtures::run_named_case(SUITE::fixture_set(), GetParam(), (OPS)); }          \
  INSTANTIATE_TEST_SUITE_P(Fixtures, SUITE, ::testing::ValuesIn(::fixtures::case_names(SUITE::fixture_set())), \
                           ::fixtures::CaseParamName());                                                 \
  TEST(SUITE##Fixtures, LoadedAndComplete) { ::fixtures::expect_fixture_coverage(SUITE::fixture_set(), (OPS)); }
