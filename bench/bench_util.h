// What the benchmark programs share: a clock, argument parsing, DEBUG=2 capture, shell quoting.
#pragma once

#include <lazygrad/lazygrad.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The value of an integer flag, at least `min`; otherwise usage(argv0, why), which exits.
template <class Usage>
int64_t int_flag(Usage usage, const char* argv0, const std::string& flag, const std::string& text,
                 int64_t min = 1) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < min)
    usage(argv0,
          flag +
              (min == 1 ? " needs a positive integer" : " needs a whole number >= " + std::to_string(min)) +
              ", got '" + text + "'");
  return v;
}

// Runs fn with DEBUG=2 and returns the lines it logged that start with `prefix` (the runtime's
// debug_log writes to std::cerr).
inline std::vector<std::string> debug2_lines(const std::function<void()>& fn,
                                             const std::string& prefix = "*** ") {
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  int debug = lazygrad::settings().debug;
  lazygrad::set_debug(2);
  fn();
  lazygrad::set_debug(debug);
  std::cerr.rdbuf(old);
  std::vector<std::string> out;
  std::istringstream in(captured.str());
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

// s as one word for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace bench
