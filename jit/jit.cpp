// compile_build and its helpers: the compiler per target (made once), the cache entry a compile
// becomes, the failed-source folder and the debugging dump.
#include "jit/jit.h"

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/build_key.h"
#include "jit/bundle_manifest.h"
#include "jit/diagnostics.h"
#include "jit/resource_policy.h"
#include "support/files.h"
#include "support/log.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

std::filesystem::path env_path(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::filesystem::path(value) : std::filesystem::path();
}

// A file-name-safe form of a target ("gfx90a:xnack-" -> "gfx90a_xnack-").
std::string file_safe(std::string text) {
  for (char& c : text) {
    if (c == ':' || c == '/' || c == ' ') c = '_';
  }
  return text;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

JitConfig JitConfig::from_environment() {
  JitConfig config;
  config.cache = cache::Config::from_environment();
  config.compiler = CompilerOptions::from_environment();
  config.failed_dir = env_path("MONOTILE_JIT_FAILED_DIR");
  config.dump_dir = env_path("MONOTILE_JIT_DUMP_DIR");
  if (const char* direct = std::getenv("MONOTILE_JIT_DIRECT_MODE"); direct != nullptr && *direct) {
    const std::string value = direct;
    if (value == "0" || value == "false" || value == "no" || value == "off") {
      config.direct_mode = false;
    } else if (value != "1" && value != "true" && value != "yes" && value != "on") {
      log_warning_once("MONOTILE_JIT_DIRECT_MODE",
                       absl::StrCat("MONOTILE_JIT_DIRECT_MODE=\"", value,
                                    "\" is ignored; expected 0 (or false, no, off) to turn direct mode off, 1 to keep "
                                    "it on"));
    }
  }
  return config;
}

Jit::Jit(JitConfig config) : Jit(config, cache::Cache::open(config.cache)) {}

Jit::Jit(JitConfig config, std::unique_ptr<cache::Cache> cache)
    : config_(std::move(config)), cache_(std::move(cache)) {}

Jit& Jit::process_default() {
  static Jit* jit = new Jit(JitConfig::from_environment());
  return *jit;
}

absl::StatusOr<Compiler*> Jit::loaded_compiler(const dsl::Target& target) {
  absl::MutexLock lock(&mutex_);
  auto found = compilers_.find(target.str());
  if (found == compilers_.end()) {
    found = compilers_.emplace(target.str(), make_unchecked_compiler(target, config_.compiler)).first;
  }
  if (!found->second.ok()) return found->second.status();
  return found->second->get();
}

absl::StatusOr<Compiler*> Jit::compiler(const dsl::Target& target) {
  MT_RETURN_IF_ERROR(compiler_facts(target).status());
  return loaded_compiler(target);
}

absl::StatusOr<CompilerFacts> Jit::compiler_facts(const dsl::Target& target) {
  absl::MutexLock lock(&facts_mutex_);
  auto found = facts_.find(target.str());
  if (found == facts_.end()) found = facts_.emplace(target.str(), find_compiler_facts(target)).first;
  return found->second;
}

// The identity from the cache, or from the loaded library; then the verdict on the target from the
// cache, or from check_compiler_target (a probe compile, where one is needed).
absl::StatusOr<CompilerFacts> Jit::find_compiler_facts(const dsl::Target& target) {
  std::optional<CompilerFacts> facts = recall_compiler_facts(*cache_, target);
  if (!facts) {
    MT_ASSIGN_OR_RETURN(Compiler * compiler, loaded_compiler(target));
    facts = CompilerFacts{compiler->identity(), compiler->key_identity(), compiler->files()};
    remember_compiler_facts(*cache_, target, *facts);
  }
  std::optional<absl::Status> verdict = recall_target_verdict(*cache_, facts->key_identity, target);
  if (!verdict) {
    MT_ASSIGN_OR_RETURN(Compiler * compiler, loaded_compiler(target));
    verdict = check_compiler_target(*compiler, target, config_.compiler);
    remember_target_verdict(*cache_, facts->key_identity, target, *verdict);
  }
  if (!verdict->ok()) return *verdict;
  warn_of_bundles_made_elsewhere(target, facts->key_identity);
  return *facts;
}

// A read-only bundle made by another compiler serves nothing for this target: said once a process
// for each bundle and target, naming both compilers (bundle_manifest.h).
void Jit::warn_of_bundles_made_elsewhere(const dsl::Target& target, const std::string& key_identity) const {
  for (const std::filesystem::path& dir : config_.cache.read_only_dirs) {
    std::optional<std::string> mismatch =
        bundle_compiler_mismatch(dir, read_bundle_manifest(dir), target, key_identity);
    if (mismatch) log_warning_once(absl::StrCat("bundle compiler ", dir.string(), " ", target.str()), *mismatch);
  }
}

absl::StatusOr<cache::KeyBuilder> Jit::key(const Build& build) {
  MT_ASSIGN_OR_RETURN(CompilerFacts facts, compiler_facts(build.target));
  return build_key(build, facts.key_identity);
}

absl::StatusOr<CompiledBuild> Jit::compile_build(const Build& build) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CompilerFacts> facts = compiler_facts(build.target);  // refuses targets it cannot build
  if (!facts.ok()) return with_context(facts.status(), absl::StrCat("build \"", build.name, "\""));
  const cache::KeyBuilder key = build_key(build, facts->key_identity);
  const auto compile = [&]() -> absl::StatusOr<cache::Entry> {
    MT_ASSIGN_OR_RETURN(Compiler * compiler, loaded_compiler(build.target));  // only on a miss
    return compile_entry(build, key, *compiler);
  };
  bool hit = false;
  absl::StatusOr<cache::Entry> entry;
  if (config_.dump_dir.empty()) {
    entry = cache_->get_or_compute(key, compile, &hit);  // look up; on a miss compile and store
  } else {
    entry = compile();  // a dump wants the compiler's output, so it never comes from the cache
    if (entry.ok()) cache_->store(key, *entry).IgnoreError();
  }
  if (!entry.ok()) return entry.status();
  MT_ASSIGN_OR_RETURN(CompiledBuild compiled,
                      compiled_build(build, key.key(), std::move(*entry), facts->identity, hit));
  compiled.seconds = seconds_since(start);
  return compiled;
}

absl::StatusOr<CompiledBuild> compiled_build(const Build& build, const cache::Key& key, cache::Entry entry,
                                             const std::string& compiler_identity, bool hit) {
  absl::StatusOr<ResourceReport> report = ResourceReport::from_text(entry.resource_report);
  if (!report.ok()) return with_context(report.status(), absl::StrCat("build \"", build.name, "\" cache entry ", key.hex()));
  MT_RETURN_IF_ERROR(check_resources(build, *report));

  CompiledBuild compiled;
  compiled.name = build.name;
  compiled.kernel_name = build.kernel_name;
  compiled.target = build.target.str();
  compiled.key = key;
  compiled.code_object = std::move(entry.code_object);
  compiled.report = *report;
  compiled.log = std::move(entry.compile_log);
  compiled.launch = build.launch;
  compiled.compiler = compiler_identity;
  compiled.hit = hit;
  return compiled;
}

absl::StatusOr<cache::Entry> Jit::compile_entry(const Build& build, const cache::KeyBuilder& key, Compiler& compiler) {
  CompileRequest request = build.request();
  request.build_key = key.key().hex();
  request.want_assembly = !config_.dump_dir.empty();
  absl::StatusOr<CompileResult> result = compiler.compile(request);
  if (!result.ok()) {
    std::string message = annotate_log(to_std(result.status().message()), build.source,
                                       source_file_name(build.target, build.kernel_name), build.origins);
    std::string kept = keep_failed_source(build, key.key(), message);
    return absl::Status(result.status().code(), absl::StrCat(message, "\nthe source is kept in ", kept));
  }
  if (!config_.dump_dir.empty()) dump(build, *result);
  cache::Entry entry;
  entry.code_object = std::move(result->code_object);
  entry.resource_report = result->report.to_text();
  entry.compile_log = std::move(result->log);
  entry.metadata = {{"kernel", build.kernel_name},
                    {"target", build.target.str()},
                    {"build", build.name},
                    {"compiler", compiler.identity()}};
  return entry;
}

std::string Jit::keep_failed_source(const Build& build, const cache::Key& key, const std::string& log) {
  std::filesystem::path root = config_.failed_dir;
  if (root.empty() && !config_.cache.writable_dir.empty()) {
    std::filesystem::path dir = config_.cache.writable_dir.lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    root = dir.parent_path() / (dir.filename().string() + "-failed");
  }
  if (root.empty()) root = std::filesystem::temp_directory_path() / "monotile-failed";
  std::filesystem::path folder =
      root / absl::StrCat(file_safe(build.name), "-", file_safe(build.target.str()), "-", key.hex().substr(0, 16));
  absl::Status status = write_file(folder / source_file_name(build.target, build.kernel_name), build.source);
  for (const Header& header : build.headers) {
    if (status.ok()) status = write_file(folder / header.name, header.content);
  }
  if (status.ok()) status = write_file(folder / "log.txt", log);
  if (!status.ok()) {
    log_warning_once(root.string(), absl::StrCat("cannot keep failed sources: ", status.message()));
    return absl::StrCat("(nowhere: ", status.message(), ")");
  }
  return folder.string();
}

void Jit::dump(const Build& build, const CompileResult& result) {
  std::filesystem::path base = config_.dump_dir / absl::StrCat(file_safe(build.name), "-", file_safe(build.target.str()));
  bool nvidia = build.target.vendor() == dsl::Vendor::kNvidia;
  absl::Status status = write_file(base.string() + (nvidia ? ".cu" : ".hip"), build.source);
  if (status.ok()) status = write_file(base.string() + (nvidia ? ".ptx" : ".s"), result.assembly);
  if (status.ok()) status = write_file(base.string() + ".log", result.log);
  if (status.ok()) status = write_file(base.string() + ".report", result.report.to_text());
  if (!status.ok()) log_warning_once(config_.dump_dir.string(), absl::StrCat("cannot dump builds: ", status.message()));
}

absl::StatusOr<std::string> Jit::assembly(const Build& build) {
  MT_ASSIGN_OR_RETURN(Compiler * compiler, this->compiler(build.target));
  CompileRequest request = build.request();
  request.want_assembly = true;
  MT_ASSIGN_OR_RETURN(CompileResult result, compiler->compile(request));
  return result.assembly;
}

absl::StatusOr<CompiledBuild> compile_build(const Build& build) { return Jit::process_default().compile_build(build); }

}  // namespace monotile::jit
