#include "nn/mapped_tensor.h"

#include <cstdint>

#include "engine/schedule.h"
#include "runtime/buffer.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

Tensor tensor_over_mapping(const std::shared_ptr<const MappedFile>& file, std::span<std::byte> bytes,
                           const Shape& shape, DType dtype) {
  if (bytes.empty() || reinterpret_cast<uintptr_t>(bytes.data()) % itemsize(dtype) != 0)
    return Tensor::from_bytes(bytes.data(), bytes.size(), shape, dtype);
  const auto numel = static_cast<int64_t>(bytes.size() / itemsize(dtype));
  auto buffer = std::make_shared<Buffer>("CPU", dtype, numel, std::shared_ptr<void>(file, bytes.data()));
  return make_tensor(buffer_view(buffer, shape));
}

}  // namespace lazygrad
