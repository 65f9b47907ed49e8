// lazygrad::nn: modules in the shape of torch.nn. A Module owns named parameters (leaf tensors that
// require grad), buffers (state such as BatchNorm's running statistics) and child modules, held by
// std::shared_ptr. Everything is a Tensor handle, so the tensors parameters() returns share data
// with the module: an optimizer's assign updates the module, and load_state_dict's assign is seen
// by everything that holds a parameter.
//
//   auto model = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Conv2d>(1, 8, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(8),
//       std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
//       std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(8 * 14 * 14, 10));
//   Tensor loss = (*model)(x).cross_entropy(y);
//
// docs/nn.md has the list of modules and where they differ from PyTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lazygrad/profile.h"
#include "lazygrad/state_dict.h"
#include "lazygrad/tensor.h"

namespace lazygrad::nn {

using IntList = Tensor::IntList;
using ConvPadding = Tensor::ConvPadding;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// What load_state_dict(..., strict = false) did not match (PyTorch's _IncompatibleKeys).
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;     // the module has them, the state dict does not
  std::vector<std::string> unexpected_keys;  // the state dict has them, the module does not
};

// Whether load_state_dict converts a value of dtype `from` into a tensor of dtype `to`: the same
// dtype; any floating-point dtype into a floating-point tensor (a float16 or bfloat16 checkpoint
// into float32 parameters, rounded as PyTorch's copy_ rounds); an integer into a wider integer that
// holds every value of it. Nothing else: an integer or bool tensor is not a float checkpoint's
// weight (PyTorch would convert it silently, and the model would compute with it), and a float or
// a narrower integer would lose values.
bool loads_into(DType from, DType to);

class Module;
}  // namespace lazygrad::nn
namespace lazygrad::optim {
class Optimizer;  // lazygrad/optim.h
}  // namespace lazygrad::optim
namespace lazygrad::nn {

// What a module holds, in bytes (TinyTorch's memory_footprint): its parameters, the gradients a
// backward has given them, its buffers, and the state an optimizer keeps for its parameters.
struct MemoryFootprint {
  int64_t parameters = 0, gradients = 0, buffers = 0, optimizer_state = 0;
  int64_t total() const { return parameters + gradients + buffers + optimizer_state; }
};
using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

// ------------------------------------------------------------------------------------ Module

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  // Copies would share every tensor with the original while looking independent: not allowed.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The computation. The base class has none (a container such as ModuleList) and throws.
  virtual Tensor forward(const Tensor& input);
  // forward, charged to this module by the profiler (lazygrad/profile.h). nn's layers whose forward
  // is not inline also open that scope themselves, so a call of their forward() is charged too.
  Tensor operator()(const Tensor& input) {
    const ProfileScope scope(*this);
    return forward(input);
  }

  // Registration, as PyTorch's. Names are non-empty, have no '.', and are unique across parameters,
  // buffers and modules; registering a name of the same kind again replaces the entry in place.
  // A parameter is realized and made a leaf that requires grad (unless requires_grad is false); a
  // tensor computed from a leaf is detached first. An undefined tensor stands for PyTorch's None: it
  // is listed nowhere. Returns the registered handle (store it: it shares data with the module).
  Tensor register_parameter(const std::string& name, Tensor param, bool requires_grad = true);
  // A buffer is realized; non-persistent ones are left out of state_dict().
  Tensor register_buffer(const std::string& name, Tensor buffer, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module: M must derive from nn::Module");
    add_child(name, module);
    return module;
  }

  // PyTorch's order: this module's own entries in registration order, then each child's (depth
  // first, in registration order). A tensor or module reachable twice is listed once.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(const std::string& prefix = "", bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(const std::string& prefix = "", bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  NamedModules named_children() const;
  // Every module below this one (this one first, named `prefix`), each once, under its dotted name
  // ("features.0"), as PyTorch's named_modules.
  std::vector<std::pair<std::string, const Module*>> named_modules(const std::string& prefix = "") const;
  // Calls fn on every child (recursively), then on this module, as PyTorch's apply.
  Module& apply(const std::function<void(Module&)>& fn);

  // Parameters and persistent buffers under dotted keys ("features.0.weight"), detached from the
  // gradient graph. Pending values are realized first. As everywhere in lazygrad, a later in-place
  // update of the module is not seen through these tensors (in PyTorch they share storage).
  // StateDict is sorted by key; ordered_state_dict() has the same entries in PyTorch's order.
  StateDict state_dict() const;
  NamedTensors ordered_state_dict() const;
  // Copies the values in with assign (cast to each tensor's dtype, see loads_into) and realizes them
  // together. Everything is checked before anything is written: shape mismatches and dtypes that do
  // not convert (an integer value for a float32 weight) always throw, and with strict
  // missing and unexpected keys do too, listed as PyTorch lists them. Without strict, those are
  // returned instead. With assign (PyTorch's assign=True), a value of the tensor's dtype that is a
  // whole buffer (a checkpoint's tensor, over its file mapping) becomes the module's tensor's data
  // with no copy; others are copied as above.
  IncompatibleKeys load_state_dict(const StateDict& state_dict, bool strict = true, bool assign = false);

  // Training mode (the default) or evaluation mode, for this module and every module below it.
  virtual void train(bool mode = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Forgets the gradient of every parameter (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  // The bytes this module and those below it hold, by kind; with `optimizer`, also the state it
  // keeps for this module's parameters (Adam: two tensors the size of each, once it has stepped).
  MemoryFootprint memory_footprint(const optim::Optimizer* optimizer = nullptr) const;
  // Moves every parameter and buffer (and their gradients) to `device` in place ("CPU", "CL", ...),
  // as PyTorch's Module.to(device): handles held elsewhere (an optimizer's) see the move.
  Module& to(const std::string& device);

  // The class name ("Linear"), for printing and error messages.
  virtual std::string type_name() const;
  // The arguments shown between the parentheses when printed, as PyTorch's extra_repr.
  virtual std::string extra_repr() const { return ""; }
  // PyTorch's repr: "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n)".
  std::string to_string() const;

 protected:
  // Local names (no prefix) of state entries that may be absent from a state dict without being
  // reported missing; they keep their value (BatchNorm's num_batches_tracked, as in PyTorch).
  virtual std::vector<std::string> optional_state_names() const { return {}; }

 private:
  struct BufferEntry {
    Tensor tensor;
    bool persistent;
  };
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* kind) const;
  // The state entries under `prefix`, not detached (load_state_dict assigns into them).
  void collect_state(const std::string& prefix, NamedTensors& out) const;
  void collect_optional_state(const std::string& prefix, std::vector<std::string>& out) const;

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, BufferEntry>> buffers_;
  NamedModules children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& module);

// ------------------------------------------------------------------------------------ containers

// Runs its modules in order, each on the previous one's output; named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() = default;
  template <class... Ms>
  explicit Sequential(std::shared_ptr<Ms>... modules) {
    static_assert((std::is_base_of_v<Module, Ms> && ...), "Sequential: every argument must be an nn::Module");
    (append(std::move(modules)), ...);
  }
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& modules);
  // Runs every registered child in registration order, as PyTorch's Sequential runs its _modules:
  // a module added with register_module runs too, and registering a name again replaces it in place.
  Tensor forward(const Tensor& input) override;
  Sequential& append(std::shared_ptr<Module> module);  // registered under its index, "0", "1", ...
  Sequential& push_back(std::shared_ptr<Module> module) { return append(std::move(module)); }
  size_t size() const { return children().size(); }
  // Negative indices count from the end; out of range throws. children() lists them all.
  std::shared_ptr<Module> operator[](int64_t index) const;
};

// Holds modules under "0", "1", ... so their parameters are registered; has no forward.
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(const std::vector<std::shared_ptr<Module>>& modules);
  ModuleList& append(std::shared_ptr<Module> module);
  ModuleList& push_back(std::shared_ptr<Module> module) { return append(std::move(module)); }
  ModuleList& extend(const std::vector<std::shared_ptr<Module>>& modules);
  size_t size() const { return children().size(); }
  std::shared_ptr<Module> operator[](int64_t index) const;  // children() lists them all
};

// ------------------------------------------------------------------------------------ layers
// Public fields as in PyTorch (weight, bias, in_features, ...). The tensor fields are the registered
// handles: change their values with assign, never by assigning another Tensor to the field.

class Identity : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input; }
};

// y = x @ weight.T + bias. weight [out_features, in_features]: kaiming_uniform(a = sqrt(5)), that is
// U(-1/sqrt(in_features), 1/sqrt(in_features)); bias [out_features] from the same range.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias is undefined without one
};

// A Linear for inference with int8 weights (as PyTorch's dynamic quantization stores them, and the
// systems milestone measures): each output row's weights scaled by max|w| / 127 and rounded to
// int8, a float32 scale per row. forward dequantizes inside the matrix product's kernel
// (x @ (q * scale)^T + bias): the float32 weights are never stored, and a weight's bytes are read
// once, a quarter of Linear's. No gradient (the tensors are buffers).
class Int8Linear : public Module {
 public:
  // Quantizes `linear`'s weight (realized now) and keeps its bias.
  explicit Int8Linear(const Linear& linear);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  int64_t in_features, out_features;
  Tensor weight;  // int8 [out_features, in_features]
  Tensor scale;   // float32 [out_features]: a row's weights are weight * scale
  Tensor bias;    // float32 [out_features], undefined without one
};

// PyTorch's _ConvNd: Conv1d/2d/3d and ConvTranspose1d/2d share their parameters and initialization.
// weight [out, in / groups, *kernel] (transposed: [in, out / groups, *kernel]) from
// kaiming_uniform(a = sqrt(5)); bias [out] from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), where fan_in is
// weight.size(1) times the kernel's size.
class ConvNd : public Module {
 public:
  void reset_parameters();
  std::string type_name() const override { return name_; }
  std::string extra_repr() const override;

  int64_t in_channels, out_channels;
  std::vector<int64_t> kernel_size, stride, dilation, output_padding;  // one value per spatial dim
  ConvPadding padding;
  int64_t groups;
  bool transposed;
  Tensor weight, bias;

 protected:
  ConvNd(const char* name, int spatial_dims, bool transposed, int64_t in_channels, int64_t out_channels,
         IntList kernel_size, IntList stride, ConvPadding padding, IntList dilation, int64_t groups,
         bool bias, IntList output_padding);
  // Throws unless input is [N, C_in, *spatial] or [C_in, *spatial] with spatial_dims spatial dims.
  void check_input(const Tensor& input) const;
  const char* name_;
  int spatial_dims_;
};

class Conv1d : public ConvNd {
 public:
  // padding: an int (or {int}), or "same" (stride 1 only) or "valid".
  Conv1d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,
         ConvPadding padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& input) override;
};

class Conv2d : public ConvNd {
 public:
  // kernel_size, stride, padding, dilation: one value for both spatial dims or {h, w}; padding may
  // also be "same" (stride 1 only) or "valid".
  Conv2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,
         ConvPadding padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& input) override;
};

class Conv3d : public ConvNd {
 public:
  Conv3d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,
         ConvPadding padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& input) override;
};

// PyTorch's argument order: output_padding before groups, dilation last.
class ConvTranspose1d : public ConvNd {
 public:
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,
                  IntList padding = 0, IntList output_padding = 0, int64_t groups = 1, bool bias = true,
                  IntList dilation = 1);
  Tensor forward(const Tensor& input) override;
};

class ConvTranspose2d : public ConvNd {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,
                  IntList padding = 0, IntList output_padding = 0, int64_t groups = 1, bool bias = true,
                  IntList dilation = 1);
  Tensor forward(const Tensor& input) override;
};

// A lookup table: forward(indices) of any integer dtype gives weight rows, shape indices.shape +
// [embedding_dim]. weight [num_embeddings, embedding_dim] ~ N(0, 1), the padding_idx row zero and
// never updated by gradients. Negative indices count from the end and out-of-range ones read zeros
// (Tensor::index; PyTorch raises for both).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  // in [0, num_embeddings) once constructed
  Tensor weight;
};

// ------------------------------------------------------------------------------------ normalization

// PyTorch's _BatchNorm. In training mode the batch statistics normalize and the running ones are
// updated in place (lazily, with assign: realize buffers() with the loss each step, or the pending
// updates pile up); in evaluation mode the running statistics normalize. weight ones, bias zeros,
// running_mean zeros, running_var ones, num_batches_tracked 0 (int64, 0-d). momentum = None (a
// cumulative average) is not supported.
class BatchNorm : public Module {
 public:
  void reset_running_stats();
  void reset_parameters();  // also resets the running statistics, as PyTorch's
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return name_; }
  std::string extra_repr() const override;

  int64_t num_features;
  double eps, momentum;
  bool affine, track_running_stats;
  Tensor weight, bias;                                    // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless track_running_stats

 protected:
  BatchNorm(const char* name, std::vector<int64_t> input_dims, int64_t num_features, double eps,
            double momentum, bool affine, bool track_running_stats);
  std::vector<std::string> optional_state_names() const override { return {"num_batches_tracked"}; }

 private:
  const char* name_;
  std::vector<int64_t> input_dims_;  // the ranks forward accepts
};

class BatchNorm1d : public BatchNorm {  // [N, C] or [N, C, L]
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true);
};

class BatchNorm2d : public BatchNorm {  // [N, C, H, W]
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true);
};

class BatchNorm3d : public BatchNorm {  // [N, C, D, H, W]
 public:
  explicit BatchNorm3d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true);
};

// Normalizes over the trailing normalized_shape dims. weight ones, bias zeros, both normalized_shape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(IntList normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};

// [N, C, ...] normalized over groups of C / num_groups channels. weight ones, bias zeros, [C].
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  Tensor weight, bias;
};

// [N, C, *] (or [C, *] for a PyTorch-shaped InstanceNormNd, whose spatial_dims is N): each channel
// of each sample normalized over its positions (group norm with a group per channel; biased
// variance). affine: weight ones and bias zeros, [C]. tinygrad's InstanceNorm(num_features, eps,
// affine=True) has spatial_dims 0 (any); PyTorch's InstanceNorm1d/2d/3d default to affine=false.
// PyTorch's track_running_stats (off by default) is not supported: an Error names it.
class InstanceNorm : public Module {
 public:
  explicit InstanceNorm(int64_t num_features, double eps = 1e-5, bool affine = true,
                        int64_t spatial_dims = 0);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t num_features;
  double eps;
  bool affine;
  int64_t spatial_dims;  // 1, 2 or 3 for InstanceNorm1d/2d/3d (which also take unbatched input); 0: any
  Tensor weight, bias;
};

// tinygrad's LayerNorm2d: LayerNorm over the channels of [N, C, H, W] (each position's C values), as
// ConvNeXt uses it; normalized_shape is C.
class LayerNorm2d : public LayerNorm {
 public:
  using LayerNorm::LayerNorm;
  Tensor forward(const Tensor& input) override;
};

// x / sqrt(mean(x^2) + eps) * weight (torch 2.4's RMSNorm); eps std::nullopt is the dtype's epsilon.
class RMSNorm : public Module {
 public:
  explicit RMSNorm(IntList normalized_shape, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  Shape normalized_shape;
  std::optional<double> eps;
  bool elementwise_affine;
  Tensor weight;
};

// ------------------------------------------------------------------------------------ dropout, activations

// Zeroes each element with probability p and scales the rest by 1 / (1 - p) in training mode; the
// identity in evaluation mode.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  double p;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.relu(); }
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor forward(const Tensor& input) override { return input.leaky_relu(negative_slope); }
  std::string extra_repr() const override;
  double negative_slope;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override { return input.gelu(approximate); }
  std::string extra_repr() const override;
  std::string approximate;
};

class SiLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.silu(); }
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.sigmoid(); }
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.tanh(); }
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return input.softmax(dim); }
  std::string extra_repr() const override;
  int64_t dim;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return input.log_softmax(dim); }
  std::string extra_repr() const override;
  int64_t dim;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) override { return input.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

// ------------------------------------------------------------------------------------ pooling
// stride {} (the default) means kernel_size, as PyTorch's None.

class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                     bool ceil_mode = false);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  IntList kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                     bool ceil_mode = false);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  IntList kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(IntList kernel_size, IntList stride = {}, IntList padding = 0, bool ceil_mode = false,
                     bool count_include_pad = true, std::optional<int64_t> divisor_override = std::nullopt);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  IntList kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(IntList output_size) : output_size(std::move(output_size)) {}
  Tensor forward(const Tensor& input) override { return input.adaptive_avg_pool2d(output_size); }
  std::string extra_repr() const override;
  IntList output_size;
};

// ------------------------------------------------------------------------------------ losses
// Two inputs, so they are called as loss(input, target) rather than through forward. They print
// without arguments, as PyTorch's do.

class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(std::optional<Tensor> weight = std::nullopt, int64_t ignore_index = -100,
                            std::string reduction = "mean", double label_smoothing = 0.0);
  Tensor operator()(const Tensor& input, const Tensor& target) const;

  Tensor weight;  // a buffer when given (undefined otherwise)
  int64_t ignore_index;
  std::string reduction;
  double label_smoothing;
};

class MSELoss : public Module {
 public:
  explicit MSELoss(std::string reduction = "mean");
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    const ProfileScope scope(*this);
    return input.mse_loss(target, reduction);
  }
  std::string reduction;
};

// ------------------------------------------------------------------------------------ init
// torch.nn.init. Each function overwrites the tensor's values with assign, outside the gradient
// graph, and realizes it (immediate, as PyTorch's), then returns it.
// Random values come from Tensor::uniform/randn, so Tensor::manual_seed makes them repeatable.
namespace init {

// While a SkipInit lives on this thread, the functions below (and so the layers' constructors and
// reset_parameters) leave the tensor's memory allocated but unfilled, as torch.nn.utils.skip_init
// and Hugging Face's no_init_weights do: for a model whose every parameter a checkpoint replaces
// next (GPT-2 124M's random initialization alone took 1.6 s of two cores before `lazygrad
// generate` could start). What such a parameter holds until then is unspecified.
class SkipInit {
 public:
  SkipInit();
  ~SkipInit();
  SkipInit(const SkipInit&) = delete;
  SkipInit& operator=(const SkipInit&) = delete;
  static bool active();
};

// The recommended gain for a nonlinearity: "linear", "conv1d", ..., "sigmoid" 1, "tanh" 5/3, "relu"
// sqrt(2), "leaky_relu" sqrt(2 / (1 + slope^2)) (slope param, default 0.01), "selu" 3/4.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
// {fan_in, fan_out}: size(1) and size(0) times the product of the other sizes; at least 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor& uniform_(Tensor& tensor, double a = 0.0, double b = 1.0);
Tensor& normal_(Tensor& tensor, double mean = 0.0, double std = 1.0);
Tensor& constant_(Tensor& tensor, double val);
Tensor& ones_(Tensor& tensor);
Tensor& zeros_(Tensor& tensor);
Tensor& xavier_uniform_(Tensor& tensor, double gain = 1.0);
Tensor& xavier_normal_(Tensor& tensor, double gain = 1.0);
// mode "fan_in" or "fan_out"; a is leaky_relu's negative slope.
Tensor& kaiming_uniform_(Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");

}  // namespace init

}  // namespace lazygrad::nn
