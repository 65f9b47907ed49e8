// The Jit: call 1 runs the function (compiling what it needs), call 2 runs it again while recording
// every kernel launch, calls 3+ launch the recording with the new inputs' buffers swapped in.
#include "lazygrad/jit.h"

#include <algorithm>
#include <unordered_map>

#include "engine/jit_capture.h"
#include "engine/realize.h"
#include "engine/schedule.h"
#include "ir/variable_state.h"
#include "runtime/buffer.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

struct Jit::State {
  Fn fn;
  int calls = 0;
  Capture capture;
  std::vector<std::vector<const Buffer*>> input_buffers;  // as captured, by input position (a sharded
                                                          // input has one per part)
  std::vector<std::pair<Shape, DType>> input_types;
  std::vector<std::string> input_layouts;  // a replay's buffers must be where the captured ones were
  std::vector<UOpPtr> outputs;             // views of the captured output buffers
  uint64_t rng_start = 0, rng_used = 0;
  std::vector<std::pair<std::shared_ptr<VariableState>, int64_t>> rng_counters;  // with captured value
};

namespace {

// An input as realized, contiguous buffers of its own: one, or one per part of a sharded input
// (multi/shard.h); and where they are ("CPU", or the devices and the split axis).
struct InputBuffers {
  Tensor tensor;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::string layout;
};
InputBuffers as_buffers(const Tensor& t, size_t i) {
  require(t.defined(), "Jit: input " + std::to_string(i) + " is undefined");
  InputBuffers in{t.contiguous(), {}, ""};
  in.tensor.realize();
  UOpPtr u = in.tensor.uop();
  const bool sharded = u->op == Ops::MULTI;
  for (const UOpPtr& part : sharded ? u->src : std::vector<UOpPtr>{u}) {
    const UOp* b = contiguous_buffer_node(part.get());
    require(b != nullptr, "Jit: input " + std::to_string(i) + " is not a buffer after realize");
    in.buffers.push_back(b->as<std::shared_ptr<Buffer>>());
  }
  const auto& m = sharded ? u->as<MultiArg>() : MultiArg{};
  in.layout = sharded ? t.device() + (m.axis < 0 ? " (replicated)"
                                                 : " (split along axis " + std::to_string(m.axis) + ")")
                      : in.buffers[0]->device;
  return in;
}

// Tensors with an assign still pending: a BatchNorm's running statistics, a step counter.
std::vector<Tensor> pending_assigns() {
  std::vector<Tensor> out;
  for (auto& t : live_tensors())
    if (t->uop && t->uop->op == Ops::ASSIGN) out.push_back(Tensor(std::move(t)));
  return out;
}

// The step, and everything it left pending: its outputs and the state it updates lazily (a BatchNorm
// whose running statistics the step does not realize itself), so that a capture holds every write
// the step makes and a replay makes them all again.
std::vector<Tensor> run_eagerly(const Jit::Fn& fn, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out = fn(inputs);
  std::vector<Tensor> targets = out, pending = pending_assigns();
  targets.insert(targets.end(), pending.begin(), pending.end());
  realize(targets);
  return out;
}

}  // namespace

Jit::Jit(Fn fn) : state_(std::make_shared<State>()) { state_->fn = std::move(fn); }

int Jit::calls() const { return state_->calls; }

void Jit::on_replay(std::function<void()> hook) {
  if (Capture* c = current_capture()) c->replay_hooks.push_back(std::move(hook));
}
size_t Jit::captured_kernels() const { return state_->capture.items.size(); }

Jit::Captured Jit::captured() const {
  const State& s = *state_;
  require(s.calls >= 2,
          "Jit: nothing is captured before the second call (it has had " + std::to_string(s.calls) + ")");
  return {s.capture.items, s.input_buffers, s.input_types, s.outputs};
}

void Jit::reset() {
  Fn fn = state_->fn;
  state_ = std::make_shared<State>();
  state_->fn = std::move(fn);
}

std::vector<Tensor> Jit::operator()(const std::vector<Tensor>& inputs) {
  State& s = *state_;
  // This call's number. The first two count once they are done: one that fails on the way (bad
  // input, an error in fn, Ctrl-C) leaves the Jit as it was, so the next call runs or captures
  // again instead of replaying a capture that never was. A replay counts from its start.
  const int call = s.calls + 1;
  std::vector<Tensor> ins;
  std::vector<InputBuffers> bufs;
  for (size_t i = 0; i < inputs.size(); i++) {
    InputBuffers in = as_buffers(inputs[i], i);
    for (const auto& other : bufs)
      for (const auto& b : in.buffers)
        require(std::find(other.buffers.begin(), other.buffers.end(), b) == other.buffers.end(),
                "Jit: inputs " + std::to_string(i) + " and another share one buffer; pass distinct tensors");
    ins.push_back(in.tensor);
    bufs.push_back(std::move(in));
  }
  // Writes pending from before the step are not the step's: they run now, outside any capture.
  if (call <= 2)
    if (auto pending = pending_assigns(); !pending.empty()) realize(pending);
  if (call == 1) {
    std::vector<Tensor> out = run_eagerly(s.fn, ins);
    s.calls = call;
    return out;
  }

  if (call == 2) {
    // Capture: the same run, with every launch recorded.
    int64_t cow_before = copy_on_write_count();
    RngState& rng = rng_state();
    s.rng_start = rng.counter;
    std::vector<Tensor> out;
    set_capture(&s.capture);
    try {
      out = run_eagerly(s.fn, ins);
    } catch (...) {  // an error or Ctrl-C: nothing captured, and the next call captures again
      set_capture(nullptr);
      s.capture = Capture();
      throw;
    }
    set_capture(nullptr);
    s.rng_used = rng.counter - s.rng_start;
    if (copy_on_write_count() != cow_before) {
      s.capture = Capture();
      throw Error("Jit: the step updated a tensor of shape " + last_copy_on_write() +
                  " in place while a graph that no tensor holds (a UOp kept from C++) still read its old "
                  "contents, so the update went to a new buffer and a replay would read stale data; drop "
                  "that graph, or realize it, before the step writes the tensor");
    }
    for (size_t i = 0; i < ins.size(); i++) {
      s.input_buffers.emplace_back();
      for (const auto& b : bufs[i].buffers) s.input_buffers.back().push_back(b.get());
      s.input_types.emplace_back(ins[i].shape(), ins[i].dtype());
      s.input_layouts.push_back(bufs[i].layout);
    }
    for (const auto& t : out) s.outputs.push_back(t.uop());
    for (const auto& item : s.capture.items)
      for (const auto& v : item.vars)
        if (v->kind == VariableKind::RngCounter) s.rng_counters.emplace_back(v, v->bits.load());
    s.calls = call;
    return out;
  }

  // Replay.
  s.calls = call;
  require(ins.size() == s.input_types.size(), "Jit: captured with " + std::to_string(s.input_types.size()) +
                                                  " inputs, called with " + std::to_string(ins.size()));
  for (size_t i = 0; i < ins.size(); i++) {
    const auto& [shape, dtype] = s.input_types[i];
    require(ins[i].shape() == shape && ins[i].dtype() == dtype,
            "Jit: input " + std::to_string(i) + " was " + shape_str(shape) + " " +
                std::string(dtype_name(dtype)) + " when captured, now " + shape_str(ins[i].shape()) + " " +
                std::string(dtype_name(ins[i].dtype())));
  }
  for (size_t i = 0; i < ins.size(); i++)
    require(bufs[i].layout == s.input_layouts[i], "Jit: input " + std::to_string(i) + " was on " +
                                                      s.input_layouts[i] + " when captured, now on " +
                                                      bufs[i].layout);
  std::unordered_map<const Buffer*, std::shared_ptr<Buffer>> swap;
  for (size_t i = 0; i < ins.size(); i++)
    for (size_t k = 0; k < bufs[i].buffers.size(); k++) swap[s.input_buffers[i][k]] = bufs[i].buffers[k];
  KernelRun run;  // Ctrl-C stops the replay here, before anything has moved on, or before a kernel
  throw_if_interrupted("before the Jit replay");
  // Random draws continue from where the generator is now, with the current key.
  RngState& rng = rng_state();
  int64_t shift = static_cast<int64_t>(rng.counter - s.rng_start);
  for (auto& [state, captured] : s.rng_counters) state->bits = captured + shift;
  for (const auto& item : s.capture.items)
    for (const auto& v : item.vars)
      if (v->kind == VariableKind::RngKey) v->bits = static_cast<int64_t>(rng.key);
  rng.counter += s.rng_used;
  for (const auto& hook : s.capture.replay_hooks) hook();
  // A step whose hooks moved host state on (an optimizer's step count and bias corrections) goes to
  // its end once begun, so that state and the parameters it updates stay in step.
  if (!s.capture.replay_hooks.empty()) run.commit();
  // Every Variable position first: a bad one must stop the step before any kernel writes.
  for (const ExecItem& item : s.capture.items) check_var_bounds(item.name, item.vars, item.var_bounds);
  for (const ExecItem& item : s.capture.items) {
    bool swapped = false;
    for (const auto& b : item.buffers) swapped |= swap.count(b.get()) > 0;
    if (!swapped) {
      run.run(item);
      continue;
    }
    ExecItem with_inputs = item;
    for (auto& b : with_inputs.buffers)
      if (auto it = swap.find(b.get()); it != swap.end()) b = it->second;
    run.run(with_inputs);
  }
  run.finish();
  std::vector<Tensor> out;
  for (const auto& u : s.outputs) out.push_back(Tensor::from_uop(u));
  return out;
}

}  // namespace lazygrad
