// Sharded tensors (docs/multi.md): a Tensor whose device is a tuple of devices holds its value as a
// MULTI node, one part per device. Ops are recorded on the whole value, as on one device; autograd
// runs on that graph too. Before scheduling, lower_multi rewrites every graph that reads a MULTI into
// one graph per device: elementwise ops and reductions run on each part, a reduction across the
// sharded axis ends in an all-reduce, and movement ops stay local where the split survives them and
// move rows between devices (COPY nodes) where it does not.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/uop.h"

namespace lazygrad {

// The rows [lo, hi) of n that each of k devices holds along a sharded axis: n / k each, and the first
// n % k devices one more (numpy's array_split; split_rows, as DataParallel splits its batches).
std::vector<std::pair<int64_t, int64_t>> shard_bounds(int64_t n, size_t k);

// A device tuple as one string ("CPU,CPU:1": what Tensor::device() returns for a sharded tensor),
// and back.
std::string join_devices(const std::vector<std::string>& devices);
std::vector<std::string> split_devices(const std::string& devices);
inline bool is_device_tuple(const std::string& device) { return device.find(',') != std::string::npos; }

// u (the whole value; on device `from`, or floating when from is "", or sharded when from is a
// tuple) split along `axis` (-1: replicated) across `devices`: a MULTI whose part i is device i's rows,
// copied there when it is elsewhere. Errors name the shape and the devices.
UOpPtr shard_uop(const UOpPtr& u, const std::string& from, const std::vector<std::string>& devices,
                 int64_t axis);

// A MULTI whose parts are all views of buffers: a realized sharded tensor.
bool is_realized_multi(const UOp* u);

// The axis the parts of u (a graph that reads a MULTI) split after lowering; -1: replicated.
int64_t multi_axis(const UOpPtr& u);

// The targets with every graph that reads a MULTI rewritten per device: a target whose value is
// sharded becomes a MULTI whose parts read no MULTI; one that is not (a gather to one device) reads
// none. `assigns` gets each ASSIGN of a sharded tensor and the MULTI of its per-device ASSIGNs, so
// a graph built before the realize reads the written buffers instead of assigning twice.
std::vector<UOpPtr> lower_multi(const std::vector<UOpPtr>& targets,
                                std::vector<std::pair<UOpPtr, UOpPtr>>* assigns = nullptr);

}  // namespace lazygrad
