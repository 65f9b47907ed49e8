// GPT-2's and LLaMA 3's pre-tokenization regexes (text/pre_tokenizer.h), matched by hand. At each
// position the alternatives are tried in the regex's order, and each one's greedy match (with the
// backtracking the regex engine would do) is worked out directly. Bytes that are not valid UTF-8
// count as U+FFFD would (class Other), so any byte string splits.
#include "text/pre_tokenizer.h"

#include "text/utf8.h"

namespace lazygrad::text {
namespace {

// The end of the run of units of class `cls` that starts at `j`.
size_t run_end(std::string_view s, size_t j, CodePointClass cls) {
  while (j < s.size()) {
    Unit u = unit_at(s, j);
    if (class_of(u) != cls) break;
    j += u.len;
  }
  return j;
}

// \s+(?!\S)|\s+ at a whitespace unit: the run, less its last unit when something other than
// whitespace follows (that unit then starts the next word: "a  b" is "a", " ", " b"), unless the
// run is one unit.
size_t whitespace_match(std::string_view s, size_t i) {
  size_t k = i, last = i;
  while (k < s.size()) {
    Unit u = unit_at(s, k);
    if (class_of(u) != CodePointClass::Space) break;
    last = k;
    k += u.len;
  }
  if (k < s.size() && last > i) return last - i;
  return k - i;
}

size_t match_gpt2(std::string_view s, size_t i) {
  const size_t n = s.size();
  // 's|'t|'re|'ve|'m|'ll|'d  (case-sensitive, ASCII apostrophe only)
  if (s[i] == '\'' && i + 1 < n) {
    char c = s[i + 1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
    if (i + 2 < n) {
      std::string_view two = s.substr(i + 1, 2);
      if (two == "re" || two == "ve" || two == "ll") return 3;
    }
  }
  // ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ : an optional space, then a run of one class.
  size_t start = s[i] == ' ' && i + 1 < n ? i + 1 : i;
  for (size_t j : {start, i}) {  // with the space first; without it only if s[i] starts the run
    Unit u = unit_at(s, j);
    CodePointClass cls = class_of(u);
    if (cls == CodePointClass::Space) continue;
    return run_end(s, j + u.len, cls) - i;
  }
  return whitespace_match(s, i);
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }
bool is_newline(int32_t cp) { return cp == '\r' || cp == '\n'; }

size_t match_llama3(std::string_view s, size_t i) {
  const size_t n = s.size();
  // (?i:'s|'t|'re|'ve|'m|'ll|'d): ASCII letters in either case (JavaScript's rewrite of the group,
  // which the reference runs, is [sS]|[tT]|...).
  if (s[i] == '\'' && i + 1 < n) {
    char c = ascii_lower(s[i + 1]);
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
    if (i + 2 < n) {
      char two[2] = {ascii_lower(s[i + 1]), ascii_lower(s[i + 2])};
      std::string_view t(two, 2);
      if (t == "re" || t == "ve" || t == "ll") return 3;
    }
  }
  const Unit u0 = unit_at(s, i);
  const CodePointClass c0 = class_of(u0);
  // [^\r\n\p{L}\p{N}]?\p{L}+ : letters, after at most one unit that is no newline, letter or digit.
  if (c0 == CodePointClass::Letter) return run_end(s, i, CodePointClass::Letter) - i;
  if (c0 != CodePointClass::Number && !is_newline(u0.cp)) {
    size_t j = i + u0.len;
    if (j < n && class_of(unit_at(s, j)) == CodePointClass::Letter)
      return run_end(s, j, CodePointClass::Letter) - i;
  }
  // \p{N}{1,3}
  if (c0 == CodePointClass::Number) {
    size_t j = i;
    for (int count = 0; count < 3 && j < n; ++count) {
      Unit u = unit_at(s, j);
      if (class_of(u) != CodePointClass::Number) break;
      j += u.len;
    }
    return j - i;
  }
  // ?[^\s\p{L}\p{N}]+[\r\n]* : an optional space, a run of "other", then any newlines.
  {
    size_t j = s[i] == ' ' && i + 1 < n ? i + 1 : i;
    if (class_of(unit_at(s, j)) == CodePointClass::Other) {
      size_t k = run_end(s, j, CodePointClass::Other);
      while (k < n && (s[k] == '\r' || s[k] == '\n')) ++k;
      return k - i;
    }
  }
  // \s*[\r\n]+ : whitespace up to and including the run's last newline, if it has one.
  {
    size_t k = i, after_newline = 0;
    while (k < n) {
      Unit u = unit_at(s, k);
      if (class_of(u) != CodePointClass::Space) break;
      k += u.len;
      if (is_newline(u.cp)) after_newline = k;
    }
    if (after_newline > 0) return after_newline - i;
  }
  return whitespace_match(s, i);
}

}  // namespace

std::optional<SplitPattern> pattern_for_regex(std::string_view regex) {
  if (regex == R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)")
    return SplitPattern::Gpt2;
  if (regex ==
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")
    return SplitPattern::Llama3;
  return std::nullopt;
}

size_t match_at(SplitPattern pattern, std::string_view s, size_t i) {
  return pattern == SplitPattern::Gpt2 ? match_gpt2(s, i) : match_llama3(s, i);
}

void split_words(SplitPattern pattern, std::string_view s, std::vector<std::string_view>& words) {
  for (size_t i = 0; i < s.size();) {
    size_t len = match_at(pattern, s, i);
    words.push_back(s.substr(i, len));
    i += len;
  }
}

}  // namespace lazygrad::text
