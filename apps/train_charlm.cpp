// `lazygrad train charlm --text PATH`: trains a small character-level GPT (models/gpt2.h with a
// small config; the tokens are the bytes of the text) on a text file or a folder of them, reports
// the loss on held-out text in nats per character as it goes, writes a checkpoint and prints a
// sample. docs/charlm.md has the recipe and what it reaches on Debian's fortunes.
//
// Three fixed shapes run, each under its own Jit: the training step (forward, backward, gradient
// clipping and AdamW's update, one schedule), the held-out loss of one batch, and the forward of one
// context window for sampling. After their second call they replay captured kernels, so a step
// costs no scheduling and no compiler.
#include "train_charlm.h"

#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numbers>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "../models/gpt2.h"
#include "char_corpus.h"
#include "command.h"
#include "option_values.h"
#include "svg_plot.h"

namespace lazygrad::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kHeldoutFraction = 0.1;  // the tail of every file
constexpr int64_t kEvalChars = 16384;     // at most this many held-out characters per evaluation
constexpr double kClipNorm = 1.0;         // the gradients' total L2 norm is clipped to this
constexpr double kFinalLrFactor = 0.1;    // the cosine ends at a tenth of --lr

constexpr double kDefaultMinutes = 15;

CharLmConfig parse_config(const Args& args) {
  Options opts = parse_options(args, {"--text", "--steps", "--minutes", "--layers", "--heads", "--embd",
                                      "--context", "--batch-size", "--lr", "--warmup", "--eval-every",
                                      "--out", "--sample-chars", "--temperature", "--prompt", "--seed"});
  if (opts.positional.size() > 1) throw UsageError{"unexpected argument '" + opts.positional[1] + "'"};
  CharLmConfig cfg;
  auto text = opts.get("--text");
  if (!text || text->empty()) throw UsageError{"train charlm needs --text FILE or --text FOLDER"};
  cfg.text = *text;
  if (auto v = opts.get("--steps")) cfg.steps = parse_int("--steps", *v, 1);
  if (auto v = opts.get("--minutes")) cfg.minutes = parse_positive("--minutes", *v);
  if (!cfg.steps && !cfg.minutes) cfg.minutes = kDefaultMinutes;
  if (auto v = opts.get("--layers")) cfg.n_layer = parse_int("--layers", *v, 1);
  if (auto v = opts.get("--heads")) cfg.n_head = parse_int("--heads", *v, 1);
  if (auto v = opts.get("--embd")) cfg.n_embd = parse_int("--embd", *v, 1);
  if (auto v = opts.get("--context")) cfg.context = parse_int("--context", *v, 2);
  if (auto v = opts.get("--batch-size")) cfg.batch_size = parse_int("--batch-size", *v, 1);
  if (auto v = opts.get("--lr")) cfg.lr = parse_positive("--lr", *v);
  if (auto v = opts.get("--warmup")) cfg.warmup = parse_int("--warmup", *v, 0);
  if (auto v = opts.get("--eval-every")) cfg.eval_every = parse_int("--eval-every", *v, 1);
  if (auto v = opts.get("--out")) cfg.out_dir = *v;
  if (auto v = opts.get("--sample-chars")) cfg.sample_chars = parse_int("--sample-chars", *v, 0);
  if (auto v = opts.get("--temperature")) cfg.temperature = parse_non_negative("--temperature", *v);
  if (auto v = opts.get("--prompt")) {
    if (v->empty()) throw UsageError{"--prompt takes at least one character, got ''"};
    cfg.prompt = *v;
  }
  if (auto v = opts.get("--seed")) cfg.seed = parse_seed(*v);
  if (cfg.out_dir.empty()) throw UsageError{"--out takes a folder, got ''"};
  if (cfg.n_embd % cfg.n_head != 0)
    throw UsageError{"--embd " + std::to_string(cfg.n_embd) + " is not a multiple of --heads " +
                     std::to_string(cfg.n_head)};
  // Far beyond a laptop's reach, and it keeps B * T * vocab (the logits' element count) and the
  // parameter counts well inside int64_t.
  for (auto [name, value] : {std::pair{"--layers", cfg.n_layer},
                             {"--embd", cfg.n_embd},
                             {"--context", cfg.context},
                             {"--batch-size", cfg.batch_size}})
    if (value > 65536)
      throw UsageError{std::string(name) + " is at most 65536, got " + std::to_string(value)};
  return cfg;
}

// ---- batches of text ---------------------------------------------------------------------------------

// Inputs [B, T] and targets [B, T] (the inputs shifted by one character) cut from `ids` at `starts`.
std::vector<Tensor> windows(std::span<const int32_t> ids, const std::vector<size_t>& starts, int64_t T) {
  std::vector<int32_t> x, y;
  for (size_t s : starts) {
    x.insert(x.end(), ids.begin() + static_cast<std::ptrdiff_t>(s),
             ids.begin() + static_cast<std::ptrdiff_t>(s + T));
    y.insert(y.end(), ids.begin() + static_cast<std::ptrdiff_t>(s + 1),
             ids.begin() + static_cast<std::ptrdiff_t>(s + T + 1));
  }
  const auto B = static_cast<int64_t>(starts.size());
  return {Tensor::from_vector(x, {B, T}), Tensor::from_vector(y, {B, T})};
}

// The held-out batches every evaluation scores: non-overlapping windows spread evenly over the
// held-out text, at most kEvalChars predicted characters in all. Fixed, so that evaluations compare.
std::vector<std::vector<Tensor>> heldout_batches(std::span<const int32_t> heldout, int64_t T, int64_t B) {
  const auto available = static_cast<int64_t>((heldout.size() - 1) / static_cast<size_t>(T));
  const int64_t count = std::min(available, std::max<int64_t>(1, kEvalChars / T));
  const int64_t per_batch = std::min(B, count), n_batches = count / per_batch;
  const int64_t total = n_batches * per_batch;
  std::vector<std::vector<Tensor>> batches;
  for (int64_t b = 0; b < n_batches; b++) {
    std::vector<size_t> starts;
    for (int64_t k = b * per_batch; k < (b + 1) * per_batch; k++)
      starts.push_back(static_cast<size_t>(k * available / total * T));
    batches.push_back(windows(heldout, starts, T));
  }
  return batches;
}

// The cross-entropy of the held-out text under the training text's character frequencies (add-one
// smoothed, so that a character never seen in training costs a finite amount): the loss of a model
// that ignores context, for comparison.
double unigram_loss(const CharCorpus& corpus) {
  std::vector<double> count(corpus.vocab.size(), 1.0);
  for (int32_t id : corpus.train) count[static_cast<size_t>(id)] += 1;
  const double total = static_cast<double>(corpus.train.size() + corpus.vocab.size());
  double loss = 0;
  for (int32_t id : corpus.heldout) loss -= std::log(count[static_cast<size_t>(id)] / total);
  return loss / static_cast<double>(corpus.heldout.size());
}

// ---- the model ----------------------------------------------------------------------------------------

// GPT-2's initialization for the embeddings too (N(0, 0.02), as Hugging Face's _init_weights; the
// layers already have it): nn::Embedding's N(0, 1) through the tied LM head would start with logits
// of standard deviation sqrt(n_embd) and a loss far above log(vocab).
void init_embeddings(models::GPT2& model) {
  NoGrad no_grad;
  for (Tensor* w : {&model.wte->weight, &model.wpe->weight}) w->assign(Tensor::randn(w->shape()) * 0.02);
  realize({model.wte->weight, model.wpe->weight});
}

int64_t parameter_count(const nn::Module& model) {
  int64_t n = 0;
  for (const auto& [name, p] : model.named_parameters()) n += p.numel();
  return n;
}

// Linear warmup over `warmup` steps, then a cosine from lr down to kFinalLrFactor * lr as `progress`
// goes from 0 to 1 (the share of --steps done, or of --minutes).
double scheduled_lr(const CharLmConfig& cfg, int64_t step, double progress) {
  const double warm =
      cfg.warmup > 0 ? std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(cfg.warmup)) : 1.0;
  const double cosine = 0.5 * (1 + std::cos(std::numbers::pi * std::clamp(progress, 0.0, 1.0)));
  return cfg.lr * warm * (kFinalLrFactor + (1 - kFinalLrFactor) * cosine);
}

std::string vocab_string(const std::vector<uint8_t>& vocab) {
  std::string s;
  for (uint8_t b : vocab) s += (s.empty() ? "" : ",") + std::to_string(b);
  return s;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// ---- sampling ---------------------------------------------------------------------------------------

// Continues `prompt` (token ids) by `n` tokens. The model sees the last `context` tokens each time
// through one fixed-shape [1, context] forward (shorter windows padded at the end, which a causal
// model's earlier positions never see), so every forward replays one captured Jit.
std::vector<int32_t> sample(models::GPT2& model, std::vector<int32_t> sequence, int64_t n, int64_t context,
                            Sampler& sampler) {
  Jit forward([&model](const std::vector<Tensor>& in) {
    NoGrad no_grad;
    return std::vector<Tensor>{model(in[0])};
  });
  const size_t T = static_cast<size_t>(context), prompt_size = sequence.size();
  const auto V = static_cast<size_t>(model.config.vocab_size);
  for (int64_t i = 0; i < n; i++) {
    const size_t start = sequence.size() > T ? sequence.size() - T : 0, used = sequence.size() - start;
    std::vector<int32_t> window(sequence.begin() + static_cast<std::ptrdiff_t>(start), sequence.end());
    window.resize(T, 0);
    std::vector<float> logits = forward({Tensor::from_vector(window, {1, context})})[0].to_vector<float>();
    std::span<const float> last(logits.data() + (used - 1) * V, V);
    sequence.push_back(sampler.sample(last));
  }
  return {sequence.begin() + static_cast<std::ptrdiff_t>(prompt_size), sequence.end()};
}

// The prompt's bytes as token ids; a byte the text never had is a UsageError.
std::vector<int32_t> encode_prompt(const std::string& prompt, const std::vector<uint8_t>& vocab) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < prompt.size(); i++) {
    auto it = std::lower_bound(vocab.begin(), vocab.end(), static_cast<uint8_t>(prompt[i]));
    if (it == vocab.end() || *it != static_cast<uint8_t>(prompt[i]))
      throw UsageError{"--prompt: byte " + std::to_string(i) + " (" +
                       std::to_string(static_cast<uint8_t>(prompt[i])) + ") never occurs in the text"};
    ids.push_back(static_cast<int32_t>(it - vocab.begin()));
  }
  return ids;
}

}  // namespace

int cmd_train_charlm(const Args& args) {
  train_charlm(parse_config(args));
  return 0;
}

CharLmResult train_charlm(const CharLmConfig& cfg) {
  // What parse_config checks for the command line, for callers that fill the struct themselves.
  if ((!cfg.steps && !cfg.minutes) || (cfg.steps && *cfg.steps < 1) || (cfg.minutes && !(*cfg.minutes > 0)) ||
      cfg.eval_every < 1 || cfg.batch_size < 1 || cfg.context < 1)
    throw Error(
        "train charlm: needs steps (at least 1) or minutes (more than 0); eval_every, batch_size and "
        "context at least 1");
  CharLmResult result;
  const int64_t B = cfg.batch_size, T = cfg.context;

  const CharCorpus corpus = load_char_corpus(cfg.text, kHeldoutFraction);
  const auto V = static_cast<int64_t>(corpus.vocab.size());
  // One training window and one held-out window of T + 1 characters at least.
  if (corpus.train.size() < static_cast<size_t>(T) + 1 ||
      corpus.heldout.size() < static_cast<size_t>(T) + 1) {
    const size_t total = corpus.train.size() + corpus.heldout.size();
    throw Error("train charlm: '" + cfg.text + "' has " + std::to_string(total) +
                " bytes, too few for --context " + std::to_string(T) + ": the held-out tail (" +
                fixed(100 * kHeldoutFraction, 0) + "% of each file) and the rest must each hold " +
                std::to_string(T + 1) + " bytes (a smaller --context needs less text)");
  }
  std::vector<int32_t> prompt_ids;
  if (cfg.prompt) {
    prompt_ids = encode_prompt(*cfg.prompt, corpus.vocab);
  } else {
    // A new line starts a sample if the text has one (fortunes start after "%\n"), else its first byte.
    auto nl = std::lower_bound(corpus.vocab.begin(), corpus.vocab.end(), uint8_t{'\n'});
    prompt_ids = {nl != corpus.vocab.end() && *nl == '\n' ? static_cast<int32_t>(nl - corpus.vocab.begin())
                                                          : corpus.train[0]};
  }

  std::error_code ec;
  fs::create_directories(cfg.out_dir, ec);
  if (ec) throw Error("train charlm: cannot create the output folder '" + cfg.out_dir + "': " + ec.message());
  const std::string checkpoint_path = (fs::path(cfg.out_dir) / "charlm.safetensors").string();

  Tensor::manual_seed(cfg.seed);
  models::GPT2 model(models::GPT2Config{cfg.n_layer, cfg.n_head, cfg.n_embd, V, T});
  init_embeddings(model);
  optim::AdamW opt(model.parameters(), cfg.lr, {0.9, 0.99}, 1e-8, 0.01);

  Jit train_step([&](const std::vector<Tensor>& batch) {
    Tensor loss = model(batch[0]).reshape({B * T, V}).cross_entropy(batch[1].reshape({B * T}));
    loss.backward();
    optim::clip_grad_norm_(model.parameters(), kClipNorm);
    opt.step({loss});
    opt.zero_grad();
    return std::vector<Tensor>{loss};
  });
  const std::vector<std::vector<Tensor>> eval_batches = heldout_batches(corpus.heldout, T, B);
  Jit eval_step([&](const std::vector<Tensor>& batch) {
    NoGrad no_grad;
    const int64_t n = batch[0].size(0) * T;
    return std::vector<Tensor>{model(batch[0]).reshape({n, V}).cross_entropy(batch[1].reshape({n}))};
  });
  auto heldout_loss = [&] {
    double sum = 0;
    for (const auto& batch : eval_batches) sum += eval_step(batch)[0].item<float>();
    return sum / static_cast<double>(eval_batches.size());
  };

  std::cout << "text: " << cfg.text << ": " << corpus.files.size()
            << (corpus.files.size() == 1 ? " file, " : " files, ")
            << corpus.train.size() + corpus.heldout.size() << " bytes, vocabulary " << V << "; held out "
            << corpus.heldout.size() << " (the last " << fixed(100 * kHeldoutFraction, 0)
            << "% of each file)";
  if (!corpus.skipped.empty()) std::cout << "; skipped " << corpus.skipped.size() << " files";
  std::cout << "\nmodel: GPT, " << cfg.n_layer << " layers, " << cfg.n_head << " heads, n_embd " << cfg.n_embd
            << ", context " << T << ", " << parameter_count(model) << " parameters\n"
            << "training: batch " << B << " x " << T << ", AdamW lr " << cfg.lr << " (warmup " << cfg.warmup
            << ", cosine to " << cfg.lr * kFinalLrFactor << "), clip " << kClipNorm << ", seed " << cfg.seed;
  if (cfg.steps) std::cout << ", " << *cfg.steps << " steps";
  if (cfg.minutes) std::cout << ", " << *cfg.minutes << " minutes";
  std::cout << ", " << settings().threads << " threads\n"
            << "unigram held-out loss: " << fixed(unigram_loss(corpus), 4)
            << " nats/char; held-out loss scored on "
            << eval_batches.size() * static_cast<size_t>(eval_batches[0][0].numel()) << " characters\n"
            << std::flush;

  std::mt19937_64 rng(cfg.seed);
  const size_t last_start = corpus.train.size() - static_cast<size_t>(T) - 1;
  auto next_batch = [&] {
    std::vector<size_t> starts;
    for (int64_t b = 0; b < B; b++) starts.push_back(static_cast<size_t>(rng() % (last_start + 1)));
    return windows(corpus.train, starts, T);
  };

  const double budget_s = cfg.minutes ? *cfg.minutes * 60 : 0;
  double train_s = 0, interval_loss = 0, interval_s = 0, heldout = 0;
  int64_t step = 0, interval_steps = 0;
  const Clock::time_point start = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  for (;;) {
    const double progress =
        cfg.steps ? static_cast<double>(step) / static_cast<double>(*cfg.steps) : elapsed_s() / budget_s;
    opt.set_lr(scheduled_lr(cfg, step, progress));
    const Clock::time_point t0 = Clock::now();
    interval_loss += train_step(next_batch())[0].item<float>();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    train_s += dt;
    interval_s += dt;
    step++;
    interval_steps++;
    // The time budget includes the evaluations, so the last one may end a little after it.
    const bool last = (cfg.steps && step >= *cfg.steps) || (cfg.minutes && elapsed_s() >= budget_s);
    if (step % cfg.eval_every == 0 || last) {
      heldout = heldout_loss();
      result.curve.push_back({step, interval_loss / static_cast<double>(interval_steps), heldout});
      std::printf("step %lld: train loss %.4f, held-out loss %.4f nats/char, lr %.2e, %.0f chars/s, %.1f s\n",
                  static_cast<long long>(step), interval_loss / static_cast<double>(interval_steps), heldout,
                  opt.lr(), static_cast<double>(interval_steps * B * T) / interval_s, elapsed_s());
      std::fflush(stdout);
      interval_loss = interval_s = 0;
      interval_steps = 0;
    }
    if (last) break;
  }
  std::cout << "held-out loss: " << fixed(heldout, 4) << " nats/char after " << step << " steps, "
            << fixed(elapsed_s(), 1) << " s (" << fixed(train_s, 1) << " s training)\n";

  save_safetensors(checkpoint_path, model.state_dict(),
                   {{"format", "pt"},
                    {"model", "charlm"},
                    {"n_layer", std::to_string(cfg.n_layer)},
                    {"n_head", std::to_string(cfg.n_head)},
                    {"n_embd", std::to_string(cfg.n_embd)},
                    {"n_positions", std::to_string(T)},
                    {"vocab", vocab_string(corpus.vocab)},
                    {"steps", std::to_string(step)},
                    {"heldout_loss", fixed(heldout, 4)}});
  const std::string plot_path = (fs::path(cfg.out_dir) / "charlm.svg").string();
  std::vector<double> steps, train_loss, heldout_curve;
  for (const CharLmResult::Point& p : result.curve) {
    steps.push_back(static_cast<double>(p.step));
    train_loss.push_back(p.train_loss);
    heldout_curve.push_back(p.heldout_loss);
  }
  write_svg(
      plot_path,
      {LineChart{
          .title = "character-level GPT: loss",
          .x_label = "step",
          .y_label = "nats per character",
          .series = {
              {.label = "training (mean since the last point)",
               .x = steps,
               .y = train_loss,
               .color = "#1f5fa0"},
              {.label = "held-out", .x = steps, .y = heldout_curve, .color = "#d62728", .markers = true}}}});
  std::cout << "wrote " << checkpoint_path << " and " << plot_path << "\n";
  result.heldout_loss = heldout;
  result.steps = step;

  if (cfg.sample_chars > 0) {
    Sampler sampler({.temperature = cfg.temperature}, cfg.seed);
    std::vector<int32_t> generated = sample(model, prompt_ids, cfg.sample_chars, T, sampler);
    std::string text;
    for (int32_t id : prompt_ids) text += static_cast<char>(corpus.vocab[static_cast<size_t>(id)]);
    for (int32_t id : generated) text += static_cast<char>(corpus.vocab[static_cast<size_t>(id)]);
    std::cout << "sample (" << cfg.sample_chars << " characters, temperature " << cfg.temperature << ", seed "
              << cfg.seed << "):\n"
              << text << "\n";
    result.sample = text;
  }
  return result;
}

}  // namespace lazygrad::cli
