// The compile-only CUDA check: every kernel in a folder that LAZYGRAD_CUDA_EXPORT filled
// (engine/kernel_export.h) compiles with NVRTC to PTX for each arch, many kernels per NVRTC
// program, with no GPU. A program that fails is compiled again kernel by kernel, and each failing
// kernel is printed with NVRTC's log. Exits 77 (ctest's skip) where there is no NVRTC.
//   cuda_compile DIR [--arch compute_80,compute_90] [--batch 300]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lazygrad/error.h"
#include "runtime/cuda/nvrtc.h"

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Kernels side by side in one translation unit: each in a namespace of its own, so their helpers
// and typedefs do not meet; their entries are extern "C" and already have distinct names.
std::string batch_source(const std::vector<std::string>& sources, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; i++)
    out += "namespace lg_k" + std::to_string(i) + " {\n" + sources[i] + "\n}\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: cuda_compile DIR [--arch compute_80,compute_90] [--batch N]\n";
    return 2;
  }
  std::filesystem::path dir = argv[1];
  std::vector<std::string> archs{"compute_80", "compute_90"};
  size_t batch = 300;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--arch") archs = split(argv[i + 1]);
    if (a == "--batch") batch = std::max(1, std::atoi(argv[i + 1]));
  }
  if (std::string why = lazygrad::nvrtc_missing(); !why.empty()) {
    std::cout << "SKIP: " << why << "\n";
    return 77;
  }
  std::vector<std::filesystem::path> files, errors;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".cu") files.push_back(e.path());
    if (e.path().extension() == ".error") errors.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  int failures = 0;
  for (const auto& e : errors) {
    std::cout << "FAIL (not rendered): " << slurp(e);
    failures++;
  }
  if (files.empty()) {
    std::cout << "FAIL: no kernel in " << dir << (ec ? " (" + ec.message() + ")" : "")
              << ": the suites that fill it (LAZYGRAD_CUDA_EXPORT) did not run\n";
    return 1;
  }
  std::vector<std::string> sources;
  for (const auto& f : files) sources.push_back(slurp(f));

  // Batches over the cores: NVRTC compiles separate programs on separate threads.
  struct Job {
    std::string arch;
    size_t begin, end;
  };
  std::vector<Job> jobs;
  for (const auto& arch : archs)
    for (size_t b = 0; b < sources.size(); b += batch)
      jobs.push_back({arch, b, std::min(b + batch, sources.size())});
  std::atomic<size_t> next{0};
  std::mutex out_mu;
  std::atomic<int> failed{0};
  auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t j; (j = next++) < jobs.size();) {
      const Job& job = jobs[j];
      try {
        lazygrad::nvrtc_compile(batch_source(sources, job.begin, job.end), "batch", job.arch);
        continue;
      } catch (const lazygrad::Error&) {
      }
      for (size_t i = job.begin; i < job.end; i++) {  // which ones
        try {
          lazygrad::nvrtc_compile(sources[i], files[i].stem().string(), job.arch);
        } catch (const lazygrad::Error& e) {
          std::lock_guard<std::mutex> lock(out_mu);
          std::cout << "FAIL " << files[i].filename().string() << " (" << job.arch << "): " << e.what()
                    << "\n";
          failed++;
        }
      }
    }
  };
  unsigned n_threads = std::max(1u, std::min(std::thread::hardware_concurrency(), 8u));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n_threads; t++) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  failures += failed;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << sources.size() << " kernels x " << archs.size() << " archs (NVRTC "
            << lazygrad::nvrtc_version() << ", " << jobs.size() << " programs, " << n_threads
            << " threads): " << failures << " failed, " << s << " s\n";
  return failures ? 1 : 0;
}
