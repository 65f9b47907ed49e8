// The pieces of the Python module lazygrad._C (module.cpp calls each once): one file per area.
#pragma once

#include <pybind11/pybind11.h>

namespace lazygrad::python {

namespace py = pybind11;

void bind_errors(py::module_& m);  // lazygrad::Error -> RuntimeError / ValueError
void bind_tensor(py::module_& m);  // Tensor, dtypes, creation, ops, autograd, numpy
void bind_nn(py::module_& m);      // _C.nn: optimizers, safetensors, the Jit (python/lazygrad/nn/)

}  // namespace lazygrad::python
