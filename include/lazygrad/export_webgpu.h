// export_webgpu: a Jit-captured function written out as a web page that runs it with WebGPU in a
// browser, with nothing to install and nothing fetched from the internet (docs/webgpu.md):
//
//   DIR/model.js           one ES module: the WGSL kernels, the buffers, the dispatches in the
//                          captured order, and `load()`, which gives a model whose
//                          `run(inputs, variables)` takes typed arrays and returns typed arrays
//   DIR/model.safetensors  the weights: every buffer the function reads that held data when it was
//                          captured and is not one of its inputs (model.js parses the file's header)
//   DIR/index.html         the page (options.index_html, or one that runs the function on zeros)
//
// The function must be captured on the WEBGPU device (every tensor it reads there): the page runs
// exactly the WGSL that ran in lazygrad's own headless Chromium. A page opened from file:// cannot
// fetch its weights: serve the folder, e.g. `python3 -m http.server -d DIR 8000`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lazygrad/jit.h"
#include "lazygrad/state_dict.h"
#include "lazygrad/variable.h"

namespace lazygrad {

struct WebGpuExportOptions {
  // The Variables the function reads, by the names the page's run() takes them by (a decode step's
  // token and position). A Variable the capture reads that is not here is an Error.
  std::vector<std::pair<std::string, Variable>> variables;
  // Names for the weights in model.safetensors, matched by buffer (a model's state_dict()); a
  // weight not found here is "buffer<N>".
  StateDict names;
  // The names run() gives its inputs and outputs (default input0, input1, ..., output0, ...).
  std::vector<std::string> input_names, output_names;
  std::string title = "lazygrad";  // the default page's title
  std::string index_html;          // the page; empty: the default page
};

// What export_webgpu wrote, for a caller that reports it.
struct WebGpuExportSummary {
  size_t dispatches = 0, kernels = 0;          // launches, and distinct WGSL programs among them
  size_t weights = 0;                          // tensors in model.safetensors
  int64_t weight_bytes = 0, buffer_bytes = 0;  // the weights' bytes; every buffer's, weights included
};

// Writes the folder (made if missing; the three files replaced). Error when the Jit has not
// captured yet (call it twice first), when the capture is not all WEBGPU kernels (a copy between
// devices, a kernel of another device) or reads random numbers, or when a Variable has no name.
WebGpuExportSummary export_webgpu(const Jit& jit, const std::string& dir,
                                  const WebGpuExportOptions& options = {});

}  // namespace lazygrad
