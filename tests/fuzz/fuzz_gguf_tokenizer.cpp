// libFuzzer target for Tokenizer::from_gguf_vocab on the tokenizer.ggml.* metadata of a GGUF file
// (load_gguf_metadata, then models::gguf_vocab): any bytes must give a tokenizer or throw
// lazygrad::Error, never crash, hang or leak. A tokenizer that loads must encode a fixed text to ids
// in its vocabulary and decode them; a byte-level one ("gpt2") must give the text back.
//
// scripts/make_fuzz_seeds.py writes a GGUF file of each kind ("llama", "gpt2") to seed the corpus;
// tests/fuzz/README.md has the commands.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "../../models/llama_gguf.h"
#include "fuzz_files.h"
#include "lazygrad/error.h"
#include "lazygrad/gguf.h"
#include "lazygrad/tokenizer.h"

namespace {

constexpr std::string_view kText =
    "Hello, world! It's  2024\n\th\xc3\xa9llo <s></s><|endoftext|> \xff\xfe end";

void check_ids(const lazygrad::Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  for (const int32_t id : ids)
    if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lazygrad::fuzz::MemoryFile file("fuzz_gguf_tokenizer");
  try {
    const lazygrad::GGUFFile gguf = lazygrad::load_gguf_metadata(file.write({data, size}));
    const lazygrad::GGUFVocab vocab = lazygrad::models::gguf_vocab(gguf);
    const lazygrad::Tokenizer tokenizer = lazygrad::Tokenizer::from_gguf_vocab(vocab);
    if (tokenizer.vocab_size() != vocab.tokens.size()) std::abort();
    const std::vector<int32_t> ids = tokenizer.encode(kText);
    check_ids(tokenizer, ids);
    const std::string decoded = tokenizer.decode(ids);
    if (vocab.model == "gpt2" && decoded != kText) std::abort();
    const std::vector<int32_t> special =
        tokenizer.encode(kText, {.add_special = true, .parse_special = true});
    check_ids(tokenizer, special);
    tokenizer.decode(special, /*skip_special=*/true);
    for (const int32_t id : special) tokenizer.token_bytes(id);
    const int32_t outside = static_cast<int32_t>(tokenizer.vocab_size());
    try {
      tokenizer.decode(std::span(&outside, 1));
      std::abort();
    } catch (const lazygrad::Error&) {
    }
  } catch (const lazygrad::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
