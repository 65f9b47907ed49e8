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

using lazygrad::fuzz::check_ids;

constexpr std::string_view kText =
    "Hello, world! It's  2024\n\th\xc3\xa9llo <s></s><|endoftext|> \xff\xfe end";

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
    lazygrad::fuzz::check_special_encoding(tokenizer, kText);
    lazygrad::fuzz::check_outside_id_throws(tokenizer);
  } catch (const lazygrad::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
