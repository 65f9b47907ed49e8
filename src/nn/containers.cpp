// Sequential and ModuleList: modules held under the names "0", "1", ... in the order they came.
#include <string>

#include "lazygrad/nn.h"
#include "nn/require.h"

namespace lazygrad::nn {

namespace {

// modules[index], with Python's negative indices.
std::shared_ptr<Module> at_index(const std::vector<std::shared_ptr<Module>>& modules, int64_t index,
                                 const char* container) {
  int64_t n = static_cast<int64_t>(modules.size());
  require(index >= -n && index < n,
          std::string(container) + ": index " + std::to_string(index) + " is out of range for " +
              std::to_string(n) + " modules",
          ErrorKind::Index);
  return modules[static_cast<size_t>(index < 0 ? index + n : index)];
}

}  // namespace

Sequential::Sequential(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) append(m);
}

Sequential& Sequential::append(std::shared_ptr<Module> module) {
  require(module != nullptr, "Sequential::append: module " + std::to_string(size()) + " is null");
  register_module(std::to_string(size()), std::move(module));
  return *this;
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : children()) x = (*m)(x);  // operator(): each is charged to itself by the profiler
  return x;
}

std::shared_ptr<Module> Sequential::operator[](int64_t index) const {
  return at_index(children(), index, "Sequential");
}

ModuleList::ModuleList(const std::vector<std::shared_ptr<Module>>& modules) { extend(modules); }

ModuleList& ModuleList::append(std::shared_ptr<Module> module) {
  require(module != nullptr, "ModuleList::append: module " + std::to_string(size()) + " is null");
  register_module(std::to_string(size()), std::move(module));
  return *this;
}

ModuleList& ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) append(m);
  return *this;
}

std::shared_ptr<Module> ModuleList::operator[](int64_t index) const {
  return at_index(children(), index, "ModuleList");
}

}  // namespace lazygrad::nn
