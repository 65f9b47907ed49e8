// The progress of a training epoch on one line of stderr:
//
//   epoch 2/5 [########............]  190/468  5120 items/s  ETA 0:07  loss 0.4132
//
// On a terminal the line is redrawn in place with '\r' (at most ten times a second); otherwise (a
// log file, a pipe, a test) a plain line is printed at every tenth of the epoch, so a log stays short.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace lazygrad::cli {

class ProgressBar {
 public:
  // `redraw`: rewrite one line with '\r' (for a terminal) rather than print plain lines.
  ProgressBar(std::ostream& out, bool redraw);
  static bool stderr_is_terminal();

  // Starts timing an epoch (1-based) of `batches` batches of `batch_size` items.
  void start_epoch(int64_t epoch, int64_t epochs, int64_t batches, int64_t batch_size);
  // After batch `done` (1..batches) of the epoch; `loss` is the running loss to show.
  void update(int64_t done, double loss);
  // Ends the epoch's line, so what is printed next starts on a line of its own.
  void finish_epoch();

  // Seconds since start_epoch, and the items per second they give.
  double elapsed_s() const;
  double items_per_s() const;

 private:
  std::string line() const;

  std::ostream& out_;
  bool redraw_;
  int64_t epoch_ = 0, epochs_ = 0, batches_ = 0, batch_size_ = 0, done_ = 0;
  double loss_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  size_t drawn_width_ = 0;      // the length of the line on screen, to blank a longer old one
  int64_t printed_tenths_ = 0;  // without redraw: the tenths of the epoch already printed
};

// "0:42", "12:03", "1:02:03".
std::string format_duration(double seconds);

}  // namespace lazygrad::cli
