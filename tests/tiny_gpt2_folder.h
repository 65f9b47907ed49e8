// The tiny GPT-2 as a Hugging Face folder, for tests that run a command on one (`lazygrad generate`
// in test_generate, `lazygrad export --webgpu` in test_webgpu_export): config.json, the fixture's
// checkpoint (tests/fixtures/gpt2_tiny.safetensors: 2 layers, n_embd 16, vocab 101, n_positions 16),
// and a vocab.json with the 256 byte tokens and no merges (GPT-2's tokenizer needs a token for
// every byte). The model's 101 ids are space, newline, the 94 printable ASCII characters and the 5
// bytes of "é" (C3 A9) and "€" (E2 82 AC); the other 151 bytes get ids 101..255, which the model
// never produces.
#pragma once

#include <lazygrad/json.h>

#include <filesystem>
#include <string>
#include <vector>

#include "byte_token.h"
#include "test_files.h"

namespace lazygrad::test {

// The byte each id stands for: the model's 101, then the rest.
inline std::vector<unsigned char> tiny_id_bytes() {
  std::vector<unsigned char> bytes = {' ', '\n'};
  for (int b = '!'; b <= '~'; ++b) bytes.push_back(static_cast<unsigned char>(b));
  for (unsigned char b : {0xC3, 0xA9, 0xE2, 0x82, 0xAC}) bytes.push_back(b);
  std::vector<bool> used(256, false);
  for (unsigned char b : bytes) used[b] = true;
  for (int b = 0; b < 256; ++b)
    if (!used[b]) bytes.push_back(static_cast<unsigned char>(b));
  return bytes;
}

// The text of ids (each id one byte).
inline std::string tiny_text(const std::vector<int32_t>& ids) {
  const std::vector<unsigned char> bytes = tiny_id_bytes();
  std::string text;
  for (int32_t id : ids) text += static_cast<char>(bytes.at(static_cast<size_t>(id)));
  return text;
}

// Writes the folder (made if missing).
inline void write_tiny_gpt2_folder(const fs::path& dir) {
  fs::create_directories(dir);
  write_text(
      dir / "config.json",
      "{\"model_type\": \"gpt2\", \"activation_function\": \"gelu_new\", \"n_layer\": 2, \"n_head\": 4, "
      "\"n_embd\": 16, \"vocab_size\": 101, \"n_positions\": 16, \"n_ctx\": 16, "
      "\"layer_norm_epsilon\": 1e-05}\n");
  fs::copy_file(fixture_dir() / "gpt2_tiny.safetensors", dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  std::string vocab = "{";
  const std::vector<unsigned char> bytes = tiny_id_bytes();
  for (size_t id = 0; id < bytes.size(); ++id)
    vocab += (id ? ", " : "") + json::quote(byte_token(bytes[id])) + ": " + std::to_string(id);
  write_text(dir / "vocab.json", vocab + "}\n");
  write_text(dir / "merges.txt", "#version: 0.2\n");
}

}  // namespace lazygrad::test
