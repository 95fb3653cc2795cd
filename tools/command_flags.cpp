// Parses a subcommand's arguments with Abseil's flag registry; see command_flags.h.
#include "tools/command_flags.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "support/strings.h"

namespace monotile::tools {
namespace {

std::string file_name(std::string_view path) {
  return std::filesystem::path(path).filename().string();
}

bool accepts(const CommandFlags& flags, const absl::CommandLineFlag& flag) {
  const std::string name(flag.Name());
  if (std::find(flags.shared.begin(), flags.shared.end(), name) != flags.shared.end()) return true;
  if (file_name(flag.Filename()) != file_name(flags.file)) return false;
  return !flags.own || std::find(flags.own->begin(), flags.own->end(), name) != flags.own->end();
}

// What a value of the flag's type looks like, for a value Abseil could not parse.
std::string expected_value(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<int>() || flag.IsOfType<int64_t>() || flag.IsOfType<std::optional<int>>() ||
      flag.IsOfType<std::optional<int64_t>>()) {
    return "an integer";
  }
  if (flag.IsOfType<uint64_t>() || flag.IsOfType<std::optional<uint64_t>>())
    return "a non-negative integer";
  if (flag.IsOfType<bool>()) return "true or false";
  if (flag.IsOfType<double>()) return "a number";
  return "a valid value";
}

std::string dashed(std::string_view name) {
  return absl::StrReplaceAll(to_absl(name), {{"_", "-"}});
}

}  // namespace

std::optional<int> help_only(Args args, std::string_view usage) {
  if (args.size() != 1 || (args[0] != "--help" && args[0] != "-h")) return std::nullopt;
  std::fwrite(usage.data(), 1, usage.size(), stdout);
  return 0;
}

ParsedArgs parse_command_flags(const CommandFlags& flags, Args args) {
  ParsedArgs parsed;
  auto misuse = [&](const std::string& message) {
    std::fflush(stdout);
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(flags.command.size()), flags.command.data(),
                 message.c_str());
    parsed.exit_status = 2;
    return parsed;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::fwrite(flags.usage.data(), 1, flags.usage.size(), stdout);
      parsed.exit_status = 0;
      return parsed;
    }
    if (arg == "--") {
      for (++i; i < args.size(); ++i) parsed.positional.emplace_back(args[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.emplace_back(arg);
      continue;
    }
    std::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string_view> value;
    if (size_t equals = body.find('='); equals != std::string_view::npos) {
      value = body.substr(equals + 1);
      body = body.substr(0, equals);
    }
    const std::string name = absl::StrReplaceAll(to_absl(body), {{"-", "_"}});
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if ((flag == nullptr || !accepts(flags, *flag)) && name.starts_with("no")) {
      // --nocheck (Abseil) or --no-check (git).
      const std::string positive = name.substr(name.starts_with("no_") ? 3 : 2);
      absl::CommandLineFlag* negative = absl::FindCommandLineFlag(positive);
      if (negative != nullptr && negative->IsOfType<bool>() && accepts(flags, *negative)) {
        flag = negative;
        negated = true;
      }
    }
    if (flag == nullptr || !accepts(flags, *flag)) {
      return misuse(absl::StrCat("unknown option --", to_absl(body),
                                 "; hint: ", to_absl(flags.command), " --help lists its options"));
    }
    const std::string shown = absl::StrCat("--", dashed(to_std(flag->Name())));
    std::string text;
    if (flag->IsOfType<bool>()) {
      if (negated && value)
        return misuse(
            absl::StrCat("--", to_absl(body), " takes no value, got \"", to_absl(*value), "\""));
      text = negated ? "false" : value ? std::string(*value) : "true";
    } else if (value) {
      text = std::string(*value);
    } else if (i + 1 < args.size()) {
      text = std::string(args[++i]);
    } else {
      return misuse(absl::StrCat(shown, " needs a value; hint: ", to_absl(flags.command),
                                 " --help lists its options"));
    }
    if (flag->IsOfType<std::vector<std::string>>() &&
        parsed.given.contains(std::string(flag->Name()))) {
      text = absl::StrCat(flag->CurrentValue(), ",", text);  // a list given again grows
    }
    std::string error;
    if (!flag->ParseFrom(text, &error)) {
      return misuse(
          absl::StrCat(shown, value ? "=" : " ", text, ": expected ", expected_value(*flag)));
    }
    parsed.given.insert(std::string(flag->Name()));
  }
  return parsed;
}

}  // namespace monotile::tools
