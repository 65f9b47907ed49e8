// All-reduce between processes over MPI (lazygrad/mpi.h): time and bandwidth by size, float32 sums,
// against PyTorch's torch.distributed all_reduce (gloo) between as many processes on the same sizes.
// Run it plainly: it starts itself under `mpirun -np N` for lazygrad's side, then the PyTorch peer
// (scripts/bench_all_reduce_torch.py), and prints both with their ratio. docs/benchmarks.md
//
//   bench_mpi_all_reduce [--ranks N] [--max-mb M] [--repeats R]
//
// Each time is the best of R, each repetition starting together on every rank (a one-byte exchange
// first). "exchange" is mpi::all_gather of the bytes alone (the transport), "all-reduce" the whole
// of mpi::all_reduce(t).realize(): the bytes sent, the others' received into new buffers, and their
// rank-order sum as a lazygrad kernel. Bus bandwidth is NCCL's: 2 (n - 1) / n * bytes / time, what
// each rank's link carries in a bandwidth-optimal all-reduce.
#include <lazygrad/lazygrad.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

using namespace lazygrad;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::cerr << argv0 << ": " << why << "\n";
  std::cerr << "usage: " << argv0 << " [--ranks N] [--max-mb M] [--repeats R]\n";
  std::exit(why.empty() ? 0 : 2);
}

std::vector<int64_t> sizes(int64_t max_mb) {
  std::vector<int64_t> out;
  for (int64_t bytes = 4096; bytes <= max_mb << 20; bytes *= 4) out.push_back(bytes);
  return out;
}

// The best of `repeats` runs of fn, each begun on every rank at once; fn runs once first (kernels
// compile there).
double best_of(int64_t repeats, const std::function<void()>& fn) {
  std::byte mine{1};
  std::vector<std::byte> all(static_cast<size_t>(mpi::size()));
  fn();
  double best = 1e30;
  for (int64_t i = 0; i < repeats; i++) {
    mpi::all_gather(std::span(&mine, 1), all);
    const double t0 = bench::now_s();
    fn();
    best = std::min(best, bench::now_s() - t0);
  }
  return best;
}

// Under mpirun: measures, and rank 0 prints `size BYTES exchange_us E all_reduce_us A threads T`.
int worker(int64_t max_mb, int64_t repeats) {
  for (int64_t bytes : sizes(max_mb)) {
    const Tensor t = Tensor::randn({bytes / 4}, kFloat32, "CPU").realize();
    std::vector<std::byte> all(static_cast<size_t>(bytes * mpi::size()));
    const std::vector<std::byte> mine(static_cast<size_t>(bytes), std::byte{1});
    const double exchange = best_of(repeats, [&] { mpi::all_gather(mine, all); });
    const double reduce = best_of(repeats, [&] { mpi::all_reduce(t).realize(); });
    if (mpi::rank() == 0)
      std::printf("size %lld exchange_us %.1f all_reduce_us %.1f threads %d\n", static_cast<long long>(bytes),
                  exchange * 1e6, reduce * 1e6, settings().threads);
  }
  std::fflush(stdout);
  mpi::finalize();
  return 0;
}

struct LazygradTimes {
  double exchange_us = 0, all_reduce_us = 0;
};

struct TorchResult {
  bool ok = false;
  std::string header, message;
  std::map<int64_t, double> us;  // by size
};

}  // namespace

int main(int argc, char** argv) {
  int64_t ranks = 2, max_mb = 64, repeats = 10;
  for (int i = 1; i < argc; i++) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--ranks", "--max-mb", "--repeats"});
    if (f.name == "--ranks")
      ranks = bench::int_flag(usage, argv[0], f.name, f.value, 2);
    else if (f.name == "--max-mb")
      max_mb = bench::int_flag(usage, argv[0], f.name, f.value);
    else if (f.name == "--repeats")
      repeats = bench::int_flag(usage, argv[0], f.name, f.value);
    else
      usage(argv[0], "unknown argument '" + f.text + "'");
  }
  if (mpi::launched_by_mpirun()) return worker(max_mb, repeats);

  const mpi::Availability mpi_here = mpi::availability();
  if (!mpi_here.available) {
    std::printf("skip: the MPI transport is absent: %s\n", mpi_here.detail.c_str());
    return 0;
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  std::cout << "CPU: " << bench::cpu_model() << ", " << cores << " cores; " << mpi_here.detail << "\n"
            << "all-reduce of float32 sums between " << ranks << " processes on this machine"
            << (ranks > cores ? " (more ranks than cores: they share them)" : "") << "; best of " << repeats
            << "\n\n";

  // lazygrad's side: this program again, under mpirun.
  std::string command =
      "mpirun -np " + std::to_string(ranks) + (::geteuid() == 0 ? " --allow-run-as-root" : "") +
      (ranks > cores ? " --oversubscribe" : "") + " " + bench::shell_quote(std::string(argv[0])) +
      " --max-mb " + std::to_string(max_mb) + " --repeats " + std::to_string(repeats);
  std::map<int64_t, LazygradTimes> ours;
  int threads = 0;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, pipe)) {
      std::istringstream in(line);
      std::string word, e, a, th;
      int64_t bytes = 0;
      LazygradTimes t;
      if (in >> word >> bytes >> e >> t.exchange_us >> a >> t.all_reduce_us >> th >> threads &&
          word == "size")
        ours[bytes] = t;
      else
        std::cout << line;
    }
    if (int status = pclose(pipe); status != 0) std::printf("mpirun exited with status %d\n", status);
  }

  // PyTorch's side, each process with as many threads as each of ours.
  TorchResult torch;
  std::string size_args = " --ranks " + std::to_string(ranks) + " --repeats " + std::to_string(repeats);
  for (int64_t bytes : sizes(max_mb)) size_args += " " + std::to_string(bytes);
  bench::run_torch_script(LAZYGRAD_SOURCE_DIR, "bench_all_reduce_torch.py", std::max(1, threads), size_args,
                          torch, [&](const std::string& word, std::istringstream& in) {
                            int64_t bytes = 0;
                            std::string us;
                            double value = 0;
                            if (word == "size" && in >> bytes >> us >> value) {
                              torch.us[bytes] = value;
                              torch.ok = true;
                            }
                          });
  std::cout << "lazygrad: " << threads << " threads per rank; "
            << (torch.ok ? torch.header : "PyTorch peer not measured: " + torch.message) << "\n\n";

  const double bus = 2.0 * static_cast<double>(ranks - 1) / static_cast<double>(ranks);
  std::printf("%10s %12s %12s %10s %12s %10s %10s\n", "bytes", "exchange us", "allreduce us", "bus GB/s",
              "torch us", "torch GB/s", "torch/ours");
  for (const auto& [bytes, t] : ours) {
    const double gbs = bus * static_cast<double>(bytes) / t.all_reduce_us * 1e-3;
    if (torch.us.count(bytes)) {
      const double theirs = torch.us.at(bytes);
      std::printf("%10lld %12.1f %12.1f %10.2f %12.1f %10.2f %10.2f\n", static_cast<long long>(bytes),
                  t.exchange_us, t.all_reduce_us, gbs, theirs,
                  bus * static_cast<double>(bytes) / theirs * 1e-3, theirs / t.all_reduce_us);
    } else {
      std::printf("%10lld %12.1f %12.1f %10.2f\n", static_cast<long long>(bytes), t.exchange_us,
                  t.all_reduce_us, gbs);
    }
  }
  return ours.empty() ? 1 : 0;
}
