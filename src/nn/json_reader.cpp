// The strict JSON reader: a recursive descent over the grammar of RFC 8259, one function per rule.
#include "nn/json_reader.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <utility>

namespace lazygrad::json {

namespace {

// The length of the valid UTF-8 sequence that starts at s[i], or 0 if none does.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t code_point = 0, smallest = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, smallest = 0x10000;
  } else {
    return 0;  // a continuation byte or 0xF8..0xFF where a sequence should start
  }
  if (s.size() - i < length) return 0;
  for (size_t k = 1; k < length; k++) {
    const auto next = static_cast<unsigned char>(s[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    code_point = code_point << 6 | (next & 0x3F);
  }
  // Overlong forms would give one character two spellings; surrogates are not characters.
  if (code_point < smallest || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF))
    return 0;
  return length;
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | code_point >> 6);
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | code_point >> 12);
    out += static_cast<char>(0x80 | (code_point >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | code_point >> 18);
    out += static_cast<char>(0x80 | (code_point >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (code_point >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  Parser(std::string_view document, int max_depth) : doc_(document), max_depth_(max_depth) {}

  Value document() {
    skip_whitespace();
    Value v = value(0);
    skip_whitespace();
    if (pos_ != doc_.size()) fail("expected the end of the document, found " + here());
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const { throw SyntaxError(pos_, reason); }

  // What is at the current position, for messages.
  std::string here() const {
    if (pos_ >= doc_.size()) return "the end of the document";
    const auto c = static_cast<unsigned char>(doc_[pos_]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    char hex[16];
    std::snprintf(hex, sizeof hex, "byte 0x%02X", c);
    return hex;
  }

  // A value of this kind that starts here.
  Value start(Kind kind) const {
    Value v;
    v.kind = kind;
    v.offset = pos_;
    return v;
  }

  bool at(char c) const { return pos_ < doc_.size() && doc_[pos_] == c; }

  void expect(char c) {
    if (!at(c)) fail(std::string("expected '") + c + "', found " + here());
    pos_++;
  }

  void skip_whitespace() {
    while (pos_ < doc_.size() &&
           (doc_[pos_] == ' ' || doc_[pos_] == '\t' || doc_[pos_] == '\n' || doc_[pos_] == '\r'))
      pos_++;
  }

  Value value(int depth) {
    if (pos_ >= doc_.size()) fail("expected a value, found the end of the document");
    switch (doc_[pos_]) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"': {
        Value v = start(Kind::String);
        v.text = string();
        return v;
      }
      case 't':
        return literal("true", Kind::Bool, true);
      case 'f':
        return literal("false", Kind::Bool, false);
      case 'n':
        return literal("null", Kind::Null, false);
      default:
        if (at('-') || is_digit(doc_[pos_])) return number();
        fail("expected a value, found " + here());
    }
  }

  Value literal(std::string_view word, Kind kind, bool boolean) {
    if (doc_.substr(pos_, word.size()) != word) fail("expected a value, found " + here());
    Value v = start(kind);
    v.boolean = boolean;
    pos_ += word.size();
    return v;
  }

  void enter(int depth) const {
    if (depth >= max_depth_) fail("values nested deeper than " + std::to_string(max_depth_) + " levels");
  }

  Value array(int depth) {
    enter(depth);
    Value v = start(Kind::Array);
    expect('[');
    skip_whitespace();
    if (at(']')) {
      pos_++;
      return v;
    }
    while (true) {
      skip_whitespace();
      v.items.push_back(value(depth + 1));
      skip_whitespace();
      if (at(']')) break;
      if (!at(',')) fail("expected ',' or ']' in an array, found " + here());
      pos_++;
    }
    pos_++;
    return v;
  }

  Value object(int depth) {
    enter(depth);
    Value v = start(Kind::Object);
    expect('{');
    skip_whitespace();
    if (at('}')) {
      pos_++;
      return v;
    }
    // A hash set: a tokenizer's vocabulary is one object of 50,000 keys, and a tree's string
    // compares were a quarter of GPT-2's tokenizer load.
    std::unordered_set<std::string> keys;
    while (true) {
      skip_whitespace();
      if (!at('"')) fail("expected a key (a string) in an object, found " + here());
      Member m;
      m.key_offset = pos_;
      m.key = string();
      if (!keys.insert(m.key).second) {
        pos_ = m.key_offset;
        fail("duplicate key " + quote(m.key) + " in an object");
      }
      skip_whitespace();
      expect(':');
      skip_whitespace();
      m.value = value(depth + 1);
      v.members.push_back(std::move(m));
      skip_whitespace();
      if (at('}')) break;
      if (!at(',')) fail("expected ',' or '}' in an object, found " + here());
      pos_++;
    }
    pos_++;
    return v;
  }

  // number = [ '-' ] ( '0' | [1-9] digit* ) [ '.' digit+ ] [ ( 'e' | 'E' ) [ '+' | '-' ] digit+ ]
  Value number() {
    Value v = start(Kind::Number);
    const size_t first = pos_;
    if (at('-')) pos_++;
    auto digits = [&](const char* what) {
      if (pos_ >= doc_.size() || !is_digit(doc_[pos_]))
        fail(std::string("expected a digit ") + what + ", found " + here());
      while (pos_ < doc_.size() && is_digit(doc_[pos_])) pos_++;
    };
    if (at('0')) {
      pos_++;
      if (pos_ < doc_.size() && is_digit(doc_[pos_])) fail("a number with a leading zero");
    } else {
      digits("in a number");
    }
    if (at('.')) {
      pos_++;
      digits("after a decimal point");
    }
    if (at('e') || at('E')) {
      pos_++;
      if (at('+') || at('-')) pos_++;
      digits("in an exponent");
    }
    v.text = std::string(doc_.substr(first, pos_ - first));
    return v;
  }

  uint32_t hex4() {
    if (doc_.size() - pos_ < 4) {
      pos_ = doc_.size();
      fail("a \\u escape needs four hex digits, found the end of the document");
    }
    uint32_t code = 0;
    for (int k = 0; k < 4; k++, pos_++) {
      const char c = doc_[pos_];
      uint32_t digit = 0;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        fail("a \\u escape needs four hex digits, found " + here());
      code = code << 4 | digit;
    }
    return code;
  }

  // Decodes the string literal at pos_ into UTF-8.
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= doc_.size()) fail("a string is not terminated");
      const auto c = static_cast<unsigned char>(doc_[pos_]);
      if (c == '"') {
        pos_++;
        return out;
      }
      if (c == '\\') {
        escape(out);
      } else if (c < 0x20) {
        fail("a raw control character (" + here() + ") in a string");
      } else {
        const size_t length = utf8_sequence_length(doc_, pos_);
        if (length == 0) fail("invalid UTF-8 (" + here() + ") in a string");
        out.append(doc_.substr(pos_, length));
        pos_ += length;
      }
    }
  }

  void escape(std::string& out) {
    const size_t backslash = pos_;
    pos_++;  // the backslash
    if (pos_ >= doc_.size()) fail("a string is not terminated");
    const char c = doc_[pos_++];
    switch (c) {
      case '"':
        out += '"';
        return;
      case '\\':
        out += '\\';
        return;
      case '/':
        out += '/';
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'u':
        break;
      default:
        pos_--;
        fail("an unknown escape \\" + here() + " in a string");
    }
    uint32_t code = hex4();
    if (code >= 0xDC00 && code <= 0xDFFF) {
      pos_ = backslash;
      fail("a lone low surrogate \\u escape in a string");
    }
    if (code >= 0xD800 && code <= 0xDBFF) {
      // A high surrogate must be followed by a low one; the pair is one character.
      if (doc_.substr(pos_, 2) != "\\u") {
        pos_ = backslash;
        fail("a high surrogate \\u escape not followed by a low one in a string");
      }
      pos_ += 2;
      const uint32_t low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) {
        pos_ = backslash;
        fail("a high surrogate \\u escape not followed by a low one in a string");
      }
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, code);
  }

  std::string_view doc_;
  int max_depth_;
  size_t pos_ = 0;
};

}  // namespace

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::Null:
      return "null";
    case Kind::Bool:
      return "a boolean";
    case Kind::Number:
      return "a number";
    case Kind::String:
      return "a string";
    case Kind::Array:
      return "an array";
    case Kind::Object:
      return "an object";
  }
  return "a value";
}

const Value* Value::find(std::string_view key) const {
  for (const Member& m : members)
    if (m.key == key) return &m.value;
  return nullptr;
}

SyntaxError::SyntaxError(size_t offset, const std::string& reason)
    : Error("JSON syntax error at byte " + std::to_string(offset) + ": " + reason),
      offset_(offset),
      reason_(reason) {}

Value parse(std::string_view document, int max_depth) { return Parser(document, max_depth).document(); }

bool is_valid_utf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const size_t length = utf8_sequence_length(bytes, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace lazygrad::json
