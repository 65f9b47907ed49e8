// What every kind of Tokenizer (include/lazygrad/tokenizer.h) is made of: Tokenizer::Impl, the
// interface each kind implements, and TokenTable, the vocabulary with its special tokens that the
// BPE kinds share. The constructors of the kinds are declared here; the readers of tokenizer.json
// (hf_tokenizer_json.cpp) and of GGUF arrays (gguf_vocab.cpp) fill their configs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lazygrad/tokenizer.h"
#include "text/pre_tokenizer.h"

namespace lazygrad {

class Tokenizer::Impl {
 public:
  virtual ~Impl() = default;
  virtual std::vector<int32_t> encode(std::string_view text, EncodeOptions options) const = 0;
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special) const = 0;
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual size_t vocab_size() const = 0;
  virtual int32_t bos_token_id() const = 0;
  virtual int32_t eos_token_id() const = 0;
  virtual std::string id_to_token(int32_t id) const = 0;
  virtual int32_t token_to_id(std::string_view token) const = 0;
};

namespace text {

enum class TokenKind : unsigned char {
  Normal,   // a piece of text the model merges into
  Special,  // a control token (<s>, <|begin_of_text|>): its text when decoded, unless skip_special
  Added,    // a user-defined token: matched whole like a special token, decoded as its text
  Byte,     // SentencePiece's byte fallback, spelled <0xXX>
  Unknown,  // <unk>: decoded as its text, unless skip_special
};

// A piece of text to encode, or a special token found in it.
struct Fragment {
  std::string_view text;  // empty for a token
  int32_t token = -1;
};

struct TokenTable {
  std::vector<std::string> tokens;  // id -> spelling
  std::vector<TokenKind> kinds;     // id -> kind
  // spelling -> id; looked up by string_view without a copy
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids;
  int32_t bos = -1, eos = -1, unknown = -1;
  std::vector<int32_t> prefix, suffix;  // what add_special puts around a text

  // Builds `ids` (the caller has filled tokens and kinds); a spelling used twice is an Error
  // naming `where`.
  void index(const std::string& where);
  // Splits text at the Added tokens written in it, and the Special ones too with parse_special (the
  // leftmost match, and the longest at one position, as transformers.js does). llama.cpp too
  // matches user-defined tokens always and control tokens only when asked to.
  std::vector<Fragment> fragments(std::string_view text, bool parse_special) const;
  // An Error for an id outside [0, size), at position `at` of the ids given to `op`.
  static constexpr size_t kNoPosition = size_t(-1);
  void check_id(int32_t id, const char* op, size_t at = kNoPosition) const;

 private:
  std::array<std::vector<int32_t>, 256> specials_by_first_byte_;  // longest first
};

// The parts of a BPE tokenizer that only need its TokenTable.
class TableTokenizer : public Tokenizer::Impl {
 public:
  explicit TableTokenizer(TokenTable table) : table_(std::move(table)) {}
  size_t vocab_size() const override { return table_.tokens.size(); }
  int32_t bos_token_id() const override { return table_.bos; }
  int32_t eos_token_id() const override { return table_.eos; }
  std::string id_to_token(int32_t id) const override {
    table_.check_id(id, "id_to_token");
    return table_.tokens[id];
  }
  int32_t token_to_id(std::string_view token) const override {
    auto it = table_.ids.find(token);
    return it == table_.ids.end() ? -1 : it->second;
  }

 protected:
  // encode's frame, the same for every kind: add_special's prefix and suffix around the text, a
  // special or added token written in the text as its id, and each piece of text between them
  // given to encode_text(index, text, out), index counting the fragments.
  template <class EncodeText>
  std::vector<int32_t> encode_fragments(std::string_view text, EncodeOptions options,
                                        EncodeText encode_text) const {
    std::vector<int32_t> out;
    if (options.add_special) out = table_.prefix;
    const std::vector<Fragment> fragments = table_.fragments(text, options.parse_special);
    for (size_t i = 0; i < fragments.size(); ++i) {
      if (fragments[i].token >= 0)
        out.push_back(fragments[i].token);
      else
        encode_text(i, fragments[i].text, out);
    }
    if (options.add_special) out.insert(out.end(), table_.suffix.begin(), table_.suffix.end());
    return out;
  }

  // decode's loop: each id checked, then its text appended by append_token(id, out); skip_special
  // leaves out the Special and Unknown tokens.
  template <class AppendToken>
  std::string decode_ids(std::span<const int32_t> ids, bool skip_special, AppendToken append_token) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
      table_.check_id(ids[i], "decode", i);
      TokenKind k = table_.kinds[ids[i]];
      if (skip_special && (k == TokenKind::Special || k == TokenKind::Unknown)) continue;
      append_token(ids[i], out);
    }
    return out;
  }

  TokenTable table_;
};

struct ByteLevelConfig {
  TokenTable table;
  // Each byte's token: GPT-2's table of printable characters, spelled as the vocabulary spells it.
  std::array<int32_t, 256> byte_ids{};
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (left << 32 | right) -> rank, merged
  std::vector<SplitPattern> patterns;  // applied in turn: each splits the words of the one before
  bool ignore_merges = false;          // a word that is a token is that token (LLaMA 3)
};
// A byte-level BPE tokenizer; `where` names the source for errors.
std::shared_ptr<const Tokenizer::Impl> make_byte_level(ByteLevelConfig config, const std::string& where);

// GPT-2's byte -> printable character table (U+0100.. for the bytes that are not printable).
std::array<char32_t, 256> bytes_to_unicode();

struct SentencePieceConfig {
  TokenTable table;
  enum class Prefix {
    None,
    EveryFragment,       // "▁" before every fragment of text (llama.cpp; HF's Prepend normalizer)
    UnlessPresent,       // Metaspace, prepend_scheme "always": unless the fragment starts with "▁"
    FirstUnlessPresent,  // Metaspace, prepend_scheme "first": only before a text that starts the input
  } prefix = Prefix::EveryFragment;
  // Merge by rank (Hugging Face's merges) when non-empty, else by the merged token's score.
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;
  std::vector<float> scores;
  bool byte_fallback = true;  // unknown characters as <0xXX> tokens (else the unknown token)
  bool fuse_unknown = false;  // consecutive unknown tokens as one
  bool ignore_merges = false;
  bool strip_decoded_space = true;  // decode drops the space the prefix put in front
};
std::shared_ptr<const Tokenizer::Impl> make_sentencepiece(SentencePieceConfig config,
                                                          const std::string& where);

inline uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

}  // namespace text
}  // namespace lazygrad
