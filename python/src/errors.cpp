// C++ exceptions become Python exceptions with the same message: lazygrad::Error is
// lazygrad.LazygradError, a subclass of RuntimeError; its SizeError (a shape too large or negative)
// is also a ValueError, as numpy's "array is too big", and its OutOfMemoryError also a MemoryError,
// as numpy's "Unable to allocate"; an argument pybind11 cannot convert is a TypeError (pybind11's
// default would be RuntimeError); std::bad_alloc is a MemoryError, as pybind11 does by default.
// A computation stopped by Ctrl-C (lazygrad::InterruptedError: lazygrad holds SIGINT while it runs
// kernels, so Python's own handler does not see it) is a KeyboardInterrupt, as Ctrl-C is anywhere
// else in Python. Never a crash of the interpreter.
#include "bindings.h"
#include "lazygrad/error.h"

namespace lazygrad::python {

void bind_errors(py::module_& m) {
  // Registered after their base: pybind11 tries the latest translator first.
  py::object base = py::register_exception<Error>(m, "LazygradError", PyExc_RuntimeError);
  py::register_exception<SizeError>(m, "SizeError", py::make_tuple(base, py::handle(PyExc_ValueError)));
  py::register_exception<OutOfMemoryError>(m, "OutOfMemoryError",
                                           py::make_tuple(base, py::handle(PyExc_MemoryError)));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::cast_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const InterruptedError& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
}

}  // namespace lazygrad::python
