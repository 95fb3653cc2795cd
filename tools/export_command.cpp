// `monotile export`: lowers and compiles every benchmark kernel of the registry (kernels/registry.h:
// those with a launch grid, from kernels/bench) for one target and
// writes `<name>.cubin` (NVIDIA; `<name>.hsaco` for AMD) + `<name>.json` per kernel into a folder,
// in the format the side-by-side harness loads (docs/bench.md, "Export format"), printing each
// kernel's resource report. Exits 1 when any kernel failed, 2 on misuse.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/registry.h"
#include "support/files.h"
#include "tools/build_report.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/shared_flags.h"

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile export --out DIR [--target sm_90a] [--only NAME,...] [--cache-dir DIR] [--jobs N]\n"
    "  --out        the folder for <name>.cubin (.hsaco on AMD) and <name>.json (created if missing)\n"
    "  --target     the GPU's exact target (default sm_90a)\n"
    "  --only       export only these kernels (default: every benchmark kernel)\n"
    "  --cache-dir  the kernel cache folder (default MONOTILE_CACHE_DIR or ~/.cache/monotile)\n"
    "  --jobs       parallel compiles (default: one per core)\n";

int misuse(const std::string& message) {
  std::fprintf(stderr, "monotile export: %s\n%s", message.c_str(), kUsage);
  return 2;
}

// The harness's spelling of a parameter type: "ptr<bf16>", "f32", "i64"... mxfp4 data travels as
// bytes (u8); i1 has no spelling there, so a kernel taking one cannot be exported.
absl::StatusOr<std::string> param_type(const dsl::lower::KernelParam& param) {
  dsl::ScalarType scalar = param.type.scalar;
  if (scalar == dsl::ScalarType::kI1) {
    return absl::InvalidArgumentError("parameter \"" + param.name +
                                      "\" is i1, which the export format cannot spell; hint: pass it as i32");
  }
  if (scalar == dsl::ScalarType::kMxfp4) scalar = dsl::ScalarType::kU8;
  std::string name(dsl::scalar_type_name(scalar));
  return param.type.pointer ? "ptr<" + name + ">" : name;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

absl::StatusOr<std::string> kernel_json(const kernels::RegistryEntry& kernel, const jit::ProgramBuild& made) {
  const jit::LaunchInfo& launch = made.build.launch;
  std::vector<std::string> params;
  for (const dsl::lower::KernelParam& param : made.params) {
    absl::StatusOr<std::string> type = param_type(param);
    if (!type.ok()) return type.status();
    params.push_back("    {\"name\": " + json_string(param.name) + ", \"type\": " + json_string(*type) + "}");
  }
  auto triple = [](int x, int y, int z) {
    return absl::StrCat("[", x, ", ", y, ", ", z, "]");
  };
  std::vector<std::string> workspaces;
  for (const kernels::bench::BenchWorkspace& workspace : kernel.workspaces) {
    const char* zero = workspace.zero == kernels::bench::WorkspaceZero::kOnce         ? "once"
                       : workspace.zero == kernels::bench::WorkspaceZero::kEachLaunch ? "each_launch"
                                                                                      : "never";
    workspaces.push_back("{\"name\": " + json_string(workspace.name) + ", \"bytes\": " +
                         std::to_string(workspace.bytes) + ", \"zero\": \"" + zero + "\"}");
  }
  return "{\n  \"kernel\": " + json_string(made.build.kernel_name) + ",\n  \"block\": " +
         triple(launch.block_x, launch.block_y, launch.block_z) +
         ",\n  \"shared_bytes\": " + std::to_string(launch.dynamic_shared_memory) +
         ",\n  \"grid\": " + triple(kernel.grid[0], kernel.grid[1], kernel.grid[2]) + ",\n  \"params\": [\n" +
         absl::StrJoin(params, ",\n") + "\n  ],\n" +
         (workspaces.empty() ? "" : "  \"workspace\": [" + absl::StrJoin(workspaces, ", ") + "],\n") +
         "  \"then\": null\n}\n";
}

// `text` broken at spaces into lines of at most `width` columns, each indented.
std::string wrapped(const std::string& text, size_t width, const std::string& indent) {
  std::string out, line = indent;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (line != indent && line.size() + 1 + word.size() > width) {
      absl::StrAppend(&out, line, "\n");
      line = indent;
    }
    absl::StrAppend(&line, line == indent ? "" : " ", word);
  }
  return out + line;
}

// Writes one compiled kernel's CUBIN and JSON; returns its one-line summary.
absl::StatusOr<std::string> write_kernel(const std::string& name, const std::string& json,
                                         const jit::CompiledBuild& compiled, const std::filesystem::path& out) {
  const char* extension = absl::StartsWith(compiled.target, "sm_") ? ".cubin" : ".hsaco";
  if (absl::Status status = write_file(out / (name + extension), compiled.code_object); !status.ok()) return status;
  if (absl::Status status = write_file(out / (name + ".json"), json); !status.ok()) return status;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %s, %s, %.3f s", name.c_str(), compiled.report.summary().c_str(),
                compiled.hit ? "cache hit" : "compiled", compiled.seconds);
  return std::string(line);
}

}  // namespace

int export_command(Args args) {
  const ParsedArgs parsed = parse_command_flags({.command = "monotile export",
                                                 .file = __FILE__,
                                                 .shared = {"out", "target", "only", "cache_dir", "jobs"},
                                                 .usage = kUsage},
                                                args);
  if (parsed.exit_status) return *parsed.exit_status;
  if (!parsed.positional.empty()) return misuse("takes options only, got \"" + parsed.positional[0] + "\"");
  const std::string target_text = absl::GetFlag(FLAGS_target).value_or("sm_90a");
  const std::string out_dir = absl::GetFlag(FLAGS_out), only_text = absl::GetFlag(FLAGS_only);
  const std::string cache_dir = absl::GetFlag(FLAGS_cache_dir);
  const int jobs = absl::GetFlag(FLAGS_jobs).value_or(0);
  if (absl::GetFlag(FLAGS_jobs) && jobs < 1) {
    return misuse("--jobs takes a positive integer, got \"" + std::to_string(jobs) + "\"");
  }
  if (out_dir.empty()) return misuse("--out is required");
  absl::StatusOr<dsl::Target> target = dsl::Target::parse(target_text);
  if (!target.ok()) return misuse(std::string(target.status().message()));

  std::vector<const kernels::RegistryEntry*> all;
  for (const kernels::RegistryEntry& entry : kernels::registry()) {
    if (entry.family == kernels::KernelFamily::kBench) all.push_back(&entry);
  }
  std::vector<const kernels::RegistryEntry*> chosen;
  if (only_text.empty()) {
    chosen = all;
  } else {
    std::set<std::string> wanted;
    for (absl::string_view name : absl::StrSplit(only_text, ',', absl::SkipEmpty())) wanted.insert(std::string(name.data(), name.size()));
    std::vector<std::string> known;
    size_t variants = 0;
    for (const kernels::RegistryEntry* kernel : all) {
      if (kernel->name.find("__") == std::string::npos) known.push_back(kernel->name);
      else ++variants;
      if (wanted.erase(kernel->name) > 0) chosen.push_back(kernel);
    }
    if (!wanted.empty()) {
      return misuse("--only names no benchmark kernel \"" + *wanted.begin() + "\"; the kernels are:\n" +
                    wrapped(absl::StrJoin(known, ", "), 100, "  ") + "\n  and " + std::to_string(variants) +
                    " labelled variants, named <kernel>__<label>");
    }
  }

  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    std::fprintf(stderr, "monotile export: cannot create \"%s\": %s\n", out_dir.c_str(), error.message().c_str());
    return 1;
  }
  jit::JitConfig config = jit::JitConfig::from_environment();
  if (!cache_dir.empty()) config.cache.writable_dir = cache_dir;
  jit::Jit jit(config);
  // Lower every kernel first (milliseconds each), then compile them all at once: the compiles are
  // what takes time, and each runs in its own worker process.
  int failed = 0;
  auto report_failure = [&](const std::string& name, const absl::Status& status) {
    std::fprintf(stderr, "monotile export: kernel \"%s\" for %s: %s\n", name.c_str(), target_text.c_str(),
                 std::string(status.message()).c_str());
    ++failed;
  };
  std::vector<std::string> names, jsons;
  std::vector<jit::Build> builds;
  for (const kernels::RegistryEntry* kernel : chosen) {
    absl::StatusOr<jit::ProgramBuild> made = kernels::registry_build(*kernel, *target);
    absl::StatusOr<std::string> json = made.ok() ? kernel_json(*kernel, *made) : made.status();
    if (!json.ok()) {
      report_failure(kernel->name, json.status());
      continue;
    }
    names.push_back(kernel->name);
    jsons.push_back(*std::move(json));
    builds.push_back(std::move(made->build));
  }
  jit::CompileAllResult compiled = compile_with_progress(jit, builds, jobs, stderr);
  for (size_t i = 0; i < builds.size(); ++i) {
    absl::StatusOr<std::string> line =
        compiled.results[i].ok() ? write_kernel(names[i], jsons[i], *compiled.results[i], out_dir)
                                 : absl::StatusOr<std::string>(compiled.results[i].status());
    if (line.ok()) {
      std::printf("%s\n", line->c_str());
    } else {
      report_failure(names[i], line.status());
    }
  }
  std::printf("exported %zu of %zu kernels for %s into %s\n", chosen.size() - failed, chosen.size(),
              target_text.c_str(), out_dir.c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace monotile::tools
