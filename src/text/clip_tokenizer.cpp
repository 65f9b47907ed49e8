// CLIP's tokenizer (include/lazygrad/clip_tokenizer.h), in four steps:
//   1. clean: whitespace runs become one space, the ends are stripped, the text is lower-cased;
//   2. split into words by CLIP's regex, matched by hand over code points (the first alternative that
//      matches at a position wins, as a regex alternation does; whitespace is skipped);
//   3. each word's UTF-8 bytes become byte tokens (GPT-2's byte -> printable character table), the
//      last one with "</w>" (so "cat" at the end of a word and inside one are different tokens);
//   4. adjacent tokens merge, lowest merge rank first (text/bpe_merge.h).
#include "lazygrad/clip_tokenizer.h"

#include <locale.h>
#include <wctype.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "lazygrad/error.h"
#include "lazygrad/json.h"
#include "text/bpe_merge.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace lazygrad {
namespace {

constexpr std::string_view kStart = "<|startoftext|>", kEnd = "<|endoftext|>", kWordEnd = "</w>";
constexpr size_t kOpenAIMerges = 49152 - 256 - 2;  // OpenAI's tokenizer reads this many merges
constexpr int32_t kByteChars =
    256 + 68;  // the byte table's characters are below U+0144 (68 bytes are not printable)

// The 256 byte characters in the order OpenAI's vocabulary lists them: the printable bytes first
// (they stand for themselves), then the others (U+0100 on).
std::vector<std::string> byte_tokens() {
  const std::array<char32_t, 256> b2u = text::bytes_to_unicode();
  std::vector<std::string> printable, others;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    text::append_utf8(s, b2u[b]);
    (b2u[b] == char32_t(b) ? printable : others).push_back(s);
  }
  printable.insert(printable.end(), others.begin(), others.end());
  return printable;
}

// Python's str.lower() for one code point, as far as the C library's Unicode tables go: C.UTF-8's
// towlower (simple case mapping; Python's full mapping differs for a few characters, such as U+0130).
char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp;
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));
  return utf8 ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(cp), utf8)) : cp;
}

std::string read_text_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("CLIPTokenizer: cannot open " + std::string(what) + " \"" + path + "\": not a file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw Error("CLIPTokenizer: cannot read \"" + path + "\"");
  return std::move(text).str();
}

// A file that may be gzip-compressed (zlib's gzread passes plain files through).
std::string read_maybe_gzip(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("CLIPTokenizer: cannot open the BPE file \"" + path + "\": not a file");
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw Error("CLIPTokenizer: cannot open \"" + path + "\"");
  std::string out;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  int err = 0;
  const std::string why = n < 0 ? gzerror(file, &err) : "";
  gzclose(file);
  if (n < 0) throw Error("CLIPTokenizer: \"" + path + "\" is not a valid gzip file: " + why);
  return out;
}

// The merge lines after the first ("#version: 0.2"), each "left right".
std::vector<std::pair<std::string, std::string>> parse_merges(const std::string& text,
                                                              const std::string& where, size_t limit) {
  std::vector<std::pair<std::string, std::string>> merges;
  std::istringstream lines(text);
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line) && merges.size() < limit) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 || line.empty()) continue;  // the version line
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw Error("CLIPTokenizer: \"" + where + "\" line " + std::to_string(number) +
                  ": a merge must be two tokens separated by one space, got " + json::quote(line));
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

}  // namespace

struct CLIPTokenizer::Impl {
  std::unordered_map<std::string, int32_t> ids;         // token -> id
  std::vector<std::string> tokens;                      // id -> token
  std::array<int32_t, 256> byte_ids{}, byte_end_ids{};  // each byte's token, without and with "</w>"
  std::unordered_map<uint64_t, text::Merge> merges;     // (left id, right id) -> rank, merged id
  int32_t start = -1, end = -1;
  std::array<int, kByteChars> byte_of_char{};  // U+0000..U+0143 -> the byte it stands for (decode)

  void set_vocab(std::unordered_map<std::string, int32_t> vocab, const std::string& where) {
    ids = std::move(vocab);
    tokens.assign(ids.size(), "");
    for (const auto& [token, id] : ids) {
      if (id < 0 || static_cast<size_t>(id) >= ids.size() || !tokens[static_cast<size_t>(id)].empty())
        throw Error("CLIPTokenizer: \"" + where + "\": the ids must be 0.." + std::to_string(ids.size() - 1) +
                    ", each once; " + json::quote(token) + " has " + std::to_string(id));
      tokens[static_cast<size_t>(id)] = token;
    }
    const std::array<char32_t, 256> b2u = text::bytes_to_unicode();
    for (int b = 0; b < 256; ++b) {
      std::string ch;
      text::append_utf8(ch, b2u[b]);
      const std::string note = " (byte " + std::to_string(b) +
                               ": a CLIP vocabulary has a token for each byte, with and without </w>)";
      byte_ids[b] = need(ch, where, note);
      byte_end_ids[b] = need(ch + std::string(kWordEnd), where, note);
      byte_of_char[b2u[b]] = b;
    }
    start = need(std::string(kStart), where);
    end = need(std::string(kEnd), where);
  }
  int32_t need(const std::string& token, const std::string& where, const std::string& note = "") const {
    auto it = ids.find(token);
    if (it == ids.end())
      throw Error("CLIPTokenizer: \"" + where + "\" has no token " + json::quote(token) + note);
    return it->second;
  }
  void set_merges(const std::vector<std::pair<std::string, std::string>>& list, const std::string& where) {
    for (size_t rank = 0; rank < list.size(); ++rank) {
      const auto& [a, b] = list[rank];
      const int32_t left = need(a, where), right = need(b, where), merged = need(a + b, where);
      merges.emplace(text::pair_key(left, right), text::Merge{static_cast<double>(rank), merged});
    }
  }

  // One word's ids: its bytes' tokens ("</w>" on the last), merged.
  void bpe(std::string_view word, std::vector<int32_t>& out) const {
    std::vector<int32_t> symbols;
    for (size_t i = 0; i < word.size(); ++i) {
      const auto b = static_cast<unsigned char>(word[i]);
      symbols.push_back(i + 1 == word.size() ? byte_end_ids[b] : byte_ids[b]);
    }
    text::merge_symbols(symbols, [&](int32_t a, int32_t b) -> std::optional<text::Merge> {
      auto it = merges.find(text::pair_key(a, b));
      return it == merges.end() ? std::nullopt : std::optional(it->second);
    });
    out.insert(out.end(), symbols.begin(), symbols.end());
  }
};

CLIPTokenizer::CLIPTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

CLIPTokenizer CLIPTokenizer::from_files(const std::string& vocab_json_path,
                                        const std::string& merges_txt_path) {
  const std::string vocab_text = read_text_file(vocab_json_path, "vocab.json");
  json::Value doc;
  try {
    doc = json::parse(vocab_text);
  } catch (const json::SyntaxError& e) {
    throw Error("CLIPTokenizer: \"" + vocab_json_path + "\": not valid JSON: " + e.reason() + " (at byte " +
                std::to_string(e.offset()) + ")");
  }
  if (doc.kind != json::Kind::Object)
    throw Error("CLIPTokenizer: \"" + vocab_json_path + "\": expected an object of token -> id");
  std::unordered_map<std::string, int32_t> vocab;
  for (const json::Member& m : doc.members) {
    const json::Value& v = m.value;
    if (v.kind != json::Kind::Number || v.text.find_first_of(".eE-") != std::string::npos ||
        v.text.size() > 9)
      throw Error("CLIPTokenizer: \"" + vocab_json_path + "\": the id of " + json::quote(m.key) +
                  " must be a non-negative integer (at byte " + std::to_string(v.offset) + ")");
    vocab[m.key] = static_cast<int32_t>(std::stol(v.text));
  }
  auto impl = std::make_shared<Impl>();
  impl->set_vocab(std::move(vocab), vocab_json_path);
  impl->set_merges(parse_merges(read_text_file(merges_txt_path, "merges.txt"), merges_txt_path, SIZE_MAX),
                   merges_txt_path);
  return CLIPTokenizer(impl);
}

CLIPTokenizer CLIPTokenizer::from_bpe_file(const std::string& path) {
  const auto merges = parse_merges(read_maybe_gzip(path), path, kOpenAIMerges);
  std::vector<std::string> list = byte_tokens();
  for (size_t i = 0; i < 256; ++i) list.push_back(list[i] + std::string(kWordEnd));
  for (const auto& [a, b] : merges) list.push_back(a + b);
  list.emplace_back(kStart);
  list.emplace_back(kEnd);
  std::unordered_map<std::string, int32_t> vocab;
  for (size_t id = 0; id < list.size(); ++id)
    if (!vocab.emplace(list[id], static_cast<int32_t>(id)).second)
      throw Error("CLIPTokenizer: \"" + path + "\": merge line " + std::to_string(id - 512 + 2) + " makes " +
                  json::quote(list[id]) + " a second time");
  auto impl = std::make_shared<Impl>();
  impl->set_vocab(std::move(vocab), path);
  impl->set_merges(merges, path);
  return CLIPTokenizer(impl);
}

CLIPTokenizer CLIPTokenizer::from_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const std::string vocab = path + "/vocab.json", merges = path + "/merges.txt";
    if (!std::filesystem::is_regular_file(vocab, ec) || !std::filesystem::is_regular_file(merges, ec))
      throw Error(
          "CLIPTokenizer: the folder \"" + path +
          "\" must hold vocab.json and merges.txt (or give OpenAI's bpe_simple_vocab_16e6.txt.gz itself)");
    return from_files(vocab, merges);
  }
  return from_bpe_file(path);
}

std::vector<int32_t> CLIPTokenizer::encode(std::string_view raw) const {
  // 1. Whitespace runs to one space, the ends stripped, lower-cased (invalid UTF-8 bytes kept).
  std::string clean;
  bool space = false;
  for (size_t i = 0; i < raw.size();) {
    const text::Unit u = text::unit_at(raw, i);
    if (text::class_of(u) == text::CodePointClass::Space) {
      space = !clean.empty();
    } else {
      if (space) clean += ' ';
      space = false;
      if (u.cp < 0)
        clean += raw[i];
      else
        text::append_utf8(clean, to_lower(char32_t(u.cp)));
    }
    i += u.len;
  }

  // 2. CLIP's regex, alternative by alternative; 3-4. BPE on each word.
  std::vector<int32_t> out;
  const std::string_view s = clean;
  auto cls = [&](size_t i) { return text::class_of(text::unit_at(s, i)); };
  for (size_t i = 0; i < s.size();) {
    const std::string_view rest = s.substr(i);
    const bool is_start = rest.starts_with(kStart);
    if (is_start || rest.starts_with(kEnd)) {
      out.push_back(is_start ? impl_->start : impl_->end);
      i += is_start ? kStart.size() : kEnd.size();
      continue;
    }
    size_t j = i;
    for (std::string_view c : {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"})
      if (rest.starts_with(c)) {
        j = i + c.size();
        break;
      }
    if (j == i) {
      const text::CodePointClass first = cls(i);
      j = i + text::unit_at(s, i).len;
      if (first == text::CodePointClass::Space) {
        i = j;
        continue;
      }
      if (first == text::CodePointClass::Letter) {
        while (j < s.size() && cls(j) == text::CodePointClass::Letter) j += text::unit_at(s, j).len;
      } else if (first == text::CodePointClass::Other) {
        while (j < s.size() && cls(j) == text::CodePointClass::Other) j += text::unit_at(s, j).len;
      }  // a number is one code point
    }
    impl_->bpe(s.substr(i, j - i), out);
    i = j;
  }
  return out;
}

std::vector<int32_t> CLIPTokenizer::encode_padded(std::string_view text, size_t length) const {
  if (length < 2)
    throw Error("CLIPTokenizer: encode_padded needs a length of at least 2, got " + std::to_string(length));
  std::vector<int32_t> ids = encode(text);
  if (ids.size() > length - 2) ids.resize(length - 2);
  ids.insert(ids.begin(), impl_->start);
  ids.resize(length, impl_->end);  // the end token, then the end token as padding
  return ids;
}

std::string CLIPTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= impl_->tokens.size())
      throw Error("CLIPTokenizer: decode: id " + std::to_string(ids[i]) + " at position " +
                  std::to_string(i) + " is outside the vocabulary of " +
                  std::to_string(impl_->tokens.size()));
    std::string_view token = impl_->tokens[static_cast<size_t>(ids[i])];
    if (ids[i] == impl_->start || ids[i] == impl_->end) {
      out += token;
      continue;
    }
    const bool word_end = token.ends_with(kWordEnd);
    if (word_end) token.remove_suffix(kWordEnd.size());
    for (size_t k = 0; k < token.size();) {
      const text::Unit u = text::unit_at(token, k);
      out += u.cp >= 0 && u.cp < kByteChars
                 ? static_cast<char>(impl_->byte_of_char[static_cast<size_t>(u.cp)])
                 : '?';
      k += u.len;
    }
    if (word_end) out += ' ';
  }
  return out;
}

size_t CLIPTokenizer::vocab_size() const { return impl_->tokens.size(); }
int32_t CLIPTokenizer::start_token_id() const { return impl_->start; }
int32_t CLIPTokenizer::end_token_id() const { return impl_->end; }
int32_t CLIPTokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->ids.find(std::string(token));
  return it == impl_->ids.end() ? -1 : it->second;
}
std::string CLIPTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->tokens.size())
    throw Error("CLIPTokenizer: id " + std::to_string(id) + " is outside the vocabulary of " +
                std::to_string(impl_->tokens.size()));
  return impl_->tokens[static_cast<size_t>(id)];
}

}  // namespace lazygrad
