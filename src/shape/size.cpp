#include "shape/size.h"

#include <string>
#include <vector>

#include "lazygrad/error.h"

namespace lazygrad {

namespace {
[[noreturn]] void fail(std::string_view op, const std::vector<int64_t>& shape, const std::string& what) {
  throw SizeError(std::string(op) + ": shape " + shape_str(shape) + " " + what);
}

// The product of the sizes other than 0, checked: a zero-size [0, 2^40, 2^40] is refused too, as
// numpy refuses it, since its strides would pass int64.
int64_t nonzero_product(const std::vector<int64_t>& shape, std::string_view op) {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s < 0) fail(op, shape, "has a negative size");
    if (s != 0 && __builtin_mul_overflow(n, s, &n)) fail(op, shape, "has more elements than fit in 64 bits");
  }
  return n;
}

bool has_zero(const std::vector<int64_t>& shape) {
  for (int64_t s : shape)
    if (s == 0) return true;
  return false;
}
}  // namespace

int64_t checked_numel(const std::vector<int64_t>& shape, std::string_view op) {
  int64_t n = nonzero_product(shape, op);
  return has_zero(shape) ? 0 : n;
}

int64_t checked_nbytes(const std::vector<int64_t>& shape, DType dtype, std::string_view op) {
  int64_t bytes;
  if (__builtin_mul_overflow(nonzero_product(shape, op), static_cast<int64_t>(itemsize(dtype)), &bytes))
    fail(op, shape,
         "of " + std::string(dtype_name(dtype)) + " has more bytes than fit in 64 bits (" +
             std::to_string(itemsize(dtype)) + " per element)");
  return has_zero(shape) ? 0 : bytes;
}

int64_t checked_size_sum(int64_t a, int64_t b, std::string_view op) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    throw SizeError(std::string(op) + ": size " + std::to_string(a) + " + " + std::to_string(b) +
                    " does not fit in 64 bits");
  return sum;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t p;
  return __builtin_mul_overflow(a, b, &p) ? INT64_MAX : p;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t s;
  return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

}  // namespace lazygrad
