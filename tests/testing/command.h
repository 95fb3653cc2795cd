// Runs a shell command for the tests of the command-line tools and collects what it printed.
#pragma once

#include <string>

namespace monotile::testing {

struct CommandResult {
  int status = -1;     // the exit status; -1 when the command did not exit (a signal) or did not start
  std::string output;  // everything it wrote to stdout (add " 2>&1" to the command for stderr too)
};

CommandResult run_command(const std::string& command);

}  // namespace monotile::testing
