// Byte-level BPE (GPT-2's scheme, as LLaMA 3 uses it) from a tokenizer.json or GGUF arrays:
//   1. special tokens are cut out of the text (with parse_special);
//   2. each fragment is split into words by the pre-tokenizer's regexes (text/pre_tokenizer.h);
//   3. a word that is itself a token stays whole (ignore_merges, LLaMA 3); else its bytes become
//      the 256 byte tokens and are merged by rank, lowest first (text/bpe_merge.h).
// Merged words are cached, as GPT2Tokenizer does.
#include <mutex>

#include "lazygrad/error.h"
#include "nn/json_reader.h"
#include "text/bpe_merge.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace lazygrad::text {

std::array<char32_t, 256> bytes_to_unicode() {
  std::array<char32_t, 256> table{};
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; };
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) table[b] = printable(b) ? char32_t(b) : next++;
  return table;
}

namespace {

class ByteLevelBpe final : public TableTokenizer {
 public:
  ByteLevelBpe(ByteLevelConfig config, const std::string& where)
      : TableTokenizer(std::move(config.table)),
        byte_ids_(config.byte_ids),
        merges_(std::move(config.merges)),
        patterns_(std::move(config.patterns)),
        ignore_merges_(config.ignore_merges) {
    // The bytes of each token: a Normal token's characters must each stand for a byte.
    const std::array<char32_t, 256> b2u = bytes_to_unicode();
    std::unordered_map<char32_t, unsigned char> u2b;
    for (int b = 0; b < 256; ++b) u2b[b2u[b]] = static_cast<unsigned char>(b);
    bytes_.resize(table_.tokens.size());
    for (size_t id = 0; id < table_.tokens.size(); ++id) {
      const std::string& t = table_.tokens[id];
      if (table_.kinds[id] != TokenKind::Normal) {
        bytes_[id] = t;
        continue;
      }
      for (size_t i = 0; i < t.size();) {
        Unit u = unit_at(t, i);
        auto it = u.cp < 0 ? u2b.end() : u2b.find(char32_t(u.cp));
        if (it == u2b.end())
          throw Error(where + ": token " + json::quote(t) + " (id " + std::to_string(id) +
                      ") has a character that stands for no byte");
        bytes_[id] += char(it->second);
        i += u.len;
      }
      if (ignore_merges_) whole_words_.emplace(bytes_[id], int32_t(id));
    }
    // What text becomes (the byte tokens, the results of merges of them) must be Normal tokens: an
    // added or special one decodes as its spelling ("Ġ" rather than " "), so decode(encode(s)) would
    // not give s back (found by tests/fuzz/fuzz_hf_tokenizer.cpp).
    auto normal = [&](int32_t id, const std::string& what) {
      if (table_.kinds[id] != TokenKind::Normal)
        throw Error(where + ": " + what + ", " + json::quote(table_.tokens[id]) + " (id " +
                    std::to_string(id) + "), is an added or special token; it must be a normal one");
    };
    for (int b = 0; b < 256; ++b) normal(byte_ids_[b], "the token of byte " + std::to_string(b));
    for (const auto& [pair, merge] : merges_) {
      const int32_t left = int32_t(pair >> 32), right = int32_t(pair & 0xFFFFFFFFu);
      if (table_.kinds[left] == TokenKind::Normal && table_.kinds[right] == TokenKind::Normal)
        normal(merge.second,
               "the result of the merge " + json::quote(table_.tokens[left] + " " + table_.tokens[right]));
    }
  }

  std::vector<int32_t> encode(std::string_view text, EncodeOptions options) const override {
    std::vector<std::string_view> words, next;
    return encode_fragments(text, options, [&](size_t, std::string_view piece, std::vector<int32_t>& out) {
      words.assign(1, piece);
      for (SplitPattern p : patterns_) {
        next.clear();
        for (std::string_view w : words) split_words(p, w, next);
        words.swap(next);
      }
      for (std::string_view w : words) encode_word(w, out);
    });
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    return decode_ids(ids, skip_special, [&](int32_t id, std::string& out) { out += bytes_[id]; });
  }

  std::string token_bytes(int32_t id) const override {
    table_.check_id(id, "token_bytes");
    return bytes_[id];
  }

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const {
    if (ignore_merges_) {
      if (auto it = whole_words_.find(std::string(word)); it != whole_words_.end()) {
        out.push_back(it->second);
        return;
      }
    }
    {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      if (auto it = cache_.find(std::string(word)); it != cache_.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<int32_t> ids;
    ids.reserve(word.size());
    for (unsigned char b : word) ids.push_back(byte_ids_[b]);
    merge_symbols(ids, [&](int32_t a, int32_t b) -> std::optional<Merge> {
      auto it = merges_.find(pair_key(a, b));
      if (it == merges_.end()) return std::nullopt;
      return Merge{double(it->second.first), it->second.second};
    });
    out.insert(out.end(), ids.begin(), ids.end());
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= (1u << 16)) cache_.clear();  // bounded: a long text of rare words
    cache_.emplace(std::string(word), std::move(ids));
  }

  std::array<int32_t, 256> byte_ids_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::vector<SplitPattern> patterns_;
  bool ignore_merges_;
  std::vector<std::string> bytes_;                        // id -> the bytes it stands for
  std::unordered_map<std::string, int32_t> whole_words_;  // bytes -> Normal token (ignore_merges)
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;  // word -> ids
};

}  // namespace

std::shared_ptr<const Tokenizer::Impl> make_byte_level(ByteLevelConfig config, const std::string& where) {
  return std::make_shared<ByteLevelBpe>(std::move(config), where);
}

}  // namespace lazygrad::text
