// `monotile decode` end to end on the built binary at k3-tiny on the CPU interpreter: the default
// run (the README's run command) and --check pass, every step's plan decision is printed (the
// prefill-like step refused with plan's reason), the table names who ran each layer; --graph's
// replays write the bytes eager steps write; weights made on the device and aliased pass --check;
// misuse and impossible deployments are refused by their words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using monotile::testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;

CommandResult run(const std::string& args) {
  return monotile::testing::run_command(absl::StrCat(MONOTILE_BINARY, " decode ", args, " 2>&1"));
}

TEST(DecodeCommand, ChecksEveryServedLayerOfK3Tiny) {
  const CommandResult result = run("--device cpu --steps 2 --check --seed 4");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr("specialized decode: 12 layers (9 KDA, 3 MLA FFN) at widths 2,4,6,8,10,12,14,16"));
  EXPECT_THAT(result.output,
              HasSubstr("step 1: width 4, 2 requests (0 padded): kernels for 12 of 13 layers"));
  EXPECT_THAT(result.output,
              HasSubstr("step 2: width 4, 2 requests (1 padded): kernels for 12 of 13 layers"));
  EXPECT_THAT(result.output,
              HasSubstr("step 3: width 4, 2 requests: the host's layers (not pure decode)"));
  EXPECT_THAT(result.output, HasSubstr("    0  KDA + MLP: host stand-in (reference)"));
  EXPECT_THAT(result.output, HasSubstr("    1  KDA: kernels K1 + K2"));
  EXPECT_THAT(result.output, HasSubstr("    3  MLA: host attention stand-in + kernel K2"));
  EXPECT_THAT(result.output,
              HasSubstr("every served layer passes its check against the float64 reference"));
}

TEST(DecodeCommand, RefusesMoreRowsThanTheWidestLaunch) {
  const CommandResult result = run("--device cpu --q 4 --requests 3 --max-rows 8");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("--requests 3 x --q 4 = 12 rows, expected at most --max-rows 8; hint:"));
}

TEST(DecodeCommand, RefusesADeploymentTheKernelsCannotServe) {
  const CommandResult result = run("--device cpu --tp 3");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("decode_backend \"auto\" runs the stock decode"));
}

// One rank of TP 8 alone, as one rank's kernels are timed on one GPU: it runs, and both the first
// line and the executor's line say that the other ranks' partial sums are stood in.
TEST(DecodeCommand, OneRankOfTp8RunsAloneAndSaysTheOtherRanksAreStoodIn) {
  const CommandResult result = run("--device cpu --tp 8 --rank 0 --steps 1 --seed 2");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: k3-tiny, TP 8 rank 0 alone (the other "
                                       "ranks' partial sums stood in by zero)"));
  EXPECT_THAT(result.output, HasSubstr("; TP 8 rank 0 alone: the other ranks' partial sums are "
                                       "stood in by zero in every reduction\n"));
  EXPECT_THAT(result.output,
              HasSubstr("step 1: width 4, 2 requests (0 padded): kernels for 12 of 13 layers"));
}

// --mpi takes the rank and the TP size from MPI's world (decode_command_mpi_test.sh runs two
// processes); outside mpirun the world is this process alone.
TEST(DecodeCommand, MpiTakesTheRankAndTheTpSizeFromTheWorld) {
  CommandResult result = run("--mpi --rank 1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --rank with --mpi: the rank is the "
                                       "process's MPI world rank; leave --rank out"));
  result = run("--mpi --tp 2 --device cpu");
  EXPECT_EQ(result.status, 1) << result.output;
  if (absl::StrContains(result.output, "this build of monotile has no MPI"))
    GTEST_SKIP() << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr("monotile decode: --tp 2 with --mpi in a world of 1 process: expected --tp 1, "
                "one rank a process; hint: mpirun -np 2 monotile decode --mpi ..., or leave "
                "--tp out"));
}

TEST(DecodeCommand, RefusesMisuse) {
  CommandResult result = run("--device tpu");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--device tpu: expected cpu or gpu; hint:"));
  result = run("--steps many");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --steps many: expected an integer"));
  result = run("--seed=-3");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("monotile decode: --seed=-3: expected a non-negative integer"));
  result = run("--q 0");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --q 0: expected a positive integer"));
  result = run("--requests=0");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("monotile decode: --requests 0: expected a positive integer"));
  result = run("--steps -1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("monotile decode: --steps -1: expected a non-negative integer"));
  result = run("--tp");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr(
          "monotile decode: --tp needs a value; hint: monotile decode --help lists its options"));
  result = run("layer1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: takes options only, got \"layer1\""));
}

TEST(DecodeCommand, RefusesAnOptionOfAnotherCommand) {
  // --bundle is monotile warmup's.
  CommandResult result = run("--bundle /tmp");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: unknown option --bundle; hint: monotile "
                                       "decode --help lists its options"));
  // --dir is monotile cache's.
  result = run("--dir /tmp");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr(
          "monotile decode: unknown option --dir; hint: monotile decode --help lists its options"));
}

// Every line of `output` that holds a digest, in order.
std::vector<std::string> digests(const std::string& output) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StrContains(line, "digest")) lines.emplace_back(line);
  }
  return lines;
}

TEST(DecodeCommand, GraphReplaysWriteWhatEagerStepsWrite) {
  // The CPU's default stand-ins are the float64 reference: host work the graphs are cut around.
  const CommandResult eager = run("--device cpu --steps 3 --seed 4");
  ASSERT_EQ(eager.status, 0) << eager.output;
  const CommandResult graph = run("--device cpu --steps 3 --seed 4 --graph");
  ASSERT_EQ(graph.status, 0) << graph.output;
  EXPECT_THAT(
      graph.output,
      HasSubstr("step 1: width 4, 2 requests (0 padded): kernels for 12 of 13 layers\n"
                "  graph: captured width 4's step as 4 graphs around 4 pieces of host work, "
                "which no graph can hold: the stand-ins run by the float64 reference on the CPU"));
  // The replayed step 2 pads its last request.
  EXPECT_THAT(
      graph.output,
      HasSubstr("step 2: width 4, 2 requests (1 padded): kernels for 12 of 13 layers\n"
                "  graph: replayed width 4's step (4 graphs and 4 pieces of host work), new "
                "metadata in the same buffers"));
  EXPECT_THAT(graph.output,
              HasSubstr("step 3: width 4, 2 requests (0 padded): kernels for 12 of 13 layers\n"
                        "  graph: replayed width 4's step"));
  EXPECT_THAT(graph.output,
              HasSubstr("step 4: width 4, 2 requests: the host's layers (not pure decode)"));
  EXPECT_THAT(graph.output, HasSubstr("the whole step replayed: "));
  const std::vector<std::string> want = digests(eager.output), got = digests(graph.output);
  ASSERT_EQ(want.size(), 4u) << eager.output;  // three steps' outputs, the caches after them
  EXPECT_EQ(got, want) << "eager:\n" << eager.output << "\ngraph:\n" << graph.output;
}

TEST(DecodeCommand, GraphOfDslStandinsIsOneGraphPerWidth) {
  const CommandResult eager = run("--device cpu --steps 2 --seed 6 --standins kernels");
  ASSERT_EQ(eager.status, 0) << eager.output;
  const CommandResult graph = run("--device cpu --steps 2 --seed 6 --standins kernels --graph");
  ASSERT_EQ(graph.status, 0) << graph.output;
  EXPECT_THAT(
      graph.output,
      HasSubstr(
          "graph: captured width 4's step as 1 graph: every launch of every layer on one stream"));
  EXPECT_THAT(
      graph.output,
      HasSubstr("step 2: width 4, 2 requests (1 padded): kernels for 12 of 13 layers\n"
                "  graph: replayed width 4's step (1 graphs), new metadata in the same buffers"));
  const std::vector<std::string> want = digests(eager.output), got = digests(graph.output);
  ASSERT_EQ(want.size(), 3u) << eager.output;
  EXPECT_EQ(got, want) << "eager:\n" << eager.output << "\ngraph:\n" << graph.output;
}

TEST(DecodeCommand, GraphChecksEveryServedLayer) {
  const CommandResult result = run("--device cpu --steps 2 --seed 3 --graph --check");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr("graph: captured width 4's step as 15 graphs around 28 pieces of host work, "
                "which no graph can hold: --check's reads and checks"));
  EXPECT_THAT(result.output,
              HasSubstr("graph: replayed width 4's step (15 graphs and 28 pieces of host work)"));
  EXPECT_THAT(result.output, HasSubstr("    1  KDA: kernels K1 + K2"));
  EXPECT_THAT(result.output,
              HasSubstr("every served layer passes its check against the float64 reference"));
}

TEST(DecodeCommand, AliasedDeviceWeightsPassTheCheck) {
  const CommandResult result = run("--device cpu --steps 1 --seed 5 --alias-weights --check");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr("weights: random on the device (seed 5), one layer per kind aliased across 13 "
                "layers: 3 kinds,"));
  EXPECT_THAT(result.output,
              HasSubstr("every served layer passes its check against the float64 reference"));
  EXPECT_THAT(
      result.output,
      HasSubstr("(the reference reads the weights the device made: each kind's layer copied "
                "back once)"));
}

// K1 and K2 built for dependent launch (on the interpreter both ops do nothing): every served layer
// still passes its check.
TEST(DecodeCommand, DependentLaunchPassesTheCheck) {
  const CommandResult result = run("--device cpu --steps 1 --seed 7 --dependent-launch --check");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("every served layer passes its check against the float64 reference"));
}

// K1 with its linear in_proj at every width that takes it (k3-tiny: all of them): the construction
// line names the widths, and each served KDA layer passes against the reference of that form's
// rounding points (against vLLM's, about half of proj's values land an ulp apart and the conv
// state's check fails).
TEST(DecodeCommand, K1LinearInProjPassesTheCheckOfItsRoundingPoints) {
  const CommandResult result = run("--device cpu --steps 1 --seed 7 --k1-linear --check");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("; K1's linear in_proj at widths 2,4,6,8,10,12,14,16"));
  EXPECT_THAT(result.output,
              HasSubstr("every served layer passes its check against the float64 reference"));
}

TEST(DecodeCommand, RefusesAliasedWeightsForACheckpoint) {
  const std::string dir =
      ::testing::TempDir() + "/monotile_decode_alias_" + std::to_string(getpid());
  const CommandResult tiny = monotile::testing::run_command(
      absl::StrCat(MONOTILE_BINARY, " model tiny --out ", dir, " 2>&1"));
  ASSERT_EQ(tiny.status, 0) << tiny.output;
  const CommandResult result = run(absl::StrCat("--device cpu --model ", dir, " --alias-weights"));
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr(absl::StrCat("--alias-weights with --model ", dir,
                             ": a checkpoint folder's weights are its own; expected an embedded "
                             "config (k3-tiny or k3), whose weights are random; hint:")));
  std::filesystem::remove_all(dir);
}

// Rank `rank`'s step digests in order, from a run of ranks exchanging at TP 2.
std::vector<std::string> rank_digests(const std::string& output, int rank) {
  const std::string mark = absl::StrCat(
      "  output digest (prefix, blocks, the last layer's output), TP 2 rank ", rank, ": ");
  std::vector<std::string> digests;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StartsWith(line, mark)) digests.emplace_back(line.substr(mark.size()));
  }
  return digests;
}

// --fork: TP 2 as two processes exchanging their partial sums (no MPI needed). Both ranks pass
// every layer's check against the reference over both ranks (TP 1's layer), print the same digest
// at every step and write the same outputs.
TEST(DecodeCommand, ForkedRanksAgreeBitForBitAndPassTheirChecks) {
  const std::string path =
      ::testing::TempDir() + "/monotile_decode_fork_" + std::to_string(getpid());
  const CommandResult result =
      run("--fork --device cpu --steps 2 --seed 3 --check --outputs " + path);
  ASSERT_EQ(result.status, 0) << result.output;
  for (int rank : {0, 1}) {
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat("monotile decode: k3-tiny, TP 2 rank ", rank,
                                       " (a process forked with the other rank) exchanging partial "
                                       "sums with the other ranks")));
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat(
                                   "TP 2 rank ", rank,
                                   ": K2 exchanges partial sums over the group's peer buffers")));
  }
  EXPECT_THAT(result.output, Not(HasSubstr("stood in")));
  const std::vector<std::string> lines = absl::StrSplit(result.output, '\n');
  EXPECT_EQ(std::count(lines.begin(), lines.end(),
                       "every served layer passes its check against the float64 reference"),
            2)
      << "expected both ranks to pass:\n"
      << result.output;
  const std::vector<std::string> rank0 = rank_digests(result.output, 0);
  EXPECT_EQ(rank0.size(), 2u) << result.output;
  EXPECT_EQ(rank_digests(result.output, 1), rank0);
  std::ifstream a(path + ".rank0", std::ios::binary), b(path + ".rank1", std::ios::binary);
  const std::string bytes0((std::istreambuf_iterator<char>(a)), {}),
      bytes1((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(bytes0.size(), 4u * 256 * (2 + 2) * 2);
  EXPECT_TRUE(bytes0 == bytes1) << "the ranks' outputs differ";
  std::filesystem::remove(path + ".rank0");
  std::filesystem::remove(path + ".rank1");
}

TEST(DecodeCommand, ForkRefusesMisuse) {
  CommandResult result = run("--fork --mpi");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --fork with --mpi: the ranks are either "
                                       "forked here or MPI's; choose one"));
  result = run("--fork --rank 1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr(
          "monotile decode: --rank with --fork: both ranks run, one a process; leave --rank out"));
  result = run("--fork --tp 4");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr("monotile decode: --tp 4 with --fork: expected --tp 2 (two processes), or leave "
                "--tp out; hint: mpirun -np 4 monotile decode --mpi for other sizes"));
}

TEST(DecodeCommand, GpuIndexRefusesMisuse) {
  CommandResult result = run("--gpu-index=-1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --gpu-index -1: expected a GPU's index, 0 "
                                       "or more; hint: `monotile devices` lists this machine's "
                                       "GPUs"));
  result = run("--gpu-index 0 --device cpu");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr("monotile decode: --gpu-index 0 with --device cpu: expected --device gpu or "
                "no --device; hint: the CPU interpreter is one device, leave --gpu-index "
                "out"));
}

// A GPU beyond this machine's: out of range where there are GPUs, and none found where there are
// none (as --device gpu says); either way before any work.
TEST(DecodeCommand, GpuIndexBeyondThisMachinesGpusIsRefused) {
  CommandResult result = run("--gpu-index 99 --steps 1");
  EXPECT_EQ(result.status, 1) << result.output;
  if (result.output.find("no GPU device found") != std::string::npos) {
    EXPECT_THAT(result.output, HasSubstr("monotile decode: --gpu-index 99: no GPU device found ("));
    EXPECT_THAT(result.output,
                HasSubstr("); hint: --device cpu runs the kernels on the CPU interpreter"));
  } else {
    EXPECT_THAT(result.output, HasSubstr("monotile decode: --gpu-index 99: expected 0 to "));
    EXPECT_THAT(result.output, HasSubstr("; hint: `monotile devices` lists them, and without "
                                         "--gpu-index each rank takes GPU (local rank % GPUs)"));
  }
  EXPECT_THAT(result.output, Not(HasSubstr("step 1")));
}

// --outputs: the last served step's outputs, the bytes its digest is of; a file that cannot be
// written is refused before any work.
TEST(DecodeCommand, OutputsWritesTheLastServedStepsBytes) {
  const std::string path =
      ::testing::TempDir() + "/monotile_decode_outputs_" + std::to_string(getpid());
  CommandResult result = run("--device cpu --steps 1 --outputs " + path);
  EXPECT_EQ(result.status, 0) << result.output;
  // k3-tiny at width 4 (H 256, 2 AttnRes blocks): prefix [4, H], blocks [4, 2, H] and the last
  // layer's output [4, H], bf16.
  EXPECT_EQ(std::filesystem::file_size(path), 4u * 256 * (2 + 2) * 2) << result.output;
  std::filesystem::remove(path);
  result = run("--device cpu --outputs /nonexistent-folder/outputs");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr(
          "monotile decode: --outputs /nonexistent-folder/outputs: cannot write: No such file or "
          "directory; hint: a writable file in an existing folder"));
  EXPECT_THAT(result.output, Not(HasSubstr("step 1")));
}

TEST(DecodeCommand, HelpPrintsTheUsage) {
  const CommandResult result = run("--help");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("usage: monotile decode [--model k3-tiny|k3|DIR]"));
}

}  // namespace
}  // namespace monotile::tools
