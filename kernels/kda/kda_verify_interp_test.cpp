// The KDA verify program on the CPU interpreter against the float64 reference at the real head dim
// (128) with small H and N: fresh random inputs, o and the written slots poisoned first, padded
// requests, skipped stores, every num_accepted, two block_v splits; and its error messages.
#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "dsl/error.h"
#include "dsl/interp/float16.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kda/kda_test_support.h"
#include "kernels/kda/kda_verify.h"
#include "tests/conformance/interpreter_executor.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::kda {
namespace {

using ::testing::HasSubstr;
using testing::KdaCase;

// Each call draws the next stream of the running test from the run's seed (MONOTILE_TEST_SEED).
uint32_t fresh_seed() { return monotile::testing::case_rng()(); }

void expect_matches_reference(const KdaCase& c) {
  SCOPED_TRACE("seed " + std::to_string(c.seed));
  testing::KdaHostInputs inputs = testing::make_inputs(c);
  absl::StatusOr<KdaStepResult> ref = kda_verify_reference(inputs.values());
  ASSERT_TRUE(ref.ok()) << ref.status();
  conformance::InterpreterExecutor executor;
  absl::StatusOr<testing::KdaOutputs> got = testing::run_kda(executor, kda_verify_program(c.config), inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(testing::check_kda(inputs, *got, *ref), "");
}

TEST(KdaVerifyInterp, MatchesReferenceWithEveryAcceptedCount) {
  KdaCase c;
  c.config = {.heads = 2, .requests = 4, .q = 4, .block_v = 32};
  c.accepted = {1, 2, 3, 4};
  c.seed = fresh_seed();
  expect_matches_reference(c);
}

TEST(KdaVerifyInterp, PaddedRequestsAndSkippedStores) {
  // Request 0: slot 0 in a column other than its read column (that store skipped); request 1: slot -1
  // in its read column (zero rows, nothing read or stored); request 3: padding (every slot 0).
  KdaCase c;
  c.config = {.heads = 2, .requests = 4, .q = 4, .block_v = 8};
  c.padded = 1;
  c.later_slot_zero = true;
  c.negative_read = true;
  c.seed = fresh_seed();
  expect_matches_reference(c);
}

TEST(KdaVerifyInterp, InputsLoadedBeforeTheStateAndAButterflyPerRow) {
  KdaCase c;
  c.config = {.heads = 2,
              .requests = 3,
              .q = 4,
              .block_v = 32,
              .multi_row_reductions = false,
              .inputs_before_state = true};
  c.accepted = {4, 1, 3};
  c.seed = fresh_seed();
  expect_matches_reference(c);
}

TEST(KdaVerifyInterp, SmallBlocksAndThreeHeads) {
  KdaCase c;
  c.config = {.heads = 3, .requests = 2, .q = 4, .block_v = 16, .num_warps = 2};
  c.slot_pad = 128;
  c.seed = fresh_seed();
  expect_matches_reference(c);
}

TEST(KdaVerifyInterp, ChunkedFormMatchesReference) {
  KdaCase c;
  c.config = {.heads = 2, .requests = 4, .q = 4, .block_v = 16, .chunked = true};
  c.accepted = {4, 3, 2, 1};
  c.padded = 1;
  c.later_slot_zero = true;
  c.seed = fresh_seed();
  expect_matches_reference(c);
}

TEST(KdaVerifyInterp, ReferenceSeesPoisonedOutputs) {
  // The check itself: an output left unwritten (NaN) or a state off by more than f32 error fails.
  KdaCase c;
  c.config = {.heads = 1, .requests = 1, .q = 4, .block_v = 32};
  c.accepted = {2};
  testing::KdaHostInputs inputs = testing::make_inputs(c);
  absl::StatusOr<KdaStepResult> ref = kda_verify_reference(inputs.values());
  ASSERT_TRUE(ref.ok()) << ref.status();
  testing::KdaOutputs outputs;
  outputs.o.resize(ref->o.size());
  outputs.state.resize(ref->state.size());
  for (size_t i = 0; i < ref->o.size(); ++i) outputs.o[i] = dsl::interp::bf16_bits_from_double(ref->o[i]);
  for (size_t i = 0; i < ref->state.size(); ++i) outputs.state[i] = static_cast<float>(ref->state[i]);
  EXPECT_EQ(testing::check_kda(inputs, outputs, *ref), "");
  testing::KdaOutputs unwritten = outputs;
  unwritten.o[5] = 0x7fc1;
  EXPECT_THAT(testing::check_kda(inputs, unwritten, *ref), HasSubstr("is NaN"));
  testing::KdaOutputs off = outputs;
  const size_t written = size_t(inputs.state_indices[3]) * inputs.slot_stride + 77;
  off.state[written] += 1e-3f;
  EXPECT_THAT(testing::check_kda(inputs, off, *ref), HasSubstr("expected"));
}

TEST(KdaVerifyInterp, RefusesASlotStrideThatBreaksItsPromise) {
  KdaCase c;
  c.config = {.heads = 1, .requests = 1, .q = 4, .block_v = 32};
  c.slot_pad = 2;  // H D D + 2: not a multiple of 4
  testing::KdaHostInputs inputs = testing::make_inputs(c);
  conformance::InterpreterExecutor executor;
  absl::StatusOr<testing::KdaOutputs> got = testing::run_kda(executor, kda_verify_program(c.config), inputs);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("argument 8 \"slot_stride\" of kernel \"kda_verify_h1_n1_q4\": value 16386 is not a "
                        "multiple of 4, which the kernel declares"));
}

// The reference itself: one token from a zero state is S = beta v k^T, o = beta v (k . q) with the
// normalized k and the normalized, scaled q; and the state after it lands in column 0.
TEST(KdaReference, OneTokenFromAZeroStateIsTheClosedForm) {
  constexpr int D = kHeadDim;
  std::mt19937 rng(fresh_seed());
  std::normal_distribution<double> dist(0.0, 1.0);
  KdaStepValues in;
  in.heads = 1, in.requests = 1, in.q = 1;
  for (auto* v : {&in.q_in, &in.k_in, &in.v_in, &in.g_in}) {
    v->resize(D);
    for (double& x : *v) x = dist(rng);
  }
  in.beta_raw = {0.3};
  in.a_log = {0.1};
  in.dt_bias.assign(D, 0.2);
  in.slot_stride = D * D;
  in.state.assign(3 * D * D, 0.0);
  in.state_indices = {2};  // read slot 2 (zeros), then write the state after the token there
  in.num_accepted = {1};
  absl::StatusOr<KdaStepResult> ref = kda_verify_reference(in);
  ASSERT_TRUE(ref.ok()) << ref.status();
  double qq = 0, kk = 0, kq = 0;
  for (int i = 0; i < D; ++i) qq += in.q_in[i] * in.q_in[i], kk += in.k_in[i] * in.k_in[i], kq += in.q_in[i] * in.k_in[i];
  const double q_scale = 1.0 / std::sqrt(qq + 1e-6) / std::sqrt(double(D)), k_scale = 1.0 / std::sqrt(kk + 1e-6);
  const double beta = 1.0 / (1.0 + std::exp(-0.3));
  for (int v = 0; v < D; ++v) {
    EXPECT_NEAR(ref->o[v], beta * in.v_in[v] * kq * q_scale * k_scale, 1e-12);
    for (int k = 0; k < D; k += 37) {
      EXPECT_NEAR(ref->state[2 * D * D + v * D + k], beta * in.v_in[v] * in.k_in[k] * k_scale, 1e-12);
    }
  }
}

TEST(KdaReference, RefusesAnAcceptedCountOutsideOneToQ) {
  KdaCase c;
  c.config = {.heads = 1, .requests = 2, .q = 4, .block_v = 32};
  testing::KdaHostInputs inputs = testing::make_inputs(c);
  KdaStepValues values = inputs.values();
  values.num_accepted[1] = 5;
  absl::StatusOr<KdaStepResult> ref = kda_verify_reference(values);
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(std::string(ref.status().message()), "kda reference: num_accepted[1] = 5, expected 1..4");
}

TEST(KdaVerifyProgram, NameGridAndChosenSplit) {
  KdaVerifyConfig config{.heads = 12, .requests = 4};
  dsl::Program program = kda_verify_program(config);
  EXPECT_EQ(program.name, "kda_verify_h12_n4_q4");
  KdaVerifyConfig resolved = resolve(config);
  EXPECT_EQ(kda_verify_grid(config), (std::array<int, 3>{kHeadDim / resolved.block_v, 12, 4}));
  EXPECT_EQ(kHeadDim % resolved.block_v, 0);
}

TEST(KdaVerifyProgram, SplitAndReductionFormFollowTheMeasuredChoice) {
  // 8 rows on 2 warps with a butterfly per row while few pairs fill few waves; 32 rows on 4 warps
  // with multi-row reductions from H N = 96 (one full wave of them) and beyond two of their waves.
  for (auto [heads, requests, block_v] :
       {std::tuple{12, 1, 8}, std::tuple{32, 2, 8}, std::tuple{12, 8, 32}, std::tuple{32, 8, 32},
        std::tuple{96, 16, 32}}) {
    KdaVerifyConfig resolved = resolve({.heads = heads, .requests = requests});
    SCOPED_TRACE(kda_verify_name(resolved));
    EXPECT_EQ(resolved.block_v, block_v);
    EXPECT_EQ(resolved.num_warps, block_v == 8 ? 2 : 4);
    EXPECT_EQ(resolved.multi_row_reductions, block_v == 32);
    EXPECT_FALSE(resolved.inputs_before_state);
  }
  EXPECT_EQ(
      resolve({.block_v = 8, .num_warps = 2, .multi_row_reductions = true}).multi_row_reductions,
      true);
}

TEST(KdaVerifyProgram, BadBlockVNamesTheCallerAndTheValue) {
  try {
    kda_verify_program({.heads = 12, .requests = 1, .q = 4, .block_v = 12});
    FAIL() << "no error";
  } catch (const dsl::Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("kda_verify_program at "));
    EXPECT_THAT(error.what(), HasSubstr("kda_verify_interp_test.cpp"));
    EXPECT_THAT(error.what(), HasSubstr("block_v must be a power of two dividing 128"));
    EXPECT_EQ(error.actual(), "12");
  }
}

TEST(KdaVerifyProgram, BadShapeArguments) {
  EXPECT_THAT([] { kda_verify_program({.heads = 0}); },
              ::testing::ThrowsMessage<dsl::Error>(HasSubstr("heads must be at least 1")));
  EXPECT_THAT([] { kda_verify_program({.heads = 2, .requests = 0}); },
              ::testing::ThrowsMessage<dsl::Error>(HasSubstr("requests must be at least 1")));
  EXPECT_THAT([] { kda_verify_program({.heads = 2, .requests = 1, .q = 9}); },
              ::testing::ThrowsMessage<dsl::Error>(HasSubstr("q (tokens per request) must be in 1..8")));
  EXPECT_THAT([] { kda_verify_program({.heads = 2, .requests = 1, .q = 4, .block_v = 32, .num_warps = 3}); },
              ::testing::ThrowsMessage<dsl::Error>(HasSubstr("num_warps must be a power of two in 1..8")));
}

}  // namespace
}  // namespace monotile::kernels::kda
