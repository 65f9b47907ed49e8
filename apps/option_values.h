// Parsing the values of command-line options, shared by the subcommands: a bad value is a
// UsageError (exit 2, with the command's usage) that names the option and quotes the value.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <system_error>

#include "command.h"

namespace lazygrad::cli {

inline int64_t parse_int(const std::string& option, const std::string& text, int64_t min) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min)
    throw UsageError{option + " takes a whole number >= " + std::to_string(min) + ", got '" + text + "'"};
  return value;
}

inline uint64_t parse_seed(const std::string& text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw UsageError{"--seed takes a whole number from 0 to 2^64 - 1, got '" + text + "'"};
  return value;
}

inline double parse_positive(const std::string& option, const std::string& text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value <= 0)
    throw UsageError{option + " takes a positive number, got '" + text + "'"};
  return value;
}

inline double parse_non_negative(const std::string& option, const std::string& text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0)
    throw UsageError{option + " takes a number >= 0, got '" + text + "'"};
  return value;
}

inline std::string parse_choice(const std::string& option, const std::string& text,
                                std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) {
    if (text == c) return text;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw UsageError{option + " takes one of " + list + ", got '" + text + "'"};
}

}  // namespace lazygrad::cli
