// Files for the fuzz targets: the loaders take paths, so each input is written where a path reaches
// it. A memory file (memfd, opened by its /proc/self/fd path) serves a loader of one file without
// touching the disk; a loader of a folder gets a private temporary folder, made once per process.
// Also the checks that the tokenizer targets share.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lazygrad/error.h"

namespace lazygrad::fuzz {

// Replaces the contents of the open file `fd` with `bytes` (aborts on an I/O error: not the loader's fault).
inline void write_all(int fd, std::span<const uint8_t> bytes) {
  if (::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
}

// A memory file that lives as long as the process, and the path that opens it.
class MemoryFile {
 public:
  explicit MemoryFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
  }
  const std::string& write(std::span<const uint8_t> bytes) const {
    write_all(fd_, bytes);
    return path_;
  }

 private:
  int fd_;
  std::string path_ = "/proc/self/fd/" + std::to_string(fd_);
};

// A temporary folder of this process, removed at exit.
inline const std::filesystem::path& temp_folder() {
  static const std::filesystem::path folder = [] {
    std::string name = (std::filesystem::temp_directory_path() / "lazygrad_fuzz_XXXXXX").string();
    if (!::mkdtemp(name.data())) std::abort();
    static const std::string remove_at_exit = name;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(remove_at_exit, ec);
    });
    return std::filesystem::path(name);
  }();
  return folder;
}

// Writes `bytes` to the file `name` of temp_folder(), and gives its path.
inline std::string write_file(const std::string& name, std::span<const uint8_t> bytes) {
  const std::string path = (temp_folder() / name).string();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (bytes.size() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) ||
      std::fclose(f) != 0)
    std::abort();
  return path;
}

// The input split at its first 0 byte: the part before, and the part after (none if there is no 0 byte).
struct Split {
  std::span<const uint8_t> first, rest;
  bool has_rest = false;
};
inline Split split_at_zero(const uint8_t* data, size_t size) {
  const auto* zero = static_cast<const uint8_t*>(size ? std::memchr(data, 0, size) : nullptr);
  if (!zero) return {{data, size}, {}, false};
  const size_t cut = static_cast<size_t>(zero - data);
  return {{data, cut}, {zero + 1, size - cut - 1}, true};
}

// The tokenizer checks (Tokenizer is lazygrad::Tokenizer or GPT2Tokenizer); each aborts on a failure.

// Every id is in the tokenizer's vocabulary.
template <class Tokenizer>
void check_ids(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  for (const int32_t id : ids)
    if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size()) std::abort();
}

// text encoded with add_special and parse_special gives ids in the vocabulary, which decode (skipping
// the special tokens) and token_bytes take.
template <class Tokenizer>
void check_special_encoding(const Tokenizer& tokenizer, std::string_view text) {
  const std::vector<int32_t> special = tokenizer.encode(text, {.add_special = true, .parse_special = true});
  check_ids(tokenizer, special);
  tokenizer.decode(special, /*skip_special=*/true);
  for (const int32_t id : special) tokenizer.token_bytes(id);
}

// An id outside the vocabulary is an Error.
template <class Tokenizer>
void check_outside_id_throws(const Tokenizer& tokenizer) {
  const int32_t outside = static_cast<int32_t>(tokenizer.vocab_size());
  try {
    tokenizer.decode(std::span(&outside, 1));
    std::abort();
  } catch (const lazygrad::Error&) {
  }
}

}  // namespace lazygrad::fuzz
