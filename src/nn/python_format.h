// Values spelled as Python prints them, for modules' repr (extra_repr) to read like PyTorch's:
// 1e-05, 0.1, 1.0, True, (3, 3), 'none'.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

namespace lazygrad::nn {

inline std::string py_bool(bool b) { return b ? "True" : "False"; }

// Python's repr of a float: the shortest digits that read back, positional for magnitudes in
// [1e-4, 1e16) and with an exponent otherwise, ".0" on whole numbers.
inline std::string py_float(double v) {
  if (v != v) return "nan";
  double mag = v < 0 ? -v : v;
  bool positional = mag == 0 || (mag >= 1e-4 && mag < 1e16);
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v,
                                 positional ? std::chars_format::fixed : std::chars_format::scientific);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s == "inf" || s == "-inf") return s;
  if (positional && s.find('.') == std::string::npos) s += ".0";
  return s;
}

// A tuple: (3,) for one value, (3, 3) for two.
inline std::string py_tuple(const std::vector<int64_t>& values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); i++) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}

// An int-or-tuple argument as the user gave it: 2 for one value, (2, 3) for several.
inline std::string py_int_or_tuple(const std::vector<int64_t>& values) {
  return values.size() == 1 ? std::to_string(values[0]) : py_tuple(values);
}

inline std::string py_str(const std::string& s) { return "'" + s + "'"; }

}  // namespace lazygrad::nn
