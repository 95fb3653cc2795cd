// K2's stages compile for every target at the builds the executor and the tests use, with no spills
// and no scratch memory anywhere (on AMD, SGPRs kept in VGPR lanes are held under a bound): K3's KDA layers at TP 1, 2 and 8, and k3-tiny's KDA, MLA
// and block-write layers at TP 1 and 2 over widths from 1 to 16 (a build is one test, so CTest
// spreads them over the cores). The resources are printed for docs/perf.md. gfx942 skips where this
// machine's hiprtc cannot build it (the GPU machine's can).
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/compiler.h"
#include "jit/program_build.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "model/config.h"

namespace monotile::kernels::k3 {
namespace {

// The most SGPRs any AMD build kept in VGPR lanes (gfx90a with hiprtc 5.2), rounded up: 109, K3
// TP 8 exchanging at T 4 (102 before the layer's blocks became arguments, k2.h; k3-tiny TP 2's
// block-write layer at T 6 105, was 94; no VGPR spilled, no scratch). Earlier 103, k3-tiny at T 8,
// since sigmoid keeps e^-|x| for its x < 0 side; 93 before that.
constexpr int kAmdSgprSpillBound = 112;

// A layer's K2 on one rank at one width, as the executor builds it (runtime/decode/executor_builds.cpp:
// o_proj's input is the KDA projection, or the MLA heads' values).
struct K2Shape {
  std::string model;
  int tp = 1;
  int layer = 1;
  int tokens = 4;
  bool fault = false;  // with the fault hook (K2Build::fault_ns), as a fail-stop test builds it
  bool clock = false;  // the stage_clock build (K2Build::stage_clock), as k2_bench --clock builds it
  int stages = 0;  // K2Build::expert_stages (stage H through shared memory)
  int stage_steps = 1;  // K2Build::expert_stage_steps (stage H's K steps a stage copies)
  bool codes = false;   // K2Build::expert_codes_ahead (the staged loops' codes an iteration ahead)
  int fetch = 0;        // K2Build::expert_stage_fetch (L2's fetch around the staged copies)
  int task_loop = 0;    // K2Build::expert_task_loop (H's first tasks a program as one staged loop)
  int first_fetch = 0;  // K2Build::expert_first_fetch (H's first task's rows asked of L2 at the union)
  bool up_ahead = false;  // K2Build::up_ahead (W_up asked of L2 before H's waits)
  bool exchange = false;  // rank 1 of tp exchanging over the peer buffers (K2Build::tp, PeerExchange)
  bool pdl = false;       // K2Build::dependent_launch, as the executor builds it with dependent launch on
};

std::string shape_name(const K2Shape& s) {
  std::string model = s.model == "k3" ? "k3" : "tiny";
  return absl::StrCat(model, "_tp", s.tp, "_l", s.layer, "_t", s.tokens, s.fault ? "_fault" : "",
                      s.clock ? "_clock" : "", s.stages != 0 ? absl::StrCat("_staged", s.stages) : "",
                      s.stage_steps != 1 ? absl::StrCat("_w", s.stage_steps) : "", s.codes ? "_codes" : "",
                      s.fetch != 0 ? absl::StrCat("_fetch", s.fetch) : "",
                      s.task_loop != 0 ? absl::StrCat("_loop", s.task_loop) : "",
                      s.first_fetch != 0 ? absl::StrCat("_first", s.first_fetch) : "", s.up_ahead ? "_up" : "",
                      s.exchange ? "_exchange" : "",
                      s.pdl ? "_pdl" : "");
}

K2Build build_of(const K2Shape& s) {
  model::ModelConfig config = *model::load_config(s.model);
  model::RankDims dims = *model::rank_dims(config, s.tp, s.exchange ? 1 : 0);
  const bool kda = config.served_kind(s.layer) == model::ServedKind::kWhole;
  const int64_t core = kda ? dims.kda_projection : int64_t{dims.mla_heads} * config.v_head_dim;
  absl::StatusOr<K2Build> made = k2_build(config, dims, s.layer, static_cast<int>(core), s.tokens);
  EXPECT_TRUE(made.ok()) << made.status();
  if (!made.ok()) return K2Build{};
  K2Build build = *made;
  if (s.fault) {
    build.fault_epoch = 1;
    build.fault_layer = 128 + s.layer;
    build.fault_ns = 1'000'000'000;
  }
  build.stage_clock = s.clock;
  build.dependent_launch = s.pdl;
  if (s.exchange) {
    build.tp = s.tp;
    build.rank = 1;
  }
  return build;
}

// K3: KDA layer 13 at T 4 and 16 on TP 1, 2 and 8 (TP 8 also exchanging across ranks), the
// block-write layer 12 at TP 8, and TP 8 T 16
// with the fault hook and with the stage clock (the experts' loads 1, 3 or 4 steps ahead instead of
// 2, k2_bench --ahead's variants, spill at 16 tokens on sm_90a). k3-tiny: KDA layer 1 (the interpreter's widths 1, 4, 8 and 16), the
// block-write layer 12 (KDA, width 6 as the tests), MLA layer 3, each at TP 1 and some at TP 2.
// Widths share code by their padded width (8 or 16) but not their registers, so the tests' own
// widths are each here, and k3-tiny at 10 and 13 tokens: at 9 to 15 (masked token rows, 16 wide)
// its K2 once spilled on sm_90a at every layer kind (docs/perf.md).
std::vector<K2Shape> shapes() {
  std::vector<K2Shape> out;
  for (int tp : {8, 1, 2}) {
    for (int tokens : {4, 16}) out.push_back({.model = "k3", .tp = tp, .layer = 13, .tokens = tokens});
  }
  // K3 TP 8 at 2 and 8 tokens: the AttnRes chunk follows the width (attn_res_chunk; 56 chunks of 128
  // at 2 tokens once spilled), and up to 8 the experts' GEMVs are 8 token rows wide.
  for (int tokens : {2, 8}) out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = tokens});
  out.push_back({.model = "k3", .tp = 8, .layer = 12, .tokens = 8});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 16, .fault = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 16, .clock = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .clock = true});  // K2Gpu's clock case
  // Stage H through 4 shared-memory stages at 8 tokens too, as K2Gpu's staged case.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .stages = 4});
  // Stage H's stages each copying 2 K steps (128 bytes of a row a copy: 32 KB of weights in flight
  // a program at 3 stages, 48 KB at 4), k2_bench --expert-stage-steps' builds at 4 and 8 tokens.
  for (int tokens : {4, 8}) {
    for (int stages : {3, 4}) {
      out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = tokens, .stages = stages, .stage_steps = 2});
    }
  }
  // And of 4 K steps (256 bytes of a row a stage: 32-64 KB of weights in flight a program at 3
  // stages, 64-96 KB at 4; 139520 to 196864 B of shared memory on sm_90a), k2_bench
  // --expert-stage-steps 4's builds.
  for (auto [tokens, stages] : {std::pair{4, 3}, std::pair{4, 4}, std::pair{8, 4}}) {
    out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = tokens, .stages = stages, .stage_steps = 4});
  }
  // The staged loops' codes an iteration ahead (k2_bench --expert-codes-ahead): I's alone at T 4, with
  // H's stages of two steps at T 8, with H's and I's default stages at T 16.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .codes = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .stages = 4, .stage_steps = 2, .codes = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 16, .codes = true});
  // The staged copies asking L2 for 256 bytes around them (k2_bench --expert-stage-fetch): I's alone
  // at T 4, with H's stages of two steps and the codes ahead at T 8.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .fetch = 256});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .stages = 4, .stage_steps = 2, .codes = true, .fetch = 256});
  // Each program's first H tasks as one staged loop (k2_bench --expert-task-loop): T 4 with stages
  // of 4 steps, the codes ahead and the fetch; T 16 with its default stages.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .stages = 4, .stage_steps = 4, .codes = true,
                 .fetch = 256, .task_loop = 3});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 16, .task_loop = 10});
  // The first H task's rows asked of L2 at the union (k2_bench --expert-first-fetch) and W_up before
  // H's waits (--up-ahead) at T 4.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .first_fetch = 28, .up_ahead = true});
  for (int tokens : {1, 4, 8, 10, 16}) out.push_back({.model = "k3-tiny", .tp = 1, .layer = 1, .tokens = tokens});
  out.push_back({.model = "k3-tiny", .tp = 1, .layer = 3, .tokens = 13});
  out.push_back({.model = "k3-tiny", .tp = 1, .layer = 12, .tokens = 6});
  for (int tokens : {4, 16}) out.push_back({.model = "k3-tiny", .tp = 1, .layer = 3, .tokens = tokens});
  for (int tokens : {4, 8, 16}) out.push_back({.model = "k3-tiny", .tp = 2, .layer = 1, .tokens = tokens});
  out.push_back({.model = "k3-tiny", .tp = 2, .layer = 3, .tokens = 16});
  out.push_back({.model = "k3-tiny", .tp = 2, .layer = 12, .tokens = 6});
  // The reductions across ranks (PeerExchange): K3 TP 8 at 4 and 16 tokens (16 on NVIDIA only),
  // k3-tiny TP 2.
  for (int tokens : {4, 16}) out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = tokens, .exchange = true});
  out.push_back({.model = "k3-tiny", .tp = 2, .layer = 1, .tokens = 4, .exchange = true});
  // Dependent launch (W_o's and W_gate's prefetches before the wait): K3 TP 8 at 4 tokens, 255 registers.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .pdl = true});
  return out;
}

struct K2Target {
  std::string arch;
  K2Shape shape;
};

void PrintTo(const K2Target& t, std::ostream* os) { *os << t.arch << " " << shape_name(t.shape); }

class K2Compile : public ::testing::TestWithParam<K2Target> {};

TEST_P(K2Compile, FitsTheTarget) {
  const std::string& arch = GetParam().arch;
  dsl::Target target = *dsl::Target::parse(arch);
  if (GetParam().shape.exchange && GetParam().shape.tokens > 8 && target.vendor() == dsl::Vendor::kAmd) {
    // Measured on gfx90a (hiprtc 5.2): 432 VGPRs and 154 SGPRs in VGPR lanes, over the bound below.
    GTEST_SKIP() << "K2 exchanging across ranks past 8 tokens is not yet fitted to AMD's registers";
  }
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << arch << ": " << compiler.status();
  K2Build build = k2_for_target(build_of(GetParam().shape), target);
  if (GetParam().shape.stages != 0) build.expert_stages = GetParam().shape.stages;
  build.expert_stage_steps = GetParam().shape.stage_steps;
  if (GetParam().shape.codes && build.expert_stages == 0 && build.routed_stages == 0) {
    GTEST_SKIP() << arch << "'s K2 stages neither H nor I: the codes ahead have no loop to go in (k2_program refuses them)";
  }
  build.expert_codes_ahead = GetParam().shape.codes;
  if (GetParam().shape.fetch != 0 && build.expert_stages == 0 && build.routed_stages == 0) {
    GTEST_SKIP() << arch << "'s K2 stages neither H nor I: the fetch has no copies to go on (k2_program refuses it)";
  }
  build.expert_stage_fetch = GetParam().shape.fetch;
  if (GetParam().shape.task_loop != 0 && build.expert_stages == 0) {
    GTEST_SKIP() << arch << "'s K2 does not stage H: one loop over its tasks is its staged loop's (k2_program refuses it)";
  }
  build.expert_task_loop = GetParam().shape.task_loop;
  build.expert_first_fetch = GetParam().shape.first_fetch;
  build.up_ahead = GetParam().shape.up_ahead;
  SCOPED_TRACE(k2_name(build));
  absl::StatusOr<jit::ProgramBuild> made = jit::make_build(k2_program(build), target);
  ASSERT_TRUE(made.ok()) << made.status();
  std::vector<std::string> names;
  for (const dsl::lower::KernelParam& param : made->params) names.push_back(param.name);
  EXPECT_EQ(names, k2_parameters(build));
  if (target.vendor() == dsl::Vendor::kNvidia) {
    // The staged copies take the fetch asked for, and only they.
    const std::string fetched = absl::StrCat("_l2_", build.expert_stage_fetch, "(mt_stage");
    EXPECT_EQ(made->build.source.find(fetched) != std::string::npos, build.expert_stage_fetch != 0);
    // H's and I's loops where staged (each twice: the decode at one multiply a word, and the exact one).
    // A loop copies each K step's words and x: H's stages copy expert_stage_steps steps.
    auto staged_loops = [&](std::pair<int, int> stages_loads) {
      const std::string staged =
          absl::StrCat("0 dot(s) and ", stages_loads.second, " load(s) pipelined over ", stages_loads.first, " stages");
      int loops = 0;
      for (size_t at = made->build.source.find(staged); at != std::string::npos; at = made->build.source.find(staged, at + 1)) {
        ++loops;
      }
      return loops;
    };
    std::map<std::pair<int, int>, int> expected;  // (stages, loads) -> loops
    // With expert_task_loop H has one more: its tasks' loop (whose exact decode is a register pipeline)
    // before the two of the tasks past it.
    if (build.expert_stages != 0) {
      expected[{build.expert_stages, 2 * build.expert_stage_steps}] += build.expert_task_loop != 0 ? 3 : 2;
    }
    if (build.routed_stages != 0) expected[{build.routed_stages, 2}] += 2;
    for (auto [stages_loads, loops] : expected) {
      EXPECT_EQ(staged_loops(stages_loads), loops) << stages_loads.first << " stages, " << stages_loads.second << " loads";
    }
  }
  absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
  if (!result.ok() && arch == "gfx942" && absl::IsUnimplemented(result.status())) {
    GTEST_SKIP() << "this hiprtc cannot build gfx942: " << result.status();
  }
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->report.stack_frame, 0) << "scratch memory";
  // No spilled bytes on NVIDIA, no spilled VGPRs on AMD. AMD keeps SGPRs past its 102 in VGPR lanes
  // (no memory traffic; resource_report.h): K2's 43 arguments alone take about 87, so some stay
  // there; held under the measured worst.
  EXPECT_EQ(result->report.spill_stores, 0);
  EXPECT_EQ(result->report.spill_loads, 0);
  EXPECT_LE(result->report.sgpr_spills, kAmdSgprSpillBound);
  std::cout << "resources " << arch << " " << shape_name(GetParam().shape) << " " << k2_name(build) << ": registers "
            << result->report.registers << ", shared " << result->report.shared_memory + made->build.launch.dynamic_shared_memory
            << " B, spills " << result->report.spill_stores << ", sgpr spills " << result->report.sgpr_spills
            << ", stack " << result->report.stack_frame << "\n";
}

std::vector<K2Target> targets(const std::string& arch) {
  std::vector<K2Target> out;
  for (const K2Shape& shape : shapes()) out.push_back({arch, shape});
  return out;
}

std::string target_name(const ::testing::TestParamInfo<K2Target>& info) { return shape_name(info.param.shape); }

INSTANTIATE_TEST_SUITE_P(Sm90a, K2Compile, ::testing::ValuesIn(targets("sm_90a")), target_name);
INSTANTIATE_TEST_SUITE_P(Gfx90a, K2Compile, ::testing::ValuesIn(targets("gfx90a")), target_name);
INSTANTIATE_TEST_SUITE_P(Gfx942, K2Compile, ::testing::ValuesIn(targets("gfx942")), target_name);

// The routed experts' MXFP4 GEMVs at K3's TP 8 shapes: w13 (768 rows, K = 3584) and w2 (3584 rows,
// K = 384), 16 tokens, 128-wide K steps (384 is not a multiple of 256).
void expect_mxfp4_compiles(const std::string& arch) {
  dsl::Target target = *dsl::Target::parse(arch);
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << arch << ": " << compiler.status();
  const bool amd = target.vendor() == dsl::Vendor::kAmd;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{768, 3584}, {3584, 384}}) {
    absl::StatusOr<jit::ProgramBuild> made =
        jit::make_build(mxfp4_gemv_program(n, k, 16, amd ? 4 : 8, 128), target);
    ASSERT_TRUE(made.ok()) << made.status();
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
    if (!result.ok() && arch == "gfx942" && absl::IsUnimplemented(result.status())) {
      GTEST_SKIP() << "this hiprtc cannot build gfx942: " << result.status();
    }
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.stack_frame, 0);
    EXPECT_EQ(result->report.spill_stores, 0);
    // Both operands from their registers (mxfp4_gemv.h): no barrier in the K loop, whose two dots
    // take theirs straight from the decode. (The one barrier left orders the task's stores.)
    const std::string& source = made->build.source;
    const size_t first_dot = source.find("// dot ["), last_dot = source.rfind("// dot [");
    ASSERT_NE(first_dot, std::string::npos);
    EXPECT_NE(first_dot, last_dot);
    for (size_t at = first_dot; at != std::string::npos; at = source.find("// dot [", at + 1)) {
      EXPECT_NE(source.substr(at, source.find('\n', at) - at).find("A's fragments from its registers and B's"),
                std::string::npos);
    }
    EXPECT_EQ(source.substr(0, source.find('\n', last_dot)).find("__syncthreads()", source.find("for (")),
              std::string::npos)
        << "a barrier before the K loop's last dot";
    std::cout << "resources " << arch << " mxfp4_gemv n " << n << " k " << k << ": registers "
              << result->report.registers << ", spills " << result->report.spill_stores << "\n";
  }
}

TEST(K2Mxfp4Compile, Sm90a) { expect_mxfp4_compiles("sm_90a"); }

// The GEMV whose words and x come through shared memory (Mxfp4Gemv::stages): its loop copies them
// ahead and reads them back into the dot's operand registers, with no spills.
TEST(K2Mxfp4Compile, StagedSm90a) {
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  for (auto [n, k] : {std::pair<int64_t, int64_t>{768, 3584}, {3584, 384}}) {
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(
        mxfp4_gemv_program(n, k, 4, 8, 128, 2, true, true, 8, false, true, kMxfp4ScaleBias, 0, 0, 4), target);
    ASSERT_TRUE(made.ok()) << made.status();
    const std::string& source = made->build.source;
    EXPECT_NE(source.find("0 dot(s) and 2 load(s) pipelined over 4 stages"), std::string::npos);
    EXPECT_NE(source.find("// load from the pipeline's stage (128 x 16)"), std::string::npos);
    EXPECT_NE(source.find("A's fragments from its registers and B's"), std::string::npos);
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.stack_frame, 0);
    EXPECT_EQ(result->report.spill_stores, 0);
    std::cout << "resources sm_90a staged mxfp4_gemv n " << n << " k " << k << ": registers "
              << result->report.registers << ", shared " << made->build.launch.dynamic_shared_memory << " B\n";
  }
}
// Stages of two K steps (Mxfp4Gemv::stage_steps, K2Build::expert_stage_steps): 20 KB a stage (16 KB
// of words, 4 KB of x), four staged loads a loop, and each dot still 128 wide with its operands in
// registers (a dot over the stage's 256 would take them through shared memory), no spills.
TEST(K2Mxfp4Compile, StagesOfTwoStepsSm90a) {
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  // 4 stages with L2 fetching 256 bytes around each copy of the words (mxfp4_bench --stage-fetch),
  // and a program's tasks as one loop with the codes ahead (mxfp4_bench --task-loop).
  struct Row {
    int stages, fetch;
    bool task_loop;
  };
  for (auto [stages, fetch, task_loop] : {Row{3, 0, false}, Row{4, 0, false}, Row{4, 256, false}, Row{4, 0, true}}) {
    absl::StatusOr<jit::ProgramBuild> made =
        jit::make_build(mxfp4_gemv_program(46080, 3584, 4, 8, 128, 2, true, true, 8, false, true, kMxfp4ScaleBias, 0,
                                           fetch, stages, dsl::Mxfp4Placement::kCopies, 2, task_loop, task_loop),
                        target);
    ASSERT_TRUE(made.ok()) << made.status();
    const std::string& source = made->build.source;
    EXPECT_NE(source.find(absl::StrCat("0 dot(s) and 4 load(s) pipelined over ", stages, " stages of 20480 bytes")),
              std::string::npos);
    EXPECT_NE(source.find("// dot [128, 128] x [128, 8]"), std::string::npos);
    EXPECT_EQ(source.find("// dot [128, 256]"), std::string::npos);
    EXPECT_NE(source.find("A's fragments from its registers and B's"), std::string::npos);
    EXPECT_EQ(source.find("_l2_256(mt_stage") != std::string::npos, fetch != 0);
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.stack_frame, 0);
    EXPECT_EQ(result->report.spill_stores, 0);
    std::cout << "resources sm_90a mxfp4_gemv stages " << stages << " of 2 steps, fetch " << fetch
              << (task_loop ? ", tasks as one loop" : "") << ": registers " << result->report.registers
              << ", shared " << made->build.launch.dynamic_shared_memory << " B\n";
  }
}
TEST(K2Mxfp4Compile, Gfx90a) { expect_mxfp4_compiles("gfx90a"); }
TEST(K2Mxfp4Compile, Gfx942) { expect_mxfp4_compiles("gfx942"); }

}  // namespace
}  // namespace monotile::kernels::k3
