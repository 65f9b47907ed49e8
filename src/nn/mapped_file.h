// MappedFile: a whole file mapped into memory, for readers of large files (checkpoints) that should
// not copy what they only look at.
//
// The mapping is private and writable: a page written through it is copied first, so the file never
// changes (tensors built over the mapping may be updated in place), and MAP_NORESERVE keeps the
// kernel from reserving swap for pages that are never written. Replacing the file by rename (as
// save_safetensors does) leaves the mapping on the old contents; truncating the file in place while
// it is mapped makes reading the lost pages fault (SIGBUS), as with any mapping.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace lazygrad {

class MappedFile {
 public:
  // Throws lazygrad::Error naming `caller` and the path when the file cannot be opened or mapped,
  // or is not a regular file.
  static std::shared_ptr<const MappedFile> open(const std::string& path, std::string_view caller);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  // Writable: the mapping is private (see above).
  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  MappedFile(std::string path, std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  std::byte* data_;  // null for an empty file: mmap cannot map 0 bytes
  size_t size_;
};

}  // namespace lazygrad
