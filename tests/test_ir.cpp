// The IR: hash-consing, symbolic simplification of index math, and view merging.
#include <gtest/gtest.h>

#include <sstream>

#include "ir/uop.h"
#include "shape/view.h"

using namespace lazygrad;

namespace {
UOpPtr range(int64_t id, int64_t n) { return make_uop(Ops::RANGE, kInt64, {index_const(n)}, id); }
}  // namespace

TEST(IR, HashConsingMakesEqualNodesOne) {
  UOpPtr a = make_uop(Ops::CONST, kFloat32, {}, 1.5);
  UOpPtr b = make_uop(Ops::CONST, kFloat32, {}, 1.5);
  EXPECT_EQ(a, b);
  UOpPtr x = make_uop(Ops::ADD, kFloat32, {a, b}), y = make_uop(Ops::ADD, kFloat32, {a, b});
  EXPECT_EQ(x, y);
  EXPECT_NE(make_uop(Ops::CONST, kFloat32, {}, 0.0), make_uop(Ops::CONST, kFloat32, {}, -0.0));
  EXPECT_NE(make_uop(Ops::CONST, kFloat64, {}, 1.5), a);  // dtype is part of identity
}

TEST(IR, DTypesPrintTheirPyTorchNames) {
  std::ostringstream os;
  os << kFloat32 << " " << kBFloat16 << " " << kInt64 << " " << kBool << " " << kUInt16;
  EXPECT_EQ(os.str(), "float32 bfloat16 int64 bool uint16");
}

TEST(IR, DeadNodesLeaveTheTable) {
  size_t before = live_uop_count();
  {
    UOpPtr a = make_uop(Ops::CONST, kFloat32, {}, 123.25);
    UOpPtr s = make_uop(Ops::SQRT, kFloat32, {a});
    EXPECT_EQ(live_uop_count(), before + 2);
  }
  EXPECT_EQ(live_uop_count(), before);
}

TEST(IR, SymbolicIdentitiesFold) {
  UOpPtr r = range(1, 10);
  EXPECT_EQ(idx_add(r, index_const(0)), r);
  EXPECT_EQ(idx_mul(r, 1), r);
  EXPECT_TRUE(idx_mul(r, 0)->is_const(0));
  EXPECT_TRUE(idx_add(index_const(2), index_const(3))->is_const(5));
  EXPECT_EQ(idx_mod(r, 10), r);  // r < 10 already
  EXPECT_TRUE(idx_div(r, 10)->is_const(0));
  EXPECT_TRUE(idx_lt(r, 10)->is_const(1));
  EXPECT_EQ(idx_div(idx_div(r, 2), 5), idx_div(r, 10));
  // A constant inside a product moves out: (r + 1) * 2048 is r * 2048 + 2048, so the rows of a
  // register tile differ from each other by constants only.
  EXPECT_EQ(idx_mul(idx_add(r, index_const(1)), 2048), idx_add(idx_mul(r, 2048), index_const(2048)));
}

// A common factor of the divisor: (8*k + lane) // 48 is k // 6 and % 48 is (k % 6)*8 + lane for
// lane < 8 (8 vector lanes over a row of 48 all read the same row); not when lane can reach 8.
TEST(IR, DivModByAMultipleOfACommonFactor) {
  UOpPtr k = range(1, 100), lane = range(2, 8), wide = range(3, 9);
  UOpPtr x = idx_add(idx_mul(k, 8), lane);
  EXPECT_EQ(idx_div(x, 48), idx_div(k, 6));
  EXPECT_EQ(idx_mod(x, 48), idx_add(idx_mul(idx_mod(k, 6), 8), lane));
  UOpPtr y = idx_add(idx_mul(k, 8), wide);
  EXPECT_EQ(idx_div(y, 48)->op, Ops::IDIV);
  EXPECT_NE(idx_div(y, 48), idx_div(k, 6));
  // Every value agrees with floor division (the ranges' whole domains).
  for (int64_t kv = 0; kv < 100; kv++)
    for (int64_t lv = 0; lv < 8; lv++) {
      const int64_t v = kv * 8 + lv;
      EXPECT_EQ(v / 48, kv / 6);
      EXPECT_EQ(v % 48, (kv % 6) * 8 + lv);
    }
  // base + lane / 2 with an even base: the half-vector load's index (renderer/c_style.cpp).
  UOpPtr half = idx_div(idx_add(idx_mul(k, 16), lane), 2);
  auto base = halved_in(idx_add(half, index_const(6)), lane.get());
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(*base, idx_add(idx_mul(k, 8), index_const(6)));
  EXPECT_FALSE(halved_in(idx_div(idx_add(idx_mul(k, 16), idx_add(lane, index_const(1))), 2), lane.get()));
}

TEST(IR, UnravelThenRavelIsTheIdentity) {
  UOpPtr g = range(0, 64 * 33 * 7);
  Shape s{64, 33, 7};
  EXPECT_EQ(ravel(unravel(g, s), s), g);
  // (x*12 + y) // 12 and % 12 over known ranges.
  UOpPtr x = range(1, 5), y = range(2, 12);
  UOpPtr flat = idx_add(idx_mul(x, 12), y);
  EXPECT_EQ(idx_div(flat, 12), x);
  EXPECT_EQ(idx_mod(flat, 12), y);
}

TEST(IR, ViewsMergeUnderReshape) {
  // A permuted view reshaped back splits only where memory allows.
  ShapeTracker st = ShapeTracker::contiguous({4, 6});
  ShapeTracker r = st.apply(Ops::RESHAPE, {2, 2, 3, 2});
  EXPECT_EQ(r.views().size(), 1u);
  EXPECT_TRUE(r.is_contiguous());
  ShapeTracker p = st.apply(Ops::PERMUTE, {1, 0});
  ShapeTracker pr = p.apply(Ops::RESHAPE, {24});  // a transpose cannot be flat: needs a second view
  EXPECT_EQ(pr.views().size(), 2u);
  ShapeTracker ps = p.apply(Ops::RESHAPE, {3, 2, 4});  // splitting one axis keeps one view
  EXPECT_EQ(ps.views().size(), 1u);
  EXPECT_EQ(ps.views()[0].strides, (std::vector<int64_t>{2, 1, 6}));
}

TEST(IR, PaddedViewIndexHasValidity) {
  ShapeTracker st = ShapeTracker::contiguous({3}).apply(Ops::PAD, {1, 2});
  EXPECT_EQ(st.shape(), (Shape{6}));
  UOpPtr i = range(1, 6);
  auto [idx, valid] = st.to_index({i});
  ASSERT_NE(valid, nullptr);
  EXPECT_EQ(idx, idx_add(i, index_const(-1)));
  // Shrinking back to the data drops the mask altogether.
  ShapeTracker back = st.apply(Ops::SHRINK, {1, 4});
  EXPECT_TRUE(back.is_contiguous());
}
