// The verifier accepts every program the builder makes and rejects hand-broken ones with the op
// and its source line.
#include "dsl/verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dsl/dsl.h"
#include "dsl/test_programs.h"

namespace monotile::dsl {
namespace {

using ::testing::HasSubstr;

std::string message(const absl::Status& status) { return std::string(status.message()); }

TEST(Verifier, AcceptsEverySampleProgram) {
  for (const auto& sample : testing::sample_programs()) {
    Program program = sample.build();
    EXPECT_TRUE(verify(program).ok()) << sample.name << ": " << verify(program);
    EXPECT_TRUE(verify_for_target(program, *Target::parse("sm_90a")).ok()) << sample.name;
    EXPECT_TRUE(verify_for_target(program, *Target::parse("gfx90a")).ok()) << sample.name;
  }
}

// A small valid program to break: %x = arange; %y = x + x; store.
Program small() {
  Builder b("small");
  auto p = b.arg("p", ptr(i32));
  auto x = arange(0, 16);
  store(p + x, x + x);
  return b.finish();
}

const Op& find(const Program& program, OpCode code) {
  for (const Op& op : program.body.ops) {
    if (op.code == code) return op;
  }
  throw std::runtime_error("no such op");
}
Op& find(Program& program, OpCode code) {
  return const_cast<Op&>(find(static_cast<const Program&>(program), code));
}

TEST(Verifier, UseBeforeDefinitionNamesTheOpAndLine) {
  Program program = small();
  Op& add = find(program, OpCode::kAdd);
  add.operands[0] = add.results[0];
  absl::Status status = verify(program);
  EXPECT_THAT(message(status), HasSubstr("add at verifier_test.cpp:"));
  EXPECT_THAT(message(status), HasSubstr("is used before it is defined"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(Verifier, OperandTypesPerOp) {
  Program program = small();
  Op& add = find(program, OpCode::kAdd);
  program.value_types[add.results[0]] = Type{f32, {16}};
  EXPECT_THAT(message(verify(program)), HasSubstr("result is f32[16], expected i32[16]"));
}

TEST(Verifier, DoubleDefinitionIsNotSsa) {
  Program program = small();
  Op& add = find(program, OpCode::kAdd);
  add.results[0] = find(program, OpCode::kArange).results[0];
  EXPECT_THAT(message(verify(program)), HasSubstr("is defined twice (not SSA)"));
}

TEST(Verifier, ValueFromAnInnerRegionDoesNotDominate) {
  Builder b("leak");
  auto p = b.arg("p", ptr(i32));
  auto total = range(0, 4, 1, 0, [&](Value i, Value acc) { return acc + i * 3; });
  store(p, total);
  Program program = b.finish();
  const Op& loop = find(program, OpCode::kFor);
  ValueId inner = loop.regions[0].ops[1].results[0];  // i * 3
  find(program, OpCode::kStore).operands[1] = inner;
  EXPECT_THAT(message(verify(program)), HasSubstr("is defined in a region that does not enclose this op"));
}

TEST(Verifier, RegionsEndWithAYieldOfTheCarriedTypes) {
  Builder b("loop");
  auto p = b.arg("p", ptr(f32));
  auto total = range(0, 4, 1, 0.0f, [&](Value, Value acc) { return acc + 1.0f; });
  store(p, total);
  Program program = b.finish();
  Program missing = program;
  find(missing, OpCode::kFor).regions[0].ops.pop_back();
  EXPECT_THAT(message(verify(missing)), HasSubstr("for at verifier_test.cpp:"));
  EXPECT_THAT(message(verify(missing)), HasSubstr("a region does not end with yield"));
  Program wrong = program;
  Op& loop = find(wrong, OpCode::kFor);
  loop.regions[0].ops.back().operands[0] = loop.regions[0].args[0];  // yields the i32 index
  EXPECT_THAT(message(verify(wrong)), HasSubstr("region 0 yields i32 at position 0, expected f32"));
}

TEST(Verifier, YieldOnlyEndsNestedRegions) {
  Program program = small();
  Op yield;
  yield.code = OpCode::kYield;
  program.body.ops.push_back(yield);
  EXPECT_THAT(message(verify(program)), HasSubstr("yield is only allowed as the last op of a nested region"));
}

TEST(Verifier, LayoutSizes) {
  Program program = small();
  Op& arange = find(program, OpCode::kArange);
  program.value_types[arange.results[0]] = Type{i32, {100}};
  arange.attrs.ints = {0, 100};
  EXPECT_THAT(message(verify(program)), HasSubstr("neither a power of two nor a multiple of 16"));
}

TEST(Verifier, ConstantsHoldValuesOfTheirDtype) {
  Builder b("c");
  auto p = b.arg("p", ptr(u8));
  store(p, 200);
  Program program = b.finish();
  for (Op& op : program.body.ops) {
    if (op.code == OpCode::kConstant && program.type_of(op.results[0]).element == u8) op.attrs.int_value = 300;
  }
  EXPECT_THAT(message(verify(program)), HasSubstr("constant at verifier_test.cpp:"));
  EXPECT_THAT(message(verify(program)), HasSubstr("integer constant 300 does not fit u8"));
}

TEST(Verifier, AtomicsTakeTheBuildersDtypesOnly) {
  // The builder refuses atomic_xor on f32 memory; IR that a pass or a hand edit makes with it is
  // refused by the verifier by the same rule.
  Builder b("xor");
  auto p = b.arg("p", ptr(i32));
  atomic_xor(p, 1, Scope::gpu, Order::relaxed);
  Program program = b.finish();
  ASSERT_TRUE(verify(program).ok());
  for (Type& type : program.value_types) {
    if (type.element.scalar == ScalarType::kI32) type.element.scalar = ScalarType::kF32;
  }
  program.params[0].type.scalar = ScalarType::kF32;
  EXPECT_THAT(message(verify(program)), HasSubstr("atomic_xor does not take f32 memory"));
}

TEST(Verifier, PrefetchNeedsAPointerByTheBuildersRule) {
  Builder b("warm");
  auto w = b.arg("w", ptr(bf16));
  auto cols = arange(0, 64);
  prefetch(w + cols, cols < 32);
  Program program = b.finish();
  ASSERT_TRUE(verify(program).ok());
  Op& op = find(program, OpCode::kPrefetch);
  Program wrong_address = program;
  const ValueId lanes = find(wrong_address, OpCode::kArange).results[0];
  find(wrong_address, OpCode::kPrefetch).operands[0] = lanes;
  EXPECT_THAT(message(verify(wrong_address)), HasSubstr("prefetch at verifier_test.cpp:"));
  EXPECT_THAT(message(verify(wrong_address)), HasSubstr("the address is not a pointer"));
  op.attrs.has_mask = false;
  EXPECT_THAT(message(verify(program)), HasSubstr("expected 1 operands, got 2"));
}

TEST(Verifier, Mxfp4WordPairsPlacementIsOneTheBuilderMakes) {
  Builder b("decode");
  auto words = b.arg("words", ptr(i32)), codes = b.arg("codes", ptr(u8)), out = b.arg("out", ptr(i32));
  auto js = arange(0, 8);
  store(out + arange(0, 32), mxfp4_word_pairs(load(words + js), load(codes + js), 0, Mxfp4Placement::kShifts));
  Program program = b.finish();
  ASSERT_TRUE(verify(program).ok());
  find(program, OpCode::kMxfp4WordPairs).attrs.ints = {7};
  EXPECT_THAT(message(verify(program)), HasSubstr("mxfp4_word_pairs at verifier_test.cpp:"));
  EXPECT_THAT(message(verify(program)), HasSubstr("placement [7] is not one of dsl/dot.h's Mxfp4Placement"));
}

TEST(Verifier, ResultWithoutATypeIsAnErrorNotACrash) {
  Program program = small();
  find(program, OpCode::kAdd).results[0] = 1000;
  EXPECT_THAT(message(verify(program)), HasSubstr("result %1000 has no type"));
}

TEST(Verifier, ForTargetChecksTheMatrixUnitAtTheUsersLine) {
  Builder b("tiny_k");
  auto p = b.arg("p", ptr(f32));
  int line = __LINE__ + 1;
  auto c = dot(zeros({16, 8}, bf16), zeros({8, 16}, bf16));
  store(p + col(arange(0, 16)) * 16 + row(arange(0, 16)), c);
  Program program = b.finish();
  EXPECT_TRUE(verify(program).ok());
  EXPECT_TRUE(verify_for_target(program, Target::cpu()).ok());
  absl::Status status = verify_for_target(program, *Target::parse("sm_90a"));
  EXPECT_THAT(message(status), HasSubstr("dot at verifier_test.cpp:" + std::to_string(line) +
                                         ": K = 8 is below the matrix unit's minimum 16 for bf16 on sm_90a; hint: "));
}

}  // namespace
}  // namespace monotile::dsl
