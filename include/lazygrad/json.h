// A strict JSON reader (RFC 8259) for small documents from untrusted files: the header of a
// safetensors checkpoint, a Hugging Face config.json or model.safetensors.index.json. Public because
// models/ (header-only, public API only) read config files with it. Strict because a lenient reader
// would accept files that other readers reject: no comments, no trailing commas, no leading zeros,
// no raw control characters in strings, only valid UTF-8, no lone surrogates, and no duplicate keys
// in an object (RFC 8259 leaves their meaning open, so two readers could see two different
// checkpoints in one file).
//
// Every value remembers the byte offset where it starts, so a caller that rejects a well-formed
// value (a negative size, an unknown dtype) can say where it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lazygrad/error.h"

namespace lazygrad::json {

enum class Kind { Null, Bool, Number, String, Array, Object };

std::string_view kind_name(Kind kind);  // "null", "a number", "an object", ... for messages

struct Member;

struct Value {
  Kind kind = Kind::Null;
  size_t offset = 0;            // where the value starts in the document
  bool boolean = false;         // Bool
  std::string text;             // String: the decoded UTF-8; Number: the literal as written
  std::vector<Value> items;     // Array
  std::vector<Member> members;  // Object, in document order; keys are unique

  const Value* find(std::string_view key) const;  // an Object's member, or null
};

struct Member {
  std::string key;
  size_t key_offset = 0;  // where the key's opening quote is
  Value value;
};

// The document is not valid JSON; offset is where the reader stopped.
class SyntaxError : public Error {
 public:
  SyntaxError(size_t offset, const std::string& reason);
  size_t offset() const { return offset_; }
  const std::string& reason() const { return reason_; }

 private:
  size_t offset_;
  std::string reason_;
};

// Nesting deeper than max_depth is rejected, so a hostile document cannot exhaust the stack.
Value parse(std::string_view document, int max_depth = 64);

// Whether bytes are valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF), as a JSON
// document must be. Writers use it to refuse names that would make an unreadable file.
bool is_valid_utf8(std::string_view bytes);

// A JSON string literal for s, with its quotes, escaped as serde_json and Python's json write it:
// '"' and '\' with a backslash, \b \f \n \r \t, other control characters as \u00xx, everything
// else (UTF-8 included) as is.
std::string quote(std::string_view s);

}  // namespace lazygrad::json
