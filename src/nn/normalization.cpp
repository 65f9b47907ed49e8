// Normalization layers: BatchNorm1d/2d/3d, LayerNorm (and LayerNorm2d), GroupNorm, InstanceNorm, RMSNorm. The
// arithmetic is Tensor::batch_norm / layer_norm / group_norm / rms_norm; these hold the affine parameters and
// BatchNorm's running statistics.
#include <algorithm>
#include <string>

#include "lazygrad/nn.h"
#include "nn/host_fill.h"
#include "nn/python_format.h"
#include "nn/require.h"

namespace lazygrad::nn {

namespace {

std::optional<Tensor> optional(const Tensor& t) { return t.defined() ? std::optional(t) : std::nullopt; }

std::string dims_str(const std::vector<int64_t>& dims) {  // "2D or 3D"
  std::string s;
  for (size_t i = 0; i < dims.size(); i++) s += (i ? " or " : "") + std::to_string(dims[i]) + "D";
  return s;
}

}  // namespace

// ---- BatchNorm ----

BatchNorm::BatchNorm(const char* name, std::vector<int64_t> input_dims, int64_t num_features, double eps,
                     double momentum, bool affine, bool track_running_stats)
    : num_features(num_features),
      eps(eps),
      momentum(momentum),
      affine(affine),
      track_running_stats(track_running_stats),
      name_(name),
      input_dims_(std::move(input_dims)) {
  require(num_features >= 0,
          std::string(name) + ": num_features must be non-negative, got " + std::to_string(num_features));
  // The values of reset_parameters(), written on the host (nn/host_fill.h says why).
  if (affine) {
    weight = register_parameter("weight", host_full({num_features}, 1.0));
    bias = register_parameter("bias", host_full({num_features}, 0.0));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", host_full({num_features}, 0.0));
    running_var = register_buffer("running_var", host_full({num_features}, 1.0));
    num_batches_tracked = register_buffer("num_batches_tracked", host_full({}, 0.0, kInt64));
  }
}

void BatchNorm::reset_running_stats() {
  if (!track_running_stats) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  init::zeros_(num_batches_tracked);
}

void BatchNorm::reset_parameters() {
  reset_running_stats();
  if (!affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor BatchNorm::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  require(std::find(input_dims_.begin(), input_dims_.end(), input.dim()) != input_dims_.end(),
          std::string(name_) + ": expected " + dims_str(input_dims_) + " input, got shape " +
              shape_str(input.shape()),
          ErrorKind::Value);
  require(input.size(1) == num_features, std::string(name_) + ": expected " + std::to_string(num_features) +
                                             " channels (num_features) in dim 1, got shape " +
                                             shape_str(input.shape()));
  // Training updates the running statistics (inside Tensor::batch_norm) and counts the batch.
  // Without running statistics the batch's own statistics normalize in evaluation mode too.
  if (is_training() && track_running_stats) num_batches_tracked += 1;
  bool use_batch_stats = is_training() || !track_running_stats;
  return input.batch_norm(optional(running_mean), optional(running_var), optional(weight), optional(bias),
                          use_batch_stats, momentum, eps);
}

std::string BatchNorm::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) + ", momentum=" + py_float(momentum) +
         ", affine=" + py_bool(affine) + ", track_running_stats=" + py_bool(track_running_stats);
}

BatchNorm1d::BatchNorm1d(int64_t num_features, double eps, double momentum, bool affine,
                         bool track_running_stats)
    : BatchNorm("BatchNorm1d", {2, 3}, num_features, eps, momentum, affine, track_running_stats) {}

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, double momentum, bool affine,
                         bool track_running_stats)
    : BatchNorm("BatchNorm2d", {4}, num_features, eps, momentum, affine, track_running_stats) {}

BatchNorm3d::BatchNorm3d(int64_t num_features, double eps, double momentum, bool affine,
                         bool track_running_stats)
    : BatchNorm("BatchNorm3d", {5}, num_features, eps, momentum, affine, track_running_stats) {}

// ---- LayerNorm ----

LayerNorm::LayerNorm(IntList normalized_shape, double eps, bool elementwise_affine, bool bias)
    : normalized_shape(normalized_shape.values()), eps(eps), elementwise_affine(elementwise_affine) {
  require(!this->normalized_shape.empty(), "LayerNorm: normalized_shape must have at least one dimension");
  // The values of reset_parameters(), written on the host (nn/host_fill.h says why).
  if (elementwise_affine) {
    weight = register_parameter("weight", host_full(this->normalized_shape, 1.0));
    if (bias) this->bias = register_parameter("bias", host_full(this->normalized_shape, 0.0));
  }
}

void LayerNorm::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  return input.layer_norm(normalized_shape, optional(weight), optional(bias), eps);
}

std::string LayerNorm::extra_repr() const {
  return py_tuple(normalized_shape) + ", eps=" + py_float(eps) +
         ", elementwise_affine=" + py_bool(elementwise_affine);
}

// ---- GroupNorm ----

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : num_groups(num_groups), num_channels(num_channels), eps(eps), affine(affine) {
  require(num_groups > 0, "GroupNorm: num_groups must be positive, got " + std::to_string(num_groups),
          ErrorKind::Value);
  require(num_channels % num_groups == 0,
          "GroupNorm: num_channels must be divisible by num_groups, got num_channels=" +
              std::to_string(num_channels) + ", num_groups=" + std::to_string(num_groups),
          ErrorKind::Value);
  if (affine) {  // reset_parameters()'s values, written on the host (nn/host_fill.h says why)
    weight = register_parameter("weight", host_full({num_channels}, 1.0));
    bias = register_parameter("bias", host_full({num_channels}, 0.0));
  }
}

void GroupNorm::reset_parameters() {
  if (!affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNorm::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  require(input.dim() >= 2 && input.size(1) == num_channels,
          "GroupNorm: expected an input of shape [N, " + std::to_string(num_channels) +
              ", *] (num_channels), got " + shape_str(input.shape()));
  return input.group_norm(num_groups, optional(weight), optional(bias), eps);
}

std::string GroupNorm::extra_repr() const {
  return std::to_string(num_groups) + ", " + std::to_string(num_channels) + ", eps=" + py_float(eps) +
         ", affine=" + py_bool(affine);
}

// ---- InstanceNorm ----

InstanceNorm::InstanceNorm(int64_t num_features, double eps, bool affine, int64_t spatial_dims)
    : num_features(num_features), eps(eps), affine(affine), spatial_dims(spatial_dims) {
  require(num_features > 0,
          "InstanceNorm: num_features must be positive, got " + std::to_string(num_features),
          ErrorKind::Value);
  if (affine) {  // reset_parameters()'s values, written on the host (nn/host_fill.h says why)
    weight = register_parameter("weight", host_full({num_features}, 1.0));
    bias = register_parameter("bias", host_full({num_features}, 0.0));
  }
}

void InstanceNorm::reset_parameters() {
  if (!affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor InstanceNorm::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  const std::string name =
      spatial_dims ? "InstanceNorm" + std::to_string(spatial_dims) + "d" : "InstanceNorm";
  // InstanceNormNd takes [N, C, *] with N spatial dimensions, or the same without the batch.
  const bool unbatched = spatial_dims && input.dim() == spatial_dims + 1;
  require(unbatched || (spatial_dims ? input.dim() == spatial_dims + 2 : input.dim() >= 2),
          name + ": expected an input of " +
              (spatial_dims
                   ? std::to_string(spatial_dims + 1) + "-d or " + std::to_string(spatial_dims + 2) + "-d"
                   : std::string("at least 2-d")) +
              " [N, C, *], got " + shape_str(input.shape()));
  const Tensor x = unbatched ? input.unsqueeze(0) : input;
  require(x.size(1) == num_features, name + ": expected " + std::to_string(num_features) +
                                         " channels (num_features), got input " + shape_str(input.shape()));
  Tensor y = x.group_norm(num_features, optional(weight), optional(bias), eps);
  return unbatched ? y.squeeze(0) : y;
}

std::string InstanceNorm::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) + ", affine=" + py_bool(affine);
}

// ---- LayerNorm2d ----

Tensor LayerNorm2d::forward(const Tensor& input) {
  require(input.dim() == 4,
          "LayerNorm2d: expected an input of shape [N, C, H, W], got " + shape_str(input.shape()));
  return LayerNorm::forward(input.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
}

// ---- RMSNorm ----

RMSNorm::RMSNorm(IntList normalized_shape, std::optional<double> eps, bool elementwise_affine)
    : normalized_shape(normalized_shape.values()), eps(eps), elementwise_affine(elementwise_affine) {
  require(!this->normalized_shape.empty(), "RMSNorm: normalized_shape must have at least one dimension");
  // reset_parameters()'s value, written on the host (nn/host_fill.h says why).
  if (elementwise_affine) weight = register_parameter("weight", host_full(this->normalized_shape, 1.0));
}

void RMSNorm::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNorm::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  return input.rms_norm(normalized_shape, optional(weight), eps);
}

std::string RMSNorm::extra_repr() const {
  return py_tuple(normalized_shape) + ", eps=" + (eps ? py_float(*eps) : "None") +
         ", elementwise_affine=" + py_bool(elementwise_affine);
}

}  // namespace lazygrad::nn
