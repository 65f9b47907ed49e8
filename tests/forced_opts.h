// ForcedOpts: while it lives, every kernel compiled gets the opts `pick` chooses from its axes, and
// the opts each got, fitted to its target as the engine fits them, are kept, so a test can check
// they were used (test_work_groups, test_tensor_cores).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/optimize.h"
#include "engine/realize.h"
#include "renderer/renderer.h"
#include "runtime/device.h"

class ForcedOpts {
 public:
  using Pick =
      std::function<std::vector<lazygrad::Opt>(const lazygrad::Kernel&, const lazygrad::KernelAxes&)>;
  explicit ForcedOpts(Pick pick) {
    static int64_t key = 7000;  // a cache key of its own: every kernel is compiled again
    lazygrad::set_opts_chooser(
        [this, pick](const lazygrad::Kernel& k) {
          std::vector<lazygrad::Opt> opts = pick(k, lazygrad::kernel_axes(k));
          used.push_back(lazygrad::opts_str(
              lazygrad::fit_to_target(k, opts, lazygrad::device(k.device).renderer().target())));
          return opts;
        },
        ++key);
  }
  ~ForcedOpts() { lazygrad::set_opts_chooser(nullptr, 0); }
  ForcedOpts(const ForcedOpts&) = delete;
  ForcedOpts& operator=(const ForcedOpts&) = delete;
  std::vector<std::string> used;
};
