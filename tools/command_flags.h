// A subcommand's options, parsed with Abseil flags. Abseil's flags are process-global: each
// subcommand defines its own in its file (shared_flags.h holds those several take), and accepts
// only the flags of its file and the shared ones it names, refusing any other by name.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tools/commands.h"

namespace monotile::tools {

// What a (sub)command accepts: the flags its own file defines, and the shared ones it names.
struct CommandFlags {
  // "monotile decode": the start of every message.
  std::string_view command;
  // __FILE__ of the file defining its own flags.
  std::string_view file;
  // When its file's flags serve several subcommands: those this one takes (nullopt: all of them).
  std::optional<std::vector<std::string_view>> own = std::nullopt;
  // shared_flags.h's flags it takes too.
  std::vector<std::string_view> shared = {};
  // What --help prints.
  std::string_view usage = {};
};

// The arguments that are not options, and the flags the command line set.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::set<std::string> given;  // flag names as Abseil spells them ("max_rows")
  // When set, the command is done and returns this: 0 after --help (the usage on stdout), 2 after
  // a misuse (one line on stderr: what is wrong and a hint).
  std::optional<int> exit_status;
};

// Parses `args` into the command's flags: `--name=value` and `--name value`, booleans as `--name`,
// `--noname` or `--no-name`; dashes in names stand for Abseil's underscores; `--` ends the options;
// a list flag (std::vector<std::string>) given again adds to its list.
// A value Abseil cannot parse is refused as "--name value: expected <its type>"; range checks are
// the command's.
ParsedArgs parse_command_flags(const CommandFlags& flags, Args args);

// `--help`/`-h` alone: prints `usage` and returns 0; anything else: nullopt. For commands without
// options.
std::optional<int> help_only(Args args, std::string_view usage);

}  // namespace monotile::tools
