#include "ir/rewrite.h"

#include <algorithm>
#include <unordered_map>

namespace lazygrad {

const UOpPtr& Binds::operator[](std::string_view name) const {
  for (const auto& [n, u] : items_)
    if (n == name) return u;
  throw Error("pattern: no node bound as '" + std::string(name) + "'");
}

namespace {
bool match(const Pat& p, const UOpPtr& u, Binds& b) {
  if (!p.ops.empty() && std::find(p.ops.begin(), p.ops.end(), u->op) == p.ops.end()) return false;
  if (!p.name.empty()) b.set(p.name, u);
  if (p.src.empty()) return true;
  if (p.src.size() != u->src.size()) return false;
  size_t mark = b.size();
  auto match_all = [&](bool swapped) {
    b.truncate(mark);
    for (size_t i = 0; i < p.src.size(); i++) {
      size_t j = swapped ? p.src.size() - 1 - i : i;
      if (!match(p.src[i], u->src[j], b)) return false;
    }
    return true;
  };
  return match_all(false) || (p.commutative && p.src.size() == 2 && match_all(true));
}
}  // namespace

UOpPtr PatternMatcher::rewrite_once(const UOpPtr& root) const {
  for (const Rule& r : rules_) {
    Binds b;
    if (match(r.pat, root, b))
      if (UOpPtr out = r.fn(b, root)) return out;
  }
  return nullptr;
}

UOpPtr graph_rewrite(const UOpPtr& root, const PatternMatcher& pm) {
  std::unordered_map<const UOp*, UOpPtr> done;
  std::function<UOpPtr(const UOpPtr&)> visit = [&](const UOpPtr& u) -> UOpPtr {
    if (auto it = done.find(u.get()); it != done.end()) return it->second;
    std::vector<UOpPtr> src;
    bool changed = false;
    for (const auto& s : u->src) {
      src.push_back(visit(s));
      changed |= src.back() != s;
    }
    UOpPtr cur = changed ? make_uop_with_shape(u->op, u->dtype, src, u->arg, u->shape) : u;
    for (int guard = 0; guard < 1000; guard++) {
      UOpPtr next = pm.rewrite_once(cur);
      if (!next || next == cur) break;
      cur = next == u ? next : visit(next);  // the replacement's new parts get rewritten too
    }
    done[u.get()] = cur;
    return cur;
  };
  return visit(root);
}

}  // namespace lazygrad
