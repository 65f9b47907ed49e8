// libFuzzer target for GPT2Tokenizer::from_files: any encoder.json and vocab.bpe bytes must give a
// tokenizer or throw lazygrad::Error, never crash, hang or leak; a tokenizer that loads must encode
// and decode a fixed text back to itself (docs/tokenizer.md: decode(encode(s)) == s for every s).
//
// The input is split at its first 0 byte: encoder.json before it, vocab.bpe after (no 0 byte: all of
// it is encoder.json and vocab.bpe is empty). scripts/make_fuzz_seeds.py writes a valid pair
// (the 256 byte tokens, a few merges) to seed the corpus; tests/fuzz/README.md has the commands.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lazygrad/error.h"
#include "lazygrad/tokenizer.h"

namespace {

int memory_file(const char* name) {
  const int f = ::memfd_create(name, MFD_CLOEXEC);
  if (f < 0) std::abort();
  return f;
}

void write_all(int fd, const uint8_t* data, size_t size) {
  if (::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
}

std::string path_of(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Words, punctuation, digits, spaces, a contraction, a multi-byte character and invalid UTF-8.
constexpr std::string_view kText = "Hello, world! It's  2024\n\th\xc3\xa9llo \xff\xfe end";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int encoder = memory_file("encoder.json"), vocab = memory_file("vocab.bpe");
  const auto* zero = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t encoder_size = zero ? static_cast<size_t>(zero - data) : size;
  write_all(encoder, data, encoder_size);
  write_all(vocab, zero ? zero + 1 : data + size, zero ? size - encoder_size - 1 : 0);
  try {
    const lazygrad::GPT2Tokenizer tokenizer =
        lazygrad::GPT2Tokenizer::from_files(path_of(encoder), path_of(vocab));
    const std::vector<int32_t> ids = tokenizer.encode(kText);
    if (tokenizer.decode(ids) != kText) std::abort();
    for (const int32_t id : ids)
      if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size() ||
          tokenizer.token_to_id(tokenizer.id_to_token(id)) != id)
        std::abort();
    const int32_t eos = tokenizer.eos_token_id();
    if (eos >= 0 && static_cast<size_t>(eos) >= tokenizer.vocab_size()) std::abort();
    // An id outside the vocabulary is an Error.
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
