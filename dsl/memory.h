// Global-memory ops: loads, stores and L2 prefetches (masked, with cache/eviction hints,
// acquire/release), atomics with explicit scope and order, fences, the block barrier, the global
// timer and wait_until.
// Semantics (masking, ordering, peer pointers) are in dsl/ir.h's opening comment.
#pragma once

#include <optional>
#include "support/source_location.h"

#include "dsl/value.h"

namespace monotile::dsl {

// Spellings that read like the sketch: Scope::gpu, Order::acquire, Cache::streaming, Cmp::ge.
struct Scope {
  static constexpr MemScope block = MemScope::kBlock;
  static constexpr MemScope gpu = MemScope::kGpu;
  static constexpr MemScope system = MemScope::kSystem;  // host and peer GPUs
};
struct Order {
  static constexpr MemOrder plain = MemOrder::kPlain;
  static constexpr MemOrder relaxed = MemOrder::kRelaxed;
  static constexpr MemOrder acquire = MemOrder::kAcquire;
  static constexpr MemOrder release = MemOrder::kRelease;
  static constexpr MemOrder acq_rel = MemOrder::kAcqRel;
};
struct Cache {
  static constexpr CacheHint normal = CacheHint::kDefault;
  static constexpr CacheHint all = CacheHint::kCacheAll;        // cache in L1 and L2
  static constexpr CacheHint global = CacheHint::kCacheGlobal;  // L2 only
  static constexpr CacheHint streaming = CacheHint::kStreaming;  // read or written once
  static constexpr CacheHint volatile_ = CacheHint::kVolatile;   // no caching
};
struct Evict {
  static constexpr EvictHint normal = EvictHint::kNormal;
  static constexpr EvictHint first = EvictHint::kFirst;
  static constexpr EvictHint last = EvictHint::kLast;
};
struct Cmp {
  static constexpr CmpPredicate eq = CmpPredicate::kEq;
  static constexpr CmpPredicate ne = CmpPredicate::kNe;
  static constexpr CmpPredicate lt = CmpPredicate::kLt;
  static constexpr CmpPredicate le = CmpPredicate::kLe;
  static constexpr CmpPredicate gt = CmpPredicate::kGt;
  static constexpr CmpPredicate ge = CmpPredicate::kGe;
};

// The most shared-memory stages a staged load takes (AccessOptions::stages).
inline constexpr int kMaxLoadStages = 8;

// order: plain (default), relaxed or acquire for loads; plain, relaxed or release for stores.
struct AccessOptions {
  CacheHint cache = CacheHint::kDefault;
  EvictHint evict = EvictHint::kNormal;
  MemOrder order = MemOrder::kPlain;
  MemScope scope = MemScope::kGpu;
  // Loads: the bytes L2 fetches from memory around each access, 0 (the target's own), 64, 128 or 256:
  // a stream whose accesses are narrower than that finds the rest in L2 on its next steps, with no
  // registers or request slots held for it (NVIDIA's .L2::NB prefetch size; AMD ignores it).
  int l2_fetch = 0;
  // Loads in a `range` body: 0 (a plain load), or 2 to 8 shared-memory stages through which the
  // tile is copied asynchronously, stages - 1 iterations ahead of its use, holding no registers
  // meanwhile (NVIDIA sm_80+; elsewhere, or where the load does not qualify, a plain load). It
  // qualifies as a pipelined dot's operand does (docs/lowering.md): a 2-D tile whose rows are
  // 16-byte aligned runs of at least 16 bytes, a mask constant over each 16 bytes and no `other`,
  // its pointer computed by pure ops from the loop index and values from before the loop. The
  // loop must not store what its staged loads read.
  int stages = 0;
};

// Reads *ptr per lane: a tile of the pointee dtype and the pointer's shape. With a mask (i1,
// broadcast to the pointer's shape) unselected lanes read nothing and take `other` (zero when
// absent; a literal or a value of the pointee dtype broadcast to the pointer's shape).
Value load(const Value& ptr, AccessOptions options = {},
           SourceLocation loc = SourceLocation::current());
Value load(const Value& ptr, const Value& mask, AccessOptions options = {},
           SourceLocation loc = SourceLocation::current());
Value load(const Value& ptr, const Value& mask, const Operand& other, AccessOptions options = {},
           SourceLocation loc = SourceLocation::current());
// Writes value (of the pointee dtype, or a literal; broadcast to the pointer's shape) per lane.
void store(const Value& ptr, const Operand& value, AccessOptions options = {},
           SourceLocation loc = SourceLocation::current());
void store(const Value& ptr, const Operand& value, const Value& mask, AccessOptions options = {},
           SourceLocation loc = SourceLocation::current());
// A hint: asks the memory system to bring the lines holding each lane's address into L2 (with a
// mask, i1 broadcast to the pointer's shape: each selected lane's), e.g. weights a later stage
// streams, issued before a stage they do not depend on. ptr is a pointer or a tile of pointers to
// any dtype. It changes no value and gives no ordering or visibility guarantee (a later load may
// still miss), and a target may drop it: NVIDIA issues prefetch.global.L2::evict_last per owned
// lane group, AMD gfx90a/gfx942 have no L2 prefetch and emit nothing. It is checked like a load:
// the interpreter refuses an unmasked lane outside its allocation, naming this line.
void prefetch(const Value& ptr, SourceLocation loc = SourceLocation::current());
void prefetch(const Value& ptr, const Value& mask,
              SourceLocation loc = SourceLocation::current());
// An acquire load / a release store at `scope`.
Value load_acquire(const Value& ptr, MemScope scope,
                   SourceLocation loc = SourceLocation::current());
void store_release(const Value& ptr, const Operand& value, MemScope scope,
                   SourceLocation loc = SourceLocation::current());

// Atomic read-modify-writes per lane, returning the old values. order: relaxed, acquire, release or
// acq_rel. dtypes: add i32/u32/i64/f16/bf16/f32/f64; max, min i32/u32/i64/f32/f64; and, or, xor
// i32/u32/i64; xchg and cas i32/u32/i64 (xchg also f32/f64).
#define MONOTILE_DSL_ATOMIC(name)                                                                    \
  Value name(const Value& ptr, const Operand& value, MemScope scope, MemOrder order,               \
             std::optional<Value> mask = std::nullopt,                                             \
             SourceLocation loc = SourceLocation::current());
MONOTILE_DSL_ATOMIC(atomic_add)
MONOTILE_DSL_ATOMIC(atomic_max)
MONOTILE_DSL_ATOMIC(atomic_min)
MONOTILE_DSL_ATOMIC(atomic_and)
MONOTILE_DSL_ATOMIC(atomic_or)
MONOTILE_DSL_ATOMIC(atomic_xor)
MONOTILE_DSL_ATOMIC(atomic_xchg)
#undef MONOTILE_DSL_ATOMIC
// Where *ptr == expected, writes desired; returns the old values either way.
Value atomic_cas(const Value& ptr, const Operand& expected, const Operand& desired, MemScope scope,
                 MemOrder order, std::optional<Value> mask = std::nullopt,
                 SourceLocation loc = SourceLocation::current());

// Orders this instance's earlier memory accesses before its later ones at `scope`
// (order: acquire, release or acq_rel).
void fence(MemOrder order, MemScope scope, SourceLocation loc = SourceLocation::current());
// Synchronizes the threads of one program instance (and orders their shared-memory accesses).
void barrier(SourceLocation loc = SourceLocation::current());
// Nanoseconds of a device-wide clock (i64 scalar).
Value global_timer(SourceLocation loc = SourceLocation::current());
// Spins (acquire loads at `scope`) until `*ptr cmp value` holds or `timeout_ns` pass; returns an
// i1 scalar that is true when it timed out. ptr is a scalar pointer to i32, u32 or i64.
Value wait_until(const Value& ptr, CmpPredicate cmp, const Operand& value, const Operand& timeout_ns,
                 MemScope scope = MemScope::kGpu,
                 SourceLocation loc = SourceLocation::current());

struct WaitOptions {
  // A scalar pointer to i32, u32 or i64 read on every spin iteration (after the flag, with a relaxed
  // system-scope load, so a word the host or another GPU sets is seen): once it is non-zero the wait
  // ends at once, aborted. A rank's "failed" word makes every wait of the rank end when one gives up.
  std::optional<Value> abort_if_nonzero;
};

struct Waited {
  Value outcome;  // i32 scalar: kWaitMet, kWaitTimedOut or kWaitAborted (dsl/ir.h)
  Value seen;     // *ptr as the wait's last load saw it (a scalar of the pointee dtype)
  Value met() const;        // i1 scalars
  Value timed_out() const;
  Value aborted() const;
};

// The same bounded spin, telling how it ended and what it saw last; with an abort word (above) it
// also ends when that word is non-zero. The flag is loaded first, so a flag that already holds
// ends the wait as met whatever the abort word says.
Waited wait_until(const Value& ptr, CmpPredicate cmp, const Operand& value, const Operand& timeout_ns,
                  MemScope scope, const WaitOptions& options,
                  SourceLocation loc = SourceLocation::current());

// Programmatic dependent launch (ir.h's header comment): launch_dependents() lets the kernel
// launched next on the stream start its programs on the SMs this kernel frees, once every program
// of this one has called it or ended; wait_grid_dependency() waits until the kernel launched before
// this one has ended, its memory writes visible. Everything a program reads that an earlier kernel
// wrote must come after the wait; before it, a program may prefetch and read weights. NVIDIA sm_90+
// only (griddepcontrol); on AMD and older NVIDIA targets both lower to nothing (the kernel then
// launches after its predecessor has ended), and in the interpreter both do nothing.
void launch_dependents(SourceLocation loc = SourceLocation::current());
void wait_grid_dependency(SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
