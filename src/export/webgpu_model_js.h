// The JavaScript that runs an exported model in the browser (webgpu_model_js.cpp): the part of
// model.js that is the same for every model. export_webgpu (webgpu_export.cpp) writes
// `const MODEL = {...};` (the kernels, buffers, dispatches, inputs, outputs, variables and the
// limits they need) and then this.
#pragma once

namespace lazygrad {

const char* webgpu_model_runtime_js();

// The page export_webgpu writes when it is given none: loads the model, runs it on zeros with a
// button, shows the outputs. "@TITLE@" stands for the (HTML-escaped) title.
const char* webgpu_default_page_html();

}  // namespace lazygrad
