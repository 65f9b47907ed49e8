// A tensor over a range of a mapped file's bytes, shared by the checkpoint readers (safetensors,
// GGUF) so that both make the same choice between pointing at the file and copying it.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "lazygrad/tensor.h"
#include "nn/mapped_file.h"

namespace lazygrad {

// `bytes` (inside `file`'s mapping) hold the elements of `shape` in `dtype`, row-major. Aligned to
// the element size, they become a Buffer over the mapping, which it keeps alive (no copy); the
// mapping is private and writable, so an in-place update copies the touched page and never reaches
// the file. Misaligned bytes (legal in some files) would make the kernels' typed loads undefined,
// so they are copied, as is an empty range (nothing to point at).
Tensor tensor_over_mapping(const std::shared_ptr<const MappedFile>& file, std::span<std::byte> bytes,
                           const Shape& shape, DType dtype);

}  // namespace lazygrad
