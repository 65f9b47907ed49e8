// PyTorch parity: every case in tests/fixtures/*.txt (written by scripts/make_fixtures.py, whose
// header documents the format) builds its inputs with Tensor::from_vector / from_bytes, applies
// views and then the op through the lazygrad API, and compares with PyTorch's result: dtype and
// shape exactly, integers and bools exactly, floats within a per-dtype tolerance (NaN matches NaN,
// inf matches inf of the same sign).
//
// The fixture directory comes from the environment: LAZYGRAD_TEST_FIXTURES=tests/fixtures.
// One test per case, named after it:  --gtest_filter='Fixtures/TorchParity.Case/softmax_*'
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
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lazygrad/lazygrad.h"

namespace {

using lazygrad::DType;
using lazygrad::Scalar;
using lazygrad::Shape;
using lazygrad::Tensor;

// ------------------------------------------------------------------ dtype names (PyTorch's spelling)

const std::vector<std::pair<std::string, DType>>& dtype_names() {
  static const std::vector<std::pair<std::string, DType>> names = {
      {"bool", lazygrad::kBool},        {"uint8", lazygrad::kUInt8},     {"int8", lazygrad::kInt8},
      {"int16", lazygrad::kInt16},      {"uint16", lazygrad::kUInt16},   {"int32", lazygrad::kInt32},
      {"uint32", lazygrad::kUInt32},    {"int64", lazygrad::kInt64},     {"uint64", lazygrad::kUInt64},
      {"float16", lazygrad::kFloat16},  {"bfloat16", lazygrad::kBFloat16}, {"float32", lazygrad::kFloat32},
      {"float64", lazygrad::kFloat64}};
  return names;
}

DType parse_dtype(const std::string& name) {
  for (const auto& [n, dt] : dtype_names())
    if (n == name) return dt;
  throw std::runtime_error("fixture: unknown dtype '" + name + "'");
}

std::string name_of(DType dt) {
  for (const auto& [n, d] : dtype_names())
    if (d == dt) return n;
  return "dtype#" + std::to_string(static_cast<int>(dt));
}

bool is_float_name(const std::string& n) {
  return n == "float16" || n == "bfloat16" || n == "float32" || n == "float64";
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// ------------------------------------------------------------------ half conversions (for from_bytes)

uint16_t float_to_half_bits(float f) {  // round to nearest even
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

uint16_t float_to_bf16_bits(float f) {
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

struct InputSpec {
  std::string dtype;
  Shape shape;
  Tokens values;
  std::vector<Tokens> views;  // each: kind, args...
};

struct OutputSpec {
  std::string dtype;
  Shape shape;
  Tokens values;
};

int64_t to_i64(const std::string& s) {
  size_t pos = 0;
  const long long v = std::stoll(s, &pos);
  if (pos != s.size()) throw std::runtime_error("fixture: bad integer '" + s + "'");
  return v;
}

Scalar make_scalar(const std::string& kind, const std::string& tok) {
  if (kind == "int") return Scalar(to_i64(tok));
  if (kind == "float") return Scalar(std::strtod(tok.c_str(), nullptr));
  if (kind == "bool") return Scalar(tok == "1");
  throw std::runtime_error("fixture: '" + kind + "' is not a scalar kind");
}

struct Case {
  std::string name, file;
  int line = 0;
  std::string op;
  std::vector<std::pair<std::string, Arg>> args;
  std::vector<InputSpec> ins;
  OutputSpec out;
  std::optional<std::pair<double, double>> tol;

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

Tokens split(const std::string& line) {
  Tokens t;
  std::istringstream is(line);
  for (std::string w; is >> w;) t.push_back(w);
  return t;
}

Shape parse_shape(const std::string& tok) {
  if (tok.size() < 2 || tok.front() != '[' || tok.back() != ']')
    throw std::runtime_error("fixture: bad shape '" + tok + "'");
  Shape s;
  std::string body = tok.substr(1, tok.size() - 2);
  std::istringstream is(body);
  for (std::string d; std::getline(is, d, ',');) s.push_back(to_i64(d));
  return s;
}

struct Registry {
  std::map<std::string, Case> cases;
  std::vector<std::string> order;
  std::string error;  // set when the fixtures could not be loaded
};

void load_file(const std::filesystem::path& path, Registry& reg) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::optional<Case> cur;
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(path.string() + ":" + std::to_string(lineno) + ": " + why);
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
      if (t.size() < 3) fail("'in' needs a dtype and a shape");
      cur->ins.push_back(InputSpec{t[1], parse_shape(t[2]), Tokens(t.begin() + 3, t.end()), {}});
    } else if (tag == "view") {
      if (cur->ins.empty()) fail("'view' before any 'in'");
      cur->ins.back().views.emplace_back(t.begin() + 1, t.end());
    } else if (tag == "out") {
      if (t.size() < 3) fail("'out' needs a dtype and a shape");
      cur->out = OutputSpec{t[1], parse_shape(t[2]), Tokens(t.begin() + 3, t.end())};
    } else if (tag == "tol") {
      cur->tol = std::make_pair(std::strtod(t.at(1).c_str(), nullptr), std::strtod(t.at(2).c_str(), nullptr));
    } else if (tag == "end") {
      if (cur->op.empty() || cur->out.dtype.empty()) fail("case " + cur->name + " lacks 'op' or 'out'");
      if (reg.cases.count(cur->name)) fail("duplicate case name " + cur->name);
      reg.order.push_back(cur->name);
      reg.cases.emplace(cur->name, std::move(*cur));
      cur.reset();
    } else {
      fail("unknown record '" + tag + "'");
    }
  }
  if (cur) throw std::runtime_error(path.string() + ": case " + cur->name + " has no 'end'");
}

Registry& registry() {
  static Registry reg = [] {
    Registry r;
    const char* dir = std::getenv("LAZYGRAD_TEST_FIXTURES");
    if (!dir || !*dir) {
      r.error =
          "LAZYGRAD_TEST_FIXTURES is not set. Point it at the fixture directory, e.g.\n"
          "  LAZYGRAD_TEST_FIXTURES=tests/fixtures ./test_ops_torch\n"
          "(the fixtures are written by: /usr/bin/python3 scripts/make_fixtures.py)";
      return r;
    }
    try {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      if (files.empty()) throw std::runtime_error(std::string("no *.txt fixture files in ") + dir);
      for (const auto& f : files) load_file(f, r);
    } catch (const std::exception& e) {
      r.error = std::string("loading the fixtures failed: ") + e.what();
      r.cases.clear();
      r.order.clear();
    }
    return r;
  }();
  return reg;
}

std::vector<std::string> case_names() {
  const Registry& r = registry();
  if (!r.error.empty() || r.order.empty()) return {"fixtures_not_loaded"};
  return r.order;
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
  for (const auto& s : v) bits.push_back(Convert(static_cast<float>(std::strtod(s.c_str(), nullptr))));
  return Tensor::from_bytes(bits.data(), bits.size() * sizeof(uint16_t), shape, dt);
}

using Builder = std::function<Tensor(const Tokens&, const Shape&)>;

const std::map<std::string, Builder>& builders() {
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

std::optional<int64_t> opt_tok(const std::string& t) {
  if (t == "none") return std::nullopt;
  return to_i64(t);
}

std::vector<int64_t> int_toks(const Tokens& v, size_t from) {
  std::vector<int64_t> out;
  for (size_t k = from; k < v.size(); ++k) out.push_back(to_i64(v[k]));
  return out;
}

// view kind -> how to apply it; v[0] is the kind, v[1..] its arguments
using ViewFn = std::function<Tensor(const Tensor&, const Tokens&)>;

const std::map<std::string, ViewFn>& view_table() {
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

Tensor make_input(const InputSpec& in) {
  auto b = builders().find(in.dtype);
  if (b == builders().end()) throw std::runtime_error("fixture: no builder for dtype " + in.dtype);
  Tensor t = b->second(in.values, in.shape);
  for (const auto& v : in.views) {
    auto f = view_table().find(v.at(0));
    if (f == view_table().end()) throw std::runtime_error("fixture: unknown view '" + v.at(0) + "'");
    t = f->second(t, v);
  }
  return t;
}

// ------------------------------------------------------------------ the op table

using Ins = std::vector<Tensor>;
using OpFn = std::function<Tensor(const Case&, const Ins&)>;

// a OP b, a OP scalar, scalar OP a through the C++ operators
#define LG_OPERATOR(NAME, OP)                                                                      \
  {NAME ".tt", [](const Case&, const Ins& x) { return x.at(0) OP x.at(1); }},                      \
      {NAME ".ts", [](const Case& c, const Ins& x) { return x.at(0) OP c.scalar("scalar"); }},     \
      {NAME ".st", [](const Case& c, const Ins& x) { return c.scalar("scalar") OP x.at(0); }}
// a.method(b) and a.method(scalar)
#define LG_METHOD(NAME, METHOD)                                                                    \
  {NAME ".method", [](const Case&, const Ins& x) { return x.at(0).METHOD(x.at(1)); }},             \
      {NAME ".method_s", [](const Case& c, const Ins& x) { return x.at(0).METHOD(c.scalar("scalar")); }}
// a.method(b) only
#define LG_TENSOR_METHOD(NAME, METHOD) \
  { NAME ".method", [](const Case&, const Ins& x) { return x.at(0).METHOD(x.at(1)); } }
// x.method()
#define LG_UNARY(NAME, METHOD) \
  { NAME, [](const Case&, const Ins& x) { return x.at(0).METHOD(); } }
// reductions: no arguments at all calls x.op(); otherwise x.op(axes, keepdim[, dtype])
#define LG_REDUCE(NAME, METHOD)                                                                    \
  {                                                                                                \
    NAME, [](const Case& c, const Ins& x) {                                                        \
      if (!c.has("axes") && !c.has("keepdim")) return x.at(0).METHOD();                            \
      return x.at(0).METHOD(c.axes("axes"), c.flag("keepdim"));                                    \
    }                                                                                              \
  }
#define LG_REDUCE_DT(NAME, METHOD)                                                                 \
  {                                                                                                \
    NAME, [](const Case& c, const Ins& x) {                                                        \
      if (!c.has("axes") && !c.has("keepdim") && !c.has("dtype")) return x.at(0).METHOD();         \
      return x.at(0).METHOD(c.axes("axes"), c.flag("keepdim"), c.opt_dtype("dtype"));             \
    }                                                                                              \
  }

const std::map<std::string, OpFn>& op_table() {
  static const std::map<std::string, OpFn> table = {
      // ---- creation
      {"zeros",
       [](const Case& c, const Ins&) {
         return c.has("dtype") ? Tensor::zeros(c.ints("shape"), c.dtype("dtype")) : Tensor::zeros(c.ints("shape"));
       }},
      {"ones",
       [](const Case& c, const Ins&) {
         return c.has("dtype") ? Tensor::ones(c.ints("shape"), c.dtype("dtype")) : Tensor::ones(c.ints("shape"));
       }},
      {"full",
       [](const Case& c, const Ins&) { return Tensor::full(c.ints("shape"), c.scalar("value"), c.opt_dtype("dtype")); }},
      {"arange", [](const Case& c, const Ins&) { return Tensor::arange(c.scalar("end"), c.opt_dtype("dtype")); }},
      {"arange3",
       [](const Case& c, const Ins&) {
         if (!c.has("step") && !c.has("dtype")) return Tensor::arange(c.scalar("start"), c.scalar("end"));
         return Tensor::arange(c.scalar("start"), c.scalar("end"), c.has("step") ? c.scalar("step") : Scalar(1),
                               c.opt_dtype("dtype"));
       }},
      {"linspace",
       [](const Case& c, const Ins&) {
         return c.has("dtype") ? Tensor::linspace(c.f("start"), c.f("end"), c.i("steps"), c.dtype("dtype"))
                               : Tensor::linspace(c.f("start"), c.f("end"), c.i("steps"));
       }},
      {"eye",
       [](const Case& c, const Ins&) {
         std::optional<int64_t> m = c.has("m") ? std::optional<int64_t>(c.i("m")) : std::nullopt;
         if (c.has("dtype")) return Tensor::eye(c.i("n"), m, c.dtype("dtype"));
         return c.has("m") ? Tensor::eye(c.i("n"), m) : Tensor::eye(c.i("n"));
       }},
      {"zeros_like", [](const Case&, const Ins& x) { return Tensor::zeros_like(x.at(0)); }},
      {"ones_like", [](const Case&, const Ins& x) { return Tensor::ones_like(x.at(0)); }},
      {"full_like", [](const Case& c, const Ins& x) { return Tensor::full_like(x.at(0), c.scalar("value")); }},
      {"identity", [](const Case&, const Ins& x) { return x.at(0); }},
      {"to", [](const Case& c, const Ins& x) { return x.at(0).to(c.dtype("dtype")); }},
      // ---- unary
      {"neg.op", [](const Case&, const Ins& x) { return -x.at(0); }},
      {"neg.method", [](const Case&, const Ins& x) { return x.at(0).neg(); }},
      LG_UNARY("exp", exp),
      LG_UNARY("log", log),
      LG_UNARY("exp2", exp2),
      LG_UNARY("log2", log2),
      LG_UNARY("sqrt", sqrt),
      LG_UNARY("sin", sin),
      LG_UNARY("cos", cos),
      LG_UNARY("reciprocal", reciprocal),
      LG_UNARY("relu", relu),
      LG_UNARY("abs", abs),
      LG_UNARY("floor", floor),
      LG_UNARY("ceil", ceil),
      LG_UNARY("trunc", trunc),
      {"logical_not.op", [](const Case&, const Ins& x) { return !x.at(0); }},
      {"logical_not.method", [](const Case&, const Ins& x) { return x.at(0).logical_not(); }},
      {"bitwise_not.op", [](const Case&, const Ins& x) { return ~x.at(0); }},
      {"bitwise_not.method", [](const Case&, const Ins& x) { return x.at(0).bitwise_not(); }},
      // ---- binary: operators (tensor/tensor, tensor/scalar, scalar/tensor) and methods
      LG_OPERATOR("add", +),
      LG_OPERATOR("sub", -),
      LG_OPERATOR("mul", *),
      LG_OPERATOR("div", /),
      LG_OPERATOR("remainder", %),
      LG_OPERATOR("lt", <),
      LG_OPERATOR("le", <=),
      LG_OPERATOR("gt", >),
      LG_OPERATOR("ge", >=),
      LG_OPERATOR("eq", ==),
      LG_OPERATOR("ne", !=),
      LG_OPERATOR("bitwise_and", &),
      LG_OPERATOR("bitwise_or", |),
      LG_OPERATOR("bitwise_xor", ^),
      LG_OPERATOR("lshift", <<),
      LG_OPERATOR("rshift", >>),
      LG_METHOD("add", add),
      LG_METHOD("sub", sub),
      LG_METHOD("mul", mul),
      LG_METHOD("div", div),
      LG_METHOD("remainder", remainder),
      LG_METHOD("floor_divide", floor_divide),
      LG_METHOD("pow", pow),
      LG_METHOD("lt", lt),
      LG_METHOD("le", le),
      LG_METHOD("gt", gt),
      LG_METHOD("ge", ge),
      LG_METHOD("eq", eq),
      LG_METHOD("ne", ne),
      LG_TENSOR_METHOD("maximum", maximum),
      LG_TENSOR_METHOD("minimum", minimum),
      LG_TENSOR_METHOD("logical_and", logical_and),
      LG_TENSOR_METHOD("logical_or", logical_or),
      LG_TENSOR_METHOD("bitwise_and", bitwise_and),
      LG_TENSOR_METHOD("bitwise_or", bitwise_or),
      LG_TENSOR_METHOD("bitwise_xor", bitwise_xor),
      LG_TENSOR_METHOD("lshift", bitwise_left_shift),
      LG_TENSOR_METHOD("rshift", bitwise_right_shift),
      // ---- where: inputs are (condition, x[, y])
      {"where.method", [](const Case&, const Ins& x) { return x.at(1).where(x.at(0), x.at(2)); }},
      {"where.method_s", [](const Case& c, const Ins& x) { return x.at(1).where(x.at(0), c.scalar("scalar")); }},
      {"where.free", [](const Case&, const Ins& x) { return lazygrad::where(x.at(0), x.at(1), x.at(2)); }},
      {"where.free_sx",
       [](const Case& c, const Ins& x) { return lazygrad::where(x.at(0), c.scalar("scalar"), x.at(1)); }},
      {"where.free_xs",
       [](const Case& c, const Ins& x) { return lazygrad::where(x.at(0), x.at(1), c.scalar("scalar")); }},
      // ---- reductions
      LG_REDUCE_DT("sum", sum),
      LG_REDUCE_DT("prod", prod),
      LG_REDUCE("max", max),
      LG_REDUCE("min", min),
      LG_REDUCE("mean", mean),
      {"softmax", [](const Case& c, const Ins& x) { return x.at(0).softmax(c.i("axis")); }},
      {"log_softmax", [](const Case& c, const Ins& x) { return x.at(0).log_softmax(c.i("axis")); }},
      // ---- movement
      {"reshape", [](const Case& c, const Ins& x) { return x.at(0).reshape(c.ints("shape")); }},
      {"view", [](const Case& c, const Ins& x) { return x.at(0).view(c.ints("shape")); }},
      {"permute", [](const Case& c, const Ins& x) { return x.at(0).permute(c.ints("order")); }},
      {"transpose", [](const Case& c, const Ins& x) { return x.at(0).transpose(c.i("dim0"), c.i("dim1")); }},
      {"t", [](const Case&, const Ins& x) { return x.at(0).t(); }},
      {"expand", [](const Case& c, const Ins& x) { return x.at(0).expand(c.ints("shape")); }},
      {"flatten",
       [](const Case& c, const Ins& x) {
         if (!c.has("start_dim") && !c.has("end_dim")) return x.at(0).flatten();
         return x.at(0).flatten(c.i_or("start_dim", 0), c.i_or("end_dim", -1));
       }},
      {"squeeze",
       [](const Case& c, const Ins& x) { return c.has("dim") ? x.at(0).squeeze(c.i("dim")) : x.at(0).squeeze(); }},
      {"unsqueeze", [](const Case& c, const Ins& x) { return x.at(0).unsqueeze(c.i("dim")); }},
      {"pad",
       [](const Case& c, const Ins& x) {
         return c.has("value") ? x.at(0).pad(c.ints("pads"), c.scalar("value")) : x.at(0).pad(c.ints("pads"));
       }},
      {"slice",
       [](const Case& c, const Ins& x) {
         if (!c.has("step")) return x.at(0).slice(c.i("dim"), c.opt_int("start"), c.opt_int("end"));
         return x.at(0).slice(c.i("dim"), c.opt_int("start"), c.opt_int("end"), c.i("step"));
       }},
      {"narrow", [](const Case& c, const Ins& x) { return x.at(0).narrow(c.i("dim"), c.i("start"), c.i("length")); }},
      {"select", [](const Case& c, const Ins& x) { return x.at(0).select(c.i("dim"), c.i("index")); }},
      {"flip", [](const Case& c, const Ins& x) { return x.at(0).flip(c.axes("dims")); }},
      {"contiguous", [](const Case&, const Ins& x) { return x.at(0).contiguous(); }},
      {"cat", [](const Case& c, const Ins& x) { return c.has("dim") ? Tensor::cat(x, c.i("dim")) : Tensor::cat(x); }},
      {"stack",
       [](const Case& c, const Ins& x) { return c.has("dim") ? Tensor::stack(x, c.i("dim")) : Tensor::stack(x); }},
  };
  return table;
}

#undef LG_OPERATOR
#undef LG_METHOD
#undef LG_TENSOR_METHOD
#undef LG_UNARY
#undef LG_REDUCE
#undef LG_REDUCE_DT

// ------------------------------------------------------------------ reading results

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

const std::map<DType, Reader>& readers() {
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

Values parse_expected(const OutputSpec& out) {
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

std::pair<double, double> default_tolerance(const std::string& dtype) {
  if (dtype == "float64") return {1e-12, 1e-12};
  if (dtype == "float32") return {1e-5, 1e-6};
  return {1e-2, 1e-3};  // float16, bfloat16: lazygrad keeps fused intermediates in float32, torch rounds
}

bool float_close(double a, double e, double rtol, double atol) {
  if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
  if (std::isinf(e) || std::isinf(a)) return a == e;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

std::string index_text(size_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? static_cast<int64_t>(flat % shape[d]) : 0;
    flat = shape[d] ? flat / shape[d] : flat;
  }
  return shape_text(idx);
}

// ------------------------------------------------------------------ running one case

void run_case(const std::string& name) {
  const Registry& reg = registry();
  if (!reg.error.empty()) FAIL() << reg.error;
  if (reg.order.empty()) FAIL() << "no fixture cases were found";
  const Case& c = reg.cases.at(name);
  SCOPED_TRACE(c.describe());

  auto fn = op_table().find(c.key());
  ASSERT_NE(fn, op_table().end()) << "the test has no entry for op '" << c.key() << "'";

  Values actual, expected = parse_expected(c.out);
  Shape shape;
  std::string dtype;
  try {
    Ins ins;
    for (const auto& in : c.ins) ins.push_back(make_input(in));
    Tensor out = fn->second(c, ins);
    ASSERT_TRUE(out.defined()) << "the op returned an undefined tensor";
    shape = out.shape();
    dtype = name_of(out.dtype());
    actual = readers().at(out.dtype())(out);
  } catch (const lazygrad::Error& e) {
    FAIL() << "lazygrad::Error: " << e.what();
  } catch (const std::exception& e) {
    FAIL() << "exception (" << typeid(e).name() << "): " << e.what();
  }

  EXPECT_EQ(dtype, c.out.dtype) << "dtype differs from PyTorch's";
  ASSERT_EQ(shape_text(shape), shape_text(c.out.shape)) << "shape differs from PyTorch's";
  ASSERT_EQ(actual.size(), expected.size()) << "to_vector returned a different element count";

  const auto [rtol, atol] = c.tol ? *c.tol : default_tolerance(c.out.dtype);
  size_t bad = 0;
  std::ostringstream detail;
  for (size_t k = 0; k < expected.size(); ++k) {
    bool ok;
    if (expected.is_float) {
      ok = float_close(actual.as_double(k), expected.f[k], rtol, atol);
    } else if (actual.is_float) {
      ok = false;  // dtype already reported; show the values anyway
    } else {
      ok = actual.i[k] == expected.i[k];
    }
    if (!ok && ++bad <= 10)
      detail << "\n    at " << index_text(k, c.out.shape) << " (flat " << k << "): expected " << expected.text(k)
             << ", got " << actual.text(k);
  }
  EXPECT_EQ(bad, 0u) << bad << " of " << expected.size() << " elements differ"
                     << (expected.is_float ? " (rtol " + std::to_string(rtol) + ", atol " + std::to_string(atol) + ")"
                                           : std::string(" (exact)"))
                     << ":" << detail.str() << (bad > 10 ? "\n    ..." : "");
}

class TorchParity : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchParity, Case) { run_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchParity, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The fixtures must be there and must cover every op group the issue names.
TEST(TorchParityFixtures, LoadedAndComplete) {
  const Registry& reg = registry();
  ASSERT_TRUE(reg.error.empty()) << reg.error;
  EXPECT_GT(reg.cases.size(), 1000u);
  std::map<std::string, int> per_op;
  for (const auto& [n, c] : reg.cases) per_op[c.key()]++;
  for (const auto& [key, fn] : op_table()) {
    (void)fn;
    EXPECT_GT(per_op[key], 0) << "no fixture case exercises op '" << key << "'";
  }
  for (const auto& [key, count] : per_op)
    EXPECT_TRUE(op_table().count(key)) << "fixtures use op '" << key << "' (" << count << " cases) the table lacks";
}

}  // namespace
