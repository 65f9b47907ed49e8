// The on-disk kernel cache: files named by a content hash, written atomically (temp file + rename)
// so concurrent processes are safe, and verified on load so a corrupt entry is rebuilt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lazygrad {

uint64_t fnv1a(const std::string& data, uint64_t seed = 0xcbf29ce484222325ULL);
std::string hex64(uint64_t v);

std::string cache_dir();  // created if missing
std::optional<std::string> read_file(const std::string& path);
// Write data to path through a unique temp file and rename: readers see all of it or none.
void write_file_atomic(const std::string& path, const std::string& data);

}  // namespace lazygrad
