// SentencePiece-style BPE (LLaMA 1/2, TinyLlama, Mistral), from GGUF arrays or a tokenizer.json:
//   1. special tokens are cut out of the text (with parse_special);
//   2. each fragment of text gets "▁" in front (per the config) and its spaces become "▁";
//   3. it is split into characters, which merge (text/bpe_merge.h) by Hugging Face's merge ranks,
//      or, as SentencePiece and llama.cpp do, by the score of the merged token, highest first;
//   4. a character that is no token becomes its UTF-8 bytes as <0xXX> tokens (byte fallback), or
//      the unknown token. A byte that is not valid UTF-8 is a character of its own, so it too comes
//      back from decode as itself.
#include <cstdio>
#include <mutex>

#include "lazygrad/error.h"
#include "nn/json_reader.h"
#include "text/bpe_merge.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace lazygrad::text {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁", U+2581

// The byte a token spelled <0xXX> stands for (two hex digits, either case, as llama.cpp's strtol
// reads them), or -1. Checked by hand: sscanf's %2X also takes a sign or a space ("<0x-C>" gave
// 4294967284, an index far outside the table of 256 bytes).
int byte_of_token(std::string_view t) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
  const int high = hex(t[3]), low = hex(t[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

class SentencePieceBpe final : public TableTokenizer {
 public:
  SentencePieceBpe(SentencePieceConfig c, const std::string& where)
      : TableTokenizer(std::move(c.table)),
        prefix_(c.prefix),
        merges_(std::move(c.merges)),
        scores_(std::move(c.scores)),
        byte_fallback_(c.byte_fallback),
        fuse_unknown_(c.fuse_unknown),
        ignore_merges_(c.ignore_merges),
        strip_decoded_space_(c.strip_decoded_space) {
    byte_ids_.fill(-1);
    byte_values_.assign(table_.tokens.size(), -1);
    for (size_t id = 0; id < table_.tokens.size(); ++id) {
      if (table_.kinds[id] != TokenKind::Byte) continue;
      const std::string& t = table_.tokens[id];
      const int value = byte_of_token(t);
      if (value < 0)
        throw Error(where + ": the byte token " + json::quote(t) + " (id " + std::to_string(id) +
                    ") is not spelled <0xXX>");
      byte_values_[id] = value;
      byte_ids_[value] = int32_t(id);
    }
    if (merges_.empty() && scores_.size() != table_.tokens.size())
      throw Error(where + ": " + std::to_string(scores_.size()) + " scores for " +
                  std::to_string(table_.tokens.size()) + " tokens");
    if (byte_fallback_ && table_.unknown < 0) {
      for (int b = 0; b < 256; ++b) {
        if (byte_ids_[b] >= 0) continue;
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        throw Error(where + ": byte fallback needs the byte token " + name +
                    ", which the vocabulary lacks (and it has no unknown token)");
      }
    }
    if (!byte_fallback_ && table_.unknown < 0)
      throw Error(where + ": neither byte fallback nor an unknown token: some texts could not be encoded");
    // Words can be merged apart (and cached) unless some token has "▁" after something else ("a▁b"):
    // then a merge could join two of them. SentencePiece's vocabularies have "▁" only in front.
    split_words_ = !ignore_merges_;
    for (size_t id = 0; id < table_.tokens.size() && split_words_; ++id) {
      TokenKind k = table_.kinds[id];
      if (k != TokenKind::Normal && k != TokenKind::Added) continue;
      const std::string& t = table_.tokens[id];
      for (size_t p = t.find(kSpace, 1); p != std::string::npos && split_words_; p = t.find(kSpace, p + 1))
        split_words_ = p >= kSpace.size() && t.compare(p - kSpace.size(), kSpace.size(), kSpace) == 0;
    }
  }

  std::vector<int32_t> encode(std::string_view text, EncodeOptions options) const override {
    std::string normalized;
    return encode_fragments(text, options, [&](size_t f, std::string_view piece, std::vector<int32_t>& out) {
      normalized.clear();
      bool starts_with_space = piece.starts_with(' ') || piece.starts_with(kSpace);
      if (prefix_ == SentencePieceConfig::Prefix::EveryFragment ||
          (prefix_ == SentencePieceConfig::Prefix::UnlessPresent && !starts_with_space) ||
          (prefix_ == SentencePieceConfig::Prefix::FirstUnlessPresent && f == 0 && !starts_with_space))
        normalized += kSpace;
      for (char ch : piece) {
        if (ch == ' ')
          normalized += kSpace;
        else
          normalized += ch;
      }
      encode_normalized(normalized, out);
    });
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out =
        decode_ids(ids, skip_special, [&](int32_t id, std::string& text) { append_piece(id, text); });
    if (strip_decoded_space_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }

  std::string token_bytes(int32_t id) const override {
    table_.check_id(id, "token_bytes");
    std::string out;
    append_piece(id, out);
    return out;
  }

 private:
  void append_piece(int32_t id, std::string& out) const {
    if (byte_values_[id] >= 0) {
      out += char(byte_values_[id]);
      return;
    }
    const std::string& t = table_.tokens[id];
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, kSpace.size(), kSpace) == 0) {
        out += ' ';
        i += kSpace.size();
      } else {
        out += t[i++];
      }
    }
  }

  // A token that text can merge into (not a control, byte or unknown token).
  int32_t piece_id(std::string_view s) const {
    auto it = table_.ids.find(s);
    if (it == table_.ids.end()) return -1;
    TokenKind k = table_.kinds[it->second];
    return k == TokenKind::Normal || k == TokenKind::Added ? it->second : -1;
  }

  void encode_normalized(std::string_view s, std::vector<int32_t>& out) const {
    if (!split_words_) return encode_piece(s, out);
    // A word: a run of "▁" and what follows up to the next "▁".
    size_t start = 0;
    for (size_t i = 1; i <= s.size(); ++i) {
      bool boundary =
          i == s.size() || (s.compare(i, kSpace.size(), kSpace) == 0 &&
                            (i < kSpace.size() || s.compare(i - kSpace.size(), kSpace.size(), kSpace) != 0));
      if (!boundary) continue;
      const std::string_view word = s.substr(start, i - start);
      start = i;
      {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (auto it = cache_.find(word); it != cache_.end()) {
          out.insert(out.end(), it->second.begin(), it->second.end());
          continue;
        }
      }
      std::vector<int32_t> ids;
      encode_piece(word, ids);
      out.insert(out.end(), ids.begin(), ids.end());
      std::lock_guard<std::mutex> lock(cache_mutex_);
      if (cache_.size() >= (1u << 16)) cache_.clear();  // bounded: a long text of rare words
      cache_.emplace(std::string(word), std::move(ids));
    }
  }

  void encode_piece(std::string_view s, std::vector<int32_t>& out) const {
    if (ignore_merges_) {
      if (int32_t id = piece_id(s); id >= 0) {
        out.push_back(id);
        return;
      }
    }
    std::vector<int32_t> ids;
    std::vector<std::string_view> chars;  // the characters, for the ones that are no token
    for (size_t i = 0; i < s.size();) {
      size_t len = unit_at(s, i).len;
      chars.push_back(s.substr(i, len));
      ids.push_back(piece_id(chars.back()));
      i += len;
    }
    // Unknown characters never merge, so the ones left at -1 are in order among `chars`.
    std::vector<std::string_view> unknown;
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0) unknown.push_back(chars[i]);
    if (!merges_.empty()) {
      merge_symbols(ids, [&](int32_t a, int32_t b) -> std::optional<Merge> {
        auto it = merges_.find(pair_key(a, b));
        if (it == merges_.end()) return std::nullopt;
        return Merge{double(it->second.first), it->second.second};
      });
    } else {
      std::string joined;
      merge_symbols(ids, [&](int32_t a, int32_t b) -> std::optional<Merge> {
        joined = table_.tokens[a];
        joined += table_.tokens[b];
        int32_t merged = piece_id(joined);
        if (merged < 0) return std::nullopt;
        return Merge{-double(scores_[merged]), merged};
      });
    }
    size_t next_unknown = 0;
    bool last_unknown = false;
    for (int32_t id : ids) {
      if (id >= 0) {
        out.push_back(id);
        last_unknown = false;
        continue;
      }
      std::string_view ch = unknown[next_unknown++];
      bool bytes_known = byte_fallback_;
      for (unsigned char b : ch) bytes_known = bytes_known && byte_ids_[b] >= 0;
      if (bytes_known) {
        for (unsigned char b : ch) out.push_back(byte_ids_[b]);
        last_unknown = false;
      } else {
        if (!(fuse_unknown_ && last_unknown)) out.push_back(table_.unknown);
        last_unknown = true;
      }
    }
  }

  SentencePieceConfig::Prefix prefix_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::vector<float> scores_;
  bool byte_fallback_, fuse_unknown_, ignore_merges_, strip_decoded_space_;
  std::array<int32_t, 256> byte_ids_;  // byte -> its <0xXX> token, or -1
  std::vector<int> byte_values_;       // id -> the byte of a <0xXX> token, or -1
  bool split_words_ = false;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, TokenTable::Hash, std::equal_to<>> cache_;
};

}  // namespace

std::shared_ptr<const Tokenizer::Impl> make_sentencepiece(SentencePieceConfig config,
                                                          const std::string& where) {
  return std::make_shared<SentencePieceBpe>(std::move(config), where);
}

}  // namespace lazygrad::text
