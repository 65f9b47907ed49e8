#include "runtime/disk_cache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "lazygrad/counters.h"
#include "lazygrad/error.h"
#include "lazygrad/runtime.h"

namespace lazygrad {

namespace fs = std::filesystem;

namespace {

std::string reason(int err) { return std::error_code(err, std::generic_category()).message(); }

// A name no other process or thread uses at the same time: path.tag.pid.counter.
std::string unique_name(const std::string& path, const char* tag) {
  static std::atomic<int> counter{0};
  return path + "." + tag + "." + std::to_string(getpid()) + "." + std::to_string(counter++);
}

// Opens path for reading without following a symlink or waiting on a FIFO; -1 unless it is a
// regular file.
int open_regular(const std::string& path, int flags, mode_t mode = 0) {
  int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

bool write_all(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Why dir cannot hold cache entries, or "" when it can: it is made if missing, and a file is made
// and removed in it (write permission bits do not tell: root writes anywhere but on a read-only
// disk).
std::string unusable(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "cannot create it: " + ec.message();
  if (!fs::is_directory(dir, ec)) return "it is not a folder";
  std::string probe = unique_name(dir + "/.probe", "w");
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write in it: " + reason(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

// The folder in use. The configured one is checked with a probe file once, and with a stat on
// each later call, so one deleted meanwhile is made (and probed) again.
struct CacheFolder {
  std::mutex mu;
  bool probed = false;
  std::string fallback;  // a private temporary folder, once the configured one failed
  pid_t made_by = 0;     // removed at exit by the process that made it, not by a forked child
  ~CacheFolder() {
    std::error_code ec;
    if (!fallback.empty() && made_by == getpid()) fs::remove_all(fallback, ec);
  }
};

CacheFolder& cache_folder() {
  static CacheFolder f;
  return f;
}

}  // namespace

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
  CacheFolder& f = cache_folder();
  std::lock_guard<std::mutex> lock(f.mu);
  if (!f.fallback.empty()) return f.fallback;
  const std::string& dir = settings().cache_dir;
  struct stat st;
  if (f.probed && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  std::string why = unusable(dir);
  if (why.empty()) {
    f.probed = true;
    return dir;
  }
  std::error_code ec;
  std::string tmpl = (fs::temp_directory_path(ec) / "lazygrad-cache-XXXXXX").string();
  if (ec || !::mkdtemp(tmpl.data()))
    throw Error("kernel cache: " + dir + ": " + why + "; no temporary folder could be made either (" +
                (ec ? ec.message() : reason(errno)) + ")");
  f.fallback = tmpl;
  f.made_by = getpid();
  std::fprintf(stderr,
               "lazygrad: warning: the kernel cache %s cannot be used (%s); kernels are cached in %s for "
               "this process only (set LAZYGRAD_CACHE to a folder you can write)\n",
               dir.c_str(), why.c_str(), tmpl.c_str());
  return f.fallback;
}

std::optional<std::string> read_file(const std::string& path) {
  int fd = open_regular(path, O_RDONLY);
  if (fd < 0) return std::nullopt;
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

void write_file_atomic(const std::string& path, const std::string& data) {
  std::string tmp = unique_name(path, "tmp");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {  // the folder was deleted: make it again
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  }
  if (fd < 0) throw Error("kernel cache: cannot write " + tmp + ": " + reason(errno));
  bool ok = write_all(fd, data);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    throw Error("kernel cache: cannot write " + tmp + ": " + reason(err));
  }
  replace_file(tmp, path);
}

void replace_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return;
  int err = errno;
  if (err == EISDIR || err == ENOTEMPTY || err == EEXIST) {  // a directory in the entry's place
    std::error_code ec;
    fs::remove_all(to, ec);
    if (::rename(from.c_str(), to.c_str()) == 0) return;
    err = errno;
  }
  ::unlink(from.c_str());
  throw Error("kernel cache: cannot rename " + from + " to " + to + ": " + reason(err));
}

void append_line(const std::string& path, const std::string& line) {
  int fd = open_regular(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;  // a log: losing a line is better than failing the computation
  write_all(fd, line + "\n");
  ::close(fd);
}

namespace {
std::mutex& counters_mu() {
  static std::mutex mu;
  return mu;
}
}  // namespace

void record_compile(const std::string& base, double seconds) {
  {
    std::lock_guard<std::mutex> lock(counters_mu());
    GlobalCounters::compile_count++;
    GlobalCounters::compile_s += seconds;
  }
  char entry[64];
  std::snprintf(entry, sizeof entry, "\t%.4f", seconds);
  append_line(cache_dir() + "/compile-log.tsv", base.substr(base.rfind('/') + 1) + entry);
}

void record_cache_hit() {
  std::lock_guard<std::mutex> lock(counters_mu());
  GlobalCounters::cache_hits++;
}

}  // namespace lazygrad
