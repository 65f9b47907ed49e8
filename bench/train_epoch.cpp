// Training time per epoch on Fashion-MNIST, lazygrad against PyTorch, for both models of
// `lazygrad train fashion-mnist` (models/mlp.h, models/lenet.h), in one run.
//
// The recipe is the command's: pixels scaled to [0, 1], Adam lr 1e-3, batch 128, cross-entropy, a
// new shuffle each epoch, the last short batch dropped (468 steps per epoch). lazygrad runs the
// command's own step (apps/train_step.h: the Jit-compiled forward, backward and update) on the
// command's DataLoader. PyTorch runs scripts/bench_train_torch.py under Debian's /usr/bin/python3
// (or LAZYGRAD_TORCH_PYTHON) as a subprocess, with the same thread count, the data held in memory
// as one float tensor, the same models with PyTorch's default initialization, and an optimized BLAS
// when one is installed.
//
// Each framework first runs `--warmup` steps (3 at least: lazygrad compiles or loads its kernels on
// the first, captures them on the second and replays them from the third), reported apart; then
// `--steps N` timed steps (the same N for both), or `--epochs E` whole epochs. With --steps the
// epoch time is N steps' time scaled to 468 steps, and says so.
#include <lazygrad/lazygrad.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../apps/train_step.h"
#include "bench_util.h"

using lazygrad::GlobalCounters;
using lazygrad::Tensor;
namespace data = lazygrad::data;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kBatch = 128;
constexpr double kLr = 1e-3;

// The 1-minute load average: the other work on the machine, which both frameworks share.
double load_average() {
  double load = NAN;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = NAN;
    std::fclose(f);
  }
  return load;
}

struct Config {
  std::vector<std::string> models = {"mlp", "cnn"};
  std::optional<int64_t> steps;  // unset: the model's default below
  int64_t epochs = 0;            // > 0: time whole epochs instead of steps
  int64_t warmup = 3;
  int threads = 0;  // 0: lazygrad's setting (THREADS, default the core count)
  uint64_t seed = 0;
  std::string data_dir = std::string(data::kFashionMnistRoot);
  bool torch = true;
};

// About 2 minutes for the whole default run on this project's 2-core machine: the CNN's step takes
// lazygrad about 2 s, the MLP's 0.15 s.
int64_t default_steps(const std::string& model) { return model == "cnn" ? 20 : 100; }

[[noreturn]] void usage(const char* argv0, const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "error: %s\n", error.c_str());
  std::fprintf(
      error.empty() ? stdout : stderr,
      "usage: %s [--model mlp|cnn|both] [--steps N | --epochs E] [--warmup W] [--threads T]\n"
      "          [--seed S] [--data DIR] [--no-torch]\n"
      "  --model    which model (default both)\n"
      "  --steps    timed steps after the warm-up, per model and framework; the epoch time is\n"
      "             extrapolated to 468 steps (default %lld for the MLP, %lld for the CNN)\n"
      "  --epochs   time E whole epochs of 468 steps instead\n"
      "  --warmup   untimed steps first, at least 3 (compile, Jit capture, first replay; default 3)\n"
      "  --threads  lazygrad's and PyTorch's threads (default THREADS, else the core count)\n"
      "  --seed     initialization and shuffling seed (default 0)\n"
      "  --data     the Fashion-MNIST IDX files (default %s)\n"
      "  --no-torch skip the PyTorch peer\n",
      argv0, static_cast<long long>(default_steps("mlp")), static_cast<long long>(default_steps("cnn")),
      std::string(data::kFashionMnistRoot).c_str());
  std::exit(error.empty() ? 0 : 2);
}

Config parse_args(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; i++) {
    auto [arg, value, text] =
        bench::next_flag(argc, argv, i, usage,
                         {"--model", "--steps", "--epochs", "--warmup", "--threads", "--seed", "--data"});
    if (text == "--no-torch") {
      cfg.torch = false;
    } else if (arg == "--model") {
      if (value == "both")
        cfg.models = {"mlp", "cnn"};
      else if (value == "mlp" || value == "cnn")
        cfg.models = {value};
      else
        usage(argv[0], "--model takes mlp, cnn or both, got '" + value + "'");
    } else if (arg == "--steps") {
      cfg.steps = bench::int_flag(usage, argv[0], arg, value, 1);
    } else if (arg == "--epochs") {
      cfg.epochs = bench::int_flag(usage, argv[0], arg, value, 1);
    } else if (arg == "--warmup") {
      cfg.warmup = bench::int_flag(usage, argv[0], arg, value, 3);
    } else if (arg == "--threads") {
      cfg.threads = static_cast<int>(bench::int_flag(usage, argv[0], arg, value, 1));
    } else if (arg == "--seed") {
      cfg.seed = static_cast<uint64_t>(bench::int_flag(usage, argv[0], arg, value, 0));
    } else if (arg == "--data") {
      cfg.data_dir = value;
    } else {
      usage(argv[0], "unknown argument '" + text + "'");
    }
  }
  if (cfg.steps && cfg.epochs > 0) usage(argv[0], "--steps and --epochs do not go together");
  return cfg;
}

// What one framework did on one model.
struct Run {
  bool ok = false;
  double load_before = NAN, load_after = NAN;  // around the whole run, warm-up included
  std::string note;                            // why it was skipped
  int64_t warmup_steps = 0;
  double warmup_s = 0;
  std::vector<double> warmup_step_s;  // lazygrad only: each warm-up step
  int64_t steps = 0;                  // timed steps
  double timed_s = 0;
  std::vector<double> epoch_s;  // --epochs: each timed epoch
  double first_loss = NAN, last_loss = NAN;
  // lazygrad only
  int64_t compiled = 0, cache_hits = 0;
  double compile_s = 0;
  int64_t kernels_per_step = 0;
  double kernel_s = 0;  // time inside kernel launches during the timed steps
  std::vector<double> losses;
};

// ---- lazygrad -------------------------------------------------------------------------------------

// Batches in the DataLoader's order, across epochs; restart() begins a new epoch.
class Batches {
 public:
  explicit Batches(data::DataLoader& loader) : loader_(loader) {}
  data::Batch next() {
    if (!it_ || *it_ == std::default_sentinel) it_ = loader_.begin();
    data::Batch b = **it_;
    ++*it_;
    return b;
  }
  void restart() { it_.reset(); }  // stops the pass in progress and its prefetch thread

 private:
  data::DataLoader& loader_;
  std::optional<data::DataLoader::Iterator> it_;
};

Run run_lazygrad(const std::string& model_name, const data::FashionMnist& ds, const Config& cfg,
                 int64_t steps, int64_t steps_per_epoch) {
  Run r;
  r.load_before = load_average();
  Tensor::manual_seed(cfg.seed);
  std::shared_ptr<lazygrad::nn::Module> model = lazygrad::cli::make_model(model_name);
  lazygrad::cli::TrainStep step(model, kLr, /*jit=*/true);
  data::DataLoader loader(ds.train_images, ds.train_labels,
                          {.batch_size = kBatch, .shuffle = true, .drop_last = true, .seed = cfg.seed});
  Batches batches(loader);
  auto one_step = [&] {
    data::Batch b = batches.next();
    double loss = step(b.inputs, b.targets).item<float>();
    r.losses.push_back(loss);
    return loss;
  };

  const int64_t n0 = GlobalCounters::compile_count, h0 = GlobalCounters::cache_hits;
  const double c0 = GlobalCounters::compile_s;
  for (int64_t i = 0; i < cfg.warmup; i++) {
    double t0 = bench::now_s();
    one_step();
    r.warmup_step_s.push_back(bench::now_s() - t0);
    r.warmup_s += r.warmup_step_s.back();
  }
  r.warmup_steps = cfg.warmup;
  r.compiled = GlobalCounters::compile_count - n0;
  r.cache_hits = GlobalCounters::cache_hits - h0;
  r.compile_s = GlobalCounters::compile_s - c0;
  r.first_loss = r.losses.front();

  const int64_t k0 = GlobalCounters::kernel_count;
  const double ks0 = GlobalCounters::time_sum_s;
  if (cfg.epochs > 0) {
    for (int64_t e = 0; e < cfg.epochs; e++) {
      batches.restart();  // each timed epoch is a whole new shuffle, as PyTorch's
      double t0 = bench::now_s();
      for (int64_t i = 0; i < steps_per_epoch; i++) one_step();
      r.epoch_s.push_back(bench::now_s() - t0);
      r.timed_s += r.epoch_s.back();
    }
    r.steps = cfg.epochs * steps_per_epoch;
  } else {
    double t0 = bench::now_s();
    for (int64_t i = 0; i < steps; i++) one_step();
    r.timed_s = bench::now_s() - t0;
    r.steps = steps;
  }
  r.kernels_per_step = (GlobalCounters::kernel_count - k0) / r.steps;
  r.kernel_s = GlobalCounters::time_sum_s - ks0;
  r.last_loss = r.losses.back();
  r.load_after = load_average();
  r.ok = true;
  return r;
}

// ---- PyTorch ------------------------------------------------------------------------------------------

// The committed script, found from this source file's place in the tree (CMake compiles it by its
// absolute path), else next to the build folder.
std::string torch_script() {
  fs::path from_source = fs::path(__FILE__).parent_path().parent_path() / "scripts" / "bench_train_torch.py";
  if (fs::exists(from_source)) return from_source.string();
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path from_exe = exe.parent_path().parent_path() / "scripts" / "bench_train_torch.py";
  return !ec && fs::exists(from_exe) ? from_exe.string() : from_source.string();
}

// "key=value key=value" after the line's first word.
std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string word;
  in >> word;
  while (in >> word)
    if (auto eq = word.find('='); eq != std::string::npos) out[word.substr(0, eq)] = word.substr(eq + 1);
  return out;
}

double number(const std::map<std::string, std::string>& f, const std::string& key) {
  auto it = f.find(key);
  return it == f.end() ? NAN : std::strtod(it->second.c_str(), nullptr);
}

Run run_torch(const std::string& model_name, const Config& cfg, int threads, int64_t steps,
              std::map<std::string, std::string>& info) {
  Run r;
  const std::string python = bench::torch_python();
  if (access(python.c_str(), X_OK) != 0) {
    r.note = python + " not found (apt-get install python3-torch)";
    return r;
  }
  if (std::system((bench::shell_quote(python) + " -c 'import torch' >/dev/null 2>&1").c_str()) != 0) {
    r.note = python + " cannot import torch (apt-get install python3-torch)";
    return r;
  }
  std::string script = torch_script();
  std::string cmd =
      "env " + bench::torch_env(threads) + " " + bench::shell_quote(python) + " " +
      bench::shell_quote(script) + " --model " + model_name + " --threads " + std::to_string(threads) +
      " --warmup " + std::to_string(cfg.warmup) + " --seed " + std::to_string(cfg.seed) + " --data " +
      bench::shell_quote(cfg.data_dir) +
      (cfg.epochs > 0 ? " --epochs " + std::to_string(cfg.epochs) : " --steps " + std::to_string(steps)) +
      bench::torch_device_flag();
  std::fflush(stdout);
  r.load_before = load_average();
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    r.note = "could not start " + script;
    return r;
  }
  char buf[4096];
  bool timed = false;
  while (std::fgets(buf, sizeof buf, pipe)) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    auto f = fields(line);
    if (line.rfind("skip ", 0) == 0) {
      r.note = line.substr(5);
    } else if (line.rfind("info ", 0) == 0) {
      info = f;
    } else if (line.rfind("warmup ", 0) == 0) {
      r.warmup_steps = static_cast<int64_t>(number(f, "steps"));
      r.warmup_s = number(f, "seconds");
      r.first_loss = number(f, "first_loss");
    } else if (line.rfind("epoch ", 0) == 0) {
      r.epoch_s.push_back(number(f, "seconds"));
    } else if (line.rfind("timed ", 0) == 0) {
      r.steps = static_cast<int64_t>(number(f, "steps"));
      r.timed_s = number(f, "seconds");
      r.last_loss = number(f, "last_loss");
      timed = true;
    }
  }
  int status = pclose(pipe);
  r.load_after = load_average();
  if (!timed || status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (r.note.empty()) r.note = script + " failed (its messages are above)";
    return r;
  }
  r.ok = true;
  return r;
}

// ---- report -------------------------------------------------------------------------------------------

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

int64_t parameter_count(lazygrad::nn::Module& model) {
  int64_t n = 0;
  for (const Tensor& p : model.parameters()) n += p.numel();
  return n;
}

void print_run(const char* name, const Run& r, int64_t steps_per_epoch, bool epochs) {
  if (!r.ok) {
    std::printf("  %-9s skipped: %s\n", name, r.note.c_str());
    return;
  }
  double per_step = r.timed_s / static_cast<double>(r.steps);
  std::printf("  %-9s %lld timed steps in %.2f s: %.2f ms/step, %.0f items/s; epoch (%lld steps) %.1f s%s\n",
              name, static_cast<long long>(r.steps), r.timed_s, per_step * 1e3,
              static_cast<double>(kBatch) / per_step, static_cast<long long>(steps_per_epoch),
              per_step * static_cast<double>(steps_per_epoch),
              epochs ? " (mean of the timed epochs)" : ", EXTRAPOLATED");
  if (!r.epoch_s.empty()) {
    std::printf("  %-9s epochs:", "");
    for (double s : r.epoch_s) std::printf(" %.2f s", s);
    std::printf("\n");
  }
  std::printf("  %-9s warm-up %lld steps %.2f s", "", static_cast<long long>(r.warmup_steps), r.warmup_s);
  if (!r.warmup_step_s.empty()) {
    std::printf(" (");
    for (size_t i = 0; i < r.warmup_step_s.size(); i++)
      std::printf("%s%.2f", i ? " + " : "", r.warmup_step_s[i]);
    std::printf(" s: run, capture, replay; %lld kernels compiled in %.1f s, %lld from the disk cache)",
                static_cast<long long>(r.compiled), r.compile_s, static_cast<long long>(r.cache_hits));
  }
  std::printf("\n  %-9s loss %.4f (first step) -> %.4f (last step); load average %.2f -> %.2f\n", "",
              r.first_loss, r.last_loss, r.load_before, r.load_after);
  if (r.kernels_per_step > 0)
    std::printf("  %-9s %lld kernels per step, %.1f%% of the timed steps inside kernels\n", "",
                static_cast<long long>(r.kernels_per_step), 100 * r.kernel_s / r.timed_s);
}

// The loss must be finite and, over the last steps, below the first step's.
bool loss_is_sane(const std::string& model, const Run& r) {
  for (double l : r.losses)
    if (!std::isfinite(l)) {
      std::fprintf(stderr, "error: %s: lazygrad's loss is not finite (%g)\n", model.c_str(), l);
      return false;
    }
  const size_t tail = std::min<size_t>(10, static_cast<size_t>(r.steps));  // of the timed steps
  double mean = 0;
  for (size_t i = r.losses.size() - tail; i < r.losses.size(); i++) mean += r.losses[i];
  mean /= static_cast<double>(tail);
  if (!(mean < r.first_loss)) {
    std::fprintf(
        stderr,
        "error: %s: lazygrad's loss did not decrease: first step %.4f, mean of the last %zu steps %.4f\n",
        model.c_str(), r.first_loss, tail, mean);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg = parse_args(argc, argv);
  if (!bench::default_device_here()) return 0;
  if (cfg.threads > 0) lazygrad::set_threads(cfg.threads);
  const int threads = lazygrad::settings().threads;
  const double t_start = bench::now_s();

  data::FashionMnist ds;
  try {
    ds = data::load_fashion_mnist(cfg.data_dir);
  } catch (const lazygrad::Error& e) {
    std::fprintf(stderr,
                 "error: no Fashion-MNIST in %s (%s)\n"
                 "Run `make demo`, which installs it, or `apt-get install dataset-fashion-mnist`, or pass "
                 "--data DIR.\n",
                 cfg.data_dir.c_str(), e.what());
    return 1;
  }
  const int64_t n_train = ds.train_images.size(0);
  const int64_t steps_per_epoch = n_train / kBatch;
  std::printf(
      "bench_train_epoch: Fashion-MNIST, %lld training images, batch %lld (%lld steps per epoch), Adam lr "
      "%g, "
      "seed %llu, threads %d\n",
      static_cast<long long>(n_train), static_cast<long long>(kBatch),
      static_cast<long long>(steps_per_epoch), kLr, static_cast<unsigned long long>(cfg.seed), threads);
  std::printf("lazygrad: Jit-compiled step of `lazygrad train` (apps/train_step.h); kernels: %s\n",
              lazygrad::cpu_kernel_compiler().c_str());
  if (cfg.torch)
    std::printf("PyTorch: %s %s, environment %s\n", bench::torch_python().c_str(), torch_script().c_str(),
                bench::torch_env(threads).c_str());
  std::fflush(stdout);

  struct Row {
    std::string model;
    Run lg, pt;
  };
  std::vector<Row> rows;
  bool sane = true;
  std::map<std::string, std::string> torch_info;
  for (const std::string& name : cfg.models) {
    const int64_t steps =
        cfg.epochs > 0 ? cfg.epochs * steps_per_epoch : cfg.steps.value_or(default_steps(name));
    std::shared_ptr<lazygrad::nn::Module> probe = lazygrad::cli::make_model(name);
    std::printf(
        "\n%s, %s parameters: %lld warm-up steps, then %s\n",
        name == "cnn" ? "CNN, LeNet-style (models/lenet.h)" : "MLP 784-512-512-10 (models/mlp.h)",
        with_commas(parameter_count(*probe)).c_str(), static_cast<long long>(cfg.warmup),
        cfg.epochs > 0
            ? (std::to_string(cfg.epochs) + (cfg.epochs > 1 ? " timed epochs" : " timed epoch")).c_str()
            : (std::to_string(steps) + " timed steps").c_str());
    std::fflush(stdout);
    Row row{name, run_lazygrad(name, ds, cfg, steps, steps_per_epoch), {}};
    print_run("lazygrad", row.lg, steps_per_epoch, cfg.epochs > 0);
    std::fflush(stdout);
    sane = loss_is_sane(name, row.lg) && sane;
    if (cfg.torch) {
      row.pt = run_torch(name, cfg, threads, steps, torch_info);
      print_run("PyTorch", row.pt, steps_per_epoch, cfg.epochs > 0);
      if (row.pt.ok) {
        std::printf("  ratio     lazygrad takes %.1fx PyTorch's time per step\n",
                    (row.lg.timed_s / static_cast<double>(row.lg.steps)) /
                        (row.pt.timed_s / static_cast<double>(row.pt.steps)));
      }
    }
    std::fflush(stdout);
    rows.push_back(std::move(row));
  }

  if (!torch_info.empty()) {
    std::string blas = torch_info["blas"];
    std::printf("\nPyTorch %s: %s threads (torch.get_num_threads), oneDNN %s, BLAS %s\n",
                torch_info["torch"].c_str(), torch_info["threads"].c_str(),
                torch_info["mkldnn"] == "1" ? "on" : "off", blas.c_str());
    if (blas.find("openblas") == std::string::npos)
      std::printf(
          "warning: PyTorch's matrix products ran on %s, not an optimized BLAS: its figures are far from its "
          "best (apt-get install libopenblas0-openmp)\n",
          blas.c_str());
  }

  std::printf(
      "\nsummary (%s; ratio = lazygrad time / PyTorch time):\n",
      cfg.epochs > 0 ? "measured epochs" : "epoch = time per step x 468, EXTRAPOLATED from the timed steps");
  std::printf("%-6s %7s %12s %12s %11s %11s %11s %11s %7s\n", "model", "steps", "lg ms/step", "pt ms/step",
              "lg s/epoch", "pt s/epoch", "lg items/s", "pt items/s", "ratio");
  for (const Row& row : rows) {
    auto per_step = [](const Run& r) { return r.ok ? r.timed_s / static_cast<double>(r.steps) : NAN; };
    double lg = per_step(row.lg), pt = per_step(row.pt);
    // "-" where the peer was skipped.
    auto cell = [](double v, int width, int decimals) {
      char text[32];
      if (std::isnan(v))
        std::snprintf(text, sizeof text, "%*s", width, "-");
      else
        std::snprintf(text, sizeof text, "%*.*f", width, decimals, v);
      return std::string(text);
    };
    const double epoch_steps = static_cast<double>(steps_per_epoch), batch = static_cast<double>(kBatch);
    std::printf("%-6s %7lld %s %s %s %s %s %s %s\n", row.model.c_str(), static_cast<long long>(row.lg.steps),
                cell(lg * 1e3, 12, 2).c_str(), cell(pt * 1e3, 12, 2).c_str(),
                cell(lg * epoch_steps, 11, 1).c_str(), cell(pt * epoch_steps, 11, 1).c_str(),
                cell(batch / lg, 11, 0).c_str(), cell(batch / pt, 11, 0).c_str(),
                cell(lg / pt, 7, 1).c_str());
  }
  std::printf("total run %.1f s\n", bench::now_s() - t_start);
  if (!sane) {
    std::fprintf(stderr, "error: the lazygrad loss check failed (above)\n");
    return 1;
  }
  return 0;
}
