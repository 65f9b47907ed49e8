// TokenTable (text/tokenizer_impl.h): the vocabulary of a BPE tokenizer and the special tokens
// that encode finds in a text.
#include <algorithm>

#include "lazygrad/error.h"
#include "nn/json_reader.h"
#include "text/tokenizer_impl.h"

namespace lazygrad::text {

void TokenTable::index(const std::string& where) {
  ids.clear();
  ids.reserve(tokens.size());
  for (auto& list : specials_by_first_byte_) list.clear();
  for (size_t id = 0; id < tokens.size(); ++id) {
    auto [it, inserted] = ids.emplace(tokens[id], int32_t(id));
    if (!inserted)
      throw Error(where + ": the token " + json::quote(tokens[id]) + " has two ids, " +
                  std::to_string(it->second) + " and " + std::to_string(id));
    if ((kinds[id] == TokenKind::Special || kinds[id] == TokenKind::Added) && !tokens[id].empty())
      specials_by_first_byte_[static_cast<unsigned char>(tokens[id][0])].push_back(int32_t(id));
  }
  for (auto& list : specials_by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [&](int32_t a, int32_t b) { return tokens[a].size() > tokens[b].size(); });
}

std::vector<Fragment> TokenTable::fragments(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    int32_t found = -1;
    for (int32_t id : specials_by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const std::string& t = tokens[id];
      if ((parse_special || kinds[id] == TokenKind::Added) && text.compare(i, t.size(), t) == 0) {
        found = id;
        break;
      }
    }
    if (found < 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    out.push_back({std::string_view(), found});
    i += tokens[found].size();
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
  return out;
}

void TokenTable::check_id(int32_t id, const char* op, size_t at) const {
  if (id < 0 || size_t(id) >= tokens.size())
    throw Error(std::string("Tokenizer.") + op + ": id " + std::to_string(id) +
                (at == kNoPosition ? std::string() : " at position " + std::to_string(at)) +
                " is not in the vocabulary of " + std::to_string(tokens.size()) + " tokens");
}

}  // namespace lazygrad::text
