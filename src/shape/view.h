// Views: how a tensor's shape maps onto the flat memory below it. A movement op (reshape, permute,
// expand, pad, shrink, flip) changes the view and never the data. A ShapeTracker is a stack of
// views for the reshapes that cannot be merged into one.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "ir/uop.h"

namespace lazygrad {

struct View {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  // Valid [begin, end) per dimension; outside it the view reads as 0 (from pad). Empty: all valid.
  std::vector<std::pair<int64_t, int64_t>> mask;

  static View contiguous(const Shape& shape);
  bool is_contiguous() const;  // plain row-major with no offset or mask

  View permute(const std::vector<int64_t>& order) const;
  View expand(const Shape& shape) const;
  View pad(const std::vector<int64_t>& begin_end) const;     // flattened (begin, end) pairs
  View shrink(const std::vector<int64_t>& begin_end) const;  // flattened (begin, end) pairs
  View flip(const std::vector<int64_t>& flags) const;        // 1 flips that axis
  // The same memory under a new shape, when one view can express it (else nullopt).
  std::optional<View> reshape(const Shape& shape) const;

  // The flat offset and the validity (null: always valid) at multi-dimensional index idx.
  std::pair<UOpPtr, UOpPtr> to_index(const std::vector<UOpPtr>& idx) const;
};

class ShapeTracker {
 public:
  static ShapeTracker contiguous(const Shape& shape) { return ShapeTracker({View::contiguous(shape)}); }
  explicit ShapeTracker(std::vector<View> views) : views_(std::move(views)) {}

  const Shape& shape() const { return views_.back().shape; }
  const std::vector<View>& views() const { return views_; }
  bool is_contiguous() const { return views_.size() == 1 && views_[0].is_contiguous(); }

  // Apply one movement op (a tensor-level UOp's op and arg).
  ShapeTracker apply(Ops op, const std::vector<int64_t>& arg) const;
  // Flat offset into the memory below, and validity, at index idx of shape().
  std::pair<UOpPtr, UOpPtr> to_index(const std::vector<UOpPtr>& idx) const;

 private:
  std::vector<View> views_;  // views_[0] sits on the memory; views_.back() is what the user sees
};

// Row-major strides of a shape, and index <-> flat conversions as simplified index expressions.
std::vector<int64_t> contiguous_strides(const Shape& shape);
UOpPtr ravel(const std::vector<UOpPtr>& idx, const Shape& shape);
std::vector<UOpPtr> unravel(const UOpPtr& flat, const Shape& shape);

}  // namespace lazygrad
