// Reading a Hugging Face config.json (GPT-2's, LLaMA's): the document as a JSON object, and its
// fields by type, each error naming the reader, the file, the field and the byte offset. A count
// must be an integer literal as Python's json reads one: `1e9` and `12.0` are floats there (HF's
// range(n_layer) would refuse them), so they are refused here too.
//
// Header-only and public API only.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/json.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace lazygrad::models {

// The JSON object of a config.json's text; a syntax error or another kind of value is a
// lazygrad::Error naming `reader` and `where` (the file).
inline json::Value parse_config_json(std::string_view text, const std::string& reader,
                                     const std::string& where) {
  json::Value doc;
  try {
    doc = json::parse(text);
  } catch (const json::SyntaxError& e) {
    throw Error(reader + ": " + where + ": not valid JSON: " + e.reason() + " (at byte " +
                std::to_string(e.offset()) + ")");
  }
  if (doc.kind != json::Kind::Object)
    throw Error(reader + ": " + where + ": expected a JSON object, found " +
                std::string(json::kind_name(doc.kind)));
  return doc;
}

// The whole text of the file at `path`.
inline std::string read_config_text(const std::string& path, const std::string& reader) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(reader + ": cannot open \"" + path + "\"");
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// Reads the fields of one JSON object, each message naming the reader ("LlamaConfig"), the
// document, the field and its byte offset. A field that is null reads as absent, as HF's None.
class ConfigFields {
 public:
  ConfigFields(const json::Value& object, std::string reader, std::string where)
      : object_(object), reader_(std::move(reader)), where_(std::move(where)) {}

  [[noreturn]] void fail(const json::Value& at, const std::string& what) const {
    throw Error(reader_ + ": " + where_ + ": " + what + " (at byte " + std::to_string(at.offset) + ")");
  }
  const json::Value* find(const char* key) const {
    const json::Value* v = object_.find(key);
    return v && v->kind != json::Kind::Null ? v : nullptr;
  }
  const json::Value& need(const char* key) const {
    const json::Value* v = find(key);
    if (!v) fail(object_, std::string("\"") + key + "\" is missing");
    return *v;
  }

  int64_t integer(const json::Value& v, const std::string& name) const {
    if (v.kind != json::Kind::Number)
      fail(v, "\"" + name + "\" must be an integer, found " + std::string(json::kind_name(v.kind)));
    if (v.text.find_first_of(".eE") != std::string::npos)
      fail(v,
           "\"" + name + "\" must be an integer, found " + v.text + " (a float, as Python's json reads it)");
    int64_t out = 0;
    const char* end = v.text.data() + v.text.size();
    const auto parsed = std::from_chars(v.text.data(), end, out);
    if (parsed.ec != std::errc() || parsed.ptr != end)
      fail(v, "\"" + name + "\" must be a 64-bit integer, found " + v.text);
    return out;
  }
  double number(const json::Value& v, const std::string& name) const {
    if (v.kind != json::Kind::Number)
      fail(v, "\"" + name + "\" must be a number, found " + std::string(json::kind_name(v.kind)));
    double out = 0;  // the JSON grammar has checked the literal: only its range can be wrong
    if (std::from_chars(v.text.data(), v.text.data() + v.text.size(), out).ec != std::errc())
      fail(v, "\"" + name + "\" is out of range: " + v.text);
    return out;
  }
  void read(const char* key, int64_t& out) const {
    if (const json::Value* v = find(key)) out = integer(*v, key);
  }
  void read(const char* key, double& out) const {
    if (const json::Value* v = find(key)) out = number(*v, key);
  }
  void read(const char* key, std::optional<int64_t>& out) const {
    if (const json::Value* v = object_.find(key))
      out = v->kind == json::Kind::Null ? std::nullopt : std::optional(integer(*v, key));
  }
  void read(const char* key, bool& out) const {
    if (const json::Value* v = find(key)) {
      if (v->kind != json::Kind::Bool) fail(*v, std::string("\"") + key + "\" must be true or false");
      out = v->boolean;
    }
  }
  std::optional<std::string> string(const char* key) const {
    const json::Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->kind != json::Kind::String)
      fail(*v,
           std::string("\"") + key + "\" must be a string, found " + std::string(json::kind_name(v->kind)));
    return v->text;
  }

 private:
  const json::Value& object_;
  std::string reader_, where_;
};

}  // namespace lazygrad::models
