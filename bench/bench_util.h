// What the benchmark programs share: a clock, argument parsing, DEBUG=2 capture, shell quoting.
#pragma once

#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

// The PyTorch peers' --device: where lazygrad's default device (DEVICE) is a GPU, PyTorch runs on
// CUDA too; the peer then says "skip ..." when its PyTorch has no CUDA.
inline std::string torch_device_flag() {
  return lazygrad::default_device().rfind("CUDA", 0) == 0 ? " --device cuda" : "";
}

// Whether lazygrad's default device (DEVICE) opens; if not, prints "skip: why" (a bench run with
// DEVICE=CUDA on a machine without a GPU has nothing to measure, and says so instead of failing).
inline bool default_device_here() {
  try {
    lazygrad::set_default_device(lazygrad::default_device());
    return true;
  } catch (const std::exception& e) {
    std::printf("skip: %s\n", e.what());
    return false;
  }
}

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

// One command-line argument: `--name=value`, `--name value` for the names in `with_value` (then i
// moves past the value), or a name alone. text is the argument as given, for error messages.
// -h and --help call usage(argv0, ""), which exits.
struct Flag {
  std::string name, value, text;
};
template <class Usage>
Flag next_flag(int argc, char** argv, int& i, Usage usage,
               std::initializer_list<std::string_view> with_value) {
  Flag f{argv[i], "", argv[i]};
  if (f.name == "-h" || f.name == "--help") usage(argv[0], "");
  if (auto eq = f.name.find('='); eq != std::string::npos) {
    f.value = f.name.substr(eq + 1);
    f.name = f.name.substr(0, eq);
  } else if (std::find(with_value.begin(), with_value.end(), f.name) != with_value.end()) {
    if (i + 1 >= argc) usage(argv[0], f.name + " needs a value");
    f.value = argv[++i];
  }
  return f;
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

// The CPU's model name (/proc/cpuinfo), printed beside every figure.
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// s as one word for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Debian's OpenBLAS builds, which torch picks up through libblas.so.3 ahead of the system's
// alternative (the reference BLAS unless OpenBLAS was installed). The OpenMP build shares torch's
// OpenMP threads; the pthreads one starts its own.
inline std::string openblas_dir() {
  for (const char* dir :
       {"/usr/lib/x86_64-linux-gnu/openblas-openmp", "/usr/lib/x86_64-linux-gnu/openblas-pthread"})
    if (std::filesystem::exists(std::filesystem::path(dir) / "libblas.so.3")) return dir;
  return "";
}

// The environment PyTorch runs under: every BLAS and OpenMP pool at our thread count, OpenMP threads
// that sleep rather than spin between parallel regions (the two pools then do not fight over the
// cores), and OpenBLAS's AVX-512 kernels whatever CPU it detects (0.3.21 takes this AMD EPYC for a
// Cooperlake, whose sgemm kernels are SkylakeX's; a CPU it does not know gets older kernels).
inline std::string torch_env(int threads) {
  std::string t = std::to_string(threads);
  std::string env = "OMP_NUM_THREADS=" + t + " OPENBLAS_NUM_THREADS=" + t + " MKL_NUM_THREADS=" + t +
                    " OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=SKYLAKEX";
  if (std::string dir = openblas_dir(); !dir.empty()) {
    const char* old = std::getenv("LD_LIBRARY_PATH");
    env += " LD_LIBRARY_PATH=" + shell_quote(dir + (old && *old ? ":" + std::string(old) : ""));
  }
  return env;
}

// The Python that runs the PyTorch peers: Debian's /usr/bin/python3 (python3-torch), or
// LAZYGRAD_TORCH_PYTHON (a GPU machine's PyTorch with CUDA lives elsewhere).
inline std::string torch_python() {
  const char* p = std::getenv("LAZYGRAD_TORCH_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

// Runs a PyTorch peer, scripts/<script> under source_dir, with torch_python() under
// torch_env(threads), as `<script> --threads <threads><args>`, and reads what it prints into r
// (a struct with ok, header and message). A line "torch ..." is r.header, "skip <why>" sets
// r.message; every other line goes to parse(word, rest): its first word and a stream over the
// rest, which sets r.ok when the results are in. Without results and a message, r.message says
// that the script failed.
template <class Result, class Parse>
void run_torch_script(const std::string& source_dir, const std::string& script, int threads,
                      const std::string& args, Result& r, Parse parse) {
  const std::string cmd = "env " + torch_env(threads) + " " + shell_quote(torch_python()) + " " +
                          shell_quote(source_dir + "/scripts/" + script) + " --threads " +
                          std::to_string(threads) + args + torch_device_flag();
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    r.message = "could not start " + torch_python();
    return;
  }
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "torch")
      r.header = line;
    else if (word == "skip")
      r.message = line.substr(5);
    else
      parse(word, in);
  }
  int status = pclose(pipe);
  if (!r.ok && r.message.empty())
    r.message = "scripts/" + script + " failed (exit status " + std::to_string(status) + ")";
}

}  // namespace bench
