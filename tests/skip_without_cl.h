// SKIP_WITHOUT_CL(): a test that needs an OpenCL device skips, saying why, where none is found
// (lazygrad::devices() lists CL as unavailable with the reason: no library, no platform, no device).
#pragma once

#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <string>

// Why CL cannot run here, or "" when it can.
inline std::string cl_missing() {
  for (const lazygrad::DeviceInfo& d : lazygrad::devices())
    if (d.name == "CL") return d.available ? "" : d.detail;
  return "no CL backend";
}

// A macro, since GTEST_SKIP must return from the test body itself.
#define SKIP_WITHOUT_CL()                                                                          \
  do {                                                                                             \
    if (std::string why = cl_missing(); !why.empty()) GTEST_SKIP() << "no OpenCL device: " << why; \
  } while (0)
