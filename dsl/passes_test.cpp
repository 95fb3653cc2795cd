// Constant folding, CSE, DCE and simplify: what each removes or rewrites, what each must keep, and
// that every result still verifies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "dsl/cse.h"
#include "dsl/dce.h"
#include "dsl/dsl.h"
#include "dsl/fold_constants.h"
#include "dsl/printer.h"
#include "dsl/simplify.h"
#include "dsl/test_programs.h"
#include "dsl/verifier.h"

namespace monotile::dsl {
namespace {

int count(const Block& block, OpCode code) {
  int n = 0;
  for (const Op& op : block.ops) {
    n += op.code == code;
    for (const Block& region : op.regions) n += count(region, code);
  }
  return n;
}

// The constant stored by the program's first store (its value operand's defining op).
const Op& stored_definition(const Program& program) {
  ValueId stored = kNoValue;
  for (const Op& op : program.body.ops) {
    if (op.code == OpCode::kStore) {
      stored = op.operands[1];
      break;
    }
  }
  for (const Op& op : program.body.ops) {
    for (ValueId result : op.results) {
      if (result == stored) return op;
    }
  }
  throw std::runtime_error("no stored value");
}

template <typename Build>
Program store_of(ElementType type, Build build) {
  Builder b("fold");
  auto out = b.arg("out", ptr(type));
  store(out, build());
  return b.finish();
}

TEST(FoldConstants, IntegerArithmeticWrapsToTheDtype) {
  Program program = fold_constants(store_of(i8, [] {
    auto a = full({}, 127, i8);
    return a + 1;
  }));
  const Op& op = stored_definition(program);
  EXPECT_EQ(op.code, OpCode::kConstant);
  EXPECT_EQ(op.attrs.int_value, -128);
  EXPECT_TRUE(verify(program).ok());
}

TEST(FoldConstants, UnsignedShiftsAndUmulhi) {
  Program shifted = fold_constants(store_of(u32, [] {
    auto a = full({}, 0x80000000u, u32);
    return a >> 31;
  }));
  EXPECT_EQ(stored_definition(shifted).attrs.int_value, 1);
  Program high = fold_constants(store_of(u32, [] {
    auto a = full({}, 0xffffffffu, u32);
    return umulhi(a, a);
  }));
  EXPECT_EQ(stored_definition(high).attrs.int_value, 0xfffffffe);
  Program arithmetic = fold_constants(store_of(i32, [] {
    auto a = full({}, -8, i32);
    return a >> 1;
  }));
  EXPECT_EQ(stored_definition(arithmetic).attrs.int_value, -4);
}

TEST(FoldConstants, Bf16ArithmeticRoundsOncePerOp) {
  Program program = fold_constants(store_of(bf16, [] {
    auto one = full({}, 1.0f, bf16);
    return one + 0.00390625f;  // 1 + 2^-8: a tie between 1 and 1 + 2^-7 in bf16, to even: 1
  }));
  const Op& op = stored_definition(program);
  ASSERT_EQ(op.code, OpCode::kConstant);
  EXPECT_EQ(op.attrs.float_value, 1.0);
  Program f32_sum = fold_constants(store_of(f32, [] {
    auto one = full({}, 1.0f, f32);
    return one + 0.00390625f;
  }));
  EXPECT_EQ(stored_definition(f32_sum).attrs.float_value, 1.00390625);
}

TEST(FoldConstants, CastsAndComparisons) {
  Program cast = fold_constants(store_of(bf16, [] {
    auto x = full({}, 3.0f, f32);
    return (x / 7.0f).to(bf16);
  }));
  EXPECT_EQ(stored_definition(cast).attrs.float_value, 0.427734375);  // bf16(f32(3/7)) = 219 * 2^-9
  Program truncated = fold_constants(store_of(i32, [] {
    auto x = full({}, -2.75f, f32);
    return x.to(i32);
  }));
  EXPECT_EQ(stored_definition(truncated).attrs.int_value, -2);
  Program compared = fold_constants(store_of(i1, [] {
    auto x = full({}, 3u, u32);
    return x > 2u;
  }));
  EXPECT_EQ(stored_definition(compared).attrs.int_value, 1);
}

TEST(FoldConstants, LeavesUndefinedAndTranscendentalCases) {
  Program division = fold_constants(store_of(i32, [] {
    auto x = full({}, 1, i32);
    return x / 0;
  }));
  EXPECT_EQ(stored_definition(division).code, OpCode::kDiv);
  Program shift = fold_constants(store_of(i32, [] {
    auto x = full({}, 1, i32);
    return x << 32;
  }));
  EXPECT_EQ(stored_definition(shift).code, OpCode::kShl);
  Program transcendental = fold_constants(store_of(f32, [] {
    auto x = full({}, 1.0f, f32);
    return exp(x);
  }));
  EXPECT_EQ(stored_definition(transcendental).code, OpCode::kExp);
  Program out_of_range = fold_constants(store_of(i32, [] {
    auto x = full({}, 3e9f, f32);
    return x.to(i32);
  }));
  EXPECT_EQ(stored_definition(out_of_range).code, OpCode::kCast);
}

TEST(FoldConstants, NanPropagatesThroughMinimum) {
  Program program = fold_constants(store_of(f32, [] {
    auto x = full({}, NAN, f32);
    return minimum(x, 1.0f);
  }));
  EXPECT_TRUE(std::isnan(stored_definition(program).attrs.float_value));
}

TEST(FoldConstants, IdentitiesForwardTheOperand) {
  Builder b("identities");
  auto p = b.arg("p", ptr(i32)), n = b.arg("n", i32);
  store(p, n * 1 + 0);
  store(p + 0, where(true, n, n * 1));
  Program folded = fold_constants(b.finish());
  EXPECT_EQ(count(folded.body, OpCode::kMul), 0);
  EXPECT_EQ(count(folded.body, OpCode::kAdd), 0);
  EXPECT_EQ(count(folded.body, OpCode::kAddPtr), 0);
  EXPECT_EQ(count(folded.body, OpCode::kSelect), 0);
  EXPECT_EQ(folded.body.ops.back().operands, (std::vector<ValueId>{0, 1}));  // store p, n
  EXPECT_TRUE(verify(folded).ok());
}

TEST(FoldConstants, IfOnAConstantConditionBecomesItsBranch) {
  Builder b("branch");
  auto p = b.arg("p", ptr(i32)), n = b.arg("n", i32);
  auto on = full({}, 1, i32) > 0;
  auto r = if_(on, [&] {
    store(p, n);
    return n * 2;
  }, [&] { return n; });
  store(p + 1, r);
  Program folded = fold_constants(b.finish());
  EXPECT_EQ(count(folded.body, OpCode::kIf), 0);
  EXPECT_EQ(count(folded.body, OpCode::kStore), 2);
  EXPECT_EQ(count(folded.body, OpCode::kMul), 1);
  EXPECT_TRUE(verify(folded).ok()) << verify(folded);
  const Op& last = folded.body.ops.back();
  bool stores_product = false;
  for (const Op& op : folded.body.ops) stores_product |= op.code == OpCode::kMul && op.results[0] == last.operands[1];
  EXPECT_TRUE(stores_product);
}

TEST(FoldConstants, KeepsFloatAddOfZero) {
  Program program = fold_constants(store_of(f32, [] {
    auto x = zeros({}, f32) * -1.0f;  // -0.0: x + 0.0 is +0.0, not x
    return x + 0.0f;
  }));
  EXPECT_EQ(stored_definition(program).code, OpCode::kConstant);
  EXPECT_FALSE(std::signbit(stored_definition(program).attrs.float_value));
}

TEST(Cse, MergesIdenticalPureOps) {
  Builder b("cse");
  auto p = b.arg("p", ptr(f32));
  auto a = load(p + arange(0, 16));
  auto s1 = exp(a) * 2.0f;
  auto s2 = exp(a) * 2.0f;
  store(p + arange(0, 16), s1 + s2);
  Program program = eliminate_common_subexpressions(b.finish());
  EXPECT_EQ(count(program.body, OpCode::kExp), 1);
  EXPECT_EQ(count(program.body, OpCode::kArange), 1);
  EXPECT_EQ(count(program.body, OpCode::kMul), 1);
  EXPECT_TRUE(verify(program).ok());
}

TEST(Cse, KeepsLoadsAtomicsAndTimers) {
  Builder b("effects");
  auto p = b.arg("p", ptr(i32));
  auto a = load(p);
  auto c = load(p);
  auto t0 = global_timer();
  auto t1 = global_timer();
  auto x = atomic_add(p, 1, Scope::gpu, Order::relaxed);
  auto y = atomic_add(p, 1, Scope::gpu, Order::relaxed);
  store(p, a + c + (t1 - t0).to(i32) + x + y);
  Program program = eliminate_common_subexpressions(b.finish());
  EXPECT_EQ(count(program.body, OpCode::kLoad), 2);
  EXPECT_EQ(count(program.body, OpCode::kGlobalTimer), 2);
  EXPECT_EQ(count(program.body, OpCode::kAtomicRmw), 2);
}

// The dependent-launch ops have no results: every pass keeps each where written, and the program
// says it waits only when a wait is there, in a nested region too.
TEST(Simplify, KeepsGridDependencyOpsInOrder) {
  Builder b("dependent");
  auto p = b.arg("p", ptr(f32)), w = b.arg("w", ptr(f32));
  launch_dependents();
  prefetch(w);
  wait_grid_dependency();
  wait_grid_dependency();
  store(p, load(p) * load(w));
  Program program = simplify(b.finish());
  EXPECT_TRUE(verify(program).ok());
  ASSERT_GE(program.body.ops.size(), 4u);
  EXPECT_EQ(program.body.ops[0].code, OpCode::kLaunchDependents);
  EXPECT_EQ(count(program.body, OpCode::kWaitGridDependency), 2);
  EXPECT_TRUE(program.waits_for_grid_dependency());
  const std::string text = to_text(program);
  EXPECT_THAT(text, ::testing::HasSubstr("launch_dependents"));
  EXPECT_THAT(text, ::testing::HasSubstr("wait_grid_dependency"));
  EXPECT_LT(text.find("launch_dependents"), text.find("prefetch"));
  EXPECT_LT(text.find("prefetch"), text.find("wait_grid_dependency"));
  EXPECT_LT(text.find("wait_grid_dependency"), text.find("load"));
}

TEST(Program, WaitsForGridDependencyOnlyWithTheWait) {
  auto build = [](bool launch, bool wait) {
    Builder b("dependent");
    auto p = b.arg("p", ptr(i32)), n = b.arg("n", i32);
    if (launch) launch_dependents();
    if_(n > 0, [&] {
      if (wait) wait_grid_dependency();
      store(p, n);
    });
    return b.finish();
  };
  EXPECT_FALSE(build(false, false).waits_for_grid_dependency());
  EXPECT_FALSE(build(true, false).waits_for_grid_dependency());
  EXPECT_TRUE(build(false, true).waits_for_grid_dependency());
  EXPECT_TRUE(verify(build(true, true)).ok());
}

TEST(Cse, ReusesOuterValuesButNotSiblingRegions) {
  Builder b("scopes");
  auto p = b.arg("p", ptr(i32)), n = b.arg("n", i32);
  auto outer = n * 3;
  auto first = range(0, 4, 1, 0, [&](Value i, Value acc) { return acc + n * 3 + i * 5; });
  auto second = range(0, 4, 1, 0, [&](Value i, Value acc) { return acc + i * 5; });
  store(p, outer + first + second);
  Program program = eliminate_common_subexpressions(b.finish());
  // n * 3 inside the first loop reuses the outer one; i * 5 stays once in each loop body.
  EXPECT_EQ(count(program.body, OpCode::kMul), 3);
  int muls_in_loops = 0;
  for (const Op& op : program.body.ops) {
    if (op.code == OpCode::kFor) muls_in_loops += count(op.regions[0], OpCode::kMul);
  }
  EXPECT_EQ(muls_in_loops, 2);
  EXPECT_TRUE(verify(program).ok());
}

TEST(Dce, RemovesUnusedPureOps) {
  Builder b("dead");
  auto p = b.arg("p", ptr(f32));
  auto unused = exp(load(p + arange(0, 16)));
  auto dead_loop = range(0, 4, 1, 0.0f, [](Value, Value acc) { return acc + 1.0f; });
  store(p, 1.0f);
  (void)unused;
  (void)dead_loop;
  Program program = eliminate_dead_code(b.finish());
  EXPECT_EQ(count(program.body, OpCode::kExp), 0);
  EXPECT_EQ(count(program.body, OpCode::kLoad), 0);  // a plain load without uses is dead
  EXPECT_EQ(count(program.body, OpCode::kFor), 0);
  EXPECT_EQ(count(program.body, OpCode::kStore), 1);
  EXPECT_TRUE(verify(program).ok());
}

TEST(Dce, KeepsSideEffectsAndRegionsWithThem) {
  Builder b("effects");
  auto p = b.arg("p", ptr(i32));
  atomic_add(p, 1, Scope::gpu, Order::relaxed);     // result unused, still an effect
  load_acquire(p + 1, Scope::gpu);                  // orders later accesses
  wait_until(p + 2, Cmp::ge, 1, 1000);              // waits
  fence(Order::release, Scope::gpu);
  barrier();
  range(0, 4, 1, [&](Value i) { store(p + i, i); });  // no results, a store inside
  if_(load(p) > 0, [&] { device_assert(load(p) > 0, "positive"); });
  print("p", {load(p)});
  Program before = b.finish();
  Program after = eliminate_dead_code(before);
  EXPECT_EQ(to_text(after), to_text(before));
}

TEST(Dce, KeepsPrefetchesAndCseNeverMergesThem) {
  Builder b("warm");
  auto w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(f32)), n = b.arg("n", i32);
  auto cols = arange(0, 64);
  prefetch(w + cols);
  prefetch(w + cols);  // the same hint twice: still both, as written
  prefetch(w, n > 0);
  store(y, 1.0f);
  Program program = b.finish();
  EXPECT_EQ(count(eliminate_dead_code(program).body, OpCode::kPrefetch), 3);
  EXPECT_EQ(count(eliminate_common_subexpressions(program).body, OpCode::kPrefetch), 3);
  EXPECT_EQ(count(simplify(program).body, OpCode::kPrefetch), 3);
  EXPECT_TRUE(verify(simplify(program)).ok());
}

TEST(Dce, KeepsWhatUsedResultsNeedInsideRegions) {
  Builder b("uses");
  auto p = b.arg("p", ptr(i32));
  auto total = range(0, 8, 1, 0, [&](Value i, Value acc) {
    auto unused = i * 7;
    (void)unused;
    return acc + i;
  });
  store(p, total);
  Program program = eliminate_dead_code(b.finish());
  EXPECT_EQ(count(program.body, OpCode::kFor), 1);
  EXPECT_EQ(count(program.body, OpCode::kMul), 0);
  EXPECT_EQ(count(program.body, OpCode::kAdd), 1);
  EXPECT_TRUE(verify(program).ok());
}

TEST(Simplify, ReachesAFixedPointAcrossPasses) {
  Builder b("chain");
  auto p = b.arg("p", ptr(i32));
  auto offset = full({}, 2, i32) * 3 - 6;  // folds to 0, then the addptr forwards p
  auto twice = load(p + offset) + load(p + offset);
  store(p + offset, twice);
  Program program = simplify(b.finish());
  EXPECT_EQ(count(program.body, OpCode::kAddPtr), 0);
  EXPECT_EQ(count(program.body, OpCode::kConstant), 0);
  EXPECT_EQ(count(program.body, OpCode::kLoad), 2);
  EXPECT_TRUE(verify(program).ok());
  EXPECT_EQ(to_text(simplify(program)), to_text(program));
}

TEST(Simplify, EverySampleProgramStillVerifiesAndIsAFixedPoint) {
  for (const auto& sample : testing::sample_programs()) {
    Program original = sample.build();
    Program simplified = simplify(original);
    EXPECT_TRUE(verify(simplified).ok()) << sample.name << ": " << verify(simplified);
    EXPECT_EQ(to_text(simplify(simplified)), to_text(simplified)) << sample.name;
    EXPECT_LE(to_text(simplified).size(), to_text(original).size()) << sample.name;
    EXPECT_EQ(count(simplified.body, OpCode::kStore), count(original.body, OpCode::kStore)) << sample.name;
  }
}

}  // namespace
}  // namespace monotile::dsl
