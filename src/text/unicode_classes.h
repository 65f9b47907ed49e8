// The classes of code points that GPT-2's pre-tokenization regex tells apart. The table
// (unicode_classes.cpp) is generated from node's own regex engine by scripts/make_unicode_classes.js,
// so it agrees with the reference encoder, which runs that regex in JavaScript.
#pragma once

namespace lazygrad::text {

enum class CodePointClass : unsigned char {
  Other,   // none of the below: punctuation, symbols, marks, controls, unassigned
  Letter,  // \p{L}
  Number,  // \p{N}
  Space,   // JavaScript's \s
};

CodePointClass classify(char32_t cp);

}  // namespace lazygrad::text
