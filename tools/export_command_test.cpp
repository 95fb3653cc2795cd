// `monotile export` end to end: the built binary writes <name>.cubin (an ELF) and <name>.json (the
// harness's format, checked field by field) for chosen benchmark kernels; misuse exits 2 with words.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/test_support.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;

using CommandRun = monotile::testing::CommandResult;

CommandRun export_run(const std::string& args, const std::filesystem::path& home) {
  std::string command = "env MONOTILE_CACHE_DIR='" + (home / "cache").string() + "' " MONOTILE_BINARY
                        " export " + args + " 2>&1";
  return monotile::testing::run_command(command);
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ExportCommand, WritesCubinAndJsonPerKernel) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  std::filesystem::path out = dir.path() / "export";
  CommandRun run = export_run("--target sm_90a --jobs 2 --out " + out.string() +
                                  " --only rmsnorm_rows4_h7168,copy_bytes67108864,softmax_rows8192_cols4096",
                              dir.path());
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("exported 3 of 3 kernels for sm_90a into " + out.string()));
  for (const char* name : {"rmsnorm_rows4_h7168", "copy_bytes67108864", "softmax_rows8192_cols4096"}) {
    std::string cubin = read(out / (std::string(name) + ".cubin"));
    ASSERT_GT(cubin.size(), 4u) << name;
    EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF") << name;
  }
  EXPECT_FALSE(std::filesystem::exists(out / "rmsnorm_rows8_h7168.json"));  // not asked for
  EXPECT_EQ(read(out / "rmsnorm_rows4_h7168.json"),
            "{\n"
            "  \"kernel\": \"rmsnorm_rows4_h7168\",\n"
            "  \"block\": [256, 1, 1],\n"
            "  \"shared_bytes\": 32,\n"  // the cross-warp reduction: 8 warps x one f32
            "  \"grid\": [4, 1, 1],\n"
            "  \"params\": [\n"
            "    {\"name\": \"x\", \"type\": \"ptr<bf16>\"},\n"
            "    {\"name\": \"w\", \"type\": \"ptr<bf16>\"},\n"
            "    {\"name\": \"y\", \"type\": \"ptr<bf16>\"},\n"
            "    {\"name\": \"eps\", \"type\": \"f32\"}\n"
            "  ],\n"
            "  \"then\": null\n"
            "}\n");
  std::string copy = read(out / "copy_bytes67108864.json");
  EXPECT_THAT(copy, HasSubstr("\"grid\": [512, 1, 1]"));  // 64 MiB in 128 KiB blocks
  EXPECT_THAT(copy, HasSubstr("{\"name\": \"src\", \"type\": \"ptr<i32>\"},\n"
                              "    {\"name\": \"dst\", \"type\": \"ptr<i32>\"}\n  ]"));
  std::string softmax = read(out / "softmax_rows8192_cols4096.json");
  EXPECT_THAT(softmax, HasSubstr("\"grid\": [8192, 1, 1]"));
  EXPECT_THAT(softmax, HasSubstr("{\"name\": \"y\", \"type\": \"ptr<bf16>\"}\n  ]"));
}

// An AMD target exports HSA code objects, and the printed report carries the wavefront size.
TEST(ExportCommand, WritesCodeObjectsForAmdTargets) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  jit::testing::TempDir dir;
  std::filesystem::path out = dir.path() / "export";
  CommandRun run = export_run("--target gfx90a --out " + out.string() + " --only rmsnorm_rows4_h7168", dir.path());
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("exported 1 of 1 kernels for gfx90a into " + out.string()));
  EXPECT_THAT(run.output, HasSubstr("spill stores 0, spill loads 0"));
  EXPECT_THAT(run.output, HasSubstr("wave 64"));
  const std::string code_object = read(out / "rmsnorm_rows4_h7168.hsaco");
  ASSERT_GT(code_object.size(), 4u);
  EXPECT_EQ(code_object.substr(0, 4), "\x7f" "ELF");
  EXPECT_FALSE(std::filesystem::exists(out / "rmsnorm_rows4_h7168.cubin"));
}

TEST(ExportCommand, SplitKGemvDeclaresItsWorkspaces) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  std::filesystem::path out = dir.path() / "export";
  CommandRun run = export_run("--target sm_90a --out " + out.string() + " --only gemv_m1_k3584_n768", dir.path());
  ASSERT_EQ(run.status, 0) << run.output;
  std::string json = read(out / "gemv_m1_k3584_n768.json");
  EXPECT_THAT(json, HasSubstr("{\"name\": \"gemv_partials\", \"type\": \"ptr<f32>\"},\n"
                              "    {\"name\": \"gemv_counters\", \"type\": \"ptr<i32>\"}\n  ],\n"));
  // N = 768 in 48 row blocks, K split over the grid's second axis: one f32 partial per split, row
  // of x (M = 1) and column of y; one counter per row block.
  const std::string grid = "\"grid\": [48, ";
  ASSERT_THAT(json, HasSubstr(grid));
  const int splits = std::stoi(json.substr(json.find(grid) + grid.size()));
  EXPECT_GT(splits, 1);
  EXPECT_THAT(json, HasSubstr("\"workspace\": [{\"name\": \"gemv_partials\", \"bytes\": " +
                              std::to_string(splits * 768 * 4) + ", \"zero\": \"never\"}, "
                              "{\"name\": \"gemv_counters\", \"bytes\": 192, \"zero\": \"once\"}],\n"
                              "  \"then\": null\n}\n"));
}

TEST(ExportCommand, MisuseSaysWhatIsWrong) {
  jit::testing::TempDir dir;
  std::string out = (dir.path() / "x").string();
  CommandRun no_out = export_run("--target sm_90a", dir.path());
  EXPECT_EQ(no_out.status, 2);
  EXPECT_THAT(no_out.output, HasSubstr("monotile export: --out is required"));
  CommandRun unknown = export_run("--out " + out + " --only rmsnorm_rows5_h7168", dir.path());
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.output, HasSubstr("--only names no benchmark kernel \"rmsnorm_rows5_h7168\"; the kernels are:\n"
                                        "  copy_bytes67108864, copy_bytes1073741824, rmsnorm_rows4_h7168"));
  EXPECT_THAT(unknown.output, ::testing::ContainsRegex("and [0-9]+ labelled variants, named <kernel>__<label>"));
  for (absl::string_view line : absl::StrSplit(unknown.output, '\n')) EXPECT_LE(line.size(), 100u) << line;
  CommandRun bad_target = export_run("--target sm_9x --out " + out, dir.path());
  EXPECT_EQ(bad_target.status, 2);
  EXPECT_THAT(bad_target.output, HasSubstr("sm_9x"));
  CommandRun bad = export_run("--out " + out + " --frobnicate 1", dir.path());
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.output,
              HasSubstr("monotile export: unknown option --frobnicate; hint: monotile export --help lists its options"));
  CommandRun positional = export_run("--out " + out + " sm_90a", dir.path());
  EXPECT_EQ(positional.status, 2);
  EXPECT_THAT(positional.output, HasSubstr("monotile export: takes options only, got \"sm_90a\""));
  CommandRun no_jobs = export_run("--out " + out + " --jobs 0", dir.path());
  EXPECT_EQ(no_jobs.status, 2);
  EXPECT_THAT(no_jobs.output, HasSubstr("--jobs takes a positive integer, got \"0\""));
}

}  // namespace
}  // namespace monotile::tools
