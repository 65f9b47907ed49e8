// Random numbers: deterministic for a seed whatever the thread count, and with the right moments.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>

using namespace lazygrad;

namespace {
struct Moments {
  double mean, var;
};
template <class T>
Moments moments(const std::vector<T>& v) {
  double s = 0, s2 = 0;
  for (T x : v) s += static_cast<double>(x);
  double m = s / static_cast<double>(v.size());
  for (T x : v) s2 += (static_cast<double>(x) - m) * (static_cast<double>(x) - m);
  return {m, s2 / static_cast<double>(v.size())};
}
}  // namespace

TEST(Random, SameSeedSameNumbersForAnyThreadCount) {
  int saved = settings().threads;
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    set_threads(threads);
    Tensor::manual_seed(1234);
    auto v = Tensor::rand({300, 301}).to_vector<float>();  // large enough to be split across threads
    if (first.empty()) first = v;
    else EXPECT_EQ(v, first) << "THREADS=" << threads;
  }
  set_threads(saved);
}

TEST(Random, SeedsAndCallsDiffer) {
  Tensor::manual_seed(1);
  auto a = Tensor::rand({64}).to_vector<float>();
  auto b = Tensor::rand({64}).to_vector<float>();  // the next counters: new numbers
  Tensor::manual_seed(2);
  auto c = Tensor::rand({64}).to_vector<float>();
  Tensor::manual_seed(1);
  auto d = Tensor::rand({64}).to_vector<float>();
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a, d);
}

TEST(Random, UniformMoments) {
  Tensor::manual_seed(0);
  auto v = Tensor::rand({200000}).to_vector<float>();
  for (float x : v) ASSERT_TRUE(x >= 0.0f && x < 1.0f);
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 0.5, 0.005);
  EXPECT_NEAR(m.var, 1.0 / 12, 0.002);
  auto u = Tensor::uniform({100000}, -3.0, 5.0).to_vector<float>();
  for (float x : u) ASSERT_TRUE(x >= -3.0f && x < 5.0f);
  EXPECT_NEAR(moments(u).mean, 1.0, 0.05);
  auto d = Tensor::rand({100000}, kFloat64).to_vector<double>();
  EXPECT_NEAR(moments(d).mean, 0.5, 0.005);
}

TEST(Random, NormalMoments) {
  Tensor::manual_seed(0);
  auto v = Tensor::randn({200000}).to_vector<float>();
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(m.var, 1.0, 0.02);
  // The tails are there, at about the normal rate: P(|z| > 3) = 0.0027.
  int64_t tail = 0;
  for (float x : v) tail += std::abs(x) > 3.0f;
  EXPECT_NEAR(static_cast<double>(tail) / v.size(), 0.0027, 0.001);
}

TEST(Random, RandintRangeAndUniformity) {
  Tensor::manual_seed(7);
  Tensor r = Tensor::randint(-3, 4, {70000});
  EXPECT_EQ(r.dtype(), kInt64);
  auto v = r.to_vector<int64_t>();
  std::vector<int64_t> counts(7, 0);
  for (int64_t x : v) {
    ASSERT_TRUE(x >= -3 && x < 4);
    counts[x + 3]++;
  }
  for (int64_t c : counts) EXPECT_NEAR(c, 10000, 500);
}

TEST(Random, RandomTensorsAreLazy) {
  Tensor::manual_seed(3);
  GlobalCounters::reset();
  Tensor s = (Tensor::rand({1000}) * 2).sum();  // generated inside the reducing kernel
  s.realize();
  EXPECT_EQ(GlobalCounters::kernel_count, 1);
  EXPECT_NEAR(s.item<float>(), 1000.0, 60.0);
}
