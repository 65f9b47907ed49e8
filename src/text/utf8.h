// UTF-8 helpers shared by the tokenizers: one code point (or one invalid byte) at a time, its class
// for the pre-tokenizers' regexes, and writing a code point back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/unicode_classes.h"

namespace lazygrad::text {

// One code point of a string: its value and length in bytes. A byte that does not start a valid
// UTF-8 sequence (shortest form, no surrogates, at most U+10FFFF) is a unit of its own with cp = -1.
struct Unit {
  int32_t cp;
  size_t len;
};

inline Unit unit_at(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return {b0, 1};
  size_t len;
  int32_t cp, min;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    len = 2, cp = b0 & 0x1F, min = 0x80;
  else if (b0 >= 0xE0 && b0 <= 0xEF)
    len = 3, cp = b0 & 0x0F, min = 0x800;
  else if (b0 >= 0xF0 && b0 <= 0xF4)
    len = 4, cp = b0 & 0x07, min = 0x10000;
  else
    return {-1, 1};
  if (len > s.size() - i) return {-1, 1};
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {-1, 1};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {-1, 1};
  return {cp, len};
}

// An invalid byte counts as U+FFFD would: punctuation-like, "Other".
inline CodePointClass class_of(Unit u) { return u.cp < 0 ? CodePointClass::Other : classify(char32_t(u.cp)); }

inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace lazygrad::text
