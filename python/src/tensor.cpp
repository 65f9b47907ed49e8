// lazygrad.Tensor: the C++ Tensor handle as a Python class.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "lazygrad/lazygrad.h"

namespace lazygrad::python {

namespace {

Tensor from_numpy(const py::array& a) {
  auto c = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!c) throw py::type_error("Tensor: cannot convert to a float32 array");
  Shape shape(c.shape(), c.shape() + c.ndim());
  return Tensor::from_bytes(c.data(), static_cast<size_t>(c.nbytes()), shape, kFloat32);
}

py::array to_numpy(const Tensor& t) {
  std::vector<float> v;
  {
    py::gil_scoped_release release;  // kernels run without the GIL
    v = t.to_vector<float>();
  }
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array_t<float> out(shape);
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor")
      .def(py::init([](const py::array& a) { return from_numpy(a); }), py::arg("data"))
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def("numpy", &to_numpy)
      .def(
          "realize", [](Tensor& t) -> Tensor& { return t.realize(); }, py::call_guard<py::gil_scoped_release>())
      .def("__add__", [](const Tensor& a, const Tensor& b) { return a.add(b); });
}

}  // namespace lazygrad::python
