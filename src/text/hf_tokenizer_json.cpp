// Tokenizer::from_hf_json (include/lazygrad/tokenizer.h): a Hugging Face tokenizer.json whose
// model is BPE, read into the config of a byte-level or a SentencePiece-style tokenizer. The parts
// are recognised by their "type"s: what is not one of the combinations LLaMA-family tokenizers use
// is an Error naming it, rather than a tokenizer that gives other ids than transformers would.
// bos/eos come from tokenizer_config.json beside the file when there is one, as transformers reads them.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lazygrad/error.h"
#include "nn/json_reader.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace lazygrad {
namespace {

using json::Kind;
using json::Value;
using text::TokenKind;

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁"

std::string read_whole(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("Tokenizer::from_hf_json: cannot open '" + path + "': not a file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in || in.bad()) throw Error("Tokenizer::from_hf_json: cannot read '" + path + "'");
  return std::move(buffer).str();
}

// Reads one file's values with messages that name the file, the field and its byte offset.
struct Reader {
  std::string path;

  [[noreturn]] void fail(const Value& v, const std::string& field, const std::string& what) const {
    throw Error("Tokenizer::from_hf_json: " + path + ": " + field + " (byte offset " +
                std::to_string(v.offset) + "): " + what);
  }
  const Value& member(const Value& obj, std::string_view key, const std::string& field, Kind kind) const {
    const Value* v = obj.find(key);
    if (!v) fail(obj, field, "has no \"" + std::string(key) + "\"");
    if (v->kind != kind)
      fail(
          *v, field + "." + std::string(key),
          "is " + std::string(json::kind_name(v->kind)) + ", expected " + std::string(json::kind_name(kind)));
    return *v;
  }
  // An optional member: null when absent or JSON null.
  const Value* optional(const Value& obj, std::string_view key) const {
    const Value* v = obj.kind == Kind::Object ? obj.find(key) : nullptr;
    return v && v->kind != Kind::Null ? v : nullptr;
  }
  bool flag(const Value& obj, std::string_view key, bool fallback, const std::string& field) const {
    const Value* v = optional(obj, key);
    if (!v) return fallback;
    if (v->kind != Kind::Bool) fail(*v, field + "." + std::string(key), "is not true or false");
    return v->boolean;
  }
  std::string string(const Value& obj, std::string_view key, const std::string& field) const {
    return member(obj, key, field, Kind::String).text;
  }
  int32_t id(const Value& v, const std::string& field) const {
    if (v.kind != Kind::Number || v.text.empty() || v.text.size() > 10 ||
        v.text.find_first_not_of("0123456789") != std::string::npos || std::stoll(v.text) > INT32_MAX)
      fail(v, field, "is not a token id (an integer from 0 to 2^31 - 1): " + v.text);
    return int32_t(std::stoll(v.text));
  }
  std::string type(const Value& obj, const std::string& field) const {
    if (obj.kind != Kind::Object) fail(obj, field, "is not an object");
    return string(obj, "type", field);
  }
};

// The components of a Sequence (normalizers, pretokenizers, decoders, processors), or the one given.
std::vector<const Value*> flatten(const Reader& r, const Value& v, const char* list_key,
                                  const std::string& field) {
  std::vector<const Value*> out;
  if (r.type(v, field) != "Sequence") {
    out.push_back(&v);
    return out;
  }
  const Value& items = r.member(v, list_key, field, Kind::Array);
  for (size_t i = 0; i < items.items.size(); ++i) {
    for (const Value* inner :
         flatten(r, items.items[i], list_key, field + "." + list_key + "[" + std::to_string(i) + "]"))
      out.push_back(inner);
  }
  return out;
}

int32_t lookup(const Reader& r, const text::TokenTable& t, const Value& at, const std::string& token,
               const std::string& field) {
  auto it = t.ids.find(token);
  if (it == t.ids.end()) r.fail(at, field, "the token " + json::quote(token) + " is not in the vocabulary");
  return it->second;
}

// bos_token / eos_token of tokenizer_config.json: a string or {"content": ...}.
std::string config_token(const Value& config, std::string_view key) {
  const Value* v = config.kind == Kind::Object ? config.find(key) : nullptr;
  if (!v) return "";
  if (v->kind == Kind::String) return v->text;
  if (v->kind == Kind::Object)
    if (const Value* c = v->find("content"); c && c->kind == Kind::String) return c->text;
  return "";
}

}  // namespace

Tokenizer Tokenizer::from_hf_json(const std::string& path) {
  const Reader r{path};
  Value root;
  {
    std::string document = read_whole(path);
    try {
      root = json::parse(document);
    } catch (const json::SyntaxError& e) {
      throw Error("Tokenizer::from_hf_json: " + path + ": invalid JSON at byte offset " +
                  std::to_string(e.offset()) + ": " + e.reason());
    }
  }
  if (root.kind != Kind::Object) r.fail(root, "the document", "is not an object");
  const Value& model = r.member(root, "model", "the document", Kind::Object);
  const Value* model_type = r.optional(model, "type");
  if (model_type && (model_type->kind != Kind::String || model_type->text != "BPE"))
    r.fail(*model_type, "model.type",
           "the model type " + json::quote(model_type->text) + " is not supported (only BPE is)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const Value* v = r.optional(model, key); v && !(v->kind == Kind::String && v->text.empty()))
      r.fail(*v, std::string("model.") + key, "is not supported");

  // ---- the vocabulary: model.vocab, then added_tokens (ids past it, or marking tokens of it) ----
  const Value& vocab = r.member(model, "vocab", "model", Kind::Object);
  const Value* added = r.optional(root, "added_tokens");
  // Every id below the largest must be some token's, so an id that is not below the number of
  // entries leaves one without a token: refused before the table grows to it (a single entry with
  // the id 2^31 - 1 would otherwise allocate gigabytes).
  const size_t entries =
      vocab.members.size() + (added && added->kind == Kind::Array ? added->items.size() : 0);
  text::TokenTable t;
  std::vector<bool> filled;
  auto place = [&](const Value& at, const std::string& token, int32_t id, const std::string& field) {
    if (size_t(id) >= entries)
      r.fail(at, field,
             "the id " + std::to_string(id) + " of " + json::quote(token) +
                 " is not below the number of tokens (" + std::to_string(entries) +
                 "), so some id has no token");
    if (size_t(id) >= t.tokens.size()) {
      t.tokens.resize(size_t(id) + 1);
      t.kinds.resize(size_t(id) + 1, TokenKind::Normal);
      filled.resize(size_t(id) + 1, false);
    }
    if (filled[id] && t.tokens[id] != token)
      r.fail(at, field,
             "the id " + std::to_string(id) + " is used twice, by " + json::quote(t.tokens[id]) + " and " +
                 json::quote(token));
    filled[id] = true;
    t.tokens[id] = token;
  };
  for (const json::Member& m : vocab.members)
    place(m.value, m.key, r.id(m.value, "model.vocab." + m.key), "model.vocab");
  struct Added {
    int32_t id;
    bool lstrip, rstrip;
  };
  if (added) {
    if (added->kind != Kind::Array) r.fail(*added, "added_tokens", "is not an array");
    for (size_t i = 0; i < added->items.size(); ++i) {
      const std::string field = "added_tokens[" + std::to_string(i) + "]";
      const Value& a = added->items[i];
      if (a.kind != Kind::Object) r.fail(a, field, "is not an object");
      const std::string content = r.string(a, "content", field);
      const int32_t id = r.id(r.member(a, "id", field, Kind::Number), field + ".id");
      if (auto it = vocab.find(content); it && r.id(*it, "model.vocab") != id)
        r.fail(a, field,
               json::quote(content) + " has id " + std::to_string(id) + " here and " + it->text +
                   " in model.vocab");
      if (r.flag(a, "single_word", false, field) || r.flag(a, "lstrip", false, field) ||
          r.flag(a, "rstrip", false, field))
        r.fail(a, field, "single_word, lstrip and rstrip are not supported");
      place(a, content, id, field);
      t.kinds[id] = r.flag(a, "special", false, field) ? TokenKind::Special : TokenKind::Added;
    }
  }
  for (size_t id = 0; id < filled.size(); ++id)
    if (!filled[id]) r.fail(vocab, "model.vocab", "no token has the id " + std::to_string(id));
  if (t.tokens.empty()) r.fail(vocab, "model.vocab", "is empty");

  // ---- what splits the text, which decides the kind ----
  std::vector<text::SplitPattern> patterns;
  bool byte_level = false;
  std::optional<text::SentencePieceConfig::Prefix> metaspace;
  if (const Value* pre = r.optional(root, "pre_tokenizer")) {
    for (const Value* p : flatten(r, *pre, "pretokenizers", "pre_tokenizer")) {
      const std::string type = r.type(*p, "pre_tokenizer");
      if (type == "ByteLevel") {
        byte_level = true;
        if (r.flag(*p, "add_prefix_space", false, "pre_tokenizer"))
          r.fail(*p, "pre_tokenizer", "ByteLevel with add_prefix_space is not supported");
        if (r.flag(*p, "use_regex", true, "pre_tokenizer")) patterns.push_back(text::SplitPattern::Gpt2);
      } else if (type == "Split") {
        const Value& pattern = r.member(*p, "pattern", "pre_tokenizer", Kind::Object);
        const Value* regex = pattern.find("Regex");
        if (!regex || regex->kind != Kind::String) r.fail(pattern, "pre_tokenizer.pattern", "is not a Regex");
        std::optional<text::SplitPattern> known = text::pattern_for_regex(regex->text);
        if (!known)
          r.fail(
              *regex, "pre_tokenizer.pattern.Regex",
              "the regex " + json::quote(regex->text) + " is not one of the known ones (GPT-2's, LLaMA 3's)");
        if (r.string(*p, "behavior", "pre_tokenizer") != "Isolated" ||
            r.flag(*p, "invert", false, "pre_tokenizer"))
          r.fail(*p, "pre_tokenizer", "only a Split with behavior Isolated and no invert is supported");
        patterns.push_back(*known);
      } else if (type == "Metaspace") {
        const Value* rep = r.optional(*p, "replacement");
        if (rep && rep->text != kSpace) r.fail(*rep, "pre_tokenizer.replacement", "is not \"▁\"");
        std::string scheme = "always";
        if (const Value* s = r.optional(*p, "prepend_scheme"); s && s->kind == Kind::String) scheme = s->text;
        bool add = r.flag(*p, "add_prefix_space", true, "pre_tokenizer") && scheme != "never";
        metaspace = !add                ? text::SentencePieceConfig::Prefix::None
                    : scheme == "first" ? text::SentencePieceConfig::Prefix::FirstUnlessPresent
                                        : text::SentencePieceConfig::Prefix::UnlessPresent;
      } else {
        r.fail(*p, "pre_tokenizer", "the pre-tokenizer type \"" + type + "\" is not supported");
      }
    }
  }
  // SentencePiece-style normalizer: Prepend "▁", then Replace " " by "▁".
  std::optional<text::SentencePieceConfig::Prefix> prepend;
  bool replaces_spaces = false;
  if (const Value* norm = r.optional(root, "normalizer")) {
    for (const Value* n : flatten(r, *norm, "normalizers", "normalizer")) {
      const std::string type = r.type(*n, "normalizer");
      if (type == "Prepend" && r.string(*n, "prepend", "normalizer") == kSpace && !replaces_spaces) {
        prepend = text::SentencePieceConfig::Prefix::EveryFragment;
      } else if (type == "Replace") {
        const Value& pattern = r.member(*n, "pattern", "normalizer", Kind::Object);
        const Value* s = pattern.find("String");
        if (!s || s->text != " " || r.string(*n, "content", "normalizer") != kSpace)
          r.fail(*n, "normalizer", "only a Replace of \" \" by \"▁\" is supported");
        replaces_spaces = true;
      } else {
        r.fail(*n, "normalizer", "the normalizer type \"" + type + "\" is not supported here");
      }
    }
  }

  // ---- merges: "left right" strings, or [left, right] pairs (tokenizers >= 0.20) ----
  t.index("Tokenizer::from_hf_json: " + path + ": model.vocab and added_tokens");
  const int32_t unknown = [&] {
    const Value* unk = r.optional(model, "unk_token");
    return unk ? lookup(r, t, *unk, unk->text, "model.unk_token") : -1;
  }();
  t.unknown = unknown;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;
  const Value& merge_list = r.member(model, "merges", "model", Kind::Array);
  for (size_t rank = 0; rank < merge_list.items.size(); ++rank) {
    const Value& m = merge_list.items[rank];
    const std::string field = "model.merges[" + std::to_string(rank) + "]";
    std::string left, right;
    if (m.kind == Kind::String) {
      size_t space = m.text.find(' ');
      if (space == std::string::npos || m.text.find(' ', space + 1) != std::string::npos)
        r.fail(m, field, json::quote(m.text) + " is not two tokens separated by a space");
      left = m.text.substr(0, space), right = m.text.substr(space + 1);
    } else if (m.kind == Kind::Array && m.items.size() == 2 && m.items[0].kind == Kind::String &&
               m.items[1].kind == Kind::String) {
      left = m.items[0].text, right = m.items[1].text;
    } else {
      r.fail(m, field, "is neither \"left right\" nor [left, right]");
    }
    int32_t a = lookup(r, t, m, left, field), b = lookup(r, t, m, right, field);
    int32_t merged = lookup(r, t, m, left + right, field + " (the merge's result)");
    merges.try_emplace(text::pair_key(a, b), int32_t(rank), merged);
  }

  // ---- what encode(add_special) puts around the ids: TemplateProcessing's "single" ----
  if (const Value* post = r.optional(root, "post_processor")) {
    for (const Value* p : flatten(r, *post, "processors", "post_processor")) {
      const std::string type = r.type(*p, "post_processor");
      if (type == "ByteLevel") continue;  // offsets only
      if (type != "TemplateProcessing")
        r.fail(*p, "post_processor", "the post-processor type \"" + type + "\" is not supported");
      const Value& single = r.member(*p, "single", "post_processor", Kind::Array);
      bool seen_sequence = false;
      for (const Value& item : single.items) {
        if (const Value* s = item.kind == Kind::Object ? item.find("SpecialToken") : nullptr) {
          const std::string token = r.string(*s, "id", "post_processor.single.SpecialToken");
          int32_t id = lookup(r, t, *s, token, "post_processor.single.SpecialToken");
          (seen_sequence ? t.suffix : t.prefix).push_back(id);
        } else if (item.kind == Kind::Object && item.find("Sequence")) {
          seen_sequence = true;
        } else {
          r.fail(item, "post_processor.single", "is neither a SpecialToken nor a Sequence");
        }
      }
    }
  }
  // bos / eos: tokenizer_config.json beside the file, else the template's first token and the usual names.
  {
    const std::filesystem::path config_path =
        std::filesystem::path(path).parent_path() / "tokenizer_config.json";
    std::error_code ec;
    Value config;
    if (std::filesystem::is_regular_file(config_path, ec)) {
      try {
        config = json::parse(read_whole(config_path.string()));
      } catch (const json::SyntaxError& e) {
        throw Error("Tokenizer::from_hf_json: " + config_path.string() + ": invalid JSON at byte offset " +
                    std::to_string(e.offset()) + ": " + e.reason());
      }
    }
    auto find = [&](std::initializer_list<std::string> names) {
      for (const std::string& name : names)
        if (auto it = t.ids.find(name); !name.empty() && it != t.ids.end()) return it->second;
      return int32_t(-1);
    };
    t.bos = find({config_token(config, "bos_token")});
    if (t.bos < 0) t.bos = t.prefix.empty() ? find({"<s>", "<|begin_of_text|>"}) : t.prefix.front();
    t.eos = find({config_token(config, "eos_token"), "</s>", "<|end_of_text|>", "<|endoftext|>"});
  }

  const std::string where = "Tokenizer::from_hf_json: " + path;
  const bool ignore_merges = r.flag(model, "ignore_merges", false, "model");
  if (byte_level) {
    if (r.optional(root, "normalizer"))
      r.fail(*root.find("normalizer"), "normalizer", "is not supported with ByteLevel");
    text::ByteLevelConfig c;
    const std::array<char32_t, 256> b2u = text::bytes_to_unicode();
    for (int b = 0; b < 256; ++b) {
      std::string s;
      text::append_utf8(s, b2u[b]);
      c.byte_ids[b] = lookup(r, t, vocab, s, "model.vocab (the token of byte " + std::to_string(b) + ")");
    }
    c.table = std::move(t);
    c.merges = std::move(merges);
    c.patterns = std::move(patterns);
    c.ignore_merges = ignore_merges;
    return Tokenizer(text::make_byte_level(std::move(c), where));
  }
  if (!replaces_spaces && !metaspace)
    r.fail(root, "the document",
           "is neither byte-level (a ByteLevel pre-tokenizer) nor SentencePiece-style (a normalizer that "
           "replaces "
           "\" \" by \"▁\", or a Metaspace pre-tokenizer)");
  text::SentencePieceConfig c;
  c.byte_fallback = r.flag(model, "byte_fallback", false, "model");
  if (c.byte_fallback)
    for (size_t id = 0; id < t.tokens.size(); ++id) {
      const std::string& s = t.tokens[id];
      if (t.kinds[id] == TokenKind::Normal && s.size() == 6 && s.starts_with("<0x") && s.back() == '>' &&
          s.find_first_not_of("0123456789ABCDEF", 3) == 5)
        t.kinds[id] = TokenKind::Byte;
    }
  if (unknown >= 0 && t.kinds[unknown] == TokenKind::Normal) t.kinds[unknown] = TokenKind::Unknown;
  c.prefix = metaspace ? *metaspace : prepend.value_or(text::SentencePieceConfig::Prefix::None);
  c.strip_decoded_space = c.prefix != text::SentencePieceConfig::Prefix::None;
  c.table = std::move(t);
  c.merges = std::move(merges);
  if (c.merges.empty()) r.fail(merge_list, "model.merges", "is empty");
  c.fuse_unknown = r.flag(model, "fuse_unk", false, "model");
  c.ignore_merges = ignore_merges;
  return Tokenizer(text::make_sentencepiece(std::move(c), where));
}

}  // namespace lazygrad
