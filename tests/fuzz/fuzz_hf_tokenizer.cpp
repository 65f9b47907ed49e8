// libFuzzer target for Tokenizer::from_hf_json: any tokenizer.json (and tokenizer_config.json beside
// it) must give a tokenizer or throw lazygrad::Error, never crash, hang or leak. A tokenizer that
// loads must encode a fixed text to ids in its vocabulary and decode them; a byte-level one must give
// the text back (decode(encode(s)) == s for every s, docs/tokenizer.md). A SentencePiece-style one
// need not: its unknown token and the space it puts in front lose bytes.
//
// The input is split at its first 0 byte: tokenizer.json before it, tokenizer_config.json after (no
// 0 byte: no tokenizer_config.json). Both are written to a temporary folder, since the loader looks
// for the config beside the file. scripts/make_fuzz_seeds.py writes a valid input of each kind;
// tests/fuzz/README.md has the commands.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_files.h"
#include "lazygrad/error.h"
#include "lazygrad/json.h"
#include "lazygrad/tokenizer.h"

namespace {

using lazygrad::fuzz::check_ids;

// Words, punctuation, digits, spaces, a contraction, special tokens' spellings, a multi-byte
// character and invalid UTF-8.
constexpr std::string_view kText =
    "Hello, world! It's  2024\n\th\xc3\xa9llo <s></s><|begin_of_text|> \xff\xfe end";

// Whether the document's pre-tokenizer has a ByteLevel step, which makes the tokenizer byte-level
// (as from_hf_json decides it).
bool has_byte_level(const lazygrad::json::Value& v) {
  using lazygrad::json::Kind;
  if (v.kind != Kind::Object) return false;
  if (const lazygrad::json::Value* type = v.find("type"); type && type->kind == Kind::String) {
    if (type->text == "ByteLevel") return true;
    if (type->text != "Sequence") return false;
  }
  const lazygrad::json::Value* steps = v.find("pretokenizers");
  if (!steps || steps->kind != Kind::Array) return false;
  for (const lazygrad::json::Value& step : steps->items)
    if (has_byte_level(step)) return true;
  return false;
}

bool is_byte_level(std::span<const uint8_t> document) {
  const lazygrad::json::Value root = lazygrad::json::parse(
      std::string_view(reinterpret_cast<const char*>(document.data()), document.size()));
  const lazygrad::json::Value* pre = root.find("pre_tokenizer");
  return pre && has_byte_level(*pre);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lazygrad::fuzz::Split input = lazygrad::fuzz::split_at_zero(data, size);
  const std::string path = lazygrad::fuzz::write_file("tokenizer.json", input.first);
  const std::filesystem::path config = lazygrad::fuzz::temp_folder() / "tokenizer_config.json";
  if (input.has_rest) {
    lazygrad::fuzz::write_file("tokenizer_config.json", input.rest);
  } else {
    std::error_code ec;
    std::filesystem::remove(config, ec);
  }
  try {
    const lazygrad::Tokenizer tokenizer = lazygrad::Tokenizer::from_hf_json(path);
    const std::vector<int32_t> ids = tokenizer.encode(kText);
    check_ids(tokenizer, ids);
    const std::string decoded = tokenizer.decode(ids);
    if (is_byte_level(input.first) && decoded != kText) std::abort();
    lazygrad::fuzz::check_special_encoding(tokenizer, kText);
    for (const int32_t id : {tokenizer.bos_token_id(), tokenizer.eos_token_id()})
      if (id < -1 || id >= static_cast<int64_t>(tokenizer.vocab_size())) std::abort();
    lazygrad::fuzz::check_outside_id_throws(tokenizer);
  } catch (const lazygrad::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
