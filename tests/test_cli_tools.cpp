// The CLI as a whole (issue 19: "info, train, generate, milestone, learn, bench, viz, each with
// complete --help"), and the two tool commands, bench and viz, run as a user runs them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_files.h"

namespace fs = std::filesystem;
using lazygrad::test::read_file;
using lazygrad::test::RunResult;

namespace {

class CliTools : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = lazygrad::test::fresh_dir(std::string("lazygrad_cli_tools_") + info->name());
    cli_ = lazygrad::test::cli_binary();
    ASSERT_TRUE(fs::exists(cli_)) << cli_ << " is missing: build the lazygrad_cli target";
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::vector<std::string>& args) const {
    return lazygrad::test::run_program(cli_, args, dir_);
  }
  fs::path dir_, cli_;
};

}  // namespace

TEST_F(CliTools, EveryCommandIsListedAndHasItsHelp) {
  const RunResult top = run({"--help"});
  EXPECT_EQ(top.exit_status, 0);
  for (const char* command : {"info", "train", "generate", "milestone", "learn", "bench", "viz"}) {
    EXPECT_NE(top.out.find(std::string("  ") + command + " "), std::string::npos) << command << "\n"
                                                                                  << top.out;
    const RunResult r = run({command, "--help"});
    EXPECT_EQ(r.exit_status, 0) << command;
    EXPECT_EQ(r.out.rfind(std::string("usage: lazygrad ") + command, 0), 0u) << r.out;
    // Every option the usage line names is explained below it.
    const std::string usage = r.out.substr(0, r.out.find("\n\n"));
    const std::string details = r.out.substr(usage.size());
    for (size_t at = usage.find("--"); at != std::string::npos; at = usage.find("--", at + 2)) {
      const std::string option = usage.substr(at, usage.find_first_of(" ]=|\n", at) - at);
      if (option == "--help" || option == "--version") continue;
      EXPECT_NE(details.find(option), std::string::npos) << command << ": " << option << " is not explained\n"
                                                         << r.out;
    }
  }
}

TEST_F(CliTools, VizWritesThePageOfAnExample) {
  const fs::path page = dir_ / "matmul.html";
  const RunResult r = run({"viz", "--example", "matmul", "--out", page.string()});
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("wrote " + page.string()), std::string::npos) << r.out;
  const std::string html = read_file(page);
  EXPECT_NE(html.find("REDUCE_AXIS"), std::string::npos) << "the product's sum is on the page";
  EXPECT_NE(html.find("\"source\":\"#include"), std::string::npos) << "and its kernel's source";
  EXPECT_NE(html.find("static int r_16_8_32"), std::string::npos) << "the product's kernel, by name";
  // The default example, a training step, puts every realize of the step on one page: the loss,
  // the gradients and SGD's update.
  const RunResult step = run({"viz", "--out", (dir_ / "step.html").string()});
  ASSERT_EQ(step.exit_status, 0) << step.out << step.err;
  EXPECT_NE(read_file(dir_ / "step.html").find("\"label\":\"ASSIGN\""), std::string::npos) << "the update";
}

TEST_F(CliTools, VizRefusesBadArguments) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"viz", "--example", "resnet"},
                                             {"viz", "--out="},
                                             {"viz", "extra"},
                                             {"bench", "--steps", "0"},
                                             {"bench", "--model", "vgg"}}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_status, 2) << args[1] << " " << (args.size() > 2 ? args[2] : "") << "\n" << r.err;
    EXPECT_NE(r.err.find("usage: lazygrad " + args[0]), std::string::npos) << r.err;
  }
}

TEST_F(CliTools, BenchProfilesATrainingStep) {
  const RunResult r = run({"bench", "--batch-size", "8", "--steps", "2"});
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  for (const char* part : {"machine: ", "roofline on CPU (measured)", "fc1                    Linear",
                           "optimizer", "loss", "ms/step", "fused", "Jit"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
}
