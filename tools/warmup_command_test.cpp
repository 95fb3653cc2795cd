// `monotile warmup` end to end: the built binary fills a temporary cache with two registered
// kernels (a table, exit 0), runs again all hits, writes a bundle, and exits non-zero when a target
// cannot be built.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/bundle_manifest.h"
#include "jit/test_support.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;

using CommandRun = monotile::testing::CommandResult;

// Runs `monotile warmup <args>` with its stdout and stderr captured together.
// Two small registered kernels: the whole registry takes minutes.
constexpr const char* kOnly = " --only rmsnorm_rows4_h7168,softmax_rows8192_cols4096";

CommandRun warmup(const std::string& args, const std::filesystem::path& home, bool only = true) {
  std::string command = "env MONOTILE_CACHE_DIR='" + (home / "default-cache").string() +
                        "' " MONOTILE_BINARY " warmup " + args + (only ? kOnly : "") + " 2>&1";
  return monotile::testing::run_command(command);
}

TEST(WarmupCommand, FillsThenHitsThenBundles) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  jit::testing::TempDir dir;
  std::string cache = (dir.path() / "cache").string();
  CommandRun cold = warmup("--target sm_90a,gfx90a --jobs 2 --cache-dir " + cache, dir.path());
  EXPECT_EQ(cold.status, 0) << cold.output;
  EXPECT_THAT(cold.output, HasSubstr("[4/4] "));  // plain progress lines: not a terminal
  EXPECT_THAT(cold.output, ::testing::ContainsRegex("rmsnorm_rows4_h7168 +gfx90a "));
  EXPECT_THAT(cold.output, ::testing::ContainsRegex("softmax_rows8192_cols4096 +sm_90a "));
  EXPECT_THAT(cold.output, HasSubstr("4 builds (4 unique): 0 hits, 4 misses, 0 failed"));

  CommandRun warm = warmup("--target sm_90a,gfx90a --cache-dir " + cache, dir.path());
  EXPECT_EQ(warm.status, 0) << warm.output;
  EXPECT_THAT(warm.output, HasSubstr("4 builds (4 unique): 4 hits, 0 misses, 0 failed"));

  std::filesystem::path bundle = dir.path() / "bundle";
  CommandRun bundled = warmup("--target gfx90a --bundle " + bundle.string(), dir.path());
  EXPECT_EQ(bundled.status, 0) << bundled.output;
  EXPECT_THAT(bundled.output, HasSubstr("2 builds (2 unique): 0 hits, 2 misses, 0 failed"));
  EXPECT_THAT(bundled.output, HasSubstr("bundle written to " + bundle.string()));
  EXPECT_FALSE(std::filesystem::is_empty(bundle));

  CommandRun again = warmup("--target gfx90a --bundle " + bundle.string(), dir.path());
  EXPECT_EQ(again.status, 2);
  EXPECT_THAT(again.output,
              HasSubstr("exists and is not empty; hint: a bundle is written into a fresh folder"));
}

// A bundle records each target's compiler (bundle-manifest.txt, bundle_manifest.h), and
// --nvrtc-library compiles with the libnvrtc it names (the workers' copy on a build box).
TEST(WarmupCommand, ABundleRecordsItsCompilerAndNvrtcLibraryPicksIt) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  absl::StatusOr<std::unique_ptr<jit::Compiler>> nvrtc =
      jit::make_compiler(*dsl::Target::parse("sm_90a"));
  ASSERT_TRUE(nvrtc.ok()) << nvrtc.status();
  const std::string library = (*nvrtc)->files().front();
  std::filesystem::path bundle = dir.path() / "bundle";
  CommandRun bundled = warmup(
      "--target sm_90a --bundle " + bundle.string() + " --nvrtc-library " + library, dir.path());
  EXPECT_EQ(bundled.status, 0) << bundled.output;
  const std::string line = "sm_90a by " + (*nvrtc)->key_identity();
  EXPECT_THAT(bundled.output, HasSubstr("bundle " + bundle.string() + ": " + line + "\n"));
  std::vector<jit::BundleTarget> manifest = jit::read_bundle_manifest(bundle);
  ASSERT_EQ(manifest.size(), 1u);
  EXPECT_EQ(manifest[0].target, "sm_90a");
  EXPECT_EQ(manifest[0].compiler, (*nvrtc)->key_identity());

  CommandRun missing =
      warmup("--target sm_90a --nvrtc-library " + (dir.path() / "none.so").string(), dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output, HasSubstr("--nvrtc-library \"" + (dir.path() / "none.so").string() +
                                        "\" is not a file; hint: name the workers' libnvrtc.so.*"));
}

// Warms the sm_90a builds of `deployment` (--model ... options) into a fresh cache in `dir` twice:
// `builds` misses, one of them named as `name` matches, then as many hits.
void expect_warmed_then_found(const std::string& deployment, const jit::testing::TempDir& dir,
                              int builds, const std::string& name) {
  const std::string args = deployment +
                           " --q 8 --max-rows 8 --target sm_90a --jobs 2 --cache-dir " +
                           (dir.path() / "cache").string();
  CommandRun cold = warmup(args, dir.path(), false);
  EXPECT_EQ(cold.status, 0) << cold.output;
  const std::string counts =
      std::to_string(builds) + " builds (" + std::to_string(builds) + " unique): ";
  EXPECT_THAT(cold.output,
              HasSubstr(counts + "0 hits, " + std::to_string(builds) + " misses, 0 failed"));
  EXPECT_THAT(cold.output, ::testing::ContainsRegex(name + " +sm_90a "));
  CommandRun warm = warmup(args, dir.path(), false);
  EXPECT_THAT(warm.output,
              HasSubstr(counts + std::to_string(builds) + " hits, 0 misses, 0 failed"));
}

// The operator's story: the executor's builds for a deployment, compiled on a machine without a
// GPU; a second warm-up (as an executor over that cache would) finds every one of them. One width
// (8); K1, and K2 for KDA's and MLA's o_proj inputs: the block-write layer's builds are the others'
// (a layer's blocks are launch values, not code).
TEST(WarmupCommand, ModelWarmsExactlyTheExecutorsBuilds) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  expect_warmed_then_found("--model k3-tiny --tp 1", dir, 3,
                           "k3_k1_h256_nh8_r4240_t8_q8_mb2_d1_sl10_\\S*");
  CommandRun misuse = warmup("--model k3-tiny --tp 1", dir.path(), false);
  EXPECT_EQ(misuse.status, 2);
  EXPECT_THAT(misuse.output, HasSubstr("--model needs --q"));
}

// With --k1-linear, the builds of an executor with K1's linear in_proj (monotile decode
// --k1-linear): K1 sized for the layers' one block source (max_blocks 1 of the model's 2, "_lin").
// Without --model it is misuse.
TEST(WarmupCommand, ModelWithK1LinearWarmsTheExecutorsSizedBuilds) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  expect_warmed_then_found("--model k3-tiny --tp 1 --k1-linear", dir, 3,
                           "k3_k1_h256_nh8_r4240_t8_q8_mb1_d1_sl10_\\S*_lin");
  CommandRun misuse = warmup("--k1-linear --target sm_90a", dir.path(), false);
  EXPECT_EQ(misuse.status, 2);
  EXPECT_THAT(
      misuse.output,
      HasSubstr("monotile warmup: --k1-linear needs --model: it chooses the executor's K1 builds"));
}

// At TP > 1 the rank's builds in its exchanging group too: the 3 builds of the rank alone, and K2
// again for KDA and MLA reducing across the ranks (the name's "_tp2r0").
TEST(WarmupCommand, ModelAtTpTwoWarmsTheExchangingBuildsToo) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  expect_warmed_then_found("--model k3-tiny --tp 2 --rank 0", dir, 5, "k3_k2_\\S*_tp2r0\\S*");
}

// AMD's builds pass the default resource policy: K1 and K2 spill no VGPRs, and the SGPRs they keep
// in VGPR lanes (their 35-43 arguments fill most of the 102) move no memory and are not refused.
TEST(WarmupCommand, ModelWarmsTheExecutorsAmdBuilds) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  jit::testing::TempDir dir;
  CommandRun cold =
      warmup("--model k3-tiny --tp 1 --q 8 --max-rows 8 --target gfx90a --jobs 2 --cache-dir " +
                 (dir.path() / "cache").string(),
             dir.path(), false);
  EXPECT_EQ(cold.status, 0) << cold.output;
  EXPECT_THAT(cold.output, HasSubstr("3 builds (3 unique): 0 hits, 3 misses, 0 failed"));
}

TEST(WarmupCommand, DumpWritesPtxAndIsa) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  jit::testing::TempDir dir;
  std::filesystem::path dump = dir.path() / "dump";
  CommandRun run = warmup("--target sm_90a,gfx90a --cache-dir " + (dir.path() / "cache").string() +
                              " --dump " + dump.string(),
                          dir.path());
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_TRUE(std::filesystem::exists(dump / "rmsnorm_rows4_h7168-sm_90a.ptx"));
  EXPECT_TRUE(std::filesystem::exists(dump / "rmsnorm_rows4_h7168-gfx90a.s"));
  EXPECT_TRUE(std::filesystem::exists(dump / "softmax_rows8192_cols4096-gfx90a.hip"));
}

TEST(WarmupCommand, UnbuildableTargetExitsNonZero) {
  jit::testing::TempDir dir;
  CommandRun run =
      warmup("--target gfx942 --cache-dir " + (dir.path() / "cache").string(), dir.path());
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("FAILED"));
  EXPECT_THAT(run.output, HasSubstr("2 failed"));
}

// One refusal fails every build alike: its message is printed once, naming the builds.
TEST(WarmupCommand, OneCauseIsReportedOnceForAllItsBuilds) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  jit::testing::TempDir dir;
  CommandRun run =
      warmup("--target gfx950 --cache-dir " + (dir.path() / "cache").string(), dir.path());
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(run.output, ::testing::ContainsRegex("error \\(builds [a-z0-9_]+, [a-z0-9_]+\\): "
                                                   "hiprtc cannot compile for gfx950"));
  size_t count = 0;
  for (size_t at = 0;
       (at = run.output.find("hiprtc cannot compile for gfx950", at)) != std::string::npos; ++at)
    ++count;
  EXPECT_EQ(count, 1u) << run.output;
}

TEST(WarmupCommand, BadJobsIsMisuse) {
  jit::testing::TempDir dir;
  CommandRun run = warmup("--jobs 0", dir.path());
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output, HasSubstr("--jobs takes a positive integer, got \"0\""));
  EXPECT_THAT(run.output, HasSubstr("usage: monotile warmup"));
}

TEST(WarmupCommand, NegativeCountIsMisuse) {
  jit::testing::TempDir dir;
  CommandRun run = warmup("--model k3-tiny --q 2 --tp=-1", dir.path(), /*only=*/false);
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output,
              HasSubstr("monotile warmup: --tp takes a non-negative integer, got \"-1\""));
}

TEST(WarmupCommand, ArgumentsAndOptionsOfOtherCommandsAreMisuse) {
  jit::testing::TempDir dir;
  CommandRun positional = warmup("sm_90a", dir.path());
  EXPECT_EQ(positional.status, 2);
  EXPECT_THAT(positional.output, HasSubstr("monotile warmup: takes options only, got \"sm_90a\""));
  CommandRun other = warmup("--steps 2", dir.path());
  EXPECT_EQ(other.status, 2);
  EXPECT_THAT(other.output, HasSubstr("monotile warmup: unknown option --steps; hint: monotile "
                                      "warmup --help lists its options"));
}

TEST(WarmupCommand, UnknownKernelIsMisuse) {
  jit::testing::TempDir dir;
  CommandRun run = warmup("--only nosuch", dir.path(), /*only=*/false);
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output, HasSubstr("no kernel \"nosuch\" in the registry"));
}

TEST(WarmupCommand, BadTargetIsMisuse) {
  jit::testing::TempDir dir;
  CommandRun run = warmup("--target sm_91", dir.path());
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output, HasSubstr("invalid target \"sm_91\""));
}

}  // namespace
}  // namespace monotile::tools
