// lazygrad: the command-line tool.
//
//   lazygrad info             version, devices and settings
//   lazygrad <cmd> --help     help for one command
//
// To add a subcommand, write `int cmd_x(const Args&)` and add a row to kCommands. The dispatcher
// handles --help for every command; commands report bad arguments by throwing UsageError (exit 2),
// and the library's lazygrad::Error is reported as `error: ...` (exit 1).
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

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

// ---- option parsing shared by the commands -------------------------------------------------------

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

Options parse_options(const Args& args, std::initializer_list<std::string_view> valued,
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
void no_positionals(const Options& opts) {
  if (!opts.positional.empty()) throw UsageError{"unexpected argument '" + opts.positional[0] + "'"};
}

// ---- commands ---------------------------------------------------------------------------------------

int cmd_info(const Args& args);
int cmd_help(const Args& args);

const Command kCommands[] = {
    {"info", "", "print the version, devices and settings",
     "Settings come from the environment: DEBUG, THREADS, FTZ, CC, LAZYGRAD_CACHE.", cmd_info},
    {"help", "[COMMAND]", "show help for lazygrad or for one command", "", cmd_help},
};

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

void print_usage(std::ostream& os) {
  os << "usage: lazygrad <command> [args...]\n"
        "       lazygrad --help | --version\n\ncommands:\n";
  size_t width = 0;
  for (const Command& c : kCommands) width = std::max(width, c.name.size());
  for (const Command& c : kCommands)
    os << "  " << c.name << std::string(width - c.name.size() + 2, ' ') << c.summary << "\n";
  os << "\nRun `lazygrad <command> --help` for one command.\n";
}

void print_command_usage(std::ostream& os, const Command& c) {
  os << "usage: lazygrad " << c.name << (c.synopsis.empty() ? "" : " ") << c.synopsis << "\n\n"
     << c.summary << "\n";
  if (!c.details.empty()) os << "\n" << c.details << "\n";
}

int cmd_help(const Args& args) {
  Options opts = parse_options(args, {});
  if (opts.positional.size() > 1) throw UsageError{"unexpected argument '" + opts.positional[1] + "'"};
  if (opts.positional.empty()) {
    print_usage(std::cout);
    return 0;
  }
  const Command* c = find_command(opts.positional[0]);
  if (c == nullptr) throw UsageError{"no command '" + opts.positional[0] + "'"};
  print_command_usage(std::cout, *c);
  return 0;
}

int cmd_info(const Args& args) {
  no_positionals(parse_options(args, {}));
  // Query everything before printing, so a failure does not leave half a report on stdout.
  const lazygrad::Settings& s = lazygrad::settings();
  const std::vector<lazygrad::DeviceInfo> devices = lazygrad::devices();
  auto or_none = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };

  std::cout << "lazygrad " << lazygrad::version() << "\n\ndevices:\n";
  for (const lazygrad::DeviceInfo& d : devices)
    std::cout << "  " << d.name << "  " << (d.available ? "available" : "unavailable") << "  "
              << or_none(d.detail) << "\n";

  std::cout << "\nsettings:\n"
            << "  debug            " << s.debug << "  (DEBUG)\n"
            << "  threads          " << s.threads << "  (THREADS)\n"
            << "  flush_denormals  " << (s.flush_denormals ? "true" : "false") << "  (FTZ)\n"
            << "  cc               " << or_none(s.cc) << "  (CC)\n"
            << "  cflags           " << or_none(s.cflags) << "\n"
            << "  cache_dir        " << or_none(s.cache_dir) << "  (LAZYGRAD_CACHE)\n";
  return 0;
}

// ---- dispatch ---------------------------------------------------------------------------------------

bool is_help(std::string_view arg) { return arg == "--help" || arg == "-h"; }

int dispatch(const Args& argv) {
  if (argv.empty()) throw UsageError{"no command given"};
  const std::string& first = argv[0];
  if (is_help(first)) {
    print_usage(std::cout);
    return 0;
  }
  if (first == "--version") {
    std::cout << "lazygrad " << lazygrad::version() << "\n";
    return 0;
  }
  if (first.starts_with("-")) throw UsageError{"unknown option '" + first + "'"};
  const Command* command = find_command(first);
  if (command == nullptr) throw UsageError{"unknown command '" + first + "'"};

  Args rest(argv.begin() + 1, argv.end());
  for (const std::string& arg : rest) {
    if (arg == "--") break;
    if (is_help(arg)) {
      print_command_usage(std::cout, *command);
      return 0;
    }
  }
  try {
    return command->run(rest);
  } catch (UsageError& e) {
    if (e.command == nullptr) e.command = command;
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(Args(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "lazygrad: " << e.message << "\n\n";
    if (e.command != nullptr) {
      print_command_usage(std::cerr, *e.command);
    } else {
      print_usage(std::cerr);
    }
    return 2;
  } catch (const lazygrad::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
