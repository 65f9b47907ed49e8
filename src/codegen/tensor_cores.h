// Tensor cores: a matrix product of float16 or bfloat16 operands with float32 accumulation, done by
// a warp's mma.sync.m16n8k16 (NVIDIA, sm_80 on) instead of one thread per output element. As in
// tinygrad, it is an opt of the optimizer (`C0:T`, AxisKind::TensorCore) that the defaults choose for
// large products on a target with tensor cores and BEAM may choose; unlike tinygrad's, the kernel it
// makes is not built from the other opts' pieces but rendered whole (renderer/tensor_core_kernel.cpp)
// from what match_tensor_core reads off the kernel: which axes are M, N and K, and the strides
// along them of the two operands and the output.
//
// The kernel: each warp computes a (16 T) x (8 T) tile of the output of one batch index (T of
// {1, 2, 4}: T x T mma tiles, T^2 * 4 float32 accumulators per thread), four warps to a work-group,
// stepping K by 16. Where the operands and the output are read and written is each one's own affine
// index, so transposed and batched products qualify; a product with anything else fused into it
// (a bias, an activation, a masked or padded operand) does not.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "codegen/kernel.h"

namespace lazygrad {

// An affine index: base + sum of coef[i] * axis i (KernelAxes' order: the output axes, then K).
struct AffineIndex {
  int64_t base = 0;
  std::vector<int64_t> coef;
};

struct TensorCoreMatch {
  DType operand = kFloat16;        // both operands': kFloat16 or kBFloat16
  DType out = kFloat32;            // the stored dtype (float32, or the operands' dtype)
  size_t m_axis = 0, n_axis = 0;   // output axes (KernelAxes indices): A varies along M, B along N
  size_t k_axis = 0;               // the reduction's axis (KernelAxes index)
  std::vector<size_t> batch_axes;  // the other output axes, outermost first
  std::vector<int64_t> sizes;      // every axis's size (KernelAxes order)
  int a_param = 0, b_param = 0;    // the operands' buffers (kernel parameters)
  int c_param = 0;                 // the output's
  AffineIndex a, b, c;             // where A[.., m, k], B[.., k, n] and C[.., m, n] are
  int64_t size(size_t axis) const { return sizes[axis]; }
};

// What a kernel with a TensorCore opt computes: the match and the warp tile's factor T.
struct TensorCoreTile {
  TensorCoreMatch match;
  int64_t t = 1;                        // a warp's tile is (16 t) x (8 t)
  static constexpr int64_t kWarps = 4;  // per work-group
  int64_t tiles() const;                // warp tiles in all (every batch index)
};

// The kernel as a tensor-core product, or nullopt: one store of a float32 sum over one axis of
// products of two float16 (or two bfloat16) loads (the reduction as it is, or cast to the
// operands' dtype), every index affine in the axes, with an output axis along which only A varies
// (M: its size a multiple of 16), one along which only B varies (N: of 8), and K a multiple of 16.
std::optional<TensorCoreMatch> match_tensor_core(const Kernel& k);

// Whether a warp tile of factor t divides the product (M by 16 t, N by 8 t).
bool tensor_core_fits(const TensorCoreMatch& m, int64_t t);

}  // namespace lazygrad
