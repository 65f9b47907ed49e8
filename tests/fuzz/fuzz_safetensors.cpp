// libFuzzer target for load_safetensors: any bytes must load or throw lazygrad::Error, never crash,
// read out of bounds or leak (build with the sanitizers: see docs/safetensors.md).
//
//   mkdir -p /tmp/st-corpus && ./build-fuzz/fuzz_safetensors -max_len=4096 /tmp/st-corpus
//   tests/fixtures/safetensors
//
// The fixture files seed the corpus (libFuzzer adds new inputs to the first folder only). Each
// input is written to a memory file (memfd), so the loader runs its real path (open, fstat, mmap)
// without touching the disk.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "lazygrad/error.h"
#include "lazygrad/safetensors.h"

namespace {

int memory_file() {
  static const int fd = [] {
    const int f = ::memfd_create("fuzz_safetensors", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

void write_all(int fd, const uint8_t* data, size_t size) {
  if (::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memory_file();
  write_all(fd, data, size);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
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
