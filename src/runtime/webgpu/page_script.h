// The JavaScript side of the WebGPU device (page_script.cpp).
#pragma once

namespace lazygrad::webgpu {

// An expression that installs `globalThis.lg` in the page.
const char* page_script();

}  // namespace lazygrad::webgpu
