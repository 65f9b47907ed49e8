// libFuzzer target for the LLaMA config readers: models::LlamaConfig::from_json on the input as
// config.json text, and models::llama_config_from_gguf on the input as a GGUF file's metadata. Each
// must give a config that validate() accepts or throw lazygrad::Error, never crash or hang.
//
// scripts/make_fuzz_seeds.py writes a config.json and a GGUF file to seed the corpus;
// tests/fuzz/README.md has the commands.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "../../models/llama.h"
#include "../../models/llama_gguf.h"
#include "fuzz_files.h"
#include "lazygrad/error.h"
#include "lazygrad/gguf.h"

namespace {

// A config that loads is one the model can be built from: validate() accepts it.
void check(const lazygrad::models::LlamaConfig& config) {
  try {
    config.validate();
  } catch (const lazygrad::Error&) {
    std::abort();
  }
  if (config.head_size() <= 0 || config.num_attention_heads % config.num_key_value_heads != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lazygrad::fuzz::MemoryFile file("fuzz_llama_config");
  try {
    check(lazygrad::models::LlamaConfig::from_json(
        std::string_view(reinterpret_cast<const char*>(data), size)));
  } catch (const lazygrad::Error&) {
  }
  try {
    const lazygrad::GGUFFile gguf = lazygrad::load_gguf_metadata(file.write({data, size}));
    check(lazygrad::models::llama_config_from_gguf(gguf));
  } catch (const lazygrad::Error&) {
  }
  return 0;
}
