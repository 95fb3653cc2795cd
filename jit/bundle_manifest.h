// A bundle's manifest (`monotile warmup --bundle`): the targets it was made for and the compiler
// that made each, as its identity (Compiler::key_identity, which every build's key hashes). A
// worker whose compiler differs finds none of the bundle's builds; the manifest lets it say so,
// naming both compilers, instead of compiling everything without a word.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dsl/target.h"

namespace monotile::jit {

// The manifest's file in the bundle's folder, beside the cache's entries.
inline constexpr const char* kBundleManifestName = "bundle-manifest.txt";

struct BundleTarget {
  std::string target;    // "sm_90a"
  std::string compiler;  // Compiler::key_identity(), "nvrtc 13.0 (libnvrtc.so.13 110213840 bytes)"
};

// Writes `dir`'s manifest (replacing one there); the system's reason on failure.
absl::Status write_bundle_manifest(const std::filesystem::path& dir,
                                   const std::vector<BundleTarget>& targets);

// `dir`'s manifest; empty when it has none (a cache folder, or a bundle older than manifests).
std::vector<BundleTarget> read_bundle_manifest(const std::filesystem::path& dir);

// The warning for a process compiling for `target` with the compiler `key_identity` over the bundle
// `dir` whose manifest is `manifest`: nothing when the bundle was made by the same compiler for
// that target, or was not made for it. It names the bundle, both compilers, and what to do.
std::optional<std::string> bundle_compiler_mismatch(const std::filesystem::path& dir,
                                                    const std::vector<BundleTarget>& manifest,
                                                    const dsl::Target& target,
                                                    const std::string& key_identity);

}  // namespace monotile::jit
