// lazygrad's DType as the Python class lazygrad.DType; python/lazygrad/dtype.py gathers the values
// into tinygrad's `dtypes` namespace (dtypes.float32, dtypes.half, dtypes.default_float, ...).
#include <string>

#include "bindings.h"

namespace lazygrad::python {

namespace {

// numpy's type characters for each dtype lazygrad has in common with numpy.
const char* numpy_char(DType dt) {
  switch (dt) {
    case kBool:
      return "?";
    case kUInt8:
      return "u1";
    case kInt8:
      return "i1";
    case kInt16:
      return "i2";
    case kUInt16:
      return "u2";
    case kInt32:
      return "i4";
    case kUInt32:
      return "u4";
    case kInt64:
      return "i8";
    case kUInt64:
      return "u8";
    case kFloat16:
      return "f2";
    case kFloat32:
      return "f4";
    case kFloat64:
      return "f8";
    case kBFloat16:
      return nullptr;
  }
  return nullptr;
}

// Names accepted for dtype= besides DType values: PyTorch's and tinygrad's spellings. Also the
// attributes of lazygrad.dtypes (python/lazygrad/dtype.py reads them from _C.dtype_names()).
constexpr std::pair<const char*, DType> kNames[] = {
    {"bool", kBool},       {"uint8", kUInt8},     {"uchar", kUInt8},     {"int8", kInt8},
    {"char", kInt8},       {"int16", kInt16},     {"short", kInt16},     {"uint16", kUInt16},
    {"ushort", kUInt16},   {"int32", kInt32},     {"int", kInt32},       {"uint32", kUInt32},
    {"uint", kUInt32},     {"int64", kInt64},     {"long", kInt64},      {"uint64", kUInt64},
    {"ulong", kUInt64},    {"float16", kFloat16}, {"half", kFloat16},    {"bfloat16", kBFloat16},
    {"float32", kFloat32}, {"float", kFloat32},   {"float64", kFloat64}, {"double", kFloat64}};

std::optional<DType> dtype_from_name(const std::string& s) {
  for (const auto& [name, dt] : kNames)
    if (s == name) return dt;
  return std::nullopt;
}

}  // namespace

std::optional<py::dtype> dtype_to_numpy(DType dt) {
  const char* c = numpy_char(dt);
  if (!c) return std::nullopt;
  return py::dtype(std::string(c));
}

DType numpy_to_dtype(const py::dtype& dt) {
  char kind = dt.kind();
  auto size = dt.itemsize();
  if (kind == 'b') return kBool;
  if (kind == 'f' && size == 2) return kFloat16;
  if (kind == 'f' && size == 4) return kFloat32;
  if (kind == 'f' && size == 8) return kFloat64;
  if (kind == 'i' || kind == 'u') {
    bool u = kind == 'u';
    switch (size) {
      case 1:
        return u ? kUInt8 : kInt8;
      case 2:
        return u ? kUInt16 : kInt16;
      case 4:
        return u ? kUInt32 : kInt32;
      case 8:
        return u ? kUInt64 : kInt64;
      default:
        break;
    }
  }
  throw py::type_error("lazygrad has no dtype for numpy's " + py::str(py::handle(dt)).cast<std::string>());
}

std::optional<DType> to_dtype(py::handle h) {
  if (h.is_none()) return std::nullopt;
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::isinstance<py::str>(h)) {
    auto s = h.cast<std::string>();
    if (s.rfind("dtypes.", 0) == 0) s = s.substr(7);
    if (auto dt = dtype_from_name(s)) return dt;
    throw py::type_error("unknown dtype '" + h.cast<std::string>() + "'");
  }
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return kFloat32;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return kInt32;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return kBool;
  // A numpy dtype, or anything numpy reads as one (np.float32, "f4").
  if (py::isinstance<py::dtype>(h) || py::hasattr(h, "dtype") || PyType_Check(h.ptr())) {
    try {
      py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
      return numpy_to_dtype(dt);
    } catch (py::error_already_set&) {
    }
  }
  throw py::type_error("dtype must be a lazygrad dtype (lazygrad.dtypes.*), a numpy dtype or a name, got " +
                       py::repr(h).cast<std::string>());
}

void bind_dtypes(py::module_& m) {
  py::enum_<DType> e(m, "DType", "An element type; lazygrad.dtypes names them all.");
  for (DType dt : kAllDTypes) e.value(std::string(dtype_name(dt)).c_str(), dt);
  auto name = [](DType dt) { return std::string(dtype_name(dt)); };
  auto repr = [](DType dt) { return "dtypes." + std::string(dtype_name(dt)); };
  // Assigned, not def()'d: def() would add an overload behind enum_'s own name/__repr__/__str__.
  py::object property = py::module_::import("builtins").attr("property");
  e.attr("name") = property(py::cpp_function(name));
  e.attr("__repr__") = py::cpp_function(repr, py::is_method(e));
  e.attr("__str__") = py::cpp_function(repr, py::is_method(e));
  e.def_property_readonly("itemsize", [](DType dt) { return itemsize(dt); })
      .def_property_readonly("bitsize", [](DType dt) { return bit_width(dt); })
      .def_property_readonly("np",
                             [](DType dt) -> py::object {
                               auto n = dtype_to_numpy(dt);
                               return n ? py::object(*n) : py::object(py::none());
                             })
      .def("is_float", [](DType dt) { return is_float(dt); })
      .def("is_int", [](DType dt) { return is_int(dt); })
      .def("is_unsigned", [](DType dt) { return is_unsigned(dt); });
  m.def("promote_types", &promote_types, py::arg("a"), py::arg("b"));
  m.def("dtype_names", [] {
    py::list out;
    for (const auto& [name, dt] : kNames) out.append(py::make_tuple(name, dt));
    return out;
  });
}

}  // namespace lazygrad::python
