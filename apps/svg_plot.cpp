// render_svg: see svg_plot.h. Coordinates are SVG pixels, y growing downwards.
#include "svg_plot.h"

#include <lazygrad/error.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace lazygrad::cli {

namespace {

// One chart's box, and the space around the plot area for the title, ticks and labels.
constexpr double kChartWidth = 520, kChartHeight = 340;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 52;

// An axis from lo to hi with a tick every `step`, lo and hi being multiples of step.
struct Axis {
  double lo, hi, step;
};

// The round number (1, 2 or 5 times a power of ten) closest above `raw`.
double round_step(double raw) {
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * magnitude * (1 + 1e-9)) return m * magnitude;
  return 10 * magnitude;
}

// About five ticks covering [lo, hi], widened to round numbers.
Axis make_axis(double lo, double hi, bool integer) {
  if (!(lo <= hi)) lo = 0, hi = 1;                      // no finite data
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {  // one value: give it some room
    lo -= integer ? 1 : std::max(0.5, std::abs(lo) * 0.1);
    hi += integer ? 1 : std::max(0.5, std::abs(hi) * 0.1);
  }
  double step = round_step((hi - lo) / 5);
  if (integer) step = std::max(1.0, std::round(step));
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step};
}

// Enough decimals to tell the ticks apart: 0.25 steps need 2, 5 steps none.
std::string tick_label(double value, double step) {
  int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  double scaled = step * std::pow(10.0, decimals);
  if (std::abs(scaled - std::round(scaled)) > 1e-6) decimals++;  // 0.25: one decimal is not enough
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, std::abs(value) < step * 1e-9 ? 0.0 : value);
  return text;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
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

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

void render_chart(std::ostringstream& svg, const LineChart& chart, double left_edge) {
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_min = x_min, y_max = -x_min;
  for (const Series& s : chart.series) {
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); i++) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_min = std::min(x_min, s.x[i]), x_max = std::max(x_max, s.x[i]);
      y_min = std::min(y_min, s.y[i]), y_max = std::max(y_max, s.y[i]);
    }
  }
  Axis ax = make_axis(x_min, x_max, chart.integer_x), ay = make_axis(y_min, y_max, false);
  double plot_left = left_edge + kLeft, plot_right = left_edge + kChartWidth - kRight;
  double plot_top = kTop, plot_bottom = kChartHeight - kBottom;
  auto px = [&](double x) { return plot_left + (x - ax.lo) / (ax.hi - ax.lo) * (plot_right - plot_left); };
  auto py = [&](double y) { return plot_bottom - (y - ay.lo) / (ay.hi - ay.lo) * (plot_bottom - plot_top); };

  svg << "<g>\n<text x=\"" << num((plot_left + plot_right) / 2) << "\" y=\"24\" text-anchor=\"middle\" "
      << "font-size=\"15\" font-weight=\"bold\">" << escape(chart.title) << "</text>\n";
  // Grid lines and tick labels; the ticks are counted, not accumulated, so no rounding drift.
  int64_t x_ticks = std::llround((ax.hi - ax.lo) / ax.step),
          y_ticks = std::llround((ay.hi - ay.lo) / ay.step);
  for (int64_t i = 0; i <= x_ticks; i++) {
    double v = ax.lo + static_cast<double>(i) * ax.step, x = px(v);
    svg << "<line x1=\"" << num(x) << "\" y1=\"" << num(plot_top) << "\" x2=\"" << num(x) << "\" y2=\""
        << num(plot_bottom + 5) << "\" stroke=\"#e0e0e0\"/>\n<text x=\"" << num(x) << "\" y=\""
        << num(plot_bottom + 19) << "\" text-anchor=\"middle\">" << tick_label(v, ax.step) << "</text>\n";
  }
  for (int64_t i = 0; i <= y_ticks; i++) {
    double v = ay.lo + static_cast<double>(i) * ay.step, y = py(v);
    svg << "<line x1=\"" << num(plot_left - 5) << "\" y1=\"" << num(y) << "\" x2=\"" << num(plot_right)
        << "\" y2=\"" << num(y) << "\" stroke=\"#e0e0e0\"/>\n<text x=\"" << num(plot_left - 8) << "\" y=\""
        << num(y + 4) << "\" text-anchor=\"end\">" << tick_label(v, ay.step) << "</text>\n";
  }
  svg << "<rect x=\"" << num(plot_left) << "\" y=\"" << num(plot_top) << "\" width=\""
      << num(plot_right - plot_left) << "\" height=\"" << num(plot_bottom - plot_top)
      << "\" fill=\"none\" stroke=\"#333\"/>\n";
  svg << "<text x=\"" << num((plot_left + plot_right) / 2) << "\" y=\"" << num(kChartHeight - 12)
      << "\" text-anchor=\"middle\">" << escape(chart.x_label) << "</text>\n";
  double y_mid = (plot_top + plot_bottom) / 2;
  svg << "<text x=\"" << num(left_edge + 18) << "\" y=\"" << num(y_mid) << "\" text-anchor=\"middle\" "
      << "transform=\"rotate(-90 " << num(left_edge + 18) << " " << num(y_mid) << ")\">"
      << escape(chart.y_label) << "</text>\n";

  for (const Series& s : chart.series) {
    // One polyline per run of finite points.
    std::string points;
    auto flush = [&] {
      if (!points.empty())
        svg << "<polyline fill=\"none\" stroke=\"" << escape(s.color) << "\" stroke-width=\"" << num(s.width)
            << "\" stroke-linejoin=\"round\" points=\"" << points << "\"/>\n";
      points.clear();
    };
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); i++) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        flush();
        continue;
      }
      points += (points.empty() ? "" : " ") + num(px(s.x[i])) + "," + num(py(s.y[i]));
      if (s.markers)
        svg << "<circle cx=\"" << num(px(s.x[i])) << "\" cy=\"" << num(py(s.y[i])) << "\" r=\"3.5\" fill=\""
            << escape(s.color) << "\"/>\n";
    }
    flush();
  }

  // The legend, in the plot's top right corner, one row per series.
  double row = 18, legend_width = 0;
  for (const Series& s : chart.series)
    legend_width = std::max(legend_width, 7.0 * static_cast<double>(s.label.size()));
  double lx = plot_right - legend_width - 40, ly = plot_top + 8;
  if (!chart.series.empty())
    svg << "<rect x=\"" << num(lx - 6) << "\" y=\"" << num(ly - 4) << "\" width=\"" << num(legend_width + 42)
        << "\" height=\"" << num(row * static_cast<double>(chart.series.size()) + 4)
        << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n";
  for (size_t i = 0; i < chart.series.size(); i++) {
    double y = ly + row * static_cast<double>(i) + row / 2;
    svg << "<line x1=\"" << num(lx) << "\" y1=\"" << num(y) << "\" x2=\"" << num(lx + 24) << "\" y2=\""
        << num(y) << "\" stroke=\"" << escape(chart.series[i].color)
        << "\" stroke-width=\"2.5\"/>\n<text x=\"" << num(lx + 30) << "\" y=\"" << num(y + 4) << "\">"
        << escape(chart.series[i].label) << "</text>\n";
  }
  svg << "</g>\n";
}

}  // namespace

std::string render_svg(const std::vector<LineChart>& charts) {
  double width = kChartWidth * static_cast<double>(std::max<size_t>(1, charts.size()));
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width) << "\" height=\""
      << num(kChartHeight) << "\" viewBox=\"0 0 " << num(width) << " " << num(kChartHeight)
      << "\" font-family=\"sans-serif\" "
      << "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (size_t i = 0; i < charts.size(); i++)
    render_chart(svg, charts[i], kChartWidth * static_cast<double>(i));
  svg << "</svg>\n";
  return svg.str();
}

void write_svg(const std::string& path, const std::vector<LineChart>& charts) {
  std::string text = render_svg(charts);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw Error("write_svg: cannot open '" + path + "' for writing");
  file << text;
  file.close();
  if (!file) throw Error("write_svg: could not write '" + path + "'");
}

}  // namespace lazygrad::cli
