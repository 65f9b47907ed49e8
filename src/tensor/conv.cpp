// Convolution, pooling and resampling, built the tinygrad way: a padded input is turned into a
// strided view of sliding windows, [..., *spatial] -> [..., *out, *kernel], without a copy; conv
// multiplies the windows by the weight and sums (C_in / groups, *kernel) in one reduce kernel, a
// max or average pool reduces the window axes. conv_transpose is a conv of the zero-stuffed input
// (a pad + reshape view) with the flipped, transposed weight.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

using IntList = Tensor::IntList;

// One value per spatial dimension, from a single value or a list of exactly n values.
Shape per_dim(const IntList& v, size_t n, const char* op, const char* what) {
  const Shape& x = v.values();
  require(x.size() == 1 || x.size() == n, std::string(op) + ": " + what + " must be one int or " +
                                              std::to_string(n) + " ints, got " + shape_str(x));
  return x.size() == 1 ? Shape(n, x[0]) : x;
}

Shape positive(Shape v, const char* op, const char* what) {
  for (int64_t e : v)
    require(e > 0, std::string(op) + ": " + what + " must be positive, got " + shape_str(v));
  return v;
}

Shape non_negative(Shape v, const char* op, const char* what) {
  for (int64_t e : v)
    require(e >= 0, std::string(op) + ": " + what + " must be non-negative, got " + shape_str(v));
  return v;
}

Shape spatial_shape(const Tensor& x, size_t nd) { return Shape(x.shape().end() - nd, x.shape().end()); }

// Spatial (begin, end) padding in F.pad's order (last dimension first) from per-dimension pairs.
std::vector<int64_t> fpad_order(const Shape& begin, const Shape& end) {
  std::vector<int64_t> p;
  for (size_t i = begin.size(); i-- > 0;) {
    p.push_back(begin[i]);
    p.push_back(end[i]);
  }
  return p;
}

// Crops (or zero-pads) the end of the trailing dimensions to `tail`: one SHRINK view.
Tensor fit_trailing(const Tensor& x, const Shape& tail) {
  Shape cur = spatial_shape(x, tail.size()), zero(tail.size(), 0), delta(tail.size());
  for (size_t i = 0; i < tail.size(); i++) delta[i] = tail[i] - cur[i];
  return x.pad(fpad_order(zero, delta));
}

// [..., *in] -> [..., *out, *kernel]: element (o, j) of a window reads in[o * stride + j * dilation].
// A pure view. Where windows overlap (kernel > stride) or are dilated, the input is repeated along
// each axis so that consecutive kernel taps start `period = in * f + dilation` apart; a row of the
// repeated signal then holds a whole output row for one tap. `in` must fit one window.
Tensor sliding_windows(const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& dilation) {
  size_t nd = kernel.size(), lead = x.dim() - nd;
  Shape batch(x.shape().begin(), x.shape().begin() + lead), in = spatial_shape(x, nd), out(nd);
  for (size_t j = 0; j < nd; j++) out[j] = (in[j] - dilation[j] * (kernel[j] - 1) - 1) / stride[j] + 1;
  // The trailing dimensions as per-axis groups, e.g. {kernel, out} -> [k0, o0, k1, o1].
  auto grouped = [nd](std::initializer_list<Shape> parts) {
    Shape s;
    for (size_t j = 0; j < nd; j++)
      for (const Shape& p : parts) s.push_back(p[j]);
    return s;
  };
  auto with_batch = [&batch](const Shape& tail) {
    Shape s = batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  // The final order: batch dimensions, then the output axes, then the kernel axes.
  auto order = [&](size_t out_pos, size_t kernel_pos) {
    Shape o;
    for (size_t i = 0; i < lead; i++) o.push_back(static_cast<int64_t>(i));
    for (size_t j = 0; j < nd; j++) o.push_back(static_cast<int64_t>(lead + 2 * j + out_pos));
    for (size_t j = 0; j < nd; j++) o.push_back(static_cast<int64_t>(lead + 2 * j + kernel_pos));
    return o;
  };
  bool overlapping = false;
  for (size_t j = 0; j < nd; j++) overlapping |= kernel[j] > stride[j] || dilation[j] != 1;
  Shape rows(nd);
  for (size_t j = 0; j < nd; j++) rows[j] = out[j] * stride[j];
  if (!overlapping) {
    // Disjoint windows: split each axis into [out, stride] and keep the first `kernel` of each row.
    Tensor y = fit_trailing(x, rows).reshape(with_batch(grouped({out, stride})));
    return fit_trailing(y, grouped({out, kernel})).permute(order(0, 1));
  }
  Shape period(nd), taps(nd), repeats(nd), repeated(nd);
  for (size_t j = 0; j < nd; j++) {
    // Enough whole copies of the input (f) that a row of out * stride fits in one period.
    int64_t f = std::max<int64_t>(1, (rows[j] - dilation[j] + in[j] - 1) / in[j]);
    period[j] = in[j] * f + dilation[j];
    taps[j] = kernel[j] * period[j];
    repeats[j] = (taps[j] + in[j] - 1) / in[j];
    repeated[j] = repeats[j] * in[j];
  }
  Tensor y = x.reshape(with_batch(grouped({Shape(nd, 1), in}))).expand(with_batch(grouped({repeats, in})));
  y = fit_trailing(y.reshape(with_batch(repeated)), taps).reshape(with_batch(grouped({kernel, period})));
  y = fit_trailing(y, grouped({kernel, rows})).reshape(with_batch(grouped({kernel, out, stride})));
  y = fit_trailing(y, grouped({kernel, out, Shape(nd, 1)})).reshape(with_batch(grouped({kernel, out})));
  return y.permute(order(1, 0));
}

std::vector<int64_t> trailing_axes(size_t nd) {
  std::vector<int64_t> a;
  for (size_t j = 0; j < nd; j++) a.push_back(-1 - static_cast<int64_t>(j));
  return a;
}

// A batched input [N, C, *spatial], or an unbatched [C, *spatial] given a batch of 1.
Tensor batched(const Tensor& x, size_t nd, const char* op) {
  require(x.dim() == static_cast<int64_t>(nd) + 1 || x.dim() == static_cast<int64_t>(nd) + 2,
          std::string(op) + ": expected a " + std::to_string(nd + 1) + "-D (unbatched) or " +
              std::to_string(nd + 2) + "-D (batched) input, got shape " + shape_str(x.shape()));
  return x.dim() == static_cast<int64_t>(nd) + 2 ? x : x.unsqueeze(0);
}

Tensor unbatched_like(const Tensor& r, const Tensor& input, size_t nd) {
  return input.dim() == static_cast<int64_t>(nd) + 2 ? r : r.squeeze(0);
}

void require_same_dtype(const char* op, const Tensor& a, const Tensor& b, const char* what) {
  require(a.dtype() == b.dtype(), std::string(op) + ": input (" + std::string(dtype_name(a.dtype())) + " " +
                                      shape_str(a.shape()) + ") and " + what + " (" +
                                      std::string(dtype_name(b.dtype())) + " " + shape_str(b.shape()) +
                                      ") must have the same dtype");
}

// The shared core: x [N, C_in, *in] padded by `pads` (F.pad order, negative crops), weight
// [C_out, C_in / groups, *kernel]. One reduce kernel: windows [N, G, 1, *out, C_in/G, *kernel] times
// weight [1, G, C_out/G, 1.., C_in/G, *kernel], summed over the last 1 + nd axes.
Tensor convolution(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                   const Shape& stride, const std::vector<int64_t>& pads, const Shape& dilation,
                   int64_t groups) {
  if (is_half(x.dtype())) {  // products summed in float32, the result rounded once
    std::optional<Tensor> b32;
    if (bias && bias->defined()) b32 = bias->to(kFloat32);
    return convolution(x.to(kFloat32), weight.to(kFloat32), b32, stride, pads, dilation, groups)
        .to(x.dtype());
  }
  size_t nd = stride.size();
  Shape kernel = spatial_shape(weight, nd);
  int64_t n = x.shape()[0], c_in = x.shape()[1], c_out = weight.shape()[0];
  int64_t cin_g = c_in / groups, cout_g = c_out / groups;
  Tensor win = sliding_windows(x.pad(pads), kernel, stride, dilation);  // [N, C_in, *out, *kernel]
  Shape out(win.shape().begin() + 2, win.shape().begin() + 2 + nd);
  Shape s = {n, groups, 1, cin_g};
  s.insert(s.end(), out.begin(), out.end());
  s.insert(s.end(), kernel.begin(), kernel.end());
  Shape order = {0, 1, 2};
  for (size_t j = 0; j < nd; j++) order.push_back(4 + static_cast<int64_t>(j));
  order.push_back(3);
  for (size_t j = 0; j < nd; j++) order.push_back(4 + static_cast<int64_t>(nd + j));
  win = win.reshape(s).permute(order);
  Shape ws = {1, groups, cout_g};
  ws.insert(ws.end(), nd, 1);
  ws.push_back(cin_g);
  ws.insert(ws.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> axes = trailing_axes(nd + 1);
  Tensor r = (win * weight.reshape(ws)).sum(axes, false, x.dtype());
  Shape rs = {n, c_out};
  rs.insert(rs.end(), out.begin(), out.end());
  r = r.reshape(rs);
  if (!bias || !bias->defined()) return r;
  Shape bs = {1, c_out};
  bs.insert(bs.end(), nd, 1);
  return r + bias->reshape(bs);
}

void check_weight_and_bias(const char* op, const Tensor& x, const Tensor& weight,
                           const std::optional<Tensor>& bias, size_t nd, int64_t out_channels) {
  require(weight.dim() == static_cast<int64_t>(nd) + 2, std::string(op) + ": weight must be " +
                                                            std::to_string(nd + 2) + "-D, got shape " +
                                                            shape_str(weight.shape()));
  require_same_dtype(op, x, weight, "weight");
  require(x.dtype() != kBool, std::string(op) + ": not implemented for bool input " + shape_str(x.shape()));
  if (!bias || !bias->defined()) return;
  require_same_dtype(op, x, *bias, "bias");
  require(bias->dim() == 1 && bias->shape()[0] == out_channels,
          std::string(op) + ": expected bias of shape {" + std::to_string(out_channels) + "} for weight " +
              shape_str(weight.shape()) + ", got " + shape_str(bias->shape()));
}

Tensor conv_transpose_nd(const char* op, size_t nd, const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, const IntList& stride_arg,
                         const IntList& padding_arg, const IntList& output_padding_arg, int64_t groups,
                         const IntList& dilation_arg);

// A batched convolution whose gradients are convolutions too. The gradient the primitives give for
// the input goes back through the sliding-window view: a sum over the view's repeats, each term a
// gather through div/mod index math with the patch gradient's reduction inside (4-5 GFLOP/s here,
// 97% of a LeNet or ResNet layer's backward pass). The input's gradient is instead the transposed
// convolution of the upstream gradient (the padded input's, cropped), which runs as fast as a
// forward convolution; the weight's is what the primitives give (a reduction over the batch and
// the output positions, already fast).
Tensor trained_convolution(const Tensor& x, const Tensor& weight, const Shape& stride, const Shape& before,
                           const Shape& after, const Shape& dilation, int64_t groups) {
  std::vector<int64_t> pads = fpad_order(before, after);
  if (NoGrad::active() || !(x.requires_grad() || weight.requires_grad()))
    return convolution(x, weight, std::nullopt, stride, pads, dilation, groups);
  size_t nd = stride.size();
  // The value from the same graphs, as tensors that autograd does not follow (not detach(): a
  // DETACH between the input and its padding would stop the view from merging into one index).
  Tensor value = convolution(make_tensor(x.uop()), make_tensor(weight.uop()), std::nullopt, stride, pads,
                             dilation, groups);
  Shape in = spatial_shape(x, nd), out = spatial_shape(value, nd), kernel = spatial_shape(weight, nd);
  auto backward = [=](const Tensor& dy, const std::vector<Tensor>& inputs) {
    const Tensor &xt = inputs[0], &wt = inputs[1];
    // The transposed convolution's output is the padded input, plus output_padding for the rows a
    // stride left unread at the end.
    std::vector<int64_t> output_padding(nd);
    for (size_t j = 0; j < nd; j++) {
      int64_t covered = (out[j] - 1) * stride[j] + dilation[j] * (kernel[j] - 1) + 1;
      output_padding[j] = in[j] + before[j] + after[j] - covered;
    }
    Tensor dx = conv_transpose_nd("conv backward", nd, dy, wt, std::nullopt, stride, 0, output_padding,
                                  groups, dilation);
    for (size_t j = 0; j < nd; j++) dx = dx.slice(2 + static_cast<int64_t>(j), before[j], before[j] + in[j]);
    Tensor dw = convolution(xt, wt, std::nullopt, stride, pads, dilation, groups).gradient({wt}, dy)[0];
    return std::vector<Tensor>{dx, dw};
  };
  return with_gradient(value, {x, weight}, backward);
}

Tensor conv_nd(const char* op, size_t nd, const Tensor& input, const Tensor& weight,
               const std::optional<Tensor>& bias, const IntList& stride_arg,
               const Tensor::ConvPadding& padding, const IntList& dilation_arg, int64_t groups) {
  Tensor x = batched(input, nd, op);
  require(groups > 0, std::string(op) + ": groups must be positive, got " + std::to_string(groups));
  check_weight_and_bias(op, x, weight, bias, nd, weight.dim() > 0 ? weight.shape()[0] : 0);
  int64_t c_in = x.shape()[1];
  require(weight.shape()[0] % groups == 0, std::string(op) + ": weight " + shape_str(weight.shape()) +
                                               " must have a multiple of groups=" + std::to_string(groups) +
                                               " output channels");
  require(weight.shape()[1] * groups == c_in,
          std::string(op) + ": input " + shape_str(input.shape()) + " has " + std::to_string(c_in) +
              " channels, but weight " + shape_str(weight.shape()) + " with groups=" +
              std::to_string(groups) + " expects " + std::to_string(weight.shape()[1] * groups));
  Shape stride = positive(per_dim(stride_arg, nd, op, "stride"), op, "stride");
  Shape dilation = positive(per_dim(dilation_arg, nd, op, "dilation"), op, "dilation");
  Shape kernel = spatial_shape(weight, nd), in = spatial_shape(x, nd), before(nd), after(nd);
  const std::string& mode = padding.mode();
  if (mode == "same") {
    for (int64_t s : stride)
      require(s == 1, std::string(op) +
                          ": padding='same' is not supported for strided convolutions (stride " +
                          shape_str(stride) + ")");
    // As in PyTorch: an odd total puts the extra zero at the end.
    for (size_t j = 0; j < nd; j++) {
      int64_t total = dilation[j] * (kernel[j] - 1);
      before[j] = total / 2;
      after[j] = total - before[j];
    }
  } else if (mode == "valid") {
    std::fill(before.begin(), before.end(), 0), std::fill(after.begin(), after.end(), 0);
  } else {
    require(mode.empty(),
            std::string(op) + ": invalid padding string '" + mode + "' (expected 'same' or 'valid')");
    before = after = non_negative(per_dim(padding.sizes(), nd, op, "padding"), op, "padding");
  }
  for (size_t j = 0; j < nd; j++)
    require(in[j] + before[j] + after[j] >= dilation[j] * (kernel[j] - 1) + 1,
            std::string(op) + ": input " + shape_str(input.shape()) + " padded by " + shape_str(before) +
                " is smaller than the kernel " + shape_str(kernel) + " dilated by " + shape_str(dilation));
  Tensor r = trained_convolution(x, weight, stride, before, after, dilation, groups);
  if (bias && bias->defined()) {
    Shape bs = {1, weight.shape()[0]};
    bs.insert(bs.end(), nd, 1);
    r = r + bias->reshape(bs);
  }
  return unbatched_like(r, input, nd);
}

Tensor conv_transpose_nd(const char* op, size_t nd, const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, const IntList& stride_arg,
                         const IntList& padding_arg, const IntList& output_padding_arg, int64_t groups,
                         const IntList& dilation_arg) {
  Tensor x = batched(input, nd, op);
  require(groups > 0, std::string(op) + ": groups must be positive, got " + std::to_string(groups));
  require(weight.dim() == static_cast<int64_t>(nd) + 2, std::string(op) + ": weight must be " +
                                                            std::to_string(nd + 2) + "-D, got shape " +
                                                            shape_str(weight.shape()));
  int64_t c_in = x.shape()[1], c_out = weight.shape()[1] * groups;
  check_weight_and_bias(op, x, weight, bias, nd, c_out);
  require(weight.shape()[0] == c_in && c_in % groups == 0,
          std::string(op) + ": input " + shape_str(input.shape()) + " has " + std::to_string(c_in) +
              " channels, but weight " + shape_str(weight.shape()) + " expects " +
              std::to_string(weight.shape()[0]) + " (divisible by groups=" + std::to_string(groups) + ")");
  Shape stride = positive(per_dim(stride_arg, nd, op, "stride"), op, "stride");
  Shape dilation = positive(per_dim(dilation_arg, nd, op, "dilation"), op, "dilation");
  Shape padding = non_negative(per_dim(padding_arg, nd, op, "padding"), op, "padding");
  Shape output_padding =
      non_negative(per_dim(output_padding_arg, nd, op, "output_padding"), op, "output_padding");
  Shape kernel = spatial_shape(weight, nd), in = spatial_shape(x, nd), before(nd), after(nd);
  for (size_t j = 0; j < nd; j++) {
    require(output_padding[j] < stride[j] || output_padding[j] < dilation[j],
            std::string(op) + ": output_padding " + shape_str(output_padding) +
                " must be smaller than either stride " + shape_str(stride) + " or dilation " +
                shape_str(dilation));
    int64_t size =
        (in[j] - 1) * stride[j] - 2 * padding[j] + dilation[j] * (kernel[j] - 1) + output_padding[j] + 1;
    require(size > 0, std::string(op) + ": input " + shape_str(input.shape()) + " with kernel " +
                          shape_str(kernel) + " and padding " + shape_str(padding) +
                          " gives an empty output");
    // The zero-stuffed input is padded by the dilated kernel less the padding (negative crops).
    before[j] = dilation[j] * (kernel[j] - 1) - padding[j];
    after[j] = before[j] + output_padding[j];
  }
  // Zero-stuffing as a view: [.., in, 1] padded to [.., in, stride], flattened, the trailing zeros cut.
  bool strided = std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s > 1; });
  if (strided) {
    Shape split = {x.shape()[0], c_in}, spread = split, stuffed = split;
    std::vector<int64_t> pad;
    for (size_t j = 0; j < nd; j++) {
      split.insert(split.end(), {in[j], 1});
      stuffed.push_back((in[j] - 1) * stride[j] + 1);
    }
    for (size_t j = nd; j-- > 0;) pad.insert(pad.end(), {0, stride[j] - 1, 0, 0});
    x = x.reshape(split).pad(pad);
    for (size_t j = 0; j < nd; j++) spread.push_back(in[j] * stride[j]);
    x = fit_trailing(x.reshape(spread), Shape(stuffed.begin() + 2, stuffed.end()));
  }
  // Weight [C_in, C_out/G, *k] -> [G, C_out/G, C_in/G, *k], flipped in space -> [C_out, C_in/G, *k].
  Shape wsplit = {groups, c_in / groups, weight.shape()[1]};
  wsplit.insert(wsplit.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> spatial_axes;
  for (size_t j = 0; j < nd; j++) spatial_axes.push_back(3 + static_cast<int64_t>(j));
  Shape wflat = {c_out, c_in / groups};
  wflat.insert(wflat.end(), kernel.begin(), kernel.end());
  Tensor w = weight.reshape(wsplit).transpose(1, 2).flip(spatial_axes).reshape(wflat);
  Tensor r = convolution(x, w, bias, Shape(nd, 1), fpad_order(before, after), dilation, groups);
  return unbatched_like(r, input, nd);
}

// ------------------------------------------------------------------------------------------ pooling

struct PoolGeometry {
  Shape kernel, stride, dilation, padding, in, out;
  Shape pad_after;  // padding at the end: makes room for ceil_mode's last window, or crops unused input
};

PoolGeometry pool_geometry(const char* op, const Tensor& x, size_t nd, const IntList& kernel_size,
                           const IntList& stride_arg, const IntList& padding, const IntList& dilation,
                           bool ceil_mode) {
  PoolGeometry g;
  g.kernel = positive(per_dim(kernel_size, nd, op, "kernel_size"), op, "kernel_size");
  g.stride = stride_arg.empty() ? g.kernel : positive(per_dim(stride_arg, nd, op, "stride"), op, "stride");
  g.dilation = positive(per_dim(dilation, nd, op, "dilation"), op, "dilation");
  g.padding = non_negative(per_dim(padding, nd, op, "padding"), op, "padding");
  g.in = spatial_shape(x, nd);
  for (size_t j = 0; j < nd; j++) {
    require(g.padding[j] <= g.kernel[j] / 2, std::string(op) + ": padding " + shape_str(g.padding) +
                                                 " must be at most half of kernel_size " +
                                                 shape_str(g.kernel));
    // PyTorch's pooling_output_shape: in ceil mode the last window must start inside the input or
    // the leading padding.
    int64_t span = g.in[j] + 2 * g.padding[j] - g.dilation[j] * (g.kernel[j] - 1) - 1;
    int64_t o = (span + (ceil_mode ? g.stride[j] - 1 : 0));
    o = (o >= 0 ? o / g.stride[j] : -((-o + g.stride[j] - 1) / g.stride[j])) + 1;
    if (ceil_mode && (o - 1) * g.stride[j] >= g.in[j] + g.padding[j]) o--;
    g.out.push_back(o);
  }
  for (size_t j = 0; j < nd; j++) {
    require(g.out[j] >= 1, std::string(op) + ": input " + shape_str(x.shape()) + " gives output size " +
                               shape_str(g.out) + ", which is too small");
    int64_t needed = (g.out[j] - 1) * g.stride[j] + g.dilation[j] * (g.kernel[j] - 1) + 1;
    g.pad_after.push_back(needed - g.in[j] - g.padding[j]);
  }
  return g;
}

Tensor pool_windows(const Tensor& x, const PoolGeometry& g, Scalar fill) {
  return sliding_windows(x.pad(fpad_order(g.padding, g.pad_after), fill), g.kernel, g.stride, g.dilation);
}

Tensor max_pool_nd(const char* op, size_t nd, const Tensor& input, const IntList& kernel_size,
                   const IntList& stride, const IntList& padding, const IntList& dilation, bool ceil_mode) {
  Tensor x = batched(input, nd, op);
  require(is_float(x.dtype()), std::string(op) + ": not implemented for " +
                                   std::string(dtype_name(x.dtype())) + " input " + shape_str(input.shape()) +
                                   " (floating point only, as in PyTorch)");
  PoolGeometry g = pool_geometry(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor win = pool_windows(x, g, -std::numeric_limits<double>::infinity());
  return unbatched_like(win.max(trailing_axes(nd)), input, nd);
}

// Per output position along one axis, PyTorch's avg_pool divisor: the window clipped to the padded
// input (count_include_pad) or to the input itself.
std::vector<int64_t> window_counts(const PoolGeometry& g, size_t j, bool count_include_pad) {
  std::vector<int64_t> counts;
  for (int64_t o = 0; o < g.out[j]; o++) {
    int64_t start = o * g.stride[j] - g.padding[j];
    int64_t end = std::min(start + g.kernel[j], g.in[j] + g.padding[j]);
    if (!count_include_pad) start = std::max<int64_t>(start, 0), end = std::min(end, g.in[j]);
    counts.push_back(end - start);
  }
  return counts;
}

Tensor avg_pool_nd(const char* op, size_t nd, const Tensor& input, const IntList& kernel_size,
                   const IntList& stride, const IntList& padding, bool ceil_mode, bool count_include_pad,
                   std::optional<int64_t> divisor_override) {
  Tensor x = batched(input, nd, op);
  require(is_float(x.dtype()), std::string(op) + ": not implemented for " +
                                   std::string(dtype_name(x.dtype())) + " input " + shape_str(input.shape()) +
                                   " (floating point only)");
  PoolGeometry g = pool_geometry(op, x, nd, kernel_size, stride, padding, 1, ceil_mode);
  Tensor sum = pool_windows(x, g, 0).sum(trailing_axes(nd), false, x.dtype());
  if (divisor_override) {
    require(*divisor_override != 0, std::string(op) + ": divisor_override must be non-zero");
    return unbatched_like(sum / static_cast<double>(*divisor_override), input, nd);
  }
  // The divisor is a product of per-axis counts; usually it is one number for every window.
  Tensor divisor;
  double constant = 1;
  for (size_t j = 0; j < nd; j++) {
    std::vector<int64_t> c = window_counts(g, j, count_include_pad);
    if (std::all_of(c.begin(), c.end(), [&](int64_t v) { return v == c[0]; })) {
      constant *= static_cast<double>(c[0]);
      continue;
    }
    Shape s(nd, 1);
    s[j] = g.out[j];
    Tensor axis = Tensor::from_vector(std::vector<double>(c.begin(), c.end()), s, x.device()).to(x.dtype());
    divisor = divisor.defined() ? divisor * axis : axis;
  }
  Tensor r = divisor.defined() ? sum / (divisor * constant) : sum / constant;
  return unbatched_like(r, input, nd);
}

// ------------------------------------------------------------------------------ adaptive pooling

// Averages axis `axis` of x into `out` bins [floor(o * in / out), ceil((o + 1) * in / out)).
// Equal bins are a reshape and a mean; unequal ones a product with an averaging matrix computed
// in the kernel (bins of different sizes are not one strided view).
Tensor adaptive_average_axis(const Tensor& x, int64_t axis, int64_t out) {
  int64_t in = x.shape()[axis];
  if (out > 0 && in % out == 0) {
    Shape s = x.shape();
    s[axis] = in / out;
    s.insert(s.begin() + axis, out);
    return x.reshape(s).mean(axis + 1);
  }
  Tensor o = Tensor::arange(out).reshape({out, 1}), i = Tensor::arange(in).reshape({1, in});
  Tensor start = (o * in).floor_divide(out), end = ((o + 1) * in + out - 1).floor_divide(out);
  Tensor inside = (i >= start).logical_and(i < end);
  // 16-bit inputs average in float32 and round once, as PyTorch does.
  DType compute = x.dtype() == kFloat64 ? kFloat64 : kFloat32;
  Tensor weights = inside.to(compute) / (end - start).to(compute);  // [out, in]
  return x.to(compute).transpose(axis, -1).matmul(weights.t()).transpose(axis, -1).to(x.dtype());
}

// ---------------------------------------------------------------------------------- interpolation

// An integer map dst -> floor((dst * step + start) / period) over `count` outputs: the form a
// strided view of a repeated axis can gather. dst * step + start stays inside [0, in * period).
struct AffineFloor {
  int64_t step, start, period;
  int64_t at(int64_t dst) const { return (dst * step + start) / period; }
};

// Continued-fraction approximations of v >= 0 with denominators up to max_den.
std::vector<std::pair<int64_t, int64_t>> convergents(double v, int64_t max_den) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t p0 = 0, q0 = 1, p1 = 1, q1 = 0;
  double rest = v;
  for (int i = 0; i < 40 && std::isfinite(rest); i++) {
    double a = std::floor(rest);
    if (a > 1e12) break;
    int64_t ai = static_cast<int64_t>(a), p2 = ai * p1 + p0, q2 = ai * q1 + q0;
    if (q2 > max_den) break;
    out.emplace_back(p2, q2);
    p0 = p1, q0 = q1, p1 = p2, q1 = q2;
    double frac = rest - a;
    if (frac < 1e-15) break;
    rest = 1 / frac;
  }
  return out;
}

// x[..., map[dst], ...] along `axis`. A map of the AffineFloor form is a view (expand each element
// `period` times, then step through the repeated axis); any other map falls back to summing
// where(one_hot) over the axis, which reads every input element per output.
Tensor gather_axis(const Tensor& x, int64_t axis, const std::vector<int64_t>& map,
                   const std::vector<AffineFloor>& candidates) {
  int64_t in = x.shape()[axis], count = static_cast<int64_t>(map.size());
  for (const AffineFloor& f : candidates) {
    if (f.period <= 0 || f.step < 0 || f.start < 0 || f.period > (int64_t(1) << 24)) continue;
    if ((count - 1) * f.step + f.start >= in * f.period) continue;
    bool same = true;
    for (int64_t d = 0; d < count && same; d++) same = f.at(d) == map[d];
    if (!same) continue;
    if (f.step == 0) {
      Shape s = x.shape();
      s[axis] = count;
      return x.narrow(axis, map[0], 1).expand(s);
    }
    Tensor y = x;
    if (f.period > 1) {
      Shape s = x.shape();
      s.insert(s.begin() + axis + 1, f.period);
      y = x.unsqueeze(axis + 1).expand(s).flatten(axis, axis + 1);
    }
    return y.slice(axis, f.start, f.start + (count - 1) * f.step + 1, f.step);
  }
  Tensor index = Tensor::from_vector(map, {count, 1}, x.device());
  Tensor one_hot = index == Tensor::arange(in).reshape({1, in});  // [count, in]
  Tensor moved = x.transpose(axis, -1).unsqueeze(-2);             // [..., 1, in]
  Tensor picked = moved.where(one_hot, Tensor::zeros({}, x.dtype()))
                      .sum(-1, false, x.dtype() == kBool ? kInt64 : x.dtype());
  return picked.to(x.dtype()).transpose(axis, -1);
}

// PyTorch's scale for an axis: 1 / scale_factor when one was given, else in / out (in T's precision).
template <class T>
T source_scale(int64_t in, int64_t out, std::optional<double> scale_factor) {
  if (scale_factor && *scale_factor > 0) return static_cast<T>(1.0 / *scale_factor);
  return static_cast<T>(in) / static_cast<T>(out);
}

// Rational candidates for a scale: in / out exactly, then the continued fractions of the value
// PyTorch computes with.
std::vector<std::pair<int64_t, int64_t>> scale_ratios(int64_t in, int64_t out,
                                                      std::optional<double> scale_factor) {
  std::vector<std::pair<int64_t, int64_t>> r;
  int64_t g = std::gcd(in, out);
  if (!scale_factor) r.emplace_back(in / g, out / g);
  for (auto c :
       convergents(scale_factor ? 1.0 / *scale_factor : static_cast<double>(in) / out, int64_t(1) << 20))
    r.push_back(c);
  return r;
}

// mode "nearest": PyTorch's nearest_idx, the index its 2-D kernels and every backward use: the
// identity when out == in, dst / 2 when out == 2 * in, else floor(dst * scale) in float (also for
// float64). (Its 1-D CPU forward computes the index in the input's dtype and has no identity case,
// so it can disagree with its own backward; see docs/ops.md.)
Tensor nearest_axis(const Tensor& x, int64_t axis, int64_t out, std::optional<double> scale_factor) {
  int64_t in = x.shape()[axis];
  if (out == in) return x;
  float scale = source_scale<float>(in, out, scale_factor);
  std::vector<int64_t> map;
  for (int64_t d = 0; d < out; d++) {
    int64_t s = out == 2 * in ? d >> 1 : static_cast<int64_t>(std::floor(static_cast<float>(d) * scale));
    map.push_back(std::min(s, in - 1));
  }
  std::vector<AffineFloor> candidates;
  for (auto [p, q] : scale_ratios(in, out, scale_factor)) candidates.push_back({p, 0, q});
  return gather_axis(x, axis, map, candidates);
}

// mode "linear" along one axis: x[i0] * w0 + x[i0 + 1] * w1 with PyTorch's source index and
// weights (computed in T: float, or double for float64 input).
template <class T>
Tensor linear_axis(const Tensor& x, int64_t axis, int64_t out, std::optional<double> scale_factor,
                   bool align_corners) {
  int64_t in = x.shape()[axis];
  if (out == in) return x;  // PyTorch copies, whatever the scale
  T scale = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                          : source_scale<T>(in, out, scale_factor);
  std::vector<T> real(out);
  for (int64_t d = 0; d < out; d++) {
    T src = align_corners ? scale * static_cast<T>(d) : scale * (static_cast<T>(d) + T(0.5)) - T(0.5);
    real[d] = (!align_corners && src < 0) ? T(0) : src;
  }
  // The lower neighbour i0 = floor(src) is taken from an exact rational form of the scale, so that
  // it is a strided view; where it lands one off PyTorch's float floor (src within rounding of an
  // integer) the weight below, computed from this i0, moves to the neighbour with the same value.
  // Indices are into x padded by one zero on each side: i0 in [-1, in - 1] is i0 + 1 there.
  std::vector<AffineFloor> candidates;
  if (align_corners) {
    if (out > 1)
      candidates.push_back({in - 1, out - 1, out - 1});
    else
      candidates.push_back({0, 1, 1});
  } else {
    // floor(scale * (d + 0.5) - 0.5) + 1 = floor((d * 2p + p + q) / 2q) for scale = p / q.
    for (auto [p, q] : scale_ratios(in, out, scale_factor)) candidates.push_back({2 * p, p + q, 2 * q});
  }
  auto consistent = [&](const AffineFloor& f) {
    for (int64_t d = 0; d < out; d++) {
      T below = static_cast<T>(f.at(d) - 1), t = real[d] - below;
      T tolerance = T(1e-4) * std::max(T(1), real[d]);
      if (f.at(d) < 0 || f.at(d) > in || t < -tolerance || t > 1 + tolerance) return false;
    }
    return true;
  };
  std::vector<int64_t> map;
  const AffineFloor* chosen = nullptr;
  for (const AffineFloor& f : candidates)
    if (consistent(f)) {
      chosen = &f;
      break;
    }
  for (int64_t d = 0; d < out; d++)
    map.push_back(chosen ? chosen->at(d) : std::min(static_cast<int64_t>(std::floor(real[d])), in - 1) + 1);
  std::vector<T> w0(out), w1(out);
  for (int64_t d = 0; d < out; d++) {
    T t = std::clamp(real[d] - static_cast<T>(map[d] - 1), T(0), T(1));
    w1[d] = t;
    w0[d] = T(1) - t;
    if (map[d] == in) w0[d] = 1, w1[d] = 0;  // i0 is the last element: PyTorch reads it twice
    if (map[d] == 0) w0[d] = 0, w1[d] = 1;   // i0 = -1 only where src was clamped to 0
  }
  std::vector<int64_t> pad(2 * (x.dim() - axis), 0);
  pad[pad.size() - 2] = pad[pad.size() - 1] = 1;
  Tensor padded = x.pad(pad);  // [.., in + 2, ..]
  std::vector<AffineFloor> use = chosen ? std::vector<AffineFloor>{*chosen} : std::vector<AffineFloor>{};
  Tensor lo = gather_axis(padded, axis, map, use);
  Tensor hi = gather_axis(padded.slice(axis, 1, std::nullopt), axis, map, use);
  Shape ws(x.dim(), 1);
  ws[axis] = out;
  // PyTorch stores the weights in the input's dtype (bfloat16 weights for bfloat16 input).
  Tensor weight0 = Tensor::from_vector(w0, ws, x.device()).to(x.dtype());
  Tensor weight1 = Tensor::from_vector(w1, ws, x.device()).to(x.dtype());
  return lo * weight0 + hi * weight1;
}

}  // namespace

Tensor Tensor::conv1d(const Tensor& weight, const std::optional<Tensor>& bias, IntList stride,
                      ConvPadding padding, IntList dilation, int64_t groups) const {
  return conv_nd("conv1d", 1, *this, weight, bias, stride, padding, dilation, groups);
}
Tensor Tensor::conv2d(const Tensor& weight, const std::optional<Tensor>& bias, IntList stride,
                      ConvPadding padding, IntList dilation, int64_t groups) const {
  return conv_nd("conv2d", 2, *this, weight, bias, stride, padding, dilation, groups);
}
Tensor Tensor::conv3d(const Tensor& weight, const std::optional<Tensor>& bias, IntList stride,
                      ConvPadding padding, IntList dilation, int64_t groups) const {
  return conv_nd("conv3d", 3, *this, weight, bias, stride, padding, dilation, groups);
}

Tensor Tensor::conv_transpose1d(const Tensor& weight, const std::optional<Tensor>& bias, IntList stride,
                                IntList padding, IntList output_padding, int64_t groups,
                                IntList dilation) const {
  return conv_transpose_nd("conv_transpose1d", 1, *this, weight, bias, stride, padding, output_padding,
                           groups, dilation);
}
Tensor Tensor::conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias, IntList stride,
                                IntList padding, IntList output_padding, int64_t groups,
                                IntList dilation) const {
  return conv_transpose_nd("conv_transpose2d", 2, *this, weight, bias, stride, padding, output_padding,
                           groups, dilation);
}

Tensor Tensor::max_pool1d(IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                          bool ceil_mode) const {
  return max_pool_nd("max_pool1d", 1, *this, kernel_size, stride, padding, dilation, ceil_mode);
}
Tensor Tensor::max_pool2d(IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                          bool ceil_mode) const {
  return max_pool_nd("max_pool2d", 2, *this, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor Tensor::avg_pool1d(IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                          bool count_include_pad) const {
  return avg_pool_nd("avg_pool1d", 1, *this, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     std::nullopt);
}
Tensor Tensor::avg_pool2d(IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                          bool count_include_pad, std::optional<int64_t> divisor_override) const {
  return avg_pool_nd("avg_pool2d", 2, *this, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override);
}

Tensor Tensor::adaptive_avg_pool2d(IntList output_size) const {
  Tensor x = batched(*this, 2, "adaptive_avg_pool2d");
  require(is_float(dtype()), "adaptive_avg_pool2d: not implemented for " + std::string(dtype_name(dtype())) +
                                 " input " + shape_str(shape()) + " (floating point only)");
  Shape out = non_negative(per_dim(output_size, 2, "adaptive_avg_pool2d", "output_size"),
                           "adaptive_avg_pool2d", "output_size");
  for (int64_t d : spatial_shape(x, 2))
    require(d > 0, "adaptive_avg_pool2d: input " + shape_str(shape()) + " has an empty spatial dimension");
  Tensor r = adaptive_average_axis(adaptive_average_axis(x, 2, out[0]), 3, out[1]);
  return unbatched_like(r, *this, 2);
}

Tensor Tensor::interpolate(IntList size, std::vector<double> scale_factor, const std::string& mode,
                           std::optional<bool> align_corners) const {
  const char* op = "interpolate";
  require(dim() == 3 || dim() == 4,
          "interpolate: expected a 3-D [N, C, W] or 4-D [N, C, H, W] input, got shape " + shape_str(shape()),
          ErrorKind::NotImplemented);
  size_t nd = static_cast<size_t>(dim()) - 2;
  bool linear = mode == "linear" || mode == "bilinear";
  require(mode == "nearest" || linear,
          "interpolate: mode '" + mode + "' is not supported (nearest, linear, bilinear), input " +
              shape_str(shape()),
          ErrorKind::NotImplemented);
  require(mode != "linear" || nd == 1,
          "interpolate: got " + std::to_string(dim()) + "-D input " + shape_str(shape()) +
              ", but linear mode needs 3-D input",
          ErrorKind::NotImplemented);
  require(mode != "bilinear" || nd == 2,
          "interpolate: got " + std::to_string(dim()) + "-D input " + shape_str(shape()) +
              ", but bilinear mode needs 4-D input",
          ErrorKind::NotImplemented);
  require(linear || !align_corners,
          "interpolate: align_corners can only be set with the linear modes, not '" + mode + "'",
          ErrorKind::Value);
  require(!size.empty() != !scale_factor.empty(),
          "interpolate: exactly one of size or scale_factor must be given, input " + shape_str(shape()),
          ErrorKind::Value);
  require(!linear || is_float(dtype()), "interpolate: mode '" + mode + "' is not implemented for " +
                                            std::string(dtype_name(dtype())) + " input " +
                                            shape_str(shape()));
  Shape in = spatial_shape(*this, nd), out(nd);
  std::vector<std::optional<double>> scales(nd);
  if (!size.empty()) {
    out = per_dim(size, nd, op, "size");
  } else {
    require(scale_factor.size() == 1 || scale_factor.size() == nd,
            "interpolate: scale_factor must have one value or one per spatial dimension of input " +
                shape_str(shape()),
            ErrorKind::Value);
    for (size_t j = 0; j < nd; j++) {
      double f = scale_factor.size() == 1 ? scale_factor[0] : scale_factor[j];
      require(std::isfinite(f) && f > 0,
              "interpolate: scale_factor must be positive and finite, input " + shape_str(shape()));
      scales[j] = f;
      out[j] = static_cast<int64_t>(std::floor(static_cast<double>(in[j]) * f));
    }
  }
  for (size_t j = 0; j < nd; j++)
    require(in[j] > 0 && out[j] > 0,
            "interpolate: input and output sizes should be greater than 0, got input " + shape_str(in) +
                " and output " + shape_str(out));
  Tensor r = *this;
  // One axis at a time, the last first: for bilinear this is PyTorch's order of the weighted sums.
  for (size_t j = nd; j-- > 0;) {
    int64_t axis = 2 + static_cast<int64_t>(j);
    if (!linear)
      r = nearest_axis(r, axis, out[j], scales[j]);
    else if (dtype() == kFloat64)
      r = linear_axis<double>(r, axis, out[j], scales[j], align_corners.value_or(false));
    else
      r = linear_axis<float>(r, axis, out[j], scales[j], align_corners.value_or(false));
  }
  return r.to(dtype());
}

}  // namespace lazygrad
