// expect_error: the call throws lazygrad::Error and its message contains every one of `words`
// (the op's name first, then details such as a shape). Shared by the tests of each op area.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "lazygrad/error.h"

inline void expect_error(const std::function<void()>& call, std::initializer_list<std::string> words) {
  std::string msg = "(no lazygrad::Error thrown)";
  try {
    call();
  } catch (const lazygrad::Error& e) {
    msg = e.what();
  }
  for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' is not in the message: " << msg;
}

inline void expect_error(const std::function<void()>& call, const std::string& op, const std::string& detail = "") {
  if (detail.empty()) expect_error(call, {op});
  else expect_error(call, {op, detail});
}
