// `lazygrad milestone list | run NAME [--quick]`: the field's milestones, rebuilt with lazygrad. Each
// prints a few lines of its history, runs for real, checks its own target and exits non-zero when
// it misses it (docs/milestones.md records full runs). `--quick` is a short version of each, with a
// target of its own, for CI.
//
// To add one, write `Outcome run_x(const MilestoneOptions&)` and add a row to kMilestones.
#include "milestone.h"

#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "char_corpus.h"
#include "command.h"
#include "option_values.h"
#include "svg_plot.h"
#include "train_charlm.h"
#include "train_fashion_mnist.h"

namespace lazygrad::cli {

namespace {

struct Milestone {
  std::string_view name;
  std::string_view year;
  std::string_view title;    // one line, for the list
  std::string_view history;  // a few lines, printed before the run
  std::string_view target;   // what the full run must reach
  std::string_view quick;    // what the --quick run must reach
  Outcome (*run)(const MilestoneOptions&);
};

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
  // on; those nearer to it than 0.05 are left out, so the set is separable by construction, and
  // Novikoff's theorem bounds the updates by (R / margin)^2, R the largest |(x, y, 1)| (the bias as
  // a third input) and the margin the unit separating vector's in those three dimensions.
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
  // The separating vector with the bias as a third weight, (0.6, -0.8, 0.1), has norm sqrt(1.01):
  // as a unit vector its margin is kMargin / sqrt(1.01).
  const int64_t bound = static_cast<int64_t>(r2 * 1.01 / (kMargin * kMargin));
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

// A small VGG-style network for 32x32 colour images: two 3x3 convolutions (each with BatchNorm and
// ReLU) and a max pool at 32 and 16 pixels, one at 8, then a linear classifier: 3x3 filters stacked
// see what a 5x5 one sees with fewer weights (Simonyan and Zisserman, 2014).
std::shared_ptr<nn::Module> cifar_cnn() {
  auto conv = [](int64_t in, int64_t out) {
    return std::vector<std::shared_ptr<nn::Module>>{std::make_shared<nn::Conv2d>(in, out, 3, 1, 1),
                                                    std::make_shared<nn::BatchNorm2d>(out),
                                                    std::make_shared<nn::ReLU>()};
  };
  std::vector<std::shared_ptr<nn::Module>> layers;
  for (auto [in, out, pool] : std::vector<std::tuple<int64_t, int64_t, bool>>{
           {3, 32, false}, {32, 32, true}, {32, 64, false}, {64, 64, true}, {64, 128, true}}) {
    for (auto& m : conv(in, out)) layers.push_back(m);
    if (pool) layers.push_back(std::make_shared<nn::MaxPool2d>(2));
  }
  layers.push_back(std::make_shared<nn::Flatten>());
  layers.push_back(std::make_shared<nn::Linear>(128 * 4 * 4, 10));
  auto model = std::make_shared<nn::Sequential>();
  for (size_t i = 0; i < layers.size(); i++) model->register_module(std::to_string(i), layers[i]);
  return model;
}

// CIFAR-10's per-channel mean and standard deviation of the training pixels in [0, 1] (the usual
// normalization constants).
Tensor cifar_input(const Tensor& images) {
  const Tensor mean = Tensor::from_vector<float>({0.4914f, 0.4822f, 0.4465f}, {1, 3, 1, 1});
  const Tensor std = Tensor::from_vector<float>({0.2470f, 0.2435f, 0.2616f}, {1, 3, 1, 1});
  return (data::pixels_to_float(images) - mean) / std;
}

// Trains cifar_cnn on CIFAR-10 with random crops (padding 4) and flips, Adam with a cosine decay
// over the epochs, batch 128; prints each epoch's loss and test accuracy; returns the last one (%).
double train_cifar(const std::string& dir, int64_t epochs, uint64_t seed) {
  const data::Cifar10 d = data::load_cifar10(dir);
  const int64_t batch = std::min<int64_t>(128, d.train_images.size(0));
  Tensor::manual_seed(seed);
  std::shared_ptr<nn::Module> model = cifar_cnn();
  optim::Adam adam(model->parameters(), 2e-3);
  Jit step([&](const std::vector<Tensor>& b) {
    Tensor loss = (*model)(cifar_input(b[0])).cross_entropy(b[1]);
    loss.backward();
    adam.step({loss});
    adam.zero_grad();
    return std::vector<Tensor>{loss};
  });
  data::DataLoader loader(d.train_images, d.train_labels,
                          {.batch_size = batch, .shuffle = true, .drop_last = true, .seed = seed});
  std::cout << "CIFAR-10: " << d.train_images.size(0) << " training and " << d.test_images.size(0)
            << " test images from " << dir << "; a 5-convolution network, " << epochs << " epochs\n";
  double accuracy = 0;
  int64_t steps = 0;
  const int64_t total = epochs * loader.size();
  for (int64_t epoch = 1; epoch <= epochs; epoch++) {
    double loss_sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& [images, labels] : loader) {
      adam.set_lr(2e-3 * 0.5 *
                  (1 + std::cos(M_PI * static_cast<double>(steps++) / static_cast<double>(total))));
      loss_sum +=
          step({data::random_crop_flip(images, 4, seed * 1000003 + static_cast<uint64_t>(steps)), labels})[0]
              .item<float>();
    }
    const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    NoGrad no_grad;
    model->eval();
    int64_t right = 0;
    for (auto& [images, labels] : data::DataLoader(d.test_images, d.test_labels, {.batch_size = 1000}))
      right += ((*model)(cifar_input(images)).argmax(1) == labels).sum().item<int64_t>();
    model->train();
    accuracy = 100.0 * static_cast<double>(right) / static_cast<double>(d.test_images.size(0));
    std::cout << "CIFAR-10 epoch " << epoch << "/" << epochs << ": train loss "
              << format("%.4f", loss_sum / static_cast<double>(loader.size()))
              << format(", %.1f s, test accuracy %.2f%%\n", train_s, accuracy);
  }
  return accuracy;
}

Outcome run_cnn(const MilestoneOptions& o) {
  if (!o.cifar_dir.empty())
    data::load_cifar10(o.cifar_dir);  // a bad folder fails now, not after Fashion-MNIST
  Outcome fashion = run_fashion(o, "cnn", 89.0, 75.0);
  if (o.cifar_dir.empty()) {
    std::cout
        << "\nCIFAR-10: not run (give --cifar DIR, the folder cifar-10-batches-bin of the binary version)\n";
    return fashion;
  }
  std::cout << "\n";
  const double target = o.quick ? 30.0 : 75.0;
  const double reached = train_cifar(o.cifar_dir, o.quick ? 1 : 8, o.seed);
  return {fashion.passed && reached >= target,
          fashion.reached + format("; CIFAR-10 test accuracy %.2f%%, target %.1f%%", reached, target)};
}

// ---- transformer (2017) ------------------------------------------------------------------------------

// A transformer encoder (Vaswani et al. 2017) as small as it gets: token and position embeddings,
// blocks of pre-norm self-attention over the whole sequence (no causal mask) and an MLP, each added
// to the residual stream, and a linear head per position.
class Encoder : public nn::Module {
 public:
  Encoder(int64_t vocab, int64_t length, int64_t dim, int64_t heads, int64_t layers) : heads_(heads) {
    tok_ = register_module("tok", std::make_shared<nn::Embedding>(vocab, dim));
    pos_ = register_module("pos", std::make_shared<nn::Embedding>(length, dim));
    for (int64_t l = 0; l < layers; l++) {
      auto block = std::make_shared<nn::Module>();
      Block b{block->register_module("ln1", std::make_shared<nn::LayerNorm>(nn::IntList{dim})),
              block->register_module("q", std::make_shared<nn::Linear>(dim, dim)),
              block->register_module("k", std::make_shared<nn::Linear>(dim, dim)),
              block->register_module("v", std::make_shared<nn::Linear>(dim, dim)),
              block->register_module("proj", std::make_shared<nn::Linear>(dim, dim)),
              block->register_module("ln2", std::make_shared<nn::LayerNorm>(nn::IntList{dim})),
              block->register_module("fc1", std::make_shared<nn::Linear>(dim, 4 * dim)),
              block->register_module("fc2", std::make_shared<nn::Linear>(4 * dim, dim))};
      register_module("block" + std::to_string(l), block);
      blocks_.push_back(b);
    }
    ln_f_ = register_module("ln_f", std::make_shared<nn::LayerNorm>(nn::IntList{dim}));
    head_ = register_module("head", std::make_shared<nn::Linear>(dim, vocab));
  }

  // tokens [B, L] (int64) -> logits [B, L, vocab]
  Tensor forward(const Tensor& tokens) override {
    const int64_t B = tokens.size(0), L = tokens.size(1);
    Tensor x = (*tok_)(tokens) + (*pos_)(Tensor::arange(L, kInt64));
    const int64_t D = x.size(2), H = heads_;
    auto heads = [&](const Tensor& t) {
      return t.reshape({B, L, H, D / H}).transpose(1, 2);
    };  // [B, H, L, D/H]
    for (const Block& b : blocks_) {
      Tensor h = (*b.ln1)(x);
      Tensor a = scaled_dot_product_attention(heads((*b.q)(h)), heads((*b.k)(h)), heads((*b.v)(h)));
      x = x + (*b.proj)(a.transpose(1, 2).reshape({B, L, D}));
      x = x + (*b.fc2)((*b.fc1)((*b.ln2)(x)).gelu());
    }
    return (*head_)((*ln_f_)(x));
  }

 private:
  struct Block {
    std::shared_ptr<nn::LayerNorm> ln1;
    std::shared_ptr<nn::Linear> q, k, v, proj;
    std::shared_ptr<nn::LayerNorm> ln2;
    std::shared_ptr<nn::Linear> fc1, fc2;
  };
  int64_t heads_;
  std::shared_ptr<nn::Embedding> tok_, pos_;
  std::vector<Block> blocks_;
  std::shared_ptr<nn::LayerNorm> ln_f_;
  std::shared_ptr<nn::Linear> head_;
};

// The attention proof: output a sequence of digits reversed. Position i's answer is the token at
// position L-1-i, which only attention can fetch; an MLP per position cannot. Returns the token
// accuracy (%) on fresh sequences.
double reversal(uint64_t seed, int64_t steps) {
  constexpr int64_t kVocab = 10, kLength = 8, kBatch = 64;
  std::mt19937_64 rng(seed);
  auto batch = [&](int64_t n) {
    std::vector<int64_t> x(n * kLength), y(n * kLength);
    for (int64_t r = 0; r < n; r++)
      for (int64_t i = 0; i < kLength; i++) x[r * kLength + i] = static_cast<int64_t>(rng() % kVocab);
    for (int64_t r = 0; r < n; r++)
      for (int64_t i = 0; i < kLength; i++) y[r * kLength + i] = x[r * kLength + kLength - 1 - i];
    return std::vector<Tensor>{Tensor::from_vector(x, {n, kLength}), Tensor::from_vector(y, {n, kLength})};
  };
  Tensor::manual_seed(seed);
  Encoder model(kVocab, kLength, 64, 4, 2);
  optim::Adam adam(model.parameters(), 3e-3);
  Jit step([&](const std::vector<Tensor>& b) {
    Tensor loss =
        model(b[0]).reshape({kBatch * kLength, kVocab}).cross_entropy(b[1].reshape({kBatch * kLength}));
    loss.backward();
    adam.step({loss});
    adam.zero_grad();
    return std::vector<Tensor>{loss};
  });
  for (int64_t s = 1; s <= steps; s++) {
    const double loss = step(batch(kBatch))[0].item<float>();
    if (s % (steps / 4) == 0) std::cout << "reversal step " << s << ": loss " << format("%.4f", loss) << "\n";
  }
  NoGrad no_grad;
  const std::vector<Tensor> test = batch(1000);
  const double right = (model(test[0]).argmax(-1) == test[1]).sum().item<int64_t>();
  return 100.0 * right / static_cast<double>(test[1].numel());
}

// The words of `text` (letters only, lower case).
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text + " ") {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  return words;
}

// The share (%) of the sample's words of two letters or more that occur in the text: text a reader
// recognizes is mostly real words. Files as charlm reads them: the file, or every text file directly
// in a folder.
double recognizable_words(const std::string& sample, const std::string& text_path) {
  const CharCorpus corpus = load_char_corpus(text_path, 0.0);  // the files charlm read, all as training text
  std::string text;
  text.reserve(corpus.train.size());
  for (int32_t id : corpus.train) text += static_cast<char>(corpus.vocab[static_cast<size_t>(id)]);
  std::set<std::string> known;
  for (std::string& w : words_of(text)) known.insert(std::move(w));
  int64_t n = 0, found = 0;
  for (const std::string& w : words_of(sample)) {
    if (w.size() < 2) continue;
    n++;
    found += known.count(w) > 0;
  }
  return n ? 100.0 * static_cast<double>(found) / static_cast<double>(n) : 0;
}

Outcome run_transformer(const MilestoneOptions& o) {
  if (!std::filesystem::exists(o.text))
    throw Error("milestone transformer: no text at " + o.text +
                " (apt-get install fortunes, or give --text FILE|FOLDER)");
  // After 100 steps the sample is mostly made-up words (29.0% real at seed 0), after 1000 69.1%.
  const double target_loss = o.quick ? 2.9 : 2.0, target_words = o.quick ? 25 : 50, target_reversal = 95;
  CharLmConfig cfg;
  cfg.text = o.text;
  cfg.steps = o.quick ? 100 : 1000;
  cfg.eval_every = o.quick ? 50 : 100;
  cfg.out_dir = o.out_dir;
  cfg.seed = o.seed;
  const CharLmResult lm = train_charlm(cfg);
  const double words = recognizable_words(lm.sample, o.text);
  std::cout << format("%.1f%% of the sample's words occur in the text\n\n", words);
  const double reversed = reversal(o.seed, o.quick ? 300 : 600);
  std::cout << "sequence reversal (8 digits, 2-layer encoder): " << format("%.2f%%", reversed)
            << " of 8,000 test tokens right\n";
  return {lm.heldout_loss < target_loss && words >= target_words && reversed >= target_reversal,
          format("held-out loss %.4f nats/char (target below %.1f), ", lm.heldout_loss, target_loss) +
              format("%.1f%% real words (target %.0f%%), ", words, target_words) +
              format("reversal %.2f%% (target %.0f%%)", reversed, target_reversal)};
}

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
     "at least 89% test accuracy after 5 epochs; with --cifar DIR also CIFAR-10, 75% after 8 epochs",
     "at least 75% after 1 epoch on 20,000 images; with --cifar DIR, CIFAR-10 30% after 1 epoch", run_cnn},
    {"transformer", "2017", "attention: a character-level GPT, and a sequence reversed",
     "Vaswani et al.'s transformer (2017) replaced recurrence with attention: every position reads\n"
     "every other, weighted by learned relevance. A 4-layer GPT (models/gpt2.h, the recipe of\n"
     "`lazygrad train charlm`) learns the bytes of Debian's fortunes; then the proof that attention\n"
     "moves information between positions: a 2-layer encoder learns to reverse sequences of digits.",
     "held-out loss below 2.0 nats/char after 1000 steps, half the sample's words real, reversal 95%",
     "below 2.9 after 100 steps, 25% real words, reversal 95% after 300 steps", run_transformer},
    {"systems", "2018", "making a training step fast: profile, fuse, capture, search, quantize",
     "MLPerf (2018) made training speed a benchmark, and frameworks learned to fuse kernels, capture\n"
     "graphs and search kernel schedules. One Fashion-MNIST MLP step (batch 128, Adam) is profiled per\n"
     "layer, then run layer by layer, fused, replayed by the Jit and tuned by BEAM, each the same run;\n"
     "inference then runs with int8 weights (nn::Int8Linear).",
     "the same losses; fewer kernels fused; the Jit's step faster than layer by layer; int8 weights at\n"
     "            most 27% of float32's bytes with 98% of predictions the same",
     "the same, 5 timed steps, without the time check", run_systems},
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
  Options opts = parse_options(args, {"--seed", "--data", "--text", "--cifar", "--out"}, {"--quick"});
  if (opts.positional.empty()) throw UsageError{"list or run NAME"};
  if (opts.positional[0] == "list") {
    no_positionals(Options{{}, {opts.positional.begin() + 1, opts.positional.end()}});
    for (const Milestone& m : kMilestones)
      std::cout << m.name << std::string(std::max<size_t>(1, 12 - std::min<size_t>(12, m.name.size())), ' ')
                << m.year << "  " << m.title << "\n            target: " << m.target
                << "\n            --quick: " << m.quick << "\n";
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
  if (auto v = opts.get("--text")) o.text = *v;
  if (auto v = opts.get("--cifar")) o.cifar_dir = *v;
  if (auto v = opts.get("--out")) o.out_dir = *v;
  for (const char* option : {"--data", "--text", "--cifar", "--out"})
    if (auto v = opts.get(option); v && v->empty())
      throw UsageError{std::string(option) + " takes a path, got ''"};

  std::cout << "== milestone " << m->name << " (" << m->year << "): " << m->title << "\n"
            << m->history << "\ntarget: " << (o.quick ? m->quick : m->target) << "\n\n"
            << std::flush;
  Outcome out;
  try {
    out = m->run(o);
  } catch (const Error& e) {
    // Not a missed target: the milestone could not run (its data missing or malformed).
    std::cout << "\nNOT RUN: " << e.what() << "\n";
    return 3;
  }
  std::cout << "\n" << (out.passed ? "PASSED" : "MISSED") << ": " << out.reached << "\n";
  return out.passed ? 0 : 1;
}

}  // namespace lazygrad::cli
