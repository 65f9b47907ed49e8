// What every `lazygrad` subcommand shares: its signature (Command, Args), how it reports bad input
// (UsageError), and the option parser. apps/lazygrad.cpp holds the table of commands and the
// dispatcher; a command may live in a file of its own (apps/train.cpp) and is declared at the end.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lazygrad::cli {

using Args = std::vector<std::string>;  // the arguments after the command's name

struct Command {
  std::string_view name;
  std::string_view synopsis;  // what follows the name in the usage line, e.g. "[--steps N] FILE"
  std::string_view summary;   // one line, for the command list
  std::string_view details;   // more text for `lazygrad <name> --help`; may be empty
  int (*run)(const Args& args);
};

// Bad command-line input: main prints the message and the relevant usage to stderr and exits 2.
struct UsageError {
  std::string message;
  const Command* command = nullptr;  // whose usage to print; nullptr for the top-level one
};

// Splits args into options and positionals. `valued` options take a value (`--steps 100` or
// `--steps=100`), `flags` take none; anything else starting with '-' is a UsageError. "--" ends
// the options.
struct Options {
  std::map<std::string, std::string, std::less<>> values;  // "--steps" -> "100", a flag -> ""
  std::vector<std::string> positional;

  bool has(std::string_view name) const { return values.find(name) != values.end(); }
  std::optional<std::string> get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
};

inline Options parse_options(const Args& args, std::initializer_list<std::string_view> valued,
                             std::initializer_list<std::string_view> flags = {}) {
  auto contains = [](std::initializer_list<std::string_view> list, std::string_view s) {
    for (std::string_view x : list)
      if (x == s) return true;
    return false;
  };
  Options opts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      opts.positional.insert(opts.positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                             args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      opts.positional.push_back(arg);
      continue;
    }
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    if (contains(flags, name) && eq == std::string::npos) {
      opts.values[name] = "";
    } else if (contains(valued, name)) {
      if (eq != std::string::npos) {
        opts.values[name] = arg.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        opts.values[name] = args[++i];
      } else {
        throw UsageError{"option " + name + " needs a value"};
      }
    } else {
      throw UsageError{"unknown option '" + arg + "'"};
    }
  }
  return opts;
}

// For commands that take no positional arguments.
inline void no_positionals(const Options& opts) {
  if (!opts.positional.empty()) throw UsageError{"unexpected argument '" + opts.positional[0] + "'"};
}

// ---- commands defined in files of their own ----------------------------------------------------

int cmd_train(const Args& args);         // apps/train.cpp
int cmd_train_charlm(const Args& args);  // apps/train_charlm.cpp; `train` passes args from "charlm" on
int cmd_generate(const Args& args);      // apps/generate.cpp
int cmd_generate_image(const Args& args);  // apps/generate_image.cpp
int cmd_milestone(const Args& args);     // apps/milestone.cpp
int cmd_bench(const Args& args);         // apps/bench.cpp
int cmd_viz(const Args& args);           // apps/viz.cpp
int cmd_export(const Args& args);        // apps/export.cpp

}  // namespace lazygrad::cli
