// `monotile decode` on a GPU: --graph replays write what eager steps write (the DSL stand-ins make
// a width's step one graph), weights made on the device and aliased pass --check under --graph,
// and one K3 rank at TP 8 runs whole on one GPU with its weights aliased, timed against its
// floors; TP 2 as two forked processes on one GPU (--fork). Skips, with discovery's reason, without
// a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/testing/command.h"
#include "tools/gpu_command_test.h"

namespace monotile::tools {
namespace {

using monotile::testing::CommandResult;
using ::testing::HasSubstr;

CommandResult run(const std::string& args) {
  return monotile::testing::run_command(
      absl::StrCat(MONOTILE_BINARY, " decode --device gpu ", args, " 2>&1"));
}

std::vector<std::string> digests(const std::string& output) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StrContains(line, "digest")) lines.emplace_back(line);
  }
  return lines;
}

class DecodeCommandGpu : public GpuCommandTest {};

TEST_F(DecodeCommandGpu, GraphReplaysWriteWhatEagerStepsWrite) {
  const CommandResult eager = run("--steps 3 --seed 4");
  ASSERT_EQ(eager.status, 0) << eager.output;
  const CommandResult graph = run("--steps 3 --seed 4 --graph");
  ASSERT_EQ(graph.status, 0) << graph.output;
  EXPECT_THAT(
      graph.output,
      HasSubstr("graph: captured width 4's step as 1 graph: every launch of every layer on one "
                "stream"));
  EXPECT_THAT(graph.output,
              HasSubstr("step 2: width 4, 2 requests (1 padded): kernels for 12 of 13 layers\n"
                        "  graph: replayed width 4's step (1 graphs)"));
  EXPECT_THAT(graph.output, HasSubstr("the sum of the layer floors"));
  const std::vector<std::string> want = digests(eager.output), got = digests(graph.output);
  ASSERT_EQ(want.size(), 4u) << eager.output;
  EXPECT_EQ(got, want) << "eager:\n" << eager.output << "\ngraph:\n" << graph.output;
}

TEST_F(DecodeCommandGpu, AliasedWeightsPassTheCheckUnderGraphs) {
  const CommandResult result = run("--steps 2 --seed 5 --alias-weights --graph --check");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("weights: random on the device (seed 5), one layer per kind aliased"));
  EXPECT_THAT(result.output,
              HasSubstr("every served layer passes its check against the float64 reference"));
}

// TP 2 on one GPU, the ranks two processes forked by the command: each passes every layer's check
// against the reference over both ranks, eagerly and with graphs, and the ranks print the same
// digests, the graph run the eager run's.
TEST_F(DecodeCommandGpu, ForkedRanksAtTp2AgreeAndPassTheirChecks) {
  const CommandResult checked = run("--fork --steps 2 --seed 3 --check");
  ASSERT_EQ(checked.status, 0) << checked.output;
  const std::vector<std::string> lines = absl::StrSplit(checked.output, '\n');
  EXPECT_EQ(std::count(lines.begin(), lines.end(),
                       "every served layer passes its check against the float64 reference"),
            2)
      << checked.output;
  const CommandResult eager = run("--fork --steps 3 --seed 4");
  ASSERT_EQ(eager.status, 0) << eager.output;
  const CommandResult graph = run("--fork --steps 3 --seed 4 --graph");
  ASSERT_EQ(graph.status, 0) << graph.output;
  std::vector<std::string> want = digests(eager.output), got = digests(graph.output);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want) << "eager:\n" << eager.output << "\ngraph:\n" << graph.output;
  // Each step's digest twice, once a rank (the ranks' lines differ only in the rank).
  std::vector<std::string> values;
  for (const std::string& line : want) {
    if (absl::StrContains(line, "output digest"))
      values.push_back(line.substr(line.rfind(' ') + 1));
  }
  std::sort(values.begin(), values.end());
  ASSERT_EQ(values.size(), 6u) << eager.output;
  for (size_t i = 0; i < values.size(); i += 2) EXPECT_EQ(values[i], values[i + 1]) << eager.output;
}

TEST_F(DecodeCommandGpu, OneK3RankRunsWholeOnOneGpu) {
  const CommandResult result = run("--model k3 --tp 8 --rank 0 --steps 2 --graph");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("TP 8 rank 0 alone (the other ranks' partial sums stood in by zero)"));
  EXPECT_THAT(result.output, HasSubstr("one layer of each kind is made and aliased"));
  EXPECT_THAT(result.output, HasSubstr("one layer per kind aliased across 93 layers: 3 kinds"));
  EXPECT_THAT(result.output, HasSubstr("graph: captured width 4's step as 1 graph"));
  EXPECT_THAT(result.output, HasSubstr("the whole step replayed: "));
}

}  // namespace
}  // namespace monotile::tools
