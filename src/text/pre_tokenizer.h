// The regexes that split a text into words before byte-level BPE, matched by hand over code points
// with JavaScript's classes (text/unicode_classes.h): no std::regex (slow, and no \p{L}). Only the
// known patterns are supported; pattern_for_regex recognises them by their exact text.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace lazygrad::text {

enum class SplitPattern {
  // GPT-2's: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Gpt2,
  // LLaMA 3's: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //            ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
};

// The pattern whose regex (as tokenizer.json writes it) is `regex`, or none.
std::optional<SplitPattern> pattern_for_regex(std::string_view regex);

// The length in bytes of the pattern's match at byte `i` of `s` (i < s.size()). Every position
// matches one alternative of either pattern, so the matches tile the text.
size_t match_at(SplitPattern pattern, std::string_view s, size_t i);

// Appends the words of `s` (views into it) to `words`.
void split_words(SplitPattern pattern, std::string_view s, std::vector<std::string_view>& words);

}  // namespace lazygrad::text
