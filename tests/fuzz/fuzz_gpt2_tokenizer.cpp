// libFuzzer target for GPT2Tokenizer::from_files: any encoder.json and vocab.bpe bytes must give a
// tokenizer or throw lazygrad::Error, never crash, hang or leak; a tokenizer that loads must encode
// and decode a fixed text back to itself (docs/tokenizer.md: decode(encode(s)) == s for every s).
//
// The input is split at its first 0 byte: encoder.json before it, vocab.bpe after (no 0 byte: all of
// it is encoder.json and vocab.bpe is empty). scripts/make_fuzz_seeds.py writes a valid pair
// (the 256 byte tokens, a few merges) to seed the corpus; tests/fuzz/README.md has the commands.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_files.h"
#include "lazygrad/error.h"
#include "lazygrad/tokenizer.h"

namespace {

// Words, punctuation, digits, spaces, a contraction, a multi-byte character and invalid UTF-8.
constexpr std::string_view kText = "Hello, world! It's  2024\n\th\xc3\xa9llo \xff\xfe end";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lazygrad::fuzz::MemoryFile encoder("encoder.json"), vocab("vocab.bpe");
  const lazygrad::fuzz::Split input = lazygrad::fuzz::split_at_zero(data, size);
  const std::string& encoder_path = encoder.write(input.first);
  const std::string& vocab_path = vocab.write(input.rest);
  try {
    const lazygrad::GPT2Tokenizer tokenizer = lazygrad::GPT2Tokenizer::from_files(encoder_path, vocab_path);
    const std::vector<int32_t> ids = tokenizer.encode(kText);
    if (tokenizer.decode(ids) != kText) std::abort();
    for (const int32_t id : ids)
      if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size() ||
          tokenizer.token_to_id(tokenizer.id_to_token(id)) != id)
        std::abort();
    const int32_t eos = tokenizer.eos_token_id();
    if (eos >= 0 && static_cast<size_t>(eos) >= tokenizer.vocab_size()) std::abort();
    lazygrad::fuzz::check_outside_id_throws(tokenizer);
  } catch (const lazygrad::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
