// The MXFP4 GEMV task on the interpreter against the checkpoint layout's float64 dequantization
// (model/mxfp4.h): every nibble code, both signs, scale codes 0 (subnormal) to 254, rows past the
// end masked, 1 to 16 tokens, fewer programs than tasks, K steps of 512, 256 and 32 (one scale
// group), loads one to four steps ahead.
// Outputs poisoned beforehand.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "kernels/reference/k3_parts.h"
#include "model/dtype.h"
#include "model/mxfp4.h"
#include "tests/conformance/interpreter_executor.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::k3 {
namespace {

using dsl::ScalarType;
using conformance::DeviceBuffer;
using conformance::KernelArg;

// One argument of a test launch: bytes uploaded to the interpreter as a buffer of `type`.
struct Upload {
  std::span<const std::byte> bytes;
  ScalarType type;
  std::string_view name;
};

// Runs `program` on the interpreter as one program instance with `uploads` as buffers, then
// `scalars`, then the output (f32 [kMxfp4Tokens, n], poisoned with NaN beforehand); returns it.
std::vector<float> run(const dsl::Program& program, const std::vector<Upload>& uploads,
                       const std::vector<KernelArg>& scalars, int64_t n) {
  conformance::InterpreterExecutor executor;
  auto upload = [&](std::span<const std::byte> host, std::string_view name) {
    DeviceBuffer buffer = *executor.allocate(host.size(), name);
    EXPECT_TRUE(executor.copy_in(buffer, host).ok());
    return buffer;
  };
  std::vector<float> out(n * kMxfp4Tokens, std::numeric_limits<float>::quiet_NaN());
  DeviceBuffer out_buffer = upload(std::as_bytes(std::span(out)), "out");
  std::vector<KernelArg> args;
  for (const Upload& u : uploads) args.push_back(KernelArg::buffer(upload(u.bytes, u.name), u.type));
  args.insert(args.end(), scalars.begin(), scalars.end());
  args.push_back(KernelArg::buffer(out_buffer, ScalarType::kF32));
  absl::Status launched = executor.launch(program, {1, 1, 1}, args);
  EXPECT_TRUE(launched.ok()) << launched;
  EXPECT_TRUE(executor.copy_out(std::as_writable_bytes(std::span(out)), out_buffer).ok());
  return out;
}

// Every real token's row against `want(r, t)` = {value, the sum of its terms' magnitudes}: exact
// products (3 significant bits times 8) summed in f32, k roundings at most. Padding tokens read zero
// x, so their rows are 0; with `x_padded` they read whatever x holds there, and are not checked.
void expect_rows(const std::vector<float>& out, int64_t n, int tokens,
                 const std::function<std::pair<double, double>(int64_t, int)>& want, bool x_padded = false,
                 int token_rows = kMxfp4Tokens) {
  for (int64_t r = 0; r < n; ++r) {
    for (int t = 0; t < token_rows; ++t) {
      const float got = out[t * n + r];
      if (t >= tokens) {
        if (!x_padded) {
          EXPECT_EQ(got, 0.0f) << "row " << r << ", padding token " << t;
        }
        continue;
      }
      const auto [value, magnitude] = want(r, t);
      EXPECT_NEAR(got, value, 1e-6 * magnitude + 1e-37) << "row " << r << ", token " << t;
    }
  }
}

// With `x_padded`, x has kMxfp4Tokens rows and those past `tokens` are NaN: read unmasked
// (Mxfp4Gemv::x_padded), they must reach no real token's row.
// `token_rows` is the GEMV's token dim (Mxfp4Gemv::token_rows: 16, or 8 as NVIDIA's builds up to 8 tokens).
// With `words` (Mxfp4Gemv::words) x is stored in mxfp4_x_position's order. `large_code` is one
// scale's code far from 1; with a scale bias (Mxfp4Gemv::scale_bias) it chooses the task's decode.
void expect_matches_the_reference(int tokens, int step, int ahead = 2, bool pairs = false, bool x_padded = false,
                                  int token_rows = kMxfp4Tokens, bool x_ahead = false, bool words = false,
                                  int scale_bias = 0, int large_code = 200, int prefetch_steps = 0,
                                  int stages = 0, int stage_steps = 1, bool codes_ahead = false, int64_t n = 80,
                                  bool task_loop = false) {
  const int64_t k = 512, groups = k / 32;
  std::mt19937 rng = testing::case_rng();
  std::vector<uint8_t> packed(n * k / 2), scales(n * groups);
  std::uniform_int_distribution<int> byte(0, 255), scale(118, 130);
  for (uint8_t& b : packed) b = static_cast<uint8_t>(byte(rng));
  for (uint8_t& s : scales) s = static_cast<uint8_t>(scale(rng));
  scales[3] = 0;     // 2^-127, a subnormal
  scales[17] = static_cast<uint8_t>(large_code);  // 200: 2^73 (254 would overflow bf16 at magnitude 2 and up)
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(tokens * k);
  std::vector<uint16_t> x_bits((x_padded ? token_rows : tokens) * k, 0x7fc0);  // bf16 NaN past the tokens
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t bits = model::bf16_from_double(normal(rng));
    const int64_t at = words ? (i / k) * k + mxfp4_x_position(i % k) : i;
    x_bits[at] = bits;
    x[i] = model::bf16_to_float(bits);
  }
  const std::vector<double> w = model::mxfp4_dequantize(packed, scales, n, k, 32);

  const std::vector<float> out = run(
      mxfp4_gemv_program(n, k, tokens, 8, step, ahead, pairs, x_padded, token_rows, x_ahead, words, scale_bias,
                         prefetch_steps, 0, stages, dsl::Mxfp4Placement::kCopies, stage_steps, codes_ahead,
                         task_loop),
      {{std::as_bytes(std::span(packed)), ScalarType::kU8, "packed"},
       {std::as_bytes(std::span(scales)), ScalarType::kU8, "scales"},
       // x's bf16 pairs as the words the GEMV reads (element 2j in word j's low half: little-endian).
       {std::as_bytes(std::span(x_bits)), ScalarType::kI32, "x"}},
      {}, n);
  expect_rows(out, n, tokens, [&](int64_t r, int t) {
    double want = 0, magnitude = 0;
    for (int64_t i = 0; i < k; ++i) {
      want += w[r * k + i] * x[t * k + i];
      magnitude += std::abs(w[r * k + i] * x[t * k + i]);
    }
    return std::pair{want, magnitude};
  }, x_padded, token_rows);
}

class Mxfp4Gemv : public ::testing::TestWithParam<int> {};

TEST_P(Mxfp4Gemv, MatchesTheDequantizedReference) { expect_matches_the_reference(GetParam(), 256); }

// 32-wide steps: one scale group a step, 16 bytes a row, 16 steps, each loaded two steps before.
TEST_P(Mxfp4Gemv, MatchesTheReferenceInSingleGroupSteps) { expect_matches_the_reference(GetParam(), 32); }

// The same with each step loaded by the one before only (Mxfp4Gemv::ahead 1).
TEST_P(Mxfp4Gemv, MatchesTheReferenceOneStepAhead) { expect_matches_the_reference(GetParam(), 32, 1); }

// K = 512 in one step of 512: the steps loaded ahead of it are that step again.
TEST_P(Mxfp4Gemv, MatchesTheReferenceInOneStep) { expect_matches_the_reference(GetParam(), 512); }

// Three steps ahead over 16 steps: the loop, unrolled three times, runs past the last step in its
// last iteration, whose extra sub-steps must leave the accumulators as they are.
TEST_P(Mxfp4Gemv, MatchesTheReferenceThreeStepsAhead) { expect_matches_the_reference(GetParam(), 32, 3); }

// Four steps ahead (the deepest), over 4 steps of 128: every load after the first four repeats the last step.
TEST_P(Mxfp4Gemv, MatchesTheReferenceFourStepsAhead) { expect_matches_the_reference(GetParam(), 128, 4); }

// Each byte decoded into one word of two bf16 (Mxfp4Gemv::pairs), both operands from words.
TEST_P(Mxfp4Gemv, MatchesTheReferenceDecodedInPairs) { expect_matches_the_reference(GetParam(), 256, 2, true); }

// The same in single-group steps, three ahead: both accumulator chains and the steps past the end.
TEST_P(Mxfp4Gemv, MatchesTheReferenceDecodedInPairsThreeAhead) {
  expect_matches_the_reference(GetParam(), 32, 3, true);
}

// x read without a mask, its rows past the tokens NaN, in both decodes (K2's experts, Mxfp4Gemv::x_padded).
TEST_P(Mxfp4Gemv, RowsPastTheTokensReachNoTokenWhenReadUnmasked) {
  expect_matches_the_reference(GetParam(), 128, 2, true, true);
  expect_matches_the_reference(GetParam(), 64, 3, false, true);
}

// 8 token rows (NVIDIA's mma n8, Mxfp4Gemv::token_rows) where the tokens fit, masked and padded.
TEST(Mxfp4GemvEightRows, MatchesTheReference) {
  for (int tokens : {1, 4, 8}) {
    SCOPED_TRACE(tokens);
    expect_matches_the_reference(tokens, 128, 2, true, false, 8);
    expect_matches_the_reference(tokens, 64, 3, true, true, 8);
  }
}

// x's words loaded with the weights, steps ahead (Mxfp4Gemv::x_ahead, K2's experts): masked and
// padded, 1 to 3 steps ahead, the last one past the end of K.
TEST_P(Mxfp4Gemv, MatchesTheReferenceWithXLoadedAhead) {
  expect_matches_the_reference(GetParam(), 128, 2, true, false, kMxfp4Tokens, true);
  expect_matches_the_reference(GetParam(), 32, 3, true, true, kMxfp4Tokens, true);
  expect_matches_the_reference(GetParam(), 64, 1, false, false, kMxfp4Tokens, true);
}

// Four packed bytes decoded a word at a time (Mxfp4Gemv::words), x in its interleaved order: full
// and single-group steps, one to four ahead, x padded and loaded ahead, 8 token rows.
TEST_P(Mxfp4Gemv, MatchesTheReferenceDecodedInWords) {
  expect_matches_the_reference(GetParam(), 256, 2, true, false, kMxfp4Tokens, false, true);
  expect_matches_the_reference(GetParam(), 32, 3, true, true, kMxfp4Tokens, false, true);
  expect_matches_the_reference(GetParam(), 128, 4, true, false, kMxfp4Tokens, true, true);
  if (GetParam() <= 8) expect_matches_the_reference(GetParam(), 64, 1, true, true, 8, true, true);
}

// One multiply a word (Mxfp4Gemv::scale_bias): a task whose largest code is 128 - bias (2^33 at
// K3's bias) takes it, subnormal scales and all; a task with a code one larger must take the exact
// decode, since the biased one overflows there (infinity and NaN would fail the comparison).
TEST_P(Mxfp4Gemv, MatchesTheReferenceAtOneMultiplyAWord) {
  const int largest = 128 - kMxfp4ScaleBias;
  expect_matches_the_reference(GetParam(), 256, 2, true, false, kMxfp4Tokens, false, true, kMxfp4ScaleBias, largest);
  expect_matches_the_reference(GetParam(), 64, 3, true, false, 8 < GetParam() ? kMxfp4Tokens : 8, true, true,
                               kMxfp4ScaleBias, largest);
}
// The plain loop whose words and x a GPU stages through shared memory (Mxfp4Gemv::stages): x masked
// and padded, 16 and 8 token rows, both decodes, a step and several.
TEST_P(Mxfp4Gemv, MatchesTheReferenceWithStagedLoads) {
  const int rows = GetParam() <= 8 ? 8 : kMxfp4Tokens;
  expect_matches_the_reference(GetParam(), 128, 2, true, false, kMxfp4Tokens, false, true, 0, 200, 0, 3);
  expect_matches_the_reference(GetParam(), 64, 2, true, true, rows, false, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias, 2, 4);
  expect_matches_the_reference(GetParam(), 512, 2, true, true, rows, false, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias, 0, 2);
}

// Each stage copying several K steps (Mxfp4Gemv::stage_steps; K2Build::expert_stage_steps): 2 steps
// of 128 (K2's: 128 bytes of a row a stage) at 3 stages, 4 of 64 at 4 stages with L2 asked 2 steps
// on, 2 of 32 at 2 stages; x masked or padded, 8 or 16 token rows, both decodes.
TEST_P(Mxfp4Gemv, MatchesTheReferenceWithStagesOfSeveralSteps) {
  const int rows = GetParam() <= 8 ? 8 : kMxfp4Tokens;
  expect_matches_the_reference(GetParam(), 128, 2, true, true, rows, false, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias, 0, 3, 2);
  expect_matches_the_reference(GetParam(), 64, 2, true, true, rows, false, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias, 2, 4, 4);
  expect_matches_the_reference(GetParam(), 32, 2, true, false, kMxfp4Tokens, false, true, 0, 200, 0, 2, 2);
}

// Each staged iteration's scale codes loaded by the iteration before (Mxfp4Gemv::codes_ahead): stages
// of one step and of two, a task whose large code takes the exact decode, x masked or padded; the
// last iteration loads its own codes again.
TEST_P(Mxfp4Gemv, MatchesTheReferenceWithCodesAhead) {
  const int rows = GetParam() <= 8 ? 8 : kMxfp4Tokens;
  expect_matches_the_reference(GetParam(), 128, 2, true, true, rows, false, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias, 0, 3, 1,
                               true);
  expect_matches_the_reference(GetParam(), 64, 2, true, true, rows, false, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias, 2, 4, 2,
                               true);
  expect_matches_the_reference(GetParam(), 32, 2, true, false, kMxfp4Tokens, false, true, 0, 200, 0, 2, 4, true);
}

// A program's tasks as one staged loop (mxfp4_gemv_tasks, mxfp4_gemv_program's task_loop): 300 rows
// are 3 tasks of 128 on one program, the last one short; the first task's large code takes the exact
// decode in its done branch while the others keep the bias (and with a code the bias allows, all
// three); stages of 1, 2 and 4 steps, the codes ahead across the tasks' boundaries or in their step.
TEST_P(Mxfp4Gemv, MatchesTheReferenceWithTasksAsOneLoop) {
  const int rows = GetParam() <= 8 ? 8 : kMxfp4Tokens;
  expect_matches_the_reference(GetParam(), 128, 2, true, true, rows, false, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias, 0, 3,
                               2, true, 300, true);
  expect_matches_the_reference(GetParam(), 64, 2, true, true, rows, false, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias, 0, 4,
                               4, false, 300, true);
  expect_matches_the_reference(GetParam(), 32, 2, true, false, kMxfp4Tokens, false, true, 0, 200, 0, 2, 1, true, 300, true);
}

TEST_P(Mxfp4Gemv, ATaskWithALargerCodeTakesTheExactDecode) {
  const int beyond = 129 - kMxfp4ScaleBias;
  expect_matches_the_reference(GetParam(), 256, 2, true, false, kMxfp4Tokens, false, true, kMxfp4ScaleBias, beyond);
}

INSTANTIATE_TEST_SUITE_P(Tokens, Mxfp4Gemv, ::testing::Values(1, 4, 16));

// mxfp4_gemv_sum over `count` of `segments` stored segments (each its own weights, scales and x),
// each times its own per-token coefficients, against float64; 2 segments' K steps a program.
// With a scale bias (Mxfp4Gemv::scale_bias), `large_code` (when not 0) is one scale code of the
// last counted segment: every segment's codes choose the sum's decode.
void expect_the_sum_matches(int tokens, int segments, int count, int step, int ahead = 2, bool pairs = false,
                            bool x_ahead = false, bool words = false, int scale_bias = 0, int large_code = 0,
                            int prefetch_steps = 0, int stages = 0, bool codes_ahead = false) {
  using namespace monotile::dsl;  // NOLINT: the test's kernel reads as the DSL guide writes them
  const int64_t n = 48, k = 256, groups = k / 32, padded = kMxfp4Tokens;
  std::mt19937 rng = testing::case_rng();
  std::vector<uint8_t> packed(segments * n * k / 2), scales(segments * n * groups);
  std::uniform_int_distribution<int> byte(0, 255), scale(118, 130);
  for (uint8_t& b : packed) b = static_cast<uint8_t>(byte(rng));
  for (uint8_t& v : scales) v = static_cast<uint8_t>(scale(rng));
  if (large_code != 0) scales[(count - 1) * n * groups + 5] = static_cast<uint8_t>(large_code);
  std::normal_distribution<double> normal(0.0, 1.0);
  // x_bits in element order; x_stored as the GEMV reads it (with words, mxfp4_x_position's order).
  std::vector<uint16_t> x_bits(segments * tokens * k), x_stored(x_bits.size());
  for (uint16_t& v : x_bits) v = model::bf16_from_double(normal(rng));
  for (size_t i = 0; i < x_bits.size(); ++i) x_stored[words ? (i / k) * k + mxfp4_x_position(i % k) : i] = x_bits[i];
  std::vector<float> coef(segments * padded);
  for (float& c : coef) c = static_cast<float>(normal(rng));

  Builder b("mxfp4_gemv_sum_test", {.num_warps = 8});
  auto packed_arg = b.arg("packed", ptr(u8));
  auto scales_arg = b.arg("scales", ptr(u8));
  auto x_arg = b.arg("x", ptr(i32));
  auto coef_arg = b.arg("coef", ptr(f32));
  auto count_arg = b.arg("count", i32);
  auto out_arg = b.arg("out", ptr(f32));
  // (k3::: the struct, not the suite above; its pointers are not read by the sum)
  const k3::Mxfp4Gemv g{
      .packed = packed_arg, .scales = scales_arg, .x_pairs = x_arg, .k = k, .tokens = tokens, .rows = 64, .step = step,
      .ahead = ahead, .x_ahead = x_ahead, .pairs = pairs, .words = words, .scale_bias = scale_bias,
      .prefetch_steps = prefetch_steps, .stages = stages, .codes_ahead = codes_ahead};
  auto rows = arange(0, 64);
  auto ms = arange(0, padded);
  auto sum = mxfp4_gemv_sum(
      g, rows, rows < n, count_arg,
      [&](const Value& j) {
        auto seg = j.to(i64);
        return Mxfp4Segment{.packed = packed_arg + seg * (n * k / 2),
                            .scales = scales_arg + seg * (n * groups),
                            .x_pairs = x_arg + seg * (tokens * k / 2)};
      },
      [&](const Value& j) { return load(coef_arg + j * padded + ms); });
  store(out_arg + col(ms) * n + row(rows), sum, row(rows < n));
  const std::vector<float> out = run(b.finish(),
                                     {{std::as_bytes(std::span(packed)), ScalarType::kU8, "packed"},
                                      {std::as_bytes(std::span(scales)), ScalarType::kU8, "scales"},
                                      {std::as_bytes(std::span(x_stored)), ScalarType::kI32, "x"},
                                      {std::as_bytes(std::span(coef)), ScalarType::kF32, "coef"}},
                                     {KernelArg::integer(ScalarType::kI32, count)}, n);
  std::vector<std::vector<double>> w;
  for (int j = 0; j < count; ++j) {
    w.push_back(model::mxfp4_dequantize(std::span(packed).subspan(j * n * k / 2, n * k / 2),
                                        std::span(scales).subspan(j * n * groups, n * groups), n, k, 32));
  }
  expect_rows(out, n, tokens, [&](int64_t r, int t) {
    double want = 0, magnitude = 0;
    for (int j = 0; j < count; ++j) {
      double dot = 0, dot_magnitude = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double x = model::bf16_to_float(x_bits[(j * tokens + t) * k + i]);
        dot += w[j][r * k + i] * x;
        dot_magnitude += std::abs(w[j][r * k + i] * x);
      }
      want += coef[j * padded + t] * dot;
      magnitude += std::abs(coef[j * padded + t]) * dot_magnitude;
    }
    return std::pair{want, magnitude};
  });
}

// 2 of 3 segments, 4 steps each: the loads two steps ahead cross from one segment into the next.
TEST(Mxfp4GemvSum, MatchesTheReferenceAcrossSegments) { expect_the_sum_matches(4, 3, 2, 64); }

// Every segment, one step each (each step a segment's last), 16 tokens.
TEST(Mxfp4GemvSum, MatchesTheReferenceWithOneStepASegment) { expect_the_sum_matches(16, 3, 3, 256); }

// One segment: the loads ahead of its end are its last step again.
TEST(Mxfp4GemvSum, MatchesTheReferenceForOneSegment) { expect_the_sum_matches(1, 2, 1, 128); }

// Three steps ahead over 3 segments of 2 steps (6 steps, not a multiple of the loop's 4 sub-steps):
// the sub-steps past the end pass the total through.
TEST(Mxfp4GemvSum, MatchesTheReferenceThreeStepsAhead) { expect_the_sum_matches(4, 3, 3, 128, 3); }

// Decoded in pairs, across segments.
TEST(Mxfp4GemvSum, MatchesTheReferenceDecodedInPairs) { expect_the_sum_matches(4, 3, 2, 64, 2, true); }

// Decoded in words, across segments, x ahead or not.
TEST(Mxfp4GemvSum, MatchesTheReferenceDecodedInWords) {
  expect_the_sum_matches(4, 3, 2, 64, 2, true, false, true);
  expect_the_sum_matches(16, 3, 3, 128, 3, true, true, true);
}

// One step ahead: two sub-steps a loop iteration.
TEST(Mxfp4GemvSum, MatchesTheReferenceOneStepAhead) { expect_the_sum_matches(8, 2, 2, 64, 1); }

// One multiply a word where every segment's codes allow it (the largest 128 - bias, in the last
// segment), the exact decode where one code is larger.
TEST(Mxfp4GemvSum, MatchesTheReferenceAtOneMultiplyAWord) {
  expect_the_sum_matches(4, 3, 2, 64, 2, true, false, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias);
  expect_the_sum_matches(16, 3, 3, 128, 2, true, true, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias);
}
TEST(Mxfp4GemvSum, ASumWithALargerCodeTakesTheExactDecode) {
  expect_the_sum_matches(4, 3, 2, 64, 2, true, false, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias);
  expect_the_sum_matches(16, 3, 3, 128, 2, true, true, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias);
}

// x's words loaded with each step's weights, ahead across segment boundaries (each segment its own
// x), two and three steps ahead.
TEST(Mxfp4GemvSum, MatchesTheReferenceWithXLoadedAhead) {
  expect_the_sum_matches(4, 3, 2, 64, 2, true, true);
  expect_the_sum_matches(16, 3, 3, 128, 3, true, true);
}

// The loop whose words and x a GPU stages through shared memory (Mxfp4Gemv::stages) across segment
// boundaries: 2 to 4 stages, segments of 1 and 4 steps, both decodes, L2 asked 3 steps on.
TEST(Mxfp4GemvSum, MatchesTheReferenceWithStagedLoads) {
  expect_the_sum_matches(4, 3, 2, 64, 2, true, false, true, 0, 0, 0, 3);
  expect_the_sum_matches(16, 3, 3, 256, 2, true, false, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias, 0, 2);
  expect_the_sum_matches(8, 3, 3, 64, 2, true, false, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias, 3, 4);
}

// The same with each step's codes loaded by the step before (Mxfp4Gemv::codes_ahead), across
// segments of 1 and 4 steps (the next step's codes then come from the next segment's scales).
TEST(Mxfp4GemvSum, MatchesTheReferenceWithCodesAhead) {
  expect_the_sum_matches(4, 3, 2, 64, 2, true, false, true, 0, 0, 0, 3, true);
  expect_the_sum_matches(16, 3, 3, 256, 2, true, false, true, kMxfp4ScaleBias, 128 - kMxfp4ScaleBias, 0, 2, true);
  expect_the_sum_matches(8, 3, 3, 64, 2, true, false, true, kMxfp4ScaleBias, 129 - kMxfp4ScaleBias, 3, 4, true);
}

// L2 asked for the weights 1, 3 and 20 steps past the loads (Mxfp4Gemv::prefetch_steps): the same
// sums, and every prefetch inside the weights (the interpreter refuses one outside its allocation):
// past the last step, and past the sum's last segment, the last step is asked for again.
TEST(Mxfp4GemvPrefetch, AsksForNothingPastTheWeights) {
  expect_matches_the_reference(4, 64, 2, true, true, 8, true, true, kMxfp4ScaleBias, 128, 3);
  expect_matches_the_reference(16, 32, 3, true, false, kMxfp4Tokens, false, true, 0, 200, 20);
  expect_the_sum_matches(4, 3, 3, 64, 2, true, true, true, kMxfp4ScaleBias, 0, 1);
  expect_the_sum_matches(8, 2, 2, 128, 1, true, false, true, 0, 0, 20);
}

}  // namespace
}  // namespace monotile::kernels::k3
