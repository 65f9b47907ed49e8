// The differential check: a program run by lazygrad in several modes (the default optimizations,
// NOOPT, randomly sampled opt lists from the space BEAM searches) and compared element by element
// with the reference; a failing program is cut down to the smallest one that still fails.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "program.h"
#include "reference.h"

namespace lazygrad::fuzz {

struct Mode {
  std::string name;        // "default", "NOOPT", "opts:<seed>"; "CL default", ... on another device
  uint64_t opts_seed = 0;  // for sampled opts: the walk's seed (0: not a sampled mode)
  bool noopt = false;
  std::string device = "CPU";  // where the program's tensors are made and its kernels run
};

// The modes a program runs in on `device`: the default, NOOPT and `samples` sampled opt lists
// (the opts a device's target cannot take, vector lanes on CL, are left out by the engine).
std::vector<Mode> modes_for(uint64_t seed, int samples, const std::string& device = "CPU");

// What lazygrad computed for a program's outputs.
struct Outcome {
  std::string error;         // an exception's message (empty: none)
  bool unsupported = false;  // the exception came while building the graph: an op lazygrad refuses
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<std::vector<double>> values;  // floats and ints below 2^53 exactly; uint64 as bits
  std::vector<std::vector<int64_t>> ints;   // integer and bool outputs, exactly
};

// fresh: every kernel compiled again, not taken from this process's cache (for the report's opts).
Outcome run_lazygrad(const Program& p, const Mode& m, bool fresh = false);

struct Mismatch {
  size_t output = 0;     // index into Program::outputs
  int64_t element = -1;  // -1: the shape, dtype or an exception
  std::string what;
};

// The first difference between lazygrad's outcome and the reference's values, if any.
std::optional<Mismatch> compare(const Program& p, const std::vector<RefTensor>& ref, const Outcome& got);

// Whether p still fails in mode m (and how).
std::optional<Mismatch> check(const Program& p, const Mode& m);

// The smallest program found (by cutting steps into inputs and bypassing steps) that still fails in
// mode m; at most `attempts` runs.
Program minimize(Program p, const Mode& m, int attempts = 150);

// A failure as text: what differed, and the program as C++ (a test body that reproduces it).
std::string report(const Program& p, const Mode& m, const Mismatch& mm);

}  // namespace lazygrad::fuzz
