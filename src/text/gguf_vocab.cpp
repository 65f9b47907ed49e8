// Tokenizer::from_gguf_vocab (include/lazygrad/tokenizer.h): the tokenizer that a GGUF file's
// tokenizer.ggml.* arrays describe, as llama.cpp builds it. "llama" is SentencePiece's BPE by token
// score (llm_tokenizer_spm), "gpt2" byte-level BPE by merge rank with the pre-tokenizer `pre` names.
#include <climits>

#include "lazygrad/error.h"
#include "nn/json_reader.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace lazygrad {
namespace {

using text::TokenKind;
using text::TokenTable;

const std::string kWhere = "Tokenizer::from_gguf_vocab";

TokenTable token_table(const GGUFVocab& v) {
  if (v.tokens.empty()) throw Error(kWhere + ": tokenizer.ggml.tokens is empty");
  if (v.tokens.size() > size_t(INT32_MAX))
    throw Error(kWhere + ": tokenizer.ggml.tokens has " + std::to_string(v.tokens.size()) + " tokens");
  const size_t n = v.tokens.size();
  if (!v.token_types.empty() && v.token_types.size() != n)
    throw Error(kWhere + ": tokenizer.ggml.token_type has " + std::to_string(v.token_types.size()) +
                " entries for " + std::to_string(n) + " tokens");
  TokenTable t;
  t.tokens = v.tokens;
  t.kinds.assign(n, TokenKind::Normal);
  for (size_t id = 0; id < v.token_types.size(); ++id) {
    switch (v.token_types[id]) {
      case 1:  // normal
      case 5:  // unused
        break;
      case 2:
        t.kinds[id] = TokenKind::Unknown;
        break;
      case 3:
        t.kinds[id] = TokenKind::Special;
        break;
      case 4:
        t.kinds[id] = TokenKind::Added;
        break;
      case 6:
        t.kinds[id] = TokenKind::Byte;
        break;
      default:
        throw Error(kWhere + ": tokenizer.ggml.token_type[" + std::to_string(id) + "] is " +
                    std::to_string(v.token_types[id]) + ", not a type from 1 to 6");
    }
  }
  auto check = [&](int32_t id, const char* key) {
    if (id < -1 || id >= int64_t(n))
      throw Error(kWhere + ": " + key + " " + std::to_string(id) + " is not a token id (" +
                  std::to_string(n) + " tokens)");
    return id;
  };
  t.bos = check(v.bos_token_id, "tokenizer.ggml.bos_token_id");
  t.eos = check(v.eos_token_id, "tokenizer.ggml.eos_token_id");
  t.unknown = check(v.unknown_token_id, "tokenizer.ggml.unknown_token_id");
  if (v.add_bos) {
    if (t.bos < 0) throw Error(kWhere + ": tokenizer.ggml.add_bos_token is set but there is no bos_token_id");
    t.prefix = {t.bos};
  }
  if (v.add_eos) {
    if (t.eos < 0) throw Error(kWhere + ": tokenizer.ggml.add_eos_token is set but there is no eos_token_id");
    t.suffix = {t.eos};
  }
  return t;
}

}  // namespace

Tokenizer Tokenizer::from_gguf_vocab(const GGUFVocab& v) {
  TokenTable table = token_table(v);
  const size_t n = table.tokens.size();
  if (v.model == "llama") {
    if (v.scores.size() != n)
      throw Error(kWhere + ": tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                  " entries for " + std::to_string(n) + " tokens");
    if (v.token_types.empty()) {  // no types: the <0xXX> spellings are the byte tokens
      for (size_t id = 0; id < n; ++id) {
        const std::string& s = table.tokens[id];
        if (s.size() == 6 && s.starts_with("<0x") && s.back() == '>' &&
            s.find_first_not_of("0123456789ABCDEF", 3) == 5)
          table.kinds[id] = TokenKind::Byte;
      }
    }
    if (table.unknown < 0)
      for (size_t id = 0; id < n && table.unknown < 0; ++id)
        if (table.kinds[id] == TokenKind::Unknown) table.unknown = int32_t(id);
    table.index(kWhere + ": tokenizer.ggml.tokens");
    text::SentencePieceConfig c;
    c.table = std::move(table);
    c.prefix = v.add_space_prefix ? text::SentencePieceConfig::Prefix::EveryFragment
                                  : text::SentencePieceConfig::Prefix::None;
    c.strip_decoded_space = v.add_space_prefix;
    c.scores = v.scores;
    c.byte_fallback = true;
    return Tokenizer(text::make_sentencepiece(std::move(c), kWhere + ": tokenizer.ggml.tokens"));
  }
  if (v.model == "gpt2") {
    text::ByteLevelConfig c;
    if (v.pre == "llama-bpe" || v.pre == "llama3")
      c.patterns = {text::SplitPattern::Llama3};
    else if (v.pre.empty() || v.pre == "default" || v.pre == "gpt-2" || v.pre == "gpt2")
      c.patterns = {text::SplitPattern::Gpt2};
    else
      throw Error(kWhere + ": tokenizer.ggml.pre \"" + v.pre +
                  "\" is not supported (known: llama-bpe, llama3, gpt-2, default)");
    c.ignore_merges = c.patterns[0] == text::SplitPattern::Llama3;  // llama.cpp sets it for llama-bpe
    table.index(kWhere + ": tokenizer.ggml.tokens");
    const std::array<char32_t, 256> b2u = text::bytes_to_unicode();
    for (int b = 0; b < 256; ++b) {
      std::string s;
      text::append_utf8(s, b2u[b]);
      auto it = table.ids.find(s);
      if (it == table.ids.end())
        throw Error(kWhere + ": tokenizer.ggml.tokens lacks the token " + json::quote(s) + " of byte " +
                    std::to_string(b));
      c.byte_ids[b] = it->second;
    }
    if (v.merges.empty()) throw Error(kWhere + ": tokenizer.ggml.merges is empty (\"gpt2\" needs merges)");
    for (size_t rank = 0; rank < v.merges.size(); ++rank) {
      const std::string& m = v.merges[rank];
      size_t space = m.find(' ', 1);
      auto where = [&] {
        return kWhere + ": tokenizer.ggml.merges[" + std::to_string(rank) + "] " + json::quote(m);
      };
      if (space == std::string::npos || space + 1 >= m.size())
        throw Error(where() + " is not \"left right\"");
      std::string parts[3] = {m.substr(0, space), m.substr(space + 1),
                              m.substr(0, space) + m.substr(space + 1)};
      int32_t ids[3];
      for (int k = 0; k < 3; ++k) {
        auto it = table.ids.find(parts[k]);
        if (it == table.ids.end())
          throw Error(where() + ": " + json::quote(parts[k]) + (k == 2 ? " (the merge's result)" : "") +
                      " is not in tokenizer.ggml.tokens");
        ids[k] = it->second;
      }
      c.merges.try_emplace(text::pair_key(ids[0], ids[1]), int32_t(rank), ids[2]);  // the first rank wins
    }
    c.table = std::move(table);
    return Tokenizer(text::make_byte_level(std::move(c), kWhere + ": tokenizer.ggml.tokens"));
  }
  throw Error(kWhere + ": tokenizer.ggml.model \"" + v.model + "\" is not supported (known: llama, gpt2)");
}

}  // namespace lazygrad
