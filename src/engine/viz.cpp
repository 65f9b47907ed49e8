// VIZ=1: the last realize as one self-contained HTML page. lazygrad lays the graph out here (layers
// by longest path from the inputs, each layer ordered by its nodes' parents, one sweep down); the
// page's script only draws it as SVG and shows a kernel's source and time on click. Nothing is
// loaded from the network. docs/viz.md
#include "engine/viz.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "lazygrad/json.h"
#include "lazygrad/profile.h"
#include "shape/size.h"

namespace lazygrad {

namespace {

struct VizNode {
  const UOp* u;
  std::vector<int> kernels;  // the kernels that compute it (an elementwise value fused into two: two)
  int made_by = -1;          // an input: the kernel of this realize that wrote it, else -1 (a buffer)
  int layer = 0;
  double x = 0;
};

std::string label_of(const UOp& u) {
  std::string s(op_name(u.op));
  if (u.op == Ops::REDUCE_AXIS) s += " " + std::string(op_name(u.as<ReduceArg>().op));
  if (u.op == Ops::CONST) {
    char v[32];
    std::snprintf(v, sizeof v, " %g", u.const_double());
    s += v;
  }
  return s;
}

// "</script>" inside the data would end the script early.
std::string script_safe(std::string s) {
  for (size_t i = 0; (i = s.find("</", i)) != std::string::npos; i += 3) s.replace(i, 2, "<\\/");
  return s;
}

const char* const kPage = R"HTML(<!doctype html>
<html><head><meta charset="utf-8"><title>lazygrad VIZ</title>
<style>
body { font: 13px sans-serif; margin: 0; display: flex; height: 100vh; }
#graph { flex: 3; overflow: auto; border-right: 1px solid #ccc; }
#side { flex: 2; overflow: auto; padding: 8px; }
.node rect { stroke: #333; stroke-width: 1; rx: 4; }
.node text { font: 11px monospace; pointer-events: none; }
.node.input rect { fill: #eee; stroke-dasharray: 3 2; }
.edge { stroke: #999; fill: none; }
.kernel { cursor: pointer; padding: 2px 4px; margin: 1px 0; border-left: 8px solid; }
.kernel.selected { background: #ffd; }
pre { background: #f6f6f6; padding: 6px; overflow: auto; font-size: 11px; }
</style></head>
<body><div id="graph"></div><div id="side"><div id="status"></div><h3>Kernels</h3><div id="kernels"></div>
<h3 id="title">Click a kernel or a node</h3><div id="detail"></div><pre id="source"></pre></div>
<script>
const DATA = __DATA__;
const NS = "http://www.w3.org/2000/svg";
const W = 150, H = 34, GX = 40, GY = 50;
function colour(k) { return k < 0 ? "#eee" : "hsl(" + ((k * 137) % 360) + ",70%,80%)"; }
function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const a in attrs) e.setAttribute(a, attrs[a]);
  parent.appendChild(e);
  return e;
}
function show(k) {
  document.querySelectorAll(".kernel").forEach(d => d.classList.toggle("selected", d.dataset.k == k));
  const kern = DATA.kernels[k];
  document.getElementById("title").textContent = kern.name;
  const gf = kern.seconds > 0 ? (kern.flops / kern.seconds * 1e-9).toFixed(2) : "-";
  const gb = kern.seconds > 0 ? (kern.bytes / kern.seconds * 1e-9).toFixed(2) : "-";
  document.getElementById("detail").textContent = kern.device + ", " + (kern.seconds * 1e6).toFixed(1) +
      " us, " + kern.flops + " FLOPs (" + gf + " GFLOP/s), " + kern.bytes + " bytes (" + gb + " GB/s), " +
      kern.nodes + " nodes";
  document.getElementById("source").textContent = kern.copy ? "(a copy between devices: no code)" : kern.source;
}
const width = (DATA.width + 1) * (W + GX), height = (DATA.layers + 1) * (H + GY);
const svg = el("svg", {width: width, height: height, id: "svg"}, document.getElementById("graph"));
const at = {};
DATA.nodes.forEach(n => { at[n.id] = [GX / 2 + n.x * (W + GX), GY / 2 + n.layer * (H + GY)]; });
DATA.edges.forEach(e => {
  const [x1, y1] = at[e[0]], [x2, y2] = at[e[1]];
  el("path", {class: "edge", d: "M" + (x1 + W / 2) + "," + (y1 + H) + " C" + (x1 + W / 2) + "," + (y1 + H + GY / 2) +
      " " + (x2 + W / 2) + "," + (y2 - GY / 2) + " " + (x2 + W / 2) + "," + y2}, svg);
});
DATA.nodes.forEach(n => {
  const [x, y] = at[n.id];
  const g = el("g", {class: "node" + (n.kernels.length ? "" : " input"), transform: "translate(" + x + "," + y + ")"}, svg);
  el("rect", {width: W, height: H, fill: colour(n.kernels.length ? n.kernels[0] : -1)}, g);
  el("text", {x: 5, y: 14}, g).textContent = n.label;
  el("text", {x: 5, y: 28}, g).textContent = n.shape + " " + n.dtype;
  el("title", {}, g).textContent = n.kernels.length ? "computed by kernel " + n.kernels.map(k => DATA.kernels[k].name).join(", ")
                                   : n.made_by >= 0 ? "read from kernel " + DATA.kernels[n.made_by].name : "a buffer";
  const k = n.kernels.length ? n.kernels[0] : n.made_by;
  if (k >= 0) g.addEventListener("click", () => show(k));
});
DATA.kernels.forEach((kern, k) => {
  const d = document.createElement("div");
  d.className = "kernel";
  d.dataset.k = k;
  d.style.borderColor = colour(k);
  d.textContent = kern.name + "  " + (kern.seconds * 1e6).toFixed(1) + " us";
  d.addEventListener("click", () => show(k));
  document.getElementById("kernels").appendChild(d);
});
document.getElementById("status").textContent = "realize: " + DATA.kernels.length + " kernels, " + DATA.nodes.length +
    " nodes, " + (DATA.seconds * 1e3).toFixed(2) + " ms";
document.body.dataset.rendered = svg.querySelectorAll("g.node").length;
</script></body></html>
)HTML";

}  // namespace

std::string viz_page(const RealizeTrace& trace) {
  std::vector<VizNode> nodes;
  std::unordered_map<const UOp*, int> index;
  auto add = [&](const UOp* u) {
    auto [it, fresh] = index.try_emplace(u, static_cast<int>(nodes.size()));
    if (fresh) nodes.push_back({u, {}, -1, 0, 0});
    return it->second;
  };
  // Inputs first, so a value computed by one kernel and read by the next is one node.
  for (size_t k = 0; k < trace.kernels.size(); k++) {
    const auto& computed = trace.kernels[k].nodes;
    for (const auto& u : computed)
      nodes[static_cast<size_t>(add(u.get()))].kernels.push_back(static_cast<int>(k));
    if (!computed.empty())
      nodes[static_cast<size_t>(add(computed.back().get()))].made_by = static_cast<int>(k);
  }
  for (const auto& k : trace.kernels)
    for (const auto& u : k.inputs) add(u.get());
  // Edges: a node's sources that are on the page.
  std::vector<std::pair<int, int>> edges;
  for (size_t i = 0; i < nodes.size(); i++) {
    if (nodes[i].kernels.empty()) continue;  // an input: its sources belong to another realize
    for (const auto& s : nodes[i].u->src)
      if (auto it = index.find(s.get()); it != index.end())
        edges.emplace_back(it->second, static_cast<int>(i));
  }
  // Layers: the longest path from an input (a loop until nothing moves: edges point down the
  // toposort the kernels listed, so a few passes settle it).
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& [from, to] : edges)
      if (nodes[static_cast<size_t>(to)].layer <= nodes[static_cast<size_t>(from)].layer) {
        nodes[static_cast<size_t>(to)].layer = nodes[static_cast<size_t>(from)].layer + 1;
        moved = true;
      }
  }
  // Then each node down to just above its first user: a constant sits by the op that reads it, not
  // in the top row with every other source.
  for (bool moved = true; moved;) {
    moved = false;
    std::vector<int> first_user(nodes.size(), -1);
    for (const auto& [from, to] : edges) {
      int& f = first_user[static_cast<size_t>(from)];
      f = f < 0 ? nodes[static_cast<size_t>(to)].layer : std::min(f, nodes[static_cast<size_t>(to)].layer);
    }
    for (size_t i = 0; i < nodes.size(); i++)
      if (first_user[i] - 1 > nodes[i].layer) {
        nodes[i].layer = first_user[i] - 1;
        moved = true;
      }
  }
  int layers = 0;
  for (const auto& n : nodes) layers = std::max(layers, n.layer);
  // Order within a layer: each node at the mean position of its parents (inputs keep their order).
  std::vector<std::vector<int>> by_layer(static_cast<size_t>(layers) + 1), parents(nodes.size());
  for (const auto& [from, to] : edges) parents[static_cast<size_t>(to)].push_back(from);
  for (size_t i = 0; i < nodes.size(); i++)
    by_layer[static_cast<size_t>(nodes[i].layer)].push_back(static_cast<int>(i));
  size_t width = 0;
  for (auto& layer : by_layer) {
    std::vector<std::pair<double, int>> keyed;
    for (int i : layer) {
      const auto& ps = parents[static_cast<size_t>(i)];
      double key = static_cast<double>(keyed.size());
      if (!ps.empty()) {
        key = 0;
        for (int p : ps) key += nodes[static_cast<size_t>(p)].x;
        key /= static_cast<double>(ps.size());
      }
      keyed.emplace_back(key, i);
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t pos = 0; pos < keyed.size(); pos++)
      nodes[static_cast<size_t>(keyed[pos].second)].x = static_cast<double>(pos);
    width = std::max(width, keyed.size());
  }

  std::ostringstream d;
  d << "{\"seconds\":" << trace.seconds << ",\"layers\":" << layers << ",\"width\":" << width
    << ",\"nodes\":[";
  for (size_t i = 0; i < nodes.size(); i++) {
    const VizNode& n = nodes[i];
    d << (i ? "," : "") << "{\"id\":" << i << ",\"label\":" << json::quote(label_of(*n.u))
      << ",\"shape\":" << json::quote(shape_str(n.u->shape))
      << ",\"dtype\":" << json::quote(dtype_name(n.u->dtype)) << ",\"layer\":" << n.layer << ",\"x\":" << n.x
      << ",\"made_by\":" << n.made_by << ",\"kernels\":[";
    for (size_t k = 0; k < n.kernels.size(); k++) d << (k ? "," : "") << n.kernels[k];
    d << "]}";
  }
  d << "],\"edges\":[";
  for (size_t i = 0; i < edges.size(); i++)
    d << (i ? "," : "") << "[" << edges[i].first << "," << edges[i].second << "]";
  d << "],\"kernels\":[";
  for (size_t k = 0; k < trace.kernels.size(); k++) {
    const TracedKernel& t = trace.kernels[k];
    d << (k ? "," : "") << "{\"name\":" << json::quote(t.name) << ",\"device\":" << json::quote(t.device)
      << ",\"copy\":" << (t.copy ? "true" : "false") << ",\"seconds\":" << t.seconds
      << ",\"flops\":" << t.flops << ",\"bytes\":" << t.bytes << ",\"nodes\":" << t.nodes.size()
      << ",\"source\":" << json::quote(t.source) << "}";
  }
  d << "]}";
  std::string page = kPage;
  page.replace(page.find("__DATA__"), 8, script_safe(d.str()));
  return page;
}

// Written whole to a temporary file, then renamed: a reader never sees half a page.
void write_viz_page(const RealizeTrace& trace, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << viz_page(trace);
    if (!f) throw Error("VIZ: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("VIZ: cannot rename " + tmp + " to " + path);
}

void write_viz(const std::function<void()>& fn, const std::string& path) {
  RealizeTrace all;
  {
    RealizeListener listener([&](const RealizeTrace& t) {
      all.kernels.insert(all.kernels.end(), t.kernels.begin(), t.kernels.end());
      all.seconds += t.seconds;
    });
    fn();
  }
  write_viz_page(all, path);
}

}  // namespace lazygrad
