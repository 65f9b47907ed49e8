// What every milestone shares (apps/milestone.cpp runs them; a milestone of its own file, such as
// systems in apps/milestone_systems.cpp, declares its run function here).
#pragma once

#include <lazygrad/data.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace lazygrad::cli {

struct MilestoneOptions {
  bool quick = false;
  uint64_t seed = 0;
  std::string data_dir = std::string(data::kFashionMnistRoot);
  std::string text = "/usr/share/games/fortunes";  // the transformer's text (Debian's fortunes)
  std::string cifar_dir;                           // cifar-10-batches-bin, for cnn; "": not run
  std::string out_dir = ".";
};

// What a run reached, against its target: `reached` is printed as the run's last line.
struct Outcome {
  bool passed = false;
  std::string reached;
};

inline std::string format(const char* fmt, double a, double b = 0) {
  char text[160];
  std::snprintf(text, sizeof text, fmt, a, b);
  return text;
}

Outcome run_systems(const MilestoneOptions& o);  // apps/milestone_systems.cpp

}  // namespace lazygrad::cli
