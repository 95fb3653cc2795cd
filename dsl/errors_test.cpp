// Every user-facing dsl::Error of the elementwise, shape and builder-misuse paths: its words and
// that it points at the line of this file that made the mistake.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dsl/dsl.h"
#include "dsl/error_matchers.h"
#include "dsl/printer.h"

namespace monotile::dsl {
namespace {

using ::testing::HasSubstr;

TEST(Errors, MessageCarriesOpLocationExpectedActualAndHint) {
  Builder b("k");
  auto a = zeros({16, 128}, f32), c = zeros({64}, f32);
  int line = __LINE__ + 2;
  try {
    a + c;
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.op(), "add");
    EXPECT_EQ(error.loc().line, line);
    EXPECT_EQ(error.actual(), "[16, 128] and [64]");
    EXPECT_FALSE(error.expected().empty());
    EXPECT_FALSE(error.hint().empty());
    EXPECT_EQ(std::string(error.what()), "add at errors_test.cpp:" + std::to_string(line) +
                                             ": shapes [16, 128] and [64] are not broadcastable; hint: " +
                                             error.hint());
  }
}

TEST(Errors, BinaryShapesNotBroadcastable) {
  Builder b("k");
  auto a = zeros({16, 128}, f32), c = zeros({64}, f32);
  EXPECT_DSL_ERROR(a * c, "mul at errors_test.cpp");
  EXPECT_DSL_ERROR(a - c, "shapes [16, 128] and [64] are not broadcastable");
  EXPECT_DSL_ERROR(where(zeros({8}, i1), a, 0.0f), "where at");
}

TEST(Errors, ExpIsForFloats) {
  Builder b("k");
  EXPECT_DSL_ERROR(exp(arange(0, 16)), "exp does not take i32 operands");
  EXPECT_DSL_ERROR(sigmoid(arange(0, 16) < 3), "sigmoid does not take i1 operands");
  EXPECT_DSL_ERROR(abs(arange(0, 16) < 3), "abs does not take i1 operands");
}

TEST(Errors, BitwiseIsForIntegers) {
  Builder b("k");
  auto x = zeros({16}, f32);
  EXPECT_DSL_ERROR(x & x, "and does not take f32 operands");
  EXPECT_DSL_ERROR(x | 1, "or does not take f32 operands");
  EXPECT_DSL_ERROR(x << 1, "shl does not take f32 operands");
  EXPECT_DSL_ERROR(!arange(0, 16), "logical not (!) takes an i1 value, not i32");
  EXPECT_DSL_ERROR(umulhi(x, x), "umulhi does not take f32 operands");
  EXPECT_DSL_ERROR(cdiv(x, 2), "cdiv does not take f32 operands");
  EXPECT_DSL_ERROR(fma(arange(0, 16), 2, 3), "fma does not take i32 operands");
  EXPECT_DSL_ERROR((arange(0, 16) < 2) + (arange(0, 16) < 3), "add does not take i1 operands");
}

TEST(Errors, LiteralMustFitTheDtype) {
  Builder b("k");
  auto small = zeros({16}, i8);
  EXPECT_DSL_ERROR(small + 300, "the constant 300 does not fit i8");
  EXPECT_DSL_ERROR(full({16}, 1.5f, i32), "the float constant 1.500000 is used as i32");
}

TEST(Errors, PointerArithmetic) {
  Builder b("k");
  auto p = b.arg("p", ptr(f32)), q = b.arg("q", ptr(f32));
  EXPECT_DSL_ERROR(p + 1.5f, "a pointer is offset by a f32 value");
  EXPECT_DSL_ERROR(p + q, "add of two pointers");
  EXPECT_DSL_ERROR(1 - p, "a pointer is subtracted from a number");
  EXPECT_DSL_ERROR(p * 2, "mul does not take pointer operands");
  EXPECT_DSL_ERROR(cast(p, i64), "cast from ptr<f32> to i64");
}

TEST(Errors, CastsAndBitcasts) {
  Builder b("k");
  auto x = zeros({16}, f32);
  EXPECT_DSL_ERROR(x.bitcast(bf16), "bitcast from f32 (32 bits) to bf16 (16 bits) changes the bit width");
  EXPECT_DSL_ERROR(x.to(mxfp4), "cast from f32 to mxfp4");
  EXPECT_DSL_ERROR(where(x, x, x), "the condition has dtype f32, not i1");
}

TEST(Errors, AraneNeedsALayoutSize) {
  Builder b("k");
  EXPECT_DSL_ERROR(arange(0, 100), "arange at errors_test.cpp");
  EXPECT_DSL_ERROR(arange(0, 100), "shape [100] has dimension 100, which is neither a power of two nor a multiple of 16");
  EXPECT_DSL_ERROR(arange(5, 5), "the range [5, 5) is empty");
  EXPECT_DSL_ERROR(zeros({24, 3}, f32), "full at");
  EXPECT_DSL_ERROR(reshape(arange(0, 96), {3, 32}), "dimension 3");
}

TEST(Errors, ShapeOps) {
  Builder b("k");
  auto x = zeros({16, 32}, f32);
  EXPECT_DSL_ERROR(reshape(x, {16, 16}), "cannot reshape [16, 32] (512 elements) to [16, 16]");
  EXPECT_DSL_ERROR(trans(x, {0, 0}), "permutation [0, 0] does not permute the dims of f32[16, 32]");
  EXPECT_DSL_ERROR(expand_dims(x, 3), "axis 3 is out of range for 3 positions");
  EXPECT_DSL_ERROR(split(x), "split needs a last dim of 2, not f32[16, 32]");
  EXPECT_DSL_ERROR(join(x, zeros({16, 32}, bf16)), "operands differ: f32[16, 32] and bf16[16, 32]");
  EXPECT_DSL_ERROR(cat(x, zeros({16, 16}, f32), 0), "differ outside axis 0");
  EXPECT_DSL_ERROR(broadcast_to(x, {16, 64}), "shape [16, 32] does not broadcast to [16, 64]");
  EXPECT_DSL_ERROR(col(x), "col takes a 1-D tile, not f32[16, 32]");
  EXPECT_DSL_ERROR(full({16}, x, f32), "the fill value is a tile, not a scalar");
  EXPECT_DSL_ERROR(program_id(3), "grid axis 3 is out of range");
}

TEST(Errors, ReductionAxisOutOfRange) {
  Builder b("k");
  auto x = zeros({4, 16}, f32);
  EXPECT_DSL_ERROR(sum(x, 2), "sum at errors_test.cpp");
  EXPECT_DSL_ERROR(sum(x, 2), "axis 2 is out of range for f32[4, 16]");
  EXPECT_DSL_ERROR(argmax(x, -3), "axis -3 is out of range for f32[4, 16]");
  EXPECT_DSL_ERROR(cumsum(x, 5), "cumsum at");
  EXPECT_DSL_ERROR(xor_sum(x, 0), "xor_sum does not take f32 tiles");
  EXPECT_DSL_ERROR(max(x < 1.0f, 0), "max does not take i1 tiles");
  EXPECT_DSL_ERROR(sum(zeros({}, f32)), "sum of a scalar");
}

TEST(Errors, TopkKBeyondTheAxis) {
  Builder b("k");
  EXPECT_DSL_ERROR(topk(zeros({4, 16}, f32), 32), "k = 32 is not within the last axis of f32[4, 16]");
  EXPECT_DSL_ERROR(topk(zeros({16}, f32), 0), "topk at");
}

TEST(Errors, CombineFunctionReturnsTheWrongType) {
  Builder b("k");
  auto x = zeros({16}, f32);
  EXPECT_DSL_ERROR(reduce(x, 0, [](Value a, Value) { return a.to(bf16); }), "the combine function returns bf16, not f32");
}

TEST(Errors, NoActiveBuilder) {
  EXPECT_DSL_ERROR(program_id(0), "no dsl::Builder is active on this thread");
}

TEST(Errors, BuilderUsedAfterFinish) {
  Builder b("done");
  auto x = b.arg("x", ptr(f32));
  b.finish();
  EXPECT_DSL_ERROR(b.arg("y", f32), "builder \"done\" was used after finish()");
  EXPECT_DSL_ERROR(b.finish(), "was used after finish()");
  EXPECT_DSL_ERROR(load(x), "no dsl::Builder is active");
  Builder next("next");
  EXPECT_DSL_ERROR(load(x), "the value belongs to program \"done\", which finish() completed");
}

TEST(Errors, ValueFromAnotherBuilder) {
  Builder outer("outer");
  auto x = zeros({16}, f32);
  Builder inner("inner");
  EXPECT_DSL_ERROR(x + 1.0f, "the value belongs to program \"outer\", not to \"inner\"");
}

TEST(Errors, EmptyValue) {
  Builder b("k");
  Value nothing;
  EXPECT_DSL_ERROR(exp(nothing), "operand is an empty Value");
}

TEST(Errors, ArgumentMisuse) {
  Builder b("k");
  b.arg("x", ptr(f32));
  EXPECT_DSL_ERROR(b.arg("x", f32), "argument \"x\" is declared twice");
  EXPECT_DSL_ERROR(b.arg("", f32), "an argument has an empty name");
  EXPECT_DSL_ERROR(b.arg("m", mxfp4), "argument \"m\" is an mxfp4 scalar");
  EXPECT_DSL_ERROR(Builder("w", {.num_warps = 3}), "num_warps 3 is not a positive power of two");
}

TEST(Errors, NumStagesOutOfRange) {
  EXPECT_DSL_ERROR(Builder("s", {.num_stages = 1}), "num_stages 1 is out of range");
  EXPECT_DSL_ERROR(Builder("s", {.num_stages = 9}), "num_stages 9 is out of range");
}

TEST(Errors, MultipleOfIsAPowerOfTwoOnIntegers) {
  Builder b("k");
  EXPECT_DSL_ERROR(b.arg("p", ptr(f32), {.multiple_of = 4}),
                   "argument \"p\" is declared a multiple of 4 but is not an integer");
  EXPECT_DSL_ERROR(b.arg("s", f32, {.multiple_of = 2}), "argument \"s\" is declared a multiple of 2 but is not an integer");
  EXPECT_DSL_ERROR(b.arg("n", i64, {.multiple_of = 12}), "argument \"n\": multiple_of must be a power of two");
  EXPECT_DSL_ERROR(b.arg("m", i32, {.multiple_of = 0}), "argument \"m\": multiple_of must be a power of two");
  b.arg("stride", i64, {.multiple_of = 8});
  b.arg("x", ptr(f32));
  EXPECT_THAT(to_text(b.finish()), HasSubstr("i64 \"stride\" multiple_of=8"));
}

TEST(Errors, BuilderNeedsAName) {
  EXPECT_DSL_ERROR(Builder(""), "the program name is empty");
}

TEST(Errors, ArgumentsComeBeforeRegions) {
  Builder b("k");
  EXPECT_DSL_ERROR(range(0, 4, 1, [&](Value) { b.arg("late", i32); }), "argument \"late\" is declared inside a region");
}

TEST(Errors, ValueOfADestroyedBuilder) {
  Value stale;
  {
    Builder gone("gone");
    stale = zeros({16}, f32);
  }
  Builder b("k");
  EXPECT_DSL_ERROR(exp(stale), "the value belongs to a builder that no longer exists");
}

TEST(Errors, CreationArguments) {
  Builder b("k");
  EXPECT_DSL_ERROR(arange(int64_t{1} << 31, (int64_t{1} << 31) + 16), "the range does not fit i32");
  EXPECT_DSL_ERROR(zeros({0, 16}, f32), "shape [0, 16] has a dimension below 1");
  EXPECT_DSL_ERROR(zeros({16}, ptr(f32)), "full of ptr<f32>");
  EXPECT_DSL_ERROR(reshape(zeros({16}, f32), {0, -1}), "shape [0, -1] has an invalid dimension");
  EXPECT_DSL_ERROR(cat(zeros({}, f32), zeros({16}, f32)), "cat of a scalar");
  EXPECT_DSL_ERROR(where(1, 2.0f, 3.0f), "the condition is a number");
  EXPECT_DSL_ERROR(bitcast(b.arg("p", ptr(f32)), i64), "bitcast from ptr<f32> to i64");
  EXPECT_DSL_ERROR(bitcast(b.arg("q", ptr(f32)), i64), "a pointer reinterprets only as another pointer");
  EXPECT_NO_THROW(bitcast(b.arg("r", ptr(u8)), ptr(i32)));
}

TEST(Errors, ValueLeakingOutOfALoopBody) {
  Builder b("k");
  Value leaked;
  range(0, 4, 1, [&](Value i) { leaked = i * 2; });
  EXPECT_DSL_ERROR(leaked + 1, "a value defined inside the body of range at errors_test.cpp");
}

TEST(Errors, BuilderStaysUsableAfterAnError) {
  Builder b("k");
  auto x = b.arg("x", ptr(f32));
  EXPECT_THROW(range(0, 4, 1, zeros({16}, f32), [&](Value, Value acc) { return exp(arange(0, 16)) + acc; }), Error);
  store(x + arange(0, 16), 1.0f);
  Program program = b.finish();
  EXPECT_EQ(program.body.ops.back().code, OpCode::kStore);
}

}  // namespace
}  // namespace monotile::dsl
