// The CUDA device's own code on a machine without a GPU, against tests/mock_cuda_driver.cpp (its
// memory is host memory and its kernels run nothing): discovery and `lazygrad info`, copies through
// the pinned staging in halves (sizes around the half's 4 MiB), transfers to the CPU and between two
// GPUs, out of memory as an Error, and kernels compiled by the real NVRTC into the cache and
// launched. Run by ctest as cuda_mock_driver, with LAZYGRAD_CUDA_DRIVER naming the mock and
// MOCK_CUDA_GPUS=2; it skips, saying why, where there is no NVRTC.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "renderer/renderer.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"

using namespace lazygrad;

namespace {

// The mock's counters, from the library the device opened.
long mock_launches() {
  void* lib = dlopen(std::getenv("LAZYGRAD_CUDA_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
  auto fn = lib ? reinterpret_cast<long (*)()>(dlsym(lib, "mock_cuda_launches")) : nullptr;
  return fn ? fn() : -1;
}

class CudaMock : public testing::Test {
 protected:
  void SetUp() override {
    const char* driver = std::getenv("LAZYGRAD_CUDA_DRIVER");
    if (!driver || std::string(driver).find("mock") == std::string::npos)
      GTEST_SKIP() << "LAZYGRAD_CUDA_DRIVER does not name the mock driver (ctest sets it)";
    if (std::string why = nvrtc_missing(); !why.empty()) GTEST_SKIP() << why;
  }
};

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  return v;
}

TEST_F(CudaMock, InfoNamesTheGpus) {
  std::vector<std::string> cuda;
  for (const DeviceInfo& d : devices())
    if (d.name.rfind("CUDA", 0) == 0) {
      EXPECT_TRUE(d.available) << d.detail;
      cuda.push_back(d.name + ": " + d.detail);
    }
  ASSERT_EQ(cuda.size(), 2u);
  EXPECT_EQ(cuda[0].rfind("CUDA: Mock GPU 0, sm_90, 4 SMs, 1024 MiB, driver 13.0, NVRTC ", 0), 0u) << cuda[0];
  EXPECT_EQ(cuda[1].rfind("CUDA:1: Mock GPU 1, sm_90", 0), 0u) << cuda[1];
  EXPECT_EQ(device("CUDA").renderer().target().sm, 90);
  EXPECT_TRUE(device("CUDA").renderer().target().tensor_cores);
  try {
    device("CUDA:2");
    ADD_FAILURE() << "CUDA:2 opened with 2 GPUs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the driver has 2 GPUs"), std::string::npos) << e.what();
  }
}

// Whole buffers in and out, through the staging's two 4 MiB halves: less than one, exactly one,
// one and a byte, several, and odd sizes.
TEST_F(CudaMock, CopiesRoundTripThroughTheStaging) {
  const size_t half = size_t(4) << 20;
  for (size_t n : {size_t(1), size_t(1000), half - 1, half, half + 1, 2 * half, 5 * half + 3}) {
    std::vector<uint8_t> v = pattern(n);
    Tensor t = Tensor::from_vector(v, {static_cast<int64_t>(n)}, "CUDA");
    EXPECT_EQ(t.device(), "CUDA");
    EXPECT_EQ(t.to_vector<uint8_t>(), v) << n << " bytes";
    EXPECT_EQ(t.to("CPU").to_vector<uint8_t>(), v) << n << " bytes by way of the CPU";
  }
}

TEST_F(CudaMock, TransfersBetweenGpus) {
  std::vector<uint8_t> v = pattern((size_t(9) << 20) + 5);
  Tensor a = Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, "CUDA");
  Tensor b = a.to("CUDA:1");
  EXPECT_EQ(b.device(), "CUDA:1");
  EXPECT_EQ(b.to_vector<uint8_t>(), v);
  EXPECT_EQ(b.to("CUDA").to_vector<uint8_t>(), v);
  Tensor c = Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, "CPU").to("CUDA:1");
  EXPECT_EQ(c.to_vector<uint8_t>(), v);
}

TEST_F(CudaMock, MemoryTheGpuWillNotGiveIsAnError) {
  // The mock gives each GPU 1 GiB.
  Tensor big = Tensor::zeros({int64_t(3) << 28}, kFloat32, "CUDA");  // 3 GiB
  try {
    big.realize();
    ADD_FAILURE() << "3 GiB allocated on a GPU of 1 GiB";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("3221225472 bytes"), std::string::npos) << e.what();
  }
  // What was allocated before is intact, and smaller buffers still come.
  std::vector<uint8_t> v = pattern(1000);
  EXPECT_EQ(Tensor::from_vector(v, {1000}, "CUDA").to_vector<uint8_t>(), v);
}

TEST_F(CudaMock, KernelsCompileIntoTheCacheAndLaunch) {
  const long before = mock_launches();
  const int64_t compiles = GlobalCounters::compile_count;
  Tensor a = Tensor::ones({1000}, kFloat32, "CUDA"), b = Tensor::ones({1000}, kFloat32, "CUDA");
  (a + b * 3).realize();
  EXPECT_GT(mock_launches(), before);
  EXPECT_GT(GlobalCounters::compile_count + GlobalCounters::cache_hits, compiles);
  // The cache entry: the source, the machine code for sm_90, its checksum.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache_dir()))
    if (e.path().extension() == ".cubin") {
      entries++;
      std::filesystem::path base = e.path();
      EXPECT_TRUE(std::filesystem::exists(base.replace_extension(".cu")));
      EXPECT_TRUE(std::filesystem::exists(base.replace_extension(".sum")));
    }
  EXPECT_GT(entries, 0);

  // A corrupt entry is compiled again; an intact one is loaded.
  const std::string source = "extern \"C\" __global__ void lg_mock_k(float* x) { x[threadIdx.x] = 1.0f; }\n";
  Device& gpu = device("CUDA");
  gpu.compile("lg_mock_k", source).reset();
  std::filesystem::path cubin;
  for (const auto& e : std::filesystem::directory_iterator(cache_dir()))
    if (e.path().filename().string().rfind("lg_mock_k-", 0) == 0 && e.path().extension() == ".cubin")
      cubin = e.path();
  ASSERT_FALSE(cubin.empty());
  write_file_atomic(cubin.string(), "not a cubin");
  const int64_t c0 = GlobalCounters::compile_count;
  gpu.compile("lg_mock_k", source).reset();
  EXPECT_EQ(GlobalCounters::compile_count, c0 + 1) << "a corrupt cubin was loaded";
  const int64_t h0 = GlobalCounters::cache_hits;
  gpu.compile("lg_mock_k", source).reset();
  EXPECT_EQ(GlobalCounters::cache_hits, h0 + 1) << "an intact cubin was compiled again";
  EXPECT_EQ(gpu.synchronize().bits, 0);
}

}  // namespace
