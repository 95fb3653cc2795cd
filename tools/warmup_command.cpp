// `monotile warmup`: fills the kernel cache (or a fresh bundle folder to ship read-only) with every
// registered kernel's build (or those --only names) for the given targets. Needs no GPU. Exits 1 when any build failed, 2 on misuse.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "jit/bundle_manifest.h"
#include "jit/compile_programs.h"
#include "jit/jit.h"
#include "kernels/registry.h"
#include "model/config.h"
#include "runtime/decode/executor_builds.h"
#include "support/status_macros.h"
#include "support/strings.h"
#include "tools/build_report.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/shared_flags.h"

ABSL_FLAG(std::string, bundle, "", "write every build into this new folder");
ABSL_FLAG(std::string, dump, "", "compile every build afresh and write its files into this folder");
ABSL_FLAG(std::string, nvrtc_library, "", "compile NVIDIA targets with this libnvrtc (the workers')");

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile warmup [--target sm_90a,gfx90a] [--only NAME,...] [--cache-dir DIR] [--bundle DIR]\n"
    "                       [--jobs N] [--dump DIR] [--nvrtc-library PATH]\n"
    "       monotile warmup --model NAME|DIR --tp T --q Q [--rank R] [--max-rows 8|16] [--k1-linear] [--target ...]\n"
    "                       [...]\n"
    "  --target   comma-separated targets (default sm_90a,gfx90a)\n"
    "  --only     these registered kernels only (default: all; monotile compile --list names them)\n"
    "  --model    instead of the registered kernels, exactly the builds of the specialized decode's\n"
    "             executor for that deployment: every TP rank (or --rank R) at q = num_spec + 1, every\n"
    "             width up to --max-rows (default 16), at TP > 1 both in its group exchanging partial\n"
    "             sums and alone (the other ranks stood in); an executor started over the cache\n"
    "             compiles nothing\n"
    "  --k1-linear  with --model: the builds of an executor with K1's linear in_proj (monotile decode\n"
    "             --k1-linear), each layer's sized for its own block sources\n"
    "  --cache-dir  the writable cache folder (default MONOTILE_CACHE_DIR or ~/.cache/monotile)\n"
    "  --bundle   write every build into DIR, a new folder to ship and list in\n"
    "             MONOTILE_CACHE_READONLY_DIRS on the workers; DIR/bundle-manifest.txt records each\n"
    "             target's compiler, which must be the workers' (docs/cache.md)\n"
    "  --nvrtc-library  compile NVIDIA targets with this libnvrtc.so (a copy of the workers', whose\n"
    "             identity keys every build), as MONOTILE_NVRTC_LIBRARY does\n"
    "  --jobs     parallel compiles (default: one per core)\n"
    "  --dump     compile every build afresh and write its source, PTX or ISA, log and report\n"
    "             into DIR (as MONOTILE_JIT_DUMP_DIR does)\n";

// The served layers of each rank's (or `rank`'s) executor for the deployment on `target`: at TP > 1
// both as the rank runs in its exchanging group and alone.
absl::StatusOr<std::vector<runtime::decode::LayerBuilds>> executor_layers(const std::string& model_name, int tp,
                                                                          int rank, int q, int max_rows, bool k1_linear,
                                                                          const dsl::Target& target) {
  MT_ASSIGN_OR_RETURN(model::ModelConfig config, model::load_config(model_name));
  const runtime::decode::DecodeConfig decode{.q = q, .max_rows = max_rows};
  std::vector<runtime::decode::LayerBuilds> layers;
  for (int r = rank < 0 ? 0 : rank; r < (rank < 0 ? tp : rank + 1); ++r) {
    MT_ASSIGN_OR_RETURN(model::RankDims dims, model::rank_dims(config, tp, r));
    MT_ASSIGN_OR_RETURN(std::vector<runtime::decode::LayerBuilds> of_rank,
                        runtime::decode::executor_builds(config, dims, 0, config.num_hidden_layers, decode, target));
    if (k1_linear) of_rank = runtime::decode::with_k1_linear(std::move(of_rank));
    layers.insert(layers.end(), of_rank.begin(), of_rank.end());
    if (tp > 1) {
      // The rank in its group, exchanging partial sums with the others (a deployment, `mpirun
      // monotile decode --mpi`), beside the rank alone (the tools' one-rank runs).
      std::vector<runtime::decode::LayerBuilds> exchanging = runtime::decode::exchanging_builds(of_rank, tp, r);
      layers.insert(layers.end(), exchanging.begin(), exchanging.end());
    }
  }
  return layers;
}

// Gives every executor program a direct entry (docs/cache.md), so that an executor started over
// this cache lowers none of them: each is lowered once more and found among the builds just
// compiled.
void remember_executor_programs(jit::Jit& jit, const std::vector<runtime::decode::LayerBuilds>& layers,
                                const dsl::Target& target, int jobs) {
  jit::CompilePrograms options;
  options.compile.jobs = jobs;
  jit::compile_programs(jit, runtime::decode::executor_programs(layers), target, options);
}

int misuse(const std::string& message) {
  std::fprintf(stderr, "monotile warmup: %s\n%s", message.c_str(), kUsage);
  return 2;
}

}  // namespace

int warmup_command(Args args) {
  const ParsedArgs parsed = parse_command_flags(
      {.command = "monotile warmup",
       .file = __FILE__,
       .shared = {"target", "only", "cache_dir", "jobs", "model", "tp", "q", "rank", "max_rows", "k1_linear"},
       .usage = kUsage},
      args);
  if (parsed.exit_status) return *parsed.exit_status;
  if (!parsed.positional.empty()) {
    return misuse("takes options only, got \"" + parsed.positional[0] + "\"");
  }
  const std::string targets_text = absl::GetFlag(FLAGS_target).value_or("sm_90a,gfx90a");
  const std::string cache_dir = absl::GetFlag(FLAGS_cache_dir);
  const std::string bundle = absl::GetFlag(FLAGS_bundle);
  const std::string dump = absl::GetFlag(FLAGS_dump);
  const std::vector<std::string> only = absl::StrSplit(absl::GetFlag(FLAGS_only), ',', absl::SkipEmpty());
  const std::string model = absl::GetFlag(FLAGS_model).value_or("");
  const bool k1_linear = absl::GetFlag(FLAGS_k1_linear);
  const std::pair<const char*, std::optional<int>> counts[] = {{"--tp", absl::GetFlag(FLAGS_tp)},
                                                               {"--q", absl::GetFlag(FLAGS_q)},
                                                               {"--rank", absl::GetFlag(FLAGS_rank)},
                                                               {"--max-rows", absl::GetFlag(FLAGS_max_rows)}};
  for (const auto& [name, value] : counts) {
    if (value && *value < 0) {
      return misuse(std::string(name) + " takes a non-negative integer, got \"" + std::to_string(*value) + "\"");
    }
  }
  const int tp = absl::GetFlag(FLAGS_tp).value_or(1), q = absl::GetFlag(FLAGS_q).value_or(0);
  const int rank = absl::GetFlag(FLAGS_rank).value_or(-1), max_rows = absl::GetFlag(FLAGS_max_rows).value_or(16);
  const int jobs = absl::GetFlag(FLAGS_jobs).value_or(0);
  if (absl::GetFlag(FLAGS_jobs) && jobs < 1) {
    return misuse("--jobs takes a positive integer, got \"" + std::to_string(jobs) + "\"");
  }

  std::vector<dsl::Target> targets;
  for (absl::string_view text : absl::StrSplit(targets_text, ',', absl::SkipEmpty())) {
    absl::StatusOr<dsl::Target> target = dsl::Target::parse(to_std(text));
    if (!target.ok()) return misuse(std::string(target.status().message()));
    targets.push_back(*target);
  }
  if (targets.empty()) return misuse("--target lists no target");
  for (const std::string& name : only) {
    if (absl::StatusOr<const kernels::RegistryEntry*> entry = kernels::find_kernel(name); !entry.ok()) {
      return misuse(std::string(entry.status().message()));
    }
  }

  const std::string nvrtc_library = absl::GetFlag(FLAGS_nvrtc_library);
  if (!nvrtc_library.empty()) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(nvrtc_library, error)) {
      return misuse("--nvrtc-library \"" + nvrtc_library + "\" is not a file; hint: name the workers' libnvrtc.so.*");
    }
    // The compile workers inherit it.
    ::setenv("MONOTILE_NVRTC_LIBRARY", nvrtc_library.c_str(), 1);
  }
  jit::JitConfig config = jit::JitConfig::from_environment();
  if (!cache_dir.empty()) config.cache.writable_dir = cache_dir;
  if (!dump.empty()) config.dump_dir = dump;
  if (!bundle.empty()) {
    // A bundle holds every build itself: no read-only layer may answer for it, nothing is evicted.
    std::error_code error;
    if (std::filesystem::exists(bundle, error) && !std::filesystem::is_empty(bundle, error)) {
      return misuse("--bundle \"" + bundle + "\" exists and is not empty; hint: a bundle is written into a fresh folder");
    }
    config.cache.writable_dir = bundle;
    config.cache.read_only_dirs.clear();
    config.cache.max_bytes = UINT64_MAX;
    config.cache.enabled = true;
  }
  jit::Jit jit(config);
  if (!jit.cache().writable()) {
    std::fprintf(stderr, "monotile warmup: the cache folder \"%s\" is not writable; hint: pass --cache-dir\n",
                 config.cache.writable_dir.string().c_str());
    return 1;
  }

  std::vector<jit::Build> builds;
  std::vector<std::pair<dsl::Target, std::vector<runtime::decode::LayerBuilds>>> executors;  // with --model
  int failed_targets = 0;
  if (!model.empty() && !only.empty()) return misuse("--model and --only exclude each other");
  if (!model.empty() && q < 1) return misuse("--model needs --q, the tokens per request (num_speculative_tokens + 1)");
  if (model.empty() && k1_linear) return misuse("--k1-linear needs --model: it chooses the executor's K1 builds");
  for (const dsl::Target& target : targets) {
    absl::StatusOr<std::vector<jit::Build>> found = absl::UnknownError("no builds");
    if (model.empty()) {
      found = kernels::registry_builds(target, only);
    } else {
      absl::StatusOr<std::vector<runtime::decode::LayerBuilds>> layers =
          executor_layers(model, tp, rank, q, max_rows, k1_linear, target);
      found = layers.ok() ? runtime::decode::lowered_builds(*layers, target) : layers.status();
      if (layers.ok()) executors.emplace_back(target, std::move(*layers));
    }
    if (!found.ok()) {
      std::fprintf(stderr, "monotile warmup: %s\n", std::string(found.status().message()).c_str());
      ++failed_targets;
      continue;
    }
    builds.insert(builds.end(), found->begin(), found->end());
  }
  std::fprintf(stderr, "warming %zu builds for %s into %s\n", builds.size(), targets_text.c_str(),
               config.cache.writable_dir.string().c_str());
  jit::CompileAllResult result = compile_with_progress(jit, builds, jobs, stderr);
  print_build_table(stdout, builds, result);
  // A dump compiles every build afresh, so the direct pass, which compiles what it lowers, would
  // compile them all again; without a dump it compiles nothing.
  if (result.ok() && dump.empty()) {
    for (const auto& [target, layers] : executors) remember_executor_programs(jit, layers, target, jobs);
  }
  if (!bundle.empty()) {
    // The compiler of each target, as every key hashes it: a worker whose compiler differs says so.
    std::vector<jit::BundleTarget> made;
    for (const dsl::Target& target : targets) {
      absl::StatusOr<jit::CompilerFacts> facts = jit.compiler_facts(target);
      if (!facts.ok()) continue;
      made.push_back({target.str(), facts->key_identity});
      std::printf("bundle %s: %s by %s\n", bundle.c_str(), target.str().c_str(), facts->key_identity.c_str());
    }
    if (absl::Status written = jit::write_bundle_manifest(bundle, made); !written.ok()) {
      std::fprintf(stderr, "monotile warmup: %s\n", std::string(written.message()).c_str());
      return 1;
    }
    std::printf("bundle written to %s; ship it and list it in MONOTILE_CACHE_READONLY_DIRS on the workers, whose "
                "compiler must be the one named above\n",
                bundle.c_str());
  }
  return result.ok() && failed_targets == 0 ? 0 : 1;
}

}  // namespace monotile::tools
