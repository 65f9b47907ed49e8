// `lazygrad train charlm` as a function (apps/train_charlm.cpp), which the transformer milestone
// (apps/milestone.cpp) runs too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lazygrad::cli {

// The command line, parsed and checked. The defaults are the recipe docs/charlm.md measures.
struct CharLmConfig {
  std::string text;
  int64_t n_layer = 4, n_head = 4, n_embd = 128, context = 64;
  int64_t batch_size = 32;
  double lr = 4e-3;
  int64_t warmup = 50;
  std::optional<int64_t> steps;   // stop after this many steps; the schedule follows them
  std::optional<double> minutes;  // stop after this much time (training and evaluations); without
                                  // --steps the schedule follows it
  int64_t eval_every = 100;
  std::string out_dir = ".";
  int64_t sample_chars = 400;
  double temperature = 0.8;
  std::optional<std::string> prompt;
  uint64_t seed = 0;
};

// What a run reached: the loss after each evaluation, the last held-out loss, the steps taken, and
// the sample (prompt included; empty with sample_chars 0).
struct CharLmResult {
  struct Point {
    int64_t step;
    double train_loss, heldout_loss;  // nats per character; training: the mean since the last point
  };
  std::vector<Point> curve;
  double heldout_loss = 0;
  int64_t steps = 0;
  std::string sample;
};

// Trains, printing as the command does, and writes charlm.safetensors and charlm.svg (the loss
// curves) into cfg.out_dir. Error for a text too short for the context.
CharLmResult train_charlm(const CharLmConfig& cfg);

}  // namespace lazygrad::cli
