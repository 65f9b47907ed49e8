// lazygrad._C: the C++ core as a Python extension module (pybind11). The package python/lazygrad/
// imports it and adds what is easier to say in Python; docs/python.md describes the API.
#include "bindings.h"
#include "lazygrad/counters.h"
#include "lazygrad/runtime.h"
#include "runtime/device.h"

namespace py = pybind11;
using lazygrad::GlobalCounters;

namespace {

// A counter as a static property of GlobalCounters, read and set as its value type.
template <class Counter>
void counter(py::class_<GlobalCounters>& gc, const char* name, Counter& c) {
  using T = decltype(c + 0);  // the value type, for atomic counters too
  gc.def_property_static(
      name, [&c](py::handle) { return static_cast<T>(c); }, [&c](py::handle, T v) { c = v; });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  namespace lp = lazygrad::python;
  m.doc() = "lazygrad: lazy tensors with fused, run-time compiled kernels (the C++ core)";
  lp::bind_errors(m);
  lp::bind_dtypes(m);
  auto cls = lp::bind_tensor(m);
  lp::bind_creation(cls);
  lp::bind_tensor_ops(cls);
  lp::bind_tensor_math_ops(m, cls);
  lp::bind_indexing(cls);
  lp::bind_nn(m);
  lp::bind_profile(m);

  py::class_<GlobalCounters> gc(m, "GlobalCounters", "What the runtime did (tinygrad's GlobalCounters).");
  counter(gc, "kernel_count", GlobalCounters::kernel_count);
  counter(gc, "compile_count", GlobalCounters::compile_count);
  counter(gc, "cache_hits", GlobalCounters::cache_hits);
  counter(gc, "global_ops", GlobalCounters::global_ops);
  counter(gc, "global_mem", GlobalCounters::global_mem);
  counter(gc, "time_sum_s", GlobalCounters::time_sum_s);
  counter(gc, "compile_s", GlobalCounters::compile_s);
  counter(gc, "mem_used", GlobalCounters::mem_used);
  gc.def_static("reset", &GlobalCounters::reset);
  // The settings lazygrad reads from the environment once (helpers.Context changes them at run time).
  m.def("get_setting", [](const std::string& name) -> int {
    const lazygrad::Settings& s = lazygrad::settings();
    if (name == "DEBUG") return s.debug;
    if (name == "BEAM") return s.beam;
    if (name == "NOOPT") return s.noopt;
    if (name == "THREADS") return s.threads;
    if (name == "FTZ") return s.flush_denormals;
    throw py::key_error(name);
  });
  m.def("set_debug", &lazygrad::set_debug, py::arg("level"));
  m.def("set_beam", &lazygrad::set_beam, py::arg("width"));
  m.def("set_noopt", &lazygrad::set_noopt, py::arg("on"));
  m.def("set_threads", &lazygrad::set_threads, py::arg("n"));
  m.def("set_flush_denormals", &lazygrad::set_flush_denormals, py::arg("on"));
  m.def("version", &lazygrad::version);
  m.def(
      "devices",
      [] {
        py::list out;
        for (const lazygrad::DeviceInfo& d : lazygrad::devices())
          out.append(py::make_tuple(d.name, d.available, d.detail));
        return out;
      },
      "(name, available, detail) of every device found, and why each missing kind is missing");
  m.def("default_device", &lazygrad::default_device);
  m.def("set_default_device", &lazygrad::set_default_device, py::arg("device"));
  m.def("canonical_device", &lazygrad::canonical_device, py::arg("device"));
}
