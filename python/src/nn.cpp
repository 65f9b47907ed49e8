// The parts of nn that stay in C++ for speed and exactness, bound for python/lazygrad/nn/: the
// optimizers (their updates are fused kernels with Variables for the per-step values), the
// safetensors reader and writer, and the Jit that nn.TinyJit wraps. The layers and the parameter
// walk are Python (python/lazygrad/nn/__init__.py, nn/state.py).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "lazygrad/lazygrad.h"

namespace lazygrad::python {

namespace {

using optim::Optimizer;

// Only what can be trained: tinygrad's optimizers skip tensors whose requires_grad is False (a
// BatchNorm's running statistics) that a parameter walk finds.
std::vector<Tensor> trainable(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& t : params)
    if (t.requires_grad()) out.push_back(t);
  return out;
}

// kernel_size=3, stride=(1, 2): an int or a sequence of ints.
Tensor::IntList int_list(const py::handle& h) {
  if (py::isinstance<py::int_>(h)) return Tensor::IntList(h.cast<int64_t>());
  return Tensor::IntList(h.cast<std::vector<int64_t>>());
}
Tensor::IntList optional_int_list(const py::object& h) {
  return h.is_none() ? Tensor::IntList() : int_list(h);
}
Tensor::ConvPadding conv_padding(const py::handle& h) {
  if (py::isinstance<py::str>(h)) return Tensor::ConvPadding(h.cast<std::string>());
  if (py::isinstance<py::int_>(h)) return Tensor::ConvPadding(h.cast<int64_t>());
  return Tensor::ConvPadding(h.cast<std::vector<int64_t>>());
}

// Python subclasses of nn.Module override forward; C++ containers (Sequential) call it through here.
class PyModule : public nn::Module {
 public:
  using nn::Module::Module;
  Tensor forward(const Tensor& input) override { PYBIND11_OVERRIDE(Tensor, nn::Module, forward, input); }
  std::string type_name() const override {
    py::gil_scoped_acquire gil;
    py::object self = py::cast(this, py::return_value_policy::reference);
    return py::str(self.get_type().attr("__name__"));
  }
};

// A module handed to C++ (a container, register_module). One written in Python must keep its
// Python object alive as long as C++ holds it, or its forward() override would be lost with the
// object: the handle C++ keeps owns a reference to it (dropped with the GIL held).
std::shared_ptr<nn::Module> held(const py::handle& h) {
  auto module = h.cast<std::shared_ptr<nn::Module>>();
  if (!dynamic_cast<PyModule*>(module.get())) return module;
  auto* ref = new py::object(py::reinterpret_borrow<py::object>(h));
  std::shared_ptr<py::object> owner(ref, [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return std::shared_ptr<nn::Module>(owner, module.get());
}

std::vector<std::shared_ptr<nn::Module>> held_all(const py::iterable& modules) {
  std::vector<std::shared_ptr<nn::Module>> out;
  for (const auto& h : modules) out.push_back(held(h));
  return out;
}

template <class M>
using ModuleClass = py::class_<M, nn::Module, std::shared_ptr<M>>;

// A layer's tensor attribute (weight, bias): reading gives the module's handle; assigning registers
// the new tensor under the same name, as PyTorch's setattr of a Parameter does.
template <class M>
void tensor_attr(ModuleClass<M>& cls, const char* name, Tensor M::*member) {
  cls.def_property(
      name,
      [member](const M& m) -> py::object { return (m.*member).defined() ? py::cast(m.*member) : py::none(); },
      [member, name](M& m, const Tensor& t) { m.*member = m.register_parameter(name, t); });
}

void bind_modules(py::module_& nn) {
  py::class_<nn::Module, PyModule, std::shared_ptr<nn::Module>>(nn, "Module")
      .def(py::init<>())
      .def("forward", &nn::Module::forward, py::arg("input"))
      .def(
          "__call__", [](nn::Module& self, const Tensor& input) { return self(input); }, py::arg("input"))
      .def("register_parameter", &nn::Module::register_parameter, py::arg("name"), py::arg("param"),
           py::arg("requires_grad") = true)
      .def("register_buffer", &nn::Module::register_buffer, py::arg("name"), py::arg("buffer"),
           py::arg("persistent") = true)
      .def(
          "register_module",
          [](nn::Module& self, const std::string& name, const py::handle& child) {
            self.register_module(name, held(child));
          },
          py::arg("name"), py::arg("module"))
      .def("parameters", &nn::Module::parameters, py::arg("recurse") = true)
      .def("named_parameters", &nn::Module::named_parameters, py::arg("prefix") = "",
           py::arg("recurse") = true)
      .def("buffers", &nn::Module::buffers, py::arg("recurse") = true)
      .def("named_buffers", &nn::Module::named_buffers, py::arg("prefix") = "", py::arg("recurse") = true)
      .def("children", &nn::Module::children)
      .def("named_children", &nn::Module::named_children)
      .def("state_dict", &nn::Module::state_dict, py::call_guard<Unlocked>())
      .def(
          "load_state_dict",
          [](nn::Module& self, const StateDict& sd, bool strict) {
            nn::IncompatibleKeys keys;
            {
              Unlocked unlocked;
              keys = self.load_state_dict(sd, strict);
            }
            return py::make_tuple(keys.missing_keys, keys.unexpected_keys);
          },
          py::arg("state_dict"), py::arg("strict") = true)
      .def(
          "train",
          [](nn::Module& self, bool mode) -> nn::Module& {
            self.train(mode);
            return self;
          },
          py::arg("mode") = true, py::return_value_policy::reference_internal)
      .def(
          "eval",
          [](nn::Module& self) -> nn::Module& {
            self.eval();
            return self;
          },
          py::return_value_policy::reference_internal)
      .def_property_readonly("training", &nn::Module::is_training)
      .def("zero_grad", &nn::Module::zero_grad)
      .def("__repr__", &nn::Module::to_string);

  ModuleClass<nn::Sequential>(nn, "Sequential")
      .def(py::init(
          [](const py::args& modules) { return std::make_shared<nn::Sequential>(held_all(modules)); }))
      .def(
          "append", [](nn::Sequential& self, const py::handle& m) { self.append(held(m)); },
          py::arg("module"))
      .def("__len__", &nn::Sequential::size)
      .def("__getitem__", &nn::Sequential::operator[], py::arg("index"));
  ModuleClass<nn::ModuleList>(nn, "ModuleList")
      .def(py::init([](const py::iterable& modules) {
             return std::make_shared<nn::ModuleList>(held_all(modules));
           }),
           py::arg("modules") = py::list())
      .def(
          "append", [](nn::ModuleList& self, const py::handle& m) { self.append(held(m)); },
          py::arg("module"))
      .def("__len__", &nn::ModuleList::size)
      .def("__getitem__", &nn::ModuleList::operator[], py::arg("index"));
  ModuleClass<nn::Identity>(nn, "Identity").def(py::init<>());

  auto linear = ModuleClass<nn::Linear>(nn, "Linear")
                    .def(py::init<int64_t, int64_t, bool>(), py::arg("in_features"), py::arg("out_features"),
                         py::arg("bias") = true);
  linear.def_readonly("in_features", &nn::Linear::in_features)
      .def_readonly("out_features", &nn::Linear::out_features);
  tensor_attr(linear, "weight", &nn::Linear::weight);
  tensor_attr(linear, "bias", &nn::Linear::bias);

  py::class_<nn::ConvNd, nn::Module, std::shared_ptr<nn::ConvNd>> conv(nn, "_ConvNd");
  conv.def_readonly("in_channels", &nn::ConvNd::in_channels)
      .def_readonly("out_channels", &nn::ConvNd::out_channels)
      .def_readonly("kernel_size", &nn::ConvNd::kernel_size)
      .def_readonly("stride", &nn::ConvNd::stride)
      .def_readonly("dilation", &nn::ConvNd::dilation)
      .def_readonly("groups", &nn::ConvNd::groups);
  tensor_attr(conv, "weight", &nn::ConvNd::weight);
  tensor_attr(conv, "bias", &nn::ConvNd::bias);
  auto conv_init = [](auto tag) {
    using C = typename decltype(tag)::type;
    return py::init([](int64_t in, int64_t out, const py::object& k, const py::object& stride,
                       const py::object& padding, const py::object& dilation, int64_t groups, bool bias) {
      return std::make_shared<C>(in, out, int_list(k), int_list(stride), conv_padding(padding),
                                 int_list(dilation), groups, bias);
    });
  };
  auto conv_args = [](auto& cls, auto init) {
    cls.def(std::move(init), py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"),
            py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1,
            py::arg("bias") = true);
  };
  py::class_<nn::Conv1d, nn::ConvNd, std::shared_ptr<nn::Conv1d>> conv1d(nn, "Conv1d");
  conv_args(conv1d, conv_init(std::type_identity<nn::Conv1d>{}));
  py::class_<nn::Conv2d, nn::ConvNd, std::shared_ptr<nn::Conv2d>> conv2d(nn, "Conv2d");
  conv_args(conv2d, conv_init(std::type_identity<nn::Conv2d>{}));
  py::class_<nn::Conv3d, nn::ConvNd, std::shared_ptr<nn::Conv3d>> conv3d(nn, "Conv3d");
  conv_args(conv3d, conv_init(std::type_identity<nn::Conv3d>{}));
  auto convt_init = [](auto tag) {
    using C = typename decltype(tag)::type;
    return py::init([](int64_t in, int64_t out, const py::object& k, const py::object& stride,
                       const py::object& padding, const py::object& output_padding, int64_t groups, bool bias,
                       const py::object& dilation) {
      return std::make_shared<C>(in, out, int_list(k), int_list(stride), int_list(padding),
                                 int_list(output_padding), groups, bias, int_list(dilation));
    });
  };
  auto convt_args = [](auto& cls, auto init) {
    cls.def(std::move(init), py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"),
            py::arg("stride") = 1, py::arg("padding") = 0, py::arg("output_padding") = 0,
            py::arg("groups") = 1, py::arg("bias") = true, py::arg("dilation") = 1);
  };
  py::class_<nn::ConvTranspose1d, nn::ConvNd, std::shared_ptr<nn::ConvTranspose1d>> convt1d(
      nn, "ConvTranspose1d");
  convt_args(convt1d, convt_init(std::type_identity<nn::ConvTranspose1d>{}));
  py::class_<nn::ConvTranspose2d, nn::ConvNd, std::shared_ptr<nn::ConvTranspose2d>> convt2d(
      nn, "ConvTranspose2d");
  convt_args(convt2d, convt_init(std::type_identity<nn::ConvTranspose2d>{}));

  auto embedding = ModuleClass<nn::Embedding>(nn, "Embedding")
                       .def(py::init<int64_t, int64_t, std::optional<int64_t>>(), py::arg("num_embeddings"),
                            py::arg("embedding_dim"), py::arg("padding_idx") = py::none());
  tensor_attr(embedding, "weight", &nn::Embedding::weight);

  // tinygrad's argument order: (sz, eps, affine, track_running_stats, momentum); PyTorch's names.
  py::class_<nn::BatchNorm, nn::Module, std::shared_ptr<nn::BatchNorm>> bn(nn, "_BatchNorm");
  bn.def_readonly("num_features", &nn::BatchNorm::num_features)
      .def_readonly("eps", &nn::BatchNorm::eps)
      .def_readonly("momentum", &nn::BatchNorm::momentum)
      .def_property_readonly("running_mean", [](const nn::BatchNorm& b) { return b.running_mean; })
      .def_property_readonly("running_var", [](const nn::BatchNorm& b) { return b.running_var; });
  tensor_attr(bn, "weight", &nn::BatchNorm::weight);
  tensor_attr(bn, "bias", &nn::BatchNorm::bias);
  auto bn_init = [](auto tag) {
    using B = typename decltype(tag)::type;
    return py::init([](int64_t sz, double eps, bool affine, bool track, double momentum) {
      return std::make_shared<B>(sz, eps, momentum, affine, track);
    });
  };
  auto bn_args = [](auto& cls, auto init) {
    cls.def(std::move(init), py::arg("num_features"), py::arg("eps") = 1e-5, py::arg("affine") = true,
            py::arg("track_running_stats") = true, py::arg("momentum") = 0.1);
  };
  py::class_<nn::BatchNorm1d, nn::BatchNorm, std::shared_ptr<nn::BatchNorm1d>> bn1(nn, "BatchNorm1d");
  bn_args(bn1, bn_init(std::type_identity<nn::BatchNorm1d>{}));
  py::class_<nn::BatchNorm2d, nn::BatchNorm, std::shared_ptr<nn::BatchNorm2d>> bn2(nn, "BatchNorm2d");
  bn_args(bn2, bn_init(std::type_identity<nn::BatchNorm2d>{}));
  py::class_<nn::BatchNorm3d, nn::BatchNorm, std::shared_ptr<nn::BatchNorm3d>> bn3(nn, "BatchNorm3d");
  bn_args(bn3, bn_init(std::type_identity<nn::BatchNorm3d>{}));

  auto layer_norm = ModuleClass<nn::LayerNorm>(nn, "LayerNorm")
                        .def(py::init([](const py::object& shape, double eps, bool affine, bool bias) {
                               return std::make_shared<nn::LayerNorm>(int_list(shape), eps, affine, bias);
                             }),
                             py::arg("normalized_shape"), py::arg("eps") = 1e-5,
                             py::arg("elementwise_affine") = true, py::arg("bias") = true);
  tensor_attr(layer_norm, "weight", &nn::LayerNorm::weight);
  tensor_attr(layer_norm, "bias", &nn::LayerNorm::bias);
  auto group_norm = ModuleClass<nn::GroupNorm>(nn, "GroupNorm")
                        .def(py::init<int64_t, int64_t, double, bool>(), py::arg("num_groups"),
                             py::arg("num_channels"), py::arg("eps") = 1e-5, py::arg("affine") = true);
  tensor_attr(group_norm, "weight", &nn::GroupNorm::weight);
  tensor_attr(group_norm, "bias", &nn::GroupNorm::bias);
  // tinygrad's InstanceNorm(num_features, eps, affine=True); PyTorch's InstanceNorm1d/2d/3d (affine
  // off by default, and track_running_stats, which lazygrad does not have, off) make the same module
  // checking its input's rank.
  auto instance_norm = ModuleClass<nn::InstanceNorm>(nn, "InstanceNorm")
                           .def(py::init<int64_t, double, bool>(), py::arg("num_features"),
                                py::arg("eps") = 1e-5, py::arg("affine") = true);
  tensor_attr(instance_norm, "weight", &nn::InstanceNorm::weight);
  tensor_attr(instance_norm, "bias", &nn::InstanceNorm::bias);
  for (int64_t dims : {1, 2, 3}) {
    const std::string name = "InstanceNorm" + std::to_string(dims) + "d";
    nn.def(
        name.c_str(),
        [dims, name](int64_t num_features, double eps, double /*momentum*/, bool affine,
                     bool track_running_stats) {
          if (track_running_stats)
            throw NotImplementedError(name +
                                      ": track_running_stats=True is not supported (running statistics "
                                      "of instance norm); use BatchNorm for running statistics");
          return std::make_shared<nn::InstanceNorm>(num_features, eps, affine, dims);
        },
        py::arg("num_features"), py::arg("eps") = 1e-5, py::arg("momentum") = 0.1, py::arg("affine") = false,
        py::arg("track_running_stats") = false);
  }
  // tinygrad's LayerNorm2d: LayerNorm over the channels of [N, C, H, W].
  py::class_<nn::LayerNorm2d, nn::LayerNorm, std::shared_ptr<nn::LayerNorm2d>>(nn, "LayerNorm2d")
      .def(py::init([](const py::object& shape, double eps, bool affine) {
             return std::make_shared<nn::LayerNorm2d>(int_list(shape), eps, affine);
           }),
           py::arg("normalized_shape"), py::arg("eps") = 1e-5, py::arg("elementwise_affine") = true);
  // tinygrad's RMSNorm(dim, eps=1e-6).
  auto rms_norm = ModuleClass<nn::RMSNorm>(nn, "RMSNorm")
                      .def(py::init([](const py::object& shape, double eps, bool affine) {
                             return std::make_shared<nn::RMSNorm>(int_list(shape), eps, affine);
                           }),
                           py::arg("dim"), py::arg("eps") = 1e-6, py::arg("elementwise_affine") = true);
  tensor_attr(rms_norm, "weight", &nn::RMSNorm::weight);

  ModuleClass<nn::Dropout>(nn, "Dropout").def(py::init<double>(), py::arg("p") = 0.5);
  ModuleClass<nn::ReLU>(nn, "ReLU").def(py::init<>());
  ModuleClass<nn::LeakyReLU>(nn, "LeakyReLU").def(py::init<double>(), py::arg("negative_slope") = 0.01);
  ModuleClass<nn::GELU>(nn, "GELU").def(py::init<std::string>(), py::arg("approximate") = "none");
  ModuleClass<nn::SiLU>(nn, "SiLU").def(py::init<>());
  ModuleClass<nn::Sigmoid>(nn, "Sigmoid").def(py::init<>());
  ModuleClass<nn::Tanh>(nn, "Tanh").def(py::init<>());
  ModuleClass<nn::Softmax>(nn, "Softmax").def(py::init<int64_t>(), py::arg("dim"));
  ModuleClass<nn::LogSoftmax>(nn, "LogSoftmax").def(py::init<int64_t>(), py::arg("dim"));
  ModuleClass<nn::Flatten>(nn, "Flatten")
      .def(py::init<int64_t, int64_t>(), py::arg("start_dim") = 1, py::arg("end_dim") = -1);
  ModuleClass<nn::MaxPool2d>(nn, "MaxPool2d")
      .def(py::init([](const py::object& k, const py::object& stride, const py::object& padding,
                       const py::object& dilation, bool ceil_mode) {
             return std::make_shared<nn::MaxPool2d>(int_list(k), optional_int_list(stride), int_list(padding),
                                                    int_list(dilation), ceil_mode);
           }),
           py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
           py::arg("dilation") = 1, py::arg("ceil_mode") = false);
  ModuleClass<nn::AvgPool2d>(nn, "AvgPool2d")
      .def(py::init([](const py::object& k, const py::object& stride, const py::object& padding,
                       bool ceil_mode, bool count_include_pad) {
             return std::make_shared<nn::AvgPool2d>(int_list(k), optional_int_list(stride), int_list(padding),
                                                    ceil_mode, count_include_pad);
           }),
           py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
           py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  ModuleClass<nn::AdaptiveAvgPool2d>(nn, "AdaptiveAvgPool2d")
      .def(py::init([](const py::object& size) {
             return std::make_shared<nn::AdaptiveAvgPool2d>(int_list(size));
           }),
           py::arg("output_size"));
}

// torch.optim.lr_scheduler: the C++ schedulers (src/nn/lr_scheduler.cpp). A scheduler holds a
// reference to its optimizer, so keep_alive<1, 2> keeps the optimizer alive as long as it.
void bind_lr_schedulers(py::module_& nn) {
  using optim::LRScheduler;
  py::class_<LRScheduler>(nn, "LRScheduler")
      .def("step", &LRScheduler::step)
      .def("get_last_lr", [](const LRScheduler& s) { return std::vector<double>{s.get_last_lr()}; })
      .def_property_readonly("last_epoch", &LRScheduler::last_epoch);
  py::class_<optim::StepLR, LRScheduler>(nn, "StepLR")
      .def(py::init<Optimizer&, int64_t, double>(), py::arg("optimizer"), py::arg("step_size"),
           py::arg("gamma") = 0.1, py::keep_alive<1, 2>());
  py::class_<optim::MultiStepLR, LRScheduler>(nn, "MultiStepLR")
      .def(py::init<Optimizer&, std::vector<int64_t>, double>(), py::arg("optimizer"), py::arg("milestones"),
           py::arg("gamma") = 0.1, py::keep_alive<1, 2>());
  py::class_<optim::ExponentialLR, LRScheduler>(nn, "ExponentialLR")
      .def(py::init<Optimizer&, double>(), py::arg("optimizer"), py::arg("gamma"), py::keep_alive<1, 2>());
  py::class_<optim::LinearLR, LRScheduler>(nn, "LinearLR")
      .def(py::init<Optimizer&, double, double, int64_t>(), py::arg("optimizer"),
           py::arg("start_factor") = 1.0 / 3, py::arg("end_factor") = 1.0, py::arg("total_iters") = 5,
           py::keep_alive<1, 2>());
  py::class_<optim::CosineAnnealingLR, LRScheduler>(nn, "CosineAnnealingLR")
      .def(py::init<Optimizer&, int64_t, double>(), py::arg("optimizer"), py::arg("T_max"),
           py::arg("eta_min") = 0.0, py::keep_alive<1, 2>());
  py::class_<optim::LambdaLR, LRScheduler>(nn, "LambdaLR")
      .def(py::init([](Optimizer& opt, py::function fn) {
             // Dropped with the GIL held, as the Jit's callback (the scheduler may die in C++).
             std::shared_ptr<py::function> owned(new py::function(std::move(fn)), [](py::function* f) {
               py::gil_scoped_acquire gil;
               delete f;
             });
             return std::make_unique<optim::LambdaLR>(opt, [owned](int64_t epoch) {
               py::gil_scoped_acquire gil;
               return (*owned)(epoch).cast<double>();
             });
           }),
           py::arg("optimizer"), py::arg("lr_lambda"), py::keep_alive<1, 2>());
  py::class_<optim::OneCycleLR, LRScheduler>(nn, "OneCycleLR")
      .def(py::init<Optimizer&, double, int64_t, double, const std::string&, bool, double, double, double,
                    double, bool>(),
           py::arg("optimizer"), py::arg("max_lr"), py::arg("total_steps"), py::arg("pct_start") = 0.3,
           py::arg("anneal_strategy") = "cos", py::arg("cycle_momentum") = true,
           py::arg("base_momentum") = 0.85, py::arg("max_momentum") = 0.95, py::arg("div_factor") = 25.0,
           py::arg("final_div_factor") = 1e4, py::arg("three_phase") = false, py::keep_alive<1, 2>());
}

}  // namespace

void bind_nn(py::module_& m) {
  py::module_ nn = m.def_submodule("nn", "the C++ side of lazygrad.nn");
  bind_modules(nn);

  py::class_<Optimizer>(nn, "Optimizer")
      .def("zero_grad", &Optimizer::zero_grad)
      .def("step", &Optimizer::step, py::arg("also_realize") = std::vector<Tensor>{},
           py::call_guard<Unlocked>())
      .def("schedule_step", &Optimizer::schedule_step)
      .def_property("lr", &Optimizer::lr, &Optimizer::set_lr)
      .def_property_readonly("params", &Optimizer::params)
      .def_property_readonly("steps", &Optimizer::steps_recorded);
  py::class_<optim::SGD, Optimizer>(nn, "SGD").def(
      py::init([](const std::vector<Tensor>& params, double lr, double momentum, double weight_decay,
                  bool nesterov, bool maximize, double dampening) {
        return std::make_unique<optim::SGD>(trainable(params), lr, momentum, dampening, weight_decay,
                                            nesterov, maximize);
      }),
      py::arg("params"), py::arg("lr"), py::arg("momentum"), py::arg("weight_decay"), py::arg("nesterov"),
      py::arg("maximize"), py::arg("dampening") = 0.0);
  py::class_<optim::Adam, Optimizer>(nn, "Adam")
      .def(
          py::init([](const std::vector<Tensor>& params, double lr, double b1, double b2, double eps,
                      double weight_decay) {
            return std::make_unique<optim::Adam>(trainable(params), lr, std::pair{b1, b2}, eps, weight_decay);
          }),
          py::arg("params"), py::arg("lr"), py::arg("b1"), py::arg("b2"), py::arg("eps"),
          py::arg("weight_decay"));
  py::class_<optim::AdamW, optim::Adam>(nn, "AdamW")
      .def(py::init([](const std::vector<Tensor>& params, double lr, double b1, double b2, double eps,
                       double weight_decay) {
             return std::make_unique<optim::AdamW>(trainable(params), lr, std::pair{b1, b2}, eps,
                                                   weight_decay);
           }),
           py::arg("params"), py::arg("lr"), py::arg("b1"), py::arg("b2"), py::arg("eps"),
           py::arg("weight_decay"));
  py::class_<optim::LAMB, Optimizer>(nn, "LAMB")
      .def(
          py::init([](const std::vector<Tensor>& params, double lr, double b1, double b2, double eps,
                      double weight_decay) {
            return std::make_unique<optim::LAMB>(trainable(params), lr, std::pair{b1, b2}, eps, weight_decay);
          }),
          py::arg("params"), py::arg("lr"), py::arg("b1"), py::arg("b2"), py::arg("eps"),
          py::arg("weight_decay"));

  bind_lr_schedulers(nn);
  bind_gguf(nn);
  // torch.nn.utils' clipping: lazy, in place on the gradients (the norm comes back as a Tensor).
  nn.def("clip_grad_norm_", &optim::clip_grad_norm_, py::arg("parameters"), py::arg("max_norm"),
         py::arg("norm_type") = 2.0, py::arg("error_if_nonfinite") = false, py::call_guard<Unlocked>());
  nn.def("clip_grad_value_", &optim::clip_grad_value_, py::arg("parameters"), py::arg("clip_value"));

  nn.def("safe_load", &load_safetensors, py::arg("path"), py::call_guard<Unlocked>());
  nn.def("safe_load_metadata", &load_safetensors_metadata, py::arg("path"));
  nn.def("safe_save", &save_safetensors, py::arg("path"), py::arg("tensors"),
         py::arg("metadata") = SafetensorsMetadata{}, py::call_guard<Unlocked>());

  // The Jit calls back into Python for its first two calls (run, capture): the callback takes the
  // GIL, the call itself releases it, so replays run kernels without it.
  py::class_<Jit>(nn, "Jit")
      .def(py::init([](py::function fn) {
             // Dropped with the GIL held: the last Jit copy may go away in a thread without it.
             std::shared_ptr<py::function> owned(new py::function(std::move(fn)), [](py::function* f) {
               py::gil_scoped_acquire gil;
               delete f;
             });
             return Jit([owned](const std::vector<Tensor>& inputs) {
               py::gil_scoped_acquire gil;
               return (*owned)(inputs).cast<std::vector<Tensor>>();
             });
           }),
           py::arg("fn"))
      .def("__call__", &Jit::operator(), py::arg("inputs"), py::call_guard<Unlocked>())
      .def_property_readonly("calls", &Jit::calls)
      .def_property_readonly("captured_kernels", &Jit::captured_kernels)
      .def("reset", &Jit::reset);

  // export_webgpu (docs/webgpu.md): the capture as a web page. Python has no Variables, so the
  // exported function takes inputs only. Returns what was written, as a dict.
  nn.def(
      "export_webgpu",
      [](const Jit& jit, const std::string& dir, const StateDict& names,
         const std::vector<std::string>& input_names, const std::vector<std::string>& output_names,
         const std::string& title) {
        WebGpuExportOptions options;
        options.names = names;
        options.input_names = input_names;
        options.output_names = output_names;
        options.title = title;
        const WebGpuExportSummary s = export_webgpu(jit, dir, options);
        return std::map<std::string, int64_t>{{"dispatches", static_cast<int64_t>(s.dispatches)},
                                              {"kernels", static_cast<int64_t>(s.kernels)},
                                              {"weights", static_cast<int64_t>(s.weights)},
                                              {"weight_bytes", s.weight_bytes},
                                              {"buffer_bytes", s.buffer_bytes}};
      },
      py::arg("jit"), py::arg("dir"), py::arg("names") = StateDict{},
      py::arg("input_names") = std::vector<std::string>{},
      py::arg("output_names") = std::vector<std::string>{}, py::arg("title") = "lazygrad",
      py::call_guard<Unlocked>());
}

}  // namespace lazygrad::python
