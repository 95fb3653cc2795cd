// Compiler facts as cache entries: the key names what decides the answer, the entry's metadata holds
// it, and a stamp of the compiler's files (size, time, inode) guards against a library replaced in
// place.
#include "jit/compiler_facts.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

constexpr std::string_view kFactsVersion = "compiler facts 1";

std::string stamp(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return absl::StrCat(path, " missing");
  return absl::StrCat(path, " ", info.st_size, " ", info.st_mtim.tv_sec, ".", info.st_mtim.tv_nsec, " ", info.st_ino);
}

// What decides which library file dlopen picks: the search settings, the loader's cache and the
// program (its RUNPATH). A folder's time changes when a file appears in it.
std::string library_search_stamp() {
  std::string text;
  const char* search = std::getenv("LD_LIBRARY_PATH");
  absl::StrAppend(&text, "LD_LIBRARY_PATH=", search != nullptr ? search : "", "\n");
  if (search != nullptr) {
    for (absl::string_view folder : absl::StrSplit(search, ':', absl::SkipEmpty())) {
      absl::StrAppend(&text, stamp(std::string(folder)), "\n");
    }
  }
  const char* nvrtc = std::getenv("MONOTILE_NVRTC_LIBRARY");
  absl::StrAppend(&text, "MONOTILE_NVRTC_LIBRARY=", nvrtc != nullptr ? nvrtc : "", "\n");
  if (nvrtc != nullptr && *nvrtc != '\0') absl::StrAppend(&text, stamp(nvrtc), "\n");
  const char* device_libs = std::getenv("HIP_DEVICE_LIB_PATH");
  absl::StrAppend(&text, "HIP_DEVICE_LIB_PATH=", device_libs != nullptr ? device_libs : "", "\n");
  absl::StrAppend(&text, stamp("/etc/ld.so.cache"), "\n");
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  absl::StrAppend(&text, stamp(program.string()), "\n");
  return text;
}

std::string files_stamp(const std::vector<std::string>& files) {
  std::string text;
  for (const std::string& file : files) absl::StrAppend(&text, stamp(file), "\n");
  return text;
}

cache::KeyBuilder facts_key(const dsl::Target& target) {
  cache::KeyBuilder key;
  key.add("record", kFactsVersion).add("vendor", target.vendor() == dsl::Vendor::kNvidia ? "nvidia" : "amd");
  key.add("library search", library_search_stamp());
  return key;
}

cache::KeyBuilder verdict_key(const std::string& key_identity, const dsl::Target& target) {
  cache::KeyBuilder key;
  key.add("record", absl::StrCat(to_absl(kFactsVersion), " target verdict")).add("compiler", key_identity);
  key.add("target", target.str());
  return key;
}

const std::string* field(const cache::Entry& entry, const std::string& name) {
  auto found = entry.metadata.find(name);
  return found != entry.metadata.end() ? &found->second : nullptr;
}

}  // namespace

std::optional<CompilerFacts> recall_compiler_facts(cache::Cache& cache, const dsl::Target& target) {
  std::optional<cache::Entry> entry = cache.lookup(facts_key(target));
  if (!entry) return std::nullopt;
  const std::string *identity = field(*entry, "identity"), *key_identity = field(*entry, "key_identity"),
                    *files = field(*entry, "files"), *stamped = field(*entry, "stamp");
  if (identity == nullptr || key_identity == nullptr || files == nullptr || stamped == nullptr) return std::nullopt;
  CompilerFacts facts{*identity, *key_identity, {}};
  for (absl::string_view file : absl::StrSplit(*files, '\n', absl::SkipEmpty())) facts.files.emplace_back(file);
  if (files_stamp(facts.files) != *stamped) return std::nullopt;
  return facts;
}

void remember_compiler_facts(cache::Cache& cache, const dsl::Target& target, const CompilerFacts& facts) {
  cache::Entry entry;
  entry.metadata = {{"identity", facts.identity},
                    {"key_identity", facts.key_identity},
                    {"files", absl::StrJoin(facts.files, "\n")},
                    {"stamp", files_stamp(facts.files)}};
  cache.store(facts_key(target), entry).IgnoreError();  // a read-only cache only forgets
}

std::optional<absl::Status> recall_target_verdict(cache::Cache& cache, const std::string& key_identity,
                                                  const dsl::Target& target) {
  std::optional<cache::Entry> entry = cache.lookup(verdict_key(key_identity, target));
  if (!entry) return std::nullopt;
  const std::string* refusal = field(*entry, "refusal");
  if (refusal == nullptr) return std::nullopt;
  if (refusal->empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(*refusal);
}

void remember_target_verdict(cache::Cache& cache, const std::string& key_identity, const dsl::Target& target,
                             const absl::Status& verdict) {
  if (!verdict.ok() && !absl::IsFailedPrecondition(verdict)) return;
  cache::Entry entry;
  entry.metadata = {{"refusal", std::string(verdict.message())}};
  cache.store(verdict_key(key_identity, target), entry).IgnoreError();
}

}  // namespace monotile::jit
