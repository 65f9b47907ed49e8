// libFuzzer target for load_gguf: any bytes must load or throw lazygrad::Error, never crash, read
// out of bounds, allocate without bound or leak (build with the sanitizers: tests/fuzz/README.md).
//
//   mkdir -p /tmp/gguf-corpus && ./build-fuzz/fuzz_gguf -max_len=4096 /tmp/gguf-corpus tests/fixtures/gguf
//
// Each input is written to a memory file (memfd), so the loader runs its real path (open, fstat,
// mmap) without touching the disk.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_files.h"
#include "lazygrad/error.h"
#include "lazygrad/gguf.h"

namespace {

// Calls `accessor`, which must return or throw lazygrad::Error (anything else ends the fuzzer).
template <class Accessor>
void answers_or_throws(const Accessor& accessor) {
  try {
    accessor();
  } catch (const lazygrad::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lazygrad::fuzz::MemoryFile file("fuzz_gguf");
  const std::string& path = file.write({data, size});
  try {
    const lazygrad::GGUFFile file = lazygrad::load_gguf(path);
    // A file that loads has a header that loads on its own, with the same tensors.
    const lazygrad::GGUFFile header = lazygrad::load_gguf_metadata(path);
    if (header.tensor_infos.size() != file.tensors.size() || header.metadata.size() != file.metadata.size())
      std::abort();
    for (const lazygrad::GGUFTensorInfo& info : file.tensor_infos) {
      const lazygrad::Tensor& t = file.tensor(info.name);
      if (t.shape() != info.shape || t.nbytes() != t.numel() * t.element_size()) std::abort();
    }
    // Every accessor on every value answers or throws Error.
    for (const auto& entry : file.metadata) {
      const lazygrad::GGUFValue& v = entry.second;  // a plain reference: clang 14 cannot capture a binding
      answers_or_throws([&] { v.as_int(); });
      answers_or_throws([&] { v.as_uint(); });
      answers_or_throws([&] { v.as_double(); });
      answers_or_throws([&] { v.as_bool(); });
      answers_or_throws([&] { v.as_string(); });
      answers_or_throws([&] { v.as_ints(); });
      answers_or_throws([&] { v.as_floats(); });
      answers_or_throws([&] { v.as_strings(); });
      answers_or_throws([&] { v.int_at(0); });
      answers_or_throws([&] { v.double_at(v.size()); });
    }
  } catch (const lazygrad::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
