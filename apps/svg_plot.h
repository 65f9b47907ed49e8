// Line charts written as a standalone SVG file, for `lazygrad train`'s training curves: a browser
// opens it, and it stays readable as text (one <polyline> per series). Each chart has its own axes,
// ticks at round numbers (1, 2 or 5 times a power of ten), grid lines, axis labels and a legend;
// several charts are laid out side by side in one image.
#pragma once

#include <string>
#include <vector>

namespace lazygrad::cli {

struct Series {
  std::string label;         // shown in the legend
  std::vector<double> x, y;  // the same length; non-finite points leave a gap in the line
  std::string color = "#1f77b4";
  bool markers = false;  // a dot on each point, for series of a few points
  double width = 1.5;    // the line's width in pixels
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool integer_x = false;  // ticks on whole numbers only (epochs)
};

// The SVG document. An empty chart still gets its axes.
std::string render_svg(const std::vector<LineChart>& charts);

// Writes render_svg(charts) to `path`; throws lazygrad::Error if the file cannot be written.
void write_svg(const std::string& path, const std::vector<LineChart>& charts);

}  // namespace lazygrad::cli
