// `lazygrad export --webgpu --model PATH --out DIR`: a model as a web page that runs it with WebGPU
// (export_pages.h, docs/webgpu.md). What it makes depends on PATH: a Fashion-MNIST checkpoint of
// `lazygrad train fashion-mnist` gives a page that classifies drawings; a GPT-2 folder, a page that
// generates text. Then it says how to open the page: a page opened from file:// cannot fetch its
// weights, so the folder is served on localhost.
#include <lazygrad/lazygrad.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "command.h"
#include "export_pages.h"

namespace lazygrad::cli {

namespace {

namespace fs = std::filesystem;

std::string megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// A shell word for a path (quoted only when it needs to be).
std::string shell_word(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./") ==
          std::string::npos)
    return s;
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

int cmd_export(const Args& args) {
  Options opts = parse_options(args, {"--model", "--out"}, {"--webgpu"});
  no_positionals(opts);
  if (!opts.has("--webgpu"))
    throw UsageError{"say --webgpu: a web page running with WebGPU is the one export there is"};
  const auto model = opts.get("--model");
  if (!model || model->empty())
    throw UsageError{
        "--model PATH is needed (a checkpoint of `lazygrad train fashion-mnist`, or a GPT-2 folder)"};
  const auto out = opts.get("--out");
  if (!out || out->empty()) throw UsageError{"--out DIR is needed (the folder the page goes to)"};

  const fs::path path(*model);
  if (!fs::exists(path)) throw Error(*model + ": no such file or folder");
  WebGpuExportSummary summary;
  std::string what;
  if (fs::is_directory(path)) {
    if (!fs::is_regular_file(path / "config.json"))
      throw Error((path / "config.json").string() + " is missing (a GPT-2 folder holds config.json)");
    summary = export_gpt2_page(*model, *out);
    what = "GPT-2 text generation";
  } else if (path.extension() == ".safetensors") {
    summary = export_fashion_mnist_page(*model, *out);
    what = "Fashion-MNIST classifier";
  } else {
    throw Error(*model +
                ": give a .safetensors checkpoint of `lazygrad train fashion-mnist` or a GPT-2 folder");
  }
  std::cout
      << "wrote " << *out << "/: index.html, model.js (" << summary.dispatches << " kernel launches, "
      << summary.kernels << " kernels), model.safetensors (" << summary.weights << " tensors, "
      << megabytes(summary.weight_bytes) << "): the " << what << " page\n"
      << "A page opened from file:// cannot fetch its weights; serve the folder and open it in a browser\n"
      << "with WebGPU:\n"
      << "  python3 -m http.server -d " << shell_word(*out) << " 8000   # then open http://localhost:8000/\n";
  return 0;
}

}  // namespace lazygrad::cli
