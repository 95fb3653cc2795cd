// The builder end to end: the sketch's kernels build, ops and types come out as documented,
// promotion and broadcasting insert explicit ops, and locations point at the user's lines.
#include "dsl/builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "dsl/dsl.h"
#include "dsl/printer.h"

namespace monotile::dsl {
namespace {

using ::testing::ElementsAre;

std::vector<OpCode> codes(const Block& block) {
  std::vector<OpCode> result;
  for (const Op& op : block.ops) result.push_back(op.code);
  return result;
}

Program rms_norm(int hidden, float eps) {
  Builder b("rms_norm", {.num_warps = 4});
  auto x = b.arg("x", ptr(bf16)), w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  auto row = program_id(0);
  auto cols = arange(0, hidden);
  auto v = load(x + row * hidden + cols).to(f32);
  auto rstd = rsqrt(sum(v * v) / hidden + eps);
  store(y + row * hidden + cols, (v * rstd * load(w + cols).to(f32)).to(bf16));
  return b.finish();
}

TEST(Builder, RmsNormBuilds) {
  Program program = rms_norm(7168, 1e-6f);
  EXPECT_EQ(program.name, "rms_norm");
  EXPECT_EQ(program.options.num_warps, 4);
  ASSERT_EQ(program.params.size(), 3u);
  EXPECT_EQ(program.params[0].name, "x");
  EXPECT_EQ(program.params[0].type, ptr(bf16));
  EXPECT_EQ(program.body.ops.back().code, OpCode::kStore);
  // The reduction over the whole tile gives a scalar.
  for (const Op& op : program.body.ops) {
    if (op.code == OpCode::kReduce) {
      EXPECT_TRUE(program.type_of(op.results[0]).is_scalar());
    }
  }
}

TEST(Builder, LiteralsAdoptTheValueDtype) {
  Builder b("literals");
  auto x = zeros({16}, bf16);
  auto y = x * 2;        // int literal with bf16: bf16
  auto z = arange(0, 16) + 0.5f;  // float literal with i32: f32
  auto m = (arange(0, 16) < 3) + 1;  // int literal with i1: i32
  EXPECT_EQ(y.dtype(), bf16);
  EXPECT_EQ(z.dtype(), f32);
  EXPECT_EQ(m.dtype(), i32);
  b.finish();
}

TEST(Builder, ValuesPromoteLikeTriton) {
  Builder b("promote");
  auto h = zeros({16}, bf16), f = zeros({16}, f16), s = zeros({16}, f32), i = zeros({16}, i64);
  auto u = zeros({16}, u32), n = zeros({16}, i32);
  EXPECT_EQ((h + f).dtype(), f32);
  EXPECT_EQ((h + s).dtype(), f32);
  EXPECT_EQ((h + n).dtype(), bf16);
  EXPECT_EQ((n + i).dtype(), i64);
  EXPECT_EQ((n + u).dtype(), u32);
  b.finish();
}

TEST(Builder, BroadcastingInsertsExplicitOps) {
  Builder b("bcast");
  auto r = arange(0, 16), c = arange(0, 32);
  auto grid = col(r) * 32 + row(c);  // [16, 1] and [1, 32] -> [16, 32]
  EXPECT_THAT(grid.shape(), ElementsAre(16, 32));
  Program program = b.finish();
  int broadcasts = 0;
  for (const Op& op : program.body.ops) broadcasts += op.code == OpCode::kBroadcast;
  EXPECT_EQ(broadcasts, 2);
  // Every elementwise op has identical operand types.
  for (const Op& op : program.body.ops) {
    if (op.code == OpCode::kAdd || op.code == OpCode::kMul) {
      EXPECT_EQ(program.type_of(op.operands[0]), program.type_of(op.operands[1]));
    }
  }
}

TEST(Builder, LowerRankOperandGetsLeadingDims) {
  Builder b("rank");
  auto a = zeros({4, 16}, f32), v = zeros({16}, f32);
  auto sum_rows = a + v;
  EXPECT_THAT(sum_rows.shape(), ElementsAre(4, 16));
  Program program = b.finish();
  EXPECT_THAT(codes(program.body), ElementsAre(OpCode::kConstant, OpCode::kConstant,
                                               OpCode::kExpandDims, OpCode::kBroadcast, OpCode::kAdd));
}

TEST(Builder, PointerArithmeticIsAddPtr) {
  Builder b("ptrs");
  auto x = b.arg("x", ptr(f32));
  auto p = x + arange(0, 16);
  auto q = p - 1;
  EXPECT_EQ(p.dtype(), ptr(f32));
  EXPECT_THAT(q.shape(), ElementsAre(16));
  Program program = b.finish();
  EXPECT_EQ(program.body.ops.back().code, OpCode::kAddPtr);
  EXPECT_EQ(program.body.ops[program.body.ops.size() - 2].attrs.int_value, -1);
}

TEST(Builder, RangeCarriesValues) {
  Builder b("loop");
  auto x = b.arg("x", ptr(f32));
  auto acc = range(0, 1024, 64, zeros({64}, f32), [&](Value k, Value acc) {
    return acc + load(x + k + arange(0, 64));
  });
  EXPECT_THAT(acc.shape(), ElementsAre(64));
  auto [s, t] = range(0, 4, 1, 0.0f, 1, [&](Value, Value s, Value t) {
    return std::array{s + 1.0f, t * 2};
  });
  EXPECT_EQ(s.dtype(), f32);
  EXPECT_EQ(t.dtype(), i32);
  Program program = b.finish();
  const Op* loop = nullptr;
  for (const Op& op : program.body.ops) {
    if (op.code == OpCode::kFor && !loop) loop = &op;
  }
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->regions.size(), 1u);
  EXPECT_EQ(loop->regions[0].args.size(), 2u);
  EXPECT_EQ(loop->regions[0].ops.back().code, OpCode::kYield);
}

TEST(Builder, IfAndWhileReturnValues) {
  Builder b("branches");
  auto n = b.arg("n", i32);
  auto r = if_(n > 0, [&] { return n * 2; }, [&] { return n - 1; });
  EXPECT_EQ(r.dtype(), i32);
  if_(n == 3, [&] { device_assert(n > 0, "positive"); });
  auto [lo, hi] = if_(n > 4, [&] { return std::array{n, n * 2}; }, [&] { return std::array{n - 1, n}; });
  EXPECT_EQ(hi.dtype(), i32);
  auto [a, c] = if_(n > 5, [&] { return std::tuple{n, n.to(f32)}; }, [&] { return std::tuple{n, n.to(f32) * 2.0f}; });
  EXPECT_EQ(c.dtype(), f32);
  (void)lo;
  (void)a;
  auto [i, total] = while_(0, 0, [&](Value i, Value) { return i < n; },
                           [&](Value i, Value total) { return std::array{i + 1, total + i}; });
  EXPECT_EQ(total.dtype(), i32);
  b.finish();
}

TEST(Builder, ReductionsScansSortTopk) {
  Builder b("across");
  auto x = zeros({4, 896}, f32);
  EXPECT_THAT(sum(x, 1).shape(), ElementsAre(4));
  EXPECT_THAT(max(x, 0, true).shape(), ElementsAre(1, 896));
  EXPECT_EQ(argmax(x, 1).dtype(), i32);
  EXPECT_TRUE(sum(x).is_scalar());
  EXPECT_EQ(sum(arange(0, 16) < 4).dtype(), i32);
  auto top = topk(x, 16);
  EXPECT_THAT(top.values.shape(), ElementsAre(4, 16));
  EXPECT_EQ(top.indices.dtype(), i32);
  auto sorted = sort(x, 1, true);
  EXPECT_THAT(sorted.values.shape(), ElementsAre(4, 896));
  auto custom = reduce(x, 1, [](Value a, Value c) { return maximum(a, c); });
  EXPECT_THAT(custom.shape(), ElementsAre(4));
  auto scan = associative_scan(x, 1, [](Value a, Value c) { return a + c; });
  EXPECT_THAT(cumsum(x, 1).shape(), ElementsAre(4, 896));
  EXPECT_THAT(scan.shape(), ElementsAre(4, 896));
  b.finish();
}

TEST(Builder, DotAndDequant) {
  Builder b("matrix");
  auto a = zeros({16, 64}, bf16), w = zeros({32, 64}, bf16);
  auto c = dot(a, trans(w));
  EXPECT_EQ(c.dtype(), f32);
  EXPECT_THAT(c.shape(), ElementsAre(16, 32));
  auto packed = b.arg("w4", ptr(mxfp4)), scales = b.arg("s", ptr(u8));
  auto values = dequant_mxfp4(load(packed + arange(0, 64)), load(scales + arange(0, 4)));
  EXPECT_THAT(values.shape(), ElementsAre(128));
  EXPECT_EQ(values.dtype(), bf16);
  b.finish();
}

TEST(Builder, MemoryOrderingOps) {
  Builder b("sync");
  auto flags = b.arg("flags", ptr(i32)), data = b.arg("data", ptr(f32));
  auto ticket = atomic_add(flags, 1, Scope::gpu, Order::acq_rel);
  EXPECT_TRUE(ticket.is_scalar());
  auto old = atomic_cas(flags + 1, 0, ticket, Scope::system, Order::relaxed);
  EXPECT_EQ(old.dtype(), i32);
  store_release(flags + 2, ticket, Scope::gpu);
  auto seen = load_acquire(flags + 3, Scope::gpu);
  fence(Order::acq_rel, Scope::gpu);
  barrier();
  auto timed_out = wait_until(flags + 4, Cmp::ge, seen, 1'000'000);
  EXPECT_EQ(timed_out.dtype(), i1);
  auto start = global_timer();
  EXPECT_EQ(start.dtype(), i64);
  auto offs = arange(0, 16);
  store(data + offs, load(data + offs, offs < 8, 0.0f, {.cache = Cache::streaming}), offs < 8);
  print("ticket", {ticket, timed_out});
  b.finish();
}

TEST(Builder, SourceLocationIsTheCallersLine) {
  Builder b("lines");
  auto x = b.arg("x", ptr(f32));
  int line = __LINE__ + 1;
  auto y = load(x + 1) * 2.0f;
  Program program = b.finish();
  for (const Op& op : program.body.ops) {
    EXPECT_EQ(op.loc.line, line) << op_name(op.code);
    EXPECT_EQ(op.loc.str(), "builder_test.cpp:" + std::to_string(line));
  }
  (void)y;
}

TEST(Builder, TwoBuildersInSequence) {
  Program a = rms_norm(1024, 1e-5f);
  Program c = rms_norm(2048, 1e-5f);
  EXPECT_EQ(a.name, c.name);
  EXPECT_NE(a.value_types, c.value_types);
}

TEST(Builder, BuildersOnSeveralThreadsAreIndependent) {
  std::string expected = to_text(rms_norm(7168, 1e-6f));
  std::vector<std::string> texts(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&texts, i] {
      for (int round = 0; round < 20; ++round) texts[i] = to_text(rms_norm(7168, 1e-6f));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& text : texts) EXPECT_EQ(text, expected);
}

TEST(Builder, NestedBuilderIsCurrentUntilItFinishes) {
  Builder outer("outer");
  auto x = outer.arg("x", ptr(f32));
  {
    Builder inner("inner");
    auto y = inner.arg("y", ptr(f32));
    store(y, 1.0f);
    Program program = inner.finish();
    EXPECT_EQ(program.params.size(), 1u);
  }
  store(x, 2.0f);  // the outer builder is current again
  EXPECT_EQ(outer.finish().body.ops.back().code, OpCode::kStore);
}

TEST(Builder, ConstantsAreRoundedToTheirDtype) {
  Builder b("round");
  auto x = zeros({16}, bf16) + 0.1;
  Program program = b.finish();
  (void)x;
  const Op& constant = program.body.ops[1];
  ASSERT_EQ(constant.code, OpCode::kConstant);
  EXPECT_EQ(constant.attrs.float_value, 0.10009765625);  // bf16's nearest to 0.1
}

}  // namespace
}  // namespace monotile::dsl
