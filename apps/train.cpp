// `lazygrad train fashion-mnist`: trains the MLP or the LeNet-style CNN of models/ on Fashion-MNIST
// with the usual recipe (pixels scaled to [0, 1], Adam, cross-entropy, a new shuffle each epoch),
// then after each epoch measures the test accuracy and writes a checkpoint and a plot. docs/train.md
// has the numbers it reaches and the time it takes.
//
// The training step (forward, backward, Adam's update, all one schedule) runs under a Jit: the first
// two batches run it normally (the second one captured), and every later batch replays the captured
// kernels on the new batch's buffers, with no scheduling and no compiler. The step is in
// train_step.h, which bench/train_epoch.cpp times.
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "command.h"
#include "option_values.h"
#include "progress_bar.h"
#include "report_errors.h"
#include "svg_plot.h"
#include "train_fashion_mnist.h"
#include "train_step.h"

namespace lazygrad::cli {

namespace {

constexpr std::string_view kCharLmFirst =
    "charlm comes first, before its options: lazygrad train charlm --text FILE ...";

TrainConfig parse_config(const Args& args) {
  Options opts = parse_options(args,
                               {"--model", "--epochs", "--batch-size", "--lr", "--seed", "--data", "--out",
                                "--limit", "--jit", "--device", "--devices", "--loss-every"},
                               {"--ddp"});
  if (opts.positional.empty()) throw UsageError{"which dataset? fashion-mnist or charlm"};
  if (opts.positional[0] == "charlm") throw UsageError{std::string(kCharLmFirst)};
  if (opts.positional[0] != "fashion-mnist")
    throw UsageError{"unknown dataset '" + opts.positional[0] +
                     "': fashion-mnist or charlm (--data DIR with MNIST's files trains on MNIST)"};
  if (opts.positional.size() > 1) throw UsageError{"unexpected argument '" + opts.positional[1] + "'"};

  TrainConfig cfg;
  if (auto v = opts.get("--model")) cfg.model = parse_choice("--model", *v, {"mlp", "cnn"});
  if (auto v = opts.get("--epochs")) cfg.epochs = parse_int("--epochs", *v, 1);
  if (auto v = opts.get("--batch-size")) cfg.batch_size = parse_int("--batch-size", *v, 1);
  if (auto v = opts.get("--lr")) cfg.lr = parse_positive("--lr", *v);
  if (auto v = opts.get("--seed")) cfg.seed = parse_seed(*v);
  if (auto v = opts.get("--data")) cfg.data_dir = *v;
  if (auto v = opts.get("--out")) cfg.out_dir = *v;
  if (auto v = opts.get("--limit")) cfg.limit = parse_int("--limit", *v, 1);
  if (auto v = opts.get("--jit")) cfg.jit = parse_choice("--jit", *v, {"on", "off"}) == "on";
  if (auto v = opts.get("--device")) cfg.device = *v;
  if (auto v = opts.get("--devices")) {
    if (cfg.device.size()) throw UsageError{"--device and --devices: give one of them"};
    for (size_t at = 0; at <= v->size();) {
      const size_t comma = std::min(v->find(',', at), v->size());
      cfg.devices.push_back(v->substr(at, comma - at));
      if (cfg.devices.back().empty())
        throw UsageError{"--devices takes a list such as CPU,CPU:1, got '" + *v + "'"};
      at = comma + 1;
    }
  }
  if (auto v = opts.get("--loss-every")) cfg.loss_every = parse_int("--loss-every", *v, 1);
  cfg.ddp = opts.has("--ddp");
  if (cfg.ddp && !cfg.devices.empty()) throw UsageError{"--ddp and --devices: give one of them"};
  for (const char* option : {"--data", "--out"})
    if (auto v = opts.get(option); v && v->empty())
      throw UsageError{std::string(option) + " takes a folder, got ''"};
  return cfg;
}

// ---- the evaluation (the model and the training step are in train_step.h) ---------------------------

// How many of `images` the model classifies as `labels`, in batches (a whole 10k test set at once
// would hold the CNN's first activations for all of it), in evaluation mode and without the
// gradient graph. Leaves the model in training mode.
int64_t correct_count(nn::Module& model, const Tensor& images, const Tensor& labels) {
  constexpr int64_t kEvalBatch = 1000;
  NoGrad no_grad;
  model.eval();
  data::DataLoader loader(images, labels, {.batch_size = kEvalBatch});
  int64_t correct = 0;
  for (auto& [x, y] : loader) correct += (model(model_input(x)).argmax(1) == y).sum().item<int64_t>();
  model.train();
  return correct;
}

// The percentage of `images` the model classifies as `labels`. Under --ddp each rank counts its rows
// (split_rows) and the counts are summed over MPI: every rank then has the whole test set's figure,
// and no rank waits for another to evaluate alone.
double test_accuracy(nn::Module& model, const Tensor& images, const Tensor& labels, bool ddp) {
  const int64_t n = images.size(0);
  int64_t correct = 0;
  if (ddp) {
    const auto [start, length] = split_rows(n, mpi::size(), mpi::rank());
    const int64_t mine =
        correct_count(model, images.narrow(0, start, length), labels.narrow(0, start, length));
    correct = mpi::all_reduce(Tensor::from_vector<int64_t>({mine}, {1}, "CPU")).item<int64_t>();
  } else {
    correct = correct_count(model, images, labels);
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(n);
}

// ---- outputs --------------------------------------------------------------------------------------

std::string two_decimals(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// A float32 loss to the digits that tell it apart from its neighbours, for comparing runs.
std::string nine_digits(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string hex64(uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// The mean of the last `window` values at each point (fewer at the start): the trend under the
// noise of single batches.
std::vector<double> trailing_mean(const std::vector<double>& values, size_t window) {
  std::vector<double> out;
  double sum = 0;
  for (size_t i = 0; i < values.size(); i++) {
    sum += values[i];
    if (i >= window) sum -= values[i - window];
    out.push_back(sum / static_cast<double>(std::min(i + 1, window)));
  }
  return out;
}

void write_plot(const std::string& path, const std::string& model_title, const std::vector<double>& step_loss,
                const std::vector<double>& accuracy, int64_t steps_per_epoch) {
  // A round window of at most a quarter of an epoch, so the trend still shows within one epoch.
  size_t window = 1;
  for (size_t w : {5, 10, 20, 50})
    if (w <= static_cast<size_t>(steps_per_epoch) / 4) window = w;
  std::vector<double> steps, epochs;
  for (size_t i = 0; i < step_loss.size(); i++) steps.push_back(static_cast<double>(i + 1));
  for (size_t i = 0; i < accuracy.size(); i++) epochs.push_back(static_cast<double>(i + 1));
  LineChart loss{
      .title = model_title + ": training loss",
      .x_label = "step (" + std::to_string(steps_per_epoch) + " per epoch)",
      .y_label = "cross-entropy",
      .series = {{.label = "one batch", .x = steps, .y = step_loss, .color = "#a6c8e8", .width = 1},
                 {.label = "mean of the last " + std::to_string(window),
                  .x = steps,
                  .y = trailing_mean(step_loss, window),
                  .color = "#1f5fa0",
                  .width = 2}}};
  LineChart test{
      .title = model_title + ": test accuracy",
      .x_label = "epoch",
      .y_label = "accuracy (%)",
      .series =
          {{.label = "10k test images", .x = epochs, .y = accuracy, .color = "#d62728", .markers = true}},
      .integer_x = true};
  write_svg(path, {loss, test});
}

}  // namespace

int cmd_train(const Args& args) {
  if (!args.empty() && args[0] == "charlm") return cmd_train_charlm(args);
  TrainConfig cfg;
  try {
    cfg = parse_config(args);
  } catch (UsageError& e) {
    // `train --steps 9 charlm`: fashion-mnist's parser does not know charlm's options.
    if (e.message != kCharLmFirst && std::find(args.begin(), args.end(), "charlm") != args.end())
      e.message += " (" + std::string(kCharLmFirst) + ")";
    throw;
  }
  if (!cfg.ddp) {
    train_fashion_mnist(cfg);
    return 0;
  }
  // Under mpirun a rank that fails stops the whole job at once, rather than leave the others
  // waiting for it until LAZYGRAD_MPI_TIMEOUT; one that finishes leaves MPI with the others.
  const int status = exit_status_reporting_errors(std::cerr, [&] {
    train_fashion_mnist(cfg);
    mpi::finalize();
    return 0;
  });
  if (status != 0) mpi::abort(status);
  return 0;
}

std::vector<double> train_fashion_mnist(const TrainConfig& cfg) {
  namespace fs = std::filesystem;
  // What parse_config checks for the command line, for callers that fill the struct themselves.
  if (cfg.epochs < 1 || cfg.batch_size < 1 || cfg.limit < 0 || !(cfg.lr > 0))
    throw Error("train fashion-mnist: epochs " + std::to_string(cfg.epochs) + ", batch size " +
                std::to_string(cfg.batch_size) + ", limit " + std::to_string(cfg.limit) +
                ": epochs and the batch size must be at least 1, the limit 0 (all) or more, lr positive");
  if (!cfg.device.empty()) set_default_device(cfg.device);  // the model, the batches, every kernel

  data::FashionMnist ds = data::load_fashion_mnist(cfg.data_dir);
  int64_t available = ds.train_images.size(0);
  if (cfg.limit > available)
    throw UsageError{"--limit " + std::to_string(cfg.limit) + " is more than the " +
                     std::to_string(available) + " training images in " + cfg.data_dir};
  int64_t n_train = cfg.limit > 0 ? cfg.limit : available;
  if (cfg.batch_size > n_train)
    throw UsageError{"--batch-size " + std::to_string(cfg.batch_size) + " is more than the " +
                     std::to_string(n_train) +
                     " training images: no full batch to train on (the last, shorter batch is dropped)"};

  std::error_code ec;
  fs::create_directories(cfg.out_dir, ec);
  if (ec) throw Error("train: cannot create the output folder '" + cfg.out_dir + "': " + ec.message());
  const std::string checkpoint_path = (fs::path(cfg.out_dir) / (cfg.model + ".safetensors")).string();
  const std::string plot_path = (fs::path(cfg.out_dir) / (cfg.model + ".svg")).string();

  // Under --ddp only rank 0 prints and writes files; every rank trains.
  const int rank = cfg.ddp ? mpi::rank() : 0, ranks = cfg.ddp ? mpi::size() : 1;
  std::ostream quiet(nullptr);  // discards what it is given
  std::ostream& out = rank == 0 ? std::cout : quiet;

  Tensor::manual_seed(cfg.seed);  // the initialization (a data-parallel run's first replica: the same)
  std::unique_ptr<TrainStep> single;
  std::unique_ptr<DataParallelTrainStep> parallel;
  std::unique_ptr<MpiTrainStep> mpi_step;
  std::shared_ptr<nn::Module> model;
  if (cfg.ddp) {
    if (cfg.batch_size < ranks)
      throw UsageError{"--batch-size " + std::to_string(cfg.batch_size) + " is less than one row per rank (" +
                       std::to_string(ranks) + " ranks)"};
    model = make_model(cfg.model);
    // The same seed gives every rank the same initial model; a rank started with other options
    // would not be, and is caught here rather than by the hash at the end.
    mpi::check_same_on_every_rank(mpi::fnv1a(model->parameters()), "initial parameters");
    mpi_step = std::make_unique<MpiTrainStep>(model, cfg.lr, cfg.jit);
  } else if (cfg.devices.empty()) {
    model = make_model(cfg.model);
    single = std::make_unique<TrainStep>(model, cfg.lr, cfg.jit);
  } else {
    parallel = std::make_unique<DataParallelTrainStep>(cfg.model, cfg.devices, cfg.lr, cfg.jit);
    model = parallel->model();
    if (cfg.batch_size < static_cast<int64_t>(cfg.devices.size()))
      throw UsageError{"--batch-size " + std::to_string(cfg.batch_size) +
                       " is less than one row per device (" + std::to_string(cfg.devices.size()) +
                       " devices)"};
  }
  auto train_step = [&](const Tensor& images, const Tensor& labels) {
    return single     ? (*single)(images, labels)
           : parallel ? (*parallel)(images, labels)
                      : (*mpi_step)(images, labels);
  };
  // drop_last: every batch has batch_size rows, so the captured step fits each one (a Jit refuses
  // inputs of a new shape, and a new shape would compile new kernels anyway).
  data::DataLoader loader(
      ds.train_images.narrow(0, 0, n_train), ds.train_labels.narrow(0, 0, n_train),
      {.batch_size = cfg.batch_size, .shuffle = true, .drop_last = true, .seed = cfg.seed});

  const std::string model_title = cfg.model == "cnn" ? "LeNet-style CNN" : "MLP 784-512-512-10";
  out << "training " << model_title << " on " << n_train << " Fashion-MNIST images (" << loader.size()
      << " steps of " << cfg.batch_size << " per epoch), testing on " << ds.test_images.size(0)
      << " images; Adam lr " << cfg.lr << ", seed " << cfg.seed << ", jit " << (cfg.jit ? "on" : "off")
      << ", "
      << (parallel  ? "data-parallel on " + std::to_string(cfg.devices.size()) + " devices"
          : cfg.ddp ? "data-parallel on " + std::to_string(ranks) + " MPI ranks, " + default_device()
                    : default_device())
      << (default_device() == "CPU" ? ", " + std::to_string(settings().threads) + " threads" : "")
      << (cfg.ddp ? " each" : "") << "\n"
      << std::flush;

  ProgressBar bar(rank == 0 ? std::cerr : quiet, ProgressBar::stderr_is_terminal());
  std::vector<double> step_loss, accuracy;
  for (int64_t epoch = 1; epoch <= cfg.epochs; epoch++) {
    bar.start_epoch(epoch, cfg.epochs, loader.size(), cfg.batch_size);
    double loss_sum = 0;
    int64_t done = 0;
    for (auto& [images, labels] : loader) {
      double loss = train_step(images, labels).item<float>();
      step_loss.push_back(loss);
      if (cfg.loss_every > 0 && static_cast<int64_t>(step_loss.size()) % cfg.loss_every == 0)
        out << "step " << step_loss.size() << ": loss " << nine_digits(loss) << "\n" << std::flush;
      loss_sum += loss;
      done++;
      bar.update(done, loss_sum / static_cast<double>(done));
    }
    bar.finish_epoch();
    double train_s = bar.elapsed_s(), items_per_s = bar.items_per_s();

    auto t0 = std::chrono::steady_clock::now();
    double acc = test_accuracy(*model, ds.test_images, ds.test_labels, cfg.ddp);
    double test_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    accuracy.push_back(acc);

    char summary[256];
    std::snprintf(summary, sizeof summary,
                  "epoch %lld/%lld: train loss %.4f, %.1f s, %.0f items/s (test %.1f s)",
                  static_cast<long long>(epoch), static_cast<long long>(cfg.epochs),
                  loss_sum / static_cast<double>(done), train_s, items_per_s, test_s);
    out << summary << "\ntest accuracy: " << two_decimals(acc) << "%\n" << std::flush;

    if (rank != 0) continue;  // the ranks hold the same model: rank 0 writes it
    save_safetensors(checkpoint_path, model->state_dict(),
                     {{"format", "pt"},
                      {"model", cfg.model},
                      {"epoch", std::to_string(epoch)},
                      {"test_accuracy", two_decimals(acc)}});
    write_plot(plot_path, model_title, step_loss, accuracy, loader.size());
  }
  if (cfg.ddp) {
    // Each rank prints its own hash (a test compares them), then the ranks compare them.
    const uint64_t hash = mpi::fnv1a(model->parameters());
    std::cout << "rank " << rank << " of " << ranks << ": parameters' FNV-1a hash " << hex64(hash) << "\n"
              << std::flush;
    mpi::check_same_on_every_rank(hash, "parameters");
    out << "every one of the " << ranks << " ranks holds the same parameters\n";
  }
  out << "wrote " << checkpoint_path << " and " << plot_path << "\n";
  return accuracy;
}

}  // namespace lazygrad::cli
