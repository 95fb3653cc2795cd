// K1 on the GPU (label gpu) against the float64 reference: the K3 TP 8 rank's shapes at the widths
// the benchmark measures and more, block-write and first layers, padded requests, both conv
// layouts, and k3-tiny; one program per SM, all resident. Skips cleanly without a GPU.
#include <gtest/gtest.h>

#include <iostream>

#include "kernels/k3/gpu_case_test.h"
#include "kernels/k3/k1_test_support.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::k3 {
namespace {

class K1Gpu : public GpuCaseTest<K1Case> {};

TEST_P(K1Gpu, MatchesTheReference) {
  if (executor_ == nullptr) GTEST_SKIP() << "no GPU: " << skip_reason_;
  K1Case c = GetParam();
  const runtime::DeviceInfo& info = executor_->device().info();
  c.target = info.target.arch();
  c.programs = info.compute_units;
  std::mt19937 rng = testing::case_rng();
  absl::StatusOr<K1Result> result = run_k1_case(c, *executor_, rng);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->report();
  std::cout << case_name(c) << ":\n" << result->report();
}

std::vector<K1Case> cases() {
  std::vector<K1Case> out;
  for (int q : {4, 2}) {
    for (int n : {1, 2, 4}) out.push_back({.model = "k3", .tp = 8, .requests = n, .q = q});
  }
  out.push_back({.model = "k3", .tp = 8, .rank = 7, .requests = 8, .q = 2, .padded = 2});
  out.push_back({.model = "k3", .tp = 8, .rank = 3, .layer = 12, .requests = 2, .q = 3, .dim_first = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 0, .requests = 2, .q = 8, .state_len = 12});
  out.push_back({.requests = 4, .q = 4, .padded = 1});
  out.push_back({.tp = 2, .rank = 1, .layer = 12, .requests = 5, .q = 3});
  // Many launches on the same inputs: a race between stages shows as a launch that differs from
  // the first (the shape `monotile decode` runs by default, and a K3 rank's).
  out.push_back({.requests = 2, .q = 2, .launches = 300});
  out.push_back({.layer = 12, .requests = 2, .q = 2, .launches = 300});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 2, .launches = 100});
  // The same with the L2 flushed before each launch (weights from memory, as in a model's step).
  out.push_back({.requests = 2, .q = 2, .launches = 200, .cold = true});
  out.push_back({.layer = 8, .requests = 2, .q = 4, .launches = 200, .cold = true});
  out.push_back({.requests = 4, .q = 4, .launches = 100, .cold = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 4, .launches = 50, .cold = true});
  // Stage B as stream-K (K1Build::stream_k): K3's rank at 4 and 16 tokens, repeated and cold, and
  // k3-tiny in 64-wide steps, whose row blocks two or three programs share.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .stream_k = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 4, .q = 4, .stream_k = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 4, .launches = 50, .cold = true, .stream_k = true});
  out.push_back({.requests = 2, .q = 4, .launches = 100, .stream_k = true, .gemv_step = 64});
  // In_proj's W tiles in registers, steps ahead (K1Build::gemv_ahead): K3's rank at 4 and 16 tokens
  // (128-wide steps one ahead; 64-wide three ahead, cold and repeated), with stream-K's spans.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .gemv_step = 128, .gemv_ahead = 1});
  out.push_back({.model = "k3", .tp = 8, .requests = 4, .q = 4, .gemv_step = 64, .gemv_ahead = 3});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 4, .launches = 50, .cold = true, .gemv_step = 64,
                 .gemv_ahead = 3});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 2, .stream_k = true, .gemv_step = 128, .gemv_ahead = 1});
  // The weights asked into L2 (K1Build::prefetch_weights, prefetch_next): K3's rank at 4 tokens and,
  // cold and repeated, at 16 (192 stage C tasks: the programs with one task share the next weights).
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .prefetch = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 4, .q = 4, .launches = 50, .cold = true, .prefetch = true});
  // Stage C's loop at one task a program (K1Build::kda_loop; the default runs it past 132 tasks).
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .launches = 20, .cold = true, .kda_loop = true});
  // AttnRes off the stream's path (K1Build::linear_in_proj), against the reference of its rounding
  // points and, at a distance, vLLM's (k1_test_support.h): the bench's shapes (layer 1, 2 sources)
  // at 4 and 16 tokens, 9 sources (layer 85) at 4 and 8 tokens (64 and 128 accumulator columns),
  // 7 at 16 tokens (layer 61, 128), a block-write layer at 16 tokens (3 sources, 64), repeated and
  // cold; k3-tiny repeated.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .linear = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 4, .q = 4, .linear = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 2, .linear = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 3, .layer = 85, .requests = 1, .q = 4, .linear = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 3, .layer = 85, .requests = 2, .q = 4, .linear = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 61, .requests = 4, .q = 4, .linear = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 24, .requests = 8, .q = 2, .padded = 2, .linear = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 4, .launches = 50, .cold = true, .linear = true});
  out.push_back({.requests = 4, .q = 4, .launches = 100, .linear = true});
  // With stage C's loop at one task a program (K1Build::kda_loop): the smallest code.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .launches = 20, .cold = true, .kda_loop = true,
                 .linear = true});
  // Builds sized for the layer's own sources (k1_linear_sized), as the executor makes them: layer 30
  // at 4 tokens (4 sources, 16 columns, max_blocks 3), layer 61 at 8 tokens (7 sources in 8 blocks,
  // 64 columns, max_blocks 7; a padding source row), layer 0 at 8 tokens (one source, 8 columns,
  // max_blocks 0), cold and repeated; layer 73 at 16 tokens (8 sources, 128 columns), which the
  // model's max_blocks refuses.
  out.push_back({.model = "k3", .tp = 8, .layer = 30, .requests = 1, .q = 4, .linear = true, .sized = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 5, .layer = 61, .requests = 2, .q = 4, .linear = true,
                 .sized = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 0, .requests = 2, .q = 4, .launches = 20, .cold = true,
                 .linear = true, .sized = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 73, .requests = 4, .q = 4, .linear = true, .sized = true});
  // With the first W_in rows asked into L2 before the sources' wait (K1Build::prefetch_weights and
  // prefetch_next), cold and repeated.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .launches = 20, .cold = true, .prefetch = true,
                 .linear = true, .sized = true});
  // Stage C's decay weights before the wait for proj (K1Build::kda_weights_ahead): K3's rank at 4
  // and 8 tokens (a task a program), repeated and cold, at q 2, at 16 tokens (the loop), linear.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .launches = 20, .cold = true, .kda_weights = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 4, .kda_weights = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 2, .launches = 20, .cold = true, .kda_weights = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 4, .q = 4, .kda_weights = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .kda_weights = true, .linear = true});
  // L2 fetching 256 bytes around each W_in load (K1Build::gemv_l2_fetch), linear and default, cold.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .launches = 20, .cold = true, .linear = true,
                 .l2_fetch = 256, .sized = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 2, .q = 4, .launches = 20, .cold = true, .l2_fetch = 256});
  // The conv state written as two tiles, each quarter its v channels (K1Build::conv_state_split),
  // with the weights ahead: K3's rank at q 4 and 2 (cold and repeated), at 16 tokens (the loop), the
  // dim-first layout with a padded request at q 3, and k3-tiny repeated.
  out.push_back({.model = "k3", .tp = 8, .requests = 1, .q = 4, .launches = 20, .cold = true, .kda_weights = true,
                 .conv_split = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 4, .q = 2, .launches = 20, .cold = true, .kda_weights = true,
                 .conv_split = true});
  out.push_back({.model = "k3", .tp = 8, .requests = 4, .q = 4, .kda_weights = true, .conv_split = true});
  out.push_back({.model = "k3", .tp = 8, .rank = 3, .layer = 12, .requests = 3, .q = 3, .padded = 1,
                 .dim_first = true, .kda_weights = true, .conv_split = true});
  out.push_back({.requests = 2, .q = 4, .launches = 100, .kda_weights = true, .conv_split = true});
  return out;
}

std::string name(const ::testing::TestParamInfo<K1Case>& info) {
  std::string name = case_name(info.param);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Shapes, K1Gpu, ::testing::ValuesIn(cases()), name);

}  // namespace
}  // namespace monotile::kernels::k3
