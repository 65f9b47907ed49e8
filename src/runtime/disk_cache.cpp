#include "runtime/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lazygrad/error.h"
#include "lazygrad/runtime.h"

namespace lazygrad {

uint64_t fnv1a(const std::string& data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string cache_dir() {
  const std::string& dir = settings().cache_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("kernel cache: cannot create " + dir + ": " + ec.message());
  return dir;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file_atomic(const std::string& path, const std::string& data) {
  static std::atomic<int> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) throw Error("kernel cache: cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace lazygrad
