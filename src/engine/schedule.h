// The scheduler: from the tensors being realized to an ordered list of kernels.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/kernel.h"

namespace lazygrad {

struct Schedule {
  std::vector<Kernel> kernels;  // in execution order
  // What each realized target is now: a view of its buffer.
  std::unordered_map<const UOp*, UOpPtr> becomes;
  // The assigns this schedule runs, with their buffers' views: once the kernels ran, a graph still
  // holding one reads the buffer instead of applying it again (remember_realized).
  std::vector<std::pair<UOpPtr, UOpPtr>> computed;
};

// After a schedule ran: its computed nodes read as their buffers from now on, in any graph.
void remember_realized(const std::vector<std::pair<UOpPtr, UOpPtr>>& computed);

// `devices[i]`: where targets[i] is computed (kernels that read no buffer run there; the others run
// where their buffers are, which the frontend keeps on one device). `passive`: graphs whose
// references to the targets' nodes are not readers (see realize_uops). No devices: every target on
// the default device (tests).
Schedule create_schedule(const std::vector<UOpPtr>& targets, const std::vector<std::string>& devices = {},
                         const std::vector<UOpPtr>& passive = {});

// How many assigns so far wrote a new buffer instead of their target's (copy-on-write: a graph that
// no tensor holds still reads the old contents; realize() computes the tensors that do before the
// write); the Jit refuses to capture a step that does, since its replays would keep reading the old
// buffer.
int64_t copy_on_write_count();
std::string last_copy_on_write();  // the shape and dtype of the tensor the last such assign wrote

// A BUFFER node over b, viewed with `shape` (a RESHAPE when shape is not 1-D).
UOpPtr buffer_view(const std::shared_ptr<Buffer>& b, const Shape& shape);
// The BUFFER under a chain of reshapes (a contiguous view of the whole buffer), or null.
const UOp* contiguous_buffer_node(const UOp* u);

}  // namespace lazygrad
