// Embedding: a table of vectors looked up by integer indices.
#include <string>

#include "lazygrad/nn.h"
#include "nn/require.h"

namespace lazygrad::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx)
    : num_embeddings(num_embeddings), embedding_dim(embedding_dim), padding_idx(padding_idx) {
  require(num_embeddings >= 0 && embedding_dim >= 0,
          "Embedding: num_embeddings and embedding_dim must be "
          "non-negative, got " +
              std::to_string(num_embeddings) + " and " + std::to_string(embedding_dim));
  if (padding_idx) {
    require(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings,
            "Embedding: padding_idx must be within num_embeddings (" + std::to_string(num_embeddings) +
                "), got " + std::to_string(*padding_idx));
    if (*padding_idx < 0) *this->padding_idx += num_embeddings;
  }
  weight = register_parameter("weight", Tensor::empty({num_embeddings, embedding_dim}));
  reset_parameters();
}

void Embedding::reset_parameters() {
  if (!padding_idx || init::SkipInit::active()) {
    init::normal_(weight);
    return;
  }
  // N(0, 1) with the padding row zeroed, in one kernel rather than a draw and then a row write.
  NoGrad no_grad;
  Tensor other_rows = Tensor::arange(num_embeddings).ne(*padding_idx).reshape({num_embeddings, 1});
  weight.assign(Tensor::randn(weight.shape()).where(other_rows, 0.0));
  weight.realize();
}

Tensor Embedding::forward(const Tensor& indices) {
  const ProfileScope scope(*this);
  require(is_int(indices.dtype()), "Embedding: expected integer indices, got " +
                                       std::string(dtype_name(indices.dtype())) + " of shape " +
                                       shape_str(indices.shape()));
  Tensor table = weight;
  if (padding_idx) {
    // The padding row is read like any other but gets no gradient: where() routes the gradient to
    // weight on the other rows only, and to a detached copy (nowhere) on that one.
    Tensor other_rows = Tensor::arange(num_embeddings).ne(*padding_idx).reshape({num_embeddings, 1});
    table = weight.where(other_rows, weight.detach());
  }
  return embedding(indices, table);
}

std::string Embedding::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  return s;
}

}  // namespace lazygrad::nn
