// libFuzzer target for load_safetensors: any bytes must load or throw lazygrad::Error, never crash,
// read out of bounds or leak (build with the sanitizers: see docs/safetensors.md).
//
//   mkdir -p /tmp/st-corpus && ./build-fuzz/fuzz_safetensors -max_len=4096 /tmp/st-corpus
//   tests/fixtures/safetensors
//
// The fixture files seed the corpus (libFuzzer adds new inputs to the first folder only). Each
// input is written to a memory file (memfd), so the loader runs its real path (open, fstat, mmap)
// without touching the disk.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "fuzz_files.h"
#include "lazygrad/error.h"
#include "lazygrad/safetensors.h"

namespace {}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lazygrad::fuzz::MemoryFile file("fuzz_safetensors");
  const std::string& path = file.write({data, size});
  try {
    const lazygrad::StateDict tensors = lazygrad::load_safetensors(path);
    // A file that loads has a header that must load on its own too.
    lazygrad::load_safetensors_metadata(path);
    for (const auto& [name, tensor] : tensors)
      if (tensor.numel() < 0 || tensor.nbytes() != tensor.numel() * tensor.element_size()) std::abort();
  } catch (const lazygrad::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
