// fuzz_compiler: lazygrad's compiler checked against a reference on random programs.
//
//   fuzz_compiler --seeds 0:60 --max-compiles 500   the fixed range `make test` runs
//   fuzz_compiler --seconds 900 [--start S]         as long as it takes (make fuzz-compiler)
//   fuzz_compiler --seeds 9445,49170                 the listed seeds (what long runs found)
//   fuzz_compiler --device CL --seeds 0:30           the modes on another device (ctest's cl label)
//   fuzz_compiler --device CPU,CPU:1 --seeds 0:60    every input sharded across the two devices
//   fuzz_compiler --seconds 300 --max-elements 400000  larger values: the scheduler's rules for
//                                                    values of 4096 elements and more, staged panels
//
// Each program runs in every mode (fuzz.h); a failure prints what differed and the smallest
// program still failing as C++. Exit status 1 when anything failed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fuzz.h"
#include "generate.h"
#include "multi/shard.h"
#include "renderer/renderer.h"
#include "runtime/device.h"

using namespace lazygrad;
using namespace lazygrad::fuzz;

namespace {

[[noreturn]] void usage() {
  std::cerr << "usage: fuzz_compiler [--seeds A:B | --seeds S,S,... | --seconds N [--start S]] "
               "[--max-compiles N] [--samples K]\n"
               "                     [--device D] [--max-elements N] [--no-minimize] [--verbose]\n";
  std::exit(2);
}

// A limit of a device the modes run on that the error is, or "": a device without float64 (WEBGPU:
// Target::float64) refuses a float64 buffer when the program realizes one. Such a program says
// nothing about the compiler, so it is skipped, counted apart.
std::string device_limit(const std::string& error, const std::string& devices) {
  for (const auto& d : split_devices(devices))
    if (!lazygrad::device(d).renderer().target().float64 && error.find("has no float64") != std::string::npos)
      return d + " holds no float64 (its target says; its buffers refuse it)";
  return "";
}

// Whether a program has subnormal values (a step's, in the reference) where a device it runs on
// flushes them to zero (SwiftShader's WebGPU: Target::keeps_subnormals), so that a mismatch can be
// that flush or what follows from it (a division by a flushed value): another known device limit,
// which the parity suites skip too.
bool subnormals_flushed(const std::vector<RefTensor>& ref, const std::string& devices) {
  bool flushes = false;
  for (const auto& d : split_devices(devices))
    flushes |= !lazygrad::device(d).renderer().target().keeps_subnormals;
  if (!flushes) return false;
  const double tiny = std::numeric_limits<float>::min();
  for (const RefTensor& t : ref)
    for (double x : t.f)
      if (x != 0 && std::fabs(x) < tiny) return true;
  return false;
}

// A whole non-negative number, or the usage.
uint64_t number(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) usage();
  return std::stoull(s);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t start = 0, end = 0;
  double seconds = 0;
  int64_t max_compiles = -1;
  int samples = 2;
  std::string device = "CPU";
  bool do_minimize = true, verbose = false;
  GenOptions gen;
  std::vector<uint64_t> listed;  // --seeds S,S,...: these seeds, in order
  for (int a = 1; a < argc; a++) {
    std::string arg = argv[a];
    auto next = [&]() -> std::string {
      if (a + 1 >= argc) usage();
      return argv[++a];
    };
    if (arg == "--seeds") {
      std::string v = next();
      size_t colon = v.find(':');
      if (colon != std::string::npos) {
        start = number(v.substr(0, colon));
        end = number(v.substr(colon + 1));
      } else {
        for (size_t at = 0; at <= v.size();) {
          size_t comma = std::min(v.find(',', at), v.size());
          listed.push_back(number(v.substr(at, comma - at)));
          at = comma + 1;
        }
      }
    } else if (arg == "--seconds") {
      seconds = std::stod(next());
    } else if (arg == "--start") {
      start = number(next());
    } else if (arg == "--max-compiles") {
      max_compiles = std::stoll(next());
    } else if (arg == "--samples") {
      samples = std::stoi(next());
    } else if (arg == "--device") {
      // A tuple ("CPU,CPU:1") runs the modes with every input sharded across those devices.
      std::vector<std::string> names;
      for (const auto& d : split_devices(next())) names.push_back(canonical_device(d));
      device = join_devices(names);
    } else if (arg == "--max-elements") {
      gen.max_elements = std::stoll(next());
      if (gen.max_elements < 1) usage();
    } else if (arg == "--no-minimize") {
      do_minimize = false;
    } else if (arg == "--verbose") {
      verbose = true;
    } else {
      usage();
    }
  }
  if (!listed.empty()) {
    if (seconds) usage();
    start = 0;
    end = listed.size();
  }
  if (!seconds && end <= start) usage();
  try {
    for (const auto& d : split_devices(device)) lazygrad::device(d);
  } catch (const Error& e) {  // no OpenCL here: skipped (ctest's SKIP_RETURN_CODE), saying why
    std::printf("fuzz_compiler: --device %s is not here: %s\n", device.c_str(), e.what());
    return 77;
  }
  set_flush_denormals(false);  // the reference keeps subnormals, as PyTorch does
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int64_t kernels0 = GlobalCounters::kernel_count, compiles0 = GlobalCounters::compile_count;
  int graphs = 0, failures = 0, unsupported = 0, limited = 0;
  std::map<std::string, int> refused;  // lazygrad's refusals while building, by message
  std::map<std::string, int> limits;   // the device limits programs met (device_limit), by limit
  std::string stopped = seconds ? "the time budget" : "the end of the seed range";
  uint64_t at = start, seed = start;  // at: the seed, or its index in the list
  for (;; at++) {
    if (seconds ? elapsed() >= seconds : at >= end) break;
    seed = listed.empty() ? at : listed[at];
    if (max_compiles >= 0 && GlobalCounters::compile_count - compiles0 >= max_compiles) {
      stopped = "the budget of " + std::to_string(max_compiles) + " kernel compiles";
      break;
    }
    fuzz::Program p = generate(seed, gen);
    std::vector<RefTensor> ref = interpret(p);
    graphs++;
    if (verbose) std::cout << "seed " << seed << ": " << p.steps.size() << " steps\n" << std::flush;
    for (const Mode& m : modes_for(seed, samples, device)) {
      Outcome got = run_lazygrad(p, m);
      if (got.unsupported) {
        unsupported++;
        refused[got.error.substr(0, 160)]++;
        break;
      }
      if (std::string limit = device_limit(got.error, m.device); !limit.empty()) {
        limited++;
        limits[limit]++;
        break;
      }
      auto mm = compare(p, ref, got);
      if (!mm) continue;
      if (subnormals_flushed(ref, m.device)) {
        limited++;
        limits[m.device + " flushes subnormal values to zero (its target says), and the program has some"]++;
        break;
      }
      failures++;
      std::cout << "FAIL seed " << seed << ", mode " << m.name << ": " << mm->what << "\n";
      fuzz::Program small = do_minimize ? minimize(p, m) : p;
      auto again = check(small, m);
      if (!again) small = p;  // the failure needs more than one run's state: the whole program
      std::cout << report(small, m, again ? *again : *mm) << std::flush;
      break;  // one report per program
    }
  }
  std::string range = std::to_string(start) + ".." + std::to_string(at ? at - 1 : 0);
  if (!listed.empty()) {
    range.clear();
    for (uint64_t s : listed) range += (range.empty() ? "" : ",") + std::to_string(s);
  }
  std::printf(
      "fuzz_compiler: %d graphs (seeds %s) x %zu modes, %lld kernels run, %lld compiled, %.1f s: %d "
      "failing "
      "(stopped at %s)\n",
      graphs, range.c_str(), modes_for(0, samples, device).size(),
      static_cast<long long>(GlobalCounters::kernel_count - kernels0),
      static_cast<long long>(GlobalCounters::compile_count - compiles0), elapsed(), failures,
      stopped.c_str());
  if (unsupported) {
    std::printf("  %d graphs used a case lazygrad refuses while building (not counted as failures):\n",
                unsupported);
    for (const auto& [msg, n] : refused) std::printf("    %3d x %s\n", n, msg.c_str());
  }
  if (limited) {
    std::printf("  %d graphs met a known limit of the device (not counted as failures):\n", limited);
    for (const auto& [msg, n] : limits) std::printf("    %3d x %s\n", n, msg.c_str());
  }
  return failures ? 1 : 0;
}
