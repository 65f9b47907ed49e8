// All-reduce as a lazy graph of copies and elementwise ops (docs/multi.md). Nothing here runs a
// kernel or moves a byte: the graph does, when the results are realized, scheduled like any other
// (a COPY node per hop between devices, an elementwise kernel per combine).
#include <atomic>
#include <cstdlib>
#include <set>
#include <string>

#include "lazygrad/error.h"
#include "lazygrad/multi.h"

namespace lazygrad {

namespace {

// Where the ring overtakes the naive way on in-process CPU devices: it never did below 64 MiB a
// shard (bench/all_reduce.cpp, 2026-12-04, Intel Xeon, 2 vCPUs; it tied at 64 MiB on 3 devices).
// Those devices share one memory, so the ring's smaller transfers save nothing and its extra
// launches cost; between devices with links of their own the ring's (n - 1) / n would count.
constexpr int64_t kRingMinBytes = int64_t{64} << 20;

std::atomic<int64_t>& ring_min_bytes() {
  static std::atomic<int64_t> bytes = [] {
    const char* v = std::getenv("LAZYGRAD_RING_MIN_BYTES");
    if (!v || !*v) return kRingMinBytes;
    try {
      return static_cast<int64_t>(std::stoll(v));
    } catch (const std::exception&) {
      throw Error(std::string("settings: LAZYGRAD_RING_MIN_BYTES=") + v + " is not an integer");
    }
  }();
  return bytes;
}

void check_shards(const std::vector<Tensor>& shards) {
  if (shards.empty()) throw Error("all_reduce: no tensors to reduce");
  std::set<std::string> devices;
  for (const Tensor& s : shards) {
    if (s.shape() != shards[0].shape() || s.dtype() != shards[0].dtype())
      throw Error("all_reduce: every shard must have one shape and dtype, got " +
                  shape_str(shards[0].shape()) + " " + std::string(dtype_name(shards[0].dtype())) + " and " +
                  shape_str(s.shape()) + " " + std::string(dtype_name(s.dtype())));
    if (!devices.insert(s.device()).second)
      throw Error("all_reduce: two shards are on " + s.device() + "; each device holds one");
  }
}

std::vector<Tensor> naive(const std::vector<Tensor>& shards, ReduceOp op) {
  std::vector<Tensor> out;
  for (const Tensor& target : shards) {
    // The same order on every device (shard 0 first), so every device gets the same bits.
    Tensor acc = shards[0].to(target.device());
    for (size_t j = 1; j < shards.size(); j++) acc = combine(acc, shards[j].to(target.device()), op);
    out.push_back(acc);
  }
  return out;
}

std::vector<Tensor> ring(const std::vector<Tensor>& shards, ReduceOp op) {
  const auto k = static_cast<int64_t>(shards.size());
  const int64_t n = shards[0].numel();
  std::vector<Tensor> flat;
  for (const Tensor& s : shards) flat.push_back(s.reshape({n}));
  auto device = [&](int64_t i) { return shards[static_cast<size_t>(i % k)].device(); };
  auto piece = [&](int64_t d, int64_t c) {
    auto [start, length] = split_rows(n, k, c);  // chunk c: the first n % k chunks one element longer
    return flat[static_cast<size_t>(d)].narrow(0, start, length);
  };
  // Reduce-scatter: chunk c starts on device c and moves one hop at a time, each device adding its
  // own piece, so after k - 1 hops device c + k - 1 holds all of chunk c.
  // All-gather: that whole chunk moves on around the ring, one hop at a time, to every device.
  std::vector<std::vector<Tensor>> gathered(static_cast<size_t>(k),
                                            std::vector<Tensor>(static_cast<size_t>(k)));
  for (int64_t c = 0; c < k; c++) {
    Tensor partial = piece(c, c);
    for (int64_t hop = 1; hop < k; hop++) {
      const int64_t d = (c + hop) % k;
      partial = combine(partial.to(device(d)), piece(d, c), op);
    }
    int64_t owner = (c + k - 1) % k;
    gathered[static_cast<size_t>(owner)][static_cast<size_t>(c)] = partial;
    for (int64_t hop = 1; hop < k; hop++) {
      const int64_t d = (owner + hop) % k;
      partial = partial.to(device(d));
      gathered[static_cast<size_t>(d)][static_cast<size_t>(c)] = partial;
    }
  }
  std::vector<Tensor> out;
  for (int64_t d = 0; d < k; d++)
    out.push_back(Tensor::cat(gathered[static_cast<size_t>(d)], 0).reshape(shards[0].shape()));
  return out;
}

}  // namespace

Tensor combine(const Tensor& a, const Tensor& b, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return a + b;
    case ReduceOp::Max:
      return a.maximum(b);
    case ReduceOp::Prod:
      return a * b;
  }
  throw Error("all_reduce: unknown ReduceOp");
}

int64_t ring_all_reduce_min_bytes() { return ring_min_bytes().load(); }
void set_ring_all_reduce_min_bytes(int64_t bytes) { ring_min_bytes() = bytes; }

std::vector<Tensor> all_reduce(const std::vector<Tensor>& shards, ReduceOp op, AllReduceAlgorithm algorithm) {
  check_shards(shards);
  const auto k = static_cast<int64_t>(shards.size());
  if (k == 1) return {shards[0]};
  const int64_t bytes = shards[0].numel() * static_cast<int64_t>(itemsize(shards[0].dtype()));
  // The ring needs a chunk for each device: fewer elements than devices go the naive way.
  const bool use_ring = shards[0].numel() >= k &&
                        (algorithm == AllReduceAlgorithm::Ring ||
                         (algorithm == AllReduceAlgorithm::Auto && bytes >= ring_all_reduce_min_bytes()));
  return use_ring ? ring(shards, op) : naive(shards, op);
}

}  // namespace lazygrad
