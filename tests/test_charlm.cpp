// `lazygrad train charlm`, run as a user runs it (the built `lazygrad` binary as a subprocess), on a
// text generated here with strong structure: words from a small list, in random order. Knowing the
// word so far predicts its next letters, which a model of single characters cannot, so a trained
// model must score far below the text's unigram entropy. All CLI runs share one model config, so
// their kernels compile once. The corpus reader (apps/char_corpus.h) is tested directly.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "../apps/char_corpus.h"
#include "../models/gpt2.h"
#include "test_files.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

using test::RunResult;

// About 12 kB: words from a list of eight, space separated, a new line after every tenth.
std::string structured_text() {
  const std::array<std::string, 8> words = {"lazy",  "tensor", "kernel", "graph",
                                            "fused", "buffer", "shape",  "jit"};
  std::mt19937 rng(7);
  std::string text;
  for (int i = 1; i <= 2000; i++) text += words[rng() % words.size()] + (i % 10 == 0 ? "\n" : " ");
  return text;
}

// The entropy of the text's byte frequencies, in nats: the loss of the best model that ignores context.
double unigram_entropy(const std::string& text) {
  std::array<double, 256> count{};
  for (char c : text) count[static_cast<uint8_t>(c)] += 1;
  double h = 0;
  for (double n : count)
    if (n > 0) h -= n / static_cast<double>(text.size()) * std::log(n / static_cast<double>(text.size()));
  return h;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The number after `prefix` in the output, or NaN.
double number_after(const std::string& text, const std::string& prefix) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(prefix + R"(([0-9]+\.[0-9]+))"))) return std::nan("");
  return std::stod(m[1]);
}

// What follows the "sample (...):" line, without the final new line.
std::string sample_of(const std::string& out) {
  const size_t header = out.find("sample (");
  if (header == std::string::npos) return "";
  const size_t start = out.find('\n', header) + 1;
  return out.substr(start, out.size() - start - 1);
}

class CharLm : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = test::fresh_dir(std::string("lazygrad_charlm_") + info->name());
    cli_ = test::cli_binary();
    ASSERT_TRUE(fs::exists(cli_)) << cli_ << " is missing: build the lazygrad_cli target";
    text_path_ = dir_ / "words.txt";
    write_file(text_path_, structured_text());
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult run(const std::vector<std::string>& args) const { return test::run_program(cli_, args, dir_); }

  // `train charlm` on the words with the tests' small model, plus `extra`.
  RunResult train(const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"train",        "charlm", "--text",    text_path_.string(),
                                     "--layers",     "2",      "--heads",   "2",
                                     "--embd",       "32",     "--context", "32",
                                     "--batch-size", "16",     "--lr",      "0.01",
                                     "--warmup",     "10",     "--out",     (dir_ / "out").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }

  fs::path dir_, cli_, text_path_;
};

}  // namespace

// 80 steps of 512 characters (2.5 s): the held-out loss must fall far below the unigram entropy
// (2.85 nats here). Measured: 0.66, the words mostly learnt; what no model can predict is the choice
// of the next word, log(8) = 2.08 nats once per word of 6 characters with its space, 0.35 nats/char.
// The checkpoint holds the model and the vocabulary, and a seed gives the same sample on a second run.
TEST_F(CharLm, LearnsTheWordsWritesTheCheckpointAndSamplesRepeatably) {
  const std::vector<std::string> args = {"--steps",        "80", "--eval-every", "40",
                                         "--sample-chars", "60", "--seed",       "3"};
  RunResult r = train(args);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;

  const std::string text = structured_text();
  const double unigram = unigram_entropy(text);
  EXPECT_NEAR(number_after(r.out, "unigram held-out loss: "), unigram, 0.05) << r.out;
  const double heldout = number_after(r.out, "\nheld-out loss: ");
  EXPECT_LT(heldout, 0.5 * unigram) << r.out;
  EXPECT_GT(heldout, 0.2) << "below what the random choice of words allows:\n" << r.out;
  EXPECT_NE(r.out.find("step 40: train loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 80: train loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" chars/s"), std::string::npos) << r.out;

  // The checkpoint: GPT-2's tensors for this config, and the vocabulary (the distinct bytes) in
  // its metadata.
  const std::string checkpoint = (dir_ / "out" / "charlm.safetensors").string();
  std::map<std::string, std::string> meta = load_safetensors_metadata(checkpoint);
  std::string vocab;
  std::array<bool, 256> present{};
  for (char c : text) present[static_cast<uint8_t>(c)] = true;
  for (int b = 0; b < 256; b++)
    if (present[b]) vocab += (vocab.empty() ? "" : ",") + std::to_string(b);
  EXPECT_EQ(meta.at("vocab"), vocab);
  EXPECT_EQ(meta.at("n_layer"), "2");
  EXPECT_EQ(meta.at("n_embd"), "32");
  EXPECT_EQ(meta.at("n_positions"), "32");
  EXPECT_EQ(meta.at("steps"), "80");
  const int64_t V = std::count(vocab.begin(), vocab.end(), ',') + 1;
  models::GPT2 model(models::GPT2Config{2, 2, 32, V, 32});
  EXPECT_NO_THROW(model.load_hf_state_dict(load_safetensors(checkpoint)));
  // The loss curves: one point per evaluation, steps 40 and 80, both losses.
  const std::string svg = test::read_file(dir_ / "out" / "charlm.svg");
  EXPECT_NE(svg.find("held-out"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<polyline"), std::string::npos) << svg;

  // The sample: the prompt (a new line) and 60 characters, all from the text's alphabet.
  const std::string sample = sample_of(r.out);
  ASSERT_EQ(sample.size(), 61u) << r.out;
  EXPECT_EQ(sample[0], '\n');
  for (char c : sample) EXPECT_TRUE(present[static_cast<uint8_t>(c)]) << static_cast<int>(c);

  RunResult again = train(args);
  ASSERT_EQ(again.exit_status, 0) << again.out << again.err;
  EXPECT_EQ(sample_of(again.out), sample);
  EXPECT_EQ(number_after(again.out, "\nheld-out loss: "), heldout);
}

TEST_F(CharLm, APromptIsContinuedAndGreedySamplingIsItsOwn) {
  RunResult r = train({"--steps", "2", "--sample-chars", "5", "--prompt", "kernel ", "--temperature", "0"});
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("temperature 0,"), std::string::npos) << r.out;
  const std::string sample = sample_of(r.out);
  EXPECT_EQ(sample.size(), 12u) << r.out;
  EXPECT_EQ(sample.rfind("kernel ", 0), 0u) << r.out;
}

TEST_F(CharLm, BadInputIsAClearErrorWithAStatusOfItsOwn) {
  // Bad options: exit 2 with the usage.
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> usage_cases = {
      {{"--steps", "0"}, "--steps takes a whole number >= 1, got '0'"},
      {{"--minutes", "-1"}, "--minutes takes a positive number, got '-1'"},
      {{"--heads", "3"}, "--embd 32 is not a multiple of --heads 3"},
      {{"--temperature", "hot"}, "--temperature takes a number >= 0, got 'hot'"},
      {{"--context", "1"}, "--context takes a whole number >= 2, got '1'"},
      {{"--prompt", "kernel!"}, "--prompt: byte 6 (33) never occurs in the text"},
      {{"--prompt", ""}, "--prompt takes at least one character, got ''"},
      {{"--steps", "1", "extra"}, "unexpected argument 'extra'"},
  };
  for (const Case& c : usage_cases) {
    RunResult r = train(c.args);
    EXPECT_EQ(r.exit_status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find("lazygrad: " + c.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("usage: lazygrad train"), std::string::npos) << r.err;
  }
  RunResult r = run({"train", "charlm", "--steps", "1"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("train charlm needs --text FILE or --text FOLDER"), std::string::npos) << r.err;
  // The dataset name first: fashion-mnist's parser does not know charlm's options.
  const std::string first = "charlm comes first, before its options: lazygrad train charlm --text FILE ...";
  r = run({"train", "--steps", "1", "charlm"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_EQ(r.err.rfind("lazygrad: unknown option '--steps' (" + first + ")\n", 0), 0u) << r.err;
  r = run({"train", "--seed", "1", "charlm"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_EQ(r.err.rfind("lazygrad: " + first + "\n", 0), 0u) << r.err;

  // Bad text: exit 1, naming the file.
  auto expect_error = [&](const fs::path& text, const std::string& message) {
    RunResult e = run({"train", "charlm", "--text", text.string(), "--steps", "1", "--context", "32"});
    EXPECT_EQ(e.exit_status, 1) << e.err;
    EXPECT_NE(e.err.find("error: train charlm: " + message), std::string::npos) << e.err;
    EXPECT_EQ(e.out, "") << "nothing is printed before the text is checked";
  };
  expect_error(dir_ / "nowhere.txt", "no file or folder '" + (dir_ / "nowhere.txt").string() + "'");
  write_file(dir_ / "empty.txt", "");
  expect_error(dir_ / "empty.txt", "the file '" + (dir_ / "empty.txt").string() + "' is empty");
  write_file(dir_ / "short.txt", std::string(200, 'a'));
  expect_error(dir_ / "short.txt", "'" + (dir_ / "short.txt").string() +
                                       "' has 200 bytes, too few for --context 32: the held-out tail (10% of "
                                       "each file) and the rest must each hold 33 bytes");
  fs::create_directories(dir_ / "binary");
  write_file(dir_ / "binary" / "index.dat", std::string("\x01\x00\x02", 3));
  expect_error(dir_ / "binary", "the folder '" + (dir_ / "binary").string() + "' has no text files");
}

// A folder as fortune's: text files, their binary indexes (*.dat) and second names (*.u8 links).
TEST(CharCorpus, AFolderJoinsItsTextFilesAndHoldsOutTheTailOfEach) {
  const fs::path dir = fs::temp_directory_path() / ("lazygrad_charlm_corpus_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  write_file(dir / "b", "0123456789");
  write_file(dir / "a", "abcdefghijklmnopqrst");
  write_file(dir / "a.dat", std::string("\0\0\1", 3));
  fs::create_symlink("a", dir / "a.u8");
  write_file(dir / "empty", "");
  write_file(dir / "sub" / "ignored", "not read: folders are not entered");

  cli::CharCorpus corpus = cli::load_char_corpus(dir.string(), 0.1);
  EXPECT_EQ(corpus.files, (std::vector<std::string>{(dir / "a").string(), (dir / "b").string()}));
  EXPECT_EQ(corpus.skipped,
            (std::vector<std::string>{"a.dat (binary: it holds a NUL byte)",
                                      "a.u8 (the same file as one read already)", "empty (empty)"}));
  std::string vocab(corpus.vocab.begin(), corpus.vocab.end());
  EXPECT_EQ(vocab, "0123456789abcdefghijklmnopqrst");
  auto decode = [&](const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += static_cast<char>(corpus.vocab.at(static_cast<size_t>(id)));
    return s;
  };
  EXPECT_EQ(decode(corpus.train), "abcdefghijklmnopqr012345678");
  EXPECT_EQ(decode(corpus.heldout), "st9");

  // One file: all of it, whatever its name.
  cli::CharCorpus one = cli::load_char_corpus((dir / "a.dat").string(), 0.5);
  EXPECT_EQ(one.vocab, (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(one.train, (std::vector<int32_t>{0, 0}));  // 3 bytes: floor(1.5) held out
  EXPECT_EQ(one.heldout, (std::vector<int32_t>{1}));
  fs::remove_all(dir);
}
