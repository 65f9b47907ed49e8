// Creation: constants, ranges and random numbers, all lazy (computed inside the consuming kernel).
#include <cmath>
#include <numbers>
#include <sstream>

#include "ir/variable_state.h"
#include "shape/size.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// The element count of a random tensor of `shape`, checked for the uint64 draws behind it (two an
// element for float64), which are a tensor of their own in the graph.
int64_t random_numel(const Shape& shape, bool float64, const char* op) {
  Shape draws = shape;
  if (float64) draws.push_back(2);
  checked_nbytes(draws, kUInt64, op);
  return checked_numel(shape, op);
}

Tensor broadcast_const(UOpPtr c, const Shape& shape) {
  if (!shape.empty()) {
    c = make_uop(Ops::RESHAPE, c->dtype, {c}, std::vector<int64_t>(shape.size(), 1));
    c = make_uop(Ops::EXPAND, c->dtype, {c}, std::vector<int64_t>(shape));
  }
  return make_tensor(c);
}

Tensor iota(int64_t n, DType dtype) { return make_tensor(make_uop(Ops::IOTA, dtype, {}, n)); }
// A kernel argument holding one draw's counter or the key.
Tensor var(uint64_t value, VariableKind kind) {
  auto state = std::make_shared<VariableState>();
  state->bits = static_cast<int64_t>(value);
  state->dtype = kUInt64;
  state->kind = kind;
  return make_tensor(make_uop(Ops::VAR, kUInt64, {}, state));
}

// The counter-based generator: Widynski's "squares" (four rounds of 64-bit square and rotate),
// evaluated per element from (counter, key), so any THREADS value gives the same numbers.
void seed(RngState& r, uint64_t s) {
  uint64_t z = s + 0x9e3779b97f4a7c15ULL;  // splitmix64 spreads the seed over the key's bits
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  r.key = (z ^ (z >> 31)) | 1;
  r.counter = 0;
}
RngState& rng() { return rng_state(); }

// n uniformly random 32-bit values (as uint64), the next n counters of the generator.
Tensor random_bits(int64_t n) {
  RngState& r = rng();
  // Counter and key are kernel arguments: every draw of a shape runs the same compiled kernel.
  Tensor ctr = iota(n, kUInt64) + var(r.counter, VariableKind::RngCounter);
  r.counter += static_cast<uint64_t>(n);
  Tensor key = var(r.key, VariableKind::RngKey);
  auto rot = [](const Tensor& x) { return (x >> 32) | (x << 32); };
  Tensor x = ctr * key, y = x, z = y + key;
  x = rot(x * x + y);
  x = rot(x * x + z);
  x = rot(x * x + y);
  return (x * x + z) >> 32;
}

// Uniform [0, 1) in float64 with 53 random bits, from two draws per element.
Tensor uniform_f64(int64_t n) {
  Tensor bits = random_bits(2 * n).reshape({n, 2});
  Tensor hi = bits.slice(1, 0, 1).reshape({n}), lo = bits.slice(1, 1, 2).reshape({n});
  Tensor u53 = (hi << 21) | (lo >> 11);
  return u53.to(kFloat64) * (1.0 / 9007199254740992.0);
}

// Uniform [0, 1) in dtype.
Tensor uniform01(int64_t n, DType dtype) {
  if (dtype == kFloat64) return uniform_f64(n);
  Tensor u = (random_bits(n) >> 8).to(kFloat32) * (1.0f / 16777216.0f);
  return dtype == kFloat32 ? u : u.to(dtype);
}

std::string scalar_text(Scalar v) {
  std::ostringstream os;
  if (v.is_float())
    os << v.to_double();
  else if (v.above_int64())
    os << static_cast<uint64_t>(v.to_int());
  else
    os << v.to_int();
  return os.str();
}

}  // namespace

RngState& rng_state() {
  static RngState r = [] {
    RngState s;
    seed(s, 0);
    return s;
  }();
  return r;
}

Tensor Tensor::full(const Shape& shape, Scalar value, std::optional<DType> dtype, const std::string& device) {
  DType dt = dtype                                 ? *dtype
             : value.kind() == Scalar::Kind::Float ? kFloat32
             : value.kind() == Scalar::Kind::Int   ? kInt64
                                                   : kBool;
  checked_nbytes(shape, dt, "full");
  return placed_on(broadcast_const(scalar_tensor(value, dt).uop(), shape), device);
}
Tensor Tensor::zeros(const Shape& shape, DType dtype, const std::string& device) {
  checked_nbytes(shape, dtype, "zeros");
  return full(shape, 0, dtype, device);
}
Tensor Tensor::ones(const Shape& shape, DType dtype, const std::string& device) {
  checked_nbytes(shape, dtype, "ones");
  return full(shape, 1, dtype, device);
}
Tensor Tensor::zeros_like(const Tensor& t) { return full(t.shape(), 0, t.dtype(), t.device()); }
Tensor Tensor::ones_like(const Tensor& t) { return full(t.shape(), 1, t.dtype(), t.device()); }
Tensor Tensor::full_like(const Tensor& t, Scalar value) {
  return full(t.shape(), value, t.dtype(), t.device());
}

Tensor Tensor::arange(Scalar end, std::optional<DType> dtype, const std::string& device) {
  return arange(0, end, 1, dtype, device);
}

Tensor Tensor::arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype,
                      const std::string& device) {
  require(step.to_double() != 0, "arange: step must be nonzero");
  double span = end.to_double() - start.to_double();
  require(std::isfinite(span), "arange: start and end must be finite");
  require(span == 0 || (span > 0) == (step.to_double() > 0),
          "arange: upper bound and lower bound inconsistent with step sign");
  bool floaty = start.is_float() || end.is_float() || step.is_float();
  DType dt = dtype ? *dtype : floaty ? kFloat32 : kInt64;
  // Counted in double, as PyTorch does; a count past int64 would be undefined to convert.
  double count = std::ceil(span / step.to_double());
  if (!(count < 9223372036854775808.0))
    throw SizeError("arange: [" + scalar_text(start) + ", " + scalar_text(end) + ") in steps of " +
                    scalar_text(step) + " has more elements than fit in 64 bits");
  auto n = static_cast<int64_t>(count);
  checked_nbytes({n}, dt, "arange");
  checked_nbytes({n}, kFloat64, "arange");  // the values are computed in int64 or float64 first
  if (!floaty) return placed_on((iota(n, kInt64) * step.to_int() + start.to_int()).to(dt), device);
  // Like PyTorch: start + i * step computed in double, then rounded to the dtype.
  return placed_on((iota(n, kFloat64) * step.to_double() + start.to_double()).to(dt), device);
}

Tensor Tensor::linspace(double start, double end, int64_t steps, DType dtype, const std::string& device) {
  require(steps >= 0, "linspace: number of steps must be non-negative");
  checked_nbytes({steps}, kFloat64, "linspace");  // computed in float64
  if (is_int(dtype)) {
    // PyTorch converts the ends to the integer dtype first (toward zero), then steps between them
    // in float64 and truncates each value: linspace(0.5, 10.7, 4) as int64 is linspace(0, 10, 4).
    start = std::trunc(start), end = std::trunc(end);
  }
  if (steps <= 1) return full({steps}, start, dtype, device);
  double step = (end - start) / static_cast<double>(steps - 1);
  // Both halves are anchored at their end, as PyTorch does, so the last value is exactly `end`.
  Tensor i = iota(steps, kFloat64);
  Tensor lo = i * step + start, hi = (i - static_cast<double>(steps - 1)) * step + end;
  return placed_on(lazygrad::where(i.lt(static_cast<double>(steps / 2)), lo, hi).to(dtype), device);
}

Tensor Tensor::eye(int64_t n, std::optional<int64_t> m, DType dtype, const std::string& device) {
  int64_t cols = m.value_or(n);
  require(n >= 0 && cols >= 0,
          "eye: sizes must be non-negative, got " + std::to_string(n) + " and " + std::to_string(cols));
  checked_nbytes({n, cols}, dtype, "eye");
  Tensor r = iota(n, kInt64).reshape({n, 1}), c = iota(cols, kInt64).reshape({1, cols});
  return placed_on(r.eq(c).to(dtype), device);
}

void Tensor::manual_seed(uint64_t s) { seed(rng(), s); }

Tensor Tensor::rand(const Shape& shape, DType dtype, const std::string& device) {
  require(is_float(dtype), "rand: dtype must be floating point");
  return placed_on(uniform01(random_numel(shape, dtype == kFloat64, "rand"), dtype).reshape(shape), device);
}

Tensor Tensor::uniform(const Shape& shape, double low, double high, DType dtype, const std::string& device) {
  require(is_float(dtype), "uniform: dtype must be floating point");
  Tensor u =
      uniform01(random_numel(shape, dtype == kFloat64, "uniform"), dtype == kFloat64 ? kFloat64 : kFloat32);
  return placed_on((u * (high - low) + low).to(dtype).reshape(shape), device);
}

Tensor Tensor::randn(const Shape& shape, DType dtype, const std::string& device) {
  require(is_float(dtype), "randn: dtype must be floating point");
  int64_t n = random_numel(shape, dtype == kFloat64, "randn");
  DType dt = dtype == kFloat64 ? kFloat64 : kFloat32;
  // Box-Muller: 1 - u1 is in (0, 1], so the log is finite.
  Tensor u1 = uniform01(n, dt), u2 = uniform01(n, dt);
  Tensor r = ((1.0 - u1).log() * -2.0).sqrt();
  return placed_on((r * (u2 * (2 * std::numbers::pi)).cos()).to(dtype).reshape(shape), device);
}

Tensor Tensor::randint(int64_t low, int64_t high, const Shape& shape, DType dtype,
                       const std::string& device) {
  int64_t n = random_numel(shape, true, "randint");
  require(high > low, "randint: high (" + std::to_string(high) + ") must be greater than low (" +
                          std::to_string(low) + ")");
  Tensor u = uniform_f64(n);
  Tensor v = (u * static_cast<double>(high - low)).floor().to(kInt64) + low;
  return placed_on(v.to(dtype).reshape(shape), device);
}

}  // namespace lazygrad
