// C++ exceptions become Python exceptions with the same message: lazygrad::Error is
// lazygrad.LazygradError, a subclass of RuntimeError (std::bad_alloc is a MemoryError, as pybind11
// does by default). Never a crash of the interpreter.
#include "bindings.h"
#include "lazygrad/error.h"

namespace lazygrad::python {

void bind_errors(py::module_& m) { py::register_exception<Error>(m, "LazygradError", PyExc_RuntimeError); }

}  // namespace lazygrad::python
