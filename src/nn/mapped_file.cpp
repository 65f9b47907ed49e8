#include "nn/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "lazygrad/error.h"

namespace lazygrad {

namespace {

// Closes the descriptor on every path out of open(): the mapping does not need it.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path, std::string_view caller) {
  auto fail = [&](const std::string& what) -> Error {
    return Error(std::string(caller) + ": \"" + path + "\": " + what);
  };
  // The system's reason, read before building the message can change errno.
  auto fail_errno = [&](const char* what) -> Error {
    const int error = errno;
    return fail(std::string(what) + ": " + std::strerror(error));
  };
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw fail_errno("cannot open");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw fail_errno("cannot stat");
  // A directory opens fine and a FIFO or device has no meaningful size: neither is a checkpoint.
  if (!S_ISREG(st.st_mode)) throw fail("not a regular file");
  if (static_cast<uintmax_t>(st.st_size) > SIZE_MAX) throw fail("too large to map");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(path, nullptr, 0));
  void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd.get(), 0);
  if (data == MAP_FAILED) throw fail_errno("cannot map");
  // The pages mapped now, read-only (MADV_POPULATE_READ: no private copies, the file's later writes
  // still show through), when the file fits in half the memory: a model's first forward otherwise
  // takes a page fault per 4 KiB of weights it touches, paid by the prompt instead of by the load
  // (GPT-2 124M's 130-token prompt through `lazygrad generate`: its products ran at 60-115 GFLOP/s
  // instead of 185). A larger file stays lazy; a kernel without the advice (before Linux 5.14)
  // refuses it, which changes nothing else.
  constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ, which glibc 2.36's headers may lack
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0 && size <= static_cast<size_t>(pages) * static_cast<size_t>(page_size) / 2)
    (void)::madvise(data, size, kPopulateRead);
  return std::shared_ptr<const MappedFile>(new MappedFile(path, static_cast<std::byte*>(data), size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace lazygrad
