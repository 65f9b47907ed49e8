// `lazygrad milestone`, run as a user runs it (the built binary as a subprocess): the list, each
// milestone's quick run reaching its target (exit status 0, a PASSED line), a missed target (exit
// status 1, MISSED), and bad input (exit status 2 with the usage). The Fashion-MNIST milestones
// need Debian's dataset-fashion-mnist and skip without it.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "test_files.h"

namespace fs = std::filesystem;
using lazygrad::test::read_file;
using lazygrad::test::RunResult;

namespace {

class Milestones : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = lazygrad::test::fresh_dir(std::string("lazygrad_milestones_") + info->name());
    cli_ = lazygrad::test::cli_binary();
    ASSERT_TRUE(fs::exists(cli_)) << cli_ << " is missing: build the lazygrad_cli target";
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::vector<std::string>& args) const {
    return lazygrad::test::run_program(cli_, args, dir_);
  }
  // The last line of stdout.
  static std::string last_line(const std::string& out) {
    std::string s = out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s.substr(s.rfind('\n') + 1);
  }
  fs::path dir_, cli_;
};

bool have_fashion_mnist() {
  return fs::exists(fs::path(lazygrad::data::kFashionMnistRoot) / "t10k-labels-idx1-ubyte.gz");
}

// An IDX file of uint8 values: magic 0x0000080N (N dims), big-endian sizes, then the bytes.
void write_idx(const fs::path& path, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  auto be32 = [&](uint32_t v) {
    const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    f.write(b, 4);
  };
  be32(0x800u | static_cast<uint32_t>(dims.size()));
  for (uint32_t d : dims) be32(d);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_F(Milestones, ListNamesEachWithItsYearAndTargets) {
  RunResult r = run({"milestone", "list"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  for (const char* name : {"perceptron", "xor", "mlp", "cnn", "transformer"})
    EXPECT_NE(r.out.find(std::string(name) + " "), std::string::npos) << name << " is not listed:\n" << r.out;
  for (const char* year : {"1958", "1986", "1998", "2017"})
    EXPECT_NE(r.out.find(year), std::string::npos) << year;
  EXPECT_NE(r.out.find("target: "), std::string::npos);
  EXPECT_NE(r.out.find("--quick: "), std::string::npos);
  EXPECT_NE(run({"--help"}).out.find("milestone"), std::string::npos) << "listed in the top-level help";
}

TEST_F(Milestones, BadInputExits2WithTheUsage) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"milestone"},
                                             {"milestone", "run"},
                                             {"milestone", "run", "resnet"},
                                             {"milestone", "walk"},
                                             {"milestone", "run", "xor", "--fast"},
                                             {"milestone", "run", "xor", "--seed", "x"}}) {
    RunResult r = run(args);
    EXPECT_EQ(r.exit_status, 2) << args.back() << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("usage: lazygrad milestone"), std::string::npos) << r.err;
  }
  EXPECT_NE(run({"milestone", "run", "resnet"})
                .err.find("no milestone 'resnet': perceptron, xor, mlp, cnn, transformer"),
            std::string::npos);
}

TEST_F(Milestones, PerceptronSeparatesALineAndNeverXor) {
  RunResult r = run({"milestone", "run", "perceptron", "--quick"});
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Rosenblatt"), std::string::npos) << "its history first";
  EXPECT_NE(r.out.find("100 points on either side of a line (margin 0.05): separated exactly after"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("XOR, 4 points: never separated in 1000 epochs"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out).rfind("PASSED: separated in ", 0), 0u) << r.out;
  EXPECT_NE(last_line(r.out).find("XOR not separated"), std::string::npos) << r.out;
}

TEST_F(Milestones, XorIsLearnedByBackpropagation) {
  RunResult r = run({"milestone", "run", "xor", "--quick"});
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASSED: 4 of 4 right (100%), loss ", 0), 0u) << r.out;
}

TEST_F(Milestones, MlpAndCnnQuickRunsReachTheirTargets) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  for (const char* name : {"mlp", "cnn"}) {
    RunResult r = run({"milestone", "run", name, "--quick", "--out", dir_.string()});
    EXPECT_EQ(r.exit_status, 0) << name << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASSED: test accuracy ", 0), 0u) << r.out;
    EXPECT_TRUE(fs::exists(dir_ / (std::string(name) + ".safetensors"))) << name;
  }
}

TEST_F(Milestones, TransformerQuickRunReachesItsTargets) {
  if (!fs::exists("/usr/share/games/fortunes"))
    GTEST_SKIP() << "fortunes is not installed (apt-get install fortunes)";
  RunResult r = run({"milestone", "run", "transformer", "--quick", "--out", dir_.string()});
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASSED: held-out loss ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("sequence reversal (8 digits, 2-layer encoder): "), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "charlm.svg")) << "the loss curve";
  EXPECT_NE(read_file(dir_ / "charlm.svg").find("held-out"), std::string::npos);
}

TEST_F(Milestones, SystemsQuickRunProfilesAndSpeedsUpAStep) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  RunResult r = run({"milestone", "run", "systems", "--quick"});
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASSED: fused ", 0), 0u) << r.out;
  for (const char* part : {"roofline on CPU (measured)", "fc1                    Linear             401,920",
                           "shared kernels", "layer by layer", "Jit + BEAM=2", "int8 predictions agree"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
}

// CIFAR-10's binary format, generated: each class a colour of its own (plus noise), which the CIFAR
// network learns in the quick run's one epoch; the Fashion-MNIST part runs first.
TEST_F(Milestones, CnnWithCifarRunsOnTheBinaryFormat) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  const fs::path cifar = dir_ / "cifar-10-batches-bin";
  fs::create_directories(cifar);
  std::mt19937 rng(1);
  auto records = [&](int n) {
    std::string out;
    for (int r = 0; r < n; r++) {
      const int label = static_cast<int>(rng() % 10);
      out += static_cast<char>(label);
      for (int c = 0; c < 3; c++)
        for (int p = 0; p < 1024; p++)
          out += static_cast<char>(((label * 37 + c * 91) % 200) + static_cast<int>(rng() % 48));
    }
    return out;
  };
  for (int i = 1; i <= 5; i++)
    std::ofstream(cifar / ("data_batch_" + std::to_string(i) + ".bin"), std::ios::binary) << records(256);
  std::ofstream(cifar / "test_batch.bin", std::ios::binary) << records(200);
  RunResult r =
      run({"milestone", "run", "cnn", "--quick", "--cifar", cifar.string(), "--out", dir_.string()});
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("CIFAR-10: 1280 training and 200 test images from "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CIFAR-10 epoch 1/1: train loss "), std::string::npos) << r.out;
  EXPECT_NE(last_line(r.out).find("; CIFAR-10 test accuracy "), std::string::npos) << r.out;
}

// Data that is not there is not a missed target: exit status 3, NOT RUN, and a bad CIFAR folder is
// found before the Fashion-MNIST part trains.
TEST_F(Milestones, MissingDataExits3) {
  RunResult r = run({"milestone", "run", "transformer", "--text", (dir_ / "nowhere.txt").string()});
  EXPECT_EQ(r.exit_status, 3) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("NOT RUN: milestone transformer: no text at ", 0), 0u) << r.out;
  r = run({"milestone", "run", "cnn", "--cifar", dir_.string()});
  EXPECT_EQ(r.exit_status, 3) << r.out << r.err;
  EXPECT_EQ(r.out.find("training LeNet"), std::string::npos) << "checked before training:\n" << r.out;
  EXPECT_NE(last_line(r.out).find("load_cifar10: no data_batch_1.bin in"), std::string::npos) << r.out;
  r = run({"milestone", "run", "transformer", "--text="});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("--text takes a path, got ''"), std::string::npos) << r.err;
}

// Images of noise with random labels: nothing to learn, so the mlp's quick target (78%) is missed.
TEST_F(Milestones, AMissedTargetExits1) {
  std::mt19937 rng(0);
  auto bytes = [&](size_t n, int mod) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = static_cast<uint8_t>(rng() % mod);
    return v;
  };
  const fs::path data = dir_ / "noise";
  fs::create_directories(data);
  write_idx(data / "train-images-idx3-ubyte", {20000, 28, 28}, bytes(20000 * 784, 256));
  write_idx(data / "train-labels-idx1-ubyte", {20000}, bytes(20000, 10));
  write_idx(data / "t10k-images-idx3-ubyte", {1000, 28, 28}, bytes(1000 * 784, 256));
  write_idx(data / "t10k-labels-idx1-ubyte", {1000}, bytes(1000, 10));
  RunResult r = run({"milestone", "run", "mlp", "--quick", "--data", data.string(), "--out", dir_.string()});
  EXPECT_EQ(r.exit_status, 1) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("MISSED: test accuracy ", 0), 0u) << r.out;
  EXPECT_NE(last_line(r.out).find("target 78.0%"), std::string::npos) << r.out;
}
