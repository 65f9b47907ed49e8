#include "shape/view.h"

#include <algorithm>

namespace lazygrad {

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 0);
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = shape[i] == 1 ? 0 : acc;  // size-1 axes get stride 0: they never move the index
    acc *= shape[i];
  }
  return st;
}

UOpPtr ravel(const std::vector<UOpPtr>& idx, const Shape& shape) {
  auto st = contiguous_strides(shape);
  UOpPtr flat = index_const(0);
  for (size_t i = 0; i < idx.size(); i++)
    if (st[i]) flat = idx_add(flat, idx_mul(idx[i], st[i]));
  return flat;
}

std::vector<UOpPtr> unravel(const UOpPtr& flat, const Shape& shape) {
  // A shape with no elements has no index to unravel (only masked reads reach it: a padded empty
  // axis); its divisors would be 0, and an integer % 0 is a kernel error.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return std::vector<UOpPtr>(shape.size(), index_const(0));
  std::vector<UOpPtr> out(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    out[i] = shape[i] == 1 ? index_const(0) : idx_mod(idx_div(flat, acc), shape[i]);
    acc *= shape[i];
  }
  return out;
}

View View::contiguous(const Shape& shape) { return View{shape, contiguous_strides(shape), 0, {}}; }

bool View::is_contiguous() const { return offset == 0 && mask.empty() && strides == contiguous_strides(shape); }

View View::permute(const std::vector<int64_t>& order) const {
  View v;
  for (int64_t p : order) {
    v.shape.push_back(shape[p]);
    v.strides.push_back(strides[p]);
    if (!mask.empty()) v.mask.push_back(mask[p]);
  }
  v.offset = offset;
  return v;
}

View View::expand(const Shape& new_shape) const {
  View v = *this;
  for (size_t i = 0; i < shape.size(); i++) {
    if (shape[i] == new_shape[i]) continue;
    v.shape[i] = new_shape[i];
    v.strides[i] = 0;
    // An expanded axis of a padded view: every copy is valid or none is.
    if (!mask.empty()) v.mask[i] = mask[i].first < mask[i].second ? std::pair<int64_t, int64_t>{0, new_shape[i]}
                                                                    : std::pair<int64_t, int64_t>{0, 0};
  }
  return v;
}

View View::shrink(const std::vector<int64_t>& be) const {
  View v = *this;
  for (size_t i = 0; i < shape.size(); i++) {
    int64_t b = be[2 * i], e = be[2 * i + 1];
    v.shape[i] = e - b;
    v.offset += b * strides[i];
    if (!mask.empty()) {
      auto [lo, hi] = mask[i];
      v.mask[i] = {std::clamp(lo - b, int64_t(0), e - b), std::clamp(hi - b, int64_t(0), e - b)};
    }
  }
  // A mask that covers everything says nothing.
  bool full = true;
  for (size_t i = 0; i < v.mask.size(); i++) full &= v.mask[i].first == 0 && v.mask[i].second == v.shape[i];
  if (full) v.mask.clear();
  return v;
}

View View::pad(const std::vector<int64_t>& be) const {
  View v = *this;
  if (v.mask.empty())
    for (int64_t s : shape) v.mask.emplace_back(0, s);
  bool any = false;
  for (size_t i = 0; i < shape.size(); i++) {
    int64_t b = be[2 * i], e = be[2 * i + 1];
    any |= b || e;
    v.shape[i] += b + e;
    v.offset -= b * strides[i];
    v.mask[i] = {v.mask[i].first + b, v.mask[i].second + b};
  }
  if (!any) return *this;
  return v;
}

View View::flip(const std::vector<int64_t>& flags) const {
  View v = *this;
  for (size_t i = 0; i < shape.size(); i++) {
    if (!flags[i]) continue;
    v.offset += (shape[i] - 1) * strides[i];
    v.strides[i] = -strides[i];
    if (!mask.empty()) v.mask[i] = {shape[i] - mask[i].second, shape[i] - mask[i].first};
  }
  return v;
}

std::optional<View> View::reshape(const Shape& new_shape) const {
  if (new_shape == shape) return *this;
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel == 0) return View{new_shape, contiguous_strides(new_shape), 0, {}};
  if (!mask.empty()) {
    // Only reshapes that add or drop size-1 axes keep a mask expressible.
    Shape a, b;
    for (int64_t s : shape) if (s != 1) a.push_back(s);
    for (int64_t s : new_shape) if (s != 1) b.push_back(s);
    if (a != b) return std::nullopt;
  }
  // Walk old and new axes together, matching groups of equal element count; inside a group the old
  // axes must be mergeable (stride[i] == stride[i+1] * shape[i+1]) for one view to express it.
  View v{new_shape, std::vector<int64_t>(new_shape.size(), 0), offset, {}};
  size_t i = 0, j = 0;
  std::vector<size_t> old_keep;  // old non-1 axes matched to new non-1 axes, for the mask
  while (i < shape.size() || j < new_shape.size()) {
    if (i < shape.size() && shape[i] == 1) { i++; continue; }
    if (j < new_shape.size() && new_shape[j] == 1) { j++; continue; }
    if (i >= shape.size() || j >= new_shape.size()) return std::nullopt;
    size_t i0 = i, j0 = j;
    int64_t po = shape[i++], pn = new_shape[j++];
    while (po != pn) {
      if (po < pn) {
        if (i >= shape.size()) return std::nullopt;
        po *= shape[i++];
      } else {
        if (j >= new_shape.size()) return std::nullopt;
        pn *= new_shape[j++];
      }
    }
    // Old axes i0..i-1 (skipping size 1) must form one run of memory.
    int64_t inner = 0;
    bool have = false;
    for (size_t k = i; k-- > i0;) {
      if (shape[k] == 1) continue;
      if (have && strides[k] != inner) return std::nullopt;
      inner = strides[k] * shape[k];
      have = true;
    }
    // The group's innermost stride, then new strides outward.
    int64_t st = 0;
    for (size_t k = i; k-- > i0;)
      if (shape[k] != 1) { st = strides[k]; break; }
    for (size_t k = j; k-- > j0;) {
      if (new_shape[k] == 1) continue;
      v.strides[k] = st;
      st *= new_shape[k];
    }
  }
  if (!mask.empty()) {
    // Carry each non-1 axis's mask over; size-1 axes are valid if the whole view is non-empty.
    bool any_empty = false;
    for (size_t k = 0; k < shape.size(); k++) any_empty |= mask[k].first >= mask[k].second;
    std::vector<std::pair<int64_t, int64_t>> kept;
    for (size_t k = 0; k < shape.size(); k++)
      if (shape[k] != 1) kept.push_back(mask[k]);
    size_t q = 0;
    for (size_t k = 0; k < new_shape.size(); k++) {
      if (new_shape[k] != 1) v.mask.push_back(kept[q++]);
      else v.mask.emplace_back(0, any_empty ? 0 : 1);
    }
  }
  return v;
}

std::pair<UOpPtr, UOpPtr> View::to_index(const std::vector<UOpPtr>& idx) const {
  UOpPtr flat = index_const(offset), valid;
  for (size_t i = 0; i < shape.size(); i++) {
    if (strides[i] && shape[i] != 1) flat = idx_add(flat, idx_mul(idx[i], strides[i]));
    if (!mask.empty()) {
      auto [lo, hi] = mask[i];
      if (lo > 0) valid = bool_and(valid, idx_ge(idx[i], lo));
      if (hi < shape[i]) valid = bool_and(valid, idx_lt(idx[i], hi));
    }
  }
  return {flat, valid};
}

ShapeTracker ShapeTracker::apply(Ops op, const std::vector<int64_t>& arg) const {
  std::vector<View> vs = views_;
  View& top = vs.back();
  switch (op) {
    case Ops::PERMUTE: top = top.permute(arg); break;
    case Ops::EXPAND: top = top.expand(arg); break;
    case Ops::PAD: top = top.pad(arg); break;
    case Ops::SHRINK: top = top.shrink(arg); break;
    case Ops::FLIP: top = top.flip(arg); break;
    case Ops::RESHAPE:
      if (auto merged = top.reshape(arg)) top = *merged;
      else vs.push_back(View::contiguous(arg));
      break;
    default: throw Error("ShapeTracker: " + std::string(op_name(op)) + " is not a movement op");
  }
  return ShapeTracker(std::move(vs));
}

std::pair<UOpPtr, UOpPtr> ShapeTracker::to_index(const std::vector<UOpPtr>& idx) const {
  auto [flat, valid] = views_.back().to_index(idx);
  for (size_t i = views_.size() - 1; i-- > 0;) {
    auto [f, v] = views_[i].to_index(unravel(flat, views_[i].shape));
    flat = f;
    valid = bool_and(valid, v);
  }
  return {flat, valid};
}

}  // namespace lazygrad
