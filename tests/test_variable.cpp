// Variable: scalars passed to kernels as arguments, so new values compile nothing.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>

using namespace lazygrad;

TEST(Variable, NewValuesCompileNothing) {
  Tensor x = Tensor::arange(4).to(kFloat32).realize();
  Variable lr(0.5);
  auto run = [&] { return (x * lr.tensor() + 1).to_vector<float>(); };
  EXPECT_EQ(run(), (std::vector<float>{1, 1.5f, 2, 2.5f}));
  int64_t compiles = GlobalCounters::compile_count;
  lr.set(2.0);
  EXPECT_EQ(run(), (std::vector<float>{1, 3, 5, 7}));
  lr.set(-1.0);
  EXPECT_EQ(run(), (std::vector<float>{1, 0, -1, -2}));
  EXPECT_EQ(GlobalCounters::compile_count, compiles);
  EXPECT_DOUBLE_EQ(lr.get(), -1.0);
}

TEST(Variable, ValueIsReadWhenTheKernelRuns) {
  // As tinygrad's bound variables: a graph built before set() sees the value at realize.
  Variable v(1.0, kFloat64);
  Tensor y = Tensor::ones({3}, kFloat64) * v.tensor();
  v.set(4.0);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{4, 4, 4}));
}

TEST(Variable, IntegerVariables) {
  Variable n(3, kInt64);
  Tensor i = Tensor::arange(5);
  EXPECT_EQ((i < n.tensor()).to_vector<bool>(), (std::vector<bool>{true, true, true, false, false}));
  n.set(1);
  EXPECT_EQ((i < n.tensor()).to_vector<bool>(), (std::vector<bool>{true, false, false, false, false}));
}

// Programs loaded into this process: compiled or read from the disk cache.
static int64_t programs_loaded() { return GlobalCounters::compile_count + GlobalCounters::cache_hits; }

TEST(Variable, NarrowAtAVariablePosition) {
  Tensor x = Tensor::arange(24).reshape({2, 6, 2}).to(kFloat32).realize();
  Variable pos(0, kInt64);
  auto read = [&] { return (x.narrow(1, pos, 2) * 10).to_vector<float>(); };
  EXPECT_EQ(read(), (std::vector<float>{0, 10, 20, 30, 120, 130, 140, 150}));
  int64_t loaded = programs_loaded();
  for (int64_t p = 1; p <= 4; p++) {
    pos.set(static_cast<double>(p));
    std::vector<float> want;
    for (int64_t b = 0; b < 2; b++)
      for (int64_t i = p; i < p + 2; i++)
        for (int64_t j = 0; j < 2; j++) want.push_back(10.0f * static_cast<float>(b * 12 + i * 2 + j));
    EXPECT_EQ(read(), want) << "at " << p;
  }
  EXPECT_EQ(programs_loaded(), loaded) << "every position runs the first position's kernel";
  // The position is checked when the kernel runs: 5 would read past the end.
  pos.set(5);
  EXPECT_THROW(
      {
        try {
          read();
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("is 5, outside the [0, 4]"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  pos.set(-1);
  EXPECT_THROW(read(), Error);
  EXPECT_THROW(x.narrow(1, pos, 7), Error);            // longer than the axis
  EXPECT_THROW(x.narrow(1, Variable(0.5), 1), Error);  // not an integer Variable
  // Values an integer Variable's dtype cannot hold are refused when set: the kernel would read them
  // wrapped, past the range check.
  EXPECT_THROW(Variable(200, kInt8), Error);
  EXPECT_THROW(Variable(-1, kUInt8), Error);
  Variable small(3, kUInt8);
  EXPECT_THROW(small.set(300), Error);
  EXPECT_THROW(small.set(1.5), Error);
  EXPECT_THROW(pos.set(std::nan("")), Error);
  EXPECT_THROW(pos.set(1e19), Error);
  EXPECT_EQ(small.get(), 3);
  Tensor long_axis = Tensor::arange(300).to(kFloat32).realize();
  small.set(255);
  EXPECT_EQ(long_axis.narrow(0, small, 1).item<float>(), 255.0f);
  Tensor w = Tensor::ones({4});
  w.requires_grad(true);
  pos.set(1);
  EXPECT_THROW(w.narrow(0, pos, 2).sum().backward(), Error);  // no gradient
}

TEST(Variable, NarrowAssignWritesOnlyItsRegion) {
  Tensor cache = Tensor::zeros({2, 5, 3}).contiguous().realize();
  int64_t kernels = GlobalCounters::kernel_count;
  cache.narrow_assign(1, 2, Tensor::full({2, 1, 3}, 7.0f)).realize();
  EXPECT_EQ(GlobalCounters::kernel_count - kernels, 1);
  std::vector<float> got = cache.to_vector<float>(), want(30, 0.0f);
  for (int b = 0; b < 2; b++)
    for (int j = 0; j < 3; j++) want[b * 15 + 2 * 3 + j] = 7.0f;
  EXPECT_EQ(got, want);
  // A Variable position: one kernel for every position, under a Jit too.
  Variable pos(0, kInt64);
  Tensor big = Tensor::zeros({6, 4}).contiguous().realize();
  Jit fill([&](const std::vector<Tensor>& in) {
    big.narrow_assign(0, pos, in[0].reshape({1, 4}) + 0);
    // big is not realized itself: holding its pending write must not send the write to a copy.
    return std::vector<Tensor>{big.narrow(0, pos, 1).sum().realize()};
  });
  for (int64_t p = 0; p < 6; p++) {
    pos.set(static_cast<double>(p));
    Tensor row = Tensor::full({4}, static_cast<float>(p + 1)).contiguous().realize();
    EXPECT_FLOAT_EQ(fill({row})[0].item<float>(), 4.0f * static_cast<float>(p + 1));
  }
  EXPECT_GT(fill.captured_kernels(), 0u);
  std::vector<float> rows = big.to_vector<float>();
  for (int64_t p = 0; p < 6; p++)
    for (int j = 0; j < 4; j++) EXPECT_EQ(rows[p * 4 + j], static_cast<float>(p + 1)) << p;
  pos.set(6);
  EXPECT_THROW(fill({Tensor::ones({4}).contiguous().realize()}), Error);
}

TEST(Variable, NarrowAssignChecks) {
  Tensor t = Tensor::zeros({4, 3}).contiguous().realize();
  EXPECT_THROW(t.narrow_assign(0, 3, Tensor::ones({2, 3})), Error);   // past the end
  EXPECT_THROW(t.narrow_assign(0, -1, Tensor::ones({1, 3})), Error);  // negative
  EXPECT_THROW(t.narrow_assign(0, 0, Tensor::ones({3})), Error);      // fewer dimensions
  EXPECT_THROW(t.narrow_assign(0, Variable(1.0), Tensor::ones({1, 3})), Error);
  Tensor view = t.narrow(0, 1, 2);
  EXPECT_THROW(view.narrow_assign(0, 0, Tensor::ones({1, 3})), Error);
  // A lazy tensor is computed first, and so is an earlier write still pending.
  Tensor lazy = Tensor::arange(6).to(kFloat32).reshape({2, 3}) * 1;
  lazy.narrow_assign(1, 1, Tensor::full({2, 1}, -1.0f));
  EXPECT_EQ(lazy.to_vector<float>(), (std::vector<float>{0, -1, 2, 3, -1, 5}));
  t.assign(Tensor::ones({4, 3}));
  t.narrow_assign(0, 3, Tensor::full({1, 3}, 5.0f));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 5, 5}));
  // The value broadcasts to the region; the region's old values can feed it.
  t.narrow_assign(0, 1, t.narrow(0, 3, 1) * 2);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 1, 1, 10, 10, 10, 1, 1, 1, 5, 5, 5}));
  // A partial write cannot go to a copy: a lazy reader of the old contents is computed first.
  Tensor reader = t * 1;
  t.narrow_assign(0, 0, Tensor::zeros({1, 3})).realize();
  EXPECT_EQ(reader.to_vector<float>(), (std::vector<float>{1, 1, 1, 10, 10, 10, 1, 1, 1, 5, 5, 5}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 0, 0, 10, 10, 10, 1, 1, 1, 5, 5, 5}));
}
