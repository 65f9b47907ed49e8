// The on-disk kernel cache: files named by a content hash, written atomically (temp file + rename)
// so concurrent processes are safe, and verified on load so a corrupt entry is rebuilt.
//
// Whatever is found in the folder is not trusted: an entry that is a symlink, a FIFO, a device or a
// directory reads as missing and is replaced, never followed or waited on. A folder deleted while
// the process runs is made again; one that cannot be made or written to when the process first uses
// it (read-only, on a full or read-only disk) gives way to a private temporary folder for the rest
// of the process, with one warning naming both folders and why. A write that fails later (the disk
// filled meanwhile) is an Error naming the file and the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lazygrad {

uint64_t fnv1a(const std::string& data, uint64_t seed = 0xcbf29ce484222325ULL);
std::string hex64(uint64_t v);

// The folder entries go in: settings().cache_dir, made (again) if missing, or the fallback above.
std::string cache_dir();
// The bytes of the regular file at path; nullopt when there is none, or when the path is anything
// else (opened with O_NOFOLLOW and O_NONBLOCK, then checked with fstat).
std::optional<std::string> read_file(const std::string& path);
// Writes data to path through a unique temp file and a rename: readers see all of it or none. A
// directory in path's place is removed first. Throws Error naming the file and the system's reason.
void write_file_atomic(const std::string& path, const std::string& data);
// Renames from over to, removing a directory in to's place first. Throws Error with the reason.
void replace_file(const std::string& from, const std::string& to);
// Appends line to the log at path (created if missing), unless path is not a regular file.
void append_line(const std::string& path, const std::string& line);

// A kernel compiled in `seconds` into the cache entry `base` (its path without the extension):
// GlobalCounters, under one lock for every backend (compiles run on several threads), and one line
// in the cache folder's compile-log.tsv, shared by every process using the cache (`make test` sums
// it to report the suite's compile budget).
void record_compile(const std::string& base, double seconds);
// A kernel found in the disk cache (GlobalCounters::cache_hits, under the same lock).
void record_cache_hit();

}  // namespace lazygrad
