// SKIP_WITHOUT_WEBGPU(): a test that needs the WEBGPU device skips, saying why, where it cannot open
// (no Chromium, no WebGPU adapter: docs/webgpu.md). Opening it starts the process's browser, once.
#pragma once

#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <string>

#include "runtime/device.h"

// Why WEBGPU cannot run here, or "" when it can.
inline std::string webgpu_missing() {
  try {
    lazygrad::device("WEBGPU");
    return "";
  } catch (const lazygrad::Error& e) {
    return e.what();
  }
}

// A macro, since GTEST_SKIP must return from the test body itself.
#define SKIP_WITHOUT_WEBGPU()                                                                   \
  do {                                                                                          \
    if (std::string why = webgpu_missing(); !why.empty()) GTEST_SKIP() << "no WebGPU: " << why; \
  } while (0)
