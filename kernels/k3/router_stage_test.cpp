// The router stage (router_stage.h) on the interpreter against the float64 reference
// (reference::route) over several blocks of experts: 300 experts in 5 blocks of 64 (the last one
// short), K in 4 slices and in one, on fewer programs than the logits' tasks and on more. The
// logits are exact in f32 (bf16 inputs of few levels), so that the reference's order is the
// kernel's: the expert ids must match exactly, ties to the lower id and NaN last included, for
// exact ties across the blocks' boundaries, NaN keys in every block, -inf keys in most of them, and
// top-k from 1 to every expert (a block's share and more: its candidates are then the whole block).
// One scratch and one set of counters serve every launch, the scratch and the outputs poisoned
// before each. The winners' scores come from every candidate's, asked for before the sort, or
// (AMD's builds) from loads after it.
#include "kernels/k3/router_stage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/stage_test_support.h"
#include "kernels/reference/k3_parts.h"
#include "model/dtype.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::k3 {
namespace {

using conformance::DeviceBuffer;
using conformance::KernelArg;

constexpr int kExperts = 300;
constexpr int kHidden = 256;
constexpr int kRows = 64;
constexpr int kMaxTokens = 5;
constexpr int kBlocks = (kExperts + kRows - 1) / kRows;

// How a launch's keys are made (every logit a multiple of 1/2 in [-4, 4], exact in f32).
enum class Keys {
  kLevels,       // random levels, so that most keys tie with others; a few biases lift experts
  kBoundaryTie,  // experts 60..67 and 124..131 the same row and bias, above every other key
  kNan,          // a NaN weight in 6 experts of every block: their keys are NaN in every row
  kMinusInf,     // a -inf bias on every expert but 9 (a few in each block)
};

struct Launch {
  int tokens = 1;
  int top_k = 1;
  Keys keys = Keys::kLevels;
  bool renormalize = true;
  float scaling = 1.0f;
};

dsl::Program router_program(const Launch& l, int gemv_step, bool scores_ahead) {
  using namespace monotile::dsl;  // NOLINT: the test's kernel reads as the DSL guide writes them
  Builder b("router_stage_test_t" + std::to_string(l.tokens) + "_k" + std::to_string(l.top_k) +
                "_s" + std::to_string(gemv_step) + (l.renormalize ? "" : "_raw") +
                (scores_ahead ? "" : "_sa0"),
            {.num_warps = 8});
  auto y = b.arg("y", ptr(bf16));
  auto w_gate = b.arg("w_gate", ptr(bf16));
  auto bias = b.arg("bias", ptr(f32));
  auto logits = b.arg("logits", ptr(f32));
  auto counters = b.arg("counters", ptr(i32));
  auto flags = b.arg("flags", ptr(i32));
  auto experts_out = b.arg("experts_out", ptr(i32));
  auto weights_out = b.arg("weights_out", ptr(f32));
  const HandoffContext hc = stage_handoff_args(b);
  router_rows({.hidden = kHidden,
               .tokens = l.tokens,
               .experts = kExperts,
               .top_k = l.top_k,
               .renormalize = l.renormalize,
               .scaling = l.scaling,
               .gemv_rows = kRows,
               .gemv_step = gemv_step,
               .scores_ahead = scores_ahead,
               .y = y,
               .y_flag = flags,
               .w_gate = w_gate,
               .bias = bias,
               .logits = logits,
               .block_counters = counters + 2,
               .counter = counters,
               .flag = flags + 1,
               .experts_out = experts_out,
               .weights_out = weights_out,
               .route_counter = counters + 1,
               .route_flag = flags + 2,
               .clock = {}},
              hc);
  return b.finish();
}

struct Inputs {
  std::vector<uint16_t> y, w_gate;  // bf16 [T, H], [E, H]
  std::vector<float> bias;
};

Inputs make_inputs(const Launch& l, std::mt19937& rng) {
  Inputs in;
  std::bernoulli_distribution half(0.5);
  std::uniform_int_distribution<int> level(-2, 2), position(0, kHidden - 1);
  in.y.resize(int64_t{l.tokens} * kHidden);
  for (uint16_t& v : in.y) v = model::bf16_from_double(half(rng) ? 1.0 : 0.0);
  // Each expert's row: 4 weights of -1..1 in steps of 1/2 (a logit sums at most 4 of them).
  std::vector<double> w(int64_t{kExperts} * kHidden, 0.0);
  for (int e = 0; e < kExperts; ++e) {
    for (int i = 0; i < 4; ++i) w[e * kHidden + position(rng)] = 0.5 * level(rng);
  }
  in.bias.assign(kExperts, 0.0f);
  std::uniform_int_distribution<int> expert(0, kExperts - 1);
  switch (l.keys) {
    case Keys::kLevels:
      for (int i = 0; i < 12; ++i) in.bias[expert(rng)] = 0.5f;
      break;
    case Keys::kBoundaryTie:
      for (int first : {60, 124}) {
        for (int e = first; e < first + 8; ++e) {
          std::copy_n(w.begin() + 60 * kHidden, kHidden, w.begin() + e * kHidden);
          in.bias[e] = 2.0f;
        }
      }
      break;
    case Keys::kNan:
      for (int block = 0; block < kBlocks; ++block) {
        for (int i = 0; i < 6; ++i) {
          const int e = std::min(block * kRows + 7 * i + block, kExperts - 1);
          w[e * kHidden + position(rng)] = std::numeric_limits<double>::quiet_NaN();
        }
      }
      break;
    case Keys::kMinusInf:
      in.bias.assign(kExperts, -std::numeric_limits<float>::infinity());
      for (int e : {5, 63, 64, 100, 130, 191, 250, 256, 299}) in.bias[e] = 0.0f;
      break;
  }
  in.w_gate.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) in.w_gate[i] = model::bf16_from_double(w[i]);
  return in;
}

void run_router_launches(int gemv_step, int programs, bool scores_ahead = true) {
  SCOPED_TRACE(::testing::Message()
               << "gemv_step " << gemv_step << " ("
               << router_splits(kExperts, kHidden, kRows, gemv_step) << " slices), " << programs
               << " programs" << (scores_ahead ? "" : ", the winners' scores after the sort"));
  const std::vector<Launch> launches = {
      {.tokens = 3, .top_k = 16},
      {.tokens = 5, .top_k = 6, .keys = Keys::kBoundaryTie},
      {.tokens = 1, .top_k = 1},
      {.tokens = 4, .top_k = 12, .keys = Keys::kNan},
      {.tokens = 2, .top_k = 64, .keys = Keys::kBoundaryTie},
      {.tokens = 5, .top_k = 100, .keys = Keys::kNan, .renormalize = false, .scaling = 2.5f},
      {.tokens = 3, .top_k = 40, .keys = Keys::kMinusInf},
      {.tokens = 2, .top_k = kExperts, .keys = Keys::kNan},
      {.tokens = 4, .top_k = kExperts, .keys = Keys::kMinusInf},
  };
  std::mt19937 rng = testing::case_rng();
  StageHarness stage(programs);
  auto buffer = [&](int64_t bytes, std::string_view name) { return stage.buffer(bytes, name); };
  const int64_t scratch =
      router_scratch_floats(kExperts, kHidden, kMaxTokens, kExperts, kRows, gemv_step);
  DeviceBuffer y_b = buffer(int64_t{kMaxTokens} * kHidden * 2, "y"),
               w_b = buffer(int64_t{kExperts} * kHidden * 2, "w_gate");
  DeviceBuffer bias_b = buffer(kExperts * 4, "bias"), logits_b = buffer(scratch * 4, "logits");
  DeviceBuffer counters_b = buffer((2 + kBlocks) * 4, "counters"), flags_b = buffer(3 * 4, "flags");
  DeviceBuffer experts_b = buffer(int64_t{kMaxTokens} * kExperts * 4, "experts_out"),
               weights_b = buffer(int64_t{kMaxTokens} * kExperts * 4, "weights_out");
  stage.put(counters_b, std::vector<int32_t>(2 + kBlocks, 0));
  const float nan = std::numeric_limits<float>::quiet_NaN();

  for (const Launch& l : launches) {
    SCOPED_TRACE(::testing::Message() << "T " << l.tokens << ", top_k " << l.top_k << ", keys "
                                      << static_cast<int>(l.keys));
    const Inputs in = make_inputs(l, rng);
    stage.put(y_b, in.y);
    stage.put(w_b, in.w_gate);
    stage.put(bias_b, in.bias);
    stage.put(logits_b,
              std::vector<float>(scratch, nan));  // a partial or candidate read unwritten fails
    // y published (launch_tag, slot 0)
    stage.put(flags_b, std::vector<int32_t>{stage.next_epoch() * 256 + 1, 0, 0});
    const int64_t slots = int64_t{l.tokens} * l.top_k;
    stage.put(experts_b, std::vector<int32_t>(slots, -7));
    stage.put(weights_b, std::vector<float>(slots, nan));
    const std::vector<KernelArg> args = {KernelArg::buffer(y_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(w_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(bias_b, dsl::ScalarType::kF32),
                                         KernelArg::buffer(logits_b, dsl::ScalarType::kF32),
                                         KernelArg::buffer(counters_b, dsl::ScalarType::kI32),
                                         KernelArg::buffer(flags_b, dsl::ScalarType::kI32),
                                         KernelArg::buffer(experts_b, dsl::ScalarType::kI32),
                                         KernelArg::buffer(weights_b, dsl::ScalarType::kF32)};
    ASSERT_TRUE(stage.launch(router_program(l, gemv_step, scores_ahead), args));
    const std::vector<int32_t> experts = stage.get<int32_t>(experts_b, slots);
    const std::vector<float> weights = stage.get<float>(weights_b, slots);
    ASSERT_FALSE(stage.failed()) << "a wait gave up: the counters lost count across launches";

    const std::vector<double> bias(in.bias.begin(), in.bias.end());
    for (int t = 0; t < l.tokens; ++t) {
      std::vector<double> logits(kExperts, 0.0);
      for (int e = 0; e < kExperts; ++e) {
        for (int h = 0; h < kHidden; ++h) {
          logits[e] += double{model::bf16_to_float(in.y[t * kHidden + h])} *
                       model::bf16_to_float(in.w_gate[e * kHidden + h]);
        }
      }
      const reference::RouterChoice want =
          reference::route(logits, bias, l.top_k, l.renormalize, l.scaling);
      for (int i = 0; i < l.top_k; ++i) {
        ASSERT_EQ(experts[t * l.top_k + i], want.experts[i]) << "row " << t << ", slot " << i;
        const double got = weights[t * l.top_k + i];
        EXPECT_FALSE(std::isnan(got)) << "row " << t << ", slot " << i;
        EXPECT_NEAR(got, want.weights[i], 1e-6 + 1e-5 * std::abs(want.weights[i]))
            << "row " << t << ", slot " << i;
      }
    }
  }
}

TEST(RouterStage, BlocksOfExpertsKeepTheReferenceOrder) {
  // 4 K slices of 64 (20 tasks), on fewer programs than tasks and on more.
  run_router_launches(64, 7);
  run_router_launches(64, 32);
}

TEST(RouterStage, OneSliceOfK) {
  EXPECT_EQ(router_splits(kExperts, kHidden, kRows, 256), 1);
  run_router_launches(256, 9);
}

// AMD's builds (K2Build::route_scores_ahead false): the winners' scores loaded after the sort.
TEST(RouterStage, ScoresAfterTheSort) {
  run_router_launches(64, 7, false);
}

TEST(RouterStage, CandidatesPerBlock) {
  EXPECT_EQ(router_blocks(kExperts, kRows), 5);
  EXPECT_EQ(router_block_candidates(6, kRows), 8);
  EXPECT_EQ(router_block_candidates(16, kRows), 16);
  EXPECT_EQ(router_block_candidates(100, kRows), 64);  // more than a block's share: the whole block
  EXPECT_EQ(router_candidates(896, 16, 64), 224);      // K3: 14 blocks' top 16
  EXPECT_EQ(router_scratch_floats(896, 7168, 4, 16, 64, 256), (7 + 1) * 4 * 896 + 2 * 4 * 224);
}

}  // namespace
}  // namespace monotile::kernels::k3
