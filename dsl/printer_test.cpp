// Golden text of small programs. Each kernel statement builds at most one value from unsequenced
// C++ operands, so the op order (and the text) does not depend on the compiler's evaluation order.
#include "dsl/printer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "dsl/dsl.h"
#include "dsl/dce.h"

namespace monotile::dsl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Program axpy() {
  Builder b("axpy", {.num_warps = 2});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), a = b.arg("a", f32), n = b.arg("n", i32);
  auto base = program_id(0) * 64;
  auto lanes = arange(0, 64);
  auto offs = base + lanes;
  auto mask = offs < n;
  auto xv = load(x + offs, mask, 0.0f);
  auto yv = load(y + offs, mask);
  auto scaled = a * xv;
  store(y + offs, scaled + yv, mask);
  return b.finish();
}

TEST(Printer, MaskedLoadsAndStores) {
  EXPECT_EQ(to_text(axpy()), R"(kernel axpy num_warps=2 (%0: ptr<f32> "x", %1: ptr<f32> "y", %2: f32 "a", %3: i32 "n") {
  %4 = program_id axis=0 : i32
  %5 = constant 64 : i32
  %6 = mul %4, %5 : i32
  %7 = arange start=0 end=64 : i32[64]
  %8 = broadcast %6 : i32[64]
  %9 = add %8, %7 : i32[64]
  %10 = broadcast %3 : i32[64]
  %11 = cmp lt %9, %10 : i1[64]
  %12 = broadcast %0 : ptr<f32>[64]
  %13 = addptr %12, %9 : ptr<f32>[64]
  %14 = constant 0 : f32[64]
  %15 = load mask other %13, %11, %14 : f32[64]
  %16 = broadcast %1 : ptr<f32>[64]
  %17 = addptr %16, %9 : ptr<f32>[64]
  %18 = load mask %17, %11 : f32[64]
  %19 = broadcast %2 : f32[64]
  %20 = mul %19, %15 : f32[64]
  %21 = add %20, %18 : f32[64]
  %22 = broadcast %1 : ptr<f32>[64]
  %23 = addptr %22, %9 : ptr<f32>[64]
  store mask %23, %21, %11
}
)");
}

TEST(Printer, PrefetchHasNoResultAndShowsItsMask) {
  Builder b("warm");
  auto w = b.arg("w", ptr(bf16)), n = b.arg("n", i32);
  prefetch(w);
  prefetch(w, n > 0);
  EXPECT_EQ(to_text(b.finish()), R"(kernel warm num_warps=4 (%0: ptr<bf16> "w", %1: i32 "n") {
  prefetch %0
  %2 = constant 0 : i32
  %3 = cmp gt %1, %2 : i1
  prefetch mask %0, %3
}
)");
}

TEST(Printer, LoopWithACarriedValue) {
  Builder b("loop");
  auto x = b.arg("x", ptr(bf16)), out = b.arg("out", ptr(f32));
  auto init = zeros({32}, f32);
  auto acc = range(0, 256, 32, init, [&](Value k, Value acc) {
    auto lanes = arange(0, 32);
    auto v = load(x + k + lanes);
    return acc + v.to(f32);
  });
  auto lanes = arange(0, 32);
  store(out + lanes, acc);
  EXPECT_EQ(to_text(b.finish()), R"(kernel loop num_warps=4 (%0: ptr<bf16> "x", %1: ptr<f32> "out") {
  %2 = constant 0 : f32[32]
  %3 = constant 0 : i32
  %4 = constant 256 : i32
  %5 = constant 32 : i32
  %6 = for %3, %4, %5, %2 : f32[32] {
  ^(%7: i32, %8: f32[32]):
    %9 = arange start=0 end=32 : i32[32]
    %10 = addptr %0, %7 : ptr<bf16>
    %11 = broadcast %10 : ptr<bf16>[32]
    %12 = addptr %11, %9 : ptr<bf16>[32]
    %13 = load %12 : bf16[32]
    %14 = cast %13 : f32[32]
    %15 = add %8, %14 : f32[32]
    yield %15
  }
  %16 = arange start=0 end=32 : i32[32]
  %17 = broadcast %1 : ptr<f32>[32]
  %18 = addptr %17, %16 : ptr<f32>[32]
  store %18, %6
}
)");
}

TEST(Printer, CombineRegionsAndMultipleResults) {
  Builder b("across");
  auto x = b.arg("x", ptr(f32)), ids = b.arg("ids", ptr(i32));
  auto lanes = arange(0, 32);
  auto v = load(x + lanes);
  auto m = reduce(v, 0, [](Value a, Value c) { return maximum(a, c); });
  auto [top, index] = topk(v, 2);
  auto two = arange(0, 2);
  store(ids + two, index);
  store(x, m);
  EXPECT_EQ(to_text(b.finish()), R"(kernel across num_warps=4 (%0: ptr<f32> "x", %1: ptr<i32> "ids") {
  %2 = arange start=0 end=32 : i32[32]
  %3 = broadcast %0 : ptr<f32>[32]
  %4 = addptr %3, %2 : ptr<f32>[32]
  %5 = load %4 : f32[32]
  %6 = reduce custom axis=0 %5 : f32 {
  ^(%7: f32, %8: f32):
    %9 = max %7, %8 : f32
    yield %9
  }
  %10, %11 = topk k=2 axis=0 descending %5 : f32[2], i32[2]
  %12 = arange start=0 end=2 : i32[2]
  %13 = broadcast %1 : ptr<i32>[2]
  %14 = addptr %13, %12 : ptr<i32>[2]
  store %14, %11
  store %0, %6
}
)");
}

TEST(Printer, OrderingAttributesAndQuotedText) {
  Builder b("sync");
  auto flag = b.arg("flag", ptr(u32)), epoch = b.arg("epoch", u32);
  auto old = atomic_add(flag, 1u, Scope::system, Order::release);
  auto late = wait_until(flag + 1, Cmp::eq, epoch, 1000000, Scope::gpu);
  if_(late, [&] { store(flag + 2, old, {.order = Order::release, .scope = Scope::gpu}); });
  fence(Order::acq_rel, Scope::block);
  auto seen = load(flag + 3, {.cache = Cache::volatile_, .order = Order::acquire, .scope = Scope::system});
  device_assert(seen != 0xffffffffu, "flag \"3\" set");
  EXPECT_EQ(to_text(b.finish()), R"(kernel sync num_warps=4 (%0: ptr<u32> "flag", %1: u32 "epoch") {
  %2 = constant 1 : u32
  %3 = atomic_rmw add order=release scope=system %0, %2 : u32
  %4 = constant 1 : i32
  %5 = addptr %0, %4 : ptr<u32>
  %6 = constant 1000000 : i64
  %7 = wait_until eq scope=gpu %5, %1, %6 : i1
  if %7 {
    %8 = constant 2 : i32
    %9 = addptr %0, %8 : ptr<u32>
    store order=release scope=gpu %9, %3
    yield
  } {
    yield
  }
  fence order=acq_rel scope=block
  %10 = constant 3 : i32
  %11 = addptr %0, %10 : ptr<u32>
  %12 = load cache=volatile order=acquire scope=system %11 : u32
  %13 = constant 4294967295 : u32
  %14 = cmp ne %12, %13 : i1
  assert "flag \"3\" set" %14
}
)");
}

TEST(Printer, ConstantsPrintExactlyInTheirDtype) {
  Builder b("constants");
  auto o = b.arg("o", ptr(f32)), d = b.arg("d", ptr(f64)), h = b.arg("h", ptr(bf16));
  store(o, 0.1f);
  store(d, 0.1);
  store(h, 0.1);
  store(o, -INFINITY);
  store(o, NAN);
  store(o, 1e-6f);
  std::string text = to_text(b.finish());
  EXPECT_THAT(text, HasSubstr("= constant 0.1 : f32\n"));
  EXPECT_THAT(text, HasSubstr("= constant 0.1 : f64\n"));
  EXPECT_THAT(text, HasSubstr("= constant 0.100097656 : bf16\n"));  // bf16's value nearest 0.1
  EXPECT_THAT(text, HasSubstr("= constant -inf : f32\n"));
  EXPECT_THAT(text, HasSubstr("= constant nan : f32\n"));
  EXPECT_THAT(text, HasSubstr("= constant 1e-06 : f32\n"));
}

TEST(Printer, LocationsOnlyWhenAsked) {
  Program program = axpy();
  std::string plain = to_text(program), located = to_text(program, true);
  EXPECT_THAT(plain, ::testing::Not(HasSubstr("loc(")));
  EXPECT_THAT(located, HasSubstr("= program_id axis=0 : i32 loc(printer_test.cpp:"));
  EXPECT_THAT(located, HasSubstr("store mask %23, %21, %11 loc(printer_test.cpp:"));
}

TEST(Printer, KernelOptionsOffTheirDefaultArePrinted) {
  Program program = axpy();
  EXPECT_THAT(to_text(program), ::testing::Not(HasSubstr("multi_row_reductions")));
  program.options.multi_row_reductions = false;
  EXPECT_THAT(to_text(program), HasSubstr("kernel axpy num_warps=2 multi_row_reductions=false ("));
}

TEST(Printer, RenumbersAfterPassesRemoveValues) {
  Builder b("dead");
  auto p = b.arg("p", ptr(i32));
  auto unused = arange(0, 16);
  auto kept = arange(0, 32);
  store(p + kept, kept);
  (void)unused;
  std::string text = to_text(eliminate_dead_code(b.finish()));
  EXPECT_THAT(text, HasSubstr("  %1 = arange start=0 end=32 : i32[32]\n"));
}

TEST(Printer, Mxfp4PlacementOnlyAwayFromItsDefault) {
  auto text = [](Mxfp4Placement placement) {
    Builder b("decode");
    auto words = b.arg("words", ptr(i32)), codes = b.arg("codes", ptr(u8)), out = b.arg("out", ptr(i32));
    auto js = arange(0, 8);
    store(out + arange(0, 32), mxfp4_word_pairs(load(words + js), load(codes + js), -32, placement));
    return to_text(b.finish());
  };
  EXPECT_THAT(text(Mxfp4Placement::kShifts), HasSubstr("mxfp4_word_pairs scale_bias=-32 placement=shifts"));
  EXPECT_THAT(text(Mxfp4Placement::kCopies), Not(HasSubstr("placement")));
  EXPECT_THAT(text(Mxfp4Placement::kCopies), HasSubstr("mxfp4_word_pairs scale_bias=-32 "));
}

TEST(Printer, OptionsAwayFromTheirDefaults) {
  Builder b("staged", {.num_warps = 8, .num_stages = 3, .mma = MmaKind::kWarpgroup});
  auto p = b.arg("p", ptr(i32));
  store(p + arange(0, 16), 0);
  EXPECT_THAT(to_text(b.finish()), HasSubstr("kernel staged num_warps=8 num_stages=3 mma=warpgroup ("));
}

}  // namespace
}  // namespace monotile::dsl
