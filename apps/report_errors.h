// The CLI's last line: whatever a command throws becomes one `error: ...` line on stderr and exit
// status 1, never an abort with a core dump. lazygrad::Error says what was wrong with the input;
// std::bad_alloc means memory ran out (a model or a buffer larger than this machine can hold);
// any other std::exception (a filesystem error, a thread that could not start) is reported with
// its what(). A computation stopped by Ctrl-C exits with 130 (128 + SIGINT), as shells expect of a
// program SIGINT ended. Header-only, so the tests can call it.
#pragma once

#include <lazygrad/error.h>

#include <exception>
#include <new>
#include <ostream>

namespace lazygrad::cli {

// body()'s exit status, or 1 (130 for Ctrl-C) after the error line on `err`.
template <class Body>
int exit_status_reporting_errors(std::ostream& err, Body&& body) {
  try {
    return body();
  } catch (const InterruptedError& e) {
    err << e.what() << "\n";
    return 130;
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    err << "error: out of memory: an allocation failed (the model or its buffers need more memory than "
           "this machine has)\n";
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
  }
  return 1;
}

}  // namespace lazygrad::cli
