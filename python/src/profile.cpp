// lazygrad.profile, lazygrad.ProfileScope and lazygrad.write_viz: the profiler (docs/profile.md)
// and VIZ (docs/viz.md) for Python. nn.Module.__call__ opens the module's ProfileScope, as C++'s
// Module::operator() does, so a model of Python modules is charged layer by layer.
#include "lazygrad/profile.h"

#include <pybind11/functional.h>

#include <memory>

#include "bindings.h"

namespace lazygrad::python {

namespace {

// A scope as a context manager: entered in __enter__, left in __exit__ (scopes nest, so they are
// left in the order Python's `with` blocks end).
struct ScopeContext {
  py::object owner;  // a Module, or a label (str)
  std::unique_ptr<ProfileScope> scope;
};

}  // namespace

void bind_profile(py::module_& m) {
  py::class_<Roofline>(m, "Roofline", "The roofline's ceilings, measured with lazygrad's own kernels.")
      .def_readonly("device", &Roofline::device)
      .def_readonly("gflops", &Roofline::gflops)
      .def_readonly("gbs", &Roofline::gbs)
      .def("attainable_gflops", &Roofline::attainable_gflops, py::arg("intensity"));
  py::class_<LayerProfile>(m, "LayerProfile", "One layer's share of the profiled work.")
      .def_readonly("name", &LayerProfile::name)
      .def_readonly("type", &LayerProfile::type)
      .def_readonly("parameters", &LayerProfile::parameters)
      .def_readonly("flops", &LayerProfile::flops)
      .def_readonly("bytes", &LayerProfile::bytes)
      .def_readonly("seconds", &LayerProfile::seconds)
      .def_readonly("kernels", &LayerProfile::kernels)
      .def_readonly("shared_kernels", &LayerProfile::shared_kernels)
      .def("__repr__",
           [](const LayerProfile& l) { return "<LayerProfile " + l.name + " (" + l.type + ")>"; });
  py::class_<KernelProfile>(m, "KernelProfile", "One launch and the layers' shares of it.")
      .def_readonly("name", &KernelProfile::name)
      .def_readonly("device", &KernelProfile::device)
      .def_readonly("flops", &KernelProfile::flops)
      .def_readonly("bytes", &KernelProfile::bytes)
      .def_readonly("seconds", &KernelProfile::seconds)
      .def_readonly("shares", &KernelProfile::shares);
  py::class_<Profile>(m, "Profile", "What lazygrad.profile(fn) measured; str() is the table.")
      .def_readonly("layers", &Profile::layers)
      .def_readonly("kernels", &Profile::kernels)
      .def_readonly("roofline", &Profile::roofline)
      .def_readonly("seconds", &Profile::seconds)
      .def("table", &Profile::table)
      .def("__str__", &Profile::table);
  m.def(
      "profile",
      [](const std::function<void()>& fn, const std::shared_ptr<nn::Module>& model) {
        return profile(fn, model.get());
      },
      py::arg("fn"), py::arg("model") = nullptr,
      "Runs fn() once and charges every kernel it runs to the layers whose graph nodes it computes "
      "(by FLOPs share); with model, layers are named by their place in it (docs/profile.md).");
  m.def("measure_roofline", &measure_roofline, py::arg("device") = "");
  m.def("write_viz", &write_viz, py::arg("fn"), py::arg("path"),
        "Runs fn() once and writes one VIZ page of every realize in it to path (docs/viz.md).");
  m.def("set_viz", &set_viz, py::arg("path"),
        "VIZ on, writing each realize's page to path; '' turns it off.");
  py::class_<ScopeContext>(
      m, "ProfileScope",
      "with ProfileScope(module_or_label): work made inside is charged to it by the profiler.")
      .def(py::init([](py::object owner) {
             return ScopeContext{std::move(owner), nullptr};
           }),
           py::arg("owner"))
      .def("__enter__",
           [](ScopeContext& c) {
             if (py::isinstance<py::str>(c.owner))
               c.scope = std::make_unique<ProfileScope>(c.owner.cast<std::string>());
             else
               c.scope = std::make_unique<ProfileScope>(*c.owner.cast<std::shared_ptr<nn::Module>>());
             return &c;
           })
      .def("__exit__", [](ScopeContext& c, const py::args&) { c.scope.reset(); });
}

}  // namespace lazygrad::python
