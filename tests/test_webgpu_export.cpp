// Exported pages (export_webgpu, `lazygrad export --webgpu`; docs/webgpu.md) opened in headless
// Chromium as a user opens them: the folder served over HTTP on 127.0.0.1 (a page opened from
// file:// could not fetch its weights or import its module; a server in this process, on a port the
// kernel picks, is what `python3 -m http.server -d DIR` does for a user), in a browser of its own
// (the WEBGPU device's, which captures the kernels, runs in another page). The pages' results are
// compared with the CPU's:
// - a function with inputs and Variables, through export_webgpu and the page it writes by default;
// - the Fashion-MNIST CNN page: the first 100 test images get the CPU's class, every one;
// - the tiny GPT-2 page: its greedy tokens are models::generate's, its JavaScript BPE encodes as
//   lazygrad's GPT2Tokenizer does.
// Each page's screenshot goes to the build folder (`make webgpu-screenshots` copies them into
// docs/images/). Every case skips, saying why, where there is no Chromium or no WebGPU adapter.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../apps/train_step.h"
#include "../models/generate.h"
#include "../models/gpt2.h"
#include "byte_token.h"
#include "expect_error.h"
#include "http_file_server.h"
#include "lazygrad/json.h"
#include "runtime/device.h"
#include "runtime/webgpu/chromium.h"
#include "skip_without_webgpu.h"
#include "test_files.h"
#include "tiny_gpt2_folder.h"

using namespace lazygrad;
namespace fs = std::filesystem;

namespace {

// The browser the pages open in, started once for the process.
webgpu::Chromium& page_browser() {
  static std::unique_ptr<webgpu::Chromium> browser =
      std::make_unique<webgpu::Chromium>(webgpu::find_chromium());
  return *browser;
}

std::vector<unsigned char> unbase64(const std::string& text) {
  std::vector<unsigned char> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The page as it looks now, 900 x 620 CSS pixels, as a PNG beside this test's binary.
fs::path screenshot(webgpu::Chromium& browser, const std::string& name) {
  const json::Value reply = json::parse(
      browser.page_command("Page.captureScreenshot", "{\"format\":\"png\",\"captureBeyondViewport\":false}"));
  const std::vector<unsigned char> png = unbase64(reply.find("result")->find("data")->text);
  const fs::path path = fs::read_symlink("/proc/self/exe").parent_path() / name;
  test::write_text(path, std::string(png.begin(), png.end()));
  return path;
}

// Opens url in the page browser, at the screenshots' size, and waits for the page's model.
void open_page(webgpu::Chromium& browser, const std::string& url, const std::string& ready) {
  browser.page_command("Emulation.setDeviceMetricsOverride",
                       "{\"width\":900,\"height\":620,\"deviceScaleFactor\":1,\"mobile\":false}");
  browser.navigate(url);
  browser.evaluate(ready + ".then(() => true)");
}

std::vector<double> numbers(const json::Value& v) {
  std::vector<double> out;
  for (const json::Value& x : v.items) out.push_back(std::stod(x.text));
  return out;
}

size_t argmax(const std::vector<double>& v, size_t begin, size_t n) {
  size_t best = begin;
  for (size_t i = begin; i < begin + n; i++)
    if (v[i] > v[best]) best = i;
  return best - begin;
}

class WebGpuExport : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = test::fresh_dir(std::string("lazygrad_webgpu_export_") + info->name());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST_F(WebGpuExport, AFunctionWithInputsAndVariablesRunsInItsPageAsInLazygrad) {
  SKIP_WITHOUT_WEBGPU();
  NoGrad no_grad;
  const Tensor w = Tensor::from_vector<float>({0.5f, -1, 2, 0.25f}, {4}, "WEBGPU");
  // ids is an int64 input and output (emulated in WGSL: a BigInt64Array in the page), big an int64
  // Variable.
  Variable scale(1.5), start(0, kInt64), big(7, kInt64);
  Jit f([&](const std::vector<Tensor>& in) {
    Tensor x = in[0], counts = in[1], ids = in[2];
    Tensor mixed = (x * w * scale.tensor()).sum(0) + counts.to(kFloat32);  // [4]
    Tensor window = x.narrow(0, start, 2).contiguous();                    // rows [start, start + 2)
    return std::vector<Tensor>{mixed, window, (counts * 3).contiguous(), (ids + big.tensor()).contiguous()};
  });
  auto x = [](float k) {
    std::vector<float> v(12);
    for (size_t i = 0; i < v.size(); i++) v[i] = k * static_cast<float>(i) - 2.5f;
    return Tensor::from_vector<float>(v, {3, 4}, "WEBGPU");
  };
  const Tensor counts = Tensor::from_vector<int32_t>({7, -1, 0, 40000}, {4}, "WEBGPU");
  const Tensor ids = Tensor::from_vector<int64_t>({-3, int64_t(1) << 40}, {2}, "WEBGPU");
  f({x(1), counts, ids});
  f({x(1), counts, ids});  // captured
  WebGpuExportOptions options;
  options.variables = {{"scale", scale}, {"start", start}, {"big", big}};
  options.names = {{"w", w}};
  options.input_names = {"x", "counts", "ids"};
  options.title = "a test function";
  const WebGpuExportSummary summary = export_webgpu(f, dir_.string(), options);
  EXPECT_EQ(summary.dispatches, 4u);
  EXPECT_EQ(summary.weights, 1u);  // w; the inputs are not weights, the outputs start as nothing
  for (const char* file : {"index.html", "model.js", "model.safetensors"})
    EXPECT_TRUE(fs::exists(dir_ / file)) << file;
  EXPECT_EQ(load_safetensors((dir_ / "model.safetensors").string()).count("w"), 1u);

  // The replay in lazygrad, and the page, on new inputs and variables.
  scale.set(-0.75);
  start.set(1);
  big.set(123456789);
  const std::vector<Tensor> want = f({x(0.5f), counts, ids});
  test::HttpFileServer server(dir_);
  webgpu::Chromium& browser = page_browser();
  open_page(browser, server.url(), "window.lazygrad.ready");
  const json::Value got = json::parse(browser.evaluate(R"((async () => {
    const m = await window.lazygrad.ready;
    const x = Float32Array.from({length: 12}, (_, i) => 0.5 * i - 2.5);
    const ids = new BigInt64Array([-3n, 1n << 40n]);
    const outs = await m.run({x, counts: new Int32Array([7, -1, 0, 40000]), ids}, {scale: -0.75, start: 1, big: 123456789});
    let refused = "";
    try { await m.run([x, new Int32Array([7, -1, 0, 40000]), ids], {scale: 1, start: 2, big: 0}); } catch (e) { refused = e.message; }
    return {outs: outs.map((o) => Array.from(o, String)), types: outs.map((o) => o.constructor.name), refused};
  })())"));
  const json::Value& outs = *got.find("outs");
  ASSERT_EQ(outs.items.size(), 4u);
  const std::vector<double> mixed = numbers(outs.items[0]), window = numbers(outs.items[1]);
  const std::vector<float> want_mixed = want[0].to_vector<float>(), want_window = want[1].to_vector<float>();
  ASSERT_EQ(mixed.size(), want_mixed.size());
  for (size_t i = 0; i < mixed.size(); i++)
    EXPECT_NEAR(mixed[i], want_mixed[i], 1e-5 * (1 + std::fabs(want_mixed[i])));
  ASSERT_EQ(window.size(), want_window.size());
  for (size_t i = 0; i < window.size(); i++) EXPECT_EQ(window[i], want_window[i]) << i;
  EXPECT_EQ(numbers(outs.items[2]), (std::vector<double>{21, -3, 0, 120000}));
  EXPECT_EQ(got.find("types")->items[2].text, "Int32Array");
  std::vector<std::string> sums;
  for (const json::Value& v : outs.items[3].items) sums.push_back(v.text);
  EXPECT_EQ(sums, (std::vector<std::string>{"123456786", std::to_string((int64_t(1) << 40) + 123456789)}));
  EXPECT_EQ(want[3].to_vector<int64_t>(), (std::vector<int64_t>{123456786, (int64_t(1) << 40) + 123456789}));
  EXPECT_EQ(got.find("types")->items[3].text, "BigInt64Array");
  // A Variable past what its narrow allows is refused before anything runs, naming it.
  EXPECT_NE(got.find("refused")->text.find("variable start is 2, outside the [0, 1]"), std::string::npos)
      << got.find("refused")->text;
}

TEST_F(WebGpuExport, ExportRefusesWhatThePageCannotRun) {
  SKIP_WITHOUT_WEBGPU();
  NoGrad no_grad;
  const Tensor a = Tensor::from_vector<float>({1, 2}, {2}, "WEBGPU");
  Jit once([&](const std::vector<Tensor>&) { return std::vector<Tensor>{(a * 2).contiguous()}; });
  once({});
  expect_error([&] { export_webgpu(once, dir_.string()); }, {"nothing is captured", "second call"});
  const Tensor c = Tensor::from_vector<float>({1, 2}, {2}, "CPU");
  Jit on_cpu([&](const std::vector<Tensor>&) { return std::vector<Tensor>{(c * 2).contiguous()}; });
  on_cpu({});
  on_cpu({});
  expect_error([&] { export_webgpu(on_cpu, dir_.string()); }, {"runs on CPU", "WEBGPU"});
  Variable v(3.0);
  Jit unnamed([&](const std::vector<Tensor>&) { return std::vector<Tensor>{(a * v.tensor()).contiguous()}; });
  unnamed({});
  unnamed({});
  expect_error([&] { export_webgpu(unnamed, dir_.string()); }, {"Variable", "not given a name"});
}

TEST_F(WebGpuExport, TheCommandSaysWhatItNeeds) {
  const fs::path cli = test::cli_binary();
  test::RunResult r = test::run_program(cli, {"export", "--model", "x", "--out", "y"}, dir_);
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("say --webgpu"), std::string::npos) << r.err;
  r = test::run_program(cli, {"export", "--webgpu", "--model", (dir_ / "nowhere").string(), "--out", "y"},
                        dir_);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("no such file or folder"), std::string::npos) << r.err;
  // A safetensors file that is not a checkpoint of `lazygrad train fashion-mnist`.
  save_safetensors((dir_ / "other.safetensors").string(), {{"w", Tensor::ones({2})}});
  r = test::run_program(
      cli, {"export", "--webgpu", "--model", (dir_ / "other.safetensors").string(), "--out", "y"}, dir_);
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("not a checkpoint of `lazygrad train fashion-mnist`"), std::string::npos) << r.err;
}

TEST_F(WebGpuExport, TheFashionMnistPageClassifiesAsTheCpuDoes) {
  SKIP_WITHOUT_WEBGPU();
  if (!fs::exists(fs::path(data::kFashionMnistRoot) / "t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian's dataset-fashion-mnist)";
  // A CNN trained for 30 steps of 64 images on the CPU (about 60% right: its classes are not
  // near-ties), saved as `lazygrad train fashion-mnist --model cnn` saves it.
  const data::FashionMnist ds = data::load_fashion_mnist();
  Tensor::manual_seed(0);
  std::shared_ptr<nn::Module> model = cli::make_model("cnn");
  {
    cli::TrainStep step(model, 2e-3, true);
    data::DataLoader loader(ds.train_images.narrow(0, 0, 1920), ds.train_labels.narrow(0, 0, 1920),
                            {.batch_size = 64, .shuffle = true, .drop_last = true, .seed = 0});
    for (auto& [images, labels] : loader) step(images, labels).item<float>();
  }
  const fs::path checkpoint = dir_ / "cnn.safetensors";
  save_safetensors(checkpoint.string(), model->state_dict(), {{"format", "pt"}, {"model", "cnn"}});

  const fs::path page = dir_ / "page";
  const test::RunResult r = test::run_program(
      test::cli_binary(), {"export", "--webgpu", "--model", checkpoint.string(), "--out", page.string()},
      dir_, 300);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("python3 -m http.server -d " + page.string() + " 8000"), std::string::npos) << r.out;

  // The CPU's classes of the first 100 test images.
  NoGrad no_grad;
  model->eval();
  const Tensor images = ds.test_images.narrow(0, 0, 100);
  const std::vector<float> cpu = (*model)(cli::model_input(images)).to_vector<float>();
  const std::vector<uint8_t> pixels = images.to_vector<uint8_t>();

  test::HttpFileServer server(page);
  webgpu::Chromium& browser = page_browser();
  open_page(browser, server.url(), "window.page.ready");
  std::string list;
  for (uint8_t p : pixels) list += (list.empty() ? "" : ",") + std::to_string(p);
  // The images as the CPU's model_input makes them: pixels / 255 in float32.
  const json::Value got = json::parse(browser.evaluate("(async () => { const all = [" + list + R"(], out = [];
    for (let i = 0; i < 100; i++) {
      const image = Float32Array.from(all.slice(784 * i, 784 * (i + 1)), (p) => p / 255);
      out.push(...(await window.page.classify(image)).logits);
    }
    return out;
  })())"));
  const std::vector<double> page_logits = numbers(got);
  ASSERT_EQ(page_logits.size(), cpu.size());
  const std::vector<double> cpu_logits(cpu.begin(), cpu.end());
  int same = 0;
  double smallest_margin = INFINITY, largest_difference = 0;
  for (size_t i = 0; i < 100; i++) {
    const size_t want = argmax(cpu_logits, 10 * i, 10), have = argmax(page_logits, 10 * i, 10);
    EXPECT_EQ(have, want) << "image " << i;
    same += have == want;
    for (size_t k = 0; k < 10; k++) {
      largest_difference =
          std::max(largest_difference, std::fabs(page_logits[10 * i + k] - cpu_logits[10 * i + k]));
      if (k != want)
        smallest_margin = std::min(smallest_margin, cpu_logits[10 * i + want] - cpu_logits[10 * i + k]);
    }
  }
  EXPECT_EQ(same, 100);
  EXPECT_LT(largest_difference, 1e-3) << "the page's logits against the CPU's";
  std::cout << "the page's class is the CPU's for " << same << " of 100 images; logits at most "
            << largest_difference << " apart; the CPU's smallest margin between the first and another class "
            << smallest_margin << "\n";

  // The screenshot: the first test image (an ankle boot) on the canvas, and its probabilities.
  std::string first;
  for (size_t i = 0; i < 784; i++) first += (i ? "," : "") + std::to_string(pixels[i]);
  browser.evaluate("window.page.show(Float32Array.from([" + first + "], (p) => p / 255))");
  EXPECT_GT(fs::file_size(screenshot(browser, "webgpu-fashion-mnist-page.png")), 10000u);
}

TEST_F(WebGpuExport, TheGpt2PageGeneratesTheGreedyTokensOfLazygrad) {
  SKIP_WITHOUT_WEBGPU();
  const fs::path folder = dir_ / "tiny-gpt2", page = dir_ / "page";
  test::write_tiny_gpt2_folder(folder);
  const test::RunResult r = test::run_program(
      test::cli_binary(), {"export", "--webgpu", "--model", folder.string(), "--out", page.string()}, dir_,
      300);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;

  // lazygrad's greedy continuation on the CPU, of the prompt the fixture's reference uses.
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65};
  auto model =
      models::GPT2::from_hf_checkpoint(models::GPT2Config::from_file((folder / "config.json").string()),
                                       load_safetensors((folder / "model.safetensors").string()));
  Sampler greedy({.temperature = 0});
  const std::vector<int32_t> want = models::generate(*model, prompt, greedy, {.max_tokens = 50});

  test::HttpFileServer server(page);
  webgpu::Chromium& browser = page_browser();
  open_page(browser, server.url(), "window.page.ready");
  const json::Value got = json::parse(browser.evaluate(
      "window.page.generate(" + json::quote(test::tiny_text(prompt)) + ", {maxTokens: 50, temperature: 0})"));
  std::vector<int32_t> page_prompt, page_ids;
  for (const json::Value& v : got.find("prompt")->items) page_prompt.push_back(std::stoi(v.text));
  for (const json::Value& v : got.find("ids")->items) page_ids.push_back(std::stoi(v.text));
  EXPECT_EQ(page_prompt, prompt) << "the page's tokenizer";
  EXPECT_EQ(page_ids, want);
  EXPECT_EQ(page_ids.size(), 11u) << "the 5-token prompt and 11 new tokens fill n_positions 16";

  // The screenshot: the page's own button, on a prompt of its own.
  browser.evaluate(R"((async () => {
    document.getElementById("prompt").value = "Hello";
    document.getElementById("go").click();
    while (!document.getElementById("stats").textContent) await new Promise((r) => setTimeout(r, 20));
    return document.getElementById("stats").textContent;
  })())");
  EXPECT_GT(fs::file_size(screenshot(browser, "webgpu-gpt2-page.png")), 10000u);

  // The page's tokenizer.js on a byte-level vocabulary with merges (the tiny one has none) encodes
  // as lazygrad's GPT2Tokenizer.
  std::string vocab = "{";
  for (int b = 0; b < 256; b++)
    vocab += (b ? ", " : "") + json::quote(test::byte_token(b)) + ": " + std::to_string(b);
  int id = 256;
  const std::vector<std::string> merges = {"Ġ t", "h e", "Ġt he", "l l", "e ll", "h ell", "hell o",
                                           "Ġ w", "o r", "Ġw or", "Ã ©", "1 2",  "' s"};
  std::string merges_txt = "#version: 0.2\n";
  for (const std::string& m : merges) {
    const size_t space = m.find(' ');
    vocab += ", " + json::quote(m.substr(0, space) + m.substr(space + 1)) + ": " + std::to_string(id++);
    merges_txt += m + "\n";
  }
  const fs::path merged = page / "merged";
  fs::create_directories(merged);
  test::write_text(merged / "vocab.json", vocab + "}");
  test::write_text(merged / "merges.txt", merges_txt);
  const GPT2Tokenizer cpp =
      GPT2Tokenizer::from_files((merged / "vocab.json").string(), (merged / "merges.txt").string());
  const std::vector<std::string> texts = {"hello the world", "  the  hello's 123 caf\xC3\xA9!\n\nhello",
                                          "h\xC3\xA9llo w\xC3\xB6rld 12 1234 ab12cd 'sthe   "};
  std::string list;
  for (const std::string& t : texts) list += (list.empty() ? "" : ", ") + json::quote(t);
  const json::Value encoded = json::parse(
      browser.evaluate("(async () => { const {GPT2Tokenizer} = await import('./tokenizer.js'); "
                       "const t = await GPT2Tokenizer.load(new URL('merged/', location.href)); return [" +
                       list + "].map((s) => t.encode(s)); })()"));
  ASSERT_EQ(encoded.items.size(), texts.size());
  for (size_t i = 0; i < texts.size(); i++) {
    std::vector<int32_t> js;
    for (const json::Value& v : encoded.items[i].items) js.push_back(std::stoi(v.text));
    EXPECT_EQ(js, cpp.encode(texts[i])) << json::quote(texts[i]);
  }

  // A folder with tokenizer.json instead of vocab.json and merges.txt: the page gets those two,
  // taken out of it (merges as "a b" strings, and as [a, b] pairs as newer files write them).
  const fs::path hf = dir_ / "hf-gpt2", hf_page = dir_ / "hf-page";
  test::write_tiny_gpt2_folder(hf);
  fs::remove(hf / "vocab.json");
  fs::remove(hf / "merges.txt");
  test::write_text(hf / "tokenizer.json",
                   "{\"model\": {\"type\": \"BPE\", \"vocab\": " + test::read_file(merged / "vocab.json") +
                       ", \"merges\": [\"\u0120 t\", [\"h\", \"e\"]]}}");
  const test::RunResult hf_run =
      test::run_program(test::cli_binary(),
                        {"export", "--webgpu", "--model", hf.string(), "--out", hf_page.string()}, dir_, 300);
  ASSERT_EQ(hf_run.exit_status, 0) << hf_run.out << hf_run.err;
  EXPECT_EQ(test::read_file(hf_page / "merges.txt"), "#version: 0.2\n\u0120 t\nh e\n");
  const json::Value hf_vocab = json::parse(test::read_file(hf_page / "vocab.json"));
  ASSERT_EQ(hf_vocab.members.size(), 256 + merges.size());
  EXPECT_EQ(hf_vocab.find("\u0120t")->text, "256");
}
