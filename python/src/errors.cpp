// C++ exceptions become Python exceptions with the same message. lazygrad::Error is
// lazygrad.LazygradError, a subclass of RuntimeError; each other kind of Error (lazygrad/error.h)
// is a class that subclasses both LazygradError and the builtin PyTorch raises for the same
// mistake, so `except IndexError:` and `except LazygradError:` both catch it:
//   ErrorKind::Index           lazygrad.LazygradIndexError           (LazygradError, IndexError)
//   ErrorKind::Value           lazygrad.LazygradValueError           (LazygradError, ValueError)
//     SizeError, a shape too large or negative, is lazygrad.SizeError, a LazygradValueError
//   ErrorKind::Type            lazygrad.LazygradTypeError            (LazygradError, TypeError)
//   ErrorKind::NotImplemented  lazygrad.LazygradNotImplementedError  (LazygradError, NotImplementedError)
//   ErrorKind::OutOfMemory     lazygrad.OutOfMemoryError             (LazygradError, MemoryError)
// An argument pybind11 cannot convert is a TypeError (pybind11's default would be RuntimeError);
// std::bad_alloc is a MemoryError, as pybind11 does by default. A computation stopped by Ctrl-C
// (ErrorKind::Interrupted: lazygrad holds SIGINT while it runs kernels, so Python's own handler
// does not see it) is a KeyboardInterrupt, as Ctrl-C is anywhere else in Python. Never a crash of
// the interpreter.
#include "bindings.h"
#include "lazygrad/error.h"

namespace lazygrad::python {

namespace {

// Classes made once, at import; the translator below only reads them.
struct ErrorClasses {
  py::object base, index, value, size, type, not_implemented, out_of_memory;
};

ErrorClasses& error_classes() {
  static ErrorClasses* classes = new ErrorClasses();  // never destroyed: Python may outlive statics
  return *classes;
}

// The Python class of an error kind (Interrupted is KeyboardInterrupt, raised by the translator).
const py::object& class_of(ErrorKind kind) {
  const ErrorClasses& c = error_classes();
  switch (kind) {
    case ErrorKind::Index:
      return c.index;
    case ErrorKind::Value:
      return c.value;
    case ErrorKind::Type:
      return c.type;
    case ErrorKind::NotImplemented:
      return c.not_implemented;
    case ErrorKind::OutOfMemory:
      return c.out_of_memory;
    case ErrorKind::Runtime:
    case ErrorKind::Interrupted:
      break;
  }
  return c.base;
}

py::object make_class(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  py::dict ns;
  ns["__module__"] = m.attr("__name__");
  ns["__doc__"] = doc;
  py::object cls =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyType_Type))(name, bases, ns);
  m.attr(name) = cls;
  return cls;
}

}  // namespace

void bind_errors(py::module_& m) {
  ErrorClasses& c = error_classes();
  c.base = make_class(m, "LazygradError", py::make_tuple(py::handle(PyExc_RuntimeError)),
                      "Every error lazygrad raises for bad input; a RuntimeError.");
  c.index = make_class(m, "LazygradIndexError", py::make_tuple(c.base, py::handle(PyExc_IndexError)),
                       "A dimension or an index out of range (PyTorch raises IndexError).");
  c.value = make_class(m, "LazygradValueError", py::make_tuple(c.base, py::handle(PyExc_ValueError)),
                       "An argument with a wrong value (PyTorch raises ValueError).");
  c.size = make_class(m, "SizeError", py::make_tuple(c.value),
                      "A shape that cannot be: a negative size, or more elements than fit in 64 bits.");
  c.type = make_class(m, "LazygradTypeError", py::make_tuple(c.base, py::handle(PyExc_TypeError)),
                      "An argument of the wrong type (PyTorch raises TypeError).");
  c.not_implemented = make_class(m, "LazygradNotImplementedError",
                                 py::make_tuple(c.base, py::handle(PyExc_NotImplementedError)),
                                 "A valid request lazygrad does not implement.");
  c.out_of_memory = make_class(m, "OutOfMemoryError", py::make_tuple(c.base, py::handle(PyExc_MemoryError)),
                               "Memory the machine would not give; the message names the bytes.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::cast_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const SizeError& e) {
      PyErr_SetString(error_classes().size.ptr(), e.what());
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Interrupted)
        PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
      else
        PyErr_SetString(class_of(e.kind()).ptr(), e.what());
    }
  });
}

}  // namespace lazygrad::python
