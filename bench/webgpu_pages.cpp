// The two exported pages (`lazygrad export --webgpu`, docs/webgpu.md) timed in headless Chromium,
// beside the same functions on the CPU device, in one run:
//
//   ./build/bench_webgpu_pages [--runs N] [--gpt2 tiny|small]
//
// - Fashion-MNIST's LeNet-style CNN, one image (the canvas page's function: logits and
//   probabilities). Page: model.run() as the page calls it (the image written, every launch in one
//   compute pass, the outputs read back), the median of N calls. CPU: the same function under a Jit,
//   replayed, outputs copied to the host, the median of N.
// - GPT-2's decode step, one token through the KV cache (the text page's function, its window all
//   n_positions): tiny is the test suite's shape (2 layers, n_embd 16, vocab 101, 16 positions),
//   small GPT-2 124M's (12 layers, 768, 50257, 1024). Page and CPU as above, per token.
// - Per kernel: in the page each launch 20 times in one submission, from the submission to the
//   queue's completion, over 20 (model.profile(): one launch alone would measure the queue's
//   latency, a few milliseconds on SwiftShader); on the CPU each launch of the same function run
//   without the Jit (lazygrad::profile). The medians over N, in microseconds. The two lists are
//   not one to one: WebGPU's kernels are scheduled for its target (few storage buffers, work-groups),
//   the CPU's for threads and vectors.
// Weights are random (speed does not depend on them). The pages run on Chromium's WebGPU adapter:
// SwiftShader here, a CPU implementation of Vulkan on the same cores.
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../models/gpt2.h"
#include "../models/lenet.h"
#include "../tests/http_file_server.h"
#include "bench_util.h"
#include "runtime/device.h"
#include "runtime/webgpu/chromium.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<double> numbers(const json::Value& v) {
  std::vector<double> out;
  for (const json::Value& x : v.items) out.push_back(std::stod(x.text));
  return out;
}

struct Timing {
  double page_ms = 0, cpu_ms = 0;
  std::vector<std::pair<std::string, double>> page_kernels, cpu_kernels;  // median ms per launch
};

// The page at dir, opened in `browser`: `call` is a JS expression of the model `m` (a promise),
// timed N times after a warm-up, and profiled N times.
void time_page(webgpu::Chromium& browser, const fs::path& dir, const std::string& call, int runs, Timing& t) {
  lazygrad::test::HttpFileServer server(dir);
  browser.navigate(server.url());
  const json::Value r = json::parse(
      browser.evaluate("(async () => { const m = await window.bench; await " + call +
                       "; const ms = [], kernels = [];"
                       "for (let i = 0; i < " +
                       std::to_string(runs) + "; i++) { const t0 = performance.now(); await " + call +
                       "; ms.push(performance.now() - t0); }"
                       "for (let i = 0; i < " +
                       std::to_string(runs) + "; i++) kernels.push((await " +
                       std::string(call).replace(call.find("m.run("), 6, "m.profile(") +
                       ").kernels); return {ms, names: kernels[0].map((k) => k.name), kernels: "
                       "kernels.map((r) => r.map((k) => k.ms))}; })()"));
  t.page_ms = median(numbers(*r.find("ms")));
  const json::Value& names = *r.find("names");
  for (size_t k = 0; k < names.items.size(); k++) {
    std::vector<double> each;
    for (const json::Value& run : r.find("kernels")->items) each.push_back(std::stod(run.items[k].text));
    t.page_kernels.emplace_back(names.items[k].text, median(each));
  }
}

// fn run N times on the CPU under the profiler (no Jit): each launch's median time.
void time_cpu_kernels(const std::function<void()>& fn, int runs, Timing& t) {
  fn();  // compiled (or loaded from the cache) outside the timing
  std::vector<std::vector<double>> each;
  std::vector<std::string> names;
  for (int i = 0; i < runs; i++) {
    const Profile p = profile(fn);
    if (names.empty())
      for (const KernelProfile& k : p.kernels) names.push_back(k.name);
    each.resize(p.kernels.size());
    for (size_t k = 0; k < p.kernels.size() && k < each.size(); k++)
      each[k].push_back(p.kernels[k].seconds * 1e3);
  }
  for (size_t k = 0; k < names.size(); k++) t.cpu_kernels.emplace_back(names[k], median(each[k]));
}

void print(const std::string& title, const std::string& unit, const Timing& t) {
  std::printf(
      "\n%s\n  per %s: page %.3f ms (%zu launches), CPU %.3f ms (%zu launches): the page takes %.0fx the "
      "CPU's time\n",
      title.c_str(), unit.c_str(), t.page_ms, t.page_kernels.size(), t.cpu_ms, t.cpu_kernels.size(),
      t.cpu_ms > 0 ? t.page_ms / t.cpu_ms : 0);
  double page_sum = 0, cpu_sum = 0;
  for (const auto& k : t.page_kernels) page_sum += k.second;
  for (const auto& k : t.cpu_kernels) cpu_sum += k.second;
  std::printf("  kernels, us: page (sum %.1f)                   | CPU (sum %.1f)\n", page_sum * 1e3,
              cpu_sum * 1e3);
  const size_t rows = std::max(t.page_kernels.size(), t.cpu_kernels.size());
  for (size_t i = 0; i < rows; i++) {
    char left[80] = "", right[80] = "";
    if (i < t.page_kernels.size())
      std::snprintf(left, sizeof left, "%-32.32s %9.1f", t.page_kernels[i].first.c_str(),
                    t.page_kernels[i].second * 1e3);
    if (i < t.cpu_kernels.size())
      std::snprintf(right, sizeof right, "%-32.32s %9.1f", t.cpu_kernels[i].first.c_str(),
                    t.cpu_kernels[i].second * 1e3);
    std::printf("    %-43s | %s\n", left, right);
  }
}

// The timing script's handle on the model: window.bench, the page's own loaded model.
const char* kBenchHook =
    "<script type=\"module\">import {load} from \"./model.js\"; window.bench = load();</script>";

Timing bench_cnn(webgpu::Chromium& browser, const fs::path& dir, int runs) {
  NoGrad no_grad;
  Tensor::manual_seed(0);
  models::LeNet cpu_model, page_model;
  page_model.load_state_dict(cpu_model.state_dict());
  page_model.to("WEBGPU");
  auto classify = [](nn::Module& m) {
    return [&m](const std::vector<Tensor>& in) {
      Tensor logits = m(in[0]);
      return std::vector<Tensor>{logits, logits.softmax(-1)};
    };
  };
  Jit page_fn(classify(page_model));
  const Tensor image = Tensor::zeros({1, 1, 28, 28}, kFloat32, "WEBGPU");
  page_fn({image});
  page_fn({image});
  WebGpuExportOptions options;
  options.index_html = kBenchHook;
  export_webgpu(page_fn, dir.string(), options);
  Timing t;
  time_page(browser, dir, "m.run([new Float32Array(784).fill(0.5)])", runs, t);

  const Tensor x = Tensor::full({1, 1, 28, 28}, 0.5f, kFloat32, "CPU");
  Jit cpu_fn(classify(cpu_model));
  std::vector<double> ms;
  for (int i = 0; i < runs + 2; i++) {
    const double t0 = bench::now_s();
    cpu_fn({x})[1].to_vector<float>();
    if (i >= 2) ms.push_back((bench::now_s() - t0) * 1e3);
  }
  t.cpu_ms = median(ms);
  time_cpu_kernels([&] { realize(classify(cpu_model)({x})); }, runs, t);
  return t;
}

Timing bench_gpt2(webgpu::Chromium& browser, const fs::path& dir, const models::GPT2Config& config,
                  int runs) {
  NoGrad no_grad;
  Tensor::manual_seed(0);
  models::GPT2 cpu_model(config), page_model(config);
  page_model.load_state_dict(cpu_model.state_dict());
  page_model.to("WEBGPU");
  cpu_model.empty_cache();
  page_model.empty_cache();
  const int64_t window = config.n_positions, pos = std::min<int64_t>(5, window - 1);
  Variable page_token(0, kInt64), page_pos(0, kInt64), cpu_token(7, kInt64),
      cpu_pos(static_cast<double>(pos), kInt64);
  Jit page_fn([&](const std::vector<Tensor>&) {
    return std::vector<Tensor>{page_model.decode_step(page_token, page_pos, window)};
  });
  page_fn({});
  page_fn({});
  WebGpuExportOptions options;
  options.variables = {{"token", page_token}, {"pos", page_pos}};
  options.index_html = kBenchHook;
  export_webgpu(page_fn, dir.string(), options);
  Timing t;
  time_page(browser, dir, "m.run([], {token: 7, pos: " + std::to_string(pos) + "})", runs, t);

  Jit cpu_fn([&](const std::vector<Tensor>&) {
    return std::vector<Tensor>{cpu_model.decode_step(cpu_token, cpu_pos, window)};
  });
  std::vector<double> ms;
  for (int i = 0; i < runs + 2; i++) {
    const double t0 = bench::now_s();
    cpu_fn({})[0].to_vector<float>();
    if (i >= 2) ms.push_back((bench::now_s() - t0) * 1e3);
  }
  t.cpu_ms = median(ms);
  time_cpu_kernels([&] { cpu_model.decode_step(cpu_token, cpu_pos, window); }, runs, t);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  std::string gpt2 = "tiny";
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--gpt2" && i + 1 < argc &&
               (std::string(argv[i + 1]) == "tiny" || std::string(argv[i + 1]) == "small")) {
      gpt2 = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--runs N] [--gpt2 tiny|small]\n", argv[0]);
      return 2;
    }
  }
  try {
    const std::string info = device("WEBGPU").info().detail;
    webgpu::Chromium browser(webgpu::find_chromium());
    const fs::path dir =
        fs::temp_directory_path() / ("lazygrad_bench_webgpu_pages_" + std::to_string(getpid()));
    std::printf("CPU: %s, %d threads; %s\n", bench::cpu_model().c_str(), settings().threads, info.c_str());
    std::printf("medians of %d runs\n", runs);
    print("Fashion-MNIST CNN (LeNet-style), one image", "image", bench_cnn(browser, dir / "cnn", runs));
    models::GPT2Config config = models::GPT2Config::gpt2();
    if (gpt2 == "tiny") {
      config.n_layer = 2;
      config.n_head = 4;
      config.n_embd = 16;
      config.vocab_size = 101;
      config.n_positions = 16;
    }
    print("GPT-2 " + gpt2 + " (" + std::to_string(config.n_layer) + " layers, n_embd " +
              std::to_string(config.n_embd) + ", vocab " + std::to_string(config.vocab_size) + ", window " +
              std::to_string(config.n_positions) + "), decode step",
          "token", bench_gpt2(browser, dir / "gpt2", config, runs));
    fs::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
