// AtomicFile: writes a file so that whoever opens its path sees the old contents or the new ones,
// never a mix. The bytes go to a temporary file next to the target (same directory, so the same file
// system), which commit() flushes to disk and renames over the target: rename is atomic, so a save
// interrupted by an error, a crash or a power cut leaves the previous file as it was.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace lazygrad {

class AtomicFile {
 public:
  // Creates the temporary file. A target that is a symbolic link is resolved, so the file it points
  // to is replaced (as plain open() and write() would) rather than the link. Errors are
  // lazygrad::Error naming `caller`, the path and the system's reason.
  AtomicFile(const std::string& path, std::string caller);
  // Without commit(), removes the temporary file: the target is untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  // Flushes the data to disk, then renames the temporary file over the target.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string caller_;
  std::string target_;
  std::string temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace lazygrad
