// Linked into every test program: with DEVICE naming a device this machine does not have (the `cl`
// suites where no OpenCL is installed), every test skips, saying why, instead of failing; a
// device that exists is opened before the first test, so its set-up is not billed to one case.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "lazygrad/error.h"
#include "runtime/device.h"

namespace {

class DeviceEnvironment : public testing::Environment {
 public:
  void SetUp() override {
    const char* name = std::getenv("DEVICE");
    if (!name || !*name) return;
    try {
      lazygrad::device(name);
    } catch (const lazygrad::Error& e) {
      GTEST_SKIP() << "DEVICE=" << name << " is not here: " << e.what();
    }
  }
};

[[maybe_unused]] testing::Environment* const kDeviceEnvironment =
    testing::AddGlobalTestEnvironment(new DeviceEnvironment);

}  // namespace
