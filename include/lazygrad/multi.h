// Many devices in one process: all-reduce between tensors on different devices (docs/multi.md).
// Sharded tensors and data-parallel training build on this (issue 20).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lazygrad/tensor.h"

namespace lazygrad::nn {
class Module;
}

namespace lazygrad {

enum class ReduceOp { Sum, Max, Prod };
// Naive: every device reduces every shard, copied to it whole ((n - 1) copies of the whole tensor
// into each device). Ring: reduce-scatter then all-gather around the ring of devices, each step
// moving a 1/n chunk ((n - 1) / n of the tensor into each device, twice). Auto: the ring from
// ring_all_reduce_min_bytes() per shard on, naive below.
enum class AllReduceAlgorithm { Auto, Naive, Ring };

// shards[i] (all of one shape and dtype, each on a device of its own) -> the sum, the maximum or
// the product of all of them, one copy on each shard's device, in the same order. Lazy, like every
// op: realize the results together (lazygrad::realize) to run the copies and kernels as one
// schedule. Sums are taken in the shards' dtype, as NCCL's are (int8 wraps, bool is "any"); every
// device's result is the same bits, whichever the algorithm. Errors name the shapes, dtypes or
// devices that disagree.
std::vector<Tensor> all_reduce(const std::vector<Tensor>& shards, ReduceOp op = ReduceOp::Sum,
                               AllReduceAlgorithm algorithm = AllReduceAlgorithm::Auto);

// Where Auto switches to the ring (bytes per shard): 64 MiB, from bench/all_reduce.cpp's
// measurement on in-process CPU devices (docs/multi.md). LAZYGRAD_RING_MIN_BYTES or the setter
// changes it for the process.
int64_t ring_all_reduce_min_bytes();
void set_ring_all_reduce_min_bytes(int64_t bytes);

// a op b, elementwise and lazy, in their dtype: a + b, a.maximum(b) or a * b. What every all-reduce
// (these, and lazygrad::mpi's across processes) combines two parts with.
Tensor combine(const Tensor& a, const Tensor& b, ReduceOp op);

// Rows [start, start + length) of `rows` for part `part` of `parts`: the first rows % parts parts get
// one row more. How DataParallel::scatter splits a batch between devices, and `lazygrad train --ddp`
// between MPI ranks.
std::pair<int64_t, int64_t> split_rows(int64_t rows, int64_t parts, int64_t part);

// Data-parallel training in one process: a replica of the model on each device, each batch split
// along its first axis across them, and every gradient all-reduced before the optimizers step, so
// the replicas stay identical and the step equals one device's on the whole batch (docs/multi.md).
//
//   DataParallel dp(make_model, {"CPU", "CPU:1"});
//   for each replica i: Tensor loss_i = loss_fn(dp.replica(i)(xs[i]), ys[i]) * dp.share(i);
//   loss_i.backward(); dp.all_reduce_gradients();   then each replica's optimizer steps (one optimizer per
//   replica)
class DataParallel {
 public:
  // make() builds the model once per device; every replica starts from the first one's values.
  DataParallel(const std::function<std::shared_ptr<nn::Module>()>& make, std::vector<std::string> devices);

  size_t size() const { return replicas_.size(); }
  const std::vector<std::string>& devices() const { return devices_; }
  nn::Module& replica(size_t i) const { return *replicas_.at(i); }
  std::shared_ptr<nn::Module> replica_ptr(size_t i) const { return replicas_.at(i); }

  // The rows of `batch` for each device (the first B % n devices get one row more), moved there. A
  // batch with fewer rows than devices is an Error naming both.
  std::vector<Tensor> scatter(const Tensor& batch) const;
  // Device i's share of a batch of `rows`: its rows over all of them. Scaling replica i's mean loss
  // by it makes the all-reduced gradient the whole batch's mean-loss gradient.
  double share(size_t i, int64_t rows) const;
  // Every parameter's gradient becomes the sum of the replicas' (lazy; a parameter no backward
  // reached on some replica counts zeros there).
  void all_reduce_gradients(AllReduceAlgorithm algorithm = AllReduceAlgorithm::Auto) const;

  // The forward and backward half of a step: the batch scattered, each replica's mean loss
  // (loss(replica, inputs_i, targets_i)) scaled by its share and backward, the gradients
  // all-reduced. Returns the whole batch's mean loss on the first device (lazy); the optimizers'
  // step is the caller's.
  using LossFn = std::function<Tensor(nn::Module& replica, const Tensor& inputs, const Tensor& targets)>;
  Tensor backward(const Tensor& inputs, const Tensor& targets, const LossFn& loss) const;

 private:
  std::vector<std::string> devices_;
  std::vector<std::shared_ptr<nn::Module>> replicas_;
};

}  // namespace lazygrad
