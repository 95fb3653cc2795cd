// Every user-facing dsl::Error of memory, dot and control-flow ops: words and the user's line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dsl/dsl.h"
#include "dsl/error_matchers.h"

namespace monotile::dsl {
namespace {

TEST(MemoryErrors, MaskOfTheWrongShape) {
  Builder b("rms_norm");
  auto x = b.arg("x", ptr(bf16));
  auto cols = arange(0, 7168), few = arange(0, 8);
  EXPECT_DSL_ERROR(load(x + cols, few < 8), "load at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(load(x + cols, few < 8), "mask shape [8] does not match pointer shape [7168]");
  EXPECT_DSL_ERROR(store(x + cols, 0.0f, few < 8), "store at");
  EXPECT_DSL_ERROR(load(x + cols, cols), "the mask has dtype i32, not i1");
}

TEST(MemoryErrors, OtherOfTheWrongShapeOrDtype) {
  Builder b("k");
  auto x = b.arg("x", ptr(f32));
  auto cols = arange(0, 16);
  EXPECT_DSL_ERROR(load(x + cols, cols < 4, zeros({4}, f32)), "other shape [4] does not match pointer shape [16]");
  EXPECT_DSL_ERROR(load(x + cols, cols < 4, zeros({16}, bf16)), "other has dtype bf16, not the pointee dtype f32");
}

TEST(MemoryErrors, StoreThroughANonPointer) {
  Builder b("k");
  auto y = zeros({16}, f32);
  EXPECT_DSL_ERROR(store(y, 1.0f), "store at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(store(y, 1.0f), "store through a non-pointer: the address operand is f32[16]");
  EXPECT_DSL_ERROR(load(y), "load through a non-pointer");
  EXPECT_DSL_ERROR(atomic_add(y, 1.0f, Scope::gpu, Order::relaxed), "atomic_add through a non-pointer");
}

TEST(MemoryErrors, PrefetchThroughANonPointer) {
  Builder b("k");
  auto y = zeros({16}, f32);
  EXPECT_DSL_ERROR(prefetch(y), "prefetch at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(prefetch(y), "prefetch through a non-pointer: the address operand is f32[16]");
  EXPECT_DSL_ERROR(prefetch(y), "is f32[16], expected a pointer (or a tile of pointers)");
  EXPECT_DSL_ERROR(prefetch(y), "hint: pass a pointer argument plus offsets");
}

TEST(MemoryErrors, PrefetchMaskLikeALoads) {
  Builder b("k");
  auto w = b.arg("w", ptr(bf16));
  auto cols = arange(0, 64), few = arange(0, 8);
  EXPECT_DSL_ERROR(prefetch(w + cols, few < 8), "mask shape [8] does not match pointer shape [64]");
  EXPECT_DSL_ERROR(prefetch(w + cols, cols), "the mask has dtype i32, not i1");
}

TEST(MemoryErrors, L2FetchIsAFetchSize) {
  Builder b("k");
  auto w = b.arg("w", ptr(bf16));
  auto cols = arange(0, 64);
  EXPECT_DSL_ERROR(load(w + cols, {.l2_fetch = 32}), "load at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(load(w + cols, {.l2_fetch = 32}), "l2_fetch is 32 bytes");
  EXPECT_DSL_ERROR(load(w + cols, {.l2_fetch = 512}), "expected 0, 64, 128 or 256");
  EXPECT_DSL_ERROR(load(w + cols, {.l2_fetch = 512}), "hint: the bytes L2 fetches around each access");
}

TEST(MemoryErrors, StagesAreACountOfStagesOnAPlainLoad) {
  Builder b("k");
  auto w = b.arg("w", ptr(bf16));
  auto flag = b.arg("flag", ptr(i32));
  auto cols = arange(0, 64);
  EXPECT_DSL_ERROR(load(w + cols, {.stages = 1}), "load at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(load(w + cols, {.stages = 1}), "stages is 1, expected 0 or 2 to 8");
  EXPECT_DSL_ERROR(load(w + cols, {.stages = 9}), "hint: 0 is a plain load; n stages copy the tile n - 1 loop iterations ahead");
  EXPECT_DSL_ERROR(load(flag, {.order = Order::acquire, .stages = 2}), "an ordered load cannot be staged");
  EXPECT_DSL_ERROR(load(flag, {.order = Order::acquire, .stages = 2}), "hint: stage plain loads only");
}

TEST(MemoryErrors, StoredValueMustMatch) {
  Builder b("k");
  auto y = b.arg("y", ptr(bf16));
  auto cols = arange(0, 16);
  EXPECT_DSL_ERROR(store(y + cols, zeros({16}, f32)), "the value has dtype f32, not the pointee dtype bf16");
  EXPECT_DSL_ERROR(store(y + cols, zeros({32}, bf16)), "the value shape [32] does not match pointer shape [16]");
}

TEST(MemoryErrors, OrdersEachAccessTakes) {
  Builder b("k");
  auto p = b.arg("p", ptr(i32));
  EXPECT_DSL_ERROR(load(p, {.order = Order::release}), "load does not take memory order release");
  EXPECT_DSL_ERROR(store(p, 1, {.order = Order::acquire}), "store does not take memory order acquire");
  EXPECT_DSL_ERROR(atomic_add(p, 1, Scope::gpu, Order::plain), "atomic_add does not take memory order plain");
  EXPECT_DSL_ERROR(fence(Order::relaxed, Scope::gpu), "fence does not take memory order relaxed");
}

TEST(MemoryErrors, AtomicDtypes) {
  Builder b("k");
  auto f = b.arg("f", ptr(f32)), h = b.arg("h", ptr(i16));
  EXPECT_DSL_ERROR(atomic_and(f, 1.0f, Scope::gpu, Order::relaxed), "atomic_and does not take f32 memory");
  EXPECT_DSL_ERROR(atomic_add(h, 1, Scope::gpu, Order::relaxed), "atomic_add does not take i16 memory");
  EXPECT_DSL_ERROR(atomic_cas(f, 0.0f, 1.0f, Scope::gpu, Order::acq_rel), "atomic_cas does not take f32 memory");
}

TEST(MemoryErrors, WaitUntilWatchesOneWord) {
  Builder b("k");
  auto flags = b.arg("flags", ptr(i32));
  EXPECT_DSL_ERROR(wait_until(flags + arange(0, 16), Cmp::ge, 1, 1000), "wait_until watches ptr<i32>[16]");
  EXPECT_DSL_ERROR(wait_until(flags, Cmp::ge, 1, 1.5f), "the timeout is a float constant");
  EXPECT_DSL_ERROR(wait_until(flags, Cmp::ge, 1, zeros({}, f32)), "the timeout is f32");
}

TEST(MemoryErrors, WaitUntilAbortsOnOneWord) {
  Builder b("k");
  auto flags = b.arg("flags", ptr(i32)), halves = b.arg("halves", ptr(f16));
  EXPECT_DSL_ERROR(wait_until(flags, Cmp::ge, 1, 1000, Scope::gpu, {.abort_if_nonzero = flags + arange(0, 16)}),
                   "the abort word is ptr<i32>[16]");
  EXPECT_DSL_ERROR(wait_until(flags, Cmp::ge, 1, 1000, Scope::gpu, {.abort_if_nonzero = zeros({}, i32)}),
                   "the abort word is i32");
  EXPECT_DSL_ERROR(wait_until(flags, Cmp::ge, 1, 1000, Scope::gpu, {.abort_if_nonzero = halves}),
                   "the abort word is ptr<f16>");
}

TEST(MemoryErrors, DotShapesMustChain) {
  Builder b("attn");
  auto a = zeros({16, 128}, bf16), w = zeros({64, 32}, bf16);
  EXPECT_DSL_ERROR(dot(a, w), "dot at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(dot(a, w), "inner dimensions differ: lhs [16, 128], rhs [64, 32]");
  EXPECT_DSL_ERROR(dot(a, zeros({128}, bf16)), "dot takes 2-D tiles");
  EXPECT_DSL_ERROR(dot(a, zeros({128, 32}, f16)), "dot operands are bf16 and f16");
  EXPECT_DSL_ERROR(dot(a, zeros({128, 32}, bf16), zeros({16, 16}, f32)), "the accumulator is f32[16, 16], not f32[16, 32]");
}

TEST(MemoryErrors, DotBelowTheMatrixUnitMinimumK) {
  auto target = Target::parse("sm_90a");
  ASSERT_TRUE(target.ok());
  Builder b("k", {}, *target);
  auto a = zeros({16, 8}, bf16), c = zeros({8, 16}, bf16);
  EXPECT_DSL_ERROR(dot(a, c), "K = 8 is below the matrix unit's minimum 16 for bf16 on sm_90a");
  EXPECT_NO_THROW(dot(zeros({16, 8}, f32), zeros({8, 16}, f32)));  // no f32 matrix unit: any K
}

TEST(MemoryErrors, DotMinimumKDependsOnTargetAndDtype) {
  auto target = Target::parse("gfx90a");  // CDNA2: f16 MFMA down to k = 8, bf16 down to k = 8
  ASSERT_TRUE(target.ok());
  Builder b("k", {}, *target);
  EXPECT_DSL_ERROR(dot(zeros({16, 4}, f16), zeros({4, 16}, f16)), "K = 4 is below the matrix unit's minimum 8 for f16 on gfx90a");
  EXPECT_NO_THROW(dot(zeros({16, 8}, f16), zeros({8, 16}, f16)));
  Builder cpu("cpu", {}, Target::cpu());
  EXPECT_NO_THROW(dot(zeros({16, 4}, bf16), zeros({4, 16}, bf16)));  // the interpreter has no unit
}

TEST(MemoryErrors, DequantShapes) {
  Builder b("k");
  auto w = b.arg("w", ptr(mxfp4)), s = b.arg("s", ptr(u8));
  auto packed = load(w + arange(0, 32)), scales = load(s + arange(0, 4));
  EXPECT_DSL_ERROR(dequant_mxfp4(packed, scales), "scales [4] do not cover packed [32]");
  EXPECT_DSL_ERROR(dequant_mxfp4(scales, scales), "not mxfp4 values and u8 scales");
  EXPECT_DSL_ERROR(dequant_mxfp4(packed, load(s + arange(0, 2)), f64), "dequant_mxfp4 does not produce f64");
  EXPECT_DSL_ERROR(packed + packed, "add does not take mxfp4 operands");
}

TEST(MemoryErrors, Mxfp4PairsTakesBytesAndACodePerByte) {
  Builder b("k");
  auto w = b.arg("w", ptr(u8)), s = b.arg("s", ptr(u8)), x = b.arg("x", ptr(i32));
  auto packed = load(w + arange(0, 32));
  EXPECT_DSL_ERROR(mxfp4_pairs(packed, load(s + arange(0, 2))), "codes [2] differ from packed [32]");
  EXPECT_DSL_ERROR(mxfp4_pairs(load(x + arange(0, 32)), packed), "not packed bytes and u8 codes");
  EXPECT_NO_THROW(mxfp4_pairs(packed, load(s + (arange(0, 32) >> 4))));
}

TEST(MemoryErrors, Mxfp4WordPairsTakesWordsAndACodeEach) {
  Builder b("k");
  auto w = b.arg("w", ptr(u8)), s = b.arg("s", ptr(u8)), x = b.arg("x", ptr(i32));
  auto words = load(x + arange(0, 8));
  EXPECT_DSL_ERROR(mxfp4_word_pairs(words, load(s + arange(0, 2))), "mxfp4_word_pairs at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(mxfp4_word_pairs(words, load(s + arange(0, 2))), "codes [2] differ from words [8]");
  EXPECT_DSL_ERROR(mxfp4_word_pairs(words, load(s + arange(0, 2))), "e.g. scales + (word >> 2)");
  EXPECT_DSL_ERROR(mxfp4_word_pairs(load(w + arange(0, 8)), load(s + arange(0, 8))), "operands are u8[8] and u8[8], not packed words and u8 codes");
  EXPECT_DSL_ERROR(mxfp4_word_pairs(words, words), "operands are i32[8] and i32[8], not packed words and u8 codes");
  EXPECT_NO_THROW(mxfp4_word_pairs(words, load(s + (arange(0, 8) >> 2))));
}

TEST(MemoryErrors, UnpackBf16TakesWords) {
  Builder b("k");
  auto w = b.arg("w", ptr(u8)), x = b.arg("x", ptr(i32));
  EXPECT_DSL_ERROR(unpack_bf16(load(w + arange(0, 32))), "unpack_bf16 takes a tile of i32 words, not u8[32]");
  EXPECT_DSL_ERROR(unpack_bf16(load(x)), "not i32");
  EXPECT_NO_THROW(unpack_bf16(load(x + arange(0, 32))));
}

TEST(ControlErrors, LoopBodyReturnsTheWrongCarriedTypes) {
  Builder b("k");
  auto acc = zeros({16}, f32);
  EXPECT_DSL_ERROR(range(0, 4, 1, acc, [&](Value, Value a) { return a.to(bf16); }), "range at memory_errors_test.cpp");
  EXPECT_DSL_ERROR(range(0, 4, 1, acc, [&](Value, Value a) { return a.to(bf16); }), "the loop body returns (bf16[16]) but the loop carries (f32[16])");
  EXPECT_DSL_ERROR(range(0, 4, 1, acc, 1, [&](Value, Value a, Value) { return std::vector<Value>{a}; }), "returns (f32[16]) but the loop carries (f32[16], i32)");
  EXPECT_DSL_ERROR(while_(0, [](Value i) { return i < 4; }, [](Value i) { return i.to(i64); }), "the loop body returns (i64) but the loop carries (i32)");
}

TEST(ControlErrors, LoopBounds) {
  Builder b("k");
  EXPECT_DSL_ERROR(range(0, 8, 0, [](Value) {}), "step 0 is not positive");
  EXPECT_DSL_ERROR(range(0.0f, 8, 1, [](Value) {}), "loop bounds must be integer scalars");
  EXPECT_DSL_ERROR(range(arange(0, 16), 8, 1, [](Value) {}), "loop bounds must be integer scalars");
}

TEST(ControlErrors, Branches) {
  Builder b("k");
  auto n = b.arg("n", i32);
  EXPECT_DSL_ERROR(if_(n, [] {}), "the condition is i32, not an i1 scalar");
  EXPECT_DSL_ERROR(if_(arange(0, 16) < n, [] {}), "the condition is i1[16], not an i1 scalar");
  EXPECT_DSL_ERROR(if_(n > 0, [&] { return n; }, [&] { return n.to(f32); }), "the branches return different types: then (i32), else (f32)");
  EXPECT_DSL_ERROR(if_(n > 0, [&] { return n; }), "if_ without an else branch returns values");
  EXPECT_DSL_ERROR(while_(n, [](Value i) { return i; }, [](Value i) { return i; }), "the condition returns (i32), not (i1)");
  EXPECT_DSL_ERROR(device_assert(n, "x"), "the condition has dtype i32, not i1");
}

}  // namespace
}  // namespace monotile::dsl
