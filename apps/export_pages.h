// The pages `lazygrad export --webgpu` makes (apps/export.cpp): each loads a model on WEBGPU,
// captures the function its page runs with a Jit, and writes the folder with export_webgpu and a
// page of its own (docs/webgpu.md).
#pragma once

#include <lazygrad/export_webgpu.h>

#include <string>

namespace lazygrad::cli {

// A checkpoint of `lazygrad train fashion-mnist` (its metadata's "model": mlp or cnn): a page that
// classifies an image drawn on a canvas, showing the ten classes' probabilities. The function:
// image float32 [1, 1, 28, 28] in [0, 1] -> logits [1, 10], probabilities [1, 10].
WebGpuExportSummary export_fashion_mnist_page(const std::string& checkpoint, const std::string& out_dir);

// A Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json and merges.txt or
// tokenizer.json): a page that generates text token by token, with the tokenizer and the sampling
// in JavaScript. The function: decode_step with Variables token and pos -> logits [1, 1, vocab].
WebGpuExportSummary export_gpt2_page(const std::string& model_dir, const std::string& out_dir);

// GPT-2's byte-level BPE tokenizer in JavaScript (tokenizer.js of the GPT-2 page).
const char* gpt2_tokenizer_js();

}  // namespace lazygrad::cli
