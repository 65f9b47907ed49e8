// Many devices in one process: all-reduce between tensors on different devices (docs/multi.md).
// Sharded tensors and data-parallel training build on this (issue 20).
#pragma once

#include <cstdint>
#include <vector>

#include "lazygrad/tensor.h"

namespace lazygrad {

enum class ReduceOp { Sum, Max };
// Naive: every device reduces every shard, copied to it whole ((n - 1) copies of the whole tensor
// into each device). Ring: reduce-scatter then all-gather around the ring of devices, each step
// moving a 1/n chunk ((n - 1) / n of the tensor into each device, twice). Auto: the ring from
// ring_all_reduce_min_bytes() per shard on, naive below.
enum class AllReduceAlgorithm { Auto, Naive, Ring };

// shards[i] (all of one shape and dtype, each on a device of its own) -> the sum or the maximum of
// all of them, one copy on each shard's device, in the same order. Lazy, like every op: realize
// the results together (lazygrad::realize) to run the copies and kernels as one schedule. Sums are
// taken in the shards' dtype, as NCCL's are (int8 wraps, bool is "any"); every device's result is
// the same bits, whichever the algorithm. Errors name the shapes, dtypes or devices that disagree.
std::vector<Tensor> all_reduce(const std::vector<Tensor>& shards, ReduceOp op = ReduceOp::Sum,
                               AllReduceAlgorithm algorithm = AllReduceAlgorithm::Auto);

// Where Auto switches to the ring (bytes per shard): 64 MiB, from bench/all_reduce.cpp's
// measurement on in-process CPU devices (docs/multi.md). LAZYGRAD_RING_MIN_BYTES or the setter
// changes it for the process.
int64_t ring_all_reduce_min_bytes();
void set_ring_all_reduce_min_bytes(int64_t bytes);

}  // namespace lazygrad
