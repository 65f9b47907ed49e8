// The CPU's in-process compiler (LAZYGRAD_CPU_COMPILER=llvm, runtime/cpu/llvm_compiler.h): kernels it
// compiles give the C path's values bit for bit, its errors name the kernel, its objects are
// unloaded when no one holds them, and `lazygrad info` says which compiler runs. The cache (a
// corrupt object rebuilt, processes sharing a cold cache) is test_cache.cpp's, which the llvm
// label runs with this compiler; the rest of the suite too. Where the build has no LLVM every case
// skips, saying why.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/cpu/llvm_compiler.h"
#include "runtime/device.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

// Kernels of every kind the C renderer writes: vector FMA tiles (a matrix product, a convolution),
// the exp series and libm's functions, row statistics (softmax), float64 accumulators over a long
// sum, a NaN-propagating max, floor division and modulo of negative integers, wrapping int32
// products, 16-bit floats, argmax and a cumulative sum.
std::vector<Tensor> programs() {
  Tensor::manual_seed(7);
  Tensor a = Tensor::randn({64, 96}), b = Tensor::randn({96, 80});
  Tensor x = Tensor::linspace(-30, 30, 1001);
  Tensor i = Tensor::arange(-500, 500).to(kInt32);
  Tensor nan_rows = Tensor::randn({5, 33}).where(Tensor::arange(33).reshape({1, 33}) != 17,
                                                 std::numeric_limits<double>::quiet_NaN());
  Tensor image = Tensor::randn({2, 3, 11, 11}), kernel = Tensor::randn({4, 3, 3, 3});
  return {a.matmul(b),
          x.exp(),
          x.abs().add(1e-3).log(),
          x.sin(),
          x.cos(),
          x.abs().sqrt(),
          x.tanh(),
          x.sigmoid(),
          x.gelu(),
          Tensor::randn({9, 37}).softmax(1),
          Tensor::randn({10007}).sum(),
          nan_rows.max(1),
          i.floor_divide(7),
          i.floor_divide(Tensor::arange(-500, 500).to(kInt32).remainder(9).add(1)),
          i.remainder(-7),
          i * 123456789,
          (x.to(kFloat16) * 3.1 + 0.7),
          (x.to(kBFloat16) * x.to(kBFloat16)),
          image.conv2d(kernel, std::nullopt, 1, 1),
          Tensor::randn({6, 50}).argmax(1),
          Tensor::randn({300}).cumsum(0)};
}

// Every result's bytes, one after another.
std::string result_bytes() {
  std::string out;
  for (const Tensor& t : programs()) {
    std::vector<uint8_t> bytes = t.contiguous().reshape({-1}).bitcast(kUInt8).to_vector<uint8_t>();
    out.append(bytes.begin(), bytes.end());
  }
  return out;
}

// Runs this binary's Child case with `compiler`, in a cache of its own; returns what it wrote.
std::string child_bytes(const std::string& compiler) {
  const std::string exe = fs::read_symlink("/proc/self/exe");
  const fs::path dir =
      fs::temp_directory_path() / ("lazygrad-llvm-test-" + std::to_string(getpid()) + compiler);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string out = (dir / "bytes").string();
  // Not the parent's gtest shard (the llvm label runs this suite in shards): the child's case must run.
  const std::string cmd = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX LAZYGRAD_CPU_COMPILER=" + compiler +
                          " LAZYGRAD_CACHE='" + (dir / "cache").string() + "' LAZYGRAD_LLVM_TEST_OUT='" +
                          out + "' FTZ=0 " + exe +
                          " --gtest_filter=LlvmCompilerChild.WriteResults > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  return bytes;
}

}  // namespace

// Runs only as the child of ValuesAreTheCPathsBitForBit.
TEST(LlvmCompilerChild, WriteResults) {
  const char* out = std::getenv("LAZYGRAD_LLVM_TEST_OUT");
  if (!out) GTEST_SKIP() << "runs as a child of LlvmCompiler.ValuesAreTheCPathsBitForBit";
  std::ofstream(out, std::ios::binary) << result_bytes();
}

TEST(LlvmCompiler, ValuesAreTheCPathsBitForBit) {
  if (!llvm_compiler_built()) GTEST_SKIP() << llvm_compiler_description();
  const std::string c_path = child_bytes("cc"), in_process = child_bytes("llvm");
  ASSERT_GT(c_path.size(), 70000u);  // 78,992 bytes: every program ran
  ASSERT_EQ(c_path.size(), in_process.size());
  size_t differ = 0;
  for (size_t k = 0; k < c_path.size(); k++) differ += c_path[k] != in_process[k];
  EXPECT_EQ(differ, 0u) << "bytes that differ";
}

TEST(LlvmCompiler, ACompileErrorNamesTheKernelAndSaysWhy) {
  if (!llvm_compiler_built()) GTEST_SKIP() << llvm_compiler_description();
  try {
    compile_c_in_process("int k_broken_entry(void) { return undeclared; }\n", "k_broken-0123.c");
    FAIL() << "compiled a kernel that uses an undeclared name";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("k_broken-0123.c"), std::string::npos) << m;
    EXPECT_NE(m.find("undeclared"), std::string::npos) << m;
    EXPECT_NE(m.find("--- source ---\nint k_broken_entry(void)"), std::string::npos) << m;
  }
}

TEST(LlvmCompiler, ACorruptObjectDoesNotLoad) {
  if (!llvm_compiler_built()) GTEST_SKIP() << llvm_compiler_description();
  const std::string object = compile_c_in_process("int k_ok_entry(void) { return 3; }\n", "k_ok.c");
  std::string why;
  auto loaded = load_object(object, "k_ok", &why);
  ASSERT_TRUE(loaded) << why;
  auto fn = reinterpret_cast<int (*)()>(loaded->find("k_ok_entry"));
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn(), 3);
  EXPECT_EQ(loaded->find("k_missing_entry"), nullptr);
  // Not an object at all: refused with a reason, nothing loaded.
  EXPECT_EQ(load_object("this is not an ELF file", "k_bad", &why), nullptr);
  EXPECT_FALSE(why.empty());
}

TEST(LlvmCompiler, AKernelNoOneHoldsIsUnloaded) {
  if (!llvm_compiler_built()) GTEST_SKIP() << llvm_compiler_description();
  if (settings().cpu_compiler != "llvm")
    GTEST_SKIP() << "runs with LAZYGRAD_CPU_COMPILER=llvm (the llvm label)";
  const std::string source =
      "#include <stdint.h>\nint k_jit_unload_entry(void* const* b, const int64_t* v, int64_t s, int64_t e, "
      "const volatile int* stop) { (void)b; (void)v; (void)s; (void)e; (void)stop; return 9; }\n";
  const int64_t before = jit_objects_loaded();
  std::shared_ptr<Program> p = cpu_device().compile("k_jit_unload", source);
  EXPECT_EQ(launch_slices(*p, {}, {}, 1).error, 9);
  EXPECT_EQ(jit_objects_loaded(), before + 1);
  EXPECT_EQ(cpu_device().compile("k_jit_unload", source), p);  // asked again while held: one program
  p.reset();
  EXPECT_EQ(jit_objects_loaded(), before);
  p = cpu_device().compile("k_jit_unload", source);  // from the disk cache
  EXPECT_EQ(launch_slices(*p, {}, {}, 1).error, 9);
}

TEST(LlvmCompiler, InfoSaysWhichCompilerRuns) {
  const std::string exe = fs::read_symlink("/proc/self/exe").parent_path() / "lazygrad";
  if (!fs::exists(exe)) GTEST_SKIP() << "no lazygrad CLI beside this test (" << exe << ")";
  const std::string out =
      (fs::temp_directory_path() / ("lazygrad-llvm-info-" + std::to_string(getpid()))).string();
  ASSERT_EQ(std::system(("LAZYGRAD_CPU_COMPILER=llvm " + exe + " info > " + out + " 2>&1").c_str()), 0);
  std::ifstream f(out);
  std::string info((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  fs::remove(out);
  EXPECT_NE(info.find("cpu_compiler     llvm"), std::string::npos) << info;
  if (llvm_compiler_built())
    EXPECT_NE(info.find("in process"), std::string::npos) << info;
  else
    EXPECT_NE(info.find("not built"), std::string::npos) << info;
}
