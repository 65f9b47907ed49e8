// What compiling one CPU kernel costs with the in-process compiler (LAZYGRAD_CPU_COMPILER=llvm:
// clang and LLVM 19 inside lazygrad, the object linked in by ORC's JIT) against the C path's `cc`
// process (a kernel alone: `cc LAZYGRAD_CFLAGS -o k.so k.c -lm`, then dlopen): kernels taken at
// random from a kernel cache (LAZYGRAD_CACHE after a cold run), one at a time, on one thread.
// Prints the median and p90 of each and their ratio.
//
//   ./build/bench_llvm_compile CACHE_DIR [--count 64]
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "runtime/cpu/llvm_compiler.h"

namespace fs = std::filesystem;
using namespace lazygrad;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double median, p90;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 9 / 10]};
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// `<name>-<key>.c` holds kernel `name`, whose entry is `<name>_entry`.
std::string entry_of(const fs::path& c) {
  const std::string stem = c.stem().string();
  return stem.substr(0, stem.rfind('-')) + "_entry";
}

}  // namespace

int main(int argc, char** argv) {
  std::string cache;
  int count = 64;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--count" && i + 1 < argc)
      count = std::atoi(argv[++i]);
    else if (a.rfind("--", 0) != 0)
      cache = a;
  }
  if (cache.empty() || !fs::is_directory(cache)) {
    std::fprintf(stderr,
                 "usage: bench_llvm_compile CACHE_DIR [--count N] (a kernel cache after a cold run)\n");
    return 2;
  }
  if (!llvm_compiler_built()) {
    std::printf("skip: %s\n", llvm_compiler_description().c_str());
    return 0;
  }
  std::vector<fs::path> kernels;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".c" && e.path().filename().string().rfind("batch-", 0) != 0)
      kernels.push_back(e.path());
  std::sort(kernels.begin(), kernels.end());
  std::shuffle(kernels.begin(), kernels.end(), std::mt19937(0));
  if (static_cast<int>(kernels.size()) > count) kernels.resize(count);
  if (kernels.empty()) {
    std::fprintf(stderr, "bench_llvm_compile: no kernel sources (*.c) in %s\n", cache.c_str());
    return 2;
  }
  const std::string cc = std::getenv("CC") ? std::getenv("CC") : "cc";
  const std::string cflags = "-O2 -march=native -fPIC -shared -fwrapv -fno-math-errno -ffp-contract=off";
  const fs::path tmp = fs::temp_directory_path() / ("bench_llvm_compile." + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::printf("%s\n%s\n", bench::cpu_model().c_str(), llvm_compiler_description().c_str());
  compile_c_in_process("int lg_warm_up(void) { return 0; }\n", "warm-up.c");  // the JIT and target, once

  std::vector<double> in_process, c_path;
  for (size_t i = 0; i < kernels.size(); i++) {
    const std::string source = read_all(kernels[i].string()), entry = entry_of(kernels[i]);
    auto t0 = std::chrono::steady_clock::now();
    std::string why;
    auto loaded = load_object(compile_c_in_process(source, kernels[i].filename().string()), entry, &why);
    if (!loaded || !loaded->find(entry)) {
      std::fprintf(stderr, "bench_llvm_compile: %s did not load in process: %s\n", kernels[i].c_str(),
                   why.c_str());
      return 1;
    }
    in_process.push_back(ms_since(t0));
    const std::string so = (tmp / ("k" + std::to_string(i) + ".so")).string();
    t0 = std::chrono::steady_clock::now();
    const std::string cmd = cc + " " + cflags + " -o " + bench::shell_quote(so) + " " +
                            bench::shell_quote(kernels[i].string()) + " -lm >/dev/null 2>&1";
    void* h = std::system(cmd.c_str()) == 0 ? dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!h || !dlsym(h, entry.c_str())) {
      std::fprintf(stderr, "bench_llvm_compile: %s did not build or load with %s\n", kernels[i].c_str(),
                   cc.c_str());
      return 1;
    }
    c_path.push_back(ms_since(t0));
    dlclose(h);
  }
  fs::remove_all(tmp);
  const Stats l = stats(in_process), c = stats(c_path);
  std::printf("%zu kernels from %s, one at a time\n", kernels.size(), cache.c_str());
  std::printf("in process  median %6.2f ms  p90 %6.2f ms  (compiled, linked in, entry looked up)\n", l.median,
              l.p90);
  std::printf("%-11s median %6.2f ms  p90 %6.2f ms  (%s, then dlopen)\n", cc.c_str(), c.median, c.p90,
              cflags.c_str());
  std::printf("ratio (cc over in process, medians): %.1fx\n", c.median / l.median);
  return 0;
}
