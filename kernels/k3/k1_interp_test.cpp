// K1 on the interpreter against the float64 reference, at k3-tiny's shapes: widths, q, delta,
// block sources, padded requests, conv layouts, TP shards and program counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <limits>

#include "kernels/k3/k1_test_support.h"
#include "model/config.h"
#include "tests/conformance/interpreter_executor.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::k3 {
namespace {

class K1Interp : public ::testing::TestWithParam<K1Case> {};

TEST_P(K1Interp, MatchesTheReference) {
  conformance::InterpreterExecutor executor;
  std::mt19937 rng = testing::case_rng();
  absl::StatusOr<K1Result> result = run_k1_case(GetParam(), executor, rng);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->report();
  if (std::getenv("MONOTILE_K1_REPORT") != nullptr) std::cout << result->report();
}

std::vector<K1Case> cases() {
  std::vector<K1Case> out;
  // Every q 2..8 at one request and at the widest width of 16 rows it divides.
  for (int q = 2; q <= 8; ++q) {
    out.push_back({.requests = 1, .q = q});
    if (16 / q > 1) out.push_back({.requests = 16 / q, .q = q, .padded = 1});
  }
  out.push_back({.requests = 2, .q = 4, .delta = false});
  out.push_back({.requests = 2, .q = 3, .state_len = 9});
  out.push_back({.requests = 2, .q = 4, .dim_first = true});
  out.push_back({.requests = 3, .q = 2, .state_len = 6, .dim_first = true});
  out.push_back({.layer = 0, .requests = 2, .q = 4});                  // no block source, writes block 0
  out.push_back({.layer = 12, .requests = 2, .q = 3});                 // block-write layer, writes block 1
  out.push_back({.tp = 2, .rank = 1, .requests = 2, .q = 4});
  out.push_back({.tp = 4, .rank = 3, .requests = 1, .q = 3});
  out.push_back({.tp = 8, .rank = 5, .requests = 2, .q = 2, .padded = 1});
  out.push_back({.requests = 4, .q = 4, .programs = 5});               // fewer programs than tasks
  out.push_back({.requests = 1, .q = 4, .programs = 40});              // more programs than tasks
  // K3's TP 8 rank: 7168 columns in 7 AttnRes chunks, 99 in_proj tasks, 12 heads.
  out.push_back({.model = "k3", .tp = 8, .rank = 2, .layer = 13, .requests = 1, .q = 2, .programs = 16});
  // The H200's shape of the same build: 132 programs, early stage C inputs.
  out.push_back({.model = "k3", .tp = 8, .rank = 5, .layer = 1, .requests = 2, .q = 4, .programs = 132,
                 .target = "sm_90a"});
  // AMD's shape: 4 wavefronts, 128-wide GEMV steps, stage C's inputs loaded by each task itself.
  out.push_back({.requests = 2, .q = 4, .programs = 6, .target = "gfx90a"});
  // Counters far along: every launch's arrivals are told apart past the i32 wrap.
  out.push_back({.requests = 2, .q = 3, .counter_start = std::numeric_limits<int32_t>::min()});
  out.push_back({.requests = 4, .q = 2, .programs = 5, .counter_start = std::numeric_limits<int32_t>::max() - 255});
  // Three launches on the same inputs, each equal to the first bit for bit (new epoch, counters
  // carried over, scratch poisoned again).
  out.push_back({.requests = 2, .q = 2, .launches = 3});
  // Stream-K's in_proj: k3-tiny in 64-wide steps (4 a row block), so that row blocks are shared by
  // two programs (8 programs, runs of 34 units) and by three (132 programs, runs of 3 units); its
  // counters past the wrap; repeated launches bit for bit; K3's TP 8 rank on 132 programs.
  out.push_back({.requests = 2, .q = 4, .stream_k = true, .gemv_step = 64});
  out.push_back({.requests = 1, .q = 2, .programs = 132, .stream_k = true, .gemv_step = 64});
  out.push_back({.requests = 4, .q = 2, .programs = 5, .counter_start = std::numeric_limits<int32_t>::max() - 255,
                 .stream_k = true, .gemv_step = 64});
  out.push_back({.requests = 2, .q = 2, .launches = 3, .stream_k = true, .gemv_step = 64});
  out.push_back({.model = "k3", .tp = 8, .rank = 5, .layer = 1, .requests = 2, .q = 4, .programs = 132,
                 .target = "sm_90a", .stream_k = true});
  // In_proj's W tiles in registers, steps ahead (K1Build::gemv_ahead): k3-tiny in 32-wide steps (8
  // a row, so ahead 2 leaves the last iteration's third sub-step past the end), with stream-K's
  // spans of a row; K3's TP 8 rank in 128-wide steps at 16 tokens (the A operand's 16 rows full).
  out.push_back({.requests = 2, .q = 4, .gemv_step = 32, .gemv_ahead = 2});
  out.push_back({.requests = 3, .q = 3, .programs = 132, .stream_k = true, .gemv_step = 32, .gemv_ahead = 1});
  out.push_back({.requests = 4, .q = 2, .padded = 1, .gemv_step = 64, .gemv_ahead = 3});
  out.push_back({.model = "k3", .tp = 8, .rank = 1, .layer = 1, .requests = 4, .q = 4, .programs = 132,
                 .target = "sm_90a", .gemv_step = 128, .gemv_ahead = 2});
  // The weights asked into L2 (K1Build::prefetch_weights, prefetch_next): fewer programs than tasks
  // (AttnRes's halves in two loops; 32 stage C tasks on 5 programs, so 3 of them share the next
  // weights after their tasks), more (the programs without a task share them after stage B), and
  // K3's TP 8 rank on 132 programs (a prefetched lane out of its buffer fails the interpreter).
  out.push_back({.requests = 2, .q = 4, .programs = 5, .prefetch = true});
  out.push_back({.requests = 1, .q = 4, .programs = 40, .prefetch = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 5, .layer = 1, .requests = 1, .q = 4, .programs = 132,
                 .target = "sm_90a", .prefetch = true});
  // Stage C's loop also at one task a program or none (K1Build::kda_loop); the default's loop runs
  // wherever a case has more tasks than programs (most cases above).
  out.push_back({.requests = 1, .q = 4, .programs = 40, .kda_loop = true});
  out.push_back({.requests = 3, .q = 3, .programs = 7, .kda_loop = true});
  // Stage C's decay weights loaded before the wait for proj (K1Build::kda_weights_ahead): a task a
  // program (the straight path), K3's TP 8 rank on 132 programs (48 tasks), the linear form; and
  // more tasks than programs (the loop, which the option leaves as it is).
  out.push_back({.requests = 1, .q = 4, .programs = 40, .kda_weights = true});
  out.push_back({.requests = 3, .q = 3, .programs = 7, .kda_weights = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 3, .layer = 1, .requests = 1, .q = 4, .programs = 132,
                 .target = "sm_90a", .kda_weights = true});
  out.push_back({.requests = 1, .q = 4, .programs = 40, .kda_weights = true, .linear = true});
  // The conv state written as two tiles, each quarter its own v channels (K1Build::conv_state_split):
  // every q (2, 3 with a padded request and the dim-first layout, 4, 8 with a longer state), the
  // loop (more tasks than programs), with the weights ahead, K3's TP 8 rank, the linear form.
  out.push_back({.requests = 2, .q = 2, .programs = 40, .conv_split = true});
  out.push_back({.requests = 3, .q = 3, .padded = 1, .dim_first = true, .programs = 40, .conv_split = true});
  out.push_back({.requests = 2, .q = 4, .programs = 7, .counter_start = 256 * 1000, .conv_split = true});
  out.push_back({.layer = 0, .requests = 1, .q = 8, .state_len = 12, .conv_split = true});
  out.push_back({.requests = 1, .q = 4, .programs = 40, .kda_weights = true, .conv_split = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 6, .layer = 1, .requests = 1, .q = 4, .programs = 132,
                 .target = "sm_90a", .kda_weights = true, .conv_split = true});
  out.push_back({.requests = 2, .q = 4, .kda_weights = true, .conv_split = true, .linear = true});
  // The linear in_proj (K1Build::linear_in_proj), against the reference of its rounding points, its
  // proj and its distance from float64 against vLLM's rounding points' (k1_test_support.h): spare
  // programs run AttnRes (8 programs, k3-tiny's 35 in_proj tasks on 40); fewer programs than tasks
  // (AttnRes first, then the tasks) with counters near the wrap; one source (layer 0, 2 tokens in
  // 8 accumulator columns); a block-write layer at 3 tokens (blocks of 4 rows); repeated launches;
  // K3's TP 8 rank at layer 85 (9 sources, 64 columns) on 132 programs. The default form's proj too.
  out.push_back({.requests = 2, .q = 4, .linear = true});
  out.push_back({.requests = 1, .q = 4, .programs = 40, .linear = true});
  out.push_back({.requests = 4, .q = 2, .programs = 5, .counter_start = std::numeric_limits<int32_t>::max() - 255,
                 .linear = true});
  out.push_back({.layer = 0, .requests = 1, .q = 2, .linear = true});
  out.push_back({.layer = 12, .requests = 2, .q = 3, .linear = true});
  out.push_back({.requests = 2, .q = 2, .launches = 3, .linear = true});
  out.push_back({.requests = 2, .q = 4, .check_proj = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 2, .layer = 85, .requests = 1, .q = 4, .programs = 132,
                 .target = "sm_90a", .linear = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 2, .layer = 85, .requests = 1, .q = 4, .programs = 132,
                 .target = "sm_90a", .check_proj = true});
  // The linear form with stage C's loop at one task a program (its smallest code).
  out.push_back({.requests = 1, .q = 4, .programs = 40, .kda_loop = true, .linear = true});
  // Builds sized for the layer's own sources (k1_linear_sized), as the executor makes them: k3-tiny's
  // layer 1 at 8 tokens (2 sources in 16 columns, max_blocks 1 where the model's 2 took 32); layer 0
  // at 4 tokens (its one source beside a zero row in 8 columns, max_blocks 1, nblocks 0) with fewer
  // programs than tasks; K3's TP 8 rank at layer 30 (4 sources in 16 columns, max_blocks 3).
  out.push_back({.requests = 2, .q = 4, .linear = true, .sized = true});
  out.push_back({.layer = 0, .requests = 2, .q = 2, .programs = 5, .linear = true, .sized = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 2, .layer = 30, .requests = 1, .q = 4, .programs = 132,
                 .target = "sm_90a", .linear = true, .sized = true});
  // The linear form with its first W_in rows asked into L2 before the sources' wait (and the next
  // weights during stage C: K1Build::prefetch_weights, prefetch_next; the sources' first halves
  // from the last program down): spare programs, fewer programs than tasks (every program mixes
  // first), and K3's rank on 132 programs.
  out.push_back({.requests = 2, .q = 4, .programs = 40, .prefetch = true, .linear = true});
  out.push_back({.requests = 1, .q = 2, .programs = 5, .prefetch = true, .linear = true, .sized = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 5, .layer = 1, .requests = 1, .q = 4, .programs = 132,
                 .target = "sm_90a", .prefetch = true, .linear = true, .sized = true});
  // L2 fetching 256 bytes around each W_in load (K1Build::gemv_l2_fetch; the interpreter reads as
  // without it): the same values.
  out.push_back({.requests = 2, .q = 4, .programs = 40, .linear = true, .l2_fetch = 256, .sized = true});
  return out;
}

// k1_linear_sized: max_blocks the most sources of the layer's accumulator columns, never past the
// model's; K3's TP 8 rank at 4, 8 and 16 tokens, every nblocks its KDA layers have.
TEST(K1LinearSized, TakesTheSourcesOfTheLayersColumns) {
  model::ModelConfig config = *model::load_config("k3");
  model::RankDims dims = *model::rank_dims(config, 8, 0);
  auto sized = [&](int tokens, int layer) {
    return k1_linear_sized(
        *k1_build(config, layer, dims.kda_heads, static_cast<int>(dims.in_proj_rows), tokens, 4, 6, true));
  };
  // Layers 1, 13, 25, 37, 49, 61, 73 and 85 have nblocks 1..8; layer 2 also 1.
  const std::vector<int> layers{1, 13, 25, 37, 49, 61, 73, 85};
  std::vector<int> t4, t8, t16;
  for (int layer : layers) {
    t4.push_back(sized(4, layer).max_blocks);
    t8.push_back(sized(8, layer).max_blocks);
    t16.push_back(sized(16, layer).max_blocks);
    EXPECT_TRUE(sized(4, layer).linear_in_proj);
    EXPECT_EQ(sized(4, layer).nblocks, config.previous_blocks(layer));
  }
  EXPECT_EQ(t4, (std::vector<int>{1, 3, 3, 7, 7, 7, 7, 8}));
  EXPECT_EQ(t8, (std::vector<int>{1, 3, 3, 7, 7, 7, 7, 8}));
  EXPECT_EQ(t16, (std::vector<int>{1, 3, 3, 7, 7, 7, 7, 8}));
  EXPECT_EQ(k1_linear_refusal(sized(4, 85)), "");
  EXPECT_EQ(k1_linear_refusal(sized(16, 73)), "");
  EXPECT_EQ(k1_linear_refusal(sized(16, 85)), "9 sources x 16 rows pad to 256 accumulator columns, more than 128");
  // Never past the model's: k3-tiny has 2 blocks (3 sources), which 8 columns of 2-row blocks would hold 4 of.
  model::ModelConfig tiny = *model::load_config("k3-tiny");
  model::RankDims tiny_dims = *model::rank_dims(tiny, 1, 0);
  K1Build t2 = *k1_build(tiny, 1, tiny_dims.kda_heads, static_cast<int>(tiny_dims.in_proj_rows), 2, 2, 4, true);
  EXPECT_EQ(k1_linear_sized(t2).max_blocks, 2);
  EXPECT_EQ(k1_linear_sized(t2).nblocks, 1);
}

std::string name(const ::testing::TestParamInfo<K1Case>& info) {
  std::string name = case_name(info.param);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name + "_p" + std::to_string(info.param.programs) + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Tiny, K1Interp, ::testing::ValuesIn(cases()), name);

// Counters off their launch boundary: at 100, the 67 in_proj tasks (arrival span 128) count 100 ..
// 127, 0 .. 38 in the counter's low bits and never reach 66, so "proj written" is never published.
// Every stage C wait must give up after its timeout and record itself, and the launch must end.
TEST(K1InterpHealth, AWaitThatNeverEndsIsRecordedAndTheLaunchEnds) {
  conformance::InterpreterExecutor executor;
  std::mt19937 rng = testing::case_rng();
  // The bound must outlast every wait that does end (the programs' hand-offs to each other): on a
  // loaded 2-core machine an interpreter thread can sit unscheduled for tens of milliseconds, and a
  // 20 ms bound then let an AttnRes wait give up before the proj wait this test starves.
  const K1Case c{.requests = 1, .q = 2, .programs = 4, .counter_start = 100, .wait_ns = 1'000'000'000};
  absl::StatusOr<K1Result> result = run_k1_case(c, executor, rng);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->ok());
  ASSERT_GE(result->health.size(), size_t{2} * kHealthRecordWords);
  EXPECT_EQ(result->health[0], 1) << "FAILED";
  // Some program gave up first and recorded itself; a program that finds FAILED set, before its
  // own wait or during it, ends that wait and records nothing (on a loaded machine, any of them
  // can be first).
  int recorded = -1;
  for (int p = 0; p < c.programs && recorded < 0; ++p) {
    if (result->health[static_cast<size_t>(p + 1) * kHealthRecordWords] != 0) recorded = p;
  }
  ASSERT_GE(recorded, 0) << "no program recorded its give-up";
  const int32_t* first = &result->health[static_cast<size_t>(recorded + 1) * kHealthRecordWords];
  EXPECT_EQ(first[0], 1);
  EXPECT_EQ(first[1], static_cast<int32_t>(K1Region::kProj));
  EXPECT_EQ(first[3], step_tag(1, c.layer));
  EXPECT_EQ(first[5], recorded) << "the program that gave up";
  EXPECT_THAT(result->report(), ::testing::HasSubstr("health FAILED"));
}

}  // namespace
}  // namespace monotile::kernels::k3
