// The exchange probe on the interpreter, two ranks as threads: every rank's reduced rows are
// bf16(src_0 + src_1) of the ranks' bf16 rows, summed in f32 in rank order, bit for bit the same on
// both ranks; over three launches (both parity halves and back) with fresh rows, the output
// poisoned before each; each program's clock stamps end after they start.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/program_build.h"
#include "model/dtype.h"
#include "runtime/decode/exchange_probe_rank.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

constexpr int kTokens = 3;
constexpr int64_t kHidden = 256;
constexpr int kLaunches = 3;

std::vector<uint16_t> random_rows(std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<uint16_t> bits(static_cast<size_t>(kTokens * kHidden));
  for (uint16_t& b : bits) b = model::bf16_from_double(normal(rng));
  return bits;
}

TEST(ExchangeProbe, EveryRankHoldsTheRankOrderSumBitForBit) {
  // Each launch's rows of each rank, drawn before the ranks start.
  std::mt19937 rng(20261207);
  std::array<std::array<std::vector<uint16_t>, 2>, kLaunches> rows;
  for (auto& launch : rows) {
    for (auto& rank : launch) rank = random_rows(rng);
  }
  std::array<std::array<std::vector<uint16_t>, 2>, kLaunches> got;
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
    MT_ASSIGN_OR_RETURN(
        std::unique_ptr<ExchangeProbeRank> probe,
        ExchangeProbeRank::create(*device, group, jit::Jit::process_default(), {kTokens}, kHidden,
                                  /*programs=*/3, /*wait_ns=*/20'000'000'000));
    MT_ASSIGN_OR_RETURN(Stream stream, device->create_stream());
    for (int l = 0; l < kLaunches; ++l) {
      MT_RETURN_IF_ERROR(probe->write_source(kTokens, rows[l][group.rank()]));
      MT_RETURN_IF_ERROR(probe->poison_reduced());
      MT_RETURN_IF_ERROR(probe->launch(kTokens, stream));
      MT_RETURN_IF_ERROR(device->synchronize(stream));
      MT_RETURN_IF_ERROR(probe->check_health());
      MT_ASSIGN_OR_RETURN(got[l][group.rank()], probe->reduced(kTokens));
      MT_ASSIGN_OR_RETURN(std::vector<int64_t> clock, probe->clock());
      for (int p = 0; p < probe->programs(); ++p) {
        if (clock[2 * p + 1] < clock[2 * p]) {
          return absl::InternalError(absl::StrCat("program ", p, " ended before it started"));
        }
      }
    }
    return absl::OkStatus();
  });
  for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
  for (int l = 0; l < kLaunches; ++l) {
    SCOPED_TRACE(absl::StrCat("launch ", l));
    std::vector<uint16_t> expected(rows[l][0].size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const float sum = static_cast<float>(model::bf16_to_float(rows[l][0][i])) +
                        static_cast<float>(model::bf16_to_float(rows[l][1][i]));
      expected[i] = model::bf16_from_double(sum);
    }
    EXPECT_EQ(got[l][0], expected);
    EXPECT_EQ(got[l][1], got[l][0]);
  }
}

// exchange_bench's chains: exchanges back to back, the epoch bumped on the device between them (no
// host write), launched one by one and captured into a graph replayed twice, on two ranks: the
// device's epoch counts every exchange that ran (none at the capture), no wait gave up, the reduced
// rows are the rank-order sum on both ranks; a single launch after them goes on from the device's
// epoch.
TEST(ExchangeProbe, ChainsBumpTheEpochOnTheDeviceBetweenExchanges) {
  std::mt19937 rng(20261208);
  std::array<std::vector<uint16_t>, 2> rows = {random_rows(rng), random_rows(rng)};
  std::array<std::vector<uint16_t>, 2> got;
  std::array<int32_t, 2> epochs = {0, 0};
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
    MT_ASSIGN_OR_RETURN(
        std::unique_ptr<ExchangeProbeRank> probe,
        ExchangeProbeRank::create(*device, group, jit::Jit::process_default(), {kTokens}, kHidden,
                                  /*programs=*/2, /*wait_ns=*/20'000'000'000));
    MT_ASSIGN_OR_RETURN(Stream stream, device->create_stream());
    MT_RETURN_IF_ERROR(probe->write_source(kTokens, rows[group.rank()]));
    MT_RETURN_IF_ERROR(probe->launch(kTokens, stream));
    MT_RETURN_IF_ERROR(probe->launch_chain(kTokens, 4, stream));
    MT_RETURN_IF_ERROR(device->synchronize(stream));
    MT_RETURN_IF_ERROR(probe->check_health());
    MT_ASSIGN_OR_RETURN(const int32_t after_chain, probe->device_epoch());
    if (after_chain != 5) {
      return absl::InternalError(absl::StrCat("epoch ", after_chain, " after 1 + 4, expected 5"));
    }
    // A chain of 2 captured (nothing runs) and replayed twice: 4 more on the device.
    MT_RETURN_IF_ERROR(device->begin_capture(stream));
    absl::Status recorded = probe->launch_chain(kTokens, 2, stream);
    MT_ASSIGN_OR_RETURN(Graph graph, device->end_capture(stream));
    MT_RETURN_IF_ERROR(recorded);
    MT_ASSIGN_OR_RETURN(const int32_t after_capture, probe->device_epoch());
    if (after_capture != 5) {
      return absl::InternalError(
          absl::StrCat("epoch ", after_capture, " after the capture, expected 5"));
    }
    for (int replay = 0; replay < 2; ++replay) MT_RETURN_IF_ERROR(device->replay(graph, stream));
    MT_RETURN_IF_ERROR(device->synchronize(stream));
    MT_RETURN_IF_ERROR(probe->check_health());
    MT_RETURN_IF_ERROR(probe->adopt_device_epoch());
    MT_RETURN_IF_ERROR(probe->poison_reduced());
    MT_RETURN_IF_ERROR(probe->launch(kTokens, stream));
    MT_RETURN_IF_ERROR(device->synchronize(stream));
    MT_RETURN_IF_ERROR(probe->check_health());
    MT_ASSIGN_OR_RETURN(epochs[group.rank()], probe->device_epoch());
    MT_ASSIGN_OR_RETURN(got[group.rank()], probe->reduced(kTokens));
    return absl::OkStatus();
  });
  for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(epochs[0], 10);
  EXPECT_EQ(epochs[1], 10);
  std::vector<uint16_t> expected(rows[0].size());
  for (size_t i = 0; i < expected.size(); ++i) {
    expected[i] = model::bf16_from_double(static_cast<float>(model::bf16_to_float(rows[0][i])) +
                                          static_cast<float>(model::bf16_to_float(rows[1][i])));
  }
  EXPECT_EQ(got[0], expected);
  EXPECT_EQ(got[1], got[0]);
}

// What the GPU benchmark loads: the probe at TP 2 and 8, each rank count's rows, lowered for both
// vendors.
TEST(ExchangeProbe, LowersForBothVendors) {
  for (const char* name : {"sm_90a", "gfx942"}) {
    const dsl::Target target = *dsl::Target::parse(name);
    for (int tokens : {4, 16}) {
      for (int tp : {2, 8}) {
        absl::StatusOr<jit::ProgramBuild> build = jit::make_build(
            kernels::k3::exchange_probe_program({.tp = tp, .rank = tp - 1, .tokens = tokens}),
            target);
        EXPECT_TRUE(build.ok()) << name << " TP " << tp << " T " << tokens << ": "
                                << build.status();
      }
    }
  }
}

}  // namespace
}  // namespace monotile::runtime::decode
