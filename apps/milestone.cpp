// `lazygrad milestone list | run NAME [--quick]`: the field's milestones, rebuilt with lazygrad. Each
// prints a few lines of its history, runs for real, checks its own target and exits non-zero when
// it misses it (docs/milestones.md records full runs). `--quick` is a short version of each, with a
// target of its own, for CI.
//
// To add one, write `Outcome run_x(const MilestoneOptions&)` and add a row to kMilestones.
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "option_values.h"
#include "train_fashion_mnist.h"

namespace lazygrad::cli {

namespace {

struct MilestoneOptions {
  bool quick = false;
  uint64_t seed = 0;
  std::string data_dir = std::string(data::kFashionMnistRoot);
  std::string out_dir = ".";
};

// What a run reached, against its target: `reached` is printed as the run's last line.
struct Outcome {
  bool passed = false;
  std::string reached;
};

struct Milestone {
  std::string_view name;
  std::string_view year;
  std::string_view title;    // one line, for the list
  std::string_view history;  // a few lines, printed before the run
  std::string_view target;   // what the full run must reach
  std::string_view quick;    // what the --quick run must reach
  Outcome (*run)(const MilestoneOptions&);
};

std::string format(const char* fmt, double a, double b = 0) {
  char text[160];
  std::snprintf(text, sizeof text, fmt, a, b);
  return text;
}

// ---- perceptron (1958) ------------------------------------------------------------------------------

// Rosenblatt's rule, online: visit the points in order; where sign(w.x + b) is wrong, w += y x and
// b += y. The points are scored all at once (one kernel); the rule changes w only at a mistake, so
// moving from one mistake to the next, scoring again after each update, is the online rule
// exactly. w and b are tensors and the point added is a new small tensor, so every update and every
// scoring is the same kernel, compiled once.
struct PerceptronRun {
  int64_t epochs_to_converge = 0;  // the first epoch without a mistake; 0: none within the limit
  int64_t updates = 0;
  double best_accuracy = 0;  // of w and b as an epoch left them, over every point (%)
};
PerceptronRun perceptron(const Tensor& x, const std::vector<float>& y, int64_t max_epochs) {
  const int64_t n = x.size(0), d = x.size(1);
  const std::vector<float> xs = x.to_vector<float>();
  Tensor w = Tensor::zeros({d}), b = Tensor::zeros({1});
  auto predictions = [&] {
    std::vector<float> score = ((x * w).sum(1) + b).to_vector<float>();
    std::vector<float> sign(n);
    for (int64_t i = 0; i < n; i++)
      sign[i] = score[i] > 0 ? 1.0f : -1.0f;  // sign(0) = -1: w = 0 is wrong on +1
    return sign;
  };
  PerceptronRun run;
  for (int64_t epoch = 1; epoch <= max_epochs; epoch++) {
    int64_t mistakes = 0;
    for (int64_t i = 0; i < n;) {
      std::vector<float> sign = predictions();
      while (i < n && sign[i] == y[i]) i++;
      if (i == n) break;
      Tensor yx =
          Tensor::from_vector(std::vector<float>(xs.begin() + i * d, xs.begin() + (i + 1) * d), {d}) * y[i];
      w = (w + yx).realize();
      b = (b + Tensor::full({1}, y[i])).realize();
      mistakes++;
      run.updates++;
      i++;
    }
    std::vector<float> sign = predictions();
    int64_t right = 0;
    for (int64_t i = 0; i < n; i++) right += sign[i] == y[i];
    run.best_accuracy =
        std::max(run.best_accuracy, 100.0 * static_cast<double>(right) / static_cast<double>(n));
    if (mistakes == 0) {
      run.epochs_to_converge = epoch;
      break;
    }
  }
  return run;
}

Outcome run_perceptron(const MilestoneOptions& o) {
  // Points uniform in [-1, 1]^2, labelled by the side of the line 0.6 x - 0.8 y + 0.1 = 0 they fall
  // on; those nearer to it than the margin 0.05 are left out, so the set is separable with that
  // margin by construction, and Novikoff's theorem bounds the updates by (R / margin)^2, R the
  // largest |(x, y, 1)| (the bias as a third input).
  constexpr double kMargin = 0.05;
  Tensor::manual_seed(o.seed);
  const int64_t n = o.quick ? 100 : 1000;
  std::vector<float> drawn = (Tensor::rand({4 * n, 2}) * 2.0 - 1.0).to_vector<float>(), xs, y;
  double r2 = 0;
  for (size_t i = 0; i + 1 < drawn.size() && static_cast<int64_t>(y.size()) < n; i += 2) {
    const double s = 0.6 * drawn[i] - 0.8 * drawn[i + 1] + 0.1;
    if (std::abs(s) < kMargin) continue;
    xs.insert(xs.end(), {drawn[i], drawn[i + 1]});
    y.push_back(s > 0 ? 1.0f : -1.0f);
    r2 = std::max(r2, double(drawn[i]) * drawn[i] + double(drawn[i + 1]) * drawn[i + 1] + 1.0);
  }
  if (static_cast<int64_t>(y.size()) < n)
    throw Error("milestone perceptron: too few points drawn outside the margin");
  const int64_t bound = static_cast<int64_t>(r2 / (kMargin * kMargin));
  PerceptronRun line = perceptron(Tensor::from_vector(xs, {n, 2}), y, 1000);
  std::cout << n << " points on either side of a line (margin " << kMargin << "): "
            << (line.epochs_to_converge
                    ? "separated exactly after " + std::to_string(line.epochs_to_converge) + " epochs, " +
                          std::to_string(line.updates) + " updates"
                    : "not separated in 1000 epochs")
            << " (Novikoff's bound: at most " << bound << ")\n";
  // XOR: no line puts (0,1) and (1,0) on one side and (0,0) and (1,1) on the other.
  PerceptronRun xor_run =
      perceptron(Tensor::from_vector<float>({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2}), {-1, 1, 1, -1}, 1000);
  std::cout << "XOR, 4 points: "
            << (xor_run.epochs_to_converge ? "separated (impossible)" : "never separated")
            << " in 1000 epochs (" << xor_run.updates << " updates); the best line after an epoch classified "
            << format("%.0f%%", xor_run.best_accuracy) << "\n";
  Outcome out;
  out.passed = line.epochs_to_converge > 0 && line.updates <= bound && xor_run.epochs_to_converge == 0;
  out.reached = std::string(line.epochs_to_converge ? "separated" : "NOT separated") + " in " +
                std::to_string(line.updates) + " updates (bound " + std::to_string(bound) + "), XOR " +
                (xor_run.epochs_to_converge ? "separated" : "not separated");
  return out;
}

// ---- xor (1986) -------------------------------------------------------------------------------------

Outcome run_xor(const MilestoneOptions& o) {
  Tensor::manual_seed(o.seed);
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(8, 1));
  Tensor x = Tensor::from_vector<float>({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2});
  Tensor y = Tensor::from_vector<float>({0, 1, 1, 0}, {4, 1});
  optim::SGD sgd(model->parameters(), 0.5, /*momentum=*/0.9);
  const int64_t steps = o.quick ? 200 : 500;
  double loss = 0;
  for (int64_t step = 1; step <= steps; step++) {
    Tensor l = (*model)(x).binary_cross_entropy_with_logits(y);
    l.backward();
    sgd.step({l});
    sgd.zero_grad();
    loss = l.item<float>();
    if (step % (steps / 5) == 0) std::cout << "step " << step << ": loss " << format("%.5f", loss) << "\n";
  }
  NoGrad no_grad;
  std::vector<float> p = (*model)(x).sigmoid().to_vector<float>();
  int correct = 0;
  for (int i = 0; i < 4; i++) correct += (p[i] > 0.5f) == (i == 1 || i == 2);
  std::cout << "outputs for (0,0) (0,1) (1,0) (1,1):";
  for (float v : p) std::cout << " " << format("%.3f", v);
  std::cout << "\n";
  return {correct == 4, std::to_string(correct) + " of 4 right (" + format("%.0f%%", 25.0 * correct) +
                            "), loss " + format("%.5f", loss)};
}

// ---- mlp (1986) and cnn (1998) on Fashion-MNIST ----------------------------------------------------

Outcome run_fashion(const MilestoneOptions& o, const std::string& model, double target, double quick_target) {
  TrainConfig cfg;
  cfg.model = model;
  cfg.seed = o.seed;
  cfg.data_dir = o.data_dir;
  cfg.out_dir = o.out_dir;
  cfg.epochs = o.quick ? 1 : 5;
  if (o.quick) cfg.limit = 20000;
  const std::vector<double> accuracy = train_fashion_mnist(cfg);
  const double reached = accuracy.back(), wanted = o.quick ? quick_target : target;
  return {reached >= wanted, format("test accuracy %.2f%%, target %.1f%%", reached, wanted)};
}
Outcome run_mlp(const MilestoneOptions& o) { return run_fashion(o, "mlp", 87.5, 78.0); }
Outcome run_cnn(const MilestoneOptions& o) { return run_fashion(o, "cnn", 89.0, 75.0); }

const Milestone kMilestones[] = {
    {"perceptron", "1958", "Rosenblatt's perceptron: a line that separates, and XOR, which no line does",
     "Frank Rosenblatt's perceptron (1958) learned a linear threshold unit from examples: where it is\n"
     "wrong on x, it adds y*x to its weights. Its convergence theorem (Novikoff, 1962) says it separates\n"
     "any linearly separable set exactly in finitely many updates; Minsky and Papert (1969) showed what\n"
     "one such unit can never do: XOR.",
     "1000 points separated exactly within Novikoff's bound; XOR never, in 1000 epochs",
     "the same with 100 points", run_perceptron},
    {"xor", "1986", "XOR with a hidden layer, learned by backpropagation",
     "Minsky and Papert's XOR needs a hidden layer; Rumelhart, Hinton and Williams (1986) showed how to\n"
     "train one: propagate the error's gradient backwards through the layers (backpropagation). Here a\n"
     "2-8-1 network with tanh, SGD with momentum, full batch; lazygrad's autograd does the backward.",
     "all 4 XOR cases right after 500 steps", "all 4 right after 200 steps", run_xor},
    {"mlp", "1986", "a multi-layer perceptron on Fashion-MNIST",
     "The same backpropagation, scaled up: a 784-512-512-10 MLP (models/mlp.h) trained with Adam on\n"
     "Fashion-MNIST's 60,000 clothing images (Zalando, 2017: MNIST's harder drop-in), the recipe of\n"
     "`lazygrad train fashion-mnist`.",
     "at least 87.5% test accuracy after 5 epochs", "at least 78% after 1 epoch on 20,000 images", run_mlp},
    {"cnn", "1998", "LeNet: convolutions on Fashion-MNIST",
     "LeCun, Bottou, Bengio and Haffner's LeNet-5 (1998) read cheques with convolutions: small filters\n"
     "shared across the image, then pooling. models/lenet.h is its shape with ReLU and max pooling,\n"
     "trained with the recipe of `lazygrad train fashion-mnist --model cnn`.",
     "at least 89% test accuracy after 5 epochs", "at least 75% after 1 epoch on 20,000 images", run_cnn},
};

const Milestone* find_milestone(std::string_view name) {
  for (const Milestone& m : kMilestones)
    if (m.name == name) return &m;
  return nullptr;
}

std::string milestone_names() {
  std::string names;
  for (const Milestone& m : kMilestones) names += (names.empty() ? "" : ", ") + std::string(m.name);
  return names;
}

}  // namespace

int cmd_milestone(const Args& args) {
  Options opts = parse_options(args, {"--seed", "--data", "--out"}, {"--quick"});
  if (opts.positional.empty()) throw UsageError{"list or run NAME"};
  if (opts.positional[0] == "list") {
    no_positionals(Options{{}, {opts.positional.begin() + 1, opts.positional.end()}});
    for (const Milestone& m : kMilestones)
      std::cout << m.name << std::string(12 - m.name.size(), ' ') << m.year << "  " << m.title
                << "\n            target: " << m.target << "\n            --quick: " << m.quick << "\n";
    return 0;
  }
  if (opts.positional[0] != "run")
    throw UsageError{"unknown subcommand '" + opts.positional[0] + "': list or run NAME"};
  if (opts.positional.size() != 2) throw UsageError{"run which milestone? " + milestone_names()};
  const Milestone* m = find_milestone(opts.positional[1]);
  if (!m) throw UsageError{"no milestone '" + opts.positional[1] + "': " + milestone_names()};
  MilestoneOptions o;
  o.quick = opts.has("--quick");
  if (auto v = opts.get("--seed")) o.seed = parse_seed(*v);
  if (auto v = opts.get("--data")) o.data_dir = *v;
  if (auto v = opts.get("--out")) o.out_dir = *v;

  std::cout << "== milestone " << m->name << " (" << m->year << "): " << m->title << "\n"
            << m->history << "\ntarget: " << (o.quick ? m->quick : m->target) << "\n\n"
            << std::flush;
  const Outcome out = m->run(o);
  std::cout << "\n" << (out.passed ? "PASSED" : "MISSED") << ": " << out.reached << "\n";
  return out.passed ? 0 : 1;
}

}  // namespace lazygrad::cli
