// The pieces of the Python module lazygrad._C (module.cpp calls each once): one file per area, and
// the conversions they share. lazygrad::Tensor is bound directly as lazygrad.Tensor, so any binding
// file may take and return Tensor, std::vector<Tensor> or std::optional<Tensor> (pybind11 converts).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <optional>
#include <vector>

#include "lazygrad/lazygrad.h"

namespace lazygrad::python {

namespace py = pybind11;
using TensorClass = py::class_<Tensor>;

void bind_errors(py::module_& m);         // errors.cpp: lazygrad::Error -> lazygrad.LazygradError
void bind_dtypes(py::module_& m);         // dtypes.cpp: the DType class (lazygrad.dtypes names them)
TensorClass bind_tensor(py::module_& m);  // tensor.cpp: class, construction, numpy, autograd
void bind_creation(TensorClass& cls);     // tensor.cpp: zeros, ones, rand, arange, ...
void bind_tensor_ops(TensorClass& cls);   // tensor_ops.cpp: ops as methods, Python operators
// tensor_ops_math.cpp: issue 16's math, diagonals, scans; and _C.unfold, F.unfold's im2col
void bind_tensor_math_ops(py::module_& m, TensorClass& cls);
void bind_indexing(TensorClass& cls);     // indexing.cpp: __getitem__, __setitem__
void bind_gguf(py::module_& nn);          // gguf.cpp: nn.gguf_load (lazygrad's GGUF reader)
void bind_profile(py::module_& m);        // profile.cpp: profile, ProfileScope, write_viz, set_viz

// ---- conversions (dtypes.cpp) ----
// dtype= arguments: a DType, None (nullopt), a numpy dtype or type, a name ("float32", "half"), or
// Python's float, int and bool. Anything else is a TypeError.
std::optional<DType> to_dtype(py::handle h);
DType numpy_to_dtype(const py::dtype& dt);          // TypeError for a dtype lazygrad lacks
std::optional<py::dtype> dtype_to_numpy(DType dt);  // nullopt for bfloat16

// ---- conversions (tensor_ops.cpp) ----
// A Python number (bool, int, float, numpy scalar) as a Scalar; nullopt for anything else.
std::optional<Scalar> to_scalar(py::handle h);

// ---- conversions (tensor.cpp) ----
// Tensor(data, dtype): a Tensor (detached alias), a Python scalar, a nested list, a numpy array
// of any dtype and strides. Python floats give float32, ints int32 (int64 when a value needs it),
// bools bool; numpy arrays keep their dtype.
Tensor to_tensor(py::handle data, std::optional<DType> dtype = std::nullopt);
// An int (or numpy integer) as int64: a ValueError naming `what` when it does not fit (as numpy's
// "Maximum allowed dimension exceeded"), where pybind11's own conversion would be a TypeError.
int64_t to_int64(py::handle h, const char* what);
// A shape: an int, a sequence of ints, or tinygrad's varargs (Tensor.zeros(2, 3) or ((2, 3),)).
Shape to_shape(py::handle h, const char* what);
Shape varargs_shape(const py::args& args, const char* what);
// An axis argument: None (all), an int, or a sequence of ints. `alias` is PyTorch's dim=, used when
// not None (giving both is a TypeError).
Axes to_axes(py::handle axis, py::handle alias = py::none());
std::optional<int64_t> to_axis(py::handle axis, py::handle alias = py::none());
// A device argument: "" for None, else the canonical name ("cl:0" -> "CL"); ValueError when unknown.
std::string device_name(py::handle device);
py::module_& numpy();                 // the numpy module, imported once
py::array to_numpy(const Tensor& t);  // zero-copy view of a contiguous buffer; GIL released

// Calls that run kernels release the GIL and hold the engine lock instead (the engine runs one
// evaluation at a time), so other Python threads go on meanwhile. The GIL goes first, so no thread
// ever waits for the lock while holding the GIL. Nothing inside may touch Python objects.
std::recursive_mutex& engine_mutex();
struct Unlocked {
  py::gil_scoped_release release;
  std::lock_guard<std::recursive_mutex> lock{engine_mutex()};
};

// ---- indexing (indexing.cpp) ----
Tensor getitem(const Tensor& t, py::handle index);
void setitem(Tensor& t, py::handle index, py::handle value);

// ---- nn (nn.cpp): _C.nn, the layers, optimizers, safetensors and the Jit python/lazygrad/nn/ uses ----
void bind_nn(py::module_& m);

}  // namespace lazygrad::python
