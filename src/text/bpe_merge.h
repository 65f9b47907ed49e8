// The merge loop of BPE, shared by the tokenizers: symbols (token ids) in a row; repeatedly merge
// the adjacent pair with the best priority (the lowest merge rank, or the highest score of the
// merged token as SentencePiece does), the leftmost of equal ones, until no pair can merge. This is
// the order of Hugging Face tokenizers, transformers.js, SentencePiece and llama.cpp alike. A linked
// list and a heap make it O(n log n) in the number of symbols.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace lazygrad::text {

struct Merge {
  double priority;  // lower merges first
  int32_t merged;   // the id of the result
};

// `ids` holds the symbols (-1: a symbol that never merges, such as an unknown character) and
// becomes the merged ones. find_merge(left, right) gives the pair's Merge or nothing.
template <class FindMerge>
void merge_symbols(std::vector<int32_t>& ids, const FindMerge& find_merge) {
  const int n = int(ids.size());
  if (n < 2) return;
  std::vector<int> next(n), prev(n);
  for (int i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i - 1;
  struct Candidate {
    double priority;
    int left;  // a symbol keeps the position of its first character, so this orders ties
    int32_t left_id, right_id, merged;
    bool operator<(const Candidate& o) const {  // the heap's top is the best: lowest priority, then left
      return priority != o.priority ? priority > o.priority : left > o.left;
    }
  };
  std::priority_queue<Candidate> queue;
  auto consider = [&](int left) {
    if (left < 0 || next[left] >= n) return;
    int32_t a = ids[left], b = ids[next[left]];
    if (a < 0 || b < 0) return;
    if (std::optional<Merge> m = find_merge(a, b)) queue.push({m->priority, left, a, b, m->merged});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  std::vector<char> alive(n, 1);
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    const int left = c.left, right = next[left];
    // Stale: either side has merged since (a merged token differs from both of its parts).
    if (!alive[left] || right >= n || ids[left] != c.left_id || ids[right] != c.right_id) continue;
    ids[left] = c.merged;
    alive[right] = 0;
    next[left] = next[right];
    if (next[right] < n) prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  int out = 0;
  for (int i = 0; i < n; i = next[i]) ids[out++] = ids[i];
  ids.resize(out);
}

}  // namespace lazygrad::text
