// The interpreter's launch contract and its run-time errors, on hand-assembled IR: argument checks,
// out-of-bounds and assert messages, wait timeouts, control flow, threads and peer exchange.
#include "dsl/interp/interpreter.h"

#include <sstream>
#include <vector>

#include "dsl/dsl.h"
#include "dsl/interp/hand_program_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::dsl::interp {
namespace {

using ::testing::HasSubstr;
using testing::HandProgram;

constexpr ElementType kF32{ScalarType::kF32, false};
constexpr ElementType kI32{ScalarType::kI32, false};
constexpr ElementType kI64{ScalarType::kI64, false};
constexpr ElementType kI1{ScalarType::kI1, false};
constexpr ElementType kPtrF32{ScalarType::kF32, true};
constexpr ElementType kPtrI32{ScalarType::kI32, true};

Type tile(ElementType element, std::vector<int64_t> shape) { return Type{element, std::move(shape)}; }

// out[i] = x[i] + y[i] for i = pid * block + arange(block), masked by i < n when `masked`.
Program vector_add(int64_t block, bool masked) {
  HandProgram b("vector_add");
  const ValueId x = b.param("x", kPtrF32), y = b.param("y", kPtrF32), out = b.param("out", kPtrF32);
  const ValueId n = b.param("n", kI32);
  const ValueId pid = b.op(OpCode::kProgramId, {}, {tile(kI32, {})});
  const ValueId size = b.constant_int(ScalarType::kI32, block);
  const ValueId start = b.op(OpCode::kMul, {pid, size}, {tile(kI32, {})});
  Attrs range;
  range.ints = {0, block};
  const ValueId lanes = b.op(OpCode::kArange, {}, {tile(kI32, {block})}, range);
  const ValueId start_b = b.op(OpCode::kBroadcast, {start}, {tile(kI32, {block})});
  const ValueId offsets = b.op(OpCode::kAdd, {start_b, lanes}, {tile(kI32, {block})});
  const ValueId n_b = b.op(OpCode::kBroadcast, {n}, {tile(kI32, {block})});
  Attrs lt;
  lt.cmp = CmpPredicate::kLt;
  const ValueId mask = b.op(OpCode::kCmp, {offsets, n_b}, {tile(kI1, {block})}, lt);
  Attrs access;
  access.has_mask = masked;
  std::vector<ValueId> ptrs;
  for (ValueId base : {x, y, out}) {
    const ValueId base_b = b.op(OpCode::kBroadcast, {base}, {tile(kPtrF32, {block})});
    ptrs.push_back(b.op(OpCode::kAddPtr, {base_b, offsets}, {tile(kPtrF32, {block})}));
  }
  std::vector<ValueId> load_x{ptrs[0]}, load_y{ptrs[1]};
  if (masked) load_x.push_back(mask), load_y.push_back(mask);
  const ValueId xv = b.op(OpCode::kLoad, load_x, {tile(kF32, {block})}, access, 42);
  const ValueId yv = b.op(OpCode::kLoad, load_y, {tile(kF32, {block})}, access, 43);
  const ValueId sum = b.op(OpCode::kAdd, {xv, yv}, {tile(kF32, {block})});
  std::vector<ValueId> store{ptrs[2], sum};
  if (masked) store.push_back(mask);
  b.op(OpCode::kStore, store, {}, access, 45);
  return b.finish();
}

struct VectorAddBuffers {
  explicit VectorAddBuffers(size_t n) : x(n), y(n), out(n, -1.0f) {
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i), y[i] = 0.5f * static_cast<float>(i);
  }
  InterpretOptions options() const {
    InterpretOptions options;
    options.allocations = {{x.data(), x.size() * 4, "x"}, {y.data(), y.size() * 4, "y"}, {out.data(), out.size() * 4, "out"}};
    return options;
  }
  std::vector<ArgValue> args(int32_t n) { return {ArgValue::of(x.data()), ArgValue::of(y.data()), ArgValue::of(out.data()), ArgValue::of(n)}; }
  std::vector<float> x, y, out;
};

TEST(Interpreter, RunsMaskedVectorAdd) {
  VectorAddBuffers buffers(100);
  const Program program = vector_add(32, /*masked=*/true);
  ASSERT_TRUE(interpret(program, {4, 1, 1}, buffers.args(100), buffers.options()).ok());
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(buffers.out[i], 1.5f * static_cast<float>(i)) << i;
}

TEST(Interpreter, OutOfBoundsLoadNamesLineLaneAndElement) {
  VectorAddBuffers buffers(100);
  const Program program = vector_add(32, /*masked=*/false);
  const absl::Status status = interpret(program, {4, 1, 1}, buffers.args(100), buffers.options());
  ASSERT_FALSE(status.ok());
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("load at hand_kernel.cpp:42 in \"vector_add\" instance (3, 0, 0)"));
  EXPECT_THAT(message, HasSubstr("lane [4] reads 4 bytes out of bounds"));
  EXPECT_THAT(message, HasSubstr("element 100 of \"x\", which holds 100 elements"));
  EXPECT_THAT(message, HasSubstr("hint: mask the lanes past the end"));
  // Instances 0..2 ran before the failing one and stored their results.
  EXPECT_EQ(buffers.out[95], 1.5f * 95);
}

// prefetch(x + arange(0, 16)) over a 12-element x, masked by lane < 12 when `masked`.
Program prefetch_past_the_end(bool masked, int* line) {
  Builder b("warm");
  auto x = b.arg("x", ptr(f32));
  auto lanes = arange(0, 16);
  if (masked) {
    *line = __LINE__ + 1;
    prefetch(x + lanes, lanes < 12);
  } else {
    *line = __LINE__ + 1;
    prefetch(x + lanes);
  }
  return b.finish();
}

absl::Status run_prefetch(bool masked, int* line) {
  std::vector<float> x(12);
  InterpretOptions options;
  options.allocations = {{x.data(), x.size() * 4, "x"}};
  return interpret(prefetch_past_the_end(masked, line), {1, 1, 1},
                   std::vector{ArgValue::of(x.data())}, options);
}

TEST(Interpreter, OutOfBoundsPrefetchIsRefusedLikeALoad) {
  int line = 0;
  const absl::Status status = run_prefetch(/*masked=*/false, &line);
  ASSERT_FALSE(status.ok());
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("prefetch at interpreter_test.cpp:" + std::to_string(line) +
                                 " in \"warm\" instance (0, 0, 0)"));
  EXPECT_THAT(message, HasSubstr("lane [12] prefetches 4 bytes out of bounds"));
  EXPECT_THAT(message, HasSubstr("element 12 of \"x\", which holds 12 elements"));
  EXPECT_THAT(message, HasSubstr("hint: mask the lanes past the end"));
}

TEST(Interpreter, MaskedPrefetchPastTheEndIsAccepted) {
  int line = 0;
  EXPECT_TRUE(run_prefetch(/*masked=*/true, &line).ok());
}

TEST(Interpreter, OutOfBoundsWithoutAllocationsSaysSo) {
  VectorAddBuffers buffers(32);
  const Program program = vector_add(32, true);
  const absl::Status status = interpret(program, {1, 1, 1}, buffers.args(32), InterpretOptions{});
  EXPECT_THAT(std::string(status.message()), HasSubstr("no allocations were given to the interpreter"));
}

TEST(Interpreter, WrongArgumentCountListsTheSignature) {
  VectorAddBuffers buffers(32);
  std::vector<ArgValue> args = buffers.args(32);
  args.pop_back();
  const absl::Status status = interpret(vector_add(32, true), {1, 1, 1}, args, buffers.options());
  EXPECT_EQ(std::string(status.message()),
            "kernel \"vector_add\" takes 4 arguments (x: ptr<f32>, y: ptr<f32>, out: ptr<f32>, n: i32), got 3");
}

TEST(Interpreter, WrongArgumentTypeNamesTheParameter) {
  VectorAddBuffers buffers(32);
  std::vector<ArgValue> args = buffers.args(32);
  args[3] = ArgValue::of(int64_t{32});
  absl::Status status = interpret(vector_add(32, true), {1, 1, 1}, args, buffers.options());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("argument 3 \"n\" of kernel \"vector_add\": expected i32, got i64"));
  args = buffers.args(32);
  int32_t ints[4] = {};
  args[0] = ArgValue::of(ints);
  status = interpret(vector_add(32, true), {1, 1, 1}, args, buffers.options());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("argument 0 \"x\" of kernel \"vector_add\": expected ptr<f32>, got ptr<i32>"));
}

TEST(Interpreter, ArgumentValueMustFitItsType) {
  HandProgram b("narrow");
  b.param("v", {ScalarType::kI8, false});
  const absl::Status status =
      interpret(b.finish(), {1, 1, 1}, std::vector{ArgValue::integer(ScalarType::kI8, 300)}, {});
  EXPECT_THAT(std::string(status.message()), HasSubstr("argument 0 \"v\" of kernel \"narrow\": value 300 does not fit i8"));
}

TEST(Interpreter, RawParameterStorageBecomesTypedArguments) {
  VectorAddBuffers buffers(64);
  const Program program = vector_add(32, true);
  const std::vector<size_t> sizes = parameter_sizes(program);
  EXPECT_EQ(sizes, (std::vector<size_t>{8, 8, 8, 4}));
  float* pointers[3] = {buffers.x.data(), buffers.y.data(), buffers.out.data()};
  int32_t n = 64;
  const void* raw[4] = {&pointers[0], &pointers[1], &pointers[2], &n};
  const std::vector<ArgValue> args = arguments_from_raw(program, raw);
  ASSERT_TRUE(interpret(program, {2, 1, 1}, args, buffers.options()).ok());
  EXPECT_EQ(buffers.out[63], 1.5f * 63);
}

TEST(Interpreter, MisalignedAccessIsAnError) {
  HandProgram b("misaligned");
  const ValueId bytes = b.param("bytes", {ScalarType::kU8, true});
  const ValueId one = b.constant_int(ScalarType::kI32, 1);
  const ValueId odd = b.op(OpCode::kAddPtr, {bytes, one}, {tile({ScalarType::kU8, true}, {})});
  const ValueId as_int = b.op(OpCode::kBitcast, {odd}, {tile(kI64, {})});
  const ValueId back = b.op(OpCode::kCast, {as_int}, {tile(kPtrI32, {})});
  b.op(OpCode::kLoad, {back}, {tile(kI32, {})}, {}, 31);
  std::vector<uint32_t> words(4);
  InterpretOptions options;
  options.allocations = {{words.data(), 16, "words"}};
  const absl::Status status =
      interpret(b.finish(), {1, 1, 1}, std::vector{ArgValue::pointer(words.data(), ScalarType::kU8)}, options);
  EXPECT_THAT(std::string(status.message()), HasSubstr("load at hand_kernel.cpp:31 in \"misaligned\" instance (0, 0, 0): "
                                                       "lane [] reads 4 bytes at misaligned address 0x"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("(element 0 of \"words\")"));
}

TEST(Interpreter, ZeroLoopStepIsAnError) {
  HandProgram b("stuck");
  const ValueId zero = b.constant_int(ScalarType::kI32, 0), ten = b.constant_int(ScalarType::kI32, 10);
  b.op(OpCode::kFor, {zero, ten, zero}, {}, {}, 21);
  b.begin_region({tile(kI32, {})});
  b.end_region({});
  const absl::Status status = interpret(b.finish(), {1, 1, 1}, {}, {});
  EXPECT_EQ(std::string(status.message()),
            "for at hand_kernel.cpp:21 in \"stuck\" instance (0, 0, 0): step is zero; hint: a loop must advance");
}

TEST(Interpreter, BitwiseAtomicOnFloatsIsAnError) {
  HandProgram b("float_or");
  const ValueId p = b.param("p", kPtrF32);
  const ValueId one = b.constant_float(ScalarType::kF32, 1.0);
  Attrs attrs;
  attrs.atomic = AtomicKind::kOr;
  b.op(OpCode::kAtomicRmw, {p, one}, {tile(kF32, {})}, attrs, 8);
  float value = 0;
  InterpretOptions options;
  options.allocations = {{&value, 4, "p"}};
  const absl::Status status = interpret(b.finish(), {1, 1, 1}, std::vector{ArgValue::of(&value)}, options);
  EXPECT_THAT(std::string(status.message()), HasSubstr("atomic_rmw at hand_kernel.cpp:8 in \"float_or\" instance "
                                                       "(0, 0, 0): atomic or takes integer memory, got ptr<f32>"));
}

TEST(Interpreter, ConcurrentLaunchNeedsAProgram) {
  const std::vector<Launch> launches(1);
  EXPECT_EQ(std::string(interpret_concurrently(launches, {}).message()), "a launch has no program");
}

TEST(Interpreter, EmptyGridIsRefused) {
  HandProgram b("empty");
  const absl::Status status = interpret(b.finish(), {0, 1, 1}, {}, {});
  EXPECT_THAT(std::string(status.message()), HasSubstr("grid (0, 1, 1) has an empty dimension"));
}

TEST(Interpreter, FailedAssertGivesMessageLineAndLane) {
  HandProgram b("checked");
  Attrs range;
  range.ints = {0, 8};
  const ValueId lanes = b.op(OpCode::kArange, {}, {tile(kI32, {8})}, range);
  const ValueId five = b.constant_int(ScalarType::kI32, 5, {8});
  Attrs lt;
  lt.cmp = CmpPredicate::kLt;
  const ValueId ok = b.op(OpCode::kCmp, {lanes, five}, {tile(kI1, {8})}, lt);
  Attrs text;
  text.text = "lane index must stay below 5";
  b.op(OpCode::kAssert, {ok}, {}, text, 77);
  const absl::Status status = interpret(b.finish(), {2, 1, 1}, {}, {});
  EXPECT_EQ(std::string(status.message()),
            "device_assert failed at hand_kernel.cpp:77 in \"checked\" instance (0, 0, 0) at lane [5]: lane index "
            "must stay below 5");
}

// flag: wait until *flag == 1 with `timeout_ns`; stores the timed-out bit to out[pid].
Program waiter(int64_t timeout_ns) {
  HandProgram b("waiter");
  const ValueId flag = b.param("flag", kPtrI32), out = b.param("out", kPtrI32);
  const ValueId one = b.constant_int(ScalarType::kI32, 1);
  const ValueId timeout = b.constant_int(ScalarType::kI64, timeout_ns);
  Attrs eq;
  eq.cmp = CmpPredicate::kEq;
  const ValueId timed_out = b.op(OpCode::kWaitUntil, {flag, one, timeout}, {tile(kI1, {})}, eq, 12);
  const ValueId as_int = b.op(OpCode::kCast, {timed_out}, {tile(kI32, {})});
  const ValueId pid = b.op(OpCode::kProgramId, {}, {tile(kI32, {})});
  const ValueId slot = b.op(OpCode::kAddPtr, {out, pid}, {tile(kPtrI32, {})});
  b.op(OpCode::kStore, {slot, as_int}, {});
  return b.finish();
}

TEST(Interpreter, WaitUntilTimesOutAndReportsTheWord) {
  int32_t flag = 0;
  int32_t out[2] = {-1, -1};
  std::vector<std::string> timeouts;
  InterpretOptions options;
  options.allocations = {{&flag, 4, "flag"}, {out, 8, "out"}};
  options.wait_timeouts = &timeouts;
  const std::vector<ArgValue> args{ArgValue::of(&flag), ArgValue::of(&out[0])};
  ASSERT_TRUE(interpret(waiter(2'000'000), {2, 1, 1}, args, options).ok());
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 1);
  ASSERT_EQ(timeouts.size(), 2u);
  EXPECT_THAT(timeouts[0], HasSubstr("wait_until at hand_kernel.cpp:12 in \"waiter\" instance ("));
  EXPECT_THAT(timeouts[0], HasSubstr("timed out after 2000000 ns: element 0 of \"flag\" is 0, waiting for eq 1"));
  flag = 1;
  timeouts.clear();
  ASSERT_TRUE(interpret(waiter(2'000'000), {2, 1, 1}, args, options).ok());
  EXPECT_EQ(out[0], 0);
  EXPECT_TRUE(timeouts.empty());
}

// Instance i > 0 waits for instance i - 1's flag, then sets its own: only works on threads.
Program chain() {
  HandProgram b("chain");
  const ValueId flags = b.param("flags", kPtrI32);
  const ValueId pid = b.op(OpCode::kProgramId, {}, {tile(kI32, {})});
  const ValueId one = b.constant_int(ScalarType::kI32, 1);
  const ValueId prev = b.op(OpCode::kSub, {pid, one}, {tile(kI32, {})});
  const ValueId zero = b.constant_int(ScalarType::kI32, 0);
  const ValueId clamped = b.op(OpCode::kMax, {prev, zero}, {tile(kI32, {})});
  const ValueId prev_flag = b.op(OpCode::kAddPtr, {flags, clamped}, {tile(kPtrI32, {})});
  Attrs gt;
  gt.cmp = CmpPredicate::kGt;
  const ValueId has_prev = b.op(OpCode::kCmp, {pid, zero}, {tile(kI1, {})}, gt);
  b.op(OpCode::kIf, {has_prev}, {});
  b.begin_region({});
  const ValueId timeout = b.constant_int(ScalarType::kI64, 5'000'000'000);
  Attrs eq;
  eq.cmp = CmpPredicate::kEq;
  eq.scope = MemScope::kGpu;
  b.op(OpCode::kWaitUntil, {prev_flag, one, timeout}, {tile(kI1, {})}, eq);
  b.end_region({});
  b.begin_region({});
  b.end_region({});
  const ValueId own = b.op(OpCode::kAddPtr, {flags, pid}, {tile(kPtrI32, {})});
  Attrs release;
  release.order = MemOrder::kRelease;
  b.op(OpCode::kStore, {own, one}, {}, release);
  return b.finish();
}

TEST(Interpreter, InstancesWaitingOnEachOtherRunOnThreads) {
  std::vector<int32_t> flags(16, 0);
  InterpretOptions options;
  options.allocations = {{flags.data(), flags.size() * 4, "flags"}};
  // Reverse dependency order would deadlock in sequence; kAuto sees the wait and uses threads.
  ASSERT_TRUE(interpret(chain(), {16, 1, 1}, std::vector{ArgValue::of(flags.data())}, options).ok());
  for (int32_t flag : flags) EXPECT_EQ(flag, 1);
}

TEST(Interpreter, ThreadLimitIsExplained) {
  std::vector<int32_t> flags(16, 0);
  InterpretOptions options;
  options.max_threads = 8;
  const absl::Status status = interpret(chain(), {16, 1, 1}, std::vector{ArgValue::of(flags.data())}, options);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("16 program instances would run on as many threads, more than InterpretOptions::max_threads (8)"));
}

// Rank r writes its rank + 10 into the peer's mailbox, release; then waits for its own mailbox.
Program exchange() {
  HandProgram b("exchange");
  const ValueId peer_box = b.param("peer_box", kPtrI32), own_box = b.param("own_box", kPtrI32);
  const ValueId rank = b.param("rank", kI32), out = b.param("out", kPtrI32);
  const ValueId ten = b.constant_int(ScalarType::kI32, 10);
  const ValueId value = b.op(OpCode::kAdd, {rank, ten}, {tile(kI32, {})});
  Attrs release;
  release.order = MemOrder::kRelease;
  release.scope = MemScope::kSystem;
  b.op(OpCode::kStore, {peer_box, value}, {}, release);
  const ValueId zero = b.constant_int(ScalarType::kI32, 0);
  const ValueId timeout = b.constant_int(ScalarType::kI64, 5'000'000'000);
  Attrs ne;
  ne.cmp = CmpPredicate::kNe;
  ne.scope = MemScope::kSystem;
  b.op(OpCode::kWaitUntil, {own_box, zero, timeout}, {tile(kI1, {})}, ne);
  Attrs acquire;
  acquire.order = MemOrder::kAcquire;
  acquire.scope = MemScope::kSystem;
  const ValueId got = b.op(OpCode::kLoad, {own_box}, {tile(kI32, {})}, acquire);
  b.op(OpCode::kStore, {out, got}, {});
  return b.finish();
}

TEST(Interpreter, TwoRanksExchangeThroughPeerPointers) {
  int32_t box[2] = {0, 0}, out[2] = {-1, -1};
  const Program program = exchange();
  std::vector<Launch> launches;
  for (int rank = 0; rank < 2; ++rank) {
    launches.push_back(Launch{&program, {1, 1, 1},
                              {ArgValue::of(&box[1 - rank]), ArgValue::of(&box[rank]), ArgValue::of(int32_t{rank}),
                               ArgValue::of(&out[rank])}});
  }
  InterpretOptions options;
  options.allocations = {{&box[0], 4, "rank0.box"}, {&box[1], 4, "rank1.box"}, {out, 8, "out"}};
  ASSERT_TRUE(interpret_concurrently(launches, options).ok());
  EXPECT_EQ(out[0], 11);
  EXPECT_EQ(out[1], 10);
}

TEST(Interpreter, ForLoopCarriesValues) {
  // acc = sum over i in [2, 11) step 3 of i  (2 + 5 + 8 = 15), stored to out.
  HandProgram b("loop");
  const ValueId out = b.param("out", kPtrI32);
  const ValueId lo = b.constant_int(ScalarType::kI32, 2), hi = b.constant_int(ScalarType::kI32, 11);
  const ValueId step = b.constant_int(ScalarType::kI32, 3), init = b.constant_int(ScalarType::kI32, 0);
  const ValueId result = b.op(OpCode::kFor, {lo, hi, step, init}, {tile(kI32, {})});
  const std::vector<ValueId> args = b.begin_region({tile(kI32, {}), tile(kI32, {})});
  const ValueId next = b.op(OpCode::kAdd, {args[1], args[0]}, {tile(kI32, {})});
  b.end_region({next});
  b.op(OpCode::kStore, {out, result}, {});
  int32_t value = 0;
  InterpretOptions options;
  options.allocations = {{&value, 4, "out"}};
  ASSERT_TRUE(interpret(b.finish(), {1, 1, 1}, std::vector{ArgValue::of(&value)}, options).ok());
  EXPECT_EQ(value, 15);
}

TEST(Interpreter, WhileLoopRunsUntilItsCondition) {
  // x = 1; while (x < 100) x = x * 3;  -> 243
  HandProgram b("while");
  const ValueId out = b.param("out", kPtrI32);
  const ValueId init = b.constant_int(ScalarType::kI32, 1);
  const ValueId result = b.op(OpCode::kWhile, {init}, {tile(kI32, {})});
  std::vector<ValueId> args = b.begin_region({tile(kI32, {})});
  const ValueId limit = b.constant_int(ScalarType::kI32, 100);
  Attrs lt;
  lt.cmp = CmpPredicate::kLt;
  const ValueId going = b.op(OpCode::kCmp, {args[0], limit}, {tile(kI1, {})}, lt);
  b.end_region({going});
  args = b.begin_region({tile(kI32, {})});
  const ValueId three = b.constant_int(ScalarType::kI32, 3);
  const ValueId next = b.op(OpCode::kMul, {args[0], three}, {tile(kI32, {})});
  b.end_region({next});
  b.op(OpCode::kStore, {out, result}, {});
  int32_t value = 0;
  InterpretOptions options;
  options.allocations = {{&value, 4, "out"}};
  ASSERT_TRUE(interpret(b.finish(), {1, 1, 1}, std::vector{ArgValue::of(&value)}, options).ok());
  EXPECT_EQ(value, 243);
}

TEST(Interpreter, PrintWritesOneLinePerInstance) {
  HandProgram b("show");
  const ValueId pid = b.op(OpCode::kProgramId, {}, {tile(kI32, {})});
  const ValueId half = b.constant_float(ScalarType::kF32, 0.5, {2});
  Attrs text;
  text.text = "state";
  b.op(OpCode::kPrint, {pid, half}, {}, text, 9);
  std::ostringstream stream;
  InterpretOptions options;
  options.print_stream = &stream;
  ASSERT_TRUE(interpret(b.finish(), {2, 1, 1}, {}, options).ok());
  EXPECT_EQ(stream.str(),
            "state (hand_kernel.cpp:9, instance 0, 0, 0): i32 0; f32[2] [0.5, 0.5]\n"
            "state (hand_kernel.cpp:9, instance 1, 0, 0): i32 1; f32[2] [0.5, 0.5]\n");
}

TEST(Interpreter, FailureInOneThreadCancelsWaitingInstances) {
  // Instance 0 fails an assert; instance 1 waits (10 s) for a flag nobody sets: it must stop early.
  HandProgram b("cancel");
  const ValueId flag = b.param("flag", kPtrI32);
  const ValueId pid = b.op(OpCode::kProgramId, {}, {tile(kI32, {})});
  const ValueId zero = b.constant_int(ScalarType::kI32, 0);
  Attrs ne;
  ne.cmp = CmpPredicate::kNe;
  const ValueId nonzero = b.op(OpCode::kCmp, {pid, zero}, {tile(kI1, {})}, ne);
  Attrs text;
  text.text = "instance 0 fails";
  b.op(OpCode::kAssert, {nonzero}, {}, text, 5);
  const ValueId one = b.constant_int(ScalarType::kI32, 1);
  const ValueId timeout = b.constant_int(ScalarType::kI64, 10'000'000'000);
  Attrs eq;
  eq.cmp = CmpPredicate::kEq;
  b.op(OpCode::kWaitUntil, {flag, one, timeout}, {tile(kI1, {})}, eq);
  int32_t value = 0;
  InterpretOptions options;
  options.allocations = {{&value, 4, "flag"}};
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = interpret(b.finish(), {2, 1, 1}, std::vector{ArgValue::of(&value)}, options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_THAT(std::string(status.message()), HasSubstr("device_assert failed at hand_kernel.cpp:5"));
}

}  // namespace
}  // namespace monotile::dsl::interp
