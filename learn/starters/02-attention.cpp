// lazygrad learn, exercise 2: attention (docs/learn/09-attention.md)
//
// Causal scaled dot-product attention, the forward pass, for q, k and v of shape [B, H, T, D]
// (batch, heads, positions, head size). The result has q's shape:
//
//   scores  = q @ k^T / sqrt(D)          [B, H, T, T]: query i against key j
//   scores  = -inf where j > i           the causal mask: position i reads positions j <= i only
//   weights = softmax(scores) over the keys (the last axis)
//   out     = weights @ v                [B, H, T, D]
//
// Useful: q.matmul(k), k.transpose(-2, -1), q.size(-1), Tensor::ones({T, T}, lazygrad::kBool),
// .triu(1) (true above the diagonal), scores.masked_fill(mask, value), scores.softmax(-1).
// Do not call scaled_dot_product_attention: it is what the checker compares with.
//
// Check it with:   lazygrad learn check 2     (add --file PATH when this file is elsewhere)
#include <lazygrad/learn.h>

#include <cmath>

using lazygrad::Tensor;

Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  // TODO: the scores, scaled; the causal mask; the softmax; the weights times v (see above).
  (void)q;
  (void)k;
  return v;  // wrong, a placeholder so that the file compiles: each position copies its own value
}

// Hands causal_attention to the checker when `lazygrad learn check` loads this file. Keep it last.
const bool submitted = lazygrad::learn::submit(&causal_attention);
