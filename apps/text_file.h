// A whole file as a string, for the CLI's commands that read small text files (a tokenizer's
// vocabulary, a config): an Error naming the file when it cannot be opened.
#pragma once

#include <lazygrad/error.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lazygrad::cli {

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace lazygrad::cli
