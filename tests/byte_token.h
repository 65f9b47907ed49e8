// byte_token: GPT-2's byte -> character table (bytes_to_unicode), for the tests that write a
// byte-level vocabulary of their own (tests/test_tokenizer.cpp, tests/test_tokenizer_llama.cpp).
#pragma once

#include <string>

namespace lazygrad::test {

// The character that stands for byte b, spelled as UTF-8: b itself when printable, else U+0100 + the
// count of the unprintable bytes before it.
inline std::string byte_token(int b) {
  bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  int cp = b;
  if (!printable) {
    int n = 0;
    for (int x = 0; x < b; ++x)
      if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace lazygrad::test
