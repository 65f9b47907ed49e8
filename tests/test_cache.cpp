// The disk cache: a second process runs the same program without invoking the compiler, and a
// corrupt entry is detected and rebuilt. Whatever is found in the folder is not trusted: symlinks,
// FIFOs and directories in an entry's place are replaced, never followed or waited on; a folder
// deleted during a run is made again; one that cannot be written gives way to a temporary folder
// with a warning. The test runs this binary again as the "second process".
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "runtime/device.h"

using namespace lazygrad;
namespace fs = std::filesystem;
extern char** environ;

namespace {

// The program both processes run: a few distinct kernels.
float program() {
  Tensor x = Tensor::arange(100).to(kFloat32).reshape({10, 10});
  Tensor y = (x.softmax(1) * 3 + x.max(0, true)).sum();
  return y.item<float>();
}

// Starts this test binary with only the Child test, in the given cache.
pid_t start_child(const std::string& cache, const std::string& expect) {
  std::string exe = fs::read_symlink("/proc/self/exe");
  std::string filter = "--gtest_filter=CacheChild.Run";
  std::vector<std::string> env_s;
  for (char** e = environ; *e; e++) {
    std::string kv = *e;
    // Not the parent's gtest shard either (the llvm label runs this suite in shards): the child's
    // one case must run.
    if (kv.rfind("LAZYGRAD_CACHE=", 0) && kv.rfind("LAZYGRAD_CHILD", 0) && kv.rfind("GTEST_", 0))
      env_s.push_back(kv);
  }
  env_s.push_back("LAZYGRAD_CACHE=" + cache);
  env_s.push_back("LAZYGRAD_CHILD=" + expect);
  std::vector<char*> envp, argv{exe.data(), filter.data(), nullptr};
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_child(const std::string& cache, const std::string& expect) {
  return wait_child(start_child(cache, expect));
}

// A child started through the shell leaves the parent's gtest shard behind, so its one case runs.
constexpr const char* kNoShard = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX ";

// Runs the child in `cache` through the shell; returns its exit status, and its output in `log`.
int run_child_logged(const std::string& cache, const std::string& expect, std::string& log) {
  std::string exe = fs::read_symlink("/proc/self/exe");
  std::string out = fs::temp_directory_path() / ("lazygrad-cache-log-" + std::to_string(getpid()));
  std::string cmd = std::string(kNoShard) + "LAZYGRAD_CACHE='" + cache + "' LAZYGRAD_CHILD=" + expect + " " +
                    exe + " --gtest_filter=CacheChild.Run > " + out + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream f(out);
  log.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  fs::remove(out);
  return rc;
}

// The extension of a cached kernel object: a shared object from `cc`, or an object for the in-process
// compiler's JIT linker (LAZYGRAD_CPU_COMPILER=llvm, as the llvm label runs this suite).
std::string object_ext() { return settings().cpu_compiler == "llvm" ? ".o" : ".so"; }

// What only the C path has (a compiler process, its batches, dlopen's mappings) is skipped under the
// in-process compiler.
bool in_process() { return settings().cpu_compiler == "llvm"; }
constexpr const char* kCPathOnly =
    "the C path's own (a compiler process, batches, dlopen), and "
    "LAZYGRAD_CPU_COMPILER=llvm";

// Puts make(path) in the place of every entry of dir whose name ends with ext; returns how many.
int replace_entries(const std::string& dir, const std::string& ext,
                    const std::function<void(const fs::path&)>& make) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) found.push_back(e.path());
  for (const auto& p : found) {
    fs::remove_all(p);
    make(p);
  }
  return static_cast<int>(found.size());
}

// A program with kernels that program() does not have: the sum of squares of 0..63.
float other_program() {
  Tensor x = Tensor::arange(64).to(kFloat32);
  return (x * x).sum().item<float>();
}

}  // namespace

// Runs only when started by the tests below: checks whether this process compiled anything.
TEST(CacheChild, Run) {
  const char* expect = std::getenv("LAZYGRAD_CHILD");
  if (!expect) GTEST_SKIP() << "runs as the second process of the Cache tests";
  float v = program();
  EXPECT_NEAR(v, 3 * 10 + 10 * (90 + 91 + 92 + 93 + 94 + 95 + 96 + 97 + 98 + 99) / 1.0f, 1e-2);
  if (std::string(expect) == "delete-folder") {  // deleted between two computations
    fs::remove_all(settings().cache_dir);
    EXPECT_EQ(other_program(), 85344.0f);
    EXPECT_TRUE(fs::is_directory(settings().cache_dir));
  } else if (std::string(expect) == "no-compile") {
    EXPECT_EQ(GlobalCounters::compile_count, 0);
  } else if (std::string(expect) == "compile") {
    EXPECT_GT(GlobalCounters::compile_count, 0);
  }
}

TEST(Cache, SecondProcessDoesNotCompile) {
  std::string dir = fs::temp_directory_path() / ("lazygrad-cache-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  EXPECT_EQ(run_child(dir, "compile"), 0);
  EXPECT_EQ(run_child(dir, "no-compile"), 0);
  fs::remove_all(dir);
}

TEST(Cache, ConcurrentProcessesShareAColdCache) {
  // Three processes compile the same kernels into one empty cache at once: all must succeed and
  // leave entries that a fourth process loads without compiling.
  std::string dir = fs::temp_directory_path() / ("lazygrad-cache-race-" + std::to_string(getpid()));
  fs::remove_all(dir);
  pid_t a = start_child(dir, "any"), b = start_child(dir, "any"), c = start_child(dir, "any");
  EXPECT_EQ(wait_child(a), 0);
  EXPECT_EQ(wait_child(b), 0);
  EXPECT_EQ(wait_child(c), 0);
  EXPECT_EQ(run_child(dir, "no-compile"), 0);
  for (const auto& e : fs::directory_iterator(dir))  // no temp files left behind
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  fs::remove_all(dir);
}

TEST(Cache, CorruptEntryIsRebuilt) {
  std::string dir = fs::temp_directory_path() / ("lazygrad-cache-corrupt-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_EQ(run_child(dir, "compile"), 0);
  // Truncate every compiled object, as a crash in the middle of a copy might.
  int damaged = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == object_ext()) {
      fs::resize_file(e.path(), fs::file_size(e.path()) / 2);
      damaged++;
    }
  ASSERT_GT(damaged, 0);
  EXPECT_EQ(run_child(dir, "compile"), 0);     // detected, rebuilt, right answers
  EXPECT_EQ(run_child(dir, "no-compile"), 0);  // and the rebuilt entries are good
  fs::remove_all(dir);
}

TEST(Cache, CompilerFailureShowsSourceAndMessage) {
  if (in_process()) GTEST_SKIP() << kCPathOnly;
  // A compile error cannot come from valid kernels; a missing compiler is the failure a user meets.
  std::string dir = fs::temp_directory_path() / ("lazygrad-cache-cc-" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::string exe = fs::read_symlink("/proc/self/exe");
  std::string cmd = std::string(kNoShard) + "CC=/nonexistent/cc LAZYGRAD_CACHE=" + dir +
                    " LAZYGRAD_CHILD=any " + exe + " --gtest_filter=CacheChild.Run > " + dir + ".log 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_NE(rc, 0);
  std::ifstream f(dir + ".log");
  std::string log((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("compile:"), std::string::npos) << log;
  EXPECT_NE(log.find("--- source ---"), std::string::npos) << log;
  fs::remove_all(dir);
  fs::remove(dir + ".log");
}

TEST(Cache, EntriesThatAreNotFilesAreReplacedNotFollowed) {
  std::string dir = fs::temp_directory_path() / ("lazygrad-cache-odd-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_EQ(run_child(dir, "compile"), 0);
  // Objects as symlinks to /dev/zero (reading one would never end), checksums as FIFOs (opening one
  // would wait for a writer forever), sources as folders: each reads as missing and is rebuilt.
  ASSERT_GT(replace_entries(dir, object_ext(), [](const fs::path& p) { fs::create_symlink("/dev/zero", p); }),
            0);
  ASSERT_GT(replace_entries(dir, ".sum", [](const fs::path& p) { ASSERT_EQ(mkfifo(p.c_str(), 0644), 0); }),
            0);
  ASSERT_GT(replace_entries(dir, ".c", [](const fs::path& p) { fs::create_directories(p / "inside"); }), 0);
  EXPECT_EQ(run_child(dir, "compile"), 0);  // right answers; ctest's TIMEOUT would catch a hang
  EXPECT_EQ(run_child(dir, "no-compile"), 0);
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".tsv") {
      EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(e.path()))) << e.path();
    }
  }
  // An object replaced by a folder full of files.
  ASSERT_GT(
      replace_entries(dir, object_ext(), [](const fs::path& p) { fs::create_directories(p / "a" / "b"); }),
      0);
  EXPECT_EQ(run_child(dir, "compile"), 0);
  EXPECT_EQ(run_child(dir, "no-compile"), 0);
  fs::remove_all(dir);
}

TEST(Cache, AFolderDeletedDuringARunIsMadeAgain) {
  std::string dir = fs::temp_directory_path() / ("lazygrad-cache-deleted-" + std::to_string(getpid()));
  fs::remove_all(dir);
  EXPECT_EQ(run_child(dir, "delete-folder"), 0);
  fs::remove_all(dir);
}

TEST(Cache, AFolderThatCannotBeWrittenGivesWayToATemporaryOne) {
  std::string file = fs::temp_directory_path() / ("lazygrad-cache-file-" + std::to_string(getpid()));
  std::ofstream(file) << "not a folder";
  struct Case {
    std::string cache, reason;
  };
  // A path through a file cannot be made; /proc is a folder no one can write in, root included.
  std::vector<Case> cases{{file, ""}, {file + "/sub", "cannot create it"}, {"/proc", "cannot write in it"}};
  for (const Case& c : cases) {
    std::string log;
    EXPECT_EQ(run_child_logged(c.cache, "compile", log), 0) << log;
    EXPECT_NE(log.find("warning: the kernel cache " + c.cache + " cannot be used (" + c.reason),
              std::string::npos)
        << log;
    // The temporary folder is named, and gone once the process ended.
    const std::string mark = "kernels are cached in ";
    size_t at = log.find(mark);
    ASSERT_NE(at, std::string::npos) << log;
    std::string tmp = log.substr(at + mark.size(), log.find(' ', at + mark.size()) - at - mark.size());
    EXPECT_NE(tmp.find("lazygrad-cache-"), std::string::npos) << tmp;
    EXPECT_FALSE(fs::exists(tmp)) << tmp;
  }
  fs::remove(file);
}

// A kernel object no one holds is unloaded: a process that meets kernel after kernel (the compiler
// fuzzer) ran out of memory mappings after 13,000 objects. It loads again from the disk cache.
TEST(Cache, AKernelNoOneHoldsIsUnloaded) {
  if (in_process()) GTEST_SKIP() << kCPathOnly;  // test_llvm_compiler.cpp: the JIT's objects are unloaded too
  auto mapped = [](const std::string& path) {
    std::ifstream maps("/proc/self/maps");
    std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    return all.find(path) != std::string::npos;
  };
  auto so_of = [](const std::string& name) {  // the object compile() loaded for `name`
    for (const auto& e : fs::directory_iterator(settings().cache_dir))
      if (e.path().extension() == ".so" && e.path().filename().string().rfind(name + "-", 0) == 0)
        return e.path().string();
    return std::string();
  };
  const std::string source =
      "#include <stdint.h>\nint k_unload_test_entry(void* const* b, const int64_t* v, int64_t s, int64_t e, "
      "const volatile int* stop) { (void)b; (void)v; (void)s; (void)e; (void)stop; return 7; }\n";
  std::shared_ptr<Program> p = cpu_device().compile("k_unload_test", source);
  EXPECT_EQ(launch_slices(*p, {}, {}, 1).error, 7);
  const std::string so = so_of("k_unload_test");
  ASSERT_FALSE(so.empty());
  EXPECT_TRUE(mapped(so));
  EXPECT_EQ(cpu_device().compile("k_unload_test", source), p);  // asked again while held: one program
  p.reset();
  EXPECT_FALSE(mapped(so));
  p = cpu_device().compile("k_unload_test", source);
  EXPECT_EQ(launch_slices(*p, {}, {}, 1).error, 7);
  EXPECT_TRUE(mapped(so));
}

namespace {

// A kernel `name` that returns `value` as its error word; `tag` makes the source new to the cache.
std::string returning(const std::string& name, int value, const std::string& tag) {
  return "#include <stdint.h>\n// " + tag + "\nint " + name +
         "_entry(void* const* b, const int64_t* v, int64_t s, int64_t e, const volatile int* stop) { "
         "(void)b; "
         "(void)v; (void)s; (void)e; (void)stop; return " +
         std::to_string(value) + "; }\n";
}

std::vector<std::string> objects_of(const std::string& name) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(settings().cache_dir))
    if (e.path().extension() == ".so" && e.path().filename().string().rfind(name + "-", 0) == 0)
      out.push_back(e.path().string());
  return out;
}

}  // namespace

// A batch of new kernels is one compiler process: kernels of one name do not collide, each cache
// entry gets the batch's object, and each loads alone from it afterwards.
TEST(Cache, ABatchIsOneBuildAndEachOfItsKernelsLoadsAlone) {
  if (in_process()) GTEST_SKIP() << kCPathOnly;
  const std::string tag = "batch " + std::to_string(getpid()) + " " + std::to_string(std::rand());
  std::vector<std::string> sources;
  for (int v : {11, 12, 13}) sources.push_back(returning("k_batch_test", v, tag));
  std::vector<Device::CompileJob> jobs;
  for (const auto& s : sources) jobs.push_back({"k_batch_test", &s, nullptr, ""});
  jobs.push_back({"k_batch_test", &sources[0], nullptr, ""});  // asked twice: built once, one program
  cpu_device().compile_batch(jobs);
  for (int i = 0; i < 3; i++) {
    ASSERT_TRUE(jobs[i].program) << jobs[i].error;
    EXPECT_EQ(launch_slices(*jobs[i].program, {}, {}, 1).error, 11 + i);
  }
  EXPECT_EQ(jobs[3].program, jobs[0].program);
  std::vector<std::string> objects = objects_of("k_batch_test");
  ASSERT_GE(objects.size(), 3u);
  std::set<std::pair<dev_t, ino_t>> files;
  for (const auto& o : objects) {
    struct stat st {};
    ASSERT_EQ(stat(o.c_str(), &st), 0);
    files.insert({st.st_dev, st.st_ino});
  }
  EXPECT_LT(files.size(), objects.size()) << "the batch's entries share one object";
  for (auto& j : jobs) j.program.reset();  // unloaded; each loads from the cache alone
  const int64_t compiles = GlobalCounters::compile_count;
  for (int i = 0; i < 3; i++) {
    std::shared_ptr<Program> p = cpu_device().compile("k_batch_test", sources[i]);
    EXPECT_EQ(launch_slices(*p, {}, {}, 1).error, 11 + i);
  }
  EXPECT_EQ(GlobalCounters::compile_count, compiles);
}

// A batch with a kernel that does not compile is built again one kernel at a time: the others get
// their programs, and the error names the failing kernel's source.
TEST(Cache, ABatchWithAFailingKernelBuildsTheOthers) {
  if (in_process()) GTEST_SKIP() << kCPathOnly;
  const std::string tag = "failing batch " + std::to_string(getpid()) + " " + std::to_string(std::rand());
  std::vector<std::string> sources{returning("k_batch_ok", 21, tag), "int k_batch_bad_entry(" + tag + "\n",
                                   returning("k_batch_ok2", 23, tag)};
  std::vector<Device::CompileJob> jobs{{"k_batch_ok", &sources[0], nullptr, ""},
                                       {"k_batch_bad", &sources[1], nullptr, ""},
                                       {"k_batch_ok2", &sources[2], nullptr, ""}};
  cpu_device().compile_batch(jobs);
  ASSERT_TRUE(jobs[0].program) << jobs[0].error;
  ASSERT_TRUE(jobs[2].program) << jobs[2].error;
  EXPECT_EQ(launch_slices(*jobs[0].program, {}, {}, 1).error, 21);
  EXPECT_EQ(launch_slices(*jobs[2].program, {}, {}, 1).error, 23);
  EXPECT_FALSE(jobs[1].program);
  EXPECT_NE(jobs[1].error.find("compile:"), std::string::npos) << jobs[1].error;
  EXPECT_NE(jobs[1].error.find("int k_batch_bad_entry(" + tag), std::string::npos) << jobs[1].error;
}
