// The AttnRes stage (attn_res_stage.h) on the interpreter against the float64 reference
// (reference::attn_res_row), at K3's hidden size, where the column chunk depends on the width: one
// scratch and one set of counters serve launches of widths 1 to 16 in turn, nothing zeroed between
// them, as a rank's builds share them. Outputs are poisoned before every launch.
#include "kernels/k3/attn_res_stage.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k1_check.h"
#include "kernels/k3/stage_test_support.h"
#include "kernels/reference/k3_parts.h"
#include "model/dtype.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::k3 {
namespace {

using conformance::DeviceBuffer;
using conformance::KernelArg;

// K3's: chunks of 256 up to 4 rows, 512 at 8, 1024 at 16.
constexpr int kHidden = 7168;
constexpr int kBlocks = 3;  // block sources before the prefix
constexpr int kMaxTokens = 16;
constexpr int kPrograms = 128;
constexpr float kEps = 1e-6f;

dsl::Program attn_res_program(int tokens) {
  using namespace monotile::dsl;  // NOLINT: the test's kernel reads as the DSL guide writes them
  Builder b("attn_res_stage_test_t" + std::to_string(tokens), {.num_warps = 8});
  auto prefix = b.arg("prefix", ptr(bf16));
  auto delta = b.arg("delta", ptr(bf16));
  auto blocks = b.arg("blocks", ptr(bf16));
  auto token_stride = b.arg("token_stride", i64);
  auto block_stride = b.arg("block_stride", i64);
  auto norm = b.arg("norm", ptr(bf16));
  auto proj = b.arg("proj", ptr(bf16));
  auto out_norm = b.arg("out_norm", ptr(bf16));
  auto out = b.arg("out", ptr(bf16));
  auto partials = b.arg("partials", ptr(f32));
  auto counters = b.arg("counters", ptr(i32));
  auto flags = b.arg("flags", ptr(i32));
  const HandoffContext hc = stage_handoff_args(b);
  attn_res_rows({.hidden = kHidden,
                 .tokens = tokens,
                 .nblocks = full({}, kBlocks, i32),
                 .write_index = std::nullopt,
                 .eps = kEps,
                 .out_eps = kEps,
                 .prefix = prefix,
                 .delta = delta,
                 .reset = std::nullopt,
                 .delta_flag = std::nullopt,
                 .blocks = blocks,
                 .token_stride = token_stride,
                 .block_stride = block_stride,
                 .norm = norm,
                 .proj = proj,
                 .out_norm = out_norm,
                 .out = out,
                 .partials = partials,
                 .counters = counters,
                 .flags = flags,
                 .clock = {}},
                hc);
  return b.finish();
}

std::vector<uint16_t> random_bf16(std::mt19937& rng, size_t n, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<uint16_t> bits(n);
  for (uint16_t& b : bits) b = model::bf16_from_double(normal(rng));
  return bits;
}

std::vector<double> to_double(std::span<const uint16_t> bits) {
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = model::bf16_to_float(bits[i]);
  return out;
}

TEST(AttnResStage, WidthsOfOtherChunksShareOneScratch) {
  EXPECT_EQ(attn_res_chunk(kHidden, 1), 256);
  EXPECT_EQ(attn_res_chunk(kHidden, 4), 256);
  EXPECT_EQ(attn_res_chunk(kHidden, 8), 512);
  EXPECT_EQ(attn_res_chunk(kHidden, 16), 1024);
  EXPECT_EQ(attn_res_chunk(256, 16), 256);  // k3-tiny: one chunk a row at every width
  EXPECT_EQ(attn_res_row_span(kHidden), 32);

  std::mt19937 rng = testing::case_rng();
  StageHarness stage(kPrograms);
  auto buffer = [&](size_t bytes, std::string_view name) { return stage.buffer(bytes, name); };
  const size_t row = kHidden;
  // blocks[t, b, c] with a token stride wider than the blocks (another layer's rows in between).
  const int64_t block_stride = kHidden, token_stride = (kBlocks + 2) * int64_t{kHidden};
  auto norm = random_bf16(rng, row, 1.0), proj = random_bf16(rng, row, 0.05),
       out_norm = random_bf16(rng, row, 1.0);
  DeviceBuffer prefix_b = buffer(kMaxTokens * row * 2, "prefix"),
               delta_b = buffer(kMaxTokens * row * 2, "delta");
  DeviceBuffer blocks_b = buffer(kMaxTokens * token_stride * 2, "blocks");
  DeviceBuffer norm_b = buffer(row * 2, "norm"), proj_b = buffer(row * 2, "proj"),
               out_norm_b = buffer(row * 2, "out_norm");
  DeviceBuffer out_b = buffer(kMaxTokens * row * 2, "out");
  DeviceBuffer partials_b = buffer(int64_t{kAttnResTasks} * kAttnResPartials * 4, "partials");
  DeviceBuffer counters_b = buffer(32 * 4, "counters"), flags_b = buffer(17 * 4, "flags");
  stage.put(norm_b, norm);
  stage.put(proj_b, proj);
  stage.put(out_norm_b, out_norm);
  stage.put(counters_b, std::vector<int32_t>(32, 0));
  stage.put(flags_b, std::vector<int32_t>(17, 0));

  for (int tokens : {4, 16, 1, 4, 8, 2, 16, 4, 10}) {
    SCOPED_TRACE(::testing::Message()
                 << "width " << tokens << " (chunk " << attn_res_chunk(kHidden, tokens) << ")");
    auto prefix = random_bf16(rng, tokens * row, 1.0), delta = random_bf16(rng, tokens * row, 0.5);
    auto blocks = random_bf16(rng, tokens * token_stride, 1.0);
    stage.put(prefix_b, prefix);
    stage.put(delta_b, delta);
    stage.put(blocks_b, blocks);
    stage.put(out_b, std::vector<uint16_t>(tokens * row, 0x7fc1));  // NaN: an unwritten value fails
    const std::vector<KernelArg> args = {KernelArg::buffer(prefix_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(delta_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(blocks_b, dsl::ScalarType::kBf16),
                                         KernelArg::integer(dsl::ScalarType::kI64, token_stride),
                                         KernelArg::integer(dsl::ScalarType::kI64, block_stride),
                                         KernelArg::buffer(norm_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(proj_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(out_norm_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(out_b, dsl::ScalarType::kBf16),
                                         KernelArg::buffer(partials_b, dsl::ScalarType::kF32),
                                         KernelArg::buffer(counters_b, dsl::ScalarType::kI32),
                                         KernelArg::buffer(flags_b, dsl::ScalarType::kI32)};
    ASSERT_TRUE(stage.launch(attn_res_program(tokens), args));

    const std::vector<uint16_t> out = stage.get<uint16_t>(out_b, tokens * row),
                                prefix_after = stage.get<uint16_t>(prefix_b, tokens * row);
    EXPECT_FALSE(stage.failed()) << "a wait gave up: the counters lost count across widths";

    // The reference: P' = bf16(P + d), then each row mixed from its blocks and P'.
    std::vector<double> want_prefix(tokens * row), want_out(tokens * row);
    const auto norm_d = to_double(norm), proj_d = to_double(proj), out_norm_d = to_double(out_norm);
    const auto blocks_d = to_double(blocks);
    for (int t = 0; t < tokens; ++t) {
      for (size_t c = 0; c < row; ++c) {
        want_prefix[t * row + c] =
            model::round_to_bf16(double{model::bf16_to_float(prefix[t * row + c])} +
                                 model::bf16_to_float(delta[t * row + c]));
      }
      std::vector<std::span<const double>> sources;
      for (int b = 0; b < kBlocks; ++b)
        sources.emplace_back(blocks_d.data() + t * token_stride + b * block_stride, row);
      sources.emplace_back(want_prefix.data() + t * row, row);
      auto mixed = reference::attn_res_row(sources, norm_d, proj_d, out_norm_d, kEps,
                                           reference::Rounding::kBf16);
      std::copy(mixed.begin(), mixed.end(), want_out.begin() + t * row);
    }
    const std::vector<int64_t> shape = {tokens, kHidden};
    OutputCheck prefix_check =
        check_output("prefix", to_double(prefix_after), want_prefix, shape, rule_for("prefix"));
    EXPECT_TRUE(prefix_check.passed()) << prefix_check.first_failure;
    OutputCheck out_check = check_output("y", to_double(out), want_out, shape, rule_for("y"));
    EXPECT_TRUE(out_check.passed())
        << out_check.first_failure << " (worst " << out_check.worst_ulps << " ulps)";
  }
}

}  // namespace
}  // namespace monotile::kernels::k3
