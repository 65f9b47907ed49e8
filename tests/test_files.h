// Files and programs for tests: the fixture folder, reading and writing a file whole, and running the built
// `lazygrad` binary with its output caught (tests of the CLI).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace lazygrad::test {

namespace fs = std::filesystem;

// Whether this binary runs under AddressSanitizer (the sanitizer build, `make sanitize`): there a
// crash is ASan's report and exit status 1, and operator new aborts instead of throwing.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
inline constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// LAZYGRAD_TEST_FIXTURES (ctest sets it), else the source tree's tests/fixtures compiled in by CMake.
inline fs::path fixture_dir() {
  const char* dir = std::getenv("LAZYGRAD_TEST_FIXTURES");
#ifdef LAZYGRAD_FIXTURE_DIR
  if (!dir || !*dir) dir = LAZYGRAD_FIXTURE_DIR;
#endif
  return fs::path(dir ? dir : "tests/fixtures");
}

inline std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// Writes text as the file's whole content (bytes as they are).
inline void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A fresh, empty folder `<name>_<pid>` under the system's temporary folder, for one test (name it
// after the test).
inline fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The built `lazygrad` binary (target lazygrad_cli), next to the test's own.
inline fs::path cli_binary() { return fs::read_symlink("/proc/self/exe").parent_path() / "lazygrad"; }

inline std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

struct RunResult {
  int exit_status = -1;  // -1: killed by a signal
  std::string out, err;
};

// Runs `program args...` with stdout and stderr caught in files in `dir` (stderr is then no
// terminal: the progress bar prints plain lines) and stdin empty. With `kill_after_s`, coreutils'
// timeout kills a program that runs longer (exit status 124 or 137): a guard for a test of
// something that used to hang, so that it fails instead of waiting for ctest's timeout. It is not
// a time the test asserts: give it many times what the program needs.
inline RunResult run_program(const fs::path& program, const std::vector<std::string>& args,
                             const fs::path& dir, int kill_after_s = 0) {
  std::string command = shell_quote(program.string());
  if (kill_after_s > 0) command = "timeout -k 10 " + std::to_string(kill_after_s) + " " + command;
  for (const std::string& a : args) command += " " + shell_quote(a);
  fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  command += " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string()) + " </dev/null";
  int status = std::system(command.c_str());
  RunResult r;
  r.exit_status = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace lazygrad::test
