// Dropout and scaled dot-product attention (torch.nn.functional), composed from Tensor ops.
#include <cmath>
#include <limits>
#include <string>

#include "tensor/tensor_impl.h"

namespace lazygrad {

Tensor Tensor::dropout(double p, bool training) const {
  require(p >= 0 && p <= 1, "dropout: probability has to be between 0 and 1, got " + std::to_string(p),
          ErrorKind::Value);
  if (!training || p == 0) return *this;
  require(is_float(dtype()), "dropout: expected a floating-point input, got " +
                                 std::string(dtype_name(dtype())) + " of shape " + shape_str(shape()));
  // A product, not a where, so NaN and inf stay NaN where dropped, as in PyTorch (input * noise).
  if (p == 1) return *this * 0;
  // PyTorch's noise: bernoulli(1 - p) / (1 - p), in the input's dtype.
  Tensor keep = Tensor::rand(shape()).lt(1 - p);
  Tensor noise = keep.to(dtype()) * (1 / (1 - p));
  return *this * noise;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention";
  auto shapes = [&] {
    return " (query " + shape_str(query.shape()) + ", key " + shape_str(key.shape()) + ", value " +
           shape_str(value.shape()) + ")";
  };
  require(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
          std::string(op) + ": query, key and value need at least 2 dimensions" + shapes());
  require(is_float(query.dtype()) && query.dtype() == key.dtype() && query.dtype() == value.dtype(),
          std::string(op) + ": expected query, key and value of one floating-point dtype, got " +
              std::string(dtype_name(query.dtype())) + ", " + std::string(dtype_name(key.dtype())) + " and " +
              std::string(dtype_name(value.dtype())));
  require(query.shape().back() == key.shape().back(),
          std::string(op) + ": query and key must have the same last dimension" + shapes());
  require(key.shape()[key.shape().size() - 2] == value.shape()[value.shape().size() - 2],
          std::string(op) + ": key and value must have the same sequence length (dimension -2)" + shapes());
  bool masked = attn_mask && attn_mask->defined();
  require(!(masked && is_causal), std::string(op) + ": attn_mask must not be given when is_causal is true");
  require(dropout_p >= 0 && dropout_p <= 1,
          std::string(op) + ": dropout_p has to be between 0 and 1, got " + std::to_string(dropout_p));

  int64_t L = query.shape()[query.shape().size() - 2], S = key.shape()[key.shape().size() - 2];
  double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.shape().back())));
  Tensor scores = query.matmul(key.transpose(-2, -1)) * s;  // [..., L, S]
  if (is_causal) {
    // Query i sees keys 0..i: a mask made of two aranges, computed inside the kernel.
    Tensor causal = Tensor::arange(S).unsqueeze(0).le(Tensor::arange(L).unsqueeze(1));
    scores = scores.where(causal, -kInf);
  } else if (masked) {
    const Tensor& m = *attn_mask;
    Shape sc = scores.shape(), ms = m.shape();
    bool ok = ms.size() <= sc.size();
    for (size_t i = 0; ok && i < ms.size(); i++) {
      int64_t have = ms[ms.size() - 1 - i], want = sc[sc.size() - 1 - i];
      ok = have == want || have == 1;
    }
    require(ok, std::string(op) + ": attn_mask of shape " + shape_str(ms) +
                    " cannot be expanded to the attention weights' shape " + shape_str(sc) + shapes());
    // A bool mask keeps the positions that are true; any other mask is added to the scores.
    scores = m.dtype() == kBool ? scores.where(m, -kInf) : scores + m.to(scores.dtype());
  }
  Tensor weights = scores.softmax(-1);  // a row with every key masked out is NaN, as in PyTorch
  if (dropout_p > 0) weights = weights.dropout(dropout_p, true);
  return weights.matmul(value);
}

Tensor Tensor::scaled_dot_product_attention(const Tensor& key, const Tensor& value,
                                            const std::optional<Tensor>& attn_mask, double dropout_p,
                                            bool is_causal, std::optional<double> scale) const {
  return lazygrad::scaled_dot_product_attention(*this, key, value, attn_mask, dropout_p, is_causal, scale);
}

}  // namespace lazygrad
