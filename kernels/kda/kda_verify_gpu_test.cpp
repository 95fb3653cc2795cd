// The KDA verify kernel on the first GPU found (through make_build, the JIT and runtime::Kernel)
// against the float64 reference: H = 12, N = 4 and H = 96, N = 16 with the split each shape is
// exported with, padded requests and skipped stores included, both measured splits with and
// without the chunked form, and every variant the harness times at H = 12, N = 1 and 8; o and
// written slots poisoned first.
// Without a GPU every test skips with discovery's reason.
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/kda/kda_test_support.h"
#include "kernels/kda/kda_verify.h"
#include "tests/conformance/gpu_executor.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::kda {
namespace {

using testing::KdaCase;

class KdaVerifyGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<conformance::GpuExecutor>> executor = conformance::GpuExecutor::create();
    if (!executor.ok()) GTEST_SKIP() << "no GPU: " << executor.status();
    executor_ = *std::move(executor);
  }

  void expect_matches_reference(const KdaCase& c) {
    SCOPED_TRACE(kda_verify_name(c.config) + " seed " + std::to_string(c.seed));
    testing::KdaHostInputs inputs = testing::make_inputs(c);
    absl::StatusOr<KdaStepResult> ref = kda_verify_reference(inputs.values());
    ASSERT_TRUE(ref.ok()) << ref.status();
    absl::StatusOr<testing::KdaOutputs> got = testing::run_kda(*executor_, kda_verify_program(c.config), inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(testing::check_kda(inputs, *got, *ref), "");
    executor_->release_all();
  }

  std::unique_ptr<conformance::GpuExecutor> executor_;
};

TEST_F(KdaVerifyGpu, Heads12Requests4) {
  KdaCase c;
  c.config = {.heads = 12, .requests = 4, .q = 4};
  c.accepted = {1, 2, 3, 4};
  c.seed = monotile::testing::case_rng()();
  expect_matches_reference(c);
}

TEST_F(KdaVerifyGpu, Heads12Requests4WithPaddingAndSkippedStores) {
  KdaCase c;
  c.config = {.heads = 12, .requests = 4, .q = 4};
  c.padded = 1;
  c.later_slot_zero = true;
  c.negative_read = true;
  c.seed = monotile::testing::case_rng()();
  expect_matches_reference(c);
}

TEST_F(KdaVerifyGpu, Heads96Requests16) {
  KdaCase c;
  c.config = {.heads = 96, .requests = 16, .q = 4};
  c.padded = 2;
  c.later_slot_zero = true;
  c.negative_read = true;
  c.slot_pad = 128 * 128;
  c.seed = monotile::testing::case_rng()();
  expect_matches_reference(c);
}

TEST_F(KdaVerifyGpu, BothSplitsAndTheChunkedFormAtTwoRequests) {
  for (auto [block_v, num_warps] : {std::pair{8, 2}, std::pair{32, 4}}) {
    for (bool chunked : {false, true}) {
      KdaCase c;
      c.config = {.heads = 12, .requests = 2, .q = 4, .block_v = block_v, .num_warps = num_warps, .chunked = chunked};
      c.accepted = {3, 2};
      c.seed = monotile::testing::case_rng()();
      expect_matches_reference(c);
    }
  }
}

TEST_F(KdaVerifyGpu, EveryVariantAtOneAndEightRequests) {
  std::vector<KdaVerifyConfig> variants = kda_verify_variants(12, 1, 4);
  for (const KdaVerifyConfig& config : kda_verify_variants(12, 8, 4)) variants.push_back(config);
  for (const KdaVerifyConfig& config : variants) {
    SCOPED_TRACE(kda_verify_name(config));
    KdaCase c;
    c.config = config;
    c.seed = monotile::testing::case_rng()();
    expect_matches_reference(c);
  }
}

}  // namespace
}  // namespace monotile::kernels::kda
