// CLIP's tokenizer (OpenAI's simple_tokenizer, as Stable Diffusion v1.x's text encoder reads text):
// byte-level BPE whose last symbol of a word carries "</w>", on lower-cased text, with
// <|startoftext|> and <|endoftext|> around the ids and the end token as padding to 77 positions.
// docs/stable_diffusion.md, "The tokenizer", has the details and where it differs from the original.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lazygrad {

class CLIPTokenizer {
 public:
  // Hugging Face's CLIPTokenizer files: vocab.json (token -> id) and merges.txt (a "#version" line,
  // then "left right" a line, by rank). A missing or malformed file, a merge of tokens vocab.json
  // lacks, or a vocabulary without the 512 byte tokens or the two special ones is a lazygrad::Error
  // naming the file (and the line or byte offset).
  static CLIPTokenizer from_files(const std::string& vocab_json_path, const std::string& merges_txt_path);
  // OpenAI's single file (bpe_simple_vocab_16e6.txt.gz, or the same uncompressed): a first line,
  // then the merges; the vocabulary is built from them as OpenAI's tokenizer builds it (the 256 byte
  // tokens, the same with "</w>", each merge's result, then <|startoftext|> and <|endoftext|>), from
  // at most the first 48894 merges (49408 tokens), as OpenAI's takes.
  static CLIPTokenizer from_bpe_file(const std::string& path);
  // A folder with vocab.json and merges.txt, or the single BPE file itself.
  static CLIPTokenizer from_path(const std::string& path);

  // The ids of a text, without the start and end tokens: whitespace runs become one space and the
  // ends are stripped, the text is lower-cased, split by CLIP's pre-tokenizer
  //   <|startoftext|>|<|endoftext|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
  // and each piece's UTF-8 bytes merged by BPE (the special tokens written in the text are theirs).
  std::vector<int32_t> encode(std::string_view text) const;
  // What the text encoder reads: <|startoftext|>, the first length - 2 ids of encode(text),
  // <|endoftext|>, then <|endoftext|> up to `length` ids.
  std::vector<int32_t> encode_padded(std::string_view text, size_t length = 77) const;
  // The text the ids stand for: the tokens' bytes with each "</w>" a space (special tokens as their
  // text). An id outside the vocabulary throws lazygrad::Error.
  std::string decode(std::span<const int32_t> ids) const;

  size_t vocab_size() const;
  int32_t start_token_id() const;                     // <|startoftext|>
  int32_t end_token_id() const;                       // <|endoftext|>
  int32_t token_to_id(std::string_view token) const;  // -1 if not in the vocabulary
  std::string id_to_token(int32_t id) const;          // as vocab.json spells it ("cat</w>")

 private:
  struct Impl;
  explicit CLIPTokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;  // immutable; copies share it
};

}  // namespace lazygrad
