// lazygrad.Tensor: the C++ Tensor handle as a Python class. This file: construction and the
// conversions bindings.h declares, properties, reading values out (numpy, tolist, item), autograd,
// no_grad, and the creation class methods (zeros, rand, arange, ...).
#include <memory>
#include <mutex>
#include <string>

#include "bindings.h"
#include "engine/schedule.h"
#include "multi/shard.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"

namespace lazygrad::python {

namespace {

Tensor from_array(py::array a) {
  py::dtype dt = a.dtype();
  if (dt.kind() == 'f' && dt.itemsize() > 8) a = a.attr("astype")("f8");  // long double
  if (!a.dtype().attr("isnative").cast<bool>()) a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
  DType ldt = numpy_to_dtype(a.dtype());
  if (!(a.flags() & py::array::c_style)) a = numpy().attr("ascontiguousarray")(a);
  Shape shape(a.shape(), a.shape() + a.ndim());
  return Tensor::from_bytes(a.data(), static_cast<size_t>(a.nbytes()), shape, ldt);
}

// A Python int as int32 when it fits (tinygrad's default_int), int64 when it needs to.
DType int_dtype(int64_t lo, int64_t hi) { return lo >= INT32_MIN && hi <= INT32_MAX ? kInt32 : kInt64; }

Tensor finish(Tensor t, py::handle device, py::handle requires_grad) {
  t = placed_on(std::move(t), device_name(device));
  if (!requires_grad.is_none() && requires_grad.cast<bool>()) {
    Unlocked u;  // marking a leaf computes its value
    t.requires_grad(true);
  }
  return t;
}

std::vector<std::unique_ptr<NoGrad>>& no_grad_stack() {
  static std::vector<std::unique_ptr<NoGrad>> s;
  return s;
}
std::unique_ptr<NoGrad>& no_grad_flag() {  // Tensor.no_grad = True
  static std::unique_ptr<NoGrad> g;
  return g;
}

Tensor creation(Tensor t, py::handle device, py::handle requires_grad) {
  return finish(std::move(t), device, requires_grad);
}

DType float_or(py::handle dtype) { return to_dtype(dtype).value_or(kFloat32); }

}  // namespace

py::module_& numpy() {
  // Leaked on purpose: destroying it after the interpreter is finalized would crash at exit.
  static py::module_& np = *new py::module_(py::module_::import("numpy"));
  return np;
}

std::recursive_mutex& engine_mutex() {
  static std::recursive_mutex mu;  // recursive: the Jit's callback into Python may evaluate again
  return mu;
}

Tensor to_tensor(py::handle data, std::optional<DType> dtype) {
  auto cast = [&](Tensor t) { return dtype && t.dtype() != *dtype ? t.to(*dtype) : t; };
  if (py::isinstance<Tensor>(data)) return cast(data.cast<const Tensor&>().detach());
  if (PyBool_Check(data.ptr())) return Tensor::full({}, data.cast<bool>(), dtype.value_or(kBool));
  if (PyLong_Check(data.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(data.ptr(), &overflow);
    if (overflow)
      throw py::value_error("Tensor: " + py::str(data).cast<std::string>() + " does not fit in int64");
    return Tensor::full({}, static_cast<int64_t>(v), dtype.value_or(int_dtype(v, v)));
  }
  if (PyFloat_Check(data.ptr())) return Tensor::full({}, data.cast<double>(), dtype.value_or(kFloat32));
  if (py::isinstance<py::array>(data)) return cast(from_array(py::reinterpret_borrow<py::array>(data)));
  if (py::isinstance(data, numpy().attr("generic"))) return cast(from_array(numpy().attr("asarray")(data)));
  if (py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) {
    std::optional<py::dtype> np_dt = dtype ? dtype_to_numpy(*dtype) : std::nullopt;
    py::array a = np_dt ? numpy().attr("array")(data, *np_dt) : numpy().attr("array")(data);
    char kind = a.dtype().kind();
    if (np_dt) return cast(from_array(a));
    if (kind == 'f') return cast(from_array(a.attr("astype")("f4")));
    if (kind == 'b') return cast(from_array(a));
    if (kind == 'i' || kind == 'u') {
      if (a.size() == 0) return cast(from_array(a.attr("astype")("i4")));
      auto lo = a.attr("min")().cast<int64_t>(), hi = a.attr("max")().cast<int64_t>();
      return cast(from_array(a.attr("astype")(int_dtype(lo, hi) == kInt32 ? "i4" : "i8")));
    }
    throw py::type_error("Tensor: cannot make a tensor of the elements of " +
                         py::repr(data).cast<std::string>().substr(0, 80) + " (numpy reads them as " +
                         py::str(py::handle(a.dtype())).cast<std::string>() + ")");
  }
  if (py::hasattr(data, "__array__")) return cast(from_array(numpy().attr("asarray")(data)));
  throw py::type_error("Tensor: cannot make a tensor from " +
                       py::str(py::type::of(data)).cast<std::string>());
}

int64_t to_int64(py::handle h, const char* what) {
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
  if (!i) throw py::error_already_set();  // not an integer: PyNumber_Index's TypeError
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow)
    throw py::value_error(std::string(what) + ": " + py::str(i).cast<std::string>() +
                          " does not fit in 64 bits");
  return v;
}

Shape to_shape(py::handle h, const char* what) {
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) return {to_int64(h, what)};
  if (!py::isinstance<py::sequence>(h) || py::isinstance<py::str>(h))
    throw py::type_error(std::string(what) + ": a shape is an int or a sequence of ints, got " +
                         py::repr(h).cast<std::string>());
  Shape s;
  for (py::handle x : py::reinterpret_borrow<py::sequence>(h)) {
    if (!PyLong_Check(x.ptr()) && !py::isinstance(x, numpy().attr("integer")))
      throw py::type_error(std::string(what) + ": shape entries are ints, got " +
                           py::repr(x).cast<std::string>());
    s.push_back(to_int64(x, what));
  }
  return s;
}

Shape varargs_shape(const py::args& args, const char* what) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return to_shape(args[0], what);
  return to_shape(args, what);
}

Axes to_axes(py::handle axis, py::handle alias) {
  if (!alias.is_none()) {
    if (!axis.is_none()) throw py::type_error("give axis= or dim=, not both");
    axis = alias;
  }
  if (axis.is_none()) return Axes();
  if (PyIndex_Check(axis.ptr())) return Axes(axis.cast<int64_t>());
  if (py::isinstance<py::sequence>(axis)) {
    auto v = to_shape(axis, "axis");
    if (v.empty()) return Axes();
    return Axes(v);
  }
  throw py::type_error("axis must be None, an int or a sequence of ints, got " +
                       py::repr(axis).cast<std::string>());
}

std::optional<int64_t> to_axis(py::handle axis, py::handle alias) {
  if (!alias.is_none()) {
    if (!axis.is_none()) throw py::type_error("give axis= or dim=, not both");
    axis = alias;
  }
  if (axis.is_none()) return std::nullopt;
  if (!PyIndex_Check(axis.ptr()))
    throw py::type_error("axis must be an int, got " + py::repr(axis).cast<std::string>());
  return axis.cast<int64_t>();
}

std::string device_name(py::handle device) {
  if (device.is_none()) return "";
  if (py::isinstance<py::tuple>(device) || py::isinstance<py::list>(device)) {  // sharded: tinygrad's tuple
    std::string out;
    for (py::handle d : device) out += (out.empty() ? "" : ",") + device_name(d);
    return out;
  }
  if (!py::isinstance<py::str>(device))
    throw py::type_error("device must be a str such as \"CPU\" or \"CL:1\", got " +
                         py::repr(device).cast<std::string>());
  try {
    std::string out;  // "CPU,CPU:1" is a tuple too
    for (const auto& d : split_devices(device.cast<std::string>()))
      out += (out.empty() ? "" : ",") + canonical_device(d);
    return out;
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

py::array to_numpy(const Tensor& t0) {
  Tensor t = t0.dtype() == kBFloat16 ? t0.to(kFloat32) : t0;
  if (t.is_sharded()) t = t.to(t.devices()[0]);  // the parts gathered
  py::dtype dt = *dtype_to_numpy(t.dtype());
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.numel() == 0) return py::array(dt, shape);
  std::shared_ptr<Buffer> buf;
  {
    Unlocked u;
    t.realize();  // on its own device: numpy() of a CL tensor computes it there, then copies
    if (t.device() != "CPU" && t.device().rfind("CPU:", 0) != 0) t = t.to("CPU").realize();
    Tensor c = t.contiguous();  // t itself when it is a whole, contiguous buffer
    c.realize();
    UOpPtr op = c.uop();
    const UOp* b = contiguous_buffer_node(op.get());
    if (b && b->numel() == c.numel()) buf = b->as<std::shared_ptr<Buffer>>();
  }
  if (!buf || !buf->host_ptr())
    throw Error("numpy: the tensor did not realize to a contiguous buffer in host memory");
  // The array views the buffer and keeps it alive (a capsule owns a reference).
  auto* keep = new std::shared_ptr<Buffer>(buf);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<Buffer>*>(p); });
  return py::array(dt, shape, buf->host_ptr(), owner);
}

TensorClass bind_tensor(py::module_& m) {
  TensorClass cls(m, "Tensor",
                  R"doc(A lazy tensor (tinygrad's Tensor API; docs/python.md).

Tensor(data, device=None, dtype=None, requires_grad=None): data is a Python scalar, a nested list, a
numpy array (any dtype, any strides) or another Tensor.)doc");
  cls.def(py::init([](py::handle data, py::handle device, py::handle dtype, py::handle requires_grad) {
            return finish(to_tensor(data, to_dtype(dtype)), device, requires_grad);
          }),
          py::arg("data"), py::arg("device") = py::none(), py::arg("dtype") = py::none(),
          py::arg("requires_grad") = py::none())
      // ---- properties ----
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device",
                             [](const Tensor& t) -> py::object {
                               if (!t.is_sharded()) return py::str(t.device());
                               return py::tuple(py::cast(t.devices()));  // tinygrad's sharded device
                             })
      .def(
          "shard",
          [](const Tensor& t, py::handle devices, std::optional<int64_t> axis) {
            return t.shard(split_devices(device_name(devices)), axis);
          },
          py::arg("devices"), py::arg("axis") = py::none(),
          "Splits the tensor along `axis` across `devices` (a copy on each without an axis).")
      .def(
          "shard_",
          [](Tensor& t, py::handle devices, std::optional<int64_t> axis) {
            const std::vector<std::string> names = split_devices(device_name(devices));
            {
              Unlocked u;  // the parts are computed now
              t.shard_(names, axis);
            }
            return t;
          },
          py::arg("devices"), py::arg("axis") = py::none(), "shard in place: every handle sees it.")
      .def_property_readonly("ndim", &Tensor::ndim)
      .def("dim", &Tensor::ndim)
      .def("numel", &Tensor::numel)
      .def("nbytes", &Tensor::nbytes)
      .def("element_size", &Tensor::element_size)
      .def("is_floating_point", [](const Tensor& t) { return is_float(t.dtype()); })
      .def(
          "size",
          [](const Tensor& t, py::handle dim) -> py::object {
            if (dim.is_none()) return py::tuple(py::cast(t.shape()));
            return py::int_(t.size(dim.cast<int64_t>()));
          },
          py::arg("dim") = py::none())
      .def("__len__",
           [](const Tensor& t) {
             if (t.ndim() == 0) throw TypeError("len() of a 0-d tensor");
             return t.shape()[0];
           })
      .def("__hash__", [](const Tensor& t) { return reinterpret_cast<intptr_t>(t.impl().get()); })
      .def("__bool__",
           [](const Tensor&) -> bool {
             throw TypeError("__bool__ on Tensor is not defined (use .item(), .all() or .any())");
           })
      .def("__repr__",
           [](const Tensor& t) {
             std::string s = "<Tensor shape=" + py::repr(py::tuple(py::cast(t.shape()))).cast<std::string>() +
                             " dtype=dtypes." + std::string(dtype_name(t.dtype())) + " on CPU";
             if (t.requires_grad()) s += " requires_grad";
             Tensor g = t.grad();
             return s + (g.defined() ? " with grad>" : " with grad None>");
           })
      .def("__str__",
           [](const Tensor& t) {
             Unlocked u;
             return t.to_string();
           })
      .def_property_readonly("is_realized", &Tensor::is_realized)
      // ---- reading values out ----
      .def("numpy", &to_numpy,
           "The values as a numpy array; a view of the buffer (no copy) when it is contiguous.")
      .def(
          "__array__",
          [](const Tensor& t, py::handle dtype, py::handle copy) -> py::object {
            // numpy 2 passes copy=True for np.array(t) and does not copy again: a view of the
            // buffer would see later assigns (an optimizer step, a Jit replay).
            py::object a = to_numpy(t);
            if (!dtype.is_none()) a = a.attr("astype")(dtype);
            if (!copy.is_none() && copy.cast<bool>()) a = a.attr("copy")();
            return a;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("tolist", [](const Tensor& t) { return to_numpy(t).attr("tolist")(); })
      .def("item",
           [](const Tensor& t) {
             if (t.numel() != 1)
               throw ValueError("item: a Tensor with " + std::to_string(t.numel()) + " elements (shape " +
                                shape_str(t.shape()) + ") cannot be converted to a scalar");
             return to_numpy(t).attr("item")();
           })
      .def("__float__", [](const Tensor& t) { return py::cast(t).attr("item")().cast<double>(); })
      .def("__int__", [](const Tensor& t) { return py::int_(py::cast(t).attr("item")()); })
      .def("realize",
           [](py::object self, py::args others) {  // tinygrad's t.realize(*others): one schedule
             std::vector<Tensor> ts{self.cast<Tensor>()};
             for (py::handle h : others) ts.push_back(h.cast<Tensor>());
             {
               Unlocked u;
               realize(std::move(ts));
             }
             return self;
           })
      .def("assign",
           [](py::object self, py::handle value) {
             Tensor& t = self.cast<Tensor&>();
             t.assign(py::isinstance<Tensor>(value) ? value.cast<const Tensor&>()
                                                    : to_tensor(value, t.dtype()));
             return self;
           })
      .def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone)
      .def("detach", &Tensor::detach)
      .def(
          "to",
          [](const Tensor& t, py::handle to, py::handle dtype) {
            Tensor r = t;
            if (!to.is_none()) {
              std::optional<DType> dt;
              try {
                dt = to_dtype(to);
              } catch (py::type_error&) {
                r = r.to(device_name(to));  // not a dtype: a device
              }
              if (dt) r = r.to(*dt);
            }
            if (auto dt = to_dtype(dtype)) r = r.to(*dt);
            return r;
          },
          py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def("cpu", [](const Tensor& t) { return t.to("CPU"); })
      .def(
          "to_",
          [](Tensor& t, py::handle device) {
            Unlocked u;  // the copy runs now
            move_to_device(t.impl()->base ? Tensor(t.impl()->base) : t, device_name(device));
            return t;
          },
          py::arg("device"),
          "Moves the tensor to the device in place (tinygrad's to_): every handle sees it.")
      .def(
          "cast", [](const Tensor& t, py::handle dtype) { return t.to(*to_dtype(dtype)); }, py::arg("dtype"))
      .def(
          "bitcast", [](const Tensor& t, py::handle dtype) { return t.bitcast(*to_dtype(dtype)); },
          py::arg("dtype"))
      .def("float", [](const Tensor& t) { return t.to(kFloat32); })
      .def("half", [](const Tensor& t) { return t.to(kFloat16); })
      .def("double", [](const Tensor& t) { return t.to(kFloat64); })
      .def("bfloat16", [](const Tensor& t) { return t.to(kBFloat16); })
      .def("int", [](const Tensor& t) { return t.to(kInt32); })
      .def("long", [](const Tensor& t) { return t.to(kInt64); })
      .def("short", [](const Tensor& t) { return t.to(kInt16); })
      .def("bool", [](const Tensor& t) { return t.to(kBool); })
      // ---- autograd ----
      .def_property(
          "requires_grad", [](const Tensor& t) { return t.requires_grad(); },
          [](Tensor& t, bool on) {
            Unlocked u;  // marking a leaf computes its value
            t.requires_grad(on);
          })
      .def(
          "requires_grad_",
          [](py::object self, bool on) {
            Tensor& t = self.cast<Tensor&>();
            {
              Unlocked u;
              t.requires_grad(on);
            }
            return self;
          },
          py::arg("requires_grad") = true)
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property(
          "grad",
          [](const Tensor& t) -> std::optional<Tensor> {
            Tensor g = t.grad();
            if (!g.defined()) return std::nullopt;
            return g;
          },
          [](Tensor& t, std::optional<Tensor> g) {
            if (!g) return t.zero_grad();
            if (g->shape() != t.shape())
              throw py::value_error("grad: shape " + shape_str(g->shape()) + " does not match the tensor's " +
                                    shape_str(t.shape()));
            t.impl()->grad = g->to(t.dtype()).impl();
          })
      .def(
          "backward",
          [](py::object self, std::optional<Tensor> gradient) {
            const Tensor& t = self.cast<const Tensor&>();
            Unlocked u;
            if (gradient)
              t.backward(*gradient);
            else
              t.backward();
            return self;
          },
          py::arg("gradient") = py::none())
      .def(
          "gradient",
          [](const Tensor& t, py::args targets, std::optional<Tensor> gradient) {
            std::vector<Tensor> ts;
            for (py::handle h : targets) ts.push_back(h.cast<Tensor>());
            return t.gradient(ts, gradient);
          },
          py::arg("gradient") = py::none())
      .def("zero_grad", &Tensor::zero_grad)
      .def_property_static(
          "no_grad", [](py::handle) { return NoGrad::active(); },
          [](py::handle, bool on) {
            if (on && !no_grad_flag()) no_grad_flag() = std::make_unique<NoGrad>();
            if (!on) no_grad_flag().reset();
          });
  cls.attr("training") = false;
  cls.attr("__array_priority__") = 1000;  // numpy's binary operators defer to Tensor's reflected ones
  m.def("_no_grad_enter", [] { no_grad_stack().push_back(std::make_unique<NoGrad>()); });
  m.def("_no_grad_exit", [] {
    if (!no_grad_stack().empty()) no_grad_stack().pop_back();
  });
  m.def("realize", [](std::vector<Tensor> ts) {
    Unlocked u;
    realize(std::move(ts));
  });
  return cls;
}

void bind_creation(TensorClass& cls) {
  using py::arg;
  auto none = py::none();
  cls.def_static(
         "empty",
         [](py::args shape, py::handle dtype, py::handle device, py::handle rg) {
           return creation(Tensor::empty(varargs_shape(shape, "empty"), float_or(dtype)), device, rg);
         },
         arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def_static(
          "zeros",
          [](py::args shape, py::handle dtype, py::handle device, py::handle rg) {
            return creation(Tensor::zeros(varargs_shape(shape, "zeros"), float_or(dtype)), device, rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def_static(
          "ones",
          [](py::args shape, py::handle dtype, py::handle device, py::handle rg) {
            return creation(Tensor::ones(varargs_shape(shape, "ones"), float_or(dtype)), device, rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def_static(
          "full",
          [](py::handle shape, py::handle fill, py::handle dtype, py::handle device, py::handle rg) {
            auto s = to_scalar(fill);
            if (!s) throw py::type_error("full: fill_value must be a number");
            DType dt = to_dtype(dtype).value_or(to_tensor(fill).dtype());  // tinygrad's: int32, float32, bool
            return creation(Tensor::full(to_shape(shape, "full"), *s, dt), device, rg);
          },
          arg("shape"), arg("fill_value"), arg("dtype") = none, arg("device") = none,
          arg("requires_grad") = none)
      .def_static(
          "arange",
          [](py::handle start, py::handle stop, py::handle step, py::handle dtype, py::handle device,
             py::handle rg) {
            py::int_ zero(0);
            if (stop.is_none()) stop = start, start = zero;  // arange(n): 0 to n
            auto s0 = to_scalar(start), s1 = to_scalar(stop), s2 = to_scalar(step);
            if (!s0 || !s1 || !s2) throw py::type_error("arange: start, stop and step are numbers");
            bool fl = s0->is_float() || s1->is_float() || s2->is_float();
            DType dt = to_dtype(dtype).value_or(fl ? kFloat32 : kInt32);
            return creation(Tensor::arange(*s0, *s1, *s2, dt), device, rg);
          },
          arg("start"), arg("stop") = none, arg("step") = 1, arg("dtype") = none, arg("device") = none,
          arg("requires_grad") = none)
      .def_static(
          "linspace",
          [](double start, double stop, py::handle steps, py::handle dtype, py::handle device,
             py::handle rg) {
            return creation(Tensor::linspace(start, stop, to_int64(steps, "linspace"), float_or(dtype)),
                            device, rg);
          },
          arg("start"), arg("stop"), arg("steps"), arg("dtype") = none, arg("device") = none,
          arg("requires_grad") = none)
      .def_static(
          "eye",
          [](py::handle n, py::handle m, py::handle dtype, py::handle device, py::handle rg) {
            std::optional<int64_t> cols;
            if (!m.is_none()) cols = to_int64(m, "eye");
            return creation(Tensor::eye(to_int64(n, "eye"), cols, float_or(dtype)), device, rg);
          },
          arg("n"), arg("m") = none, arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def_static("manual_seed", &Tensor::manual_seed, arg("seed") = 0)
      .def_static(
          "rand",
          [](py::args shape, py::handle dtype, py::handle device, py::handle rg) {
            return creation(Tensor::rand(varargs_shape(shape, "rand"), float_or(dtype)), device, rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def_static(
          "randn",
          [](py::args shape, py::handle dtype, py::handle device, py::handle rg) {
            return creation(Tensor::randn(varargs_shape(shape, "randn"), float_or(dtype)), device, rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def_static(
          "normal",
          [](py::args shape, double mean, double std, py::handle dtype, py::handle device, py::handle rg) {
            DType dt = float_or(dtype);
            Tensor t = Tensor::randn(varargs_shape(shape, "normal"), dt) * std + mean;
            return creation(t.to(dt), device, rg);
          },
          arg("mean") = 0.0, arg("std") = 1.0, arg("dtype") = none, arg("device") = none,
          arg("requires_grad") = none)
      .def_static(
          "uniform",
          [](py::args shape, double low, double high, py::handle dtype, py::handle device, py::handle rg) {
            return creation(Tensor::uniform(varargs_shape(shape, "uniform"), low, high, float_or(dtype)),
                            device, rg);
          },
          arg("low") = 0.0, arg("high") = 1.0, arg("dtype") = none, arg("device") = none,
          arg("requires_grad") = none)
      .def_static(
          "randint",
          [](py::args shape, int64_t low, int64_t high, py::handle dtype, py::handle device, py::handle rg) {
            if (high <= low)  // RuntimeError in PyTorch ("random_ expects 'from' to be less than 'to'")
              throw Error("randint: high (" + std::to_string(high) + ") must be greater than low (" +
                          std::to_string(low) + ")");
            DType dt = to_dtype(dtype).value_or(kInt32);
            return creation(Tensor::randint(low, high, varargs_shape(shape, "randint"), dt), device, rg);
          },
          arg("low") = 0, arg("high") = 10, arg("dtype") = none, arg("device") = none,
          arg("requires_grad") = none)
      // The _like functions are methods too (t.zeros_like()), as in tinygrad.
      .def(
          "zeros_like",
          [](const Tensor& t, py::handle dtype, py::handle device, py::handle rg) {
            return creation(Tensor::zeros(t.shape(), to_dtype(dtype).value_or(t.dtype()), t.device()), device,
                            rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def(
          "ones_like",
          [](const Tensor& t, py::handle dtype, py::handle device, py::handle rg) {
            return creation(Tensor::ones(t.shape(), to_dtype(dtype).value_or(t.dtype()), t.device()), device,
                            rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def(
          "full_like",
          [](const Tensor& t, py::handle fill, py::handle dtype, py::handle device, py::handle rg) {
            auto s = to_scalar(fill);
            if (!s) throw py::type_error("full_like: fill_value must be a number");
            return creation(Tensor::full(t.shape(), *s, to_dtype(dtype).value_or(t.dtype()), t.device()),
                            device, rg);
          },
          arg("fill_value"), arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def(
          "rand_like",
          [](const Tensor& t, py::handle dtype, py::handle device, py::handle rg) {
            DType dt = to_dtype(dtype).value_or(is_float(t.dtype()) ? t.dtype() : kFloat32);
            return creation(Tensor::rand(t.shape(), dt), device, rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none)
      .def(
          "randn_like",
          [](const Tensor& t, py::handle dtype, py::handle device, py::handle rg) {
            DType dt = to_dtype(dtype).value_or(is_float(t.dtype()) ? t.dtype() : kFloat32);
            return creation(Tensor::randn(t.shape(), dt), device, rg);
          },
          arg("dtype") = none, arg("device") = none, arg("requires_grad") = none);
}

}  // namespace lazygrad::python
