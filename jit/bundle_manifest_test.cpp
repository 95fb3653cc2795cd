// A bundle's manifest across machines: a bundle made by one compiler and read by a process whose
// compiler differs gives one warning naming both (faked here: the bundle's entries and manifest
// are written under another NVRTC's identity), and the process compiles what it needs correctly;
// a bundle made by the same compiler serves its builds and says nothing.
#include "jit/bundle_manifest.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/build_key.h"
#include "jit/test_support.h"
#include "tests/jit_fixtures/samples.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;

constexpr const char* kOtherNvrtc = "nvrtc 13.0 (libnvrtc.so.13 110213840 bytes)";

int occurrences(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(BundleManifest, RoundTripsAndIsEmptyWithoutOne) {
  testing::TempDir dir;
  EXPECT_TRUE(read_bundle_manifest(dir.path()).empty());
  ASSERT_TRUE(write_bundle_manifest(dir.path(),
                                    {{"sm_90a", kOtherNvrtc}, {"gfx942", "hiprtc 6.3 + comgr 2.8"}})
                  .ok());
  std::vector<BundleTarget> read = read_bundle_manifest(dir.path());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].target, "sm_90a");
  EXPECT_EQ(read[0].compiler, kOtherNvrtc);
  EXPECT_EQ(read[1].compiler, "hiprtc 6.3 + comgr 2.8");
}

TEST(BundleManifest, NamesBothCompilersOnlyWhereTheyDiffer) {
  const std::vector<BundleTarget> manifest = {{"sm_90a", kOtherNvrtc}};
  const dsl::Target sm90a = *dsl::Target::parse("sm_90a");
  EXPECT_FALSE(bundle_compiler_mismatch("/b", manifest, sm90a, kOtherNvrtc).has_value());
  EXPECT_FALSE(bundle_compiler_mismatch("/b", manifest, *dsl::Target::parse("sm_80"), "nvrtc 12.4")
                   .has_value());
  std::optional<std::string> said =
      bundle_compiler_mismatch("/b", manifest, sm90a, "nvrtc 13.0 (libnvrtc.so.13 9 bytes)");
  ASSERT_TRUE(said.has_value());
  EXPECT_EQ(*said,
            "the read-only cache \"/b\" was made for sm_90a by \"nvrtc 13.0 (libnvrtc.so.13 "
            "110213840 bytes)\", but "
            "this process compiles sm_90a with \"nvrtc 13.0 (libnvrtc.so.13 9 bytes)\": the "
            "compiler is part of every "
            "build's key, so none of the bundle's builds match and each compiles here; hint: make "
            "the bundle with "
            "the workers' compiler (on the build box, `monotile warmup --nvrtc-library PATH` "
            "naming a copy of the "
            "workers' libnvrtc, or LD_LIBRARY_PATH naming its folder), or install the build box's "
            "compiler on the "
            "workers");
}

TEST(BundleManifest, AWorkerWithAnotherCompilerSaysSoOnceAndCompiles) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  const dsl::Target target = *dsl::Target::parse("sm_90a");
  const std::vector<Build> builds = monotile::testing::samples::sample_builds(target);
  ASSERT_GE(builds.size(), 2u);
  // The bundle as another NVRTC build made it: its entries keyed by that compiler, its manifest.
  const std::filesystem::path bundle = dir.path() / "bundle";
  {
    JitConfig made = testing::config_in(dir.path());
    made.cache.writable_dir = bundle;
    Jit other(made);
    cache::Entry entry;
    entry.resource_report = ResourceReport{}.to_text();
    for (const Build& build : builds)
      ASSERT_TRUE(other.cache().store(build_key(build, kOtherNvrtc), entry).ok());
  }
  ASSERT_TRUE(write_bundle_manifest(bundle, {{"sm_90a", kOtherNvrtc}}).ok());

  JitConfig config = testing::config_in(dir.path());
  config.cache.read_only_dirs = {bundle};
  Jit worker(config);
  ::testing::internal::CaptureStderr();
  absl::StatusOr<CompiledBuild> first = worker.compile_build(builds[0]);
  absl::StatusOr<CompiledBuild> second = worker.compile_build(builds[1]);
  const std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(first->hit);
  EXPECT_FALSE(first->code_object.empty()) << "compiled here, not the bundle's empty entry";
  const std::string mine = worker.compiler_facts(target)->key_identity;
  EXPECT_NE(mine, kOtherNvrtc);
  EXPECT_EQ(occurrences(said, "was made for sm_90a by"), 1) << said;
  EXPECT_THAT(said, HasSubstr(absl::StrCat(
                        "the read-only cache \"", bundle.string(), "\" was made for sm_90a by \"",
                        kOtherNvrtc, "\", but this process compiles sm_90a with \"", mine, "\"")));
}

TEST(BundleManifest, ABundleOfTheSameCompilerServesItsBuildsSilently) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  const dsl::Target target = *dsl::Target::parse("sm_90a");
  const Build build = monotile::testing::samples::sample_builds(target).front();
  const std::filesystem::path bundle = dir.path() / "bundle";
  {
    JitConfig made = testing::config_in(dir.path());
    made.cache.writable_dir = bundle;
    Jit maker(made);
    ASSERT_TRUE(maker.compile_build(build).ok());
    ASSERT_TRUE(
        write_bundle_manifest(bundle, {{"sm_90a", maker.compiler_facts(target)->key_identity}})
            .ok());
  }
  JitConfig config = testing::config_in(dir.path());
  config.cache.read_only_dirs = {bundle};
  Jit worker(config);
  ::testing::internal::CaptureStderr();
  absl::StatusOr<CompiledBuild> served = worker.compile_build(build);
  const std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_TRUE(served->hit);
  EXPECT_THAT(said, ::testing::Not(HasSubstr("was made for")));
}

}  // namespace
}  // namespace monotile::jit
