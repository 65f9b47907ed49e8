// lazygrad::Error: the one exception type the library throws for bad input.
// Messages name the op and the shapes (or the file offset) so the caller can act.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace lazygrad {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A shape that cannot be: a negative size, or more elements (or bytes) than fit in 64 bits.
// Python: lazygrad.SizeError, a LazygradError and a ValueError (numpy's "array is too big").
class SizeError : public Error {
 public:
  using Error::Error;
};

// Memory the machine would not give; the message names the bytes and what needed them.
// Python: lazygrad.OutOfMemoryError, a LazygradError and a MemoryError.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// A computation stopped by Ctrl-C (SIGINT) between kernels or inside a long one; what it was
// computing stays unrealized, and may be realized again. Python: KeyboardInterrupt.
class InterruptedError : public Error {
 public:
  using Error::Error;
};

// "{2, 3}" for error messages.
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace lazygrad
