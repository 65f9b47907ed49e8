// all_reduce between devices (lazygrad/multi.h): every dtype, odd sizes and one element, naive and
// ring, sums and maxima, on 2, 3 and 4 virtual CPU devices and on CPU + CL where OpenCL is found.
// The values are small integers, so every order of summing gives the same exact result: each
// device's result must equal the reduction on one device, bit for bit.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <string>
#include <vector>

using namespace lazygrad;

namespace {

std::vector<std::string> cpu_devices(int n) {
  std::vector<std::string> out{"CPU"};
  for (int i = 1; i < n; i++) out.push_back("CPU:" + std::to_string(i));
  return out;
}

// Small integers of `dtype` (0 or 1 for bool), a different draw on each device.
std::vector<Tensor> shards_of(DType dtype, const Shape& shape, const std::vector<std::string>& devices) {
  std::vector<Tensor> out;
  const bool unsigned_like =
      dtype == kBool || dtype == kUInt8 || dtype == kUInt16 || dtype == kUInt32 || dtype == kUInt64;
  for (const auto& d : devices) {
    Tensor t =
        dtype == kBool ? Tensor::randint(0, 2, shape) : Tensor::randint(unsigned_like ? 0 : -9, 10, shape);
    out.push_back(t.to(dtype).to(d).realize());
  }
  return out;
}

Tensor on_one_device(const std::vector<Tensor>& shards, ReduceOp op) {
  Tensor acc = shards[0].to("CPU");
  for (size_t i = 1; i < shards.size(); i++)
    acc = op == ReduceOp::Sum ? acc + shards[i].to("CPU") : acc.maximum(shards[i].to("CPU"));
  return acc.realize();
}

void expect_all_equal(const std::vector<Tensor>& got, const Tensor& want, const std::string& what) {
  const std::vector<double> w = want.to(kFloat64).to_vector<double>();
  for (const Tensor& g : got) {
    ASSERT_EQ(g.shape(), want.shape()) << what;
    ASSERT_EQ(g.dtype(), want.dtype()) << what;
    EXPECT_EQ(g.to(kFloat64).to("CPU").to_vector<double>(), w) << what << " on " << g.device();
  }
}

void check(DType dtype, const Shape& shape, const std::vector<std::string>& devices,
           AllReduceAlgorithm algorithm, ReduceOp op) {
  const std::vector<Tensor> shards = shards_of(dtype, shape, devices);
  std::vector<Tensor> got = all_reduce(shards, op, algorithm);
  ASSERT_EQ(got.size(), shards.size());
  realize(got);
  for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(got[i].device(), shards[i].device());
  const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(shape) + " on " +
                           std::to_string(devices.size()) + " devices, " +
                           (algorithm == AllReduceAlgorithm::Ring ? "ring" : "naive") + ", " +
                           (op == ReduceOp::Sum ? "sum" : "max");
  expect_all_equal(got, on_one_device(shards, op), what);
}

}  // namespace

TEST(AllReduce, EveryDtypeSizeAndAlgorithm) {
  Tensor::manual_seed(0);
  for (DType dtype : kAllDTypes)
    for (const Shape& shape : {Shape{1}, Shape{7}, Shape{3, 333}})
      for (int n : {2, 3})
        for (auto algorithm : {AllReduceAlgorithm::Naive, AllReduceAlgorithm::Ring})
          for (auto op : {ReduceOp::Sum, ReduceOp::Max}) check(dtype, shape, cpu_devices(n), algorithm, op);
}

TEST(AllReduce, FourDevicesAndAScalar) {
  Tensor::manual_seed(1);
  for (auto algorithm : {AllReduceAlgorithm::Naive, AllReduceAlgorithm::Ring}) {
    check(kFloat32, {1000, 3}, cpu_devices(4), algorithm, ReduceOp::Sum);
    check(kInt64, {}, cpu_devices(4), algorithm, ReduceOp::Max);
  }
}

TEST(AllReduce, FloatSumsAreTheSameBitsOnEveryDevice) {
  // Non-integer values: the ring sums each chunk in another order than one device would, so the
  // result differs from a single device's sum in the last bits, but never between devices.
  Tensor::manual_seed(2);
  std::vector<Tensor> shards;
  for (const auto& d : cpu_devices(3)) shards.push_back(Tensor::randn({4099}).to(d).realize());
  const Tensor want = on_one_device(shards, ReduceOp::Sum);
  for (auto algorithm : {AllReduceAlgorithm::Naive, AllReduceAlgorithm::Ring}) {
    std::vector<Tensor> got = all_reduce(shards, ReduceOp::Sum, algorithm);
    realize(got);
    const std::vector<float> first = got[0].to("CPU").to_vector<float>();
    for (const Tensor& g : got) EXPECT_EQ(g.to("CPU").to_vector<float>(), first) << g.device();
    EXPECT_TRUE(got[0].to("CPU").allclose(want, 1e-6, 1e-6));
  }
}

TEST(AllReduce, AutoPicksTheRingForLargeShards) {
  // The ring's chunks are narrow views of each shard: a launch count tells the two ways apart.
  auto launches = [](int64_t numel) {
    std::vector<Tensor> shards;
    for (const auto& d : cpu_devices(3)) shards.push_back(Tensor::ones({numel}).to(d).realize());
    const int64_t before = GlobalCounters::kernel_count;
    realize(all_reduce(shards));
    return GlobalCounters::kernel_count - before;
  };
  const int64_t threshold = ring_all_reduce_min_bytes();
  set_ring_all_reduce_min_bytes(4096);
  const int64_t small = launches(16), large = launches(4096 / 4 + 3);
  set_ring_all_reduce_min_bytes(threshold);
  EXPECT_LT(small, large) << "naive: one sum per device; the ring: a combine per hop and chunk";
  EXPECT_EQ(threshold, int64_t{64} << 20) << "the measured default (docs/multi.md)";
}

TEST(AllReduce, BadShardsAreErrorsNamingThem) {
  auto message = [](const std::vector<Tensor>& shards) {
    try {
      all_reduce(shards);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({}).find("no tensors"), std::string::npos);
  EXPECT_NE(message({Tensor::ones({2, 3}), Tensor::ones({3, 2}, kFloat32, "CPU:1")}).find("{2, 3}"),
            std::string::npos);
  EXPECT_NE(message({Tensor::ones({2}), Tensor::ones({2}, kInt32, "CPU:1")}).find("int32"),
            std::string::npos);
  EXPECT_NE(message({Tensor::ones({2}), Tensor::ones({2})}).find("two shards are on CPU"), std::string::npos);
}

TEST(AllReduce, CpuAndOpenCl) {
  bool have_cl = false;
  for (const DeviceInfo& d : devices()) have_cl |= d.name == "CL" && d.available;
  if (!have_cl) GTEST_SKIP() << "no OpenCL device";
  Tensor::manual_seed(3);
  for (auto algorithm : {AllReduceAlgorithm::Naive, AllReduceAlgorithm::Ring})
    for (DType dtype : {kFloat32, kInt32, kUInt8})
      check(dtype, {1001}, {"CPU", "CL"}, algorithm, ReduceOp::Sum);
}
