// Pipeline planning and the staged dot's generated code: which K loops are pipelined (both operands
// K-contiguous loads used only by the dot), how many stages fit, and that AMD keeps the register path.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"
#include "dsl/lower/lower.h"
#include "dsl/lower/pipeline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::dsl::lower {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

enum class BLayout { kNK, kKN, kNKMasked, kNKMaskedAlongK, kNKFromCarried, kNKWithATransposed };

// acc = sum over K steps of A[m, ks] B[n, ks]^T (or B given [K, N]), stored as f32.
Program k_loop(int64_t m, int64_t n, int64_t k, int64_t block_k, BLayout b_layout = BLayout::kNK,
               KernelOptions options = {.num_warps = 4}) {
  Builder b("k_loop", options);
  Value pa = b.arg("a", ptr(bf16)), pb = b.arg("b", ptr(bf16)), out = b.arg("out", ptr(f32));
  Value offset0 = zeros({}, i32);
  auto [acc, offset] = range(0, k, block_k, zeros({m, n}, f32), offset0, [&](Value k0, Value acc, Value offset) {
    Value ks = row(k0 + arange(0, block_k));
    Value a = b_layout == BLayout::kNKWithATransposed
                  ? trans(load(pa + col(k0 + arange(0, block_k)) * m + row(arange(0, m))))
                  : load(pa + col(arange(0, m)) * k + ks);
    Value bt;
    switch (b_layout) {
      case BLayout::kNK:
      case BLayout::kNKWithATransposed: bt = trans(load(pb + col(arange(0, n)) * k + ks)); break;
      case BLayout::kKN: bt = load(pb + col(k0 + arange(0, block_k)) * n + row(arange(0, n))); break;
      case BLayout::kNKMasked: bt = trans(load(pb + col(arange(0, n)) * k + ks, col(arange(0, n)) < n - 1)); break;
      case BLayout::kNKMaskedAlongK:
        bt = trans(load(pb + col(arange(0, n)) * k + ks, ks < int(k - 3)));
        break;
      case BLayout::kNKFromCarried: bt = trans(load(pb + offset + col(arange(0, n)) * k + ks)); break;
    }
    return std::make_tuple(dot(a, bt, acc), offset + int(block_k));
  });
  store(out + col(arange(0, m)) * n + row(arange(0, n)), acc);
  return b.finish();
}

LoweredKernel lowered(const Program& program, const char* target) {
  absl::StatusOr<LoweredKernel> kernel = lower(program, *Target::parse(target));
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  return kernel.ok() ? *kernel : LoweredKernel{};
}

TEST(Pipeline, KContiguousOperandsAreStagedAsynchronouslyOnSm90a) {
  LoweredKernel kernel = lowered(k_loop(64, 64, 256, 32), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("pipelined over 4 stages of 8192 bytes"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_cp_async16(mt_stage"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_cp_async_wait<2>();"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_ldmatrix_x4(("));
  EXPECT_THAT(kernel.source, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  EXPECT_EQ(kernel.dynamic_shared_bytes, 4 * 8192);
}

TEST(Pipeline, AmdKeepsTheRegisterPath) {
  LoweredKernel kernel = lowered(k_loop(64, 64, 256, 32), "gfx90a");
  EXPECT_THAT(kernel.source, Not(HasSubstr("pipelined over")));
  EXPECT_THAT(kernel.source, Not(HasSubstr("mt_cp_async16(mt_stage")));
}

TEST(Pipeline, OperandsWithMOrNContiguousAreReadTransposed) {
  LoweredKernel b_kn = lowered(k_loop(64, 64, 256, 32, BLayout::kKN), "sm_90a");
  EXPECT_THAT(b_kn.source, HasSubstr("pipelined over"));
  EXPECT_THAT(b_kn.source, HasSubstr("mt_ldmatrix_x4_trans(("));
  LoweredKernel a_km = lowered(k_loop(64, 64, 256, 32, BLayout::kNKWithATransposed), "sm_90a");
  EXPECT_THAT(a_km.source, HasSubstr("pipelined over"));
  EXPECT_THAT(a_km.source, HasSubstr("mt_ldmatrix_x4_trans(("));
  EXPECT_THAT(lowered(k_loop(64, 64, 256, 32), "sm_90a").source, Not(HasSubstr("mt_ldmatrix_x4_trans((")));
}

TEST(Pipeline, RowMasksZeroFillWholeUnits) {
  LoweredKernel kernel = lowered(k_loop(64, 64, 256, 32, BLayout::kNKMasked), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("pipelined over"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_cp_async16_zfill(mt_stage"));
}

TEST(Pipeline, MasksAlongKOrPointersFromCarriedValuesAreNotStaged) {
  for (BLayout layout : {BLayout::kNKMaskedAlongK, BLayout::kNKFromCarried}) {
    LoweredKernel kernel = lowered(k_loop(64, 64, 256, 32, layout), "sm_90a");
    EXPECT_THAT(kernel.source, Not(HasSubstr("pipelined over"))) << static_cast<int>(layout);
    EXPECT_THAT(kernel.source, HasSubstr("mma.sync")) << static_cast<int>(layout);
  }
}

TEST(Pipeline, StagesShrinkToFitSharedMemory) {
  // 256 x 256 x 128 bf16 operands: 128 KiB per stage; 227 KiB minus the reserve holds one, so no
  // pipeline (on 16 warps: the 256 x 256 f32 accumulator needs 512 registers a thread on 4);
  // 128 x 128 x 128: 64 KiB per stage, three stages.
  EXPECT_THAT(lowered(k_loop(128, 128, 512, 128), "sm_90a").source, HasSubstr("over 3 stages of 65536 bytes"));
  EXPECT_THAT(lowered(k_loop(256, 256, 512, 128, BLayout::kNK, {.num_warps = 16}), "sm_90a").source,
              Not(HasSubstr("pipelined over")));
}

TEST(Pipeline, TheProgramsStageCountIsKeptWhereItFits) {
  auto with_stages = [](int stages, int64_t block_k) {
    return k_loop(64, 64, 512, block_k, BLayout::kNK, {.num_warps = 4, .num_stages = stages});
  };
  LoweredKernel two = lowered(with_stages(2, 32), "sm_90a");
  EXPECT_THAT(two.source, HasSubstr("pipelined over 2 stages of 8192 bytes"));
  EXPECT_THAT(two.source, HasSubstr("mt_cp_async_wait<0>();"));
  EXPECT_THAT(lowered(with_stages(6, 32), "sm_90a").source, HasSubstr("pipelined over 6 stages of 8192 bytes"));
  // 64 KiB per stage: eight asked, three fit.
  EXPECT_THAT(lowered(k_loop(128, 128, 512, 128, BLayout::kNK, {.num_warps = 4, .num_stages = 8}), "sm_90a").source,
              HasSubstr("over 3 stages of 65536 bytes"));
}

TEST(Pipeline, WarpgroupDotsReadTheStageThroughDescriptorsOnSm90a) {
  KernelOptions options{.num_warps = 4, .mma = MmaKind::kWarpgroup};
  LoweredKernel kernel = lowered(k_loop(128, 64, 512, 64, BLayout::kNK, options), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("on wgmma.m64n64k16 (1 warpgroup(s), 2 instruction(s) each per K step)"));
  EXPECT_THAT(kernel.source, HasSubstr("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_fence_proxy_async();"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_wgmma_wait<0>();"));
  EXPECT_THAT(kernel.source, HasSubstr("+ 1023u) & ~1023u;"));
  EXPECT_THAT(kernel.source, Not(HasSubstr("mt_ldmatrix_x4((")));
  EXPECT_THAT(kernel.source, Not(HasSubstr("mma.sync.aligned")));
}

TEST(Pipeline, WarpgroupMmasRunIntoTheNextIterationUnlessSerial) {
  LoweredKernel in_flight =
      lowered(k_loop(128, 64, 512, 64, BLayout::kNK, {.num_warps = 4, .mma = MmaKind::kWarpgroup}), "sm_90a");
  // Four stages: copies two iterations ahead, the previous iteration's MMAs waited for in the loop.
  EXPECT_THAT(in_flight.source, HasSubstr("mt_cp_async_wait<1>();"));
  EXPECT_THAT(in_flight.source, HasSubstr("mt_wgmma_wait<1>();"));
  EXPECT_THAT(in_flight.source, HasSubstr("mt_cp_async_wait<0>();\n  mt_wgmma_wait<0>();"));
  LoweredKernel serial =
      lowered(k_loop(128, 64, 512, 64, BLayout::kNK, {.num_warps = 4, .mma = MmaKind::kWarpgroupSerial}), "sm_90a");
  EXPECT_THAT(serial.source, HasSubstr("wgmma.mma_async"));
  EXPECT_THAT(serial.source, HasSubstr("mt_cp_async_wait<2>();"));
  EXPECT_THAT(serial.source, Not(HasSubstr("mt_wgmma_wait<1>();")));
  // A carried value besides the accumulator is fine; two stages leave no room to run on.
  LoweredKernel two = lowered(
      k_loop(128, 64, 512, 64, BLayout::kNK, {.num_warps = 4, .num_stages = 2, .mma = MmaKind::kWarpgroup}),
      "sm_90a");
  EXPECT_THAT(two.source, Not(HasSubstr("mt_wgmma_wait<1>();")));
}

TEST(Pipeline, TheDefaultTakesWarpgroupMmaFor128WideDotsOnSm90a) {
  LoweredKernel wide = lowered(k_loop(128, 128, 512, 64), "sm_90a");
  EXPECT_THAT(wide.source, HasSubstr("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
  EXPECT_THAT(wide.source, HasSubstr("mt_wgmma_wait<1>();"));
  for (const auto& [program, target] :
       {std::pair{k_loop(128, 128, 512, 64, BLayout::kNK, {.num_warps = 4, .mma = MmaKind::kWarp}), "sm_90a"},
        std::pair{k_loop(128, 64, 512, 64), "sm_90a"}, std::pair{k_loop(128, 128, 512, 64), "sm_80"}}) {
    LoweredKernel kernel = lowered(program, target);
    EXPECT_THAT(kernel.source, HasSubstr("mma.sync.aligned")) << target;
    EXPECT_THAT(kernel.source, Not(HasSubstr("wgmma.mma_async"))) << target;
  }
}

TEST(Pipeline, WarpgroupDotsNeedTheTargetTheOptionAnd128ByteRows) {
  KernelOptions warpgroup{.num_warps = 4, .mma = MmaKind::kWarpgroup};
  // mma.sync asked for, another target, 64-byte rows (block_k 32): mma.sync.
  for (const auto& [program, target] :
       {std::pair{k_loop(128, 64, 512, 64, BLayout::kNK, {.num_warps = 4, .mma = MmaKind::kWarp}), "sm_90a"}, std::pair{k_loop(128, 64, 512, 64, BLayout::kNK, warpgroup), "sm_80"},
        std::pair{k_loop(128, 64, 512, 32, BLayout::kNK, warpgroup), "sm_90a"}}) {
    LoweredKernel kernel = lowered(program, target);
    EXPECT_THAT(kernel.source, HasSubstr("mma.sync.aligned")) << target;
    EXPECT_THAT(kernel.source, Not(HasSubstr("wgmma.mma_async"))) << target;
  }
}

// out [rows, 64] u8 sums of a [rows, 64 steps] u8 matrix, a step a `range` iteration, its tile
// loaded with AccessOptions::stages (rows past `live` masked, or a mask varying along the row, or
// the pointer from a carried offset).
enum class StagedCase { kRowMask, kMaskAlongRow, kFromCarried };
Program staged_sum(int stages, StagedCase which = StagedCase::kRowMask, int64_t rows = 128, int l2_fetch = 0) {
  Builder b("staged_sum", {.num_warps = 4});
  Value x = b.arg("x", ptr(u8)), out = b.arg("out", ptr(i32));
  constexpr int64_t kSteps = 8;
  Value rs = arange(0, rows), cs = arange(0, 64);
  auto [acc, offset] = range(0, kSteps, 1, zeros({rows, 64}, i32), zeros({}, i32), [&](Value s, Value acc, Value offset) {
    Value at = x + col(rs) * (kSteps * 64) + row((which == StagedCase::kFromCarried ? offset : s * 64) + cs);
    Value mask = which == StagedCase::kMaskAlongRow ? row(cs) < 60 : col(rs) < rows - 3;
    return std::make_tuple(acc + load(at, mask, {.l2_fetch = l2_fetch, .stages = stages}).to(i32), offset + 64);
  });
  store(out + col(rs) * 64 + row(cs), acc);
  return b.finish();
}

TEST(Pipeline, StagedLoadsAreCopiedAheadAndReadFromTheStage) {
  LoweredKernel kernel = lowered(staged_sum(3), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("0 dot(s) and 1 load(s) pipelined over 3 stages of 8192 bytes"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_cp_async16_zfill(mt_stage"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_cp_async_wait<1>();"));
  EXPECT_THAT(kernel.source, HasSubstr("// load from the pipeline's stage (128 x 64)"));
  EXPECT_EQ(kernel.dynamic_shared_bytes, 3 * 8192);
  EXPECT_THAT(lowered(staged_sum(5), "sm_90a").source, HasSubstr("over 5 stages of 8192 bytes"));
}

// AccessOptions::l2_fetch on a staged load: each of its copies asks L2 for the bytes around it (it
// was dropped, the copies asking for their 16 bytes alone); without it the plain copy.
TEST(Pipeline, StagedLoadsAskL2ForTheBytesAroundTheirCopies) {
  for (int fetch : {64, 128, 256}) {
    LoweredKernel kernel = lowered(staged_sum(3, StagedCase::kRowMask, 128, fetch), "sm_90a");
    EXPECT_THAT(kernel.source, HasSubstr(absl::StrCat("mt_cp_async16_zfill_l2_", fetch, "(mt_stage"))) << fetch;
    EXPECT_THAT(kernel.source, Not(HasSubstr("mt_cp_async16_zfill(mt_stage"))) << fetch;
  }
  const std::string plain = lowered(staged_sum(3), "sm_90a").source;
  EXPECT_THAT(plain, HasSubstr("mt_cp_async16_zfill(mt_stage"));
  for (int fetch : {64, 128, 256}) EXPECT_THAT(plain, Not(HasSubstr(absl::StrCat("_l2_", fetch, "(mt_stage"))));
  Builder b("staged_dot_fetch", {.num_warps = 4});
  Value pa = b.arg("a", ptr(bf16)), pb = b.arg("b", ptr(bf16)), out = b.arg("out", ptr(f32));
  Value acc = range(0, 256, 32, zeros({64, 64}, f32), [&](Value k0, Value acc) {
    Value ks = row(k0 + arange(0, 32));
    return dot(load(pa + col(arange(0, 64)) * 256 + ks, {.l2_fetch = 256}),
               trans(load(pb + col(arange(0, 64)) * 256 + ks)), acc);
  });
  store(out + col(arange(0, 64)) * 64 + row(arange(0, 64)), acc);
  const std::string source = lowered(b.finish(), "sm_90a").source;
  EXPECT_THAT(source, HasSubstr("mt_cp_async16_l2_256(mt_stage"));  // A's copies
  EXPECT_THAT(source, HasSubstr("mt_cp_async16(mt_stage"));           // B's
}

TEST(Pipeline, StagedLoadsThatDoNotQualifyAreLoadedWhereTheyStand) {
  for (StagedCase which : {StagedCase::kMaskAlongRow, StagedCase::kFromCarried}) {
    LoweredKernel kernel = lowered(staged_sum(3, which), "sm_90a");
    EXPECT_THAT(kernel.source, Not(HasSubstr("pipelined over"))) << static_cast<int>(which);
  }
  EXPECT_THAT(lowered(staged_sum(3), "gfx90a").source, Not(HasSubstr("pipelined over")));
}

TEST(Pipeline, AStagedDotOperandAskingForStagesIsStagedOnce) {
  Builder b("staged_dot_operand", {.num_warps = 4});
  Value pa = b.arg("a", ptr(bf16)), pb = b.arg("b", ptr(bf16)), out = b.arg("out", ptr(f32));
  Value acc = range(0, 256, 32, zeros({64, 64}, f32), [&](Value k0, Value acc) {
    Value ks = row(k0 + arange(0, 32));
    return dot(load(pa + col(arange(0, 64)) * 256 + ks, {.stages = 3}), trans(load(pb + col(arange(0, 64)) * 256 + ks)),
               acc);
  });
  store(out + col(arange(0, 64)) * 64 + row(arange(0, 64)), acc);
  LoweredKernel kernel = lowered(b.finish(), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("1 dot(s) and 0 load(s) pipelined over 4 stages of 8192 bytes"));
}

// A dot whose operand is a value the loop carries (here B: trans of the tile the previous iteration
// loaded, as a software pipeline's slot) is not the planner's to stage: it lowers, unstaged. The
// planner had looked the carried value's producer up and thrown.
TEST(Pipeline, ADotOfACarriedOperandIsNotStaged) {
  for (bool through_trans : {true, false}) {
    Builder b("carried_b", {.num_warps = 4});
    Value pa = b.arg("a", ptr(bf16)), pb = b.arg("b", ptr(bf16)), out = b.arg("out", ptr(f32));
    auto load_b = [&](const Value& k0) {
      Value tile = load(pb + col(arange(0, 64)) * 256 + row(k0 + arange(0, 32)));
      return through_trans ? tile : trans(tile);
    };
    auto [acc, last] = range(0, 256, 32, zeros({64, 64}, f32), load_b(zeros({}, i32)), [&](Value k0, Value acc, Value held) {
      Value a = load(pa + col(arange(0, 64)) * 256 + row(k0 + arange(0, 32)));
      Value bt = through_trans ? trans(held) : held;
      return std::make_tuple(dot(a, bt, acc), load_b(minimum(k0 + 32, 224)));
    });
    store(out + col(arange(0, 64)) * 64 + row(arange(0, 64)), acc);
    LoweredKernel kernel = lowered(b.finish(), "sm_90a");
    EXPECT_THAT(kernel.source, HasSubstr("mma.sync.aligned.m16n8k16")) << through_trans;
    EXPECT_THAT(kernel.source, Not(HasSubstr("pipelined over"))) << through_trans;
  }
}

}  // namespace
}  // namespace monotile::dsl::lower
