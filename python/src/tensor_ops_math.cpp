// The ops of issue 16's math group as lazygrad.Tensor methods: inverse trigonometric and hyperbolic
// functions, fmod/copysign/logaddexp/isclose, diagonals, running extremes, unfold, softmin and
// normalize. tinygrad's keyword names (axis) are accepted beside PyTorch's (dim), as elsewhere.
#include <type_traits>

#include "bindings.h"
#include "tensor/tensor_impl.h"

namespace lazygrad::python {

namespace {

using py::arg;

// The other operand of a binary op: a Tensor, a number, or anything Tensor() takes.
template <class F>
Tensor with_other(const Tensor& x, py::handle other, F f) {
  if (py::isinstance<Tensor>(other)) return f(x, other.cast<Tensor>());
  if (auto s = to_scalar(other)) return f(x, *s);
  return f(x, to_tensor(other));
}

// A Python number as a 0-d tensor of the dtype PyTorch would give it against x.
Tensor scalar_for(const Tensor& x, Scalar s) { return scalar_tensor(s, scalar_result_type(x, s)); }

py::tuple values_indices(const Tensor::ValuesIndices& r) { return py::make_tuple(r.values, r.indices); }

}  // namespace

void bind_tensor_math_ops(py::module_& m, TensorClass& cls) {
  auto none = py::none();
  cls.def("asin", &Tensor::asin)
      .def("acos", &Tensor::acos)
      .def("atan", &Tensor::atan)
      .def("arcsin", &Tensor::asin)
      .def("arccos", &Tensor::acos)
      .def("arctan", &Tensor::atan)
      .def("sinh", &Tensor::sinh)
      .def("cosh", &Tensor::cosh)
      .def("asinh", &Tensor::asinh)
      .def("acosh", &Tensor::acosh)
      .def("atanh", &Tensor::atanh)
      .def("arcsinh", &Tensor::asinh)
      .def("arccosh", &Tensor::acosh)
      .def("arctanh", &Tensor::atanh)
      .def("log10", &Tensor::log10)
      .def(
          "atan2",
          [](const Tensor& y, py::handle other) {
            return with_other(y, other, [](const Tensor& a, const auto& b) {
              if constexpr (std::is_same_v<std::decay_t<decltype(b)>, Scalar>)
                return a.atan2(scalar_for(a, b));
              else
                return a.atan2(b);
            });
          },
          arg("other"))
      .def(
          "fmod",
          [](const Tensor& x, py::handle other) {
            return with_other(x, other, [](const Tensor& a, const auto& b) { return a.fmod(b); });
          },
          arg("other"))
      .def(
          "copysign",
          [](const Tensor& x, py::handle other) {
            return with_other(x, other, [](const Tensor& a, const auto& b) { return a.copysign(b); });
          },
          arg("other"))
      .def(
          "logaddexp",
          [](const Tensor& x, py::handle other) {
            return with_other(x, other, [](const Tensor& a, const auto& b) {
              if constexpr (std::is_same_v<std::decay_t<decltype(b)>, Scalar>)
                return a.logaddexp(scalar_for(a, b));
              else
                return a.logaddexp(b);
            });
          },
          arg("other"))
      .def(
          "logaddexp2",
          [](const Tensor& x, py::handle other) {
            return with_other(x, other, [](const Tensor& a, const auto& b) {
              if constexpr (std::is_same_v<std::decay_t<decltype(b)>, Scalar>)
                return a.logaddexp2(scalar_for(a, b));
              else
                return a.logaddexp2(b);
            });
          },
          arg("other"))
      .def("isclose", &Tensor::isclose, arg("other"), arg("rtol") = 1e-05, arg("atol") = 1e-08,
           arg("equal_nan") = false)
      .def(
          "allclose",
          [](const Tensor& x, const Tensor& other, double rtol, double atol, bool equal_nan) {
            Tensor close = x.isclose(other, rtol, atol, equal_nan);
            Unlocked u;  // reads the answer: a kernel runs
            return close.all().item<bool>();
          },
          arg("other"), arg("rtol") = 1e-05, arg("atol") = 1e-08, arg("equal_nan") = false)
      .def("diag", &Tensor::diag, arg("diagonal") = 0)
      .def("diagonal", &Tensor::diagonal, arg("offset") = 0, arg("dim1") = 0, arg("dim2") = 1)
      .def(
          "unfold",  // PyTorch's dimension=, tinygrad's dim=
          [](const Tensor& x, std::optional<int64_t> dimension, int64_t size, int64_t step,
             std::optional<int64_t> dim) {
            if (dimension.has_value() == dim.has_value())
              throw TypeError("unfold: give the dimension once, as dimension= (PyTorch) or dim= (tinygrad)");
            return x.unfold(dimension ? *dimension : *dim, size, step);
          },
          arg("dimension") = py::none(), arg("size"), arg("step"), py::kw_only(), arg("dim") = py::none())
      .def(
          "cummax",
          [](const Tensor& x, py::handle axis, py::handle dim) {
            return values_indices(x.cummax(to_axis(axis, dim).value_or(0)));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none)
      .def(
          "cummin",
          [](const Tensor& x, py::handle axis, py::handle dim) {
            return values_indices(x.cummin(to_axis(axis, dim).value_or(0)));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none)
      .def(
          "logcumsumexp",
          [](const Tensor& x, py::handle axis, py::handle dim) {
            return x.logcumsumexp(to_axis(axis, dim).value_or(0));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none)
      .def(
          "softmin",
          [](const Tensor& x, py::handle axis, py::handle dim) {
            return x.softmin(to_axis(axis, dim).value_or(-1));
          },
          arg("axis") = none, py::kw_only(), arg("dim") = none)
      .def(
          "normalize",
          [](const Tensor& x, double p, py::handle axis, double eps, py::handle dim) {
            return x.normalize(p, to_axis(axis, dim).value_or(1), eps);
          },
          arg("p") = 2.0, arg("axis") = none, arg("eps") = 1e-12, py::kw_only(), arg("dim") = none);
  // torch.nn.functional.unfold (im2col); lazygrad.nn.functional.unfold forwards here.
  m.def(
      "unfold",
      [](const Tensor& input, py::handle kernel_size, py::handle dilation, py::handle padding,
         py::handle stride) {
        auto ints = [](py::handle h, const char* what) { return Tensor::IntList(to_shape(h, what)); };
        return unfold(input, ints(kernel_size, "kernel_size"), ints(dilation, "dilation"),
                      ints(padding, "padding"), ints(stride, "stride"));
      },
      arg("input"), arg("kernel_size"), arg("dilation") = 1, arg("padding") = 0, arg("stride") = 1);
}

}  // namespace lazygrad::python
