// The `monotile` subcommands. Each takes its arguments after the subcommand's name and returns
// the process exit status.
#pragma once

#include <span>
#include <string_view>

namespace monotile::tools {

using Args = std::span<const std::string_view>;

int devices_command(Args args);
int cache_command(Args args);
int warmup_command(Args args);
int compile_command(Args args);
int demo_command(Args args);
int export_command(Args args);
int first_call_command(Args args);
int model_command(Args args);
int layer_command(Args args);
int decode_command(Args args);

}  // namespace monotile::tools
