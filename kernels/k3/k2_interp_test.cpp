// K2 on the interpreter against the float64 reference, fresh random inputs and poisoned outputs: a,
// P', y, the route and the MoE output m, at widths 1..16, ordinary and block-write layers, fewer and
// more programs than tasks, K3's TP 8 rank shapes (every row on the same 16 experts, so that only
// their MXFP4 bytes need to exist), routers with exact ties and NaN scores, and top-k 1, 6, 12 and
// 16 (and 6 of 40 experts, and top-k 6 to 80 of 200 experts in 4 blocks); then launches whose waits give up (the fault hook, K2Build::fault_ns): they end, record it,
// and address nothing out of bounds (the interpreter refuses such an access); and the stage clock
// build (K2Build::stage_clock), which writes what the plain build writes and a clock that runs
// forward.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dsl/error.h"
#include "dsl/printer.h"
#include "dsl/target.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/k2_test_support.h"
#include "kernels/k3/router_stage.h"
#include "model/config.h"
#include "tests/conformance/interpreter_executor.h"

namespace monotile::kernels::k3 {
namespace {

class K2Interp : public ::testing::TestWithParam<K2Case> {};

TEST_P(K2Interp, MatchesTheReference) {
  conformance::InterpreterExecutor executor;
  run_k2_case(GetParam(), executor);
}

std::vector<K2Case> cases() {
  std::vector<K2Case> out;
  for (int tokens : {1, 4, 16}) out.push_back({.tokens = tokens});
  out.push_back({.layer = 12, .tokens = 6});                // block-write layer: the prefix restarts at a
  out.push_back({.layer = 5, .tokens = 8, .programs = 3});  // fewer programs than tasks
  out.push_back({.tokens = 4, .programs = 64});             // more programs than tasks
  // The experts' GEMVs asking L2 for their weights 2 steps past their loads: the last steps of a
  // task (and of the routed sum's last expert) ask for the last step again, inside the weights.
  out.push_back({.tokens = 4, .programs = 3, .prefetch_steps = 2});
  // Stage I over 3 union chunks (a chunk of 22 of k3-tiny's 64 slots at T 16) and over one.
  out.push_back({.tokens = 16, .routed_chunks = 3});
  out.push_back({.tokens = 4, .programs = 64, .routed_chunks = 1});
  // Stage D in 32-row tasks: with every program a task and with fewer programs than tasks.
  out.push_back({.tokens = 16, .programs = 64, .latent_rows = 32});
  out.push_back({.layer = 5, .tokens = 8, .programs = 3, .latent_rows = 32});
  // D's and E's tasks in two parts of K each (k3-tiny's H 256 in 4 steps of 64; K3 takes three
  // parts on its own): the last part of a row block sums the parts, with the blocks spread over
  // more programs than them and fewer.
  out.push_back({.tokens = 4, .programs = 64, .front_parts = 2, .gemv_step = 64});
  out.push_back({.layer = 5, .tokens = 8, .programs = 3, .front_parts = 2, .gemv_step = 64});
  // Stages H and I staged through shared memory (K2Build::expert_stages, routed_stages): I's chunks
  // of 2 and of 8 experts (each step selecting its expert from ids read before the loop), on fewer
  // programs than tasks, and NVIDIA's 8-row build with L2 asked 2 steps on.
  out.push_back({.layer = 5, .tokens = 16, .programs = 3, .expert_stages = 2, .routed_stages = 3});
  out.push_back({.tokens = 16, .programs = 64, .routed_chunks = 8, .expert_stages = 4, .routed_stages = 4});
  out.push_back({.tokens = 8, .programs = 5, .target = "sm_90a", .expert_stages = 4, .routed_stages = 4});
  // Stage H's stages each copying 2 K steps (K2Build::expert_stage_steps: k3-tiny's latent of 128 is
  // 2 steps of 64, so one such stage; K3's test below takes 14), NVIDIA's 8-row build and the 16-row
  // one.
  out.push_back({.tokens = 8, .programs = 5, .target = "sm_90a", .expert_stages = 3, .expert_stage_steps = 2});
  out.push_back({.layer = 5, .tokens = 16, .programs = 3, .expert_stages = 4, .expert_stage_steps = 2});
  // H's and I's staged loops with each iteration's codes loaded by the one before (K2Build::
  // expert_codes_ahead): NVIDIA's 8-row build (I staged, H in registers), both staged at 16 rows
  // with I's chunks of several experts, and with H's stages of two steps.
  out.push_back({.tokens = 8, .programs = 5, .target = "sm_90a", .codes_ahead = true});
  out.push_back({.tokens = 16, .programs = 64, .routed_chunks = 8, .expert_stages = 4, .codes_ahead = true,
                 .routed_stages = 4});
  out.push_back({.layer = 5, .tokens = 8, .programs = 3, .target = "sm_90a", .expert_stages = 3,
                 .expert_stage_steps = 2, .codes_ahead = true});
  // The staged loops' copies asking L2 for 256 bytes around them (K2Build::expert_stage_fetch): H's
  // stages of two steps and I's, NVIDIA's 8-row build (the values are the loads', the fetch a hint).
  out.push_back({.tokens = 8, .programs = 5, .target = "sm_90a", .expert_stages = 3, .expert_stage_steps = 2,
                 .stage_fetch = 256});
  // Each program's first H tasks as one staged loop (K2Build::expert_task_loop), the tasks past them
  // (live or not) a loop each: NVIDIA's 8-row build with stages of two steps and the codes ahead
  // across the tasks' boundaries on 5 programs, 4 tasks each in the loop; the 16-row build on 3
  // programs, up to 16 in the loop; and on more programs than tasks.
  out.push_back({.tokens = 8, .programs = 5, .target = "sm_90a", .expert_stages = 3, .expert_stage_steps = 2,
                 .codes_ahead = true, .task_loop = 4});
  out.push_back({.layer = 5, .tokens = 16, .programs = 3, .expert_stages = 4, .task_loop = 16});
  out.push_back({.tokens = 4, .programs = 64, .expert_stages = 2, .task_loop = 2});
  // Each program's first H task asking L2 for its rows' K steps once the union is known
  // (K2Build::expert_first_fetch): all 2 of k3-tiny's latent (every line checked to be inside w13 as a
  // load is), NVIDIA's 8-row build on more programs than tasks and one step on fewer.
  out.push_back({.tokens = 8, .programs = 64, .target = "sm_90a", .first_fetch = 2});
  out.push_back({.layer = 5, .tokens = 16, .programs = 3, .first_fetch = 1});
  // W_up asked of L2 before H's waits (K2Build::up_ahead), its lines shared over 5 and 64 programs
  // (every line checked inside W_up as a load is).
  out.push_back({.tokens = 8, .programs = 5, .target = "sm_90a", .up_ahead = true});
  out.push_back({.tokens = 4, .programs = 64, .up_ahead = true});
  // Stage F between H and I, on fewer programs than its tasks and on more.
  out.push_back({.layer = 5, .tokens = 8, .programs = 3, .shared_early = true});
  out.push_back({.tokens = 16, .programs = 64, .target = "sm_90a", .shared_early = true});
  // I's tasks waiting for their own chunk's H tasks (K2Build::chunk_handoff): chunks of 1 slot on
  // fewer programs than H's tasks, as the second of two launches on one scratch (each launch adds
  // the chunk counters' span), and chunks of 3 (the last one short) on more programs; NVIDIA's
  // staged 8-row build with F between H and I likewise over two launches.
  out.push_back({.layer = 5, .tokens = 4, .programs = 3, .chunk_handoff = true, .launches = 2});
  out.push_back({.tokens = 16, .programs = 64, .routed_chunks = 22, .chunk_handoff = true});
  out.push_back({.layer = 5, .tokens = 8, .programs = 5, .target = "sm_90a", .shared_early = true, .chunk_handoff = true,
                 .launches = 2});
  // NVIDIA's builds: up to 8 tokens the experts' GEMVs are 8 token rows wide (K2Build::expert_token_rows).
  out.push_back({.tokens = 4, .target = "sm_90a"});
  out.push_back({.layer = 5, .tokens = 8, .programs = 3, .router = Router::kTies, .target = "sm_90a"});
  out.push_back({.tokens = 4, .router = Router::kTies});
  out.push_back({.tokens = 4, .router = Router::kNan});
  out.push_back({.tokens = 8, .router = Router::kSameExperts});
  // Any top-k from 1 to the expert count (k3-tiny's 16): the router's network padded to a power of
  // two inside the kernel, ties to the lower id and NaN last at the sizes that are no tile size.
  for (int top_k : {1, 6, 12, 16}) out.push_back({.tokens = 4, .top_k = top_k});
  out.push_back({.tokens = 4, .router = Router::kTies, .top_k = 6});
  out.push_back({.tokens = 4, .router = Router::kTies, .top_k = 12});
  out.push_back({.tokens = 4, .router = Router::kNan, .top_k = 6});
  out.push_back({.tokens = 16, .target = "sm_90a", .top_k = 12});
  // 40 experts (no power of two: the router's keys padded to 64) with top-k 6, which aborted K2.
  out.push_back({.tokens = 4, .top_k = 6, .experts = 40});
  out.push_back({.tokens = 8, .router = Router::kTies, .target = "sm_90a", .top_k = 6, .experts = 40});
  // 200 experts: the router's 4 blocks of 64 (the last one short) each hand in their candidates, and
  // the route selects from theirs: ties across the blocks' boundaries (odd experts copy even ones),
  // NaN keys in every block, a top-k past a block's share (the blocks' candidates are then whole
  // blocks), and the logits in 4 slices of K on fewer programs than their tasks.
  out.push_back({.tokens = 4, .router = Router::kTies, .top_k = 6, .experts = 200});
  out.push_back({.tokens = 4, .router = Router::kNan, .top_k = 12, .experts = 200});
  out.push_back({.tokens = 2, .top_k = 80, .experts = 200});
  out.push_back({.layer = 5, .tokens = 8, .programs = 3, .router = Router::kTies, .gemv_step = 64, .top_k = 16,
                 .experts = 200, .launches = 2});
  // AMD's build: the winners' scores loaded after the sort (K2Build::route_scores_ahead false).
  out.push_back({.tokens = 4, .router = Router::kNan, .target = "gfx90a", .top_k = 12, .experts = 200});
  // K3's TP 8 rank: H 7168 in 28 AttnRes chunks at 4 rows, 112 o_proj tasks from 1536 columns, 896 experts.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .programs = 132, .router = Router::kSameExperts});
  // The same as NVIDIA builds it, stage H through 3 stages of 2 K steps each (K2Build::
  // expert_stage_steps: 128 bytes of a row a copy; K2Gpu's and k2_bench --expert-stage-steps' build).
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .programs = 132, .router = Router::kSameExperts,
                 .target = "sm_90a", .expert_stages = 3, .expert_stage_steps = 2});
  // And 4 stages of 4 K steps (256 bytes of a row a stage, 7 iterations of K3's 28 steps), the
  // codes ahead, the copies fetching 256 bytes and each program's first 3 H tasks as one loop
  // (k2_bench --expert-stage-steps 4's build with --expert-task-loop 3).
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .programs = 132, .router = Router::kSameExperts,
                 .target = "sm_90a", .expert_stages = 4, .expert_stage_steps = 4, .codes_ahead = true,
                 .stage_fetch = 256, .task_loop = 3});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Stages, K2Interp, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<K2Case>& info) { return case_name(info.param); });

// k2_program's refusal of `b` (the error's words), or "built".
std::string refusal(const K2Build& b) {
  try {
    k2_program(b);
  } catch (const dsl::Error& e) {
    return e.what();
  }
  return "built";
}

TEST(K2Build, RefusesWhatItCannotServe) {
  model::ModelConfig config = *model::load_config("k3-tiny");
  model::RankDims dims = *model::rank_dims(config, 1, 0);
  EXPECT_THAT(k2_build(config, dims, 0, 256, 4).status().message(), ::testing::HasSubstr("dense"));
  EXPECT_THAT(k2_build(config, dims, 1, 256, 17).status().message(), ::testing::HasSubstr("tokens = 17, expected 1..16"));
  EXPECT_THAT(k2_build(config, dims, 99, 256, 4).status().message(), ::testing::HasSubstr("not a layer of the model"));
  EXPECT_THAT(k2_build(config, dims, 1, 100, 4).status().message(), ::testing::HasSubstr("expected multiples of"));
  ASSERT_TRUE(k2_build(config, dims, 12, 256, 4).ok());
  EXPECT_TRUE(k2_build(config, dims, 12, 256, 4)->reset);
  EXPECT_EQ(k2_build(config, dims, 12, 256, 4)->nblocks, config.previous_blocks(12) + 1);
}

TEST(RouterSplits, SpreadTheGemvOverTheProgramsItIsSizedFor) {
  // K3: 896 experts in 14 blocks of 64, 7168 = 28 steps of 256: 7 slices (98 tasks; 14 would be 196).
  EXPECT_EQ(router_splits(896, 7168, 64, 256), 7);
  EXPECT_EQ(router_splits(896, 7168, 64, 128), 8);  // AMD's 128-wide steps: 56 steps, 112 tasks
  EXPECT_EQ(router_splits(16, 256, 64, 256), 1);    // k3-tiny: one step, nothing to split
  EXPECT_EQ(router_splits(16, 256, 64, 64), 4);
  EXPECT_EQ(router_splits(129 * 64, 7168, 64, 256), 1);  // more blocks than programs: no slices
}

TEST(K2Build, TheStageClockChangesTheNameAndAddsTheLastParameter) {
  K2Build clocked;
  clocked.stage_clock = true;
  EXPECT_EQ(k2_name(clocked), k2_name(K2Build{}) + "_clock");
  std::vector<std::string> plain = k2_parameters(K2Build{}), with_clock = k2_parameters(clocked);
  ASSERT_EQ(with_clock.size(), plain.size() + 1);
  EXPECT_EQ(with_clock.back(), "clock");
  with_clock.pop_back();
  EXPECT_EQ(with_clock, plain);
}

TEST(K2Build, TheShiftPlacementChangesTheNameAndTheWordDecodes) {
  K2Build shifts;
  shifts.mxfp4_shift_placement = true;
  EXPECT_EQ(k2_name(shifts), k2_name(K2Build{}) + "_ps");
  // Its word decodes take the other placement (dsl/dot.h Mxfp4Placement); the default prints none.
  std::string plain = dsl::to_text(k2_program(K2Build{})), shifted = dsl::to_text(k2_program(shifts));
  EXPECT_NE(shifted.find("placement=shifts"), std::string::npos);
  EXPECT_EQ(plain.find("placement="), std::string::npos);
}

TEST(K2Build, WiderStagesAndCodesAheadChangeTheNameAndNeedTheStages) {
  K2Build wide;
  wide.expert_stages = 4;
  wide.expert_stage_steps = 2;
  K2Build staged = wide;
  staged.expert_stage_steps = 1;
  EXPECT_EQ(k2_name(wide), k2_name(staged) + "_ew2");
  // Without expert_stages (the register pipeline), or more K steps than a stage takes or than divide
  // K3's 28: refused, saying what it takes.
  K2Build unstaged = wide;
  unstaged.expert_stages = 0;
  EXPECT_THAT(refusal(unstaged), ::testing::HasSubstr("expert_stage_steps out of range: 2 with expert_stages 0"));
  EXPECT_THAT(refusal(unstaged), ::testing::HasSubstr("set expert_stages too"));
  K2Build odd = wide;
  odd.expert_stage_steps = 3;
  EXPECT_THAT(refusal(odd), ::testing::HasSubstr("expected 1, or 2 to 4 dividing stage H's 28 K steps, with expert_stages"));
  EXPECT_EQ(refusal(wide), "built");
  // The codes ahead need a staged loop.
  K2Build codes;
  codes.expert_codes_ahead = true;
  EXPECT_THAT(refusal(codes), ::testing::HasSubstr(
                                  "expert_codes_ahead without a staged loop: expert_stages 0, routed_stages 0, expected either above 0"));
  codes.routed_stages = 4;
  EXPECT_EQ(k2_name(codes), k2_name(K2Build{}) + "_ec_rs4");
  EXPECT_EQ(refusal(codes), "built");
}

TEST(K2Build, ATaskLoopChangesTheNameAndNeedsHsStagesAndABound) {
  K2Build loop;
  loop.expert_task_loop = 3;
  EXPECT_THAT(refusal(loop), ::testing::HasSubstr("expert_task_loop out of range: 3 with expert_stages 0, expected 0, "
                                                  "or 1 to 16 with expert_stages"));
  EXPECT_THAT(refusal(loop), ::testing::HasSubstr("set expert_stages too"));
  loop.expert_stages = 4;
  loop.expert_task_loop = 17;
  EXPECT_THAT(refusal(loop), ::testing::HasSubstr("expert_task_loop out of range: 17 with expert_stages 4"));
  loop.expert_task_loop = 3;
  EXPECT_EQ(k2_name(loop), k2_name(K2Build{}) + "_es4_et3");
  EXPECT_EQ(refusal(loop), "built");
}

TEST(K2Build, AFirstFetchChangesTheNameAndCountsHsSteps) {
  K2Build fetch;
  fetch.expert_first_fetch = 29;
  try {
    k2_program(fetch);
    ADD_FAILURE() << "built";
  } catch (const dsl::Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("expert_first_fetch out of range: 29, expected 0 to stage H's 28 K steps"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("its whole task is every step"));
  }
  fetch.expert_first_fetch = 28;
  EXPECT_EQ(k2_name(fetch), k2_name(K2Build{}) + "_ef28");
  EXPECT_NO_THROW(k2_program(fetch));
  K2Build up;
  up.up_ahead = true;
  EXPECT_EQ(k2_name(up), k2_name(K2Build{}) + "_ua");
}

TEST(K2Build, AStageFetchChangesTheNameAndNeedsAStagedLoopAndItsBytes) {
  K2Build fetch;
  fetch.expert_stage_fetch = 256;
  EXPECT_THAT(refusal(fetch), ::testing::HasSubstr("expert_stage_fetch out of range: 256 with expert_stages 0, "
                                                   "routed_stages 0, expected 0, or 64, 128 or 256 with a staged loop"));
  EXPECT_THAT(refusal(fetch), ::testing::HasSubstr("set expert_stages or routed_stages"));
  fetch.routed_stages = 4;
  fetch.expert_stage_fetch = 96;
  EXPECT_THAT(refusal(fetch), ::testing::HasSubstr("expert_stage_fetch out of range: 96 with expert_stages 0, routed_stages 4"));
  fetch.expert_stage_fetch = 0;
  EXPECT_EQ(dsl::to_text(k2_program(fetch)).find("l2_fetch="), std::string::npos);
  fetch.expert_stage_fetch = 128;
  EXPECT_EQ(k2_name(fetch), k2_name(K2Build{}) + "_sf128_rs4");
  EXPECT_EQ(refusal(fetch), "built");
  // The staged copies ask for the bytes; the register pipelines' loads keep expert_l2_fetch's.
  const std::string text = dsl::to_text(k2_program(fetch));
  EXPECT_NE(text.find("l2_fetch=128"), std::string::npos);
}

TEST(K2Build, TheScoresAfterTheSortChangeTheName) {
  K2Build after;
  after.route_scores_ahead = false;
  EXPECT_EQ(k2_name(after), k2_name(K2Build{}) + "_sa0");
  EXPECT_FALSE(k2_for_target(K2Build{}, *dsl::Target::parse("gfx90a")).route_scores_ahead);
  EXPECT_TRUE(k2_for_target(K2Build{}, *dsl::Target::parse("sm_90a")).route_scores_ahead);
}

TEST(K2Build, TheFaultHookChangesTheName) {
  K2Build hooked;
  hooked.fault_epoch = 9;
  hooked.fault_layer = 129;
  hooked.fault_ns = 3'000'000'000;
  EXPECT_THAT(k2_name(hooked), ::testing::EndsWith("_f9_129_3000000000"));
  EXPECT_EQ(k2_name(hooked).find("_f"), k2_name(K2Build{}).size());
}

// Program 0 stalls (the fault hook) far past the others' wait bound, so their waits on its shares
// give up; every later wait then returns at once and the stages run on stale scratch.
constexpr int64_t kStallNs = 3'000'000'000, kShortWaitNs = 20'000'000;

TEST(K2InterpHealth, StaleUnionIdsAddressNothingOutOfBounds) {
  conformance::InterpreterExecutor executor;
  // The route and the union's scratch hold ids below 0 and past E, and a union size past T top_k.
  const K2Case c{.tokens = 4, .programs = 4, .epoch = 5, .fault_epoch = 5, .fault_ns = kStallNs,
                 .wait_ns = kShortWaitNs, .poison_union = true};
  const K2Inputs in = make_k2_inputs(c, /*interpreter=*/true);
  ASSERT_FALSE(in.core.empty());
  const K2Run run = run_k2(in, executor);
  ASSERT_TRUE(run.launched.ok()) << run.launched;
  EXPECT_EQ(run.health[0], 1) << "FAILED";
}

TEST(K2InterpFault, TheMatchingEpochRecordsFailedWaitsAndEnds) {
  conformance::InterpreterExecutor executor;
  const K2Case c{.tokens = 4, .programs = 4, .epoch = 9, .fault_epoch = 9, .fault_ns = kStallNs, .wait_ns = kShortWaitNs};
  const K2Inputs in = make_k2_inputs(c, /*interpreter=*/true);
  ASSERT_FALSE(in.core.empty());
  const K2Run run = run_k2(in, executor);
  ASSERT_TRUE(run.launched.ok()) << run.launched;
  ASSERT_EQ(run.health.size(), static_cast<size_t>(health_words(c.programs)));
  EXPECT_EQ(run.health[0], 1) << "FAILED";
  int records = 0;
  for (int program = 1; program < c.programs; ++program) {
    const int32_t* record = &run.health[(program + 1) * kHealthRecordWords];
    if (record[0] == 0) continue;
    ++records;
    EXPECT_EQ(record[3], step_tag(c.epoch, 128 + c.layer)) << "program " << program;
    EXPECT_EQ(record[5], program);
  }
  EXPECT_GE(records, 1) << "no program but the stalled one recorded a give-up";
}

TEST(K2InterpFault, AnotherEpochMatchesTheReference) {
  conformance::InterpreterExecutor executor;
  run_k2_case({.tokens = 4, .programs = 4, .epoch = 8, .fault_epoch = 9, .fault_ns = kStallNs}, executor);
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST(K2InterpClock, WritesWhatThePlainBuildWritesAndRunsForward) {
  conformance::InterpreterExecutor executor;
  K2Inputs in = make_k2_inputs({.tokens = 4}, /*interpreter=*/true);
  ASSERT_FALSE(in.core.empty());
  const K2Run plain = run_k2(in, executor);
  in.build.stage_clock = true;
  const K2Run clocked = run_k2(in, executor);
  ASSERT_TRUE(plain.launched.ok()) << plain.launched;
  ASSERT_TRUE(clocked.launched.ok()) << clocked.launched;
  EXPECT_EQ(plain.health[0], 0);
  EXPECT_EQ(clocked.health[0], 0);
  EXPECT_TRUE(same_bits(clocked.got.a, plain.got.a)) << "a";
  EXPECT_TRUE(same_bits(clocked.got.prefix, plain.got.prefix)) << "P'";
  EXPECT_TRUE(same_bits(clocked.got.y, plain.got.y)) << "y";
  EXPECT_TRUE(same_bits(clocked.got.route_experts, plain.got.route_experts)) << "route experts";
  EXPECT_TRUE(same_bits(clocked.got.route_weights, plain.got.route_weights)) << "route weights";
  EXPECT_TRUE(same_bits(clocked.got.out, plain.got.out)) << "m";
  check_k2_clock(clocked, in.c.programs);
}

}  // namespace
}  // namespace monotile::kernels::k3
