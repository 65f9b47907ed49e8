// nn.state.gguf_load's C++ side: lazygrad's GGUF reader (include/lazygrad/gguf.h), with the metadata
// as Python values (ints, floats, bools, strings, and lists of them) and the tensors by name.
#include "lazygrad/gguf.h"

#include "bindings.h"

namespace lazygrad::python {

namespace {

bool is_integer_type(GGUFType t) {
  switch (t) {
    case GGUFType::UInt8:
    case GGUFType::Int8:
    case GGUFType::UInt16:
    case GGUFType::Int16:
    case GGUFType::UInt32:
    case GGUFType::Int32:
    case GGUFType::UInt64:
    case GGUFType::Int64:
      return true;
    default:
      return false;
  }
}

// One element (i) of a value, as the Python type of its GGUF type. uint64 goes through as_uint so
// values above INT64_MAX stay exact.
py::object element(const GGUFValue& v, size_t i) {
  GGUFType t = v.element_type;
  if (t == GGUFType::String) return py::str(v.strings.at(i));
  if (t == GGUFType::Bool) return py::bool_(v.int_at(i) != 0);
  if (t == GGUFType::UInt64 && !v.is_array()) return py::int_(v.as_uint());
  if (is_integer_type(t)) return py::int_(v.int_at(i));
  return py::float_(v.double_at(i));
}

py::object value(const GGUFValue& v) {
  if (!v.is_array()) return element(v, 0);
  py::list out;
  for (size_t i = 0; i < v.size(); i++) out.append(element(v, i));
  return out;
}

}  // namespace

void bind_gguf(py::module_& nn) {
  nn.def(
      "gguf_load",
      [](const std::string& path) {
        GGUFFile f;
        {
          Unlocked unlocked;  // reads (and dequantizes) the whole file
          f = load_gguf(path);
        }
        py::dict kv, tensors;
        for (const auto& [key, v] : f.metadata) kv[py::str(key)] = value(v);
        for (const GGUFTensorInfo& info : f.tensor_infos) tensors[py::str(info.name)] = f.tensor(info.name);
        return py::make_tuple(kv, tensors);
      },
      py::arg("path"), "(metadata dict, tensors by name) of a GGUF file");
}

}  // namespace lazygrad::python
