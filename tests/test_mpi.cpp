// The MPI transport (lazygrad/mpi.h, docs/multi.md "Across processes: MPI"), run as a user runs it:
// the built `lazygrad` under OpenMPI's mpirun. 2 and 3 ranks train as one process does; a rank
// stopped with SIGSTOP makes the other fail, naming it, after LAZYGRAD_MPI_TIMEOUT; two ranks in
// network namespaces of their own talk over a veth pair; and with libmpi hidden lazygrad runs and
// says MPI is absent. Skipped, saying why, where mpirun, the data set or namespaces are missing.
// ctest's TIMEOUT (CMakeLists.txt) is the only clock: nothing here gives up waiting by itself.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_files.h"

using namespace lazygrad;
namespace fs = std::filesystem;

extern char** environ;

namespace {

using test::RunResult;

// The program `name` on PATH, or "".
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((fs::path(dir) / name).c_str(), X_OK) == 0)
      return (fs::path(dir) / name).string();
  return "";
}

// CI runs as root on 2 cores: mpirun refuses root without the first, and more ranks than cores
// without the second. The shared-memory transport copies through its own buffers rather than
// reading the peer's memory directly (CMA, which a container may forbid). In the sanitizer build
// the ranks skip LeakSanitizer: OpenMPI unloads its plugins at MPI_Finalize, so what they keep for
// the process cannot be told from a leak (their frames are gone), and the other suites check
// lazygrad's own memory.
std::vector<std::string> mpirun_flags() {
  std::vector<std::string> flags = {"--allow-run-as-root", "--oversubscribe", "--mca",
                                    "btl_vader_single_copy_mechanism", "none"};
  if (test::kAddressSanitizer) flags.insert(flags.end(), {"-x", "ASAN_OPTIONS=detect_leaks=0"});
  return flags;
}

bool have_fashion_mnist() {
  return fs::exists(fs::path(data::kFashionMnistRoot) / "t10k-labels-idx1-ubyte.gz");
}

// "step N: loss X" lines, in order.
std::vector<double> step_losses(const std::string& out) {
  std::vector<double> losses;
  const std::regex line(R"((^|\n)step (\d+): loss ([0-9.e+-]+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it)
    losses.push_back(std::stod((*it)[3]));
  return losses;
}

// Rank -> the hash it printed ("rank R of N: parameters' FNV-1a hash H").
std::map<int, std::string> parameter_hashes(const std::string& out) {
  std::map<int, std::string> hashes;
  const std::regex line(R"(rank (\d+) of \d+: parameters' FNV-1a hash ([0-9a-f]{16}))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it)
    hashes[std::stoi((*it)[1])] = (*it)[2];
  return hashes;
}

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = test::fresh_dir(std::string("lazygrad_mpi_") + info->name());
    cli_ = test::cli_binary();
    ASSERT_TRUE(fs::exists(cli_)) << cli_ << " is missing: build the lazygrad_cli target";
    mpirun_ = on_path("mpirun");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Skips the test, saying why, where it cannot run.
  bool can_train_under_mpirun() const { return !mpirun_.empty() && have_fashion_mnist(); }
  std::string why_not() const {
    return mpirun_.empty() ? "mpirun is not installed (Debian: openmpi-bin, libopenmpi-dev)"
                           : "dataset-fashion-mnist is not installed";
  }

  // `lazygrad train fashion-mnist` on 1280 images (10 steps of 128), every step's loss printed.
  std::vector<std::string> train_args(const std::string& out) const {
    return {cli_.string(), "train", "fashion-mnist",      "--limit", "1280", "--seed", "0", "--loss-every",
            "1",           "--out", (dir_ / out).string()};
  }
  // `mpirun -np N <the flags above> lazygrad train ... --ddp`, with `before` ahead of mpirun
  // (`ip netns exec A`) and `mca` among mpirun's options.
  RunResult mpirun(int ranks, const std::string& out, const std::vector<std::string>& before = {},
                   const std::vector<std::string>& mca = {}) const {
    std::vector<std::string> args = before;
    args.push_back(mpirun_);
    args.insert(args.end(), {"-np", std::to_string(ranks)});
    const std::vector<std::string> flags = mpirun_flags();
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), mca.begin(), mca.end());
    for (const std::string& a : train_args(out)) args.push_back(a);
    args.push_back("--ddp");
    return test::run_program(args[0], {args.begin() + 1, args.end()}, dir_);
  }

  fs::path dir_, cli_;
  std::string mpirun_;
};

// The losses of `got` against the one-process run `want`, within 1e-5 relative: the split batch sums
// each gradient in another order (as DataParallel's devices do: tests/test_data_parallel.cpp).
void expect_same_losses(const std::vector<double>& got, const std::vector<double>& want,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); i++)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << what << ", step " << i + 1;
}

// Every one of `ranks` printed its hash, all the same, and rank 0 says they agree.
void expect_same_parameters(const RunResult& r, int ranks) {
  const std::map<int, std::string> hashes = parameter_hashes(r.out);
  ASSERT_EQ(hashes.size(), static_cast<size_t>(ranks)) << r.out << r.err;
  for (const auto& [rank, hash] : hashes) EXPECT_EQ(hash, hashes.at(0)) << "rank " << rank;
  EXPECT_NE(r.out.find("every one of the " + std::to_string(ranks) + " ranks holds the same parameters"),
            std::string::npos)
      << r.out;
}

}  // namespace

TEST_F(Mpi, TwoAndThreeRanksTrainAsOneProcess) {
  if (!can_train_under_mpirun()) GTEST_SKIP() << why_not();
  const std::vector<std::string> single = train_args("single");
  RunResult one = test::run_program(single[0], {single.begin() + 1, single.end()}, dir_);
  ASSERT_EQ(one.exit_status, 0) << one.out << one.err;
  const std::vector<double> want = step_losses(one.out);
  ASSERT_EQ(want.size(), 10u) << one.out;
  for (int ranks : {2, 3}) {  // 3: 128 rows as 43, 43 and 42
    const RunResult r = mpirun(ranks, "ranks" + std::to_string(ranks));
    ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("data-parallel on " + std::to_string(ranks) + " MPI ranks"), std::string::npos)
        << r.out;
    expect_same_losses(step_losses(r.out), want, std::to_string(ranks) + " ranks");
    expect_same_parameters(r, ranks);
    EXPECT_TRUE(fs::exists(dir_ / ("ranks" + std::to_string(ranks)) / "mlp.safetensors"));
  }
}

// What became of `mpirun -np 2 lazygrad train fashion-mnist --ddp` (all 60000 images: training
// outlasts what follows by far) with LAZYGRAD_MPI_TIMEOUT=10 when rank 1 got `signal` as rank 0
// said training starts: mpirun's wait status, the output of all of it, and the seconds from the
// signal to mpirun's end. Nothing of the run outlives the call.
struct SignalledRun {
  int status = -1;
  std::string out;
  double seconds = 0;
};

SignalledRun signal_rank_1_midway(const std::string& mpirun, const fs::path& cli, const fs::path& dir,
                                  int signal) {
  std::vector<std::string> args{mpirun, "-np", "2"};
  const std::vector<std::string> flags = mpirun_flags();
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {cli.string(), "train", "fashion-mnist", "--ddp", "--out", dir.string()});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const fs::path log = dir / "output.txt";
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  ::setenv("LAZYGRAD_MPI_TIMEOUT", "10", 1);
  pid_t launcher = 0, rank_1 = 0;
  const int spawned = posix_spawn(&launcher, argv[0], &files, nullptr, argv.data(), environ);
  ::unsetenv("LAZYGRAD_MPI_TIMEOUT");
  posix_spawn_file_actions_destroy(&files);
  SignalledRun run;
  if (spawned != 0) {
    run.out = "posix_spawn of mpirun failed";
    return run;
  }
  // Whatever happens below, nothing of the run outlives it (a stopped rank would stay forever).
  struct Reaper {
    pid_t& launcher;
    pid_t& rank_1;
    ~Reaper() {
      if (rank_1 > 0) ::kill(rank_1, SIGKILL);
      if (launcher > 0 && ::kill(launcher, SIGKILL) == 0) ::waitpid(launcher, nullptr, 0);
    }
  } reaper{launcher, rank_1};

  // mpirun's child whose environment names it rank 1.
  auto find_rank_1 = [&]() -> pid_t {
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(entry.path() / "stat");
      std::string pid, comm, state;
      pid_t parent = 0;
      if (!(stat >> pid >> comm >> state >> parent) || parent != launcher) continue;
      if (test::read_file(entry.path() / "environ").find(std::string("OMPI_COMM_WORLD_RANK=1") + '\0') !=
          std::string::npos)
        return std::stoi(pid);
    }
    return 0;
  };
  while (rank_1 == 0 && ::waitpid(launcher, &run.status, WNOHANG) == 0) {
    if (test::read_file(log).find("training MLP") != std::string::npos) rank_1 = find_rank_1();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (rank_1 == 0 || ::kill(rank_1, signal) != 0) {
    run.out = "no rank 1 to signal:\n" + test::read_file(log);
    return run;
  }
  const auto signalled = std::chrono::steady_clock::now();
  ::waitpid(launcher, &run.status, 0);
  launcher = 0;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  run.out = test::read_file(log);
  return run;
}

// Rank 1 stopped (SIGSTOP) in the middle of training: rank 0 waits LAZYGRAD_MPI_TIMEOUT (10 s), says
// rank 1 did not answer, and the job ends with an error status instead of hanging.
TEST_F(Mpi, AStoppedRankIsNamedAfterTheTimeout) {
  if (!can_train_under_mpirun()) GTEST_SKIP() << why_not();
  const SignalledRun run = signal_rank_1_midway(mpirun_, cli_, dir_, SIGSTOP);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) != 0) << "status " << run.status << ":\n"
                                                                     << run.out;
  EXPECT_NE(run.out.find("error: MPI: rank 1 did not answer rank 0 within 10 s (LAZYGRAD_MPI_TIMEOUT)"),
            std::string::npos)
      << run.out;
  // Rank 1, continued by mpirun to be ended, does not blame rank 0 for the time it was stopped.
  EXPECT_EQ(run.out.find("rank 0 did not answer"), std::string::npos) << run.out;
  // Rank 0 may have begun waiting a little before the stop (the output reaches this test late).
  EXPECT_GE(run.seconds, 5) << "the job ended long before the timeout:\n" << run.out;
}

// Rank 1 killed (SIGKILL): mpirun sees it end and stops rank 0 at once, naming rank 1.
TEST_F(Mpi, AKilledRankEndsTheJob) {
  if (!can_train_under_mpirun()) GTEST_SKIP() << why_not();
  const SignalledRun run = signal_rank_1_midway(mpirun_, cli_, dir_, SIGKILL);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) != 0) << "status " << run.status << ":\n"
                                                                     << run.out;
  EXPECT_NE(run.out.find("process rank 1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("exited on signal 9"), std::string::npos) << run.out;
}

// Two "machines": network namespaces A and B joined by a veth pair, rank 0 in A, rank 1 in B,
// talking TCP over the veth only. mpirun reaches B through its rsh agent, a script that enters B's
// namespace instead of ssh. Needs root and network namespaces (`ip netns`).
TEST_F(Mpi, TwoRanksInSeparateNetworkNamespaces) {
  if (!can_train_under_mpirun()) GTEST_SKIP() << why_not();
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string ip = on_path("ip");
  if (ip.empty()) GTEST_SKIP() << "`ip` (iproute2) is missing";
  const std::string id = std::to_string(::getpid() % 100000), a = "lgmpiA" + id, b = "lgmpiB" + id;
  const std::string veth_a = "lga" + id, veth_b = "lgb" + id;
  auto sh = [&](const std::string& command) {
    return std::system(
        (command + " >>" + test::shell_quote((dir_ / "netns.log").string()) + " 2>&1").c_str());
  };
  std::string setup;
  for (const std::string& step :
       {"netns add " + a, "netns add " + b, "link add " + veth_a + " type veth peer name " + veth_b,
        "link set " + veth_a + " netns " + a, "link set " + veth_b + " netns " + b,
        "-n " + a + " addr add 10.199.0.1/24 dev " + veth_a,
        "-n " + b + " addr add 10.199.0.2/24 dev " + veth_b, "-n " + a + " link set " + veth_a + " up",
        "-n " + b + " link set " + veth_b + " up", "-n " + a + " link set lo up",
        "-n " + b + " link set lo up"})
    setup += (setup.empty() ? "" : " && ") + ip + " " + step;
  if (sh(setup) != 0) {
    sh(ip + " netns del " + a + "; " + ip + " netns del " + b);
    GTEST_SKIP() << "network namespaces cannot be made here: " << test::read_file(dir_ / "netns.log");
  }
  const fs::path agent = dir_ / "enter-b.sh", launched = dir_ / "launched-in-b";
  test::write_text(agent,
                   "#!/bin/sh\n# mpirun's rsh agent: `agent HOST COMMAND...` runs COMMAND in B's namespace\n"
                   "shift\ntouch " +
                       test::shell_quote(launched.string()) + "\nexec " + ip + " netns exec " + b +
                       " sh -c \"$*\"\n");
  fs::permissions(agent, fs::perms::owner_all);
  const RunResult r = mpirun(2, "netns", {ip, "netns", "exec", a},
                             {"--host", "10.199.0.1,10.199.0.2", "--mca", "plm_rsh_agent", agent.string(),
                              "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.199.0.0/24",
                              "--mca", "oob_tcp_if_include", "10.199.0.0/24"});
  // What crossed the veth: 10 steps of the MLP's 2.7 MB of gradients each way, and more.
  const fs::path received = dir_ / "rx_bytes";
  sh(ip + " netns exec " + a + " cp /sys/class/net/" + veth_a + "/statistics/rx_bytes " +
     test::shell_quote(received.string()));
  sh(ip + " netns del " + a + "; " + ip + " netns del " + b);  // the veth pair goes with them
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_GT(std::stoll("0" + test::read_file(received)), 20'000'000)
      << "the gradients did not go over the veth";
  EXPECT_TRUE(fs::exists(launched)) << "rank 1 was not started through the namespace's agent";
  EXPECT_EQ(step_losses(r.out).size(), 10u) << r.out;
  expect_same_parameters(r, 2);
}

// libmpi hidden (LAZYGRAD_MPI_LIBRARY names a file that is not there): `lazygrad info` says the
// transport is absent and why, training on one process runs, and --ddp is an error saying MPI is absent.
TEST_F(Mpi, WithoutLibmpiLazygradRunsAndSaysSo) {
  const std::string hide = "LAZYGRAD_MPI_LIBRARY=" + (dir_ / "no-libmpi.so.40").string();
  RunResult info = test::run_program("/usr/bin/env", {hide, cli_.string(), "info"}, dir_);
  ASSERT_EQ(info.exit_status, 0) << info.err;
  std::smatch line;
  ASSERT_TRUE(std::regex_search(info.out, line, std::regex(R"(\n  MPI  [^\n]*)"))) << info.out;
  EXPECT_NE(line.str().find("MPI  absent  no libmpi"), std::string::npos) << line.str();
  EXPECT_NE(line.str().find("no-libmpi.so.40"), std::string::npos) << line.str();
  if (!have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed (info checked)";
  std::vector<std::string> args{hide};
  for (const std::string& a : train_args("single")) args.push_back(a);
  RunResult plain = test::run_program("/usr/bin/env", args, dir_);
  EXPECT_EQ(plain.exit_status, 0) << plain.out << plain.err;
  EXPECT_NE(plain.out.find("test accuracy: "), std::string::npos) << plain.out;
  args.push_back("--ddp");
  RunResult ddp = test::run_program("/usr/bin/env", args, dir_);
  EXPECT_EQ(ddp.exit_status, 1) << ddp.out << ddp.err;
  EXPECT_NE(ddp.err.find("error: MPI is absent: no libmpi"), std::string::npos) << ddp.err;
}
