#include "nn/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "lazygrad/error.h"

namespace lazygrad {

namespace {

// Unique among the saves of this process; the pid makes it unique among processes.
std::string temporary_name(const std::string& target) {
  static std::atomic<unsigned long> count{0};
  return target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(count++);
}

std::string directory_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path, std::string caller)
    : caller_(std::move(caller)), target_(path) {
  std::error_code ec;
  if (std::filesystem::is_symlink(path, ec)) {
    const auto resolved = std::filesystem::canonical(path, ec);
    if (!ec) target_ = resolved.string();  // a dangling link is replaced itself
  }
  // O_EXCL: never write into a file someone else created; 0666 lets the umask decide, as for open().
  for (int attempt = 0; fd_ < 0; attempt++) {
    temporary_ = temporary_name(target_);
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt == 100)) {
      const int error = errno;
      throw Error(caller_ + ": \"" + path + "\": cannot create a temporary file in \"" +
                  directory_of(target_) + "\": " + std::strerror(error));
    }
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_.c_str());
}

void AtomicFile::fail(const std::string& what) const {
  const int error = errno;  // before anything below can change it
  throw Error(caller_ + ": \"" + target_ + "\": " + what + ": " + std::strerror(error) +
              " (the previous file, if any, is unchanged)");
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write");
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void AtomicFile::commit() {
  // The data must be on disk before the rename is: otherwise a crash could leave the new name on
  // an empty or partial file.
  if (::fsync(fd_) != 0) fail("cannot flush to disk");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close");
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail("cannot rename the temporary file over it");
  committed_ = true;
  // Makes the rename itself durable. Some file systems cannot sync a directory; the file is in
  // place either way, so a failure here is not an error.
  const int dir = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace lazygrad
