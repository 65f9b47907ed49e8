// nn::Module: registration of parameters, buffers and child modules, the walks over them in
// PyTorch's order (named_parameters, state_dict), loading a state dict, train/eval and printing.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <typeinfo>
#include <unordered_set>

#include "engine/schedule.h"
#include "lazygrad/nn.h"
#include "lazygrad/optim.h"
#include "nn/require.h"
#include "tensor/tensor_impl.h"

namespace lazygrad::nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Quoted and comma-separated, as PyTorch lists keys: "a", "b".
std::string quoted_list(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); i++) s += (i ? ", \"" : "\"") + keys[i] + "\"";
  return s;
}

// Every line after the first indented by `spaces` (PyTorch's _addindent).
std::string indent_tail(const std::string& text, int spaces) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out.append(static_cast<size_t>(spaces), ' ');
  }
  return out;
}

}  // namespace

Tensor Module::forward(const Tensor&) {
  throw Error(type_name() + "::forward: this module has no forward(const Tensor&)" +
              " (a container such as ModuleList is not called; call the modules it holds)");
}

// ---- registration ----

void Module::check_new_name(const std::string& name, const char* kind) const {
  std::string fn = std::string("register_") + kind;
  require(!name.empty(), fn + ": " + kind + " name can't be empty");
  require(name.find('.') == std::string::npos,
          fn + ": " + kind + " name can't contain \".\", got \"" + name + "\"");
  auto has = [&](const auto& entries) {
    return std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e.first == name; });
  };
  std::string kinds[3] = {"parameter", "buffer", "module"};
  bool found[3] = {has(parameters_), has(buffers_), has(children_)};
  for (int k = 0; k < 3; k++)
    require(!found[k] || kinds[k] == kind,
            fn + ": attribute \"" + name + "\" already exists as a " + kinds[k] + " of " + type_name());
}

namespace {
// Replaces the entry called `name` in place (it keeps its position, as in PyTorch), or appends one.
template <class V>
void upsert(std::vector<std::pair<std::string, V>>& entries, const std::string& name, V value) {
  for (auto& e : entries)
    if (e.first == name) {
      e.second = std::move(value);
      return;
    }
  entries.emplace_back(name, std::move(value));
}
}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor param, bool requires_grad) {
  check_new_name(name, "parameter");
  if (param.defined()) {
    require(!requires_grad || is_float(param.dtype()),
            "register_parameter: parameter \"" + name + "\" must be floating point to require grad, got " +
                std::string(dtype_name(param.dtype())) + " (pass requires_grad = false)");
    // A parameter is a leaf of its own (PyTorch's nn.Parameter(t) takes t's data, not its history).
    if (param.requires_grad() && !param.is_leaf()) param = param.detach();
    param.requires_grad(requires_grad);
    if (!param.is_realized()) param.realize();
  }
  upsert(parameters_, name, param);
  return param;
}

Tensor Module::register_buffer(const std::string& name, Tensor buffer, bool persistent) {
  check_new_name(name, "buffer");
  if (buffer.defined() && !buffer.is_realized()) buffer.realize();
  upsert(buffers_, name, BufferEntry{buffer, persistent});
  return buffer;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  require(module != nullptr, "register_module: module \"" + name + "\" is null");
  require(module.get() != this, "register_module: a module cannot be its own child (\"" + name + "\")");
  upsert(children_, name, std::move(module));
}

// ---- walks ----

std::vector<std::pair<std::string, const Module*>> Module::named_modules(const std::string& prefix) const {
  std::vector<std::pair<std::string, const Module*>> out;
  std::unordered_set<const Module*> seen;
  std::function<void(const Module&, const std::string&)> visit = [&](const Module& m, const std::string& p) {
    if (!seen.insert(&m).second) return;
    out.emplace_back(p, &m);
    for (const auto& [name, child] : m.children_) visit(*child, join_name(p, name));
  };
  visit(*this, prefix);
  return out;
}

NamedTensors Module::named_parameters(const std::string& prefix, bool recurse) const {
  NamedTensors out;
  std::unordered_set<const TensorImpl*> seen;
  auto modules =
      recurse ? named_modules(prefix) : std::vector<std::pair<std::string, const Module*>>{{prefix, this}};
  for (const auto& [module_prefix, module] : modules)
    for (const auto& [name, t] : module->parameters_)
      if (t.defined() && seen.insert(t.impl().get()).second)
        out.emplace_back(join_name(module_prefix, name), t);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters("", recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(const std::string& prefix, bool recurse) const {
  NamedTensors out;
  std::unordered_set<const TensorImpl*> seen;
  auto modules =
      recurse ? named_modules(prefix) : std::vector<std::pair<std::string, const Module*>>{{prefix, this}};
  for (const auto& [module_prefix, module] : modules)
    for (const auto& [name, entry] : module->buffers_)
      if (entry.tensor.defined() && seen.insert(entry.tensor.impl().get()).second)
        out.emplace_back(join_name(module_prefix, name), entry.tensor);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers("", recurse)) out.push_back(t);
  return out;
}

NamedModules Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, child] : children_) out.push_back(child);
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
  return *this;
}

// ---- state dict ----

bool loads_into(DType from, DType to) {
  if (from == to) return true;
  if (is_float(to)) return is_float(from);
  if (!is_int(to) || !is_int(from)) return false;
  // Every value of `from` fits: unsigned into unsigned of at least its width or signed of more,
  // signed into signed of at least its width.
  if (is_unsigned(from)) return bit_width(to) >= bit_width(from) + (is_unsigned(to) ? 0 : 1);
  return !is_unsigned(to) && bit_width(to) >= bit_width(from);
}

// PyTorch's state_dict walk: own parameters, own persistent buffers, then each child under
// "<prefix><name>.". Unlike named_parameters it does not deduplicate: a module registered twice
// has its entries under both names.
void Module::collect_state(const std::string& prefix, NamedTensors& out) const {
  for (const auto& [name, t] : parameters_)
    if (t.defined()) out.emplace_back(join_name(prefix, name), t);
  for (const auto& [name, entry] : buffers_)
    if (entry.tensor.defined() && entry.persistent) out.emplace_back(join_name(prefix, name), entry.tensor);
  for (const auto& [name, child] : children_) child->collect_state(join_name(prefix, name), out);
}

void Module::collect_optional_state(const std::string& prefix, std::vector<std::string>& out) const {
  for (const std::string& name : optional_state_names()) out.push_back(join_name(prefix, name));
  for (const auto& [name, child] : children_) child->collect_optional_state(join_name(prefix, name), out);
}

NamedTensors Module::ordered_state_dict() const {
  NamedTensors state;
  collect_state("", state);
  std::vector<Tensor> pending;
  for (const auto& [key, t] : state) pending.push_back(t);
  lazygrad::realize(pending);  // the values now, not a graph that an update could still change
  for (auto& [key, t] : state) t = t.detach();
  return state;
}

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [key, t] : ordered_state_dict()) out.emplace(key, t);
  return out;
}

IncompatibleKeys Module::load_state_dict(const StateDict& state_dict, bool strict, bool assign) {
  NamedTensors own;
  collect_state("", own);
  std::vector<std::string> optional;
  collect_optional_state("", optional);
  std::set<std::string> own_keys, optional_keys(optional.begin(), optional.end());

  IncompatibleKeys result;
  std::vector<std::string> mismatches;
  for (const auto& [key, target] : own) {
    own_keys.insert(key);
    auto it = state_dict.find(key);
    if (it == state_dict.end()) {
      if (!optional_keys.count(key)) result.missing_keys.push_back(key);
      continue;
    }
    const Tensor& value = it->second;
    require(value.defined(), "load_state_dict: the value of \"" + key + "\" is an undefined tensor");
    if (value.shape() != target.shape())
      mismatches.push_back("size mismatch for " + key + ": copying a param with shape " +
                           shape_str(value.shape()) + " from checkpoint, the shape in current model is " +
                           shape_str(target.shape()) + ".");
    if (!loads_into(value.dtype(), target.dtype()))
      mismatches.push_back("dtype mismatch for " + key + ": copying a param of dtype " +
                           std::string(dtype_name(value.dtype())) +
                           " from checkpoint, the dtype in current " + "model is " +
                           std::string(dtype_name(target.dtype())) + " (" +
                           (is_float(target.dtype()) ? "only floating-point values are converted to it"
                                                     : "it cannot hold every value") +
                           ").");
  }
  for (const auto& [key, value] : state_dict)
    if (!own_keys.count(key)) result.unexpected_keys.push_back(key);

  std::vector<std::string> errors;
  if (strict && !result.missing_keys.empty())
    errors.push_back("Missing key(s) in state_dict: " + quoted_list(result.missing_keys) + ". ");
  if (strict && !result.unexpected_keys.empty())
    errors.push_back("Unexpected key(s) in state_dict: " + quoted_list(result.unexpected_keys) + ". ");
  errors.insert(errors.end(), mismatches.begin(), mismatches.end());
  if (!errors.empty()) {
    std::string msg = "load_state_dict: Error(s) in loading state_dict for " + type_name() + ":";
    for (const std::string& e : errors) msg += "\n\t" + e;
    throw Error(msg + "\n(nothing was loaded)");
  }

  // The values are state, not computation: no gradient graph may connect them to the module.
  NoGrad no_grad;
  std::vector<Tensor> written;
  for (auto& [key, target] : own) {
    auto it = state_dict.find(key);
    if (it == state_dict.end()) continue;
    Tensor t = target;  // a handle: the assign writes the module's tensor
    const UOpPtr value = it->second.uop();
    // The module's tensors stay on their device (as torch's copy_ into them). With assign, on the
    // same device the module's tensor reads the checkpoint's buffer; on another (a checkpoint read on
    // the CPU, a model on a GPU) one copy of it, straight into its new buffer. No gradient graph.
    if (assign && it->second.dtype() == t.dtype() && !t.impl()->base && contiguous_buffer_node(value.get()))
      t.impl()->uop = it->second.device() == t.device() ? value : it->second.to(t.device()).uop();
    else
      t.assign(it->second.detach());
    written.push_back(t);
  }
  lazygrad::realize(written);
  return result;
}

// ---- modes, gradients, printing ----

void Module::train(bool mode) {
  training_ = mode;
  for (auto& [name, child] : children_) child->train(mode);
}

Module& Module::to(const std::string& device) {
  for (const Tensor& p : parameters()) move_to_device(p, device);
  for (const Tensor& b : buffers()) move_to_device(b, device);
  return *this;
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.zero_grad();
}

MemoryFootprint Module::memory_footprint(const optim::Optimizer* optimizer) const {
  MemoryFootprint f;
  std::unordered_set<const void*> mine;
  for (const Tensor& p : parameters()) {
    mine.insert(p.impl().get());
    f.parameters += p.memory_footprint();
    if (Tensor g = p.grad(); g.defined()) f.gradients += g.memory_footprint();
  }
  for (const Tensor& b : buffers()) f.buffers += b.memory_footprint();
  if (optimizer)
    for (size_t i = 0; i < optimizer->params().size(); i++)
      if (mine.count(optimizer->params()[i].impl().get()))
        for (const Tensor& s : optimizer->state_of(i)) f.optimizer_state += s.memory_footprint();
  return f;
}

std::string Module::type_name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                   std::free);
  std::string name = status == 0 && demangled ? demangled.get() : mangled;
  // "lazygrad::nn::Linear" -> "Linear"; a template's arguments keep their qualifiers.
  size_t end = name.find('<');
  size_t colon = name.rfind("::", end == std::string::npos ? std::string::npos : end);
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::string Module::to_string() const {
  std::vector<std::string> extra_lines;
  std::string extra = extra_repr();
  for (size_t start = 0; !extra.empty();) {
    size_t nl = extra.find('\n', start);
    extra_lines.push_back(extra.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  std::vector<std::string> lines = extra_lines;
  for (const auto& [name, child] : children_)
    lines.push_back("(" + name + "): " + indent_tail(child->to_string(), 2));
  std::string s = type_name() + "(";
  if (extra_lines.size() == 1 && children_.empty()) {
    s += extra_lines[0];
  } else if (!lines.empty()) {
    for (const std::string& line : lines) s += "\n  " + line;
    s += "\n";
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& module) { return os << module.to_string(); }

}  // namespace lazygrad::nn
