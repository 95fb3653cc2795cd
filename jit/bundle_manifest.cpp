// The manifest as text: a first line naming the format, then one "target<TAB>compiler" line a
// target.
#include "jit/bundle_manifest.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "support/files.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

constexpr std::string_view kHeader = "monotile bundle 1";

}  // namespace

absl::Status write_bundle_manifest(const std::filesystem::path& dir,
                                   const std::vector<BundleTarget>& targets) {
  std::string text = absl::StrCat(to_absl(kHeader), "\n");
  for (const BundleTarget& t : targets) absl::StrAppend(&text, t.target, "\t", t.compiler, "\n");
  return write_file(dir / kBundleManifestName, text);
}

std::vector<BundleTarget> read_bundle_manifest(const std::filesystem::path& dir) {
  absl::StatusOr<std::string> text = read_file(dir / kBundleManifestName);
  if (!text.ok()) return {};
  std::vector<std::string> lines = absl::StrSplit(*text, '\n', absl::SkipEmpty());
  if (lines.empty() || lines[0] != kHeader) return {};
  std::vector<BundleTarget> targets;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> fields = absl::StrSplit(lines[i], absl::MaxSplits('\t', 1));
    if (fields.size() == 2) targets.push_back({fields[0], fields[1]});
  }
  return targets;
}

std::optional<std::string> bundle_compiler_mismatch(const std::filesystem::path& dir,
                                                    const std::vector<BundleTarget>& manifest,
                                                    const dsl::Target& target,
                                                    const std::string& key_identity) {
  for (const BundleTarget& t : manifest) {
    if (t.target != target.str() || t.compiler == key_identity) continue;
    return absl::StrCat(
        "the read-only cache \"", dir.string(), "\" was made for ", t.target, " by \"", t.compiler,
        "\", but this process compiles ", t.target, " with \"", key_identity,
        "\": the compiler is part of every build's key, so none of the bundle's builds match and "
        "each "
        "compiles here; hint: make the bundle with the workers' compiler (on the build box, "
        "`monotile warmup --nvrtc-library PATH` naming a copy of the workers' libnvrtc, or "
        "LD_LIBRARY_PATH naming its folder), or install the build box's compiler on the workers");
  }
  return std::nullopt;
}

}  // namespace monotile::jit
