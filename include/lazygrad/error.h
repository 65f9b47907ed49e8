// lazygrad::Error: the one exception type the library throws for bad input.
// Messages name the op and the shapes (or the file offset) so the caller can act.
//
// Each Error has a kind, the category of the mistake, chosen as PyTorch chooses the Python class it
// raises for the same mistake: a dimension out of range is an IndexError, a bad argument value a
// ValueError, an argument of the wrong type a TypeError, shapes that do not match (and most else)
// a RuntimeError. The Python module raises a class that is both lazygrad.LazygradError and that
// builtin, so `except IndexError:` and `except LazygradError:` both catch it. In C++ catch
// lazygrad::Error (all of them) or the subclass below (one kind).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace lazygrad {

enum class ErrorKind {
  Runtime,         // RuntimeError: shapes that do not match, a dtype an op does not take, a file refused
  Index,           // IndexError: a dimension or an index out of range
  Value,           // ValueError: an argument whose value is wrong (a mode, a negative size)
  Type,            // TypeError: an argument of the wrong type
  NotImplemented,  // NotImplementedError: a valid request lazygrad does not do (yet)
  OutOfMemory,     // MemoryError
  Interrupted,     // KeyboardInterrupt
};

// The Python builtin the kind maps to: "RuntimeError", "IndexError", ...
const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorKind kind = ErrorKind::Runtime)
      : std::runtime_error(what), kind_(kind) {}
  explicit Error(const char* what, ErrorKind kind = ErrorKind::Runtime) : Error(std::string(what), kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// A dimension out of range (PyTorch: "Dimension out of range"), an index past a size.
class IndexError : public Error {
 public:
  explicit IndexError(const std::string& what) : Error(what, ErrorKind::Index) {}
};

// An argument with a wrong value: a mode that does not exist, a negative count, an empty list.
class ValueError : public Error {
 public:
  explicit ValueError(const std::string& what) : Error(what, ErrorKind::Value) {}
};

// An argument of the wrong type: a float where an integer tensor is needed, a tensor for a scalar.
class TypeError : public Error {
 public:
  explicit TypeError(const std::string& what) : Error(what, ErrorKind::Type) {}
};

// A valid request that lazygrad does not implement; the message says what to use instead.
class NotImplementedError : public Error {
 public:
  explicit NotImplementedError(const std::string& what) : Error(what, ErrorKind::NotImplemented) {}
};

// A shape that cannot be: a negative size, or more elements (or bytes) than fit in 64 bits.
// Python: lazygrad.SizeError, a LazygradError and a ValueError (numpy's "array is too big").
class SizeError : public Error {
 public:
  explicit SizeError(const std::string& what) : Error(what, ErrorKind::Value) {}
};

// Memory the machine would not give; the message names the bytes and what needed them.
// Python: lazygrad.OutOfMemoryError, a LazygradError and a MemoryError.
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& what) : Error(what, ErrorKind::OutOfMemory) {}
};

// A computation stopped by Ctrl-C (SIGINT) between kernels or inside a long one; what it was
// computing stays unrealized, and may be realized again. Python: KeyboardInterrupt.
class InterruptedError : public Error {
 public:
  explicit InterruptedError(const std::string& what) : Error(what, ErrorKind::Interrupted) {}
};

// "{2, 3}" for error messages.
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace lazygrad
