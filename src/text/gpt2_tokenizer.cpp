// GPT-2's byte-level BPE (include/lazygrad/tokenizer.h), a port of the reference encoder, the npm
// package gpt-3-encoder (itself a port of OpenAI's encoder.py). Three steps:
//   1. split the text into words with GPT-2's regex
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      matched by hand over code points (text/pre_tokenizer.h), with JavaScript's classes;
//   2. map each byte of a word to a token of one printable character (bytes_to_unicode);
//   3. merge adjacent tokens, lowest merge rank first, until no pair has a rank (bpe).
// docs/tokenizer.md says where the reference's quirks are kept.
#include <array>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "lazygrad/error.h"
#include "lazygrad/tokenizer.h"
#include "nn/json_reader.h"
#include "text/pre_tokenizer.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace lazygrad {
namespace {

using text::append_utf8;
using text::Unit;
using text::unit_at;

std::string read_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("GPT2Tokenizer: cannot open " + std::string(what) + " '" + path + "': not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("GPT2Tokenizer: cannot open " + std::string(what) + " '" + path + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error("GPT2Tokenizer: cannot read '" + path + "'");
  return std::move(buffer).str();
}

struct PairHash {
  size_t operator()(uint64_t key) const { return std::hash<uint64_t>()(key * 0x9E3779B97F4A7C15ull); }
};
// Lookups by string_view without building a string (C++20's transparent unordered lookup): the
// 50,000 merges look up three tokens each when the tokenizer loads.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

}  // namespace

struct GPT2Tokenizer::Impl {
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> encoder;  // token -> id
  std::vector<std::string> tokens;                                              // id -> token
  std::vector<std::string> bytes;       // id -> the bytes it stands for
  std::array<int32_t, 256> byte_ids{};  // the one-byte tokens
  struct Merge {
    int32_t rank, merged;
  };
  std::unordered_map<uint64_t, Merge, PairHash> merges;  // (left id, right id) -> rank, result
  int32_t eos = -1;

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;  // word bytes -> ids

  static constexpr size_t kShortWord = 64;  // bytes; longer words take bpe_long
  void bpe(std::string_view word, std::vector<int32_t>& out) const;
  void bpe_short(std::string_view word, std::vector<int32_t>& out) const;
  void bpe_long(std::string_view word, std::vector<int32_t>& out) const;
};

// The reference's bpe(): repeatedly merge every occurrence (left to right) of the adjacent pair
// with the lowest rank. Two of its quirks are kept: ranks are looked up by the pair's JavaScript
// string "left,right", so a pair of tokens around another comma can take a merge's rank (from_files
// adds those pairs to `merges`), and among pairs of equal rank the last one in the word wins.
// bpe_short does it as the reference does, rescanning the word for each merge: fast for short words,
// quadratic for long ones (100 kB without a space took 12 s); bpe_long gives the same result in
// O(n log n).
void GPT2Tokenizer::Impl::bpe(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() <= kShortWord)
    bpe_short(word, out);
  else
    bpe_long(word, out);
}

void GPT2Tokenizer::Impl::bpe_short(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  for (unsigned char b : word) ids.push_back(byte_ids[b]);
  std::vector<int32_t> next;
  while (ids.size() > 1) {
    int32_t best_rank = -1, first = 0, second = 0, merged = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      auto it = merges.find(pair_key(ids[i], ids[i + 1]));
      if (it == merges.end()) continue;
      if (best_rank < 0 || it->second.rank <= best_rank) {
        best_rank = it->second.rank;
        first = ids[i], second = ids[i + 1], merged = it->second.merged;
      }
    }
    if (best_rank < 0) break;
    next.clear();
    for (size_t i = 0; i < ids.size();) {
      if (i + 1 < ids.size() && ids[i] == first && ids[i + 1] == second) {
        next.push_back(merged);
        i += 2;
      } else {
        next.push_back(ids[i++]);
      }
    }
    ids.swap(next);
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

// The symbols are a linked list, the positions of each pair with a rank are kept in order, and the
// pairs by rank: each merge costs O(log n). The result is bpe_short's: a merge never recreates its
// own pair, so merging its occurrences left to right (skipping one that an earlier merge of the same
// pass consumed) is the reference's pass.
void GPT2Tokenizer::Impl::bpe_long(std::string_view word, std::vector<int32_t>& out) const {
  const int n = int(word.size());
  std::vector<int32_t> id(n);
  std::vector<int> prev(n), next(n);  // -1 and n: none
  std::vector<char> alive(n, 1);
  for (int i = 0; i < n; ++i) {
    id[i] = byte_ids[static_cast<unsigned char>(word[i])];
    prev[i] = i - 1;
    next[i] = i + 1;
  }
  // Symbols keep the index of their first byte, so indices are in word order.
  std::unordered_map<uint64_t, std::set<int>, PairHash> where;  // pair -> left symbols, in order
  std::set<std::pair<int32_t, uint64_t>> queue;                 // (rank, pair) of the pairs present
  auto add = [&](int p) {
    if (p < 0 || next[p] >= n) return;
    uint64_t key = pair_key(id[p], id[next[p]]);
    auto m = merges.find(key);
    if (m == merges.end()) return;
    std::set<int>& at = where[key];
    if (at.empty()) queue.emplace(m->second.rank, key);
    at.insert(p);
  };
  auto remove = [&](int p) {
    if (p < 0 || next[p] >= n) return;
    uint64_t key = pair_key(id[p], id[next[p]]);
    auto w = where.find(key);
    if (w == where.end() || w->second.erase(p) == 0 || !w->second.empty()) return;
    queue.erase({merges.find(key)->second.rank, key});
  };
  for (int i = 0; i + 1 < n; ++i) add(i);
  std::vector<int> positions;
  while (!queue.empty()) {
    // The lowest rank; of two pairs with that rank, the one that occurs last.
    const int32_t rank = queue.begin()->first;
    uint64_t key = queue.begin()->second;
    for (auto it = std::next(queue.begin()); it != queue.end() && it->first == rank; ++it)
      if (*where[it->second].rbegin() > *where[key].rbegin()) key = it->second;
    const int32_t first = int32_t(key >> 32), second = int32_t(key & 0xFFFFFFFFu);
    const int32_t merged = merges.find(key)->second.merged;
    const std::set<int>& at = where[key];
    positions.assign(at.begin(), at.end());
    for (int p : positions) {
      if (!alive[p] || next[p] >= n || id[p] != first || id[next[p]] != second) continue;
      const int q = next[p];
      remove(prev[p]);
      remove(p);
      remove(q);
      id[p] = merged;
      alive[q] = 0;
      next[p] = next[q];
      if (next[q] < n) prev[next[q]] = p;
      add(prev[p]);
      add(p);
    }
    if (auto w = where.find(key); w != where.end() && !w->second.empty()) {  // cannot happen; never loop
      w->second.clear();
      queue.erase({rank, key});
    }
  }
  for (int p = 0; p < n; p = next[p]) out.push_back(id[p]);
}

GPT2Tokenizer::GPT2Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

GPT2Tokenizer GPT2Tokenizer::from_dir(const std::string& dir) {
  return from_files(dir + "/encoder.json", dir + "/vocab.bpe");
}

GPT2Tokenizer GPT2Tokenizer::from_files(const std::string& encoder_json_path,
                                        const std::string& vocab_bpe_path) {
  auto impl = std::make_shared<Impl>();
  const std::string& ej = encoder_json_path;

  // ---- encoder.json: {"token": id, ...}, ids 0..n-1 each used once ----
  std::string document = read_file(ej, "encoder.json");
  json::Value root;
  try {
    root = json::parse(document);
  } catch (const json::SyntaxError& e) {
    throw Error("GPT2Tokenizer: " + ej + ": invalid JSON at byte offset " + std::to_string(e.offset()) +
                ": " + e.reason());
  }
  if (root.kind != json::Kind::Object || root.members.empty())
    throw Error("GPT2Tokenizer: " + ej + ": expected an object of token ids, found " +
                std::string(json::kind_name(root.kind)));
  const size_t n = root.members.size();
  impl->tokens.assign(n, std::string());
  std::vector<bool> seen(n, false);
  impl->encoder.reserve(n);
  for (const json::Member& m : root.members) {
    const json::Value& v = m.value;
    auto where = [&] { return "GPT2Tokenizer: " + ej + ": byte offset " + std::to_string(v.offset) + ": "; };
    if (v.kind != json::Kind::Number)
      throw Error(where() + "the id of " + json::quote(m.key) + " is not a number");
    int64_t id = -1;
    if (!v.text.empty() && v.text.size() <= 10 && v.text.find_first_not_of("0123456789") == std::string::npos)
      id = std::stoll(v.text);
    if (id < 0 || id >= int64_t(n))
      throw Error(where() + "the id " + v.text + " of " + json::quote(m.key) + " is not an integer in [0, " +
                  std::to_string(n) + ")");
    if (seen[id]) throw Error(where() + "the id " + v.text + " is used twice");
    seen[id] = true;
    impl->tokens[id] = m.key;
    impl->encoder.emplace(m.key, int32_t(id));
  }
  root = json::Value();
  document.clear();

  // Each token's bytes: every character must be one of the 256 byte characters.
  const std::array<char32_t, 256> b2u = text::bytes_to_unicode();
  std::unordered_map<char32_t, unsigned char> u2b;
  for (int b = 0; b < 256; ++b) u2b[b2u[b]] = static_cast<unsigned char>(b);
  impl->bytes.resize(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string& t = impl->tokens[id];
    for (size_t i = 0; i < t.size();) {
      Unit u = unit_at(t, i);
      auto it = u.cp < 0 ? u2b.end() : u2b.find(char32_t(u.cp));
      if (it == u2b.end())
        throw Error("GPT2Tokenizer: " + ej + ": token " + json::quote(t) + " (id " + std::to_string(id) +
                    ") has a character that stands for no byte");
      impl->bytes[id] += char(it->second);
      i += u.len;
    }
  }
  for (int b = 0; b < 256; ++b) {
    std::string t;
    append_utf8(t, b2u[b]);
    auto it = impl->encoder.find(t);
    if (it == impl->encoder.end())
      throw Error("GPT2Tokenizer: " + ej + ": the token " + json::quote(t) + " of byte " + std::to_string(b) +
                  " is missing");
    impl->byte_ids[b] = it->second;
  }
  if (auto it = impl->encoder.find("<|endoftext|>"); it != impl->encoder.end()) impl->eos = it->second;

  // ---- vocab.bpe: a "#version" line, then one merge "left right" per line, by rank ----
  const std::string& vb = vocab_bpe_path;
  std::string merges_text = read_file(vb, "vocab.bpe");
  if (merges_text.empty() || merges_text.back() != '\n')
    throw Error("GPT2Tokenizer: " + vb + ": does not end with a newline (truncated?)");
  struct Line {
    std::string_view left, right;  // into merges_text
  };
  std::vector<Line> lines;
  std::string joined;                       // a merge's result, reused line to line
  size_t pos = merges_text.find('\n') + 1;  // the first line is the version, as the reference skips it
  for (size_t line_no = 2; pos < merges_text.size(); ++line_no) {
    size_t end = merges_text.find('\n', pos);
    std::string_view line(merges_text.data() + pos, end - pos);
    pos = end + 1;
    std::vector<std::string_view> parts;
    for (size_t i = 0; i < line.size();) {
      if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
        ++i;
        continue;
      }
      size_t j = line.find_first_of(" \t\r", i);
      if (j == std::string_view::npos) j = line.size();
      parts.push_back(line.substr(i, j - i));
      i = j;
    }
    auto where = [&] { return "GPT2Tokenizer: " + vb + ": line " + std::to_string(line_no) + ": "; };
    if (parts.size() != 2)
      throw Error(where() + "a merge is two tokens separated by a space, found " +
                  std::to_string(parts.size()) + " in '" + std::string(line) + "'");
    int32_t ids[3];
    joined.assign(parts[0]).append(parts[1]);
    const std::string_view names[3] = {parts[0], parts[1], joined};
    for (int k = 0; k < 3; ++k) {
      auto it = impl->encoder.find(names[k]);
      if (it == impl->encoder.end())
        throw Error(where() + "the token " + json::quote(names[k]) + (k == 2 ? " (the merge's result)" : "") +
                    " is not in " + ej);
      ids[k] = it->second;
    }
    int32_t rank = int32_t(lines.size());
    impl->merges[pair_key(ids[0], ids[1])] = {rank, ids[2]};  // a later duplicate wins, as in the reference
    lines.push_back({parts[0], parts[1]});
  }
  // The reference keys ranks by the string "left,right": when that string also splits at another
  // comma into two tokens, that pair has this rank too (e.g. '",' + '"' takes the rank of '"' + ',"').
  for (size_t rank = 0; rank < lines.size(); ++rank) {
    const std::string key = std::string(lines[rank].left) + "," + std::string(lines[rank].right);
    const std::string_view k(key);
    for (size_t c = key.find(','); c != std::string::npos; c = key.find(',', c + 1)) {
      if (c == lines[rank].left.size()) continue;
      auto a = impl->encoder.find(k.substr(0, c));
      auto b = impl->encoder.find(k.substr(c + 1));
      joined.assign(k.substr(0, c)).append(k.substr(c + 1));
      auto merged = impl->encoder.find(std::string_view(joined));
      if (a == impl->encoder.end() || b == impl->encoder.end() || merged == impl->encoder.end()) continue;
      auto [it, inserted] = impl->merges.try_emplace(pair_key(a->second, b->second), Impl::Merge{});
      // The object the reference builds keeps the later of two merges with one key.
      if (inserted || it->second.rank < int32_t(rank)) it->second = {int32_t(rank), merged->second};
    }
  }
  return GPT2Tokenizer(std::move(impl));
}

std::vector<int32_t> GPT2Tokenizer::encode(std::string_view text) const {
  const Impl& impl = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 1);
  for (size_t i = 0; i < text.size();) {
    size_t len = text::match_at(text::SplitPattern::Gpt2, text, i);
    std::string_view word = text.substr(i, len);
    i += len;
    {
      std::lock_guard<std::mutex> lock(impl.cache_mutex);
      if (auto it = impl.cache.find(std::string(word)); it != impl.cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    size_t before = out.size();
    impl.bpe(word, out);
    std::lock_guard<std::mutex> lock(impl.cache_mutex);
    if (impl.cache.size() >= (1u << 16)) impl.cache.clear();  // bounded: a long text of rare words
    impl.cache.emplace(std::string(word), std::vector<int32_t>(out.begin() + before, out.end()));
  }
  return out;
}

std::string GPT2Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || size_t(ids[i]) >= impl_->bytes.size())
      throw Error("GPT2Tokenizer.decode: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is not in the vocabulary of " + std::to_string(impl_->bytes.size()) + " tokens");
    out += impl_->bytes[ids[i]];
  }
  return out;
}

size_t GPT2Tokenizer::vocab_size() const { return impl_->tokens.size(); }

int32_t GPT2Tokenizer::eos_token_id() const { return impl_->eos; }

std::string GPT2Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || size_t(id) >= impl_->tokens.size())
    throw Error("GPT2Tokenizer.id_to_token: id " + std::to_string(id) + " is not in the vocabulary of " +
                std::to_string(impl_->tokens.size()) + " tokens");
  return impl_->tokens[id];
}

int32_t GPT2Tokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->encoder.find(token);
  return it == impl_->encoder.end() ? -1 : it->second;
}

}  // namespace lazygrad
