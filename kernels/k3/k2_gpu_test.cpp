// K2 on the GPU (label gpu) against the float64 reference: K3's TP 8 rank shapes at the widths the
// benchmarks measure and at 2 tokens (every row on the same 16 experts, as on the interpreter) and k3-tiny's
// ordinary, block-write, tie and NaN cases and top-k 1, 6 and 12 (of 16, 40 and 200 experts), and the stage clock build at K3's T 4 (its clock
// running forward on every program); one program per SM, all resident. Skips cleanly without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/k3/gpu_case_test.h"
#include "kernels/k3/k2_test_support.h"

namespace monotile::kernels::k3 {
namespace {

class K2Gpu : public GpuCaseTest<K2Case> {};

TEST_P(K2Gpu, MatchesTheReference) {
  if (executor_ == nullptr) GTEST_SKIP() << "no GPU: " << skip_reason_;
  K2Case c = GetParam();
  c.target = executor_->device().info().target.arch();
  c.programs = executor_->device().info().compute_units;
  run_k2_case(c, *executor_);
}

std::vector<K2Case> cases() {
  std::vector<K2Case> out;
  // 2 tokens too: q = 2's narrowest width, where the AttnRes chunk (attn_res_chunk) is narrowest.
  for (int tokens : {2, 4, 8, 16}) {
    out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = tokens, .router = Router::kSameExperts});
  }
  out.push_back({.model = "k3", .tp = 8, .layer = 12, .tokens = 8, .router = Router::kSameExperts});  // block write
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .router = Router::kSameExperts, .stage_clock = true});
  // Stage H's loads staged through shared memory at 8 tokens too (K2Build::expert_stages; NVIDIA's
  // builds stage I's at every width, and H's past 8 tokens).
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .router = Router::kSameExperts, .expert_stages = 4});
  // Stage H's stages each copying 2 K steps (K2Build::expert_stage_steps: 128 bytes of a row a
  // copy, 32 and 48 KB of weights in flight a program), k2_bench --expert-stage-steps' builds at 4
  // and 8 tokens.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .router = Router::kSameExperts, .expert_stages = 3,
                 .expert_stage_steps = 2});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .router = Router::kSameExperts, .expert_stages = 4,
                 .expert_stage_steps = 2});
  // The staged loops' codes loaded an iteration ahead (K2Build::expert_codes_ahead): I's at T 4 (H in
  // registers), H's stages of two steps and I's at T 8, both of one step at T 16.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .router = Router::kSameExperts, .codes_ahead = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .router = Router::kSameExperts, .expert_stages = 4,
                 .expert_stage_steps = 2, .codes_ahead = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 16, .router = Router::kSameExperts, .codes_ahead = true});
  // The staged loops' copies asking L2 for 256 bytes around them (K2Build::expert_stage_fetch): I's
  // at T 4, H's stages of two steps and I's at T 8.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .router = Router::kSameExperts, .stage_fetch = 256});
  // Stage H's stages of 4 K steps (256 bytes of a row a stage) at T 4 and 8.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .router = Router::kSameExperts, .expert_stages = 4,
                 .expert_stage_steps = 4});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .router = Router::kSameExperts, .expert_stages = 4,
                 .expert_stage_steps = 4, .codes_ahead = true, .stage_fetch = 256});
  // Each program's first H tasks as one staged loop (K2Build::expert_task_loop) at T 4 and 16.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .router = Router::kSameExperts, .expert_stages = 4,
                 .expert_stage_steps = 4, .codes_ahead = true, .stage_fetch = 256, .task_loop = 3});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 16, .router = Router::kSameExperts, .task_loop = 10});
  // Each program's first H task asking L2 for its whole rows once the union is known
  // (K2Build::expert_first_fetch) at T 4.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .router = Router::kSameExperts, .first_fetch = 28,
                 .up_ahead = true});
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .router = Router::kSameExperts, .expert_stages = 4,
                 .expert_stage_steps = 2, .codes_ahead = true, .stage_fetch = 256});
  // Two launches on one scratch, the second checked: the chunk counters of stage I's hand-off
  // (K2Build::chunk_handoff, NVIDIA's default) carry over from one launch to the next.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 8, .router = Router::kSameExperts, .launches = 2});
  out.push_back({.tokens = 16});
  out.push_back({.layer = 12, .tokens = 6});
  out.push_back({.tokens = 4, .router = Router::kTies});
  out.push_back({.tokens = 4, .router = Router::kNan});
  // Top-k that are no tile size, padded inside the router (any k in 1..E).
  for (int top_k : {1, 6, 12}) out.push_back({.tokens = 4, .top_k = top_k});
  out.push_back({.tokens = 16, .router = Router::kTies, .top_k = 6});
  out.push_back({.tokens = 4, .top_k = 6, .experts = 40});  // experts no power of two
  // 200 experts: the router's 4 blocks each hand in their candidates (ties across the blocks'
  // boundaries, NaN keys in every block, a top-k past a block's share), and over two launches on one
  // scratch with the logits in 4 slices of K (the blocks' counters carry over).
  out.push_back({.tokens = 4, .router = Router::kTies, .top_k = 6, .experts = 200});
  out.push_back({.tokens = 16, .router = Router::kNan, .top_k = 12, .experts = 200});
  out.push_back({.tokens = 2, .top_k = 80, .experts = 200});
  out.push_back({.tokens = 8, .router = Router::kTies, .gemv_step = 64, .top_k = 16, .experts = 200, .launches = 2});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, K2Gpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<K2Case>& info) { return case_name(info.param); });

}  // namespace
}  // namespace monotile::kernels::k3
