#include "runtime/webgpu/kernel_head.h"

#include "lazygrad/error.h"

namespace lazygrad::webgpu {

KernelHead read_kernel_head(const std::string& name, const std::string& source) {
  KernelHead h;
  const std::string first = source.substr(0, source.find('\n'));
  auto field = [&](const std::string& key) {
    const size_t at = first.find(" " + key + "=");
    if (at == std::string::npos)
      throw Error("WEBGPU: kernel " + name + " has no " + key + " in its first line");
    const size_t start = at + key.size() + 2;
    return first.substr(start, first.find(' ', start) - start);
  };
  h.bindings = field("bindings");
  h.vars = field("vars");
  if (h.vars == "-") h.vars.clear();
  h.workgroup = std::stoll(field("workgroup"));
  return h;
}

}  // namespace lazygrad::webgpu
