// lazygrad.Tensor's ops as methods, with tinygrad's names and signatures (PyTorch's spellings as
// aliases: dim= for axis=, clamp for clip, ...), and the Python operators (reflected and in place).
// All of these are lazy: they build graph nodes and run no kernel, so they keep the GIL.
#include <cmath>
#include <string>

#include "bindings.h"
#include "tensor/tensor_impl.h"

namespace lazygrad::python {

// A Python number (bool, int, float, or a numpy scalar) as a Scalar; nullopt for anything else.
std::optional<Scalar> to_scalar(py::handle h) {
  PyObject* p = h.ptr();
  if (PyBool_Check(p)) return Scalar(p == Py_True);
  if (PyLong_Check(p)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (!overflow) return Scalar(static_cast<int64_t>(v));
    // Past int64: a uint64 (2**64-1 as a mask for a uint64 tensor) still is a Scalar.
    unsigned long long u = PyLong_AsUnsignedLongLong(p);
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      throw py::value_error(py::str(h).cast<std::string>() + " does not fit in int64 or uint64");
    }
    return Scalar(static_cast<uint64_t>(u));
  }
  if (PyFloat_Check(p)) return Scalar(PyFloat_AS_DOUBLE(p));
  static py::object& generic = *new py::object(numpy().attr("generic"));  // never freed
  if (py::isinstance(h, generic)) {
    py::object v = h.attr("item")();
    if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr())) return to_scalar(v);
  }
  return std::nullopt;
}

namespace {

using py::arg;

Tensor as_tensor(py::handle h) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  return to_tensor(h);
}
std::optional<Tensor> as_opt_tensor(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return as_tensor(h);
}

// A Scalar as a 0-d tensor to combine with t, of the dtype the C++ Scalar overloads give (t's,
// unless the number is of a higher category: float32 for a float, int64 for an int with bools), so
// `2 - t` and `t - 2` have one dtype.
Tensor scalar_tensor_for(Scalar s, const Tensor& t) { return Tensor::full({}, s, scalar_result_type(t, s)); }

// The other operand of a binary op: a Tensor, a number, or anything Tensor() takes.
// The right operand as a Tensor where an op takes only Tensors: a Scalar becomes one of x's kind.
const Tensor& rhs(const Tensor& y, const Tensor&) { return y; }
Tensor rhs(Scalar y, const Tensor& x) { return scalar_tensor_for(y, x); }
const Tensor& as_bool(const Tensor& y, const Tensor&) { return y; }
Tensor as_bool(Scalar y, const Tensor&) { return Tensor::full({}, y, kBool); }

// f is generic (a lambda with auto parameters): called with a Tensor or a Scalar on the right.
template <class F>
Tensor binary(const Tensor& a, py::handle b, F f) {
  if (py::isinstance<Tensor>(b)) return f(a, b.cast<const Tensor&>());
  if (auto s = to_scalar(b)) return f(a, *s);
  return f(a, to_tensor(b));
}
// Reflected: b (not a Tensor) op a.
template <class FT>
Tensor reflected(const Tensor& a, py::handle b, FT ft) {
  if (auto s = to_scalar(b)) return ft(scalar_tensor_for(*s, a), a);
  return ft(as_tensor(b), a);
}

Tensor floordiv(const Tensor& x, const Tensor& y) { return x.floor_divide(y); }
Tensor truncdiv(const Tensor& x, const Tensor& y) {
  if (is_float(x.dtype()) || is_float(y.dtype())) return x.div(y).trunc();
  Tensor q = x.floor_divide(y);  // integers: floor, then toward zero where the signs differ
  Tensor fix = (x.remainder(y) != 0) & ((x < 0) ^ (y < 0));
  return where(fix, q + 1, q);
}

// Binds name(x, reverse=False) and, when given, the operator dunders with their reflected and
// in-place forms (the in-place one assigns into the same tensor and returns it).
template <class F>
void bind_binary(TensorClass& cls, const char* name, const char* dunder, F f) {
  cls.def(
      name,
      [f](const Tensor& a, py::handle b, bool reverse) {
        return reverse ? reflected(a, b, f) : binary(a, b, f);
      },
      arg("x"), arg("reverse") = false);
  if (!dunder) return;
  std::string d(dunder);
  cls.def(("__" + d + "__").c_str(), [f](const Tensor& a, py::handle b) { return binary(a, b, f); },
          py::is_operator());
  cls.def(("__r" + d + "__").c_str(), [f](const Tensor& a, py::handle b) { return reflected(a, b, f); },
          py::is_operator());
  cls.def(("__i" + d + "__").c_str(), [f](py::object self, py::handle b) {
    Tensor& a = self.cast<Tensor&>();
    a.assign(binary(a, b, f));
    return self;
  });
}

// name(axis=None, keepdim=False, *, dim=None) for a reduction whose C++ form is (Axes, bool).
void bind_reduce(TensorClass& cls, const char* name, Tensor (Tensor::*f)(Axes, bool) const) {
  cls.def(
      name,
      [f](const Tensor& x, py::handle axis, bool keepdim, py::handle dim) {
        return (x.*f)(to_axes(axis, dim), keepdim);
      },
      arg("axis") = py::none(), arg("keepdim") = false, py::kw_only(), arg("dim") = py::none());
}

Tensor::IntList to_intlist(py::handle h) {
  if (h.is_none()) return {};
  if (PyLong_Check(h.ptr())) return Tensor::IntList(h.cast<int64_t>());
  return Tensor::IntList(to_shape(h, "argument"));
}

// Average pooling has no dilation; tinygrad's signature has the argument, so only 1 is accepted.
void require_no_dilation(const char* op, py::handle dilation) {
  Tensor::IntList d = to_intlist(dilation);  // named: a loop over a temporary's values() would dangle
  for (int64_t v : d.values())
    if (v != 1) throw py::value_error(std::string(op) + ": lazygrad has no dilated average pooling");
}

// max_pool1d/2d/3d with tinygrad's arguments; return_indices gives (values, int64 indices).
template <int N>
auto max_pool() {
  return [](const Tensor& x, py::handle k, py::handle stride, py::handle dilation, py::handle padding,
            bool ceil, bool return_indices) -> py::object {
    auto ks = to_intlist(k), st = to_intlist(stride), pd = to_intlist(padding), dl = to_intlist(dilation);
    if (return_indices) {
      auto r = N == 1   ? x.max_pool1d_with_indices(ks, st, pd, dl, ceil)
               : N == 2 ? x.max_pool2d_with_indices(ks, st, pd, dl, ceil)
                        : x.max_pool3d_with_indices(ks, st, pd, dl, ceil);
      return py::make_tuple(r.values, r.indices);
    }
    return py::cast(N == 1   ? x.max_pool1d(ks, st, pd, dl, ceil)
                    : N == 2 ? x.max_pool2d(ks, st, pd, dl, ceil)
                             : x.max_pool3d(ks, st, pd, dl, ceil));
  };
}

// max_unpool1d/2d/3d: tinygrad's arguments (a dilation, which must be 1 as PyTorch has none).
template <int N>
auto max_unpool() {
  return [](const Tensor& x, const Tensor& indices, py::handle k, py::handle stride, py::handle dilation,
            py::handle padding, py::handle output_size) {
    Tensor::IntList d = to_intlist(dilation);
    for (int64_t v : d.values())
      if (v != 1) throw py::value_error("max_unpool" + std::to_string(N) + "d: dilation must be 1");
    auto ks = to_intlist(k), st = to_intlist(stride), pd = to_intlist(padding), os = to_intlist(output_size);
    if (N == 1) return x.max_unpool1d(indices, ks, st, pd, os);
    if (N == 2) return x.max_unpool2d(indices, ks, st, pd, os);
    return x.max_unpool3d(indices, ks, st, pd, os);
  };
}

// The padding of a convolution: an int, one per spatial dimension, "same"/"valid", or tinygrad's
// 2 * dims values (left, right per dimension, last dimension first, as F.pad), applied by pad().
std::pair<Tensor, Tensor::ConvPadding> conv_padding(const Tensor& x, py::handle padding, size_t dims) {
  if (py::isinstance<py::str>(padding)) return {x, Tensor::ConvPadding(padding.cast<std::string>())};
  if (PyLong_Check(padding.ptr())) return {x, Tensor::ConvPadding(padding.cast<int64_t>())};
  Shape p = to_shape(padding, "padding");
  if (p.size() == 2 * dims) return {x.pad(p), Tensor::ConvPadding(int64_t{0})};
  return {x, Tensor::ConvPadding(p)};
}

Shape reshape_args(const Tensor& t, const py::args& args) {
  py::sequence seq = (args.size() == 1 && !PyLong_Check(args[0].ptr()) && !args[0].is_none())
                         ? py::reinterpret_borrow<py::sequence>(args[0])
                         : py::reinterpret_borrow<py::sequence>(args);
  Shape s;
  size_t i = 0;
  for (py::handle x : seq) {
    if (x.is_none()) {  // tinygrad: None keeps the size
      if (i >= t.shape().size()) throw py::value_error("reshape: None past the tensor's dimensions");
      s.push_back(t.shape()[i]);
    } else {
      s.push_back(to_int64(x, "reshape"));
    }
    i++;
  }
  return s;
}

std::vector<Tensor> tensors_of(const Tensor& self, const py::args& args) {
  std::vector<Tensor> ts{self};
  for (py::handle h : args) {
    if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
      bool all_tensors = true;
      for (py::handle x : h) all_tensors &= py::isinstance<Tensor>(x);
      if (all_tensors) {
        for (py::handle x : h) ts.push_back(x.cast<Tensor>());
        continue;
      }
    }
    ts.push_back(as_tensor(h));
  }
  return ts;
}

// cat/stack/meshgrid's tensors: self and the others (a.cat(b, c), Tensor.cat(a, b)), or PyTorch's
// one list (Tensor.cat([a, b], 1): a positional int after the list is the dim).
std::pair<std::vector<Tensor>, int64_t> tensor_list(py::handle first, const py::args& others,
                                                    std::optional<int64_t> dim) {
  if (py::isinstance<Tensor>(first)) return {tensors_of(first.cast<Tensor>(), others), dim.value_or(0)};
  if (!py::isinstance<py::list>(first) && !py::isinstance<py::tuple>(first))
    throw TypeError("expected a Tensor or a list of tensors, got " +
                    py::str(py::type::of(first)).cast<std::string>());
  std::vector<Tensor> ts;
  for (py::handle h : first) ts.push_back(as_tensor(h));
  if (others.size() == 1 && PyLong_Check(others[0].ptr()) && !dim) return {ts, others[0].cast<int64_t>()};
  if (others.size() > 0) throw TypeError("after a list of tensors, only the dim may follow");
  return {ts, dim.value_or(0)};
}

py::tuple tuple_of(const std::vector<Tensor>& ts) { return py::tuple(py::cast(ts)); }

}  // namespace

void bind_tensor_ops(TensorClass& cls) {
  auto none = py::none();
  // ---- unary math and activations ----
  cls.def("neg", &Tensor::neg)
      .def("exp", &Tensor::exp)
      .def("log", &Tensor::log)
      .def("exp2", &Tensor::exp2)
      .def("log2", &Tensor::log2)
      .def("sqrt", &Tensor::sqrt)
      .def("rsqrt", &Tensor::rsqrt)
      .def("sin", &Tensor::sin)
      .def("cos", &Tensor::cos)
      .def("tan", &Tensor::tan)
      .def("tanh", &Tensor::tanh)
      .def("reciprocal", &Tensor::reciprocal)
      .def("relu", &Tensor::relu)
      .def("abs", &Tensor::abs)
      .def("floor", &Tensor::floor)
      .def("ceil", &Tensor::ceil)
      .def("trunc", &Tensor::trunc)
      .def("round", &Tensor::round)
      .def("sigmoid", &Tensor::sigmoid)
      .def("expm1", &Tensor::expm1)
      .def("log1p", &Tensor::log1p)
      .def("erf", &Tensor::erf)
      .def("erfc", &Tensor::erfc)
      .def("sign", &Tensor::sign)
      .def("square", &Tensor::square)
      .def("isnan", &Tensor::isnan)
      .def("isinf", &Tensor::isinf, arg("detect_positive") = true, arg("detect_negative") = true)
      .def("isfinite", [](const Tensor& x) { return (x.isnan() | x.isinf()).logical_not(); })
      .def("nan_to_num", &Tensor::nan_to_num, arg("nan") = 0.0, arg("posinf") = none, arg("neginf") = none)
      .def("relu6", &Tensor::relu6)
      .def("leaky_relu", &Tensor::leaky_relu, arg("neg_slope") = 0.01)
      .def("elu", &Tensor::elu, arg("alpha") = 1.0)
      .def(
          "celu",
          [](const Tensor& x, double alpha) {
            // alpha * elu(x / alpha): exp only sees x <= 0, so a large x has gradient 1, not NaN.
            return (x / alpha).elu(1.0) * alpha;
          },
          arg("alpha") = 1.0)
      .def("selu", &Tensor::selu)
      // tinygrad's gelu is the tanh approximation; approximate="none" gives PyTorch's default (erf).
      .def("gelu", &Tensor::gelu, arg("approximate") = "tanh")
      .def("quick_gelu", [](const Tensor& x) { return x * (x * 1.702).sigmoid(); })
      .def("silu", &Tensor::silu)
      .def("swish", &Tensor::silu)
      .def("mish", &Tensor::mish)
      .def("softplus", &Tensor::softplus, arg("beta") = 1.0, arg("threshold") = 20.0)
      .def("logsigmoid", [](const Tensor& x) { return -(-x).softplus(); })
      .def("softsign", &Tensor::softsign)
      .def("hardtanh", &Tensor::hardtanh, arg("min_val") = -1.0, arg("max_val") = 1.0)
      .def("hardswish", &Tensor::hardswish)
      .def("hardsigmoid", &Tensor::hardsigmoid)
      .def("logical_not", &Tensor::logical_not)
      .def("bitwise_not", &Tensor::bitwise_not)
      .def("__neg__", &Tensor::neg)
      .def("__pos__", [](const Tensor& x) { return x; })
      .def("__abs__", &Tensor::abs)
      .def("__invert__", &Tensor::bitwise_not);
  auto clip = [](const Tensor& x, py::handle lo, py::handle hi) {
    if (lo.is_none() && hi.is_none())
      throw Error("clip: give min_ or max_ (or both)");  // RuntimeError as in PyTorch
    if (py::isinstance<Tensor>(lo) || py::isinstance<Tensor>(hi))
      return x.clamp(as_opt_tensor(lo), as_opt_tensor(hi));
    auto a = lo.is_none() ? std::nullopt : to_scalar(lo), b = hi.is_none() ? std::nullopt : to_scalar(hi);
    if ((!lo.is_none() && !a) || (!hi.is_none() && !b))
      throw py::type_error("clip: bounds are numbers or tensors");
    return x.clamp(a, b);
  };
  cls.def("clip", clip, arg("min_") = none, arg("max_") = none);
  // PyTorch's min=/max=, and tinygrad's clamp (an alias of its clip) min_=/max_=.
  cls.def(
      "clamp",
      [clip](const Tensor& x, py::handle lo, py::handle hi, py::handle lo_, py::handle hi_) {
        if ((!lo.is_none() && !lo_.is_none()) || (!hi.is_none() && !hi_.is_none()))
          throw TypeError("clamp: give each bound once (min= or min_=, max= or max_=)");
        return clip(x, lo.is_none() ? lo_ : lo, hi.is_none() ? hi_ : hi);
      },
      arg("min") = none, arg("max") = none, py::kw_only(), arg("min_") = none, arg("max_") = none);
  cls.def(
      "lerp",
      [](const Tensor& x, const Tensor& end, py::handle w) {
        if (auto s = to_scalar(w)) return x.lerp(end, *s);
        return x.lerp(end, as_tensor(w));
      },
      arg("end"), arg("weight"));

  // ---- binary arithmetic, comparisons, logic and bits ----
  bind_binary(cls, "add", "add", [](const auto& x, const auto& y) { return x + y; });
  bind_binary(cls, "sub", "sub", [](const auto& x, const auto& y) { return x - y; });
  bind_binary(cls, "mul", "mul", [](const auto& x, const auto& y) { return x * y; });
  bind_binary(cls, "floor_divide", "floordiv",
              [](const auto& x, const auto& y) { return x.floor_divide(y); });
  bind_binary(cls, "remainder", "mod", [](const auto& x, const auto& y) { return x.remainder(y); });
  bind_binary(cls, "mod", nullptr, [](const auto& x, const auto& y) { return x.remainder(y); });
  bind_binary(cls, "idiv", nullptr, [](const Tensor& x, const auto& y) { return truncdiv(x, rhs(y, x)); });
  bind_binary(cls, "pow", "pow", [](const auto& x, const auto& y) { return x.pow(y); });
  bind_binary(cls, "maximum", nullptr, [](const Tensor& x, const auto& y) { return x.maximum(rhs(y, x)); });
  bind_binary(cls, "minimum", nullptr, [](const Tensor& x, const auto& y) { return x.minimum(rhs(y, x)); });
  bind_binary(cls, "matmul", "matmul", [](const Tensor& x, const auto& y) { return x.matmul(rhs(y, x)); });
  bind_binary(cls, "dot", nullptr, [](const Tensor& x, const auto& y) { return x.matmul(rhs(y, x)); });
  bind_binary(cls, "bitwise_and", "and", [](const auto& x, const auto& y) { return x & y; });
  bind_binary(cls, "bitwise_or", "or", [](const auto& x, const auto& y) { return x | y; });
  bind_binary(cls, "bitwise_xor", "xor", [](const auto& x, const auto& y) { return x ^ y; });
  bind_binary(cls, "xor", nullptr, [](const auto& x, const auto& y) { return x ^ y; });
  bind_binary(cls, "lshift", "lshift", [](const auto& x, const auto& y) { return x << y; });
  bind_binary(cls, "rshift", "rshift", [](const auto& x, const auto& y) { return x >> y; });
  bind_binary(cls, "bitwise_left_shift", nullptr, [](const auto& x, const auto& y) { return x << y; });
  bind_binary(cls, "bitwise_right_shift", nullptr, [](const auto& x, const auto& y) { return x >> y; });
  bind_binary(cls, "logical_and", nullptr,
              [](const Tensor& x, const auto& y) { return x.logical_and(as_bool(y, x)); });
  bind_binary(cls, "logical_or", nullptr,
              [](const Tensor& x, const auto& y) { return x.logical_or(as_bool(y, x)); });
  bind_binary(cls, "eq", nullptr, [](const auto& x, const auto& y) { return x == y; });
  bind_binary(cls, "ne", nullptr, [](const auto& x, const auto& y) { return x != y; });
  bind_binary(cls, "lt", nullptr, [](const auto& x, const auto& y) { return x < y; });
  bind_binary(cls, "le", nullptr, [](const auto& x, const auto& y) { return x <= y; });
  bind_binary(cls, "gt", nullptr, [](const auto& x, const auto& y) { return x > y; });
  bind_binary(cls, "ge", nullptr, [](const auto& x, const auto& y) { return x >= y; });
  // true division (integers give float32); rounding_mode "trunc" or "floor" as PyTorch's div.
  auto div = [](const Tensor& a, py::handle b, bool reverse, py::handle mode) {
    std::string m = mode.is_none() ? "" : mode.cast<std::string>();
    if (m == "floor")
      return reverse ? reflected(a, b, floordiv)
                     : binary(a, b, [](const auto& x, const auto& y) { return x.floor_divide(y); });
    if (m == "trunc") {
      auto t = [](const Tensor& x, const Tensor& y) { return truncdiv(x, y); };
      return reverse ? reflected(a, b, t)
                     : truncdiv(a, as_tensor(b).to(promote_types(a.dtype(), as_tensor(b).dtype())));
    }
    if (!m.empty()) throw Error("div: rounding_mode is None, 'trunc' or 'floor', got '" + m + "'");
    auto f = [](const Tensor& x, const Tensor& y) { return x / y; };
    return reverse ? reflected(a, b, f) : binary(a, b, [](const auto& x, const auto& y) { return x / y; });
  };
  cls.def("div", div, arg("x"), arg("reverse") = false, arg("rounding_mode") = none);
  cls.def(
      "__truediv__", [div](const Tensor& a, py::handle b) { return div(a, b, false, py::none()); },
      py::is_operator());
  cls.def(
      "__rtruediv__", [div](const Tensor& a, py::handle b) { return div(a, b, true, py::none()); },
      py::is_operator());
  cls.def("__itruediv__", [div](py::object self, py::handle b) {
    Tensor& a = self.cast<Tensor&>();
    a.assign(div(a, b, false, py::none()));
    return self;
  });
  // Comparisons return Tensors; == with something that is not a number or tensor-like is False.
  auto cmp = [&cls](const char* name, auto f) {
    cls.def(
        name,
        [f](const Tensor& a, py::handle b) -> py::object {
          if (b.is_none()) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
          return py::cast(binary(a, b, f));
        },
        py::is_operator());
  };
  cmp("__eq__", [](const auto& x, const auto& y) { return x == y; });
  cmp("__ne__", [](const auto& x, const auto& y) { return x != y; });
  cmp("__lt__", [](const auto& x, const auto& y) { return x < y; });
  cmp("__le__", [](const auto& x, const auto& y) { return x <= y; });
  cmp("__gt__", [](const auto& x, const auto& y) { return x > y; });
  cmp("__ge__", [](const auto& x, const auto& y) { return x >= y; });

  // tinygrad's where: self is the condition.
  cls.def(
      "where",
      [](const Tensor& cond, py::handle x, py::handle y) {
        auto sx = to_scalar(x), sy = to_scalar(y);
        if (sx && sy) {
          Tensor tx = Tensor::full({}, *sx, to_tensor(x).dtype());
          return where(cond, tx, *sy);
        }
        if (sx) return where(cond, *sx, as_tensor(y));
        if (sy) return where(cond, as_tensor(x), *sy);
        return where(cond, as_tensor(x), as_tensor(y));
      },
      arg("x"), arg("y"));
  cls.def(
      "masked_fill",
      [](const Tensor& x, const Tensor& mask, py::handle value) {
        if (auto s = to_scalar(value)) return x.masked_fill(mask, *s);
        return x.masked_fill(mask, as_tensor(value));
      },
      arg("mask"), arg("value"));

  // ---- reductions ----
  cls.def(
         "sum",
         [](const Tensor& x, py::handle axis, bool keepdim, py::handle acc_dtype, py::handle dtype,
            py::handle dim) {
           auto dt = to_dtype(dtype);
           if (!dt) dt = to_dtype(acc_dtype);
           return x.sum(to_axes(axis, dim), keepdim, dt);
         },
         arg("axis") = none, arg("keepdim") = false, arg("acc_dtype") = none, py::kw_only(),
         arg("dtype") = none, arg("dim") = none)
      .def(
          "prod",
          [](const Tensor& x, py::handle axis, bool keepdim, py::handle dtype, py::handle dim) {
            return x.prod(to_axes(axis, dim), keepdim, to_dtype(dtype));
          },
          arg("axis") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none, arg("dim") = none);
  bind_reduce(cls, "max", &Tensor::max);
  bind_reduce(cls, "min", &Tensor::min);
  // tinygrad's mean of integers is a float (default_float); PyTorch's is an error.
  cls.def(
      "mean",
      [](const Tensor& x, py::handle axis, bool keepdim, py::handle dim) {
        return (is_float(x.dtype()) ? x : x.to(kFloat32)).mean(to_axes(axis, dim), keepdim);
      },
      arg("axis") = none, arg("keepdim") = false, py::kw_only(), arg("dim") = none);
  bind_reduce(cls, "any", &Tensor::any);
  bind_reduce(cls, "all", &Tensor::all);
  bind_reduce(cls, "logsumexp", &Tensor::logsumexp);
  auto var_std = [&cls, none](const char* name, bool is_std, bool with_mean) {
    cls.def(
        name,
        [is_std, with_mean](const Tensor& x0, py::handle axis, bool keepdim, double correction,
                            py::handle dim, py::handle unbiased) -> py::object {
          if (!unbiased.is_none()) correction = unbiased.cast<bool>() ? 1 : 0;
          Axes ax = to_axes(axis, dim);
          Tensor x = is_float(x0.dtype()) ? x0 : x0.to(kFloat32);
          Tensor r = is_std ? x.std(ax, correction, keepdim) : x.var(ax, correction, keepdim);
          if (!with_mean) return py::cast(r);
          return py::make_tuple(r, x.mean(ax, keepdim));
        },
        arg("axis") = none, arg("keepdim") = false, arg("correction") = 1.0, py::kw_only(), arg("dim") = none,
        arg("unbiased") = none);
  };
  var_std("var", false, false);
  var_std("std", true, false);
  var_std("var_mean", false, true);
  var_std("std_mean", true, true);
  cls.def(
         "argmax",
         [](const Tensor& x, py::handle axis, bool keepdim, py::handle dim) {
           return x.argmax(to_axis(axis, dim), keepdim);
         },
         arg("axis") = none, arg("keepdim") = false, py::kw_only(), arg("dim") = none)
      .def(
          "argmin",
          [](const Tensor& x, py::handle axis, bool keepdim, py::handle dim) {
            return x.argmin(to_axis(axis, dim), keepdim);
          },
          arg("axis") = none, arg("keepdim") = false, py::kw_only(), arg("dim") = none)
      .def(
          "cumsum",
          [](const Tensor& x, py::handle axis, py::handle dim, py::handle dtype) {
            return x.cumsum(to_axis(axis, dim).value_or(0), to_dtype(dtype));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none, arg("dtype") = none)
      .def(
          "cumprod",
          [](const Tensor& x, py::handle axis, py::handle dim, py::handle dtype) {
            return x.cumprod(to_axis(axis, dim).value_or(0), to_dtype(dtype));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none, arg("dtype") = none)
      .def(
          "softmax",
          [](const Tensor& x, py::handle axis, py::handle dim) {
            return x.softmax(to_axis(axis, dim).value_or(-1));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none)
      .def(
          "log_softmax",
          [](const Tensor& x, py::handle axis, py::handle dim) {
            return x.log_softmax(to_axis(axis, dim).value_or(-1));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none)
      .def(
          "norm",
          [](const Tensor& x, double p, py::handle axis, bool keepdim, py::handle dim) {
            return x.norm(p, to_axes(axis, dim), keepdim);
          },
          arg("p") = 2.0, arg("axis") = none, arg("keepdim") = false, py::kw_only(), arg("dim") = none);

  // ---- linear algebra, convolution, pooling ----
  cls.def("outer", &Tensor::outer, arg("x"))
      // tinygrad's linear: x @ weight + bias with weight [in, out] (PyTorch's F.linear transposes).
      .def(
          "linear",
          [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
            Tensor r = w.ndim() == 1 ? x * w : x.matmul(w);
            return b ? r + *b : r;
          },
          arg("weight"), arg("bias") = none)
      .def("tril", &Tensor::tril, arg("diagonal") = 0)
      .def("triu", &Tensor::triu, arg("diagonal") = 0)
      // tinygrad's argument order (dilation before padding); return_indices gives (values, indices).
      .def("max_pool1d", max_pool<1>(), arg("kernel_size") = 2, arg("stride") = none, arg("dilation") = 1,
           arg("padding") = 0, arg("ceil_mode") = false, arg("return_indices") = false)
      .def("max_pool2d", max_pool<2>(), arg("kernel_size") = py::make_tuple(2, 2), arg("stride") = none,
           arg("dilation") = 1, arg("padding") = 0, arg("ceil_mode") = false, arg("return_indices") = false)
      .def("max_pool3d", max_pool<3>(), arg("kernel_size") = py::make_tuple(2, 2, 2), arg("stride") = none,
           arg("dilation") = 1, arg("padding") = 0, arg("ceil_mode") = false, arg("return_indices") = false)
      .def("max_unpool1d", max_unpool<1>(), arg("indices"), arg("kernel_size") = 2, arg("stride") = none,
           arg("dilation") = 1, arg("padding") = 0, arg("output_size") = none)
      .def("max_unpool2d", max_unpool<2>(), arg("indices"), arg("kernel_size") = py::make_tuple(2, 2),
           arg("stride") = none, arg("dilation") = 1, arg("padding") = 0, arg("output_size") = none)
      .def("max_unpool3d", max_unpool<3>(), arg("indices"), arg("kernel_size") = py::make_tuple(2, 2, 2),
           arg("stride") = none, arg("dilation") = 1, arg("padding") = 0, arg("output_size") = none)
      .def(
          "avg_pool3d",
          [](const Tensor& x, py::handle k, py::handle stride, py::handle dilation, py::handle padding,
             bool ceil, bool count_include_pad, std::optional<int64_t> divisor_override) {
            require_no_dilation("avg_pool3d", dilation);
            return x.avg_pool3d(to_intlist(k), to_intlist(stride), to_intlist(padding), ceil,
                                count_include_pad, divisor_override);
          },
          arg("kernel_size") = py::make_tuple(2, 2, 2), arg("stride") = none, arg("dilation") = 1,
          arg("padding") = 0, arg("ceil_mode") = false, arg("count_include_pad") = true,
          arg("divisor_override") = none)
      .def(
          "avg_pool2d",
          [](const Tensor& x, py::handle k, py::handle stride, py::handle dilation, py::handle padding,
             bool ceil, bool count_include_pad) {
            require_no_dilation("avg_pool2d", dilation);
            return x.avg_pool2d(to_intlist(k), to_intlist(stride), to_intlist(padding), ceil,
                                count_include_pad);
          },
          arg("kernel_size") = py::make_tuple(2, 2), arg("stride") = none, arg("dilation") = 1,
          arg("padding") = 0, arg("ceil_mode") = false, arg("count_include_pad") = true)
      .def(
          "avg_pool1d",
          [](const Tensor& x, py::handle k, py::handle stride, py::handle padding, bool ceil,
             bool count_include_pad) {
            return x.avg_pool1d(to_intlist(k), to_intlist(stride), to_intlist(padding), ceil,
                                count_include_pad);
          },
          arg("kernel_size") = 2, arg("stride") = none, arg("padding") = 0, arg("ceil_mode") = false,
          arg("count_include_pad") = true)
      .def(
          "adaptive_avg_pool2d",
          [](const Tensor& x, py::handle size) { return x.adaptive_avg_pool2d(to_intlist(size)); },
          arg("output_size"))
      .def(
          "interpolate",
          [](const Tensor& x, py::handle size, py::handle scale, const std::string& mode,
             std::optional<bool> ac) {
            std::vector<double> sf;
            if (!scale.is_none()) {
              if (py::isinstance<py::sequence>(scale))
                sf = scale.cast<std::vector<double>>();
              else
                sf = {scale.cast<double>()};
            }
            // tinygrad's "linear" is linear along every spatial dimension: bilinear for 4-D input,
            // trilinear for 5-D.
            std::string m = mode;
            if (mode == "linear" && x.ndim() == 4) m = "bilinear";
            if (mode == "linear" && x.ndim() == 5) m = "trilinear";
            bool linear = m == "linear" || m == "bilinear" || m == "trilinear";
            if (!ac && linear) ac = false;
            return x.interpolate(to_intlist(size), sf, m, ac);
          },
          arg("size") = none, arg("scale_factor") = none, arg("mode") = "linear",
          arg("align_corners") = none);

  // conv2d is tinygrad's: 1-, 2- or 3-D by the weight; conv1d/conv3d (and conv_transpose1d) are aliases.
  auto conv = [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t groups, py::handle stride,
                 py::handle dilation, py::handle padding) {
    size_t dims = w.ndim() >= 3 ? static_cast<size_t>(w.ndim() - 2) : 0;
    auto [xp, pad] = conv_padding(x, padding, dims);
    auto s = to_intlist(stride), d = to_intlist(dilation);
    if (dims == 1) return xp.conv1d(w, b, s, pad, d, groups);
    if (dims == 3) return xp.conv3d(w, b, s, pad, d, groups);
    return xp.conv2d(w, b, s, pad, d, groups);
  };
  auto conv_t = [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t groups,
                   py::handle stride, py::handle dilation, py::handle padding, py::handle output_padding) {
    auto s = to_intlist(stride), d = to_intlist(dilation), p = to_intlist(padding),
         op = to_intlist(output_padding);
    if (w.ndim() == 3) return x.conv_transpose1d(w, b, s, p, op, groups, d);
    return x.conv_transpose2d(w, b, s, p, op, groups, d);
  };
  for (const char* name : {"conv2d", "conv1d", "conv3d"})
    cls.def(name, conv, arg("weight"), arg("bias") = none, arg("groups") = 1, arg("stride") = 1,
            arg("dilation") = 1, arg("padding") = 0);
  for (const char* name : {"conv_transpose2d", "conv_transpose1d"})
    cls.def(name, conv_t, arg("weight"), arg("bias") = none, arg("groups") = 1, arg("stride") = 1,
            arg("dilation") = 1, arg("padding") = 0, arg("output_padding") = 0);

  // ---- movement ----
  cls.def("reshape", [](const Tensor& x, py::args shape) { return x.reshape(reshape_args(x, shape)); })
      .def("view", [](const Tensor& x, py::args shape) { return x.reshape(reshape_args(x, shape)); })
      .def("permute",
           [](const Tensor& x, py::args order) { return x.permute(varargs_shape(order, "permute")); })
      .def("expand", [](const Tensor& x, py::args shape) { return x.expand(varargs_shape(shape, "expand")); })
      .def("expand_as", &Tensor::expand_as, arg("other"))
      .def("repeat", [](const Tensor& x, py::args r) { return x.repeat(varargs_shape(r, "repeat")); })
      .def("flip",
           [](const Tensor& x, py::args axis) {
             // flip(()) flips nothing; flip() with no dims at all is a mistake, as in PyTorch.
             if (axis.empty()) throw TypeError("flip: missing the dims to flip (give () to flip none)");
             return x.flip(Axes(varargs_shape(axis, "flip")));
           })
      .def("transpose", &Tensor::transpose, arg("dim0") = 1, arg("dim1") = 0)
      .def_property_readonly("T",
                             [](const Tensor& x) {
                               Shape order;
                               for (int64_t i = x.ndim(); i-- > 0;) order.push_back(i);
                               return x.permute(order);
                             })
      .def("t", &Tensor::t)
      .def("flatten", &Tensor::flatten, arg("start_dim") = 0, arg("end_dim") = -1)
      .def(
          "unflatten",
          [](const Tensor& x, int64_t dim, py::handle sizes) {
            Shape s = x.shape(), in = to_shape(sizes, "unflatten");
            int64_t d = dim < 0 ? dim + x.ndim() : dim;
            if (d < 0 || d >= x.ndim())
              throw IndexError("unflatten: dim " + std::to_string(d) + " out of range for shape " +
                               shape_str(x.shape()));
            s.erase(s.begin() + d);
            s.insert(s.begin() + d, in.begin(), in.end());
            return x.reshape(s);
          },
          arg("dim"), arg("sizes"))
      .def(
          "squeeze",
          [](const Tensor& x, py::handle dim) {
            if (dim.is_none()) return x.squeeze();
            return x.squeeze(dim.cast<int64_t>());
          },
          arg("dim") = none)
      .def("unsqueeze", &Tensor::unsqueeze, arg("dim"))
      .def(
          "pad",
          [](const Tensor& x, py::handle padding, const std::string& mode, py::handle value) {
            auto v = to_scalar(value);
            if (!v) throw py::type_error("pad: value must be a number");
            py::sequence seq = py::reinterpret_borrow<py::sequence>(padding);
            bool pairs = seq.size() > 0 && (seq[0].is_none() || py::isinstance<py::sequence>(seq[0]));
            std::vector<int64_t> flat;
            if (!pairs) {
              flat = to_shape(padding, "pad");
            } else {  // tinygrad's form: one (before, after) or None per dimension, first dimension first
              if (static_cast<int64_t>(seq.size()) != x.ndim())
                throw py::value_error("pad: one (before, after) pair per dimension");
              for (size_t i = seq.size(); i-- > 0;) {
                if (seq[i].is_none()) {
                  flat.insert(flat.end(), {0, 0});
                } else {
                  Shape p = to_shape(seq[i], "pad");
                  if (p.size() != 2) throw py::value_error("pad: each pair has two values");
                  flat.insert(flat.end(), p.begin(), p.end());
                }
              }
            }
            return x.pad(flat, Tensor::pad_mode(mode), *v);
          },
          arg("padding"), arg("mode") = "constant", arg("value") = 0.0)
      .def(
          "shrink",
          [](const Tensor& x, py::sequence arg) {
            if (static_cast<int64_t>(arg.size()) != x.ndim())
              throw py::value_error("shrink: one pair per dimension");
            std::vector<std::pair<int64_t, int64_t>> bounds;
            for (size_t i = 0; i < arg.size(); i++) {
              if (arg[i].is_none()) {
                bounds.emplace_back(0, x.shape()[i]);
                continue;
              }
              Shape p = to_shape(arg[i], "shrink");
              if (p.size() != 2) throw py::value_error("shrink: each pair has two values");
              bounds.emplace_back(p[0], p[1]);
            }
            return x.shrink(bounds);
          },
          arg("arg"))
      .def("narrow", py::overload_cast<int64_t, int64_t, int64_t>(&Tensor::narrow, py::const_), arg("dim"),
           arg("start"), arg("length"))
      .def("select", &Tensor::select, arg("dim"), arg("index"))
      .def(
          "cat",
          [](py::object first, py::args others, std::optional<int64_t> dim) {
            auto [ts, d] = tensor_list(first, others, dim);
            return Tensor::cat(ts, d);
          },
          arg("dim") = none)
      .def(
          "stack",
          [](py::object first, py::args others, std::optional<int64_t> dim) {
            auto [ts, d] = tensor_list(first, others, dim);
            return Tensor::stack(ts, d);
          },
          arg("dim") = none)
      .def(
          "split",
          [](const Tensor& x, py::handle sizes, int64_t dim) {
            if (PyLong_Check(sizes.ptr())) return tuple_of(x.split(to_int64(sizes, "split"), dim));
            return tuple_of(x.split_with_sizes(to_shape(sizes, "split"), dim));
          },
          arg("sizes"), arg("dim") = 0)
      .def(
          "chunk", [](const Tensor& x, int64_t n, int64_t dim) { return tuple_of(x.chunk(n, dim)); },
          arg("chunks"), arg("dim") = 0)
      .def(
          "unbind", [](const Tensor& x, int64_t dim) { return tuple_of(x.unbind(dim)); }, arg("dim") = 0)
      .def(
          "roll",
          [](const Tensor& x, py::handle shifts, py::handle dims) {
            if (PyLong_Check(shifts.ptr())) {
              if (dims.is_none()) return x.roll(shifts.cast<int64_t>());
              if (PyLong_Check(dims.ptr())) return x.roll(shifts.cast<int64_t>(), dims.cast<int64_t>());
              return x.roll(std::vector<int64_t>{shifts.cast<int64_t>()}, to_shape(dims, "roll"));
            }
            return x.roll(to_shape(shifts, "roll"), dims.is_none() ? Shape{} : to_shape(dims, "roll"));
          },
          arg("shifts"), arg("dims") = none)
      .def(
          "repeat_interleave",
          [](const Tensor& x, py::handle repeats, std::optional<int64_t> dim) {
            return x.repeat_interleave(to_int64(repeats, "repeat_interleave"), dim);
          },
          arg("repeats"), arg("dim") = none);

  // ---- gathers and scatters ----
  cls.def(
         "gather", [](const Tensor& x, int64_t dim, const Tensor& index) { return x.gather(dim, index); },
         arg("dim"), arg("index"))
      .def("take_along_dim", &Tensor::take_along_dim, arg("indices"), arg("dim") = none)
      .def("index_select", &Tensor::index_select, arg("dim"), arg("index"))
      .def("index", &Tensor::index, arg("dim"), arg("indices"))
      .def(
          "scatter",
          [](const Tensor& x, int64_t dim, const Tensor& index, py::handle src, py::handle reduce) {
            if (!reduce.is_none()) {  // "add" or "multiply"; another value is a ValueError
              std::string r = reduce.cast<std::string>();
              if (auto s = to_scalar(src)) return x.scatter(dim, index, *s, r);
              return x.scatter(dim, index, as_tensor(src), r);
            }
            if (auto s = to_scalar(src)) return x.scatter(dim, index, *s);
            return x.scatter(dim, index, as_tensor(src));
          },
          arg("dim"), arg("index"), arg("src"), arg("reduce") = none)
      .def("scatter_add", &Tensor::scatter_add, arg("dim"), arg("index"), arg("src"))
      .def("scatter_reduce", &Tensor::scatter_reduce, arg("dim"), arg("index"), arg("src"), arg("reduce"),
           py::kw_only(), arg("include_self") = true)
      // The result's size depends on the values: these run the kernels that compute the mask.
      .def(
          "masked_select",
          [](const Tensor& x, const Tensor& mask) {
            Unlocked u;
            return x.masked_select(mask);
          },
          arg("mask"))
      .def(
          "nonzero",
          [](const Tensor& x, bool as_tuple) -> py::object {
            if (!as_tuple) {
              Tensor r;
              {
                Unlocked u;
                r = x.nonzero();
              }
              return py::cast(r);
            }
            std::vector<Tensor> parts;
            {
              Unlocked u;
              parts = x.nonzero_tuple();
            }
            return py::tuple(py::cast(parts));
          },
          py::kw_only(), arg("as_tuple") = false)
      .def("argwhere",
           [](const Tensor& x) {
             Unlocked u;
             return x.argwhere();
           })
      .def(
          "one_hot",
          [](const Tensor& x0, int64_t n) {
            // any integer dtype (Python ints make int32 tensors); the C++ op takes int64
            Tensor x = is_int(x0.dtype()) && x0.dtype() != kInt64 ? x0.to(kInt64) : x0;
            if (n >= 0) return x.one_hot(n);
            Unlocked u;  // num_classes -1 reads the largest value: a kernel runs
            return x.one_hot(n);
          },
          arg("num_classes") = -1)
      .def(
          "sort",
          [](const Tensor& x, int64_t dim, bool descending) {
            auto r = x.sort(dim, descending);
            return py::make_tuple(r.values, r.indices);
          },
          arg("dim") = -1, arg("descending") = false)
      .def("argsort", &Tensor::argsort, arg("dim") = -1, arg("descending") = false)
      .def(
          "topk",
          [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
            auto r = x.topk(k, dim, largest, sorted);
            return py::make_tuple(r.values, r.indices);
          },
          arg("k"), arg("dim") = -1, arg("largest") = true, arg("sorted_") = true);
  cls.def_static(
         "einsum",
         [](const std::string& formula, py::args operands) {
           std::vector<Tensor> ts;
           for (py::handle h : operands) {
             if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h))
               for (py::handle x : h) ts.push_back(as_tensor(x));
             else
               ts.push_back(as_tensor(h));
           }
           return einsum(formula, ts);
         },
         arg("formula"))
      .def(
          "meshgrid",  // x.meshgrid(y) (tinygrad), Tensor.meshgrid(x, y) and Tensor.meshgrid([x, y])
          [](py::object first, py::args others, const std::string& indexing) {
            return tuple_of(meshgrid(tensor_list(first, others, std::nullopt).first, indexing));
          },
          arg("indexing") = "ij");

  // ---- losses ----
  cls.def(
         "cross_entropy",
         [](const Tensor& x, const Tensor& y, const std::string& reduction, double ls,
            std::optional<Tensor> weight,
            int64_t ignore_index) { return x.cross_entropy(y, weight, ignore_index, reduction, ls); },
         arg("Y"), arg("reduction") = "mean", arg("label_smoothing") = 0.0, py::kw_only(),
         arg("weight") = none, arg("ignore_index") = -100)
      .def(
          "sparse_categorical_crossentropy",
          [](const Tensor& x, const Tensor& y, int64_t ignore_index, double ls,
             const std::string& reduction) {
            // tinygrad's classes are the last axis; cross_entropy's are axis 1 of [N, C, d1, ...].
            Tensor logits = x;
            if (x.dim() > 2) {
              std::vector<int64_t> order{0, x.dim() - 1};
              for (int64_t a = 1; a < x.dim() - 1; a++) order.push_back(a);
              logits = x.permute(order);
            }
            return logits.cross_entropy(y, std::nullopt, ignore_index, reduction, ls);
          },
          arg("Y"), arg("ignore_index") = -1, arg("label_smoothing") = 0.0, arg("reduction") = "mean")
      .def(
          "nll_loss",
          [](const Tensor& x, const Tensor& y, std::optional<Tensor> weight, py::handle ignore_index,
             const std::string& reduction) {
            return x.nll_loss(y, weight, ignore_index.is_none() ? -100 : ignore_index.cast<int64_t>(),
                              reduction);
          },
          arg("Y"), arg("weight") = none, arg("ignore_index") = none, arg("reduction") = "mean")
      .def(
          "binary_crossentropy",
          [](const Tensor& x, const Tensor& y, const std::string& r) {
            return x.binary_cross_entropy(y, std::nullopt, r);
          },
          arg("Y"), arg("reduction") = "mean")
      .def("binary_cross_entropy", &Tensor::binary_cross_entropy, arg("target"), arg("weight") = none,
           arg("reduction") = "mean")
      .def(
          "binary_crossentropy_logits",
          [](const Tensor& x, const Tensor& y, const std::string& r, std::optional<Tensor> pos_weight) {
            return x.binary_cross_entropy_with_logits(y, std::nullopt, r, pos_weight);
          },
          arg("Y"), arg("reduction") = "mean", arg("pos_weight") = none)
      .def("binary_cross_entropy_with_logits", &Tensor::binary_cross_entropy_with_logits, arg("target"),
           arg("weight") = none, arg("reduction") = "mean", arg("pos_weight") = none)
      .def("mse_loss", &Tensor::mse_loss, arg("target"), arg("reduction") = "mean")
      .def("l1_loss", &Tensor::l1_loss, arg("target"), arg("reduction") = "mean")
      .def("smooth_l1_loss", &Tensor::smooth_l1_loss, arg("target"), arg("reduction") = "mean",
           arg("beta") = 1.0)
      .def("kl_div", &Tensor::kl_div, arg("target"), arg("reduction") = "mean", arg("log_target") = false);

  // ---- normalization, dropout, attention ----
  cls.def(
         "layernorm",
         [](const Tensor& x, py::handle axis, double eps) {
           Axes ax = to_axes(axis);
           Tensor y = x - x.mean(ax, true);
           return y * (y.square().mean(ax, true) + eps).rsqrt();
         },
         arg("axis") = -1, arg("eps") = 1e-5)
      .def(
          "layer_norm",
          [](const Tensor& x, py::handle shape, std::optional<Tensor> w, std::optional<Tensor> b,
             double eps) { return x.layer_norm(to_shape(shape, "layer_norm"), w, b, eps); },
          arg("normalized_shape"), arg("weight") = none, arg("bias") = none, arg("eps") = 1e-5)
      .def(
          "batchnorm",
          [](const Tensor& x, std::optional<Tensor> weight, std::optional<Tensor> bias, const Tensor& mean,
             const Tensor& invstd, py::handle axis) {
            // tinygrad's: (x - mean) * (weight * invstd) + bias, the parameters along `axis`.
            Shape ax = PyLong_Check(axis.ptr()) ? Shape{axis.cast<int64_t>()} : to_shape(axis, "batchnorm");
            Shape s(x.ndim(), 1);
            for (int64_t a : ax) {
              int64_t d = a < 0 ? a + x.ndim() : a;
              s[d] = x.shape()[d];
            }
            Tensor r = x - mean.reshape(s);
            Tensor scale = weight ? weight->reshape(s) * invstd.reshape(s) : invstd.reshape(s);
            r = r * scale;
            return bias ? r + bias->reshape(s) : r;
          },
          arg("weight"), arg("bias"), arg("mean"), arg("invstd"), arg("axis") = 1)
      .def("batch_norm", &Tensor::batch_norm, arg("running_mean"), arg("running_var"), arg("weight") = none,
           arg("bias") = none, arg("training") = false, arg("momentum") = 0.1, arg("eps") = 1e-5)
      .def("group_norm", &Tensor::group_norm, arg("num_groups"), arg("weight") = none, arg("bias") = none,
           arg("eps") = 1e-5)
      .def(
          "rms_norm",
          [](const Tensor& x, py::handle shape, std::optional<Tensor> w, std::optional<double> eps) {
            return x.rms_norm(to_shape(shape, "rms_norm"), w, eps);
          },
          arg("normalized_shape"), arg("weight") = none, arg("eps") = none)
      .def(
          "dropout",
          [](const Tensor& x, double p, py::handle training) {
            bool on = training.is_none() ? py::type::of<Tensor>().attr("training").cast<bool>()
                                         : training.cast<bool>();
            return x.dropout(p, on);
          },
          arg("p") = 0.5, arg("training") = none)
      .def("scaled_dot_product_attention", &Tensor::scaled_dot_product_attention, arg("key"), arg("value"),
           arg("attn_mask") = none, arg("dropout_p") = 0.0, arg("is_causal") = false, arg("scale") = none);
}

}  // namespace lazygrad::python
