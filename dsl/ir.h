// The tile IR: an SSA program of ops on tiles (static-shape arrays) and scalars (shape []), with
// nested single-block regions for loops, branches and combine functions.
//
// Semantics (the interpreter implements exactly these; every lowering must match them):
// - Shapes are static. Operands of elementwise ops have identical shapes and element types: the
//   builder inserts kBroadcast / kExpandDims / kCast explicitly, so no op broadcasts implicitly.
// - Masking: a load with a mask reads only lanes whose mask is true; other lanes take `other`
//   (zero when absent) and touch no memory. A masked store or atomic leaves unselected memory
//   untouched. An unmasked or selected lane outside its allocation is undefined on the GPU and an
//   error naming the op's source line in the interpreter.
// - Integers wrap (two's complement) on overflow; division and remainder truncate toward zero
//   (C semantics); division by zero is undefined. Shifts by >= the bit width are undefined.
//   kShr is arithmetic for signed types and logical for unsigned ones.
// - Floats follow IEEE-754 with round-to-nearest-even: f16/bf16 arithmetic is computed in f32 and
//   rounded once per op; kCast to f16/bf16 rounds to nearest even, float-to-int truncates toward
//   zero (out-of-range is undefined), int-to-float rounds to nearest even. NaN propagates through
//   arithmetic; kMin/kMax return NaN if either operand is NaN (like Triton's propagate_nan=all).
//   NaN payloads and signs are not preserved through f16/bf16 values: GPUs hold them widened to
//   f32, so a 16-bit NaN that is bitcast or stored may come back as the canonical 0x7fff.
//   Transcendentals are accurate to a few ulps (GPU fast paths may differ from the interpreter by
//   that much: compare with the dtype's tolerance, never bit-exactly).
// - Accumulation: kReduce sum over f16/bf16 accumulates in f32 and rounds the result once; kDot
//   takes f16/bf16 (or f32) operands and accumulates in f32 (the result is f32). Reduction order is
//   unspecified (tree on the GPU, sequential in the interpreter).
// - argmax/argmin/topk/sort break ties toward the lower index; NaN compares greater than every
//   number for these ops.
// - Memory order: plain loads and stores are unordered between program instances. Atomics, release
//   stores and acquire loads carry a scope (block, gpu, system) and an order (relaxed, acquire,
//   release, acq_rel) with C++ memory-model meaning at that scope; kFence orders the instance's
//   earlier accesses before its later ones at its scope. kBarrier synchronizes the threads of one
//   program instance and orders its shared accesses (in the interpreter, an instance is one thread,
//   so a barrier is a no-op). kWaitUntil spins on an acquire load until the comparison holds or
//   `timeout_ns` of the global timer pass; it yields true when it timed out. No wait is unbounded.
//   Its second form also yields the value its last load saw, and may take an abort word: read on
//   every iteration after the flag (a relaxed system-scope load), non-zero ends the wait at once;
//   the outcome says met, timed out or aborted (kWaitMet, kWaitTimedOut, kWaitAborted).
// - Prefetch: kPrefetch asks the memory system to bring the lines holding each selected lane's
//   address into L2. It changes no value and gives no ordering or visibility guarantee; a target
//   may drop it. Its addresses are checked like a load's (the interpreter refuses an unmasked or
//   selected lane outside its allocation), and passes keep every one (never merged or removed).
// - Dependent launch: kLaunchDependents lets the kernel launched after this one on its stream start
//   its programs before this kernel ends (once every program has asked or ended); kWaitGridDependency
//   waits until the kernel before this one has ended and its memory writes are visible. A program
//   that reads anything an earlier kernel wrote waits first; before the wait it may only read what no
//   kernel of the stream writes (weights) and prefetch. Both are NVIDIA sm_90+ instructions
//   (griddepcontrol); elsewhere, and in the interpreter (a launch starts after its predecessor has
//   ended), they do nothing. A kernel whose program waits is launched with programmatic stream
//   serialization (runtime/); one without the wait launches after its predecessor has ended.
// - Pointers: kAddPtr advances by whole elements of the pointee type. Pointer arguments may point
//   into another device's memory (peer access), with the same semantics.
#pragma once

#include <cstdint>
#include <optional>
#include "support/source_location.h"
#include <string>
#include <string_view>
#include <vector>

namespace monotile::dsl {

// Element types. kMxfp4 is one byte holding two e2m1 values (low nibble first); its scales are a
// separate u8 tile of ue8m0 exponents, one per 32 elements, consumed by kDequantMxfp4.
enum class ScalarType : uint8_t {
  kI1,
  kI8,
  kU8,
  kI16,
  kI32,
  kU32,
  kI64,
  kF16,
  kBf16,
  kF32,
  kF64,
  kMxfp4,
};

std::string_view scalar_type_name(ScalarType type);  // "i1", "bf16", "mxfp4", ...
std::optional<ScalarType> parse_scalar_type(std::string_view name);
int scalar_type_bytes(ScalarType type);  // storage size in memory (i1 is one byte, mxfp4 one byte)
int scalar_type_bits(ScalarType type);   // value bits (i1 -> 1, bf16 -> 16)
bool is_float(ScalarType type);          // f16, bf16, f32, f64
bool is_integer(ScalarType type);        // i1 and the i*/u* types
bool is_signed(ScalarType type);         // i8, i16, i32, i64

// The element of a tile: a scalar type, or a pointer to one (in global memory).
struct ElementType {
  ScalarType scalar = ScalarType::kF32;
  bool pointer = false;
  friend bool operator==(const ElementType&, const ElementType&) = default;
};

// A value's type: element type and static shape; an empty shape is a scalar.
struct Type {
  ElementType element;
  std::vector<int64_t> shape;
  bool is_scalar() const { return shape.empty(); }
  int64_t num_elements() const;
  std::string str() const;  // "bf16[16, 128]", "ptr<f32>[128]", "i32"
  friend bool operator==(const Type&, const Type&) = default;
};

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// Where in the user's C++ an op was built.
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;
  std::string function;
  static SourceLoc from(const SourceLocation& location);
  std::string str() const;  // "rms_norm.cpp:9" (basename of the file)
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

enum class OpCode : uint8_t {
  // Creation. kConstant splats attrs.int_value / attrs.float_value to the result type.
  kConstant,
  kArange,       // i32 [end - start]: attrs.ints = {start, end}
  kProgramId,    // i32 scalar: attrs.axis
  kNumPrograms,  // i32 scalar: attrs.axis
  // Shape. Results are new values; no op aliases memory.
  kBroadcast,   // operand's size-1 dims (or a scalar) stretched to the result shape
  kExpandDims,  // inserts a size-1 dim at attrs.axis
  kReshape,     // same element count, row-major order
  kTrans,       // permutes dims by attrs.ints
  kJoin,        // two same-typed tiles stacked along a new last dim of size 2
  kSplit,       // a tile whose last dim is 2 into two results without it
  kCat,         // two tiles concatenated along attrs.axis
  kUnpackBf16,  // i32 [..., n] -> bf16 [..., 2n]: word j's low half is element 2j, its high half 2j + 1
  // (packed words i32 [..., n], codes u8 [..., n]) -> i32 [..., 4n]: word 4j + i is the bf16 pair of
  // word j's nibbles i and i + 4 times 2^(code - 127) (dsl/dot.h mxfp4_word_pairs)
  kMxfp4WordPairs,
  // Elementwise, identical operand types unless noted.
  kAdd,
  kSub,
  kMul,
  kDiv,
  kRem,
  kMin,
  kMax,
  kAnd,
  kOr,
  kXor,
  kShl,
  kShr,
  kUmulhi,  // high 32/64 bits of the unsigned product
  kCmp,     // result i1; attrs.cmp
  kNeg,
  kNot,  // bitwise not (logical not on i1)
  kAbs,
  kExp,
  kExp2,
  kLog,
  kLog2,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kSoftplus,
  kErf,
  kFloor,
  kCeil,
  kFma,       // a * b + c, one rounding
  kSelect,    // where(cond i1, a, b)
  kCast,      // value conversion to the result's element type (rules in the header comment)
  kBitcast,   // same bit width, reinterpreted
  kMxfp4Pairs,  // (packed u8 or mxfp4, code u8) -> i32: the byte's two values times 2^(code - 127), a bf16 pair
  kAddPtr,    // pointer tile + integer tile (elements of the pointee)
  kDequantMxfp4,  // (packed mxfp4 [..., n/2], scales u8 [..., n/32]) -> float [..., n]
  // Memory.
  kLoad,         // (ptr, [mask], [other]); attrs.has_mask/has_other, cache, evict, order, scope
  kStore,        // (ptr, value, [mask]); attrs.has_mask, cache, evict, order, scope
  kPrefetch,     // (ptr, [mask]); attrs.has_mask; an L2 hint with no result (header comment)
  kAtomicRmw,    // (ptr, value, [mask]) -> old values; attrs.atomic, order, scope
  kAtomicCas,    // (ptr, expected, desired, [mask]) -> old values; attrs.order, scope
  kFence,        // attrs.order, scope
  kBarrier,      // block-wide barrier
  kGlobalTimer,  // i64 scalar: nanoseconds of a device-wide clock
  kWaitUntil,    // (ptr scalar, value scalar, timeout_ns i64 scalar, [abort ptr scalar]) -> i1 timed_out,
                 // or -> (i32 outcome kWait*, the last value of *ptr); attrs.cmp, scope. With the abort
                 // operand, always the two results.
  kLaunchDependents,    // no operands or results: the next kernel may start (header comment)
  kWaitGridDependency,  // no operands or results: the previous kernel has ended (header comment)
  // Across a tile.
  kReduce,     // attrs.axis, attrs.reduce; kCustom combines with regions[0] (a, b) -> (c)
  kArgReduce,  // i32 index of the max/min along attrs.axis; attrs.reduce is kMax or kMin
  kScan,       // inclusive scan along attrs.axis; attrs.reduce kSum or kCustom (regions[0]); attrs.reverse
  kSort,       // along attrs.axis; attrs.descending; results: values, i32 indices
  kTopK,       // attrs.k largest (attrs.descending) along the last axis; results: values, i32 indices
  kDot,        // (a [M, K], b [K, N], acc f32 [M, N]) -> f32 [M, N]
  // Control flow. Regions hold one block each; a block ends with kYield.
  kFor,    // (lo, hi, step, init...) -> carried...; regions[0] args: (index, carried...)
  kIf,     // (cond i1 scalar) -> results...; regions[0] then, regions[1] else
  kWhile,  // (init...) -> carried...; regions[0] cond (carried...) -> (i1); regions[1] body
  kYield,  // region terminator: the region's results
  // Debugging.
  kAssert,  // (cond i1 tile); attrs.text is the message; traps on the GPU, errors in the interpreter
  kPrint,   // (values...); attrs.text is the prefix
};

std::string_view op_name(OpCode code);  // "add", "load", "for", ...

enum class CmpPredicate : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
enum class ReduceKind : uint8_t { kSum, kMax, kMin, kXorSum, kCustom };
enum class AtomicKind : uint8_t { kAdd, kMax, kMin, kAnd, kOr, kXor, kXchg };
enum class MemScope : uint8_t { kBlock, kGpu, kSystem };

// kWaitUntil's outcome (its two-result form).
inline constexpr int32_t kWaitMet = 0;       // the comparison held
inline constexpr int32_t kWaitTimedOut = 1;  // timeout_ns passed first
inline constexpr int32_t kWaitAborted = 2;   // the abort word was non-zero first
// kPlain: an ordinary access with no ordering (the default for load/store).
enum class MemOrder : uint8_t { kPlain, kRelaxed, kAcquire, kRelease, kAcqRel };
enum class CacheHint : uint8_t { kDefault, kCacheAll, kCacheGlobal, kStreaming, kVolatile };
enum class EvictHint : uint8_t { kNormal, kFirst, kLast };

std::string_view cmp_name(CmpPredicate cmp);
std::string_view reduce_name(ReduceKind kind);
std::string_view atomic_name(AtomicKind kind);
std::string_view scope_name(MemScope scope);
std::string_view order_name(MemOrder order);

// Per-op attributes; each op reads only the fields its comment above names.
struct Attrs {
  int axis = 0;
  std::vector<int64_t> ints;  // arange bounds, trans permutation
  int64_t int_value = 0;      // integer/bool constants (bit pattern for unsigned)
  double float_value = 0;     // float constants
  int64_t k = 0;              // topk
  bool descending = false;
  bool reverse = false;
  bool has_mask = false;
  bool has_other = false;
  CmpPredicate cmp = CmpPredicate::kEq;
  ReduceKind reduce = ReduceKind::kSum;
  AtomicKind atomic = AtomicKind::kAdd;
  MemScope scope = MemScope::kGpu;
  MemOrder order = MemOrder::kPlain;
  CacheHint cache = CacheHint::kDefault;
  EvictHint evict = EvictHint::kNormal;
  int l2_fetch = 0;  // loads: AccessOptions::l2_fetch
  int stages = 0;    // loads: AccessOptions::stages
  std::string text;
  friend bool operator==(const Attrs&, const Attrs&) = default;
};

struct Op;

// A single-block region: arguments, then ops; nested regions end with a kYield op.
struct Block {
  std::vector<ValueId> args;
  std::vector<Op> ops;
};

struct Op {
  OpCode code = OpCode::kConstant;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  Attrs attrs;
  std::vector<Block> regions;
  SourceLoc loc;
};

// A kernel parameter: a pointer or a scalar, passed by value at launch in this order.
struct Param {
  std::string name;
  ElementType type;
  ValueId value = kNoValue;  // the body's argument that stands for it
  // Integer parameters: every launch passes a multiple of this (a contract the interpreter checks
  // and the lowering's axis analysis relies on, e.g. for 16-byte accesses at `p + slot * stride`).
  int64_t multiple_of = 1;
};

// Which matrix instructions a pipelined dot uses where the target offers more than one (sm_90a):
// the lowering's choice (wgmma where the dot fits it with N >= 128, else mma.sync), mma.sync per
// warp, or wgmma per warpgroup of 4 warps (operands read from shared memory by the unit itself;
// taken only where the dot fits it, else mma.sync). kAuto and kWarpgroup let an iteration's MMAs
// run on into the next where they can (docs/lowering.md); kWarpgroupSerial waits for them in their
// own iteration.
enum class MmaKind : uint8_t { kAuto, kWarp, kWarpgroup, kWarpgroupSerial };

// Launch-shape options chosen by the kernel's author (a C++ value, part of the program).
struct KernelOptions {
  int num_warps = 4;  // warps of Target::warp_size threads per program instance
  // Shared-memory stages of a pipelined loop (docs/lowering.md): 0 lets the lowering take the most
  // that fit (up to 4); else this many (2 or more), fewer where they do not fit.
  int num_stages = 0;
  MmaKind mma = MmaKind::kAuto;
  // Reductions whose lanes hold several result values exchange half of them per shuffle level
  // (fewer shuffles, a longer dependent chain); false: every value runs its own butterfly.
  bool multi_row_reductions = true;
  // NVIDIA: __launch_bounds__'s minimum blocks per SM (0: not given). A persistent kernel that runs
  // one program per SM says 1, so ptxas never trades registers for an occupancy it cannot have.
  int min_programs_per_sm = 0;
  friend bool operator==(const KernelOptions&, const KernelOptions&) = default;
};

// A whole kernel: parameters, the types of every value, and the body (whose args are the params).
struct Program {
  std::string name;
  KernelOptions options;
  std::vector<Param> params;
  std::vector<Type> value_types;  // indexed by ValueId
  Block body;

  const Type& type_of(ValueId value) const { return value_types.at(value); }
  // Whether any op of the body, nested regions included, is kWaitGridDependency: the program may
  // then be launched before its predecessor on the stream ends (ir.h's header comment).
  bool waits_for_grid_dependency() const;
  ValueId add_value(Type type) {
    value_types.push_back(std::move(type));
    return static_cast<ValueId>(value_types.size() - 1);
  }
};

}  // namespace monotile::dsl
