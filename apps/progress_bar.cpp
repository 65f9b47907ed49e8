// ProgressBar: see progress_bar.h.
#include "progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace lazygrad::cli {

ProgressBar::ProgressBar(std::ostream& out, bool redraw) : out_(out), redraw_(redraw) {}

bool ProgressBar::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void ProgressBar::start_epoch(int64_t epoch, int64_t epochs, int64_t batches, int64_t batch_size) {
  epoch_ = epoch;
  epochs_ = epochs;
  batches_ = batches;
  batch_size_ = batch_size;
  done_ = 0;
  loss_ = 0;
  drawn_width_ = 0;
  printed_tenths_ = 0;
  start_ = std::chrono::steady_clock::now();
  last_draw_ = start_;
}

double ProgressBar::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double ProgressBar::items_per_s() const {
  double s = elapsed_s();
  return s > 0 ? static_cast<double>(done_ * batch_size_) / s : 0.0;
}

void ProgressBar::update(int64_t done, double loss) {
  done_ = done;
  loss_ = loss;
  bool last = done == batches_;
  if (redraw_) {
    auto now = std::chrono::steady_clock::now();
    if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;  // a terminal needs no more
    last_draw_ = now;
    std::string text = line();
    // Blank what is left of a longer previous line instead of relying on terminal escape codes.
    size_t pad = drawn_width_ > text.size() ? drawn_width_ - text.size() : 0;
    out_ << '\r' << text << std::string(pad, ' ') << std::flush;
    drawn_width_ = text.size();
    return;
  }
  int64_t tenths = batches_ > 0 ? done * 10 / batches_ : 10;
  if (tenths > printed_tenths_ || last) {
    printed_tenths_ = tenths;
    out_ << line() << '\n' << std::flush;
  }
}

void ProgressBar::finish_epoch() {
  if (redraw_ && drawn_width_ > 0) out_ << '\n' << std::flush;
  drawn_width_ = 0;
}

std::string ProgressBar::line() const {
  constexpr int64_t kBarWidth = 20;
  int64_t filled = batches_ > 0 ? done_ * kBarWidth / batches_ : kBarWidth;
  std::string bar = std::string(static_cast<size_t>(filled), '#') +
                    std::string(static_cast<size_t>(kBarWidth - filled), '.');
  double rate = items_per_s();
  double eta = rate > 0 ? static_cast<double>((batches_ - done_) * batch_size_) / rate : 0.0;
  int width = static_cast<int>(std::to_string(batches_).size());  // keeps the columns still
  char text[256];
  std::snprintf(text, sizeof text, "epoch %lld/%lld [%s] %*lld/%lld  %.0f items/s  ETA %s  loss %.4f",
                static_cast<long long>(epoch_), static_cast<long long>(epochs_), bar.c_str(), width,
                static_cast<long long>(done_), static_cast<long long>(batches_), rate,
                format_duration(eta).c_str(), loss_);
  return text;
}

std::string format_duration(double seconds) {
  long long s = std::isfinite(seconds) && seconds > 0 ? std::llround(seconds) : 0;
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
  }
  return text;
}

}  // namespace lazygrad::cli
