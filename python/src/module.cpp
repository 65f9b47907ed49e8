// lazygrad._C: the C++ core as a Python extension module (pybind11). The package python/lazygrad/
// imports it and adds what is easier to say in Python; docs/python.md describes the API.
#include "bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "lazygrad: lazy tensors with fused, run-time compiled kernels (the C++ core)";
  lazygrad::python::bind_errors(m);
  lazygrad::python::bind_tensor(m);
  lazygrad::python::bind_nn(m);
}
