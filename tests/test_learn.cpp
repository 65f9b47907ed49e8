// `lazygrad learn`, run as a learner runs it (the built binary as a subprocess): the list, start
// (the starter written, an existing file never overwritten), check on each starter (exit status 1
// and the message it is meant to get), on each reference solution in learn/solutions (exit status
// 0), on a file that does not compile (exit status 1, the compiler's errors shown), and on one or
// two files per exercise wrong in a way the checker names. Every check compiles a file with the
// system's C++ compiler (about half a second) and runs a few small kernels.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "test_files.h"

namespace fs = std::filesystem;
using lazygrad::test::read_file;
using lazygrad::test::RunResult;
using lazygrad::test::shell_quote;
using lazygrad::test::write_text;

namespace {

const fs::path kSourceDir = LAZYGRAD_SOURCE_DIR;  // compiled in by CMake: learn/ lives there

struct Exercise {
  const char* number;
  const char* name;
  const char* file;
  const char* starter_message;  // what check says of the unchanged starter
};

const Exercise kExercises[] = {
    {"1", "sigmoid-backward", "01-sigmoid-backward.cpp",
     "WRONG: sigmoid_backward returns grad_output unchanged"},
    {"2", "attention", "02-attention.cpp", "WRONG: causal_attention returns v unchanged"},
    {"3", "sgd-momentum", "03-sgd-momentum.cpp", "WRONG: sgd_momentum_step did not change the parameters"},
    {"4", "fusion-count", "04-fusion-count.cpp", "WRONG: no predictions yet"},
};

// How gtest names a case's parameter (instead of its bytes).
void PrintTo(const Exercise& e, std::ostream* os) { *os << e.name; }

class Learn : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("lazygrad_learn_") + info->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterized tests are named Name/0
    dir_ = lazygrad::test::fresh_dir(name);
    cli_ = lazygrad::test::cli_binary();
    ASSERT_TRUE(fs::exists(cli_)) << cli_ << " is missing: build the lazygrad_cli target";
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::vector<std::string>& args) const {
    return lazygrad::test::run_program(cli_, args, dir_, 300);
  }
  // `command` (with $LG standing for the binary) by the shell, in dir_: a learner's working folder.
  RunResult shell(const std::string& command) const {
    return lazygrad::test::run_program("/bin/sh",
                                       {"-c", "cd " + shell_quote(dir_.string()) +
                                                  " && LG=" + shell_quote(cli_.string()) + " && " + command},
                                       dir_, 300);
  }
  // Checks exercise `number` on a file holding `source`.
  RunResult check(const std::string& number, const std::string& source) const {
    const fs::path file = dir_ / ("answer" + number + ".cpp");
    write_text(file, source);
    return run({"learn", "check", number, "--file", file.string()});
  }
  fs::path dir_, cli_;
};

class LearnExercise : public Learn, public ::testing::WithParamInterface<Exercise> {};

std::string exercise_name(const ::testing::TestParamInfo<Exercise>& info) {
  std::string name = info.param.name;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_F(Learn, ListNamesTheFourExercisesAndTheirChapters) {
  RunResult r = run({"learn", "list"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  for (const Exercise& e : kExercises)
    EXPECT_TRUE(contains(r.out, std::string(e.number) + "  " + e.name)) << e.name << " is not listed:\n"
                                                                        << r.out;
  for (const char* doc : {"docs/learn/04-autograd.md", "docs/learn/09-attention.md",
                          "docs/learn/08-optimizers.md", "docs/learn/05-scheduler.md"})
    EXPECT_TRUE(contains(r.out, doc)) << doc;
  EXPECT_TRUE(contains(run({"--help"}).out, "learn")) << "listed in the top-level help";
  RunResult help = run({"learn", "--help"});
  EXPECT_EQ(help.exit_status, 0);
  for (const char* part : {"usage: lazygrad learn list | start N [--dir DIR] | check N [--file PATH]",
                           "--dir DIR", "--file PATH", "Exit status: 0 right", "4 fusion-count"})
    EXPECT_TRUE(contains(help.out, part)) << part << "\n" << help.out;
}

TEST_F(Learn, BadInputExits2WithTheUsage) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"learn"},
                                             {"learn", "walk"},
                                             {"learn", "list", "1"},
                                             {"learn", "start"},
                                             {"learn", "start", "9"},
                                             {"learn", "check", "backprop"},
                                             {"learn", "start", "1", "2"},
                                             {"learn", "start", "1", "--file", "x.cpp"},
                                             {"learn", "check", "1", "--dir", "."},
                                             {"learn", "check", "1", "--file="}}) {
    RunResult r = run(args);
    EXPECT_EQ(r.exit_status, 2) << args.back() << "\n" << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "usage: lazygrad learn")) << r.err;
  }
  EXPECT_TRUE(contains(run({"learn", "start", "9"}).err,
                       "no exercise '9': 1 sigmoid-backward, 2 attention, 3 sgd-momentum, 4 fusion-count"));
}

TEST_F(Learn, StartWritesEachStarterAndNeverOverwrites) {
  const fs::path dir = dir_ / "exercises";  // made by start
  for (const Exercise& e : kExercises) {
    RunResult r = run({"learn", "start", e.number, "--dir", dir.string()});
    ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
    const fs::path file = dir / e.file;
    EXPECT_EQ(read_file(file), read_file(kSourceDir / "learn" / "starters" / e.file)) << e.file;
    EXPECT_TRUE(contains(r.out, "lazygrad learn check " + std::string(e.number) + " --file " + file.string()))
        << r.out;
    write_text(file, "// my work\n");
    RunResult again = run({"learn", "start", e.name, "--dir", dir.string()});  // by name this time
    EXPECT_EQ(again.exit_status, 1) << again.out;
    EXPECT_TRUE(contains(again.err, file.string() + " already exists")) << again.err;
    EXPECT_EQ(read_file(file), "// my work\n") << "overwritten";
  }
}

// The learner's path: start in a folder, then check with no options there.
TEST_P(LearnExercise, TheStarterFailsWithItsMessage) {
  const Exercise& e = GetParam();
  RunResult r = shell(std::string("\"$LG\" learn start ") + e.number + " && \"$LG\" learn check " + e.number);
  EXPECT_EQ(r.exit_status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "checking ./" + std::string(e.file))) << r.out;
  EXPECT_TRUE(contains(r.out, e.starter_message)) << r.out << r.err;
  for (const char* part : {"What went wrong:", "Why:", "How to fix:"})
    EXPECT_TRUE(contains(r.out, part)) << part;
}

TEST_P(LearnExercise, TheReferenceSolutionPasses) {
  const Exercise& e = GetParam();
  const fs::path solution = kSourceDir / "learn" / "solutions" / e.file;
  RunResult r = run({"learn", "check", e.number, "--file", solution.string()});
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "RIGHT: ")) << r.out;
  EXPECT_FALSE(contains(r.out, "the compiler warns")) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Exercises, LearnExercise, ::testing::ValuesIn(kExercises), exercise_name);

TEST_F(Learn, AFileThatDoesNotCompileShowsTheCompilersErrors) {
  RunResult r = check("1",
                      "#include <lazygrad/learn.h>\n"
                      "using lazygrad::Tensor;\n"
                      "Tensor sigmoid_backward(const Tensor& x, const Tensor& g) { return x.sigmoid() * g }\n"
                      "const bool submitted = lazygrad::learn::submit(&sigmoid_backward);\n");
  EXPECT_EQ(r.exit_status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "answer1.cpp:3:")) << "the compiler's error, with its line:\n" << r.out;
  EXPECT_TRUE(contains(r.out, "error")) << r.out;
  EXPECT_TRUE(contains(r.out, "WRONG: " + (dir_ / "answer1.cpp").string() + " does not compile")) << r.out;
}

TEST_F(Learn, MissingPiecesAreExplained) {
  // No registration line.
  RunResult r = check("1",
                      "#include <lazygrad/learn.h>\n"
                      "lazygrad::Tensor sigmoid_backward(const lazygrad::Tensor& x, const lazygrad::Tensor&) "
                      "{ return x; }\n");
  EXPECT_EQ(r.exit_status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "did not hand sigmoid_backward to the checker")) << r.out;
  // Another exercise's file.
  r = run({"learn", "check", "2", "--file",
           (kSourceDir / "learn" / "solutions" / "04-fusion-count.cpp").string()});
  EXPECT_EQ(r.exit_status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "answers exercise 4 (fusion-count), not exercise 2 (attention)")) << r.out;
  // No file, no compiler.
  r = run({"learn", "check", "1", "--file", (dir_ / "nothing.cpp").string()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.err, "no file " + (dir_ / "nothing.cpp").string())) << r.err;
  write_text(dir_ / "01-sigmoid-backward.cpp", "// empty\n");
  r = shell("CXX=/nonexistent/c++ \"$LG\" learn check 1");
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.err, "no C++ compiler: `/nonexistent/c++` does not run")) << r.err;
}

TEST_F(Learn, ACrashIsReportedNotInherited) {
  // Under ASan a crash is its report and exit status 1, not a signal the checker could name.
  if (lazygrad::test::kAddressSanitizer)
    GTEST_SKIP() << "ASan reports the crash itself (the Release suite checks this)";
  RunResult r =
      check("3",
            "#include <lazygrad/learn.h>\n"
            "#include <vector>\n"
            "using lazygrad::Tensor;\n"
            "void sgd_momentum_step(std::vector<Tensor>& params, std::vector<Tensor>& velocity, double lr, "
            "double) {\n"
            "  lazygrad::NoGrad no_grad;\n"
            "  volatile int* nowhere = nullptr;\n"
            "  *nowhere = 1;\n"
            "  params[0] -= lr * velocity[0];\n"
            "}\n"
            "const bool submitted = lazygrad::learn::submit(&sgd_momentum_step);\n");
  EXPECT_EQ(r.exit_status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "WRONG: sgd_momentum_step crashed")) << r.out;
  EXPECT_TRUE(contains(r.out, "Segmentation fault")) << r.out;
}

// One file per typical mistake, and the name the checker gives it.
TEST_F(Learn, SigmoidBackwardMistakesAreNamed) {
  const std::string head = "#include <lazygrad/learn.h>\nusing lazygrad::Tensor;\n";
  const std::string tail = "const bool submitted = lazygrad::learn::submit(&sigmoid_backward);\n";
  RunResult r = check("1", head +
                               "Tensor sigmoid_backward(const Tensor& x, const Tensor&) {\n"
                               "  Tensor s = x.sigmoid();\n"
                               "  return s * (1 - s);\n"
                               "}\n" +
                               tail);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(
      contains(r.out, "WRONG: sigmoid_backward returns sigmoid's slope without multiplying by grad_output"))
      << r.out;
  // exp(-x) / (1 + exp(-x))^2 is right where it does not overflow.
  r = check("1", head +
                     "Tensor sigmoid_backward(const Tensor& x, const Tensor& g) {\n"
                     "  Tensor e = (-x).exp();\n"
                     "  return e / ((1 + e) * (1 + e)) * g;\n"
                     "}\n" +
                     tail);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.out, "where |x| is large")) << r.out;
  EXPECT_TRUE(contains(r.out, "for x = -100 ")) << r.out;
}

TEST_F(Learn, AttentionMistakesAreNamed) {
  const std::string head =
      "#include <lazygrad/learn.h>\n#include <cmath>\nusing lazygrad::Tensor;\n"
      "Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v) {\n"
      "  const int64_t T = q.size(-2);\n"
      "  Tensor future = Tensor::ones({T, T}, lazygrad::kBool).triu(1);\n"
      "  Tensor scores = q.matmul(k.transpose(-2, -1));\n";
  const std::string tail = "}\nconst bool submitted = lazygrad::learn::submit(&causal_attention);\n";
  RunResult r = check("2", head +
                               "  (void)future;\n"
                               "  return (scores / std::sqrt(double(q.size(-1)))).softmax(-1).matmul(v);\n" +
                               tail);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.out, "WRONG: forgot the mask (a position sees the future)")) << r.out;
  r = check("2", head + "  return scores.masked_fill(future, -INFINITY).softmax(-1).matmul(v);\n" + tail);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.out, "WRONG: forgot the scale")) << r.out;
}

TEST_F(Learn, SgdMomentumMistakesAreNamed) {
  const std::string head =
      "#include <lazygrad/learn.h>\n#include <vector>\nusing lazygrad::Tensor;\n"
      "void sgd_momentum_step(std::vector<Tensor>& params, std::vector<Tensor>& velocity, double lr, "
      "double momentum) {\n"
      "  lazygrad::NoGrad no_grad;\n"
      "  const bool first = velocity.empty();\n"
      "  for (size_t i = 0; i < params.size(); i++) {\n"
      "    Tensor g = params[i].grad();\n"
      "    if (first) velocity.push_back(g);\n";
  const std::string tail = "  }\n}\nconst bool submitted = lazygrad::learn::submit(&sgd_momentum_step);\n";
  // A velocity made afresh from each gradient.
  RunResult r = check("3", head +
                               "    Tensor v = Tensor::zeros_like(g);\n"
                               "    v = momentum * v + g;\n"
                               "    params[i] -= lr * v;\n" +
                               tail);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.out, "WRONG: the velocity is not kept from one step to the next")) << r.out;
  r = check("3", head +
                     "    else velocity[i] = momentum * velocity[i] + g;\n"
                     "    params[i] -= lr * (g + momentum * velocity[i]);\n" +
                     tail);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.out, "WRONG: the step is Nesterov's")) << r.out;
  r = check("3", head +
                     "    else velocity[i] = momentum * velocity[i] + g;\n"
                     "    params[i] += lr * velocity[i];\n" +
                     tail);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(contains(r.out, "WRONG: the parameters move up the gradient (a sign error)")) << r.out;
}

TEST_F(Learn, FusionCountExplainsEachWrongPrediction) {
  std::string source = read_file(kSourceDir / "learn" / "solutions" / "04-fusion-count.cpp");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"p.transpose = 0;", "p.transpose = 1;"}, {"p.centered = 2;", "p.centered = 1;"}}) {
    ASSERT_NE(source.find(from), std::string::npos) << from;
    source.replace(source.find(from), from.size(), to);
  }
  RunResult r = check("4", source);
  EXPECT_EQ(r.exit_status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "WRONG: 2 of 8 predictions differ")) << r.out;
  EXPECT_TRUE(contains(r.out, "a.t(): you predicted 1, lazygrad ran 0 kernels")) << r.out;
  EXPECT_TRUE(contains(r.out, "Realizing a view of a buffer copies nothing")) << r.out;
  EXPECT_TRUE(contains(r.out, "a - a.mean(): you predicted 1, lazygrad ran 2 kernels")) << r.out;
  EXPECT_TRUE(contains(r.out, "at least 64 rows")) << r.out;
}
