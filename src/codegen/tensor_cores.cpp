#include "codegen/tensor_cores.h"

#include "codegen/optimize.h"

namespace lazygrad {

namespace {

// idx as an AffineIndex over the axes, or nullopt (a div, a mod, a product of ranges, a variable).
std::optional<AffineIndex> affine(const UOpPtr& idx, const std::vector<UOpPtr>& axes) {
  AffineIndex out;
  UOpPtr rest = idx;
  for (const auto& r : axes) {
    auto a = affine_in(rest, r.get());
    if (!a) return std::nullopt;
    out.coef.push_back(a->second);
    rest = a->first;
  }
  if (!rest->is_const()) return std::nullopt;
  out.base = rest->const_int();
  return out;
}

// The LOAD of a 16-bit float operand, widened to float32: CAST(LOAD) with no validity mask.
const UOp* operand_load(const UOpPtr& x) {
  if (x->op != Ops::CAST || x->dtype != kFloat32) return nullptr;
  const UOpPtr& ld = x->src[0];
  if (ld->op != Ops::LOAD || ld->src.size() != 2) return nullptr;
  if (ld->dtype != kFloat16 && ld->dtype != kBFloat16) return nullptr;
  return ld.get();
}

// The last output axis along which `only` varies and `other` does not (the output does).
std::optional<size_t> only_along(const AffineIndex& only, const AffineIndex& other, const AffineIndex& c,
                                 size_t n_output) {
  std::optional<size_t> found;
  for (size_t i = 0; i < n_output; i++)
    if (only.coef[i] != 0 && other.coef[i] == 0 && c.coef[i] != 0) found = i;
  return found;
}

}  // namespace

int64_t TensorCoreTile::tiles() const {
  int64_t n = (match.size(match.m_axis) / (16 * t)) * (match.size(match.n_axis) / (8 * t));
  for (size_t b : match.batch_axes) n *= match.size(b);
  return n;
}

bool tensor_core_fits(const TensorCoreMatch& m, int64_t t) {
  return t >= 1 && m.size(m.m_axis) % (16 * t) == 0 && m.size(m.n_axis) % (8 * t) == 0;
}

std::optional<TensorCoreMatch> match_tensor_core(const Kernel& k) {
  if (k.copy || !k.sink || k.sink->src.size() != 1) return std::nullopt;
  const UOpPtr& store = k.sink->src[0];
  if (store->op != Ops::STORE || store->src.size() != 3) return std::nullopt;
  UOpPtr value = store->src[2];
  const DType out = value->dtype;
  if (value->op == Ops::CAST) value = value->src[0];
  if (value->op != Ops::REDUCE || value->dtype != kFloat32 || value->src.size() != 2 ||
      value->as<ReduceArg>().op != Ops::ADD)
    return std::nullopt;
  const UOpPtr& product = value->src[0];
  if (product->op != Ops::MUL || product->dtype != kFloat32) return std::nullopt;
  const UOp* a = operand_load(product->src[0]);
  const UOp* b = operand_load(product->src[1]);
  if (!a || !b || a->dtype != b->dtype || (out != kFloat32 && out != a->dtype)) return std::nullopt;

  KernelAxes ax = kernel_axes(k);
  if (ax.reduces.size() != 1 || ax.ranges.size() != ax.n_output + 1) return std::nullopt;
  TensorCoreMatch m;
  m.operand = a->dtype;
  m.out = out;
  m.sizes = ax.sizes;
  m.k_axis = ax.n_output;
  m.a_param = static_cast<int>(a->src[0]->as<int64_t>());
  m.b_param = static_cast<int>(b->src[0]->as<int64_t>());
  m.c_param = static_cast<int>(store->src[0]->as<int64_t>());
  if (m.a_param == m.c_param || m.b_param == m.c_param) return std::nullopt;  // the output read back
  auto ia = affine(a->src[1], ax.ranges), ib = affine(b->src[1], ax.ranges),
       ic = affine(store->src[1], ax.ranges);
  if (!ia || !ib || !ic) return std::nullopt;
  m.a = *ia;
  m.b = *ib;
  m.c = *ic;
  if (m.a.coef[m.k_axis] == 0 || m.b.coef[m.k_axis] == 0 || m.c.coef[m.k_axis] != 0) return std::nullopt;
  auto ma = only_along(m.a, m.b, m.c, ax.n_output), nb = only_along(m.b, m.a, m.c, ax.n_output);
  if (!ma || !nb) return std::nullopt;
  m.m_axis = *ma;
  m.n_axis = *nb;
  for (size_t i = 0; i < ax.n_output; i++)
    if (i != m.m_axis && i != m.n_axis) m.batch_axes.push_back(i);
  if (m.size(m.m_axis) % 16 || m.size(m.n_axis) % 8 || m.size(m.k_axis) % 16) return std::nullopt;
  return m;
}

}  // namespace lazygrad
