// Linear algebra composed from broadcasting multiplies and sums: matmul is one fused reduce kernel,
// (a[..., m, 1, k] * b^T[..., 1, n, k]).sum(-1); einsum aligns its operands on one list of labels
// the same way and takes diagonals as strided views.
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// Every operand of a product must have one dtype, as in PyTorch (no promotion for matmul & co).
void require_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  require(a.dtype() == b.dtype(), std::string(op) + ": expected operands of one dtype, got " +
                                      std::string(dtype_name(a.dtype())) + " " + shape_str(a.shape()) +
                                      " and " + std::string(dtype_name(b.dtype())) + " " +
                                      shape_str(b.shape()));
  require(a.dtype() != kBool, std::string(op) + ": not implemented for bool operands " +
                                  shape_str(a.shape()) + " and " + shape_str(b.shape()));
}

// Sum that keeps the operands' dtype (an int32 matmul is int32 in PyTorch; sum() alone gives int64).
Tensor sum_keeping_dtype(const Tensor& x, Axes axes) { return x.sum(std::move(axes), false, x.dtype()); }

// The batch shape both operands broadcast to, or an error naming op and both shapes.
Shape broadcast_batch(const char* op, const Tensor& a, const Tensor& b, size_t a_batch, size_t b_batch) {
  size_t n = std::max(a_batch, b_batch);
  Shape out(n, 1);
  for (size_t i = 0; i < n; i++) {
    int64_t da = i < n - a_batch ? 1 : a.shape()[i - (n - a_batch)];
    int64_t db = i < n - b_batch ? 1 : b.shape()[i - (n - b_batch)];
    require(da == db || da == 1 || db == 1, std::string(op) + ": batch dimensions of " +
                                                shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                                                " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Keeps the part of the last two dimensions where keep(row, column) holds, zero elsewhere.
Tensor triangle(const Tensor& x, const char* op, int64_t diagonal, bool lower) {
  require(x.dim() >= 2, std::string(op) + ": input tensor must have at least 2 dimensions, got shape " +
                            shape_str(x.shape()));
  int64_t rows = x.shape()[x.dim() - 2], cols = x.shape()[x.dim() - 1];
  Tensor row = Tensor::arange(rows).reshape({rows, 1}), col = Tensor::arange(cols).reshape({1, cols});
  // tril keeps col - row <= diagonal, triu keeps col - row >= diagonal.
  Tensor keep = lower ? (col - row <= diagonal) : (col - row >= diagonal);
  return x.where(keep, Tensor::zeros({}, x.dtype()));
}

}  // namespace

Tensor Tensor::matmul(const Tensor& other) const {
  require(dim() >= 1 && other.dim() >= 1, "matmul: both arguments need to be at least 1-D, got shapes " +
                                              shape_str(shape()) + " and " + shape_str(other.shape()));
  require_same_dtype("matmul", *this, other);
  if (is_half(dtype()))
    return to(kFloat32).matmul(other.to(kFloat32)).to(dtype());  // products summed in float32
  if (dim() == 1 && other.dim() == 1) return dot(other);
  // A 1-D left operand is a row [1, k], a 1-D right operand a column [k, 1]; the extra axis goes again.
  Tensor a = dim() == 1 ? unsqueeze(0) : *this;
  Tensor b = other.dim() == 1 ? other.unsqueeze(1) : other;
  int64_t k = a.shape()[a.dim() - 1];
  require(k == b.shape()[b.dim() - 2], "matmul: shapes " + shape_str(shape()) + " and " +
                                           shape_str(other.shape()) + " cannot be multiplied (" +
                                           std::to_string(k) +
                                           " != " + std::to_string(b.shape()[b.dim() - 2]) + ")");
  broadcast_batch("matmul", a, b, a.dim() - 2, b.dim() - 2);
  // [..., m, 1, k] * [..., 1, n, k], summed over k: the multiply fuses into the reduction.
  Tensor product = a.unsqueeze(-2) * b.transpose(-1, -2).unsqueeze(-3);
  Tensor r = sum_keeping_dtype(product, -1);
  if (dim() == 1) r = r.squeeze(-2);
  if (other.dim() == 1) r = r.squeeze(-1);
  return r;
}

Tensor Tensor::dot(const Tensor& other) const {
  require(dim() == 1 && other.dim() == 1, "dot: expected two 1-D tensors, got shapes " + shape_str(shape()) +
                                              " and " + shape_str(other.shape()));
  require(numel() == other.numel(), "dot: tensors of shapes " + shape_str(shape()) + " and " +
                                        shape_str(other.shape()) + " differ in size");
  require_same_dtype("dot", *this, other);
  if (is_half(dtype())) return to(kFloat32).dot(other.to(kFloat32)).to(dtype());
  return sum_keeping_dtype(*this * other, 0);
}

Tensor Tensor::outer(const Tensor& other) const {
  require(dim() == 1 && other.dim() == 1, "outer: expected two 1-D tensors, got shapes " +
                                              shape_str(shape()) + " and " + shape_str(other.shape()));
  return unsqueeze(1) * other.unsqueeze(0);
}

Tensor Tensor::linear(const Tensor& weight, const std::optional<Tensor>& bias) const {
  require(weight.dim() == 1 || weight.dim() == 2,
          "linear: weight must be 1-D or 2-D [out_features, in_features], got " + shape_str(weight.shape()));
  require(dim() >= 1 && shape().back() == weight.shape().back(),
          "linear: input of shape " + shape_str(shape()) + " does not end in in_features of weight " +
              shape_str(weight.shape()));
  Tensor y = matmul(weight.t());
  if (!bias || !bias->defined()) return y;
  require_same_dtype("linear", y, *bias);
  require(bias->dim() <= 1 && (bias->dim() == 0 || bias->shape()[0] == (y.dim() ? y.shape().back() : 1)),
          "linear: bias of shape " + shape_str(bias->shape()) + " does not match the output " +
              shape_str(y.shape()));
  return y + *bias;
}

Tensor Tensor::tril(int64_t diagonal) const { return triangle(*this, "tril", diagonal, true); }
Tensor Tensor::triu(int64_t diagonal) const { return triangle(*this, "triu", diagonal, false); }

// ------------------------------------------------------------------------------------------ einsum

namespace {

// A label is a letter, or one of the dimensions an ellipsis stands for (numbered from the left of
// the broadcast ellipsis shape, after every letter so they never collide).
using Label = int;
constexpr Label kEllipsisLabel = 256;

struct Operand {
  Tensor t;
  std::vector<Label> labels;  // one per dimension of t
};

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string label_name(Label l) { return l >= kEllipsisLabel ? "..." : std::string(1, static_cast<char>(l)); }

// One term ("ij", "...k", "b...") as letters with -1 where the ellipsis stands.
std::vector<Label> parse_term(const std::string& term, const std::string& equation) {
  std::vector<Label> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); i++) {
    if (term.compare(i, 3, "...") == 0) {
      require(!ellipsis, "einsum: more than one ellipsis in a term of '" + equation + "'");
      ellipsis = true;
      out.push_back(-1);
      i += 2;
    } else {
      require(is_letter(term[i]), "einsum: invalid subscript '" + std::string(1, term[i]) + "' in '" +
                                      equation + "' (subscripts are letters a-z, A-Z)");
      out.push_back(term[i]);
    }
  }
  return out;
}

// The diagonal of the (equal-sized) dimensions p < q, put last: a view with stride n + 1.
Tensor diagonal_view(const Tensor& t, int64_t p, int64_t q) {
  Shape order;
  for (int64_t i = 0; i < t.dim(); i++)
    if (i != p && i != q) order.push_back(i);
  order.push_back(p);
  order.push_back(q);
  int64_t n = t.shape()[p];
  Tensor x = t.permute(order).flatten(-2);
  return x.slice(-1, 0, std::nullopt, n + 1);
}

// Takes diagonals until every label appears once.
void take_diagonals(Operand& op, int index) {
  for (bool again = true; again;) {
    again = false;
    for (size_t p = 0; p < op.labels.size() && !again; p++)
      for (size_t q = p + 1; q < op.labels.size() && !again; q++) {
        if (op.labels[p] != op.labels[q]) continue;
        require(op.t.shape()[p] == op.t.shape()[q],
                "einsum: subscript " + label_name(op.labels[p]) + " is repeated for operand " +
                    std::to_string(index) + " of shape " + shape_str(op.t.shape()) + " but the sizes differ");
        Label l = op.labels[p];
        op.t = diagonal_view(op.t, static_cast<int64_t>(p), static_cast<int64_t>(q));
        op.labels.erase(op.labels.begin() + q);
        op.labels.erase(op.labels.begin() + p);
        op.labels.push_back(l);
        again = true;
      }
  }
}

// Puts an operand's dimensions in the order of `order` (labels it lacks become size-1 dimensions).
Tensor align(const Operand& op, const std::vector<Label>& order) {
  Shape perm, shape;
  for (Label l : order) {
    auto it = std::find(op.labels.begin(), op.labels.end(), l);
    if (it == op.labels.end()) {
      shape.push_back(1);
    } else {
      perm.push_back(it - op.labels.begin());
      shape.push_back(op.t.shape()[perm.back()]);
    }
  }
  return op.t.permute(perm).reshape(shape);
}

// Multiplies a and b (or takes a alone) and sums the labels in `summed`; the result's labels are
// the others, in the order they first appear.
Operand contract(const Operand& a, const Operand* b, const std::vector<Label>& summed, bool keep_dtype) {
  std::vector<Label> kept, order;
  auto add = [&](Label l) {
    if (std::find(kept.begin(), kept.end(), l) != kept.end()) return;
    if (std::find(summed.begin(), summed.end(), l) != summed.end()) return;
    kept.push_back(l);
  };
  for (Label l : a.labels) add(l);
  if (b)
    for (Label l : b->labels) add(l);
  order = kept;
  order.insert(order.end(), summed.begin(), summed.end());
  Tensor x = align(a, order);
  if (b) x = x * align(*b, order);
  if (!summed.empty()) {
    std::vector<int64_t> axes;
    for (size_t i = kept.size(); i < order.size(); i++) axes.push_back(static_cast<int64_t>(i));
    // One operand sums like Tensor::sum (integers give int64, as torch.einsum does); a product keeps its
    // dtype.
    x = keep_dtype ? sum_keeping_dtype(x, axes) : x.sum(axes);
  }
  return {x, kept};
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back().push_back(c);
  }
  // No operand at all is a bad argument (ValueError in PyTorch); too few for the equation a RuntimeError.
  require(!operands.empty(), "einsum: expected at least one operand for '" + equation + "'",
          ErrorKind::Value);
  require(terms.size() == operands.size(), "einsum: '" + equation + "' has " + std::to_string(terms.size()) +
                                               " operand terms but " + std::to_string(operands.size()) +
                                               " operands were given");
  for (const Tensor& t : operands) require_same_dtype("einsum", operands[0], t);

  // Expand each term's ellipsis into labels for its dimensions, right-aligned across operands.
  std::vector<std::vector<Label>> parsed;
  size_t ellipsis_dims = 0;
  for (size_t i = 0; i < terms.size(); i++) {
    parsed.push_back(parse_term(terms[i], equation));
    bool has = std::count(parsed[i].begin(), parsed[i].end(), -1) > 0;
    int64_t letters = static_cast<int64_t>(parsed[i].size()) - (has ? 1 : 0);
    require(has ? letters <= operands[i].dim() : letters == operands[i].dim(),
            "einsum: term '" + terms[i] + "' of '" + equation + "' has " + std::to_string(letters) +
                " subscripts for operand " + std::to_string(i) + " of shape " +
                shape_str(operands[i].shape()));
    if (has) ellipsis_dims = std::max<size_t>(ellipsis_dims, operands[i].dim() - letters);
  }
  std::vector<Operand> ops;
  for (size_t i = 0; i < terms.size(); i++) {
    Operand op{operands[i], {}};
    size_t covered = operands[i].dim() - (parsed[i].size() - 1);
    for (Label l : parsed[i]) {
      if (l != -1) {
        op.labels.push_back(l);
        continue;
      }
      for (size_t j = 0; j < covered; j++)
        op.labels.push_back(kEllipsisLabel + static_cast<Label>(ellipsis_dims - covered + j));
    }
    take_diagonals(op, static_cast<int>(i));
    ops.push_back(std::move(op));
  }
  // Sizes of one label must agree across operands, or be 1 and broadcast.
  std::map<Label, int64_t> size;
  for (size_t i = 0; i < ops.size(); i++)
    for (size_t d = 0; d < ops[i].labels.size(); d++) {
      int64_t n = ops[i].t.shape()[d];
      auto [it, fresh] = size.emplace(ops[i].labels[d], n);
      require(fresh || it->second == n || it->second == 1 || n == 1,
              "einsum: subscript " + label_name(ops[i].labels[d]) + " has size " + std::to_string(n) +
                  " for operand " + std::to_string(i) + " which does not broadcast with size " +
                  std::to_string(it->second));
      if (it->second == 1) it->second = n;
    }

  // The output: explicit after "->", else the ellipsis then the letters seen once, in ASCII order.
  std::vector<Label> output;
  if (arrow != std::string::npos) {
    for (Label l : parse_term(eq.substr(arrow + 2), equation)) {
      if (l == -1) {
        for (size_t j = 0; j < ellipsis_dims; j++) output.push_back(kEllipsisLabel + static_cast<Label>(j));
        continue;
      }
      require(std::find(output.begin(), output.end(), l) == output.end(),
              "einsum: output subscript " + label_name(l) + " appears more than once in '" + equation + "'");
      require(size.count(l), "einsum: output subscript " + label_name(l) + " of '" + equation +
                                 "' does not appear in any input term");
      output.push_back(l);
    }
  } else {
    for (size_t j = 0; j < ellipsis_dims; j++) output.push_back(kEllipsisLabel + static_cast<Label>(j));
    std::map<Label, int> occurrences;
    for (const auto& p : parsed)
      for (Label l : p)
        if (l != -1) occurrences[l]++;
    for (auto [l, n] : occurrences)
      if (n == 1) output.push_back(l);
  }

  // Contract left to right, summing each label as soon as no later operand and not the output needs it.
  auto needed_later = [&](Label l, size_t after) {
    if (std::find(output.begin(), output.end(), l) != output.end()) return true;
    for (size_t j = after + 1; j < ops.size(); j++)
      if (std::find(ops[j].labels.begin(), ops[j].labels.end(), l) != ops[j].labels.end()) return true;
    return false;
  };
  auto summable = [&](const Operand& a, const Operand* b, size_t step) {
    std::vector<Label> s;
    for (const Operand* o : {&a, b})
      if (o)
        for (Label l : o->labels)
          if (!needed_later(l, step) && std::find(s.begin(), s.end(), l) == s.end()) s.push_back(l);
    return s;
  };
  Operand acc = ops[0];
  if (ops.size() == 1) {
    acc = contract(acc, nullptr, summable(acc, nullptr, 0), false);
  } else {
    for (size_t j = 1; j < ops.size(); j++) acc = contract(acc, &ops[j], summable(acc, &ops[j], j), true);
  }
  // The broadcast of size-1 labels happened in the products; the result may still hold a size 1
  // where the output needs the broadcast size (a label seen only as 1 and n in one operand).
  Tensor r = align(acc, output);
  Shape out_shape;
  for (Label l : output) out_shape.push_back(size[l]);
  return r.shape() == out_shape ? r : r.expand(out_shape);
}

}  // namespace lazygrad
