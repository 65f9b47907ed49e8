// Diagonals and sliding windows as views: pads, reshapes and shrinks of the lazy graph, never a copy
// (the tricks tinygrad uses: a row of n + 1 read through a shape of n wraps by one each row).
#include <numeric>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// [..., L, L] -> [..., L]: flattened, padded by L, each row of L + 1 starts with a diagonal element.
Tensor square_diagonal(const Tensor& t) {
  int64_t l = t.shape().back();
  Shape lead(t.shape().begin(), t.shape().end() - 2);
  Shape flat = lead, rows = lead;
  flat.push_back(l * l);
  rows.insert(rows.end(), {l, l + 1});
  std::vector<int64_t> padding{0, l};
  return t.reshape(flat).pad(padding).reshape(rows).select(-1, 0);
}

// The order that moves dims a and b to the end, the others keeping their order.
std::vector<int64_t> to_end(int64_t ndim, int64_t a, int64_t b) {
  std::vector<int64_t> order;
  for (int64_t d = 0; d < ndim; d++)
    if (d != a && d != b) order.push_back(d);
  order.insert(order.end(), {a, b});
  return order;
}

}  // namespace

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  int64_t a = normalize_axis(dim1, dim(), "diagonal"), b = normalize_axis(dim2, dim(), "diagonal");
  require(a != b, "diagonal: dim1 and dim2 cannot be the same dimension (" + std::to_string(dim1) + ", " +
                      std::to_string(dim2) + ") of shape " + shape_str(shape()));
  Tensor t = permute(to_end(dim(), a, b));
  // The offset drops columns (above the main diagonal) or rows (below); then the square part.
  int64_t rows = t.shape()[dim() - 2], cols = t.shape()[dim() - 1];
  int64_t r0 = offset < 0 ? std::min(-offset, rows) : 0, c0 = offset > 0 ? std::min(offset, cols) : 0;
  int64_t l = std::max<int64_t>(0, std::min(rows - r0, cols - c0));
  t = t.slice(-2, r0, r0 + l).slice(-1, c0, c0 + l);
  return square_diagonal(t);
}

Tensor Tensor::diag(int64_t diagonal) const {
  require(dim() == 1 || dim() == 2, "diag: supports 1-D or 2-D tensors, got shape " + shape_str(shape()));
  if (dim() == 2) return this->diagonal(diagonal, 0, 1).clone();  // PyTorch's is a copy too
  // [n] -> [n, n + 1] (n zeros after each element) -> flat, the last n dropped -> [n, n]: each row
  // starts one later. Then the offset pads the square: columns on the left and rows below for a
  // diagonal above the main one, the mirror image for one below.
  int64_t n = shape()[0], k = diagonal < 0 ? -diagonal : diagonal;
  Tensor m = unsqueeze(1).pad({0, n}).reshape({n * (n + 1)}).slice(0, 0, n * n).reshape({n, n});
  if (k == 0) return m;
  return diagonal > 0 ? m.pad({k, 0, 0, k}) : m.pad({0, k, k, 0});
}

Tensor Tensor::unfold(int64_t dimension, int64_t size, int64_t step) const {
  if (dim() == 0) return reshape({1}).unfold(dimension, size, step).reshape({size});
  int64_t d = normalize_axis(dimension, dim(), "unfold");
  int64_t len = shape()[d];
  require(size >= 0 && size <= len, "unfold: maximum size for tensor at dimension " + std::to_string(d) +
                                        " is " + std::to_string(len) + " but size is " +
                                        std::to_string(size) + " (shape " + shape_str(shape()) + ")");
  require(step > 0, "unfold: step is " + std::to_string(step) + " but must be > 0");
  int64_t windows = (len - size) / step + 1;
  Shape out = shape();
  out[d] = windows;
  out.push_back(size);
  if (size == 0) return narrow(d, 0, 0).unsqueeze(-1).reshape(out);
  // Along the last axis: x repeated e times and read as [size, len + 1] rows, so row r starts at
  // x[r] (each row of len + 1 shifts the repeated sequence by one). Column w * step of row r is then
  // x[w * step + r], which never wraps: (windows - 1) step + size <= len.
  int64_t last = dim() - 1;
  Tensor t = transpose(d, last);
  Shape lead(t.shape().begin(), t.shape().end() - 1);
  int64_t e = (size * (len + 1) + len - 1) / len;
  Shape repeats(dim(), 1);
  repeats.back() = e;
  Shape rows = lead;
  rows.insert(rows.end(), {size, len + 1});
  Tensor w = t.repeat(repeats).slice(-1, 0, size * (len + 1)).reshape(rows);
  w = w.slice(-1, 0, (windows - 1) * step + 1, step);  // [..., size, windows]
  // [..., size, windows] -> windows back at d (the moved axis returns there) and size last.
  w = w.transpose(-1, -2).transpose(d, last);
  return w;
}

}  // namespace lazygrad
