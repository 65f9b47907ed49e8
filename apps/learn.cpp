// `lazygrad learn list | start N [--dir DIR] | check N [--file PATH]`: exercises with checks.
//
// `start` copies a starter file (learn/starters/, the piece to write left out) into DIR. `check`
// compiles the learner's file with the system's C++ compiler into a shared object, against
// lazygrad's headers, and loads it into this process, which exports the whole library (CMake's
// ENABLE_EXPORTS and a whole-archive link): the file's calls into lazygrad resolve to this
// program's own code, and its last line hands its function over through lazygrad::learn::submit
// (include/lazygrad/learn.h), defined here. The checkers (apps/learn_checks.cpp) then run it
// against lazygrad's own answer. They run in a child process, so that a crash or an endless loop
// in the learner's code is reported as such instead of ending `lazygrad`.
//
// To add an exercise: its function type and a submit overload in learn.h, a slot in Submissions,
// a checker, a starter and a solution in learn/, and a row in kExercises.
#include "learn.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <lazygrad/error.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"

namespace lazygrad::learn {

// The registration calls of the learner's file, run when check loads it.
bool submit(SigmoidBackwardFn fn) {
  cli::submissions().sigmoid_backward = fn;
  return true;
}
bool submit(CausalAttentionFn fn) {
  cli::submissions().causal_attention = fn;
  return true;
}
bool submit(SgdMomentumStepFn fn) {
  cli::submissions().sgd_momentum_step = fn;
  return true;
}
bool submit(KernelCountsFn fn) {
  cli::submissions().kernel_counts = fn;
  return true;
}

}  // namespace lazygrad::learn

namespace lazygrad::cli {

Submissions& submissions() {
  static Submissions s;
  return s;
}

namespace {

namespace fs = std::filesystem;

// The source tree, compiled in by CMake: its include/ and learn/ serve a `lazygrad` run from its
// build folder.
#ifdef LAZYGRAD_SOURCE_DIR
constexpr std::string_view kSourceDir = LAZYGRAD_SOURCE_DIR;
#else
constexpr std::string_view kSourceDir = "";
#endif

// A check that runs longer than this is stopped (an endless loop in the learner's code); a right
// answer takes a second or two, most of it compiling the file and, on a cold cache, the kernels.
constexpr unsigned kCheckSeconds = 180;

struct Exercise {
  int number;
  std::string_view name;
  std::string_view file;      // the starter's name, and the file check reads by default
  std::string_view function;  // what the learner writes
  std::string_view title;     // one line, for the list
  std::string_view doc;       // the chapter that teaches it
  std::string_view task;      // what start prints: the piece to write
  // The checker's verdict on what the file submitted; nullopt when it submitted no answer to this
  // exercise.
  std::optional<Verdict> (*check)(const Submissions&);
};

const Exercise kExercises[] = {
    {1, "sigmoid-backward", "01-sigmoid-backward.cpp", "sigmoid_backward",
     "the backward rule of sigmoid, by the chain rule", "docs/learn/04-autograd.md",
     "Write sigmoid_backward(x, grad_output): the gradient of sigmoid at x times grad_output, which\n"
     "is what autograd does for every op. The checker compares it with lazygrad's own autograd\n"
     "(x.sigmoid().backward(grad_output)) on several shapes, with |x| up to 100.",
     [](const Submissions& s) -> std::optional<Verdict> {
       if (!s.sigmoid_backward) return std::nullopt;
       return check_sigmoid_backward(s.sigmoid_backward);
     }},
    {2, "attention", "02-attention.cpp", "causal_attention",
     "causal scaled dot-product attention, forward, from matmul, softmax and a mask",
     "docs/learn/09-attention.md",
     "Write causal_attention(q, k, v) for [B, H, T, D] tensors: scores q k^T scaled by 1/sqrt(D), a\n"
     "causal mask (position i sees positions j <= i only), softmax over the keys, times v. The\n"
     "checker compares it with lazygrad's scaled_dot_product_attention(q, k, v, ..., is_causal).",
     [](const Submissions& s) -> std::optional<Verdict> {
       if (!s.causal_attention) return std::nullopt;
       return check_causal_attention(s.causal_attention);
     }},
    {3, "sgd-momentum", "03-sgd-momentum.cpp", "sgd_momentum_step",
     "one step of SGD with momentum, PyTorch's rule", "docs/learn/08-optimizers.md",
     "Write sgd_momentum_step(params, velocity, lr, momentum): v = momentum * v + grad (v = grad on\n"
     "the first step), p -= lr * v, for every parameter, in place. The checker runs three steps and\n"
     "compares with optim::SGD(params, lr, momentum).",
     [](const Submissions& s) -> std::optional<Verdict> {
       if (!s.sgd_momentum_step) return std::nullopt;
       return check_sgd_momentum(s.sgd_momentum_step);
     }},
    {4, "fusion-count", "04-fusion-count.cpp", "predict_kernel_counts",
     "predict how many kernels the scheduler makes of eight expressions", "docs/learn/05-scheduler.md",
     "Fill in predict_kernel_counts(): for each expression, how many kernels lazygrad runs to realize\n"
     "it. The checker realizes each, counts with GlobalCounters::kernel_count, and for a wrong\n"
     "prediction names the scheduler's rule that explains the count.",
     [](const Submissions& s) -> std::optional<Verdict> {
       if (!s.kernel_counts) return std::nullopt;
       return check_fusion_count(s.kernel_counts);
     }},
};

std::string exercise_names() {
  std::string names;
  for (const Exercise& e : kExercises)
    names += (names.empty() ? "" : ", ") + std::to_string(e.number) + " " + std::string(e.name);
  return names;
}

// "1", "01" or "sigmoid-backward".
const Exercise& find_exercise(const std::string& which) {
  for (const Exercise& e : kExercises) {
    const std::string n = std::to_string(e.number);
    if (which == e.name || which == n || which == "0" + n) return e;
  }
  throw UsageError{"no exercise '" + which + "': " + exercise_names()};
}

// The exercise that `s` holds an answer to, if any (a file of another exercise checked as this one).
const Exercise* submitted_exercise(const Submissions& s) {
  if (s.sigmoid_backward) return &kExercises[0];
  if (s.causal_attention) return &kExercises[1];
  if (s.sgd_momentum_step) return &kExercises[2];
  if (s.kernel_counts) return &kExercises[3];
  return nullptr;
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// The first of: the folder an environment variable names, `installed` relative to the
// executable's folder (an installed lazygrad: bin/ beside include/ and share/), the source tree's
// `in_source`; each must hold `probe`. Throws naming all it tried.
fs::path find_dir(const char* env, const fs::path& installed, const fs::path& in_source,
                  const fs::path& probe, const std::string& what) {
  std::vector<fs::path> tried;
  if (const char* dir = std::getenv(env); dir && *dir) {
    if (fs::exists(fs::path(dir) / probe)) return dir;
    throw Error(std::string(env) + "=" + dir + " holds no " + probe.string() + " (" + what + ")");
  }
  if (fs::path exe = executable_dir(); !exe.empty()) tried.push_back(exe / installed);
  if (!kSourceDir.empty()) tried.push_back(fs::path(kSourceDir) / in_source);
  for (const fs::path& dir : tried)
    if (fs::exists(dir / probe)) return dir.lexically_normal();
  std::string list;
  for (const fs::path& dir : tried) list += (list.empty() ? "" : ", ") + dir.string();
  throw Error("cannot find " + what + " (" + probe.string() + " in " + (list.empty() ? "no folder" : list) +
              "): set " + env + " to the folder that holds it");
}

fs::path learn_dir() {
  return find_dir("LAZYGRAD_LEARN_DIR", "../share/lazygrad/learn", "learn", "starters",
                  "the exercises' starter files");
}
fs::path include_dir() {
  return find_dir("LAZYGRAD_INCLUDE_DIR", "../include", "include", "lazygrad/learn.h", "lazygrad's headers");
}

// CXX split into words (it may carry options: "clang++ -stdlib=libc++"), else `c++`.
std::vector<std::string> compiler_command() {
  std::vector<std::string> words;
  const char* cxx = std::getenv("CXX");
  std::istringstream in(cxx && *cxx ? cxx : "c++");
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Whether `program` runs: a path that is an executable file, or a name found on PATH.
bool program_exists(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

// Runs argv with stdout and stderr into `log`; its exit status (-1 when it could not start or was
// killed by a signal).
int run_logged(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::cout.flush();
  pid_t pid = ::fork();
  if (pid < 0) throw Error("learn check: cannot start the compiler: " + std::string(::strerror(errno)));
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], ::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` as lines of at most `width` columns, each after `indent`; its newlines are kept.
std::string wrap(const std::string& text, size_t width, const std::string& indent) {
  std::string out;
  std::istringstream paragraphs(text);
  for (std::string paragraph; std::getline(paragraphs, paragraph);) {
    std::istringstream words(paragraph);
    std::string line;
    for (std::string w; words >> w;) {
      if (!line.empty() && indent.size() + line.size() + 1 + w.size() > width) {
        out += indent + line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + w;
    }
    out += indent + line + "\n";
  }
  return out;
}

void print_verdict(const Verdict& v) {
  std::cout << "\n" << (v.right ? "RIGHT: " : "WRONG: ") << v.headline << "\n" << v.details;
  for (size_t i = 0; i < v.problems.size(); i++) {
    const Problem& p = v.problems[i];
    std::cout << "\n";
    if (v.problems.size() > 1) std::cout << "(" << i + 1 << " of " << v.problems.size() << ")\n";
    std::cout << "What went wrong:\n"
              << wrap(p.what, 100, "  ") << "Why:\n"
              << wrap(p.why, 100, "  ") << "How to fix:\n"
              << wrap(p.fix, 100, "  ");
  }
}

// dlerror's message with the C++ name of an undefined symbol after its mangled one
// ("undefined symbol: _Z6helperRKN8lazygrad6TensorE (helper(lazygrad::Tensor const&))").
std::string readable_load_error(const std::string& err) {
  const std::string key = "undefined symbol: ";
  const size_t at = err.find(key);
  if (at == std::string::npos) return err.empty() ? "(no reason given)" : err;
  const size_t start = at + key.size();
  const size_t end = err.find_first_of(" \t\n,", start);
  const std::string mangled = err.substr(start, end == std::string::npos ? std::string::npos : end - start);
  int status = 0;
  char* name = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string out = err;
  if (status == 0 && name) out.insert(start + mangled.size(), " (" + std::string(name) + ")");
  std::free(name);
  return out;
}

// In the child process: loads the compiled file and runs the exercise's checker. Its exit status.
int load_and_check(const Exercise& ex, const fs::path& so, const fs::path& source) {
  const std::string file = source.string();
  if (::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char* err = ::dlerror();
    print_verdict(wrong(
        file + " compiled but could not be loaded", "loading it said: " + readable_load_error(err ? err : ""),
        "Every function the file calls must be defined somewhere: in the file itself, in lazygrad, or "
        "in the C++ standard library. An \"undefined symbol\" is a function that is declared (its "
        "name and types are known, so the file compiles) but that nothing defines.",
        "Define the function named after \"undefined symbol\" (a helper you declared), or call a "
        "lazygrad function that exists (include/lazygrad/tensor.h lists them)."));
    return 1;
  }
  const Submissions& s = submissions();
  std::optional<Verdict> verdict;
  try {
    verdict = ex.check(s);
  } catch (const std::exception& e) {
    verdict = wrong(std::string(ex.function) + " could not be checked",
                    std::string("the check stopped with an error: ") + e.what(),
                    "The checker calls your function on inputs of its own and reads what it returns; "
                    "lazygrad refused something on the way.",
                    "Read the error: it names the op and the shapes. Run your function on a small "
                    "input of your own and print what it returns.");
  }
  if (!verdict) {
    const Exercise* other = submitted_exercise(s);
    std::string headline = other ? file + " answers exercise " + std::to_string(other->number) + " (" +
                                       std::string(other->name) + "), not exercise " +
                                       std::to_string(ex.number) + " (" + std::string(ex.name) + ")"
                                 : file + " did not hand " + std::string(ex.function) + " to the checker";
    std::string what = other
                           ? "loading the file handed over " + std::string(other->function) +
                                 ", the function of exercise " + std::to_string(other->number)
                           : "loading the file handed over no function (no lazygrad::learn::submit call ran)";
    verdict =
        wrong(headline, what,
              "The checker finds your function through the file's last line, which runs when the "
              "file is loaded and hands the function over.",
              other ? "Check it as exercise " + std::to_string(other->number) + ": `lazygrad learn check " +
                          std::to_string(other->number) + " --file " + file + "`."
                    : "Keep the starter's last line: `const bool submitted = lazygrad::learn::submit(&" +
                          std::string(ex.function) + ");`.");
  }
  print_verdict(*verdict);
  if (verdict->right)
    std::cout << "\nWell done: exercise " << ex.number << " (" << ex.name << ") is right.\n";
  return verdict->right ? 0 : 1;
}

// Forks, loads and checks in the child (see the top of this file); the exit status of `check`.
int check_in_child(const Exercise& ex, const fs::path& so, const fs::path& source) {
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid < 0) throw Error("learn check: cannot fork: " + std::string(::strerror(errno)));
  if (pid == 0) {
    ::alarm(kCheckSeconds);
    const rlimit no_core{0, 0};  // a crash is reported below; no core file in the learner's folder
    ::setrlimit(RLIMIT_CORE, &no_core);
    int status = 1;
    try {
      status = load_and_check(ex, so, source);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
    }
    std::cout.flush();
    std::cerr.flush();
    ::_exit(status);  // not exit(): the parent owns the process's static state and temporary files
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw Error("learn check: lost the checking process: " + std::string(::strerror(errno)));
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? 0 : 1;
  const int sig = WTERMSIG(status);
  const std::string file = source.string();
  if (sig == SIGALRM) {
    print_verdict(
        wrong(std::string(ex.function) + " did not finish in " + std::to_string(kCheckSeconds) + " s",
              "the check was stopped after " + std::to_string(kCheckSeconds) +
                  " s; it takes a few seconds when the function is right",
              "A loop that never ends (a loop variable that is never advanced, a condition that "
              "stays true) keeps the check waiting.",
              "Look at every loop in " + file + ": what makes it end?"));
  } else {
    const char* name = ::strsignal(sig);
    print_verdict(wrong(std::string(ex.function) + " crashed",
                        "the program stopped on signal " + std::to_string(sig) + " (" + (name ? name : "?") +
                            ") while your function ran",
                        "C++ does not check most mistakes: reading past the end of a std::vector "
                        "(v[i] where v has no element i yet), using a dangling reference or a null "
                        "pointer crashes the program, or worse, goes on with garbage.",
                        "Look for indexing: does every v[i] have its element (an empty vector has "
                        "none; push_back adds one)? Use v.at(i) while debugging: it throws an error "
                        "that names the index instead of crashing."));
  }
  return 1;
}

int learn_list() {
  for (const Exercise& e : kExercises)
    std::cout << e.number << "  " << e.name << std::string(18 - e.name.size(), ' ') << e.title << "\n"
              << std::string(21, ' ') << e.doc << "\n";
  std::cout << "\nStart one with `lazygrad learn start N`, check it with `lazygrad learn check N`.\n";
  return 0;
}

int learn_start(const Exercise& ex, const fs::path& dir) {
  const fs::path starter = learn_dir() / "starters" / ex.file;
  if (!fs::exists(starter)) throw Error("learn start: the starter " + starter.string() + " is missing");
  const fs::path target = dir / ex.file;
  if (fs::exists(target))
    throw Error("learn start: " + target.string() +
                " already exists and is left as it is (delete it to start over, or give --dir DIR)");
  fs::create_directories(dir);
  // copy_file refuses to overwrite by default: a file written since the check above is kept too.
  fs::copy_file(starter, target);
  fs::permissions(target, fs::perms::owner_write, fs::perm_options::add);  // the starter may be read-only
  std::cout << "wrote " << target.string() << ": exercise " << ex.number << ", " << ex.name << "\n\n"
            << ex.task << "\n\nRead " << ex.doc << ", fill in the TODO in " << target.string()
            << ", then run:\n  lazygrad learn check " << ex.number
            << (dir == fs::path(".") ? "" : " --file " + target.string()) << "\n";
  return 0;
}

int learn_check(const Exercise& ex, const fs::path& source) {
  if (!fs::is_regular_file(source))
    throw Error("learn check: no file " + source.string() + " (`lazygrad learn start " +
                std::to_string(ex.number) + "` writes it; or give --file PATH)");
  const std::vector<std::string> cxx = compiler_command();
  if (cxx.empty() || !program_exists(cxx[0]))
    throw Error("learn check: no C++ compiler: `" + (cxx.empty() ? std::string() : cxx[0]) + "` " +
                (cxx.empty() || cxx[0].find('/') == std::string::npos ? "is not on PATH" : "does not run") +
                ". Install one (Debian: apt-get install g++) or set CXX to a compiler's path.");
  const fs::path include = include_dir();

  std::string pattern = (fs::temp_directory_path() / "lazygrad-learn-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw Error("learn check: cannot make a temporary folder: " + std::string(::strerror(errno)));
  const fs::path tmp = pattern;
  struct RemoveAfter {
    fs::path dir;
    ~RemoveAfter() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_after{tmp};

  std::cout << "exercise " << ex.number << " (" << ex.name << "): checking " << source.string() << "\n";
  // -O0: the file only builds graphs (lazygrad compiles the kernels), so compiling it fast is
  // what counts. The warnings are shown: they often point at the mistake.
  std::vector<std::string> argv = cxx;
  for (const char* flag : {"-std=c++20", "-fPIC", "-shared", "-O0", "-Wall", "-Wextra"}) argv.push_back(flag);
  argv.push_back("-I" + include.string());
  argv.push_back(source.string());
  argv.push_back("-o");
  argv.push_back((tmp / "exercise.so").string());
  const auto t0 = std::chrono::steady_clock::now();
  const int status = run_logged(argv, tmp / "compiler.txt");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string log = read_text(tmp / "compiler.txt");
  if (status != 0) {
    std::cout << "\n" << log << (log.empty() || log.back() == '\n' ? "" : "\n");
    std::string fix =
        "Read the first error: it names the file, the line and the column, and the errors after it "
        "often follow from it. Fix it and check again.";
    if (log.find("submit") != std::string::npos)
      fix += " The last line hands " + std::string(ex.function) +
             " to the checker, which takes it only with the signature the starter declares: keep that "
             "signature as it is.";
    if (status == 127 || (status < 0 && log.empty()))
      fix = "Make sure `" + cxx[0] + "` is a working C++ compiler (set CXX to another one).";
    print_verdict(wrong(source.string() + " does not compile",
                        "the compiler (" + cxx[0] + ") stopped with the errors above",
                        "The checker compiles your file as C++20 against lazygrad's headers (" +
                            include.string() + ") before it can run it.",
                        fix));
    return 1;
  }
  std::cout << "compiled with " << cxx[0] << " in " << static_cast<int>(seconds * 10 + 0.5) / 10.0 << " s\n";
  if (!log.empty()) std::cout << "the compiler warns:\n" << log << (log.back() == '\n' ? "" : "\n");
  return check_in_child(ex, tmp / "exercise.so", source);
}

}  // namespace

int cmd_learn(const Args& args) {
  Options opts = parse_options(args, {"--dir", "--file"});
  if (opts.positional.empty()) throw UsageError{"list, start N or check N"};
  const std::string& sub = opts.positional[0];
  if (sub != "list" && sub != "start" && sub != "check")
    throw UsageError{"unknown subcommand '" + sub + "': list, start N or check N"};
  if (opts.has("--dir") && sub != "start") throw UsageError{"--dir goes with start"};
  if (opts.has("--file") && sub != "check") throw UsageError{"--file goes with check"};
  for (const char* option : {"--dir", "--file"})
    if (auto v = opts.get(option); v && v->empty())
      throw UsageError{std::string(option) + " takes a path, got ''"};
  if (sub == "list") {
    if (opts.positional.size() > 1) throw UsageError{"unexpected argument '" + opts.positional[1] + "'"};
    return learn_list();
  }
  if (opts.positional.size() != 2) {
    if (opts.positional.size() > 2) throw UsageError{"unexpected argument '" + opts.positional[2] + "'"};
    throw UsageError{sub + " which exercise? " + exercise_names()};
  }
  const Exercise& ex = find_exercise(opts.positional[1]);
  if (sub == "start") return learn_start(ex, opts.get("--dir").value_or("."));
  return learn_check(ex, opts.get("--file").value_or((fs::path(".") / ex.file).string()));
}

}  // namespace lazygrad::cli
