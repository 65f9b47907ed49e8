// VIZ=1's page (docs/viz.md): the tensor graph of one realize, which nodes fused into which kernel,
// and each kernel's generated source and time, as one self-contained HTML file.
#pragma once

#include <string>

#include "engine/trace.h"

namespace lazygrad {

std::string viz_page(const RealizeTrace& trace);
// Writes the page to `path` whole (a temporary file renamed), or throws naming the file.
void write_viz_page(const RealizeTrace& trace, const std::string& path);

}  // namespace lazygrad
