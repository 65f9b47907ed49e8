// BEAM search (tinygrad's BEAM=N): the optimizations of a kernel chosen by timing candidates on
// the device, `width` kept per round. The choice is cached on disk per kernel, device settings and
// width, so a second process (or run) pays nothing.
#pragma once

#include <vector>

#include "codegen/optimize.h"

namespace lazygrad {

std::vector<Opt> beam_opts(const Kernel& k, int width, const Target& target = cpu_target());

// Every one-step extension of opts that fits the kernel (what one BEAM round tries).
std::vector<std::vector<Opt>> extensions(const Kernel& k, const std::vector<Opt>& opts,
                                         const Target& target = cpu_target());

// Parses what opts_str writes ("V1:16 U0:4"); nullopt if it is not that.
std::optional<std::vector<Opt>> parse_opts(const std::string& text);

}  // namespace lazygrad
