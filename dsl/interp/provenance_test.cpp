// Every access is checked against the buffer its pointer was derived from, not against whichever
// allocation the address happens to fall in: two buffers side by side, and reads, writes, atomics
// and waits that run off one into the other.
#include <string>
#include <vector>

#include "dsl/dsl.h"
#include "dsl/interp/hand_program_test_util.h"
#include "dsl/interp/interpreter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::dsl::interp {
namespace {

using ::testing::Each;
using ::testing::Eq;
using testing::HandProgram;
using ::testing::HasSubstr;

// Two 16-float buffers in one array: "a" ends exactly where "b" starts.
struct Neighbours {
  std::vector<float> storage = std::vector<float>(32, 0.0f);
  float* a() { return storage.data(); }
  float* b() { return storage.data() + 16; }
  InterpretOptions options(std::string a_name = "a") {
    InterpretOptions options;
    options.allocations = {{a(), 64, std::move(a_name)}, {b(), 64, "b"}};
    return options;
  }
  std::vector<ArgValue> args() { return {ArgValue::of(a()), ArgValue::of(b())}; }
};

std::string run(const Program& program, Neighbours& buffers, std::string a_name = "a") {
  const absl::Status status =
      interpret(program, {1, 1, 1}, buffers.args(), buffers.options(std::move(a_name)));
  return status.ok() ? "ok" : std::string(status.message());
}

// Reads a[1..16]: lane 15 reads the first element of b.
Program read_one_past_the_end(int* line) {
  Builder builder("shifted");
  auto a = builder.arg("a", ptr(f32));
  auto b = builder.arg("b", ptr(f32));
  auto offs = arange(0, 16) + 1;
  *line = __LINE__ + 1;
  auto v = load(a + offs);
  store(b + arange(0, 16), v);
  return builder.finish();
}

TEST(Provenance, ReadPastTheEndIntoTheNextBufferIsRefusedNamingTheFirst) {
  Neighbours buffers;
  int line = 0;
  const std::string message = run(read_one_past_the_end(&line), buffers);
  EXPECT_THAT(
      message,
      HasSubstr("load at provenance_test.cpp:" + std::to_string(line) +
                " in \"shifted\" instance (0, 0, 0): lane [15] reads 4 bytes out of bounds: "
                "address 0x"));
  EXPECT_THAT(
      message,
      HasSubstr(" is element 16 of \"a\", which holds 16 elements of 4 bytes (64 bytes); the "
                "access at byte offset 64 ends 4 bytes past the end (the address is element 0 of "
                "\"b\", a different allocation); hint: mask the lanes past the end, e.g. "
                "mask = offs < n"));
  EXPECT_THAT(buffers.storage, Each(Eq(0.0f)));
}

TEST(Provenance, ErrorNamesTheArgumentWhenTheAllocationIsNamedOtherwise) {
  Neighbours buffers;
  int line = 0;
  EXPECT_THAT(
      run(read_one_past_the_end(&line), buffers, "workspace"),
      HasSubstr(" is element 16 of \"workspace\" (argument \"a\"), which holds 16 elements"));
}

TEST(Provenance, NegativeOffsetIsBeforeTheStart) {
  Builder builder("back");
  auto a = builder.arg("a", ptr(f32));
  auto b = builder.arg("b", ptr(f32));
  const int line = __LINE__ + 1;
  auto v = load(b + (arange(0, 16) - 1));
  store(a + arange(0, 16), v);
  Neighbours buffers;
  const std::string message = run(builder.finish(), buffers);
  EXPECT_THAT(
      message,
      HasSubstr(
          "load at provenance_test.cpp:" + std::to_string(line) +
          " in \"back\" instance (0, 0, 0): lane [0] reads 4 bytes out of bounds: address 0x"));
  EXPECT_THAT(
      message,
      HasSubstr(" is element -1 of \"b\", which holds 16 elements of 4 bytes (64 bytes); the "
                "access at byte offset -4 starts 4 bytes before the start (the address is element "
                "15 of \"a\", a different allocation); hint: mask the lanes before the start, e.g. "
                "mask = offs >= 0"));
}

TEST(Provenance, MaskedLanesPastTheEndAreFine) {
  Builder builder("masked");
  auto a = builder.arg("a", ptr(f32));
  auto b = builder.arg("b", ptr(f32));
  auto offs = arange(0, 32);
  auto v = load(a + offs, offs < 16, 0.0f);
  store(b + offs, v + 1.0f, offs < 16);
  Neighbours buffers;
  EXPECT_EQ(run(builder.finish(), buffers), "ok");
  EXPECT_EQ(buffers.b()[15], 1.0f);
}

TEST(Provenance, StorePastTheEndIsRefusedAndWritesNothing) {
  Builder builder("spill");
  auto a = builder.arg("a", ptr(f32));
  builder.arg("b", ptr(f32));
  const int line = __LINE__ + 1;
  store(a + (arange(0, 16) + 1), 7.0f);
  Neighbours buffers;
  const std::string message = run(builder.finish(), buffers);
  EXPECT_THAT(
      message,
      HasSubstr("store at provenance_test.cpp:" + std::to_string(line) +
                " in \"spill\" instance (0, 0, 0): lane [15] writes 4 bytes out of bounds: "));
  EXPECT_THAT(message, HasSubstr(" is element 16 of \"a\", which holds 16 elements"));
  EXPECT_THAT(buffers.storage, Each(Eq(0.0f)));
}

TEST(Provenance, AtomicPastTheEndIsRefusedAndUpdatesNothing) {
  Builder builder("tally");
  auto a = builder.arg("a", ptr(f32));
  builder.arg("b", ptr(f32));
  const int line = __LINE__ + 1;
  atomic_add(a + (arange(0, 16) + 1), 1.0f, MemScope::kGpu, MemOrder::kRelaxed);
  Neighbours buffers;
  const std::string message = run(builder.finish(), buffers);
  EXPECT_THAT(
      message,
      HasSubstr("atomic_rmw at provenance_test.cpp:" + std::to_string(line) +
                " in \"tally\" instance (0, 0, 0): lane [15] updates 4 bytes out of bounds: "));
  EXPECT_THAT(message, HasSubstr(" is element 16 of \"a\", which holds 16 elements"));
  EXPECT_THAT(buffers.storage, Each(Eq(0.0f)));
}

TEST(Provenance, WaitOnAWordPastTheEndIsRefused) {
  Builder builder("waits");
  auto flags = builder.arg("flags", ptr(i32));
  builder.arg("out", ptr(i32));
  const int line = __LINE__ + 1;
  wait_until(flags + 1, CmpPredicate::kEq, 1, int64_t{1000});
  int32_t words[2] = {0, 1};
  InterpretOptions options;
  options.allocations = {{&words[0], 4, "flags"}, {&words[1], 4, "out"}};
  const absl::Status status =
      interpret(builder.finish(), {1, 1, 1},
                std::vector{ArgValue::of(&words[0]), ArgValue::of(&words[1])}, options);
  const std::string message(status.message());
  EXPECT_THAT(
      message,
      HasSubstr("wait_until at provenance_test.cpp:" + std::to_string(line) +
                " in \"waits\" instance (0, 0, 0): lane [] waits on 4 bytes out of bounds: "));
  EXPECT_THAT(message,
              HasSubstr(" is element 1 of \"flags\", which holds 1 elements of 4 bytes (4 bytes)"));
}

TEST(Provenance, LoopCarriedPointerKeepsItsArgument) {
  Builder builder("walk");
  auto a = builder.arg("a", ptr(f32));
  builder.arg("b", ptr(f32));
  const int line = __LINE__ + 2;
  range(0, 3, 1, a, [&](Value, Value p) {
    store(p + arange(0, 8), 1.0f);
    return p + 8;
  });
  Neighbours buffers;
  const std::string message = run(builder.finish(), buffers);
  EXPECT_THAT(
      message,
      HasSubstr("store at provenance_test.cpp:" + std::to_string(line) +
                " in \"walk\" instance (0, 0, 0): lane [0] writes 4 bytes out of bounds: "));
  EXPECT_THAT(message, HasSubstr(" is element 16 of \"a\", which holds 16 elements"));
  EXPECT_EQ(buffers.a()[15], 1.0f);
  EXPECT_EQ(buffers.b()[0], 0.0f);
}

// select(lane < 8, b + lane, a + lane + 8): lanes 8..15 take a's pointers, which run into b.
TEST(Provenance, SelectKeepsEachLanesArgument) {
  constexpr ElementType kPtrF32{ScalarType::kF32, true};
  constexpr ElementType kI32{ScalarType::kI32, false};
  const auto tile = [](ElementType element) { return Type{element, {16}}; };
  HandProgram p("choose");
  const ValueId a = p.param("a", kPtrF32), b = p.param("b", kPtrF32);
  Attrs range;
  range.ints = {0, 16};
  const ValueId lanes = p.op(OpCode::kArange, {}, {tile(kI32)}, range);
  const ValueId eight = p.constant_int(ScalarType::kI32, 8, {16});
  const ValueId shifted = p.op(OpCode::kAdd, {lanes, eight}, {tile(kI32)});
  const ValueId b_lanes = p.op(OpCode::kBroadcast, {b}, {tile(kPtrF32)});
  const ValueId from_b = p.op(OpCode::kAddPtr, {b_lanes, lanes}, {tile(kPtrF32)});
  const ValueId a_lanes = p.op(OpCode::kBroadcast, {a}, {tile(kPtrF32)});
  const ValueId from_a = p.op(OpCode::kAddPtr, {a_lanes, shifted}, {tile(kPtrF32)});
  Attrs lt;
  lt.cmp = CmpPredicate::kLt;
  const ValueId low = p.op(OpCode::kCmp, {lanes, eight}, {tile({ScalarType::kI1, false})}, lt);
  const ValueId chosen = p.op(OpCode::kSelect, {low, from_b, from_a}, {tile(kPtrF32)});
  p.op(OpCode::kLoad, {chosen}, {tile({ScalarType::kF32, false})}, {}, 9);
  Neighbours buffers;
  const std::string message = run(p.finish(), buffers);
  EXPECT_THAT(
      message,
      HasSubstr("load at hand_kernel.cpp:9 in \"choose\" instance (0, 0, 0): lane [8] reads 4 "
                "bytes out of bounds: "));
  EXPECT_THAT(message, HasSubstr(" is element 16 of \"a\", which holds 16 elements"));
}

// cat(b + lane, a + lane + 12) over 8 lanes each: lanes 12..15 of the result run off a into b.
TEST(Provenance, CatKeepsEachHalfsArgument) {
  constexpr ElementType kPtrF32{ScalarType::kF32, true};
  constexpr ElementType kI32{ScalarType::kI32, false};
  const auto tile = [](ElementType element, int64_t n) { return Type{element, {n}}; };
  HandProgram p("halves");
  const ValueId a = p.param("a", kPtrF32), b = p.param("b", kPtrF32);
  Attrs range;
  range.ints = {0, 8};
  const ValueId lanes = p.op(OpCode::kArange, {}, {tile(kI32, 8)}, range);
  const ValueId twelve = p.constant_int(ScalarType::kI32, 12, {8});
  const ValueId shifted = p.op(OpCode::kAdd, {lanes, twelve}, {tile(kI32, 8)});
  const ValueId b_lanes = p.op(OpCode::kBroadcast, {b}, {tile(kPtrF32, 8)});
  const ValueId from_b = p.op(OpCode::kAddPtr, {b_lanes, lanes}, {tile(kPtrF32, 8)});
  const ValueId a_lanes = p.op(OpCode::kBroadcast, {a}, {tile(kPtrF32, 8)});
  const ValueId from_a = p.op(OpCode::kAddPtr, {a_lanes, shifted}, {tile(kPtrF32, 8)});
  Attrs axis;
  axis.axis = 0;
  const ValueId both = p.op(OpCode::kCat, {from_b, from_a}, {tile(kPtrF32, 16)}, axis);
  p.op(OpCode::kLoad, {both}, {tile({ScalarType::kF32, false}, 16)}, {}, 5);
  Neighbours buffers;
  const std::string message = run(p.finish(), buffers);
  EXPECT_THAT(
      message,
      HasSubstr("load at hand_kernel.cpp:5 in \"halves\" instance (0, 0, 0): lane [12] reads "
                "4 bytes out of bounds: "));
  EXPECT_THAT(message, HasSubstr(" is element 16 of \"a\", which holds 16 elements"));
}

}  // namespace
}  // namespace monotile::dsl::interp
