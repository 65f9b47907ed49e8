// Variable: scalars passed to kernels as arguments, so new values compile nothing.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

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
