// Codegen tests: emit for sm_90a and gfx90a and check the lines that matter (access width, shuffle
// width, matrix instruction, atomics' scope, the timer, no headers, #line, launch ABI, errors).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "dsl/dsl.h"
#include "dsl/lower/lower.h"
#include "dsl/printer.h"
#include "dsl/lower/lower_test_util.h"
#include "dsl/test_programs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::dsl::lower {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::count;
using testing::lowered;

constexpr const char* kTargets[] = {"sm_90a", "gfx90a"};

Program sample(std::string_view name) {
  for (const auto& program : dsl::testing::sample_programs()) {
    if (program.name == name) return program.build();
  }
  ADD_FAILURE() << "no sample program " << name;
  return Program{};
}

Program vector_add(int n, ElementType dtype, int misalign = 0) {
  Builder b("vector_add", {.num_warps = 4});
  auto x = b.arg("x", ptr(dtype)), y = b.arg("y", ptr(dtype)), z = b.arg("z", ptr(dtype));
  auto offs = program_id(0) * (n + misalign) + arange(0, n);
  store(z + offs, load(x + offs) + load(y + offs));
  return b.finish();
}

Program masked_copy(bool runtime_bound) {
  Builder b("masked_copy", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), n = b.arg("n", i32);
  auto offs = arange(0, 256);
  auto mask = runtime_bound ? offs < n : offs < 256;
  store(y + offs, load(x + offs, mask, 0.0f), mask);
  return b.finish();
}

Program softmax_2d(int rows, int cols) {
  Builder b("softmax_2d", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto offs = col(arange(0, rows)) * cols + row(arange(0, cols));
  auto v = load(x + offs);
  auto e = exp(v - max(v, 1, true));
  store(y + offs, e / sum(e, 1, true));
  return b.finish();
}

Program matmul(int m, int n, int k, ElementType dtype) {
  Builder b("matmul", {.num_warps = 4});
  auto a = b.arg("a", ptr(dtype)), bp = b.arg("b", ptr(dtype)), c = b.arg("c", ptr(f32));
  auto rows = col(arange(0, m)), cols = row(arange(0, n)), ks = arange(0, k);
  auto acc = dot(load(a + rows * k + row(ks)), load(bp + col(ks) * n + cols));
  store(c + rows * n + cols, acc);
  return b.finish();
}

Program sync_ops() {
  Builder b("sync_ops", {.num_warps = 4});
  auto counter = b.arg("counter", ptr(i32)), flag = b.arg("flag", ptr(i32)), health = b.arg("health", ptr(u32));
  auto ticket = atomic_add(counter, 1, Scope::gpu, Order::acq_rel);
  atomic_or(health, 1u, Scope::system, Order::relaxed);
  auto seen = load_acquire(flag, Scope::gpu);
  fence(Order::release, Scope::block);
  store_release(flag + 1, ticket + seen, Scope::gpu);
  auto timed_out = wait_until(flag, Cmp::ge, ticket, 1000000, Scope::system);
  store(flag + 2, timed_out.to(i32));
  return b.finish();
}

TEST(Codegen, ContiguousAlignedF32LoadsAre16ByteAccessesOnBothVendors) {
  for (const char* target : kTargets) {
    LoweredKernel kernel = lowered(vector_add(1024, f32), target);
    EXPECT_EQ(count(kernel.source, "mt_u32x4 mt_t = *(const mt_u32x4*)"), 2) << target;
    EXPECT_EQ(count(kernel.source, "*(mt_u32x4*)"), 1) << target;
  }
}

TEST(Codegen, Bf16LoadsMoveEightElementsPerAccess) {
  LoweredKernel kernel = lowered(dsl::testing::rms_norm(7168, 1e-6f), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("[spt 8 tpw 32@1 wpb 4@1 rep 7]"));
  EXPECT_THAT(kernel.source, HasSubstr("mt_u32x4 mt_t = *(const mt_u32x4*)"));
  EXPECT_THAT(kernel.source, HasSubstr("[i + 7] = __uint_as_float((unsigned)((mt_w[3] >> 16) & 0xffffu) << 16)"));
}

TEST(Codegen, OffsetsNotProvenAlignedUseElementAccesses) {
  LoweredKernel kernel = lowered(vector_add(1024, f32, /*misalign=*/1), "sm_90a");
  EXPECT_THAT(kernel.source, Not(HasSubstr("mt_u32x4 mt_t")));
  EXPECT_THAT(kernel.source, HasSubstr("mt_w[0] = *(const unsigned*)"));
}

// A row base scaled by a run-time stride: vector accesses only when the stride is declared a
// multiple of the vector (Builder::arg's multiple_of), as Triton's divisibility specialization.
Program strided_rows(int64_t multiple_of) {
  Builder b("strided_rows", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), stride = b.arg("stride", i64, {.multiple_of = multiple_of});
  auto offs = program_id(0) * stride + arange(0, 512);
  store(y + offs, load(x + offs));
  return b.finish();
}

TEST(Codegen, StrideDeclaredAMultipleKeepsSixteenByteAccesses) {
  for (const char* target : kTargets) {
    EXPECT_THAT(lowered(strided_rows(4), target).source, HasSubstr("mt_u32x4 mt_t = *(const mt_u32x4*)")) << target;
    EXPECT_THAT(lowered(strided_rows(2), target).source, HasSubstr("mt_u32x2 mt_t = *(const mt_u32x2*)")) << target;
    EXPECT_THAT(lowered(strided_rows(1), target).source, Not(HasSubstr("mt_t = *(const mt_u32x"))) << target;
  }
}

// A base clamped with minimum or where (a prefetch that must not run past its range) keeps the
// alignment both choices share, and only that.
Program clamped_rows(int64_t bound, bool select) {
  Builder b("clamped_rows", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto start = program_id(0) * 512;
  auto base = select ? where(start < bound, start, bound) : minimum(start, bound);
  auto offs = base + arange(0, 512);
  store(y + offs, load(x + offs));
  return b.finish();
}

TEST(Codegen, ClampedBaseKeepsTheAlignmentBothChoicesShare) {
  for (bool select : {false, true}) {
    EXPECT_THAT(lowered(clamped_rows(4 * 1000, select), "sm_90a").source, HasSubstr("mt_u32x4 mt_t = *(const mt_u32x4*)"));
    EXPECT_THAT(lowered(clamped_rows(2 * 1001, select), "sm_90a").source, HasSubstr("mt_u32x2 mt_t = *(const mt_u32x2*)"));
    EXPECT_THAT(lowered(clamped_rows(1001, select), "sm_90a").source, Not(HasSubstr("mt_t = *(const mt_u32x")));
  }
}

// A per-group value read beside its elements (an MXFP4 scale per 16 bytes): offsets >> 4 are
// constant over aligned runs of 16, so each thread reads the address once for its 16 registers.
Program grouped_scales(int shift) {
  Builder b("grouped_scales", {.num_warps = 4});
  auto x = b.arg("x", ptr(u8)), s = b.arg("s", ptr(u8)), y = b.arg("y", ptr(i32));
  auto offs = program_id(0) * 1024 + arange(0, 1024);
  store(y + offs, load(x + offs).to(i32) * load(s + (offs >> shift)).to(i32));
  return b.finish();
}

TEST(Codegen, AnAddressSharedByAGroupOfRegistersIsReadOnce) {
  for (const char* target : kTargets) {
    std::string source = lowered(grouped_scales(4), target).source;
    EXPECT_THAT(source, HasSubstr("for (int g = 0; g < 1; ++g) {\n")) << target;
    EXPECT_THAT(source, HasSubstr("const int i = g * 16;")) << target;
    EXPECT_THAT(source, HasSubstr("[i + 15] = v")) << target;
    // Runs of 2 leave groups of 2 of a thread's 16 registers.
    EXPECT_THAT(lowered(grouped_scales(1), target).source, HasSubstr("const int i = g * 2;")) << target;
  }
}

TEST(Codegen, AllTrueMaskIsDropped) {
  for (const char* target : kTargets) {
    LoweredKernel kernel = lowered(masked_copy(false), target);
    EXPECT_THAT(kernel.source, Not(HasSubstr("else"))) << target;
    EXPECT_THAT(kernel.source, HasSubstr("mt_u32x4 mt_t = *(const mt_u32x4*)")) << target;
  }
}

TEST(Codegen, RuntimeMaskGuardsEachElement) {
  LoweredKernel kernel = lowered(masked_copy(true), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("else"));
  EXPECT_THAT(kernel.source, Not(HasSubstr("mt_u32x4 mt_t")));
}

TEST(Codegen, RowReductionShufflesAcrossTheTargetsWarp) {
  LoweredKernel nvidia = lowered(sample("softmax"), "sm_90a");
  EXPECT_THAT(nvidia.source, HasSubstr("__shfl_xor_sync(0xffffffffu, mt_acc"));
  EXPECT_THAT(nvidia.source, HasSubstr("for (int m = 1; m < 32; m <<= 1)"));
  LoweredKernel amd = lowered(sample("softmax"), "gfx90a");
  EXPECT_THAT(amd.source, HasSubstr("__shfl_xor(mt_acc"));
  EXPECT_THAT(amd.source, HasSubstr("for (int m = 1; m < 64; m <<= 1)"));
  EXPECT_THAT(amd.source, Not(HasSubstr("__shfl_xor_sync")));
}

TEST(Codegen, ReducedRowsBroadcastBackWithoutSharedMemory) {
  for (const char* target : kTargets) {
    LoweredKernel kernel = lowered(softmax_2d(8, 256), target);
    EXPECT_THAT(kernel.source, Not(HasSubstr("// convert"))) << target;
    EXPECT_THAT(kernel.source, HasSubstr("// reduce over")) << target;
  }
}

Program row_sums(int rows, bool multi_row) {
  Builder b("row_sums", {.num_warps = 4, .multi_row_reductions = multi_row});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto r = arange(0, rows);
  store(y + r, sum(load(x + col(r) * 128 + row(arange(0, 128))), 1));
  return b.finish();
}

TEST(Codegen, LanesHoldingSeveralRowsSplitThemAtTheFirstLevels) {
  // [32, 128] on 4 warps: 8 rows a thread on sm_90a, 3 halving levels (4 + 2 + 1 shuffles), the
  // other 2 levels on one row, 7 shuffles to gather: 16 shuffles against 40.
  LoweredKernel nvidia = lowered(row_sums(32, true), "sm_90a");
  EXPECT_THAT(nvidia.source,
              HasSubstr("reduce over 32 lanes, 8 results a lane: 3 levels each keep half"));
  EXPECT_THAT(nvidia.source, HasSubstr("for (int m = 8; m < 32; m <<= 1)"));
  EXPECT_EQ(count(nvidia.source, "__shfl_xor_sync"),
            3 + 1 + 3);  // halving, plain, gather (loops unrolled later)
  // 4 rows a thread on gfx90a's 64 lanes: 2 halving levels.
  LoweredKernel amd = lowered(row_sums(32, true), "gfx90a");
  EXPECT_THAT(amd.source,
              HasSubstr("reduce over 32 lanes, 4 results a lane: 2 levels each keep half"));
}

TEST(Codegen, MultiRowReductionsOffKeepAButterflyPerRow) {
  for (const char* target : kTargets) {
    LoweredKernel kernel = lowered(row_sums(32, false), target);
    EXPECT_THAT(kernel.source, Not(HasSubstr("keep half"))) << target;
    EXPECT_THAT(kernel.source, HasSubstr("for (int m = 1; m < 32; m <<= 1)")) << target;
  }
}

TEST(Codegen, OneRowALaneKeepsThePlainButterfly) {
  LoweredKernel kernel = lowered(row_sums(4, true), "sm_90a");
  EXPECT_THAT(kernel.source, Not(HasSubstr("keep half")));
  EXPECT_THAT(kernel.source, HasSubstr("for (int m = 1; m < 32; m <<= 1)"));
}

TEST(Codegen, KdaRecurrenceNeedsNoLayoutConversion) {
  // k and q are loaded straight into the slice of the state's layout they are broadcast against.
  for (const char* target : kTargets) {
    LoweredKernel kernel = lowered(dsl::testing::kda_verify(12, 4, 32), target);
    EXPECT_THAT(kernel.source, Not(HasSubstr("// convert"))) << target;
  }
}

TEST(Codegen, DotUsesMmaSyncOnSm90a) {
  LoweredKernel kernel = lowered(matmul(64, 64, 32, bf16), "sm_90a");
  EXPECT_THAT(kernel.source, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  LoweredKernel half = lowered(matmul(32, 32, 32, f16), "sm_90a");
  EXPECT_THAT(half.source, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
}

TEST(Codegen, DotUsesMfmaOnGfx90a) {
  LoweredKernel big = lowered(matmul(64, 64, 32, bf16), "gfx90a");
  EXPECT_THAT(big.source, HasSubstr("__builtin_amdgcn_mfma_f32_32x32x8bf16_1k"));
  LoweredKernel small = lowered(matmul(16, 64, 32, bf16), "gfx90a");
  EXPECT_THAT(small.source, HasSubstr("__builtin_amdgcn_mfma_f32_16x16x16bf16_1k"));
}

TEST(Codegen, DotBelowTheMatrixUnitTakesTheFmaPath) {
  for (const char* target : kTargets) {
    LoweredKernel kernel = lowered(matmul(4, 8, 32, bf16), target);
    EXPECT_THAT(kernel.source, HasSubstr("with FMA")) << target;
    EXPECT_THAT(kernel.source, Not(HasSubstr("mma.sync"))) << target;
    EXPECT_THAT(kernel.source, Not(HasSubstr("__builtin_amdgcn_mfma"))) << target;
  }
  LoweredKernel f32_dot = lowered(matmul(32, 32, 16, f32), "sm_90a");
  EXPECT_THAT(f32_dot.source, HasSubstr("with FMA"));
}

TEST(Codegen, AtomicsAndOrderedAccessesSpellScopeAndOrderPerVendor) {
  std::string nvidia = lowered(sync_ops(), "sm_90a").source;
  EXPECT_THAT(nvidia, HasSubstr("atom.acq_rel.gpu.global.add.u32"));
  EXPECT_THAT(nvidia, HasSubstr("atom.relaxed.sys.global.or.b32"));
  EXPECT_THAT(nvidia, HasSubstr("ld.acquire.gpu.global.b32"));
  EXPECT_THAT(nvidia, HasSubstr("st.release.gpu.global.b32"));
  EXPECT_THAT(nvidia, HasSubstr("fence.acq_rel.cta;"));
  EXPECT_THAT(nvidia, HasSubstr("ld.acquire.sys.global.b32"));
  std::string amd = lowered(sync_ops(), "gfx90a").source;
  EXPECT_THAT(amd, HasSubstr("__hip_atomic_fetch_add(v0[i], v"));
  EXPECT_THAT(amd, HasSubstr("__ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT)"));
  EXPECT_THAT(amd, HasSubstr("__ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM)"));
  EXPECT_THAT(amd, HasSubstr("__hip_atomic_load((unsigned*)(v1[i]), __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT)"));
  EXPECT_THAT(amd, HasSubstr("__hip_atomic_store("));
  EXPECT_THAT(amd, HasSubstr("__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"workgroup\");"));
}

TEST(Codegen, WaitUntilIsABoundedSpinOnTheGlobalTimer) {
  std::string nvidia = lowered(sync_ops(), "sm_90a").source;
  EXPECT_THAT(nvidia, HasSubstr("mov.u64 %0, %%globaltimer;"));
  EXPECT_THAT(nvidia, HasSubstr("if (mt_globaltimer_ns() - mt_start >= mt_limit) {"));
  EXPECT_THAT(nvidia, HasSubstr("__nanosleep"));
  std::string amd = lowered(sync_ops(), "gfx90a").source;
  EXPECT_THAT(amd, HasSubstr("__builtin_amdgcn_s_memrealtime() * 10ull"));
  EXPECT_THAT(amd, HasSubstr("if (mt_globaltimer_ns() - mt_start >= mt_limit) {"));
}

// The form with an abort word: the word is read with a relaxed system-scope load after the flag in
// every iteration, and the outcome and the value seen go to the block in one round of shared memory.
TEST(Codegen, WaitUntilReadsItsAbortWordEveryIteration) {
  Builder b("abortable_wait", {.num_warps = 4});
  auto flag = b.arg("flag", ptr(i32)), failed = b.arg("failed", ptr(i32)), out = b.arg("out", ptr(i32));
  const Waited waited = wait_until(flag, Cmp::eq, 7, 1000000, Scope::system, {.abort_if_nonzero = failed});
  store(out, waited.outcome);
  store(out + 1, waited.seen);
  Program program = b.finish();
  std::string nvidia = lowered(program, "sm_90a").source;
  EXPECT_THAT(nvidia, HasSubstr("asm volatile(\"ld.acquire.sys.global.b32 %0, [%1];\""));
  EXPECT_THAT(nvidia, HasSubstr("asm volatile(\"ld.relaxed.sys.global.b32 %0, [%1];\" : \"=r\"(mt_abort)"));
  EXPECT_THAT(nvidia, HasSubstr("if (mt_abort != 0u) {"));
  EXPECT_LT(nvidia.find("ld.acquire.sys"), nvidia.find("mt_abort)")) << "the flag is read first";
  EXPECT_THAT(nvidia, HasSubstr("if (mt_globaltimer_ns() >= mt_deadline) {"));
  EXPECT_LT(nvidia.find("mt_abort != 0u"), nvidia.find("mt_globaltimer_ns() >= mt_deadline"));
  EXPECT_THAT(nvidia, Not(HasSubstr("v_mov_b32")));
  std::string amd = lowered(program, "gfx90a").source;
  // The word's address is held in vector registers on AMD (an opaque zero added to it).
  EXPECT_THAT(amd, HasSubstr("asm volatile(\"v_mov_b32 %0, 0\" : \"=v\"(mt_vzero));"));
  EXPECT_THAT(amd, HasSubstr("mt_abort = __hip_atomic_load((unsigned*)(mt_abort_at), "));
  EXPECT_THAT(amd, HasSubstr("__ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);"));
  EXPECT_THAT(amd, HasSubstr("if (mt_abort != 0u) {"));
}

// A persistent kernel's opening hint: rows of weights a later stage streams, then that stage.
Program warm_then_copy(bool masked) {
  Builder b("warm_then_copy", {.num_warps = 4});
  auto w = b.arg("w", ptr(bf16)), x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto n = b.arg("n", i32);
  auto offs = program_id(0) * 1024 + arange(0, 1024);
  if (masked) {
    prefetch(w + offs, offs < n);
  } else {
    prefetch(w + offs);
  }
  prefetch(w);
  store(y + arange(0, 256), load(x + arange(0, 256)));
  return b.finish();
}

TEST(Codegen, PrefetchIsOneL2HintPerOwnedGroupOnNvidia) {
  std::string plain = lowered(warm_then_copy(false), "sm_90a").source;
  const std::string hint = "asm volatile(\"prefetch.global.L2::evict_last [%0];\" :: \"l\"(";
  // The tile's hint in its unrolled loop, and the scalar pointer's by one thread.
  EXPECT_EQ(count(plain, hint), 2);
  // Offsets from a multiple of 1024, 4 per thread: one hint per 4 contiguous elements (8 bytes).
  EXPECT_THAT(plain,
              HasSubstr("for (int g = 0; g < 2; ++g) {\n    const int i = g * 4;\n    {\n      " + hint));
  EXPECT_THAT(plain, HasSubstr("if (mt_tid == 0) {\n      " + hint + "v0[i]));"));
  std::string masked = lowered(warm_then_copy(true), "sm_90a").source;
  EXPECT_EQ(count(masked, hint), 2);
  // A mask known only at run time guards each element.
  EXPECT_THAT(masked, HasSubstr("const int i = g * 1;\n    if (mt_t5[i]) {\n      " + hint));
}

TEST(Codegen, PrefetchIsDroppedOnAmdWithTheReason) {
  for (bool masked : {false, true}) {
    std::string amd = lowered(warm_then_copy(masked), "gfx90a").source;
    EXPECT_THAT(amd, Not(HasSubstr("prefetch.global")));
    EXPECT_EQ(count(amd, "// prefetch dropped: amd has no L2 prefetch instruction"), 2);
  }
}

TEST(Codegen, Bf16RoundsToNearestEvenWithoutAnyHeader) {
  std::string nvidia = lowered(dsl::testing::rms_norm(1024, 1e-6f), "sm_90a").source;
  EXPECT_THAT(nvidia, HasSubstr("cvt.rn.bf16.f32"));
  std::string amd = lowered(dsl::testing::rms_norm(1024, 1e-6f), "gfx90a").source;
  EXPECT_THAT(amd, HasSubstr("u += 0x7fffu + ((u >> 16) & 1u);"));
}

TEST(Codegen, EverySampleNeedsNoHeaderAndSetsLaunchBounds) {
  for (const auto& sample : dsl::testing::sample_programs()) {
    for (const char* target : kTargets) {
      LoweredKernel kernel = lowered(sample.build(), target);
      EXPECT_THAT(kernel.source, Not(HasSubstr("#include"))) << sample.name << " " << target;
      EXPECT_THAT(kernel.source, HasSubstr("extern \"C\" __global__ void __launch_bounds__(" +
                                           std::to_string(kernel.block_threads) + ") " + kernel.kernel_name + "("))
          << sample.name << " " << target;
    }
  }
}

TEST(Codegen, MinProgramsPerSmReachesNvidiaLaunchBoundsOnly) {
  Builder b("persistent", {.num_warps = 8, .min_programs_per_sm = 1});
  auto x = b.arg("x", ptr(f32));
  store(x + arange(0, 256), 1.0f);
  Program program = b.finish();
  EXPECT_THAT(lowered(program, "sm_90a").source, HasSubstr("__launch_bounds__(256, 1) persistent("));
  // HIP's second argument is a wave count per execution unit, another meaning: left out.
  EXPECT_THAT(lowered(program, "gfx90a").source, HasSubstr("__launch_bounds__(512) persistent("));
  EXPECT_THAT(to_text(program), HasSubstr("kernel persistent num_warps=8 min_programs_per_sm=1 ("));
}

TEST(Codegen, ATileLargerThanTheRegistersIsRefusedAtItsLineBeforeCompiling) {
  Builder b("whole_rows", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32));
  auto offsets = col(arange(0, 16)) * 7168 + row(arange(0, 7168));
  const int line = __LINE__ + 1;
  auto rows = load(x + offsets);
  store(x + offsets, rows * 2.0f);
  absl::StatusOr<LoweredKernel> kernel = lower(b.finish(), *Target::parse("sm_90a"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kResourceExhausted);
  // Where (the user's line), what (the tile, its registers and the target's), and a hint.
  EXPECT_THAT(kernel.status().message(), HasSubstr("codegen_test.cpp:" + std::to_string(line)));
  EXPECT_THAT(kernel.status().message(),
              HasSubstr("load makes a tile of f32[16, 7168] that needs 896 registers per thread (896 elements over 4 "
                        "warps of 32), the target has 255"));
  EXPECT_THAT(kernel.status().message(), HasSubstr("hint: loop over the long dimension with range()"));
  // The same tile on 16 warps per row block fits no better than the registers allow: 224 fits.
  Builder wide("whole_rows_wide", {.num_warps = 16});
  auto y = wide.arg("y", ptr(f32));
  auto wide_offsets = col(arange(0, 16)) * 7168 + row(arange(0, 7168));
  store(y + wide_offsets, load(y + wide_offsets) * 2.0f);
  EXPECT_TRUE(lower(wide.finish(), *Target::parse("sm_90a")).ok());
}

TEST(Codegen, AKernelWithoutASideEffectIsRefusedNamingIt) {
  Builder b("forgot_the_store");
  auto x = b.arg("x", ptr(f32));
  const int line = __LINE__ + 1;
  auto doubled = load(x + arange(0, 16)) * 2.0f;
  (void)doubled;
  const Program program = b.finish();
  for (const char* target : {"sm_90a", "gfx90a"}) {
    absl::StatusOr<LoweredKernel> kernel = lower(program, *Target::parse(target));
    ASSERT_FALSE(kernel.ok()) << target;
    EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(kernel.status().message()),
                HasSubstr("kernel \"forgot_the_store\" has no side effect (its first op is at codegen_test.cpp:" +
                          std::to_string(line) + "): no store, atomic, print or assert, so it would compile to an "
                          "empty kernel; hint: store the results"));
  }
}

// Positions live beside the source, not in it: the key hashes the source.
TEST(Codegen, OriginsPointAtTheUsersFileAndTheSourceCarriesNoPath) {
  LoweredKernel kernel = lowered(vector_add(256, f32), "gfx90a");
  EXPECT_THAT(kernel.source, Not(HasSubstr("#line")));
  EXPECT_THAT(kernel.source, Not(HasSubstr("codegen_test.cpp")));
  ASSERT_FALSE(kernel.origins.empty());
  int previous = 0;
  for (const SourceOrigin& origin : kernel.origins) {
    EXPECT_THAT(origin.loc.file, HasSubstr("codegen_test.cpp"));
    EXPECT_GT(origin.generated_line, previous);
    previous = origin.generated_line;
  }
  const int lines = static_cast<int>(std::count(kernel.source.begin(), kernel.source.end(), '\n'));
  EXPECT_LE(previous, lines);
  LoweredKernel with = lowered(vector_add(256, f32), "gfx90a", {.line_directives = true});
  EXPECT_THAT(with.source, HasSubstr("#line "));
  EXPECT_THAT(with.source, HasSubstr("codegen_test.cpp\""));
}

// A directive numbers the lines after it, so each line an op writes gets its own: an op of several
// lines is charged to its line alone, never to the lines below it in the user's file.
TEST(Codegen, LineDirectivesChargeEveryGeneratedLineToItsOp) {
  Builder b("row_sums", {.num_warps = 2});
  Value x = b.arg("x", ptr(f32)), out = b.arg("out", ptr(f32));
  auto rows = arange(0, 16), cols = arange(0, 64);
  auto tile = load(x + col(rows) * 64 + row(cols));
  const int sum_line = __LINE__ + 1;
  auto sums = sum(tile * tile, 1);
  store(out + rows, sums);
  LoweredKernel kernel = lowered(b.finish(), "sm_90a", {.line_directives = true});
  std::vector<std::string> lines = absl::StrSplit(kernel.source, '\n');
  auto first = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("#line", 0) == 0; });
  ASSERT_NE(first, lines.end());
  int charged_to_sum = 0;
  std::string directive;
  for (auto it = first; it != lines.end(); ++it) {
    const std::string& text = *it;
    if (text.rfind("#line", 0) == 0) {
      directive = text;
      continue;
    }
    if (text.empty() || text.rfind("#pragma", 0) == 0 || text == "}") continue;
    const std::string& before = *(it - 1);
    const bool directly = before.rfind("#line", 0) == 0 ||
                          (before.rfind("#pragma", 0) == 0 && (it - 2)->rfind("#line", 0) == 0);
    EXPECT_TRUE(directly) << "line without its own directive: " << text;
    if (directive.rfind(absl::StrCat("#line ", sum_line, " "), 0) == 0) ++charged_to_sum;
  }
  EXPECT_GT(charged_to_sum, 3);  // the reduction is several lines, each charged to sum_line
}

TEST(Codegen, BlockThreadsAndParametersFollowTheTarget) {
  Builder b("abi", {.num_warps = 4});
  auto x = b.arg("x", ptr(bf16)), n = b.arg("n", i32), s = b.arg("scale", bf16);
  store(x + n, load(x) * s);
  Program program = b.finish();
  EXPECT_EQ(lowered(program, "sm_90a").block_threads, 128);
  LoweredKernel amd = lowered(program, "gfx90a");
  EXPECT_EQ(amd.block_threads, 256);
  ASSERT_EQ(amd.params.size(), 3u);
  EXPECT_EQ(amd.params[0].c_type, "mt_bf16*");
  EXPECT_EQ(amd.params[0].size, 8);
  EXPECT_EQ(amd.params[1].c_type, "int");
  EXPECT_EQ(amd.params[1].size, 4);
  EXPECT_EQ(amd.params[2].c_type, "mt_bf16");
  EXPECT_EQ(amd.params[2].size, 2);
  EXPECT_EQ(amd.params[2].alignment, 2);
  EXPECT_THAT(amd.source, HasSubstr("abi(mt_bf16* p_0, int p_1, mt_bf16 p_2)"));
}

TEST(Codegen, SharedMemoryNeedIsReported) {
  LoweredKernel sorted = lowered(sample("router_topk"), "sm_90a");
  // 896 padded to 1024 keys (8 bytes each reserved) and 1024 words of a key's order and index.
  EXPECT_EQ(sorted.dynamic_shared_bytes, 1024 * 8 + 1024 * 8);
  LoweredKernel plain = lowered(vector_add(1024, f32), "sm_90a");
  EXPECT_EQ(plain.dynamic_shared_bytes, 0);
  EXPECT_THAT(plain.source, Not(HasSubstr("mt_smem")));
}

// A 1024-wide topk on 8 warps: 4 elements a thread; of the 55 bitonic steps, those with partners in
// another warp (distance 128 and up: 6 steps) go through shared memory, two barriers each, beside the
// two before and two after the network; the other 49 are register swaps and shuffles.
// router_topk's 1024-wide network on 4 warps of 32: 8 elements a thread. A step whose partner is 1, 2
// or 4 elements away swaps the thread's registers (one branch per distance), 8 to 128 away one
// shuffle a register, and only 256 and up, in another warp, goes through shared memory (two
// barriers, beside the two after the network).
TEST(Codegen, BitonicStepsStayInRegistersWithinAWarp) {
  LoweredKernel sorted = lowered(sample("router_topk"), "sm_90a");
  EXPECT_THAT(sorted.source, HasSubstr("8 elements a thread in registers"));
  // Each key moves with its index as one 64-bit word: one shuffle a register, no index array.
  const size_t first = sorted.source.find("unsigned long long mt_sort_k");
  ASSERT_NE(first, std::string::npos);
  const std::string network = sorted.source.substr(first, sorted.source.find("const unsigned long long mt_w", first) - first);
  EXPECT_THAT(network, HasSubstr("if (mt_partner >= 256) {"));
  EXPECT_THAT(network, HasSubstr("else if (mt_partner >= 8) {"));
  EXPECT_EQ(count(network, "mt_bitonic_pair_word("), 3);
  EXPECT_EQ(count(network, "__shfl_xor_sync(0xffffffffu, mt_sort_k"), 1);
  EXPECT_EQ(count(network, "__shfl_xor_sync"), 1);
  EXPECT_THAT(network, Not(HasSubstr("mt_sort_i")));
  EXPECT_EQ(count(network, "__syncthreads()"), 2 + 2);
}

TEST(Codegen, DumpsFollowThePassList) {
  LoweredKernel kernel = lowered(sample("softmax"), "sm_90a", {.dump_after_each = true});
  std::vector<std::string> passes;
  for (const PassDump& dump : kernel.dumps) passes.push_back(dump.pass);
  EXPECT_THAT(passes, ::testing::ElementsAre("verify", "simplify", "layouts", "axis", "ops", "emit"));
  EXPECT_THAT(kernel.dumps[2].text, HasSubstr("[spt 4 tpw 32@1"));
  EXPECT_THAT(kernel.dumps[3].text, HasSubstr("contig [1024]"));
  EXPECT_EQ(kernel.dumps[5].text, kernel.source);
  EXPECT_TRUE(lowered(sample("softmax"), "sm_90a").dumps.empty());
}

TEST(Codegen, SameProgramGivesTheSameSource) {
  EXPECT_EQ(lowered(dsl::testing::kda_verify(12, 4, 32), "gfx90a").source,
            lowered(dsl::testing::kda_verify(12, 4, 32), "gfx90a").source);
}

TEST(LowerErrors, CpuTargetIsRefusedWithAHint) {
  absl::StatusOr<LoweredKernel> kernel = lower(vector_add(64, f32), Target::cpu());
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(kernel.status().message()),
            "lowering \"vector_add\" for cpu: the cpu target has no generated code; hint: run the program with "
            "the interpreter");
}

TEST(LowerErrors, NumWarpsMustBeAPowerOfTwo) {
  Program program = vector_add(64, f32);
  program.options.num_warps = 3;
  absl::StatusOr<LoweredKernel> kernel = lower(program, testing::target("sm_90a"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(std::string(kernel.status().message()),
            "lowering \"vector_add\" for sm_90a: num_warps must be a power of two, got 3; hint: use 1, 2, 4, 8 or 16");
}

TEST(LowerErrors, TooManyThreadsForTheBlock) {
  Program program = vector_add(64, f32);
  program.options.num_warps = 32;
  absl::StatusOr<LoweredKernel> kernel = lower(program, testing::target("gfx90a"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(std::string(kernel.status().message()),
            "lowering \"vector_add\" for gfx90a: num_warps 32 x 64 threads exceeds the block limit of 1024 threads; "
            "hint: use at most 16 warps");
}

// A trans whose result takes its operand's layout with the dims swapped only renames registers:
// no shared memory even for a tile four times the target's.
TEST(Codegen, TransKeepsElementsInTheirThreads) {
  Builder b("big_trans", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto offs = col(arange(0, 256)) * 256 + row(arange(0, 256));
  store(y + offs, trans(load(x + offs)));
  absl::StatusOr<LoweredKernel> kernel = lower(b.finish(), testing::target("gfx90a"));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(kernel->dynamic_shared_bytes, 0);
  EXPECT_NE(kernel->source.find("trans in registers"), std::string::npos);
}

TEST(LowerErrors, SharedMemoryBeyondTheTargetIsAnError) {
  // A reshape moves elements between threads through shared memory (a trans no longer needs to).
  Builder b("big_reshape", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto offs = col(arange(0, 256)) * 256 + row(arange(0, 256));
  store(y + offs, reshape(load(x + arange(0, 65536)), {256, 256}));
  absl::StatusOr<LoweredKernel> kernel = lower(b.finish(), testing::target("gfx90a"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(kernel.status().message()),
            "lowering \"big_reshape\" for gfx90a: needs 262144 bytes of shared memory, the target has 65536; hint: use "
            "smaller tiles for the ops that go through shared memory (dot, sort, trans, conversions)");
}

TEST(LowerErrors, FrontEndVerifierErrorsCarryTheLoweringContext) {
  Program program = vector_add(64, f32);
  program.body.ops.back().operands[0] = 9999;  // a value that does not exist
  absl::StatusOr<LoweredKernel> kernel = lower(program, testing::target("sm_90a"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_THAT(std::string(kernel.status().message()), HasSubstr("lowering \"vector_add\" for sm_90a: "));
}

}  // namespace
}  // namespace monotile::dsl::lower
