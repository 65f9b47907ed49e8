// Pattern rewrite rules as data: a rule is a pattern over UOps and a function that builds the
// replacement from the nodes the pattern named (or returns null: no change). tinygrad's idea.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/uop.h"

namespace lazygrad {

struct Pat {
  std::vector<Ops> ops;      // empty: any op
  std::vector<Pat> src;      // empty: any sources; else matched in order
  std::string_view name;     // bind the matched node under this name
  bool commutative = false;  // binary: also try the sources swapped
};

// Pattern helpers: any("x") matches anything, cnst("c") a CONST, op(Ops::ADD, {..}) an op.
inline Pat any(std::string_view name) { return Pat{{}, {}, name}; }
inline Pat cnst(std::string_view name) { return Pat{{Ops::CONST}, {}, name}; }
inline Pat op(Ops o, std::vector<Pat> src = {}, std::string_view name = {}) { return Pat{{o}, std::move(src), name}; }
inline Pat commute(Pat p) {
  p.commutative = true;
  return p;
}

class Binds {
 public:
  const UOpPtr& operator[](std::string_view name) const;
  void set(std::string_view name, const UOpPtr& u) { items_.emplace_back(name, u); }
  size_t size() const { return items_.size(); }
  void truncate(size_t n) { items_.resize(n); }

 private:
  std::vector<std::pair<std::string_view, UOpPtr>> items_;
};

struct Rule {
  Pat pat;
  std::function<UOpPtr(const Binds&, const UOpPtr& root)> fn;
};

class PatternMatcher {
 public:
  explicit PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) {}
  // The first rule that matches root and returns a node; null if none does.
  UOpPtr rewrite_once(const UOpPtr& root) const;

 private:
  std::vector<Rule> rules_;
};

// Rewrite every node bottom-up until no rule applies.
UOpPtr graph_rewrite(const UOpPtr& root, const PatternMatcher& pm);

}  // namespace lazygrad
