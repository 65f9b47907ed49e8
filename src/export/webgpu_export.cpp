// export_webgpu (lazygrad/export_webgpu.h): a Jit's capture written out as model.js,
// model.safetensors and index.html.
//
// Why the capture must be made on WEBGPU, rather than captured on the CPU and rendered again for
// WebGPU: what the page runs is then exactly what ran, and was checked, in lazygrad's own headless
// Chromium, kernel by kernel. Rendering again would need each kernel's graph (the capture keeps
// programs, not graphs), the schedule would differ (WebGPU's few storage buffers split kernels the
// CPU fuses: engine/buffer_limit.h) and so would the optimizations (work-groups against threads and
// vectors), and a kernel WGSL cannot express would only be found in the browser. The cost: an
// export starts Chromium, and the weights are read back from it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "engine/jit_capture.h"
#include "engine/schedule.h"
#include "export/webgpu_model_js.h"
#include "ir/variable_state.h"
#include "lazygrad/export_webgpu.h"
#include "lazygrad/json.h"
#include "lazygrad/safetensors.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/webgpu/kernel_head.h"

namespace lazygrad {

namespace {

namespace fs = std::filesystem;

// One captured buffer as the page makes it.
struct PageBuffer {
  const Buffer* buffer = nullptr;
  std::shared_ptr<Buffer> owner;
  std::string weight;  // its name in model.safetensors; "" for a buffer that starts as zeros
};

struct PageDispatch {
  size_t kernel = 0;
  std::vector<size_t> buffers, vars;  // indices into the buffers and the variables
  std::string kinds;                  // each argument's words: i, u, f (one) or w (two)
  bool errors = false;
  int64_t groups = 0;
  std::vector<VarBound> bounds;  // VarBound::var: the argument's position in `vars`
  std::vector<std::string> index_errors;
};

struct PageVariable {
  std::string name;
  DType dtype;
  int64_t min = std::numeric_limits<int32_t>::min(), max = std::numeric_limits<int32_t>::max();
};

struct PageKernel {
  std::string name, entry, source;  // name as DEBUG=2 shows it (with its opts), entry: the WGSL function
  webgpu::KernelHead head;
};

// The compute entry point's name: the function after "@compute @workgroup_size(...)".
std::string entry_point(const std::string& name, const std::string& source) {
  const size_t compute = source.find("@compute");
  const size_t fn = compute == std::string::npos ? compute : source.find("fn ", compute);
  const size_t paren = fn == std::string::npos ? fn : source.find('(', fn);
  if (paren == std::string::npos) throw Error("export_webgpu: kernel " + name + " has no @compute function");
  return source.substr(fn + 3, paren - fn - 3);
}

struct PageTensor {  // an input or an output
  std::string name;
  size_t buffer = 0;
  Shape shape;
  DType dtype;
};

// The capture, as the page will run it.
struct Page {
  std::vector<PageBuffer> buffers;
  std::vector<PageKernel> kernels;
  std::vector<PageDispatch> dispatches;
  std::vector<PageVariable> variables;
  std::vector<PageTensor> inputs, outputs;
};

std::string shape_json(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

class PageBuilder {
 public:
  PageBuilder(const Jit::Captured& captured, const WebGpuExportOptions& options)
      : captured_(captured), options_(options) {
    for (size_t i = 0; i < options.variables.size(); i++) {
      const auto& [name, var] = options.variables[i];
      if (!var_index_.emplace(var.state().get(), i).second)
        throw Error("export_webgpu: Variable " + name + " is given twice");
      page_.variables.push_back({name, var.dtype()});
    }
  }

  Page build() {
    for (size_t i = 0; i < captured_.input_buffers.size(); i++) {
      if (captured_.input_buffers[i].size() != 1)
        throw Error("export_webgpu: input " + std::to_string(i) + " is sharded; a page runs on one device");
      const auto& [shape, dtype] = captured_.input_types[i];
      const size_t b = buffer_index(captured_.input_buffers[i][0], nullptr);
      inputs_.insert(b);
      page_.inputs.push_back({name_of(options_.input_names, "input", i), b, shape, dtype});
    }
    for (const ExecItem& item : captured_.items) add(item);
    for (size_t i = 0; i < captured_.outputs.size(); i++) {
      const UOp* u = contiguous_buffer_node(captured_.outputs[i].get());
      if (!u)
        throw Error("export_webgpu: output " + std::to_string(i) +
                    " is a view of its buffer, not the whole of it; return a contiguous tensor");
      const auto& b = u->as<std::shared_ptr<Buffer>>();
      page_.outputs.push_back({name_of(options_.output_names, "output", i), buffer_index(b.get(), b),
                               captured_.outputs[i]->shape, captured_.outputs[i]->dtype});
    }
    return std::move(page_);
  }

  // Buffers whose contents at capture time the function reads: read before anything writes them,
  // or first written in place (a narrow_assign into a KV cache keeps the rest). Inputs excepted.
  const std::vector<size_t>& stateful() const { return stateful_; }

 private:
  static std::string name_of(const std::vector<std::string>& names, const char* stem, size_t i) {
    return i < names.size() ? names[i] : stem + std::to_string(i);
  }

  size_t buffer_index(const Buffer* b, const std::shared_ptr<Buffer>& owner) {
    auto [it, fresh] = buffer_index_.emplace(b, page_.buffers.size());
    if (fresh) page_.buffers.push_back({b, owner, ""});
    if (!page_.buffers[it->second].owner) page_.buffers[it->second].owner = owner;
    return it->second;
  }

  void add(const ExecItem& item) {
    if (item.copy)
      throw Error("export_webgpu: the function copies a buffer between devices (" + item.name +
                  "); make every tensor it reads on WEBGPU");
    if (!item.program || item.global_size == 0) return;  // an empty tensor: nothing runs
    const std::string& device = item.buffers.at(0)->device;
    if (device != "WEBGPU")
      throw Error(
          "export_webgpu: kernel " + item.name + " runs on " + device +
          "; capture the function with every tensor on WEBGPU (the page runs the WGSL that ran there)");
    if (item.source.empty())
      throw Error("export_webgpu: kernel " + item.name + " has no source in the capture");
    PageDispatch d;
    d.kernel = kernel_index(item);
    const webgpu::KernelHead& head = page_.kernels[d.kernel].head;
    d.errors = head.bindings.find('e') != std::string::npos;
    d.groups = item.dims.grid[0];
    d.kinds = head.vars;
    d.index_errors = item.index_errors;
    if (head.vars.size() != item.vars.size())
      throw Error("export_webgpu: kernel " + item.name + " takes " + std::to_string(head.vars.size()) +
                  " arguments, and its launch gives " + std::to_string(item.vars.size()));
    for (char kind : head.vars)
      if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'w')
        throw Error(std::string("export_webgpu: kernel ") + item.name + " has an argument of kind '" + kind +
                    "', which the page does not know");
    for (size_t i = 0; i < item.buffers.size(); i++) {
      const size_t b = buffer_index(item.buffers[i].get(), item.buffers[i]);
      d.buffers.push_back(b);
      if (!touched_.insert(b).second || inputs_.count(b)) continue;
      if (!item.written[i] || item.in_place) stateful_.push_back(b);
    }
    for (const auto& v : item.vars) d.vars.push_back(variable_index(item.name, *v));
    for (const VarBound& bound : item.var_bounds) {
      d.bounds.push_back(bound);
      PageVariable& v = page_.variables[d.vars[bound.var]];
      v.min = std::max(v.min, bound.lo);
      v.max = std::min(v.max, bound.hi);
    }
    page_.dispatches.push_back(std::move(d));
  }

  size_t kernel_index(const ExecItem& item) {
    auto [it, fresh] = kernel_index_.emplace(item.source, page_.kernels.size());
    if (fresh)
      page_.kernels.push_back({item.name, entry_point(item.name, item.source), item.source,
                               webgpu::read_kernel_head(item.name, item.source)});
    return it->second;
  }

  size_t variable_index(const std::string& kernel, const VariableState& v) {
    if (v.kind != VariableKind::User)
      throw Error(
          "export_webgpu: kernel " + kernel +
          " draws random numbers, which the page cannot (their generator's counter is a 64-bit value)");
    auto it = var_index_.find(&v);
    if (it == var_index_.end())
      throw Error(
          "export_webgpu: kernel " + kernel +
          " reads a Variable that the export was not given a name for (WebGpuExportOptions::variables)");
    return it->second;
  }

  const Jit::Captured& captured_;
  const WebGpuExportOptions& options_;
  Page page_;
  std::unordered_map<const Buffer*, size_t> buffer_index_;
  std::map<std::string, size_t> kernel_index_;
  std::unordered_map<const VariableState*, size_t> var_index_;
  std::set<size_t> inputs_, touched_;
  std::vector<size_t> stateful_;
};

// A state_dict's tensors are detached views of the parameters.
const UOp* undetached(const UOp* u) {
  while (u->op == Ops::DETACH) u = u->src[0].get();
  return u;
}

// The weights: each stateful buffer's bytes now, named from options.names where one of them is
// that buffer. A buffer of zeros is left out of the file: the page's new buffers are zeros.
StateDict read_weights(Page& page, const std::vector<size_t>& stateful, const StateDict& names) {
  std::unordered_map<const Buffer*, std::pair<std::string, Shape>> named;
  for (const auto& [name, t] : names)
    if (t.defined())
      if (const UOp* u = contiguous_buffer_node(undetached(t.uop().get())))
        named.emplace(u->as<std::shared_ptr<Buffer>>().get(), std::pair{name, t.shape()});
  StateDict weights;
  for (size_t i : stateful) {
    PageBuffer& b = page.buffers[i];
    std::vector<std::byte> bytes(b.buffer->nbytes());
    b.owner->copyout(bytes);
    if (std::all_of(bytes.begin(), bytes.end(), [](std::byte x) { return x == std::byte{0}; })) continue;
    auto it = named.find(b.buffer);
    b.weight = it != named.end() ? it->second.first : "buffer" + std::to_string(i);
    const Shape shape = it != named.end() ? it->second.second : Shape{b.buffer->size};
    weights.emplace(b.weight, Tensor::from_bytes(bytes.data(), bytes.size(), shape, b.buffer->dtype, "CPU"));
  }
  return weights;
}

// `const MODEL = {...};`: what the runtime in model.js reads.
std::string model_json(const Page& page, const std::string& weights_file) {
  std::ostringstream os;
  os << "const MODEL = {\n  weights: " << json::quote(weights_file) << ",\n";
  // The limits the kernels need beyond WebGPU's defaults: storage bindings, buffer sizes,
  // work-group sizes. load() asks the adapter for its own and refuses one below these.
  int64_t storage = 0, largest = 4, workgroup = 1;
  for (const PageKernel& k : page.kernels) {
    storage = std::max<int64_t>(storage, static_cast<int64_t>(std::count_if(
                                             k.head.bindings.begin(), k.head.bindings.end(),
                                             [](char c) { return c == 'r' || c == 'w' || c == 'e'; })));
    workgroup = std::max(workgroup, k.head.workgroup);
  }
  for (const PageBuffer& b : page.buffers)
    largest = std::max<int64_t>(largest, static_cast<int64_t>((b.buffer->nbytes() + 3) / 4 * 4));
  os << "  limits: {maxStorageBuffersPerShaderStage: " << storage
     << ", maxStorageBufferBindingSize: " << largest << ", maxBufferSize: " << largest
     << ", maxComputeInvocationsPerWorkgroup: " << workgroup << ", maxComputeWorkgroupSizeX: " << workgroup
     << "},\n";
  os << "  buffers: [\n";
  for (const PageBuffer& b : page.buffers)
    os << "    {bytes: " << b.buffer->nbytes() << ", dtype: " << json::quote(dtype_name(b.buffer->dtype))
       << (b.weight.empty() ? "" : ", weight: " + json::quote(b.weight)) << "},\n";
  os << "  ],\n  variables: [\n";
  for (const PageVariable& v : page.variables)
    os << "    {name: " << json::quote(v.name) << ", dtype: " << json::quote(dtype_name(v.dtype))
       << ", min: " << v.min << ", max: " << v.max << "},\n";
  os << "  ],\n";
  auto tensors = [&](const char* key, const std::vector<PageTensor>& list) {
    os << "  " << key << ": [\n";
    for (const PageTensor& t : list)
      os << "    {name: " << json::quote(t.name) << ", buffer: " << t.buffer
         << ", shape: " << shape_json(t.shape) << ", dtype: " << json::quote(dtype_name(t.dtype)) << "},\n";
    os << "  ],\n";
  };
  tensors("inputs", page.inputs);
  tensors("outputs", page.outputs);
  os << "  dispatches: [\n";
  for (const PageDispatch& d : page.dispatches) {
    auto list = [](const std::vector<size_t>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    };
    std::string bounds = "[", index_errors = "[";
    for (const VarBound& b : d.bounds)
      bounds += std::string(bounds.size() > 1 ? ", " : "") + "[" + std::to_string(b.var) + ", " +
                std::to_string(b.lo) + ", " + std::to_string(b.hi) + "]";
    for (const std::string& e : d.index_errors)
      index_errors += std::string(index_errors.size() > 1 ? ", " : "") + json::quote(e);
    os << "    {kernel: " << d.kernel << ", buffers: " << list(d.buffers) << ", vars: " << list(d.vars)
       << ", kinds: " << json::quote(d.kinds) << ", groups: " << d.groups
       << ", errors: " << (d.errors ? "true" : "false") << ", bounds: " << bounds << "]"
       << ", indexErrors: " << index_errors << "]},\n";
  }
  os << "  ],\n  kernels: [\n";
  for (const PageKernel& k : page.kernels)
    os << "    {name: " << json::quote(k.name) << ", entry: " << json::quote(k.entry)
       << ", bindings: " << json::quote(k.head.bindings) << ",\n     code: " << json::quote(k.source)
       << "},\n";
  os << "  ],\n};\n";
  return os.str();
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw Error("export_webgpu: cannot write " + path.string());
}

}  // namespace

WebGpuExportSummary export_webgpu(const Jit& jit, const std::string& dir,
                                  const WebGpuExportOptions& options) {
  const Jit::Captured captured = jit.captured();
  PageBuilder builder(captured, options);
  Page page = builder.build();
  const StateDict weights = read_weights(page, builder.stateful(), options.names);

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("export_webgpu: cannot make the folder " + dir + ": " + ec.message());
  const std::string weights_file = "model.safetensors";
  save_safetensors((fs::path(dir) / weights_file).string(), weights, {{"format", "lazygrad-webgpu"}});
  write_text(
      fs::path(dir) / "model.js",
      "// A function exported by lazygrad (export_webgpu, docs/webgpu.md): its WGSL kernels, its\n"
      "// buffers, its launches in order, and the runtime that runs them with WebGPU.\n"
      "//   import {load} from \"./model.js\";\n"
      "//   const m = await load();                      // fetches " +
          weights_file +
          " beside this file\n"
          "//   const outputs = await m.run(inputs, variables);  // typed arrays in, typed arrays out\n" +
          model_json(page, weights_file) + webgpu_model_runtime_js());
  write_text(fs::path(dir) / "index.html",
             options.index_html.empty()
                 ? replace_all(webgpu_default_page_html(), "@TITLE@", html_escape(options.title))
                 : options.index_html);

  WebGpuExportSummary summary;
  summary.dispatches = page.dispatches.size();
  summary.kernels = page.kernels.size();
  summary.weights = weights.size();
  for (const auto& [name, t] : weights) summary.weight_bytes += static_cast<int64_t>(t.nbytes());
  for (const PageBuffer& b : page.buffers) summary.buffer_bytes += static_cast<int64_t>(b.buffer->nbytes());
  return summary;
}

}  // namespace lazygrad
