// Memory ops: pointer, mask, value and order checks, then one IR op each. Masks and values
// broadcast to the pointer's shape; the pointer never broadcasts to theirs.
#include "dsl/memory.h"

#include <initializer_list>

#include "dsl/arith.h"
#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/op_rules.h"
#include "dsl/promote.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

Type pointer_type(Builder& builder, const Value& ptr, std::string_view op,
                  const SourceLocation& loc) {
  Type type = builder.type_of(ptr, op, loc);
  if (!type.element.pointer) {
    throw Error(at(loc), std::string(op),
                std::string(op) + " through a non-pointer: the address operand is " + type.str() +
                    ", expected a pointer (or a tile of pointers)",
                "a pointer (or a tile of pointers)", type.str(),
                "pass a pointer argument plus offsets, e.g. b.arg(\"y\", ptr(f32)) + offsets");
  }
  return type;
}

Value checked_mask(Builder& builder, const Value& mask, const Type& pointer, std::string_view op,
                   const SourceLocation& loc) {
  Type type = builder.type_of(mask, op, loc);
  if (type.element != ElementType{ScalarType::kI1}) {
    throw Error(at(loc), std::string(op), "the mask has dtype " + dtype_str(type.element) + ", not i1",
                "i1", dtype_str(type.element), "make a mask by comparing, e.g. cols < n");
  }
  std::vector<int64_t> joined;
  if (!broadcast_shapes(type.shape, pointer.shape, &joined) || joined != pointer.shape) {
    throw Error(at(loc), std::string(op),
                "mask shape " + shape_str(type.shape) + " does not match pointer shape " +
                    shape_str(pointer.shape),
                shape_str(pointer.shape), shape_str(type.shape),
                "the mask needs the pointer's shape (or one that broadcasts to it, like a scalar); "
                "build it from the same offsets, e.g. offsets < n");
  }
  return broadcast_value(builder, mask, pointer.shape, op, loc);
}

// A value stored / compared / combined at `pointer`: the pointee dtype, the pointer's shape.
Value checked_data(Builder& builder, const Operand& data, const Type& pointer, std::string_view what,
                   std::string_view op, const SourceLocation& loc) {
  ElementType pointee{pointer.element.scalar, false};
  if (data.is_value()) {
    Type type = builder.type_of(data.value(), op, loc);
    if (type.element != pointee) {
      throw Error(at(loc), std::string(op),
                  std::string(what) + " has dtype " + dtype_str(type.element) +
                      ", not the pointee dtype " + dtype_str(pointee),
                  dtype_str(pointee), dtype_str(type.element),
                  "convert it explicitly, e.g. x.to(" + dtype_str(pointee) + ")");
    }
    std::vector<int64_t> joined;
    if (!broadcast_shapes(type.shape, pointer.shape, &joined) || joined != pointer.shape) {
      throw Error(at(loc), std::string(op),
                  std::string(what) + " shape " + shape_str(type.shape) +
                      " does not match pointer shape " + shape_str(pointer.shape),
                  shape_str(pointer.shape), shape_str(type.shape),
                  "it needs the pointer's shape or one that broadcasts to it (e.g. a scalar)");
    }
  }
  return materialize(builder, data, pointee, pointer.shape, op, loc);
}

void check_order(MemOrder order, std::initializer_list<MemOrder> allowed, std::string_view op,
                 const SourceLocation& loc) {
  std::string names;
  for (MemOrder candidate : allowed) {
    if (candidate == order) return;
    if (!names.empty()) names += ", ";
    names += order_name(candidate);
  }
  throw Error(at(loc), std::string(op),
              std::string(op) + " does not take memory order " + std::string(order_name(order)),
              names, std::string(order_name(order)),
              "loads acquire, stores release, read-modify-writes may do both");
}

Value build_load(const Value& ptr, const Value* mask, const Operand* other, AccessOptions options,
                 const SourceLocation& loc) {
  Builder& builder = Builder::current("load", loc);
  Type pointer = pointer_type(builder, ptr, "load", loc);
  check_order(options.order, {MemOrder::kPlain, MemOrder::kRelaxed, MemOrder::kAcquire}, "load", loc);
  if (options.l2_fetch != 0 && options.l2_fetch != 64 && options.l2_fetch != 128 && options.l2_fetch != 256) {
    throw Error(at(loc), "load",
                "l2_fetch is " + std::to_string(options.l2_fetch) + " bytes, expected 0, 64, 128 or 256",
                "0, 64, 128 or 256",
                std::to_string(options.l2_fetch),
                "the bytes L2 fetches around each access: 0 leaves it to the target");
  }
  if (options.stages != 0 && (options.stages < 2 || options.stages > kMaxLoadStages)) {
    throw Error(at(loc), "load",
                "stages is " + std::to_string(options.stages) + ", expected 0 or 2 to " + std::to_string(kMaxLoadStages),
                "0, or 2 to " + std::to_string(kMaxLoadStages), std::to_string(options.stages),
                "0 is a plain load; n stages copy the tile n - 1 loop iterations ahead");
  }
  if (options.stages != 0 && options.order != MemOrder::kPlain) {
    throw Error(at(loc), "load", "an ordered load cannot be staged", "stages 0 with order " +
                std::string(order_name(options.order)), std::to_string(options.stages),
                "stage plain loads only: an ordered load must happen where the program puts it");
  }
  std::vector<Value> operands{ptr};
  Attrs attrs;
  attrs.stages = options.stages;
  attrs.cache = options.cache;
  attrs.evict = options.evict;
  attrs.l2_fetch = options.l2_fetch;
  attrs.order = options.order;
  attrs.scope = options.scope;
  if (mask) {
    operands.push_back(checked_mask(builder, *mask, pointer, "load", loc));
    attrs.has_mask = true;
  }
  if (other) {
    operands.push_back(checked_data(builder, *other, pointer, "other", "load", loc));
    attrs.has_other = true;
  }
  return builder.emit1(OpCode::kLoad, operands, std::move(attrs),
                       Type{ElementType{pointer.element.scalar, false}, pointer.shape}, loc);
}

void build_store(const Value& ptr, const Operand& value, const Value* mask, AccessOptions options,
                 const SourceLocation& loc) {
  Builder& builder = Builder::current("store", loc);
  Type pointer = pointer_type(builder, ptr, "store", loc);
  check_order(options.order, {MemOrder::kPlain, MemOrder::kRelaxed, MemOrder::kRelease}, "store", loc);
  std::vector<Value> operands{ptr, checked_data(builder, value, pointer, "the value", "store", loc)};
  Attrs attrs;
  attrs.cache = options.cache;
  attrs.evict = options.evict;
  attrs.order = options.order;
  attrs.scope = options.scope;
  if (mask) {
    operands.push_back(checked_mask(builder, *mask, pointer, "store", loc));
    attrs.has_mask = true;
  }
  builder.emit(OpCode::kStore, operands, std::move(attrs), {}, loc);
}

void build_prefetch(const Value& ptr, const Value* mask, const SourceLocation& loc) {
  Builder& builder = Builder::current("prefetch", loc);
  Type pointer = pointer_type(builder, ptr, "prefetch", loc);
  std::vector<Value> operands{ptr};
  Attrs attrs;
  if (mask) {
    operands.push_back(checked_mask(builder, *mask, pointer, "prefetch", loc));
    attrs.has_mask = true;
  }
  builder.emit(OpCode::kPrefetch, operands, std::move(attrs), {}, loc);
}

Value build_atomic(AtomicKind kind, const Value& ptr, const Operand& value, MemScope scope,
                   MemOrder order, const std::optional<Value>& mask, const SourceLocation& loc) {
  std::string op = "atomic_" + std::string(atomic_name(kind));
  Builder& builder = Builder::current(op, loc);
  Type pointer = pointer_type(builder, ptr, op, loc);
  check_order(order, {MemOrder::kRelaxed, MemOrder::kAcquire, MemOrder::kRelease, MemOrder::kAcqRel},
              op, loc);
  if (!atomic_takes(kind, pointer.element.scalar)) {
    ElementType pointee{pointer.element.scalar, false};
    throw Error(at(loc), op, op + " does not take " + dtype_str(pointee) + " memory",
                kind == AtomicKind::kAdd ? "i32, u32, i64, f16, bf16, f32 or f64"
                : kind == AtomicKind::kAnd || kind == AtomicKind::kOr || kind == AtomicKind::kXor
                    ? "i32, u32 or i64"
                    : "i32, u32, i64, f32 or f64",
                dtype_str(pointee), "keep counters and flags in i32/u32/i64 words");
  }
  std::vector<Value> operands{ptr, checked_data(builder, value, pointer, "the value", op, loc)};
  Attrs attrs;
  attrs.atomic = kind;
  attrs.order = order;
  attrs.scope = scope;
  if (mask) {
    operands.push_back(checked_mask(builder, *mask, pointer, op, loc));
    attrs.has_mask = true;
  }
  return builder.emit1(OpCode::kAtomicRmw, operands, std::move(attrs),
                       Type{ElementType{pointer.element.scalar, false}, pointer.shape}, loc);
}

}  // namespace

Value load(const Value& ptr, AccessOptions options, SourceLocation loc) {
  return build_load(ptr, nullptr, nullptr, options, loc);
}
Value load(const Value& ptr, const Value& mask, AccessOptions options, SourceLocation loc) {
  return build_load(ptr, &mask, nullptr, options, loc);
}
Value load(const Value& ptr, const Value& mask, const Operand& other, AccessOptions options,
           SourceLocation loc) {
  return build_load(ptr, &mask, &other, options, loc);
}
void store(const Value& ptr, const Operand& value, AccessOptions options, SourceLocation loc) {
  build_store(ptr, value, nullptr, options, loc);
}
void store(const Value& ptr, const Operand& value, const Value& mask, AccessOptions options,
           SourceLocation loc) {
  build_store(ptr, value, &mask, options, loc);
}
void prefetch(const Value& ptr, SourceLocation loc) { build_prefetch(ptr, nullptr, loc); }
void prefetch(const Value& ptr, const Value& mask, SourceLocation loc) {
  build_prefetch(ptr, &mask, loc);
}
Value load_acquire(const Value& ptr, MemScope scope, SourceLocation loc) {
  return build_load(ptr, nullptr, nullptr, {.order = MemOrder::kAcquire, .scope = scope}, loc);
}
void store_release(const Value& ptr, const Operand& value, MemScope scope, SourceLocation loc) {
  build_store(ptr, value, nullptr, {.order = MemOrder::kRelease, .scope = scope}, loc);
}

#define MONOTILE_DSL_ATOMIC(name, kind)                                                          \
  Value name(const Value& ptr, const Operand& value, MemScope scope, MemOrder order,           \
             std::optional<Value> mask, SourceLocation loc) {                            \
    return build_atomic(kind, ptr, value, scope, order, mask, loc);                            \
  }
MONOTILE_DSL_ATOMIC(atomic_add, AtomicKind::kAdd)
MONOTILE_DSL_ATOMIC(atomic_max, AtomicKind::kMax)
MONOTILE_DSL_ATOMIC(atomic_min, AtomicKind::kMin)
MONOTILE_DSL_ATOMIC(atomic_and, AtomicKind::kAnd)
MONOTILE_DSL_ATOMIC(atomic_or, AtomicKind::kOr)
MONOTILE_DSL_ATOMIC(atomic_xor, AtomicKind::kXor)
MONOTILE_DSL_ATOMIC(atomic_xchg, AtomicKind::kXchg)
#undef MONOTILE_DSL_ATOMIC

Value atomic_cas(const Value& ptr, const Operand& expected, const Operand& desired, MemScope scope,
                 MemOrder order, std::optional<Value> mask, SourceLocation loc) {
  Builder& builder = Builder::current("atomic_cas", loc);
  Type pointer = pointer_type(builder, ptr, "atomic_cas", loc);
  check_order(order, {MemOrder::kRelaxed, MemOrder::kAcquire, MemOrder::kRelease, MemOrder::kAcqRel},
              "atomic_cas", loc);
  ScalarType scalar = pointer.element.scalar;
  if (!atomic_cas_takes(scalar)) {
    throw Error(at(loc), "atomic_cas",
                "atomic_cas does not take " + dtype_str(ElementType{scalar}) + " memory",
                "i32, u32 or i64", dtype_str(ElementType{scalar}),
                "compare-and-swap integer words (bitcast floats to u32)");
  }
  std::vector<Value> operands{ptr,
                              checked_data(builder, expected, pointer, "expected", "atomic_cas", loc),
                              checked_data(builder, desired, pointer, "desired", "atomic_cas", loc)};
  Attrs attrs;
  attrs.order = order;
  attrs.scope = scope;
  if (mask) {
    operands.push_back(checked_mask(builder, *mask, pointer, "atomic_cas", loc));
    attrs.has_mask = true;
  }
  return builder.emit1(OpCode::kAtomicCas, operands, std::move(attrs),
                       Type{ElementType{scalar, false}, pointer.shape}, loc);
}

void fence(MemOrder order, MemScope scope, SourceLocation loc) {
  Builder& builder = Builder::current("fence", loc);
  check_order(order, {MemOrder::kAcquire, MemOrder::kRelease, MemOrder::kAcqRel}, "fence", loc);
  Attrs attrs;
  attrs.order = order;
  attrs.scope = scope;
  builder.emit(OpCode::kFence, {}, std::move(attrs), {}, loc);
}

void barrier(SourceLocation loc) {
  Builder::current("barrier", loc).emit(OpCode::kBarrier, {}, {}, {}, loc);
}

Value global_timer(SourceLocation loc) {
  return Builder::current("global_timer", loc)
      .emit1(OpCode::kGlobalTimer, {}, {}, Type{ElementType{ScalarType::kI64}, {}}, loc);
}

void launch_dependents(SourceLocation loc) {
  Builder::current("launch_dependents", loc).emit(OpCode::kLaunchDependents, {}, {}, {}, loc);
}

void wait_grid_dependency(SourceLocation loc) {
  Builder::current("wait_grid_dependency", loc).emit(OpCode::kWaitGridDependency, {}, {}, {}, loc);
}

namespace {

struct WaitOperands {
  Value ptr, expected, timeout;
};

WaitOperands wait_operands(Builder& builder, const Value& ptr, const Operand& value, const Operand& timeout_ns,
                           SourceLocation loc) {
  Type pointer = pointer_type(builder, ptr, "wait_until", loc);
  ScalarType scalar = pointer.element.scalar;
  if (!pointer.is_scalar() ||
      (scalar != ScalarType::kI32 && scalar != ScalarType::kU32 && scalar != ScalarType::kI64)) {
    throw Error(at(loc), "wait_until", "wait_until watches " + pointer.str(),
                "a scalar pointer to i32, u32 or i64", pointer.str(),
                "wait on one flag word: base + index, with scalars only");
  }
  Value expected = checked_data(builder, value, pointer, "the value", "wait_until", loc);
  if (timeout_ns.kind() == Operand::Kind::kFloat) {
    throw Error(at(loc), "wait_until", "the timeout is a float constant", "an integer scalar (ns)",
                "a float", "pass nanoseconds as an integer, e.g. 1'000'000'000");
  }
  if (timeout_ns.is_value()) {
    Type type = builder.type_of(timeout_ns.value(), "wait_until", loc);
    if (!type.is_scalar() || !is_integer(type.element.scalar) || type.element.scalar == ScalarType::kI1) {
      throw Error(at(loc), "wait_until", "the timeout is " + type.str(), "an integer scalar (ns)",
                  type.str(), "pass nanoseconds as an integer, e.g. 1'000'000'000");
    }
  }
  Value timeout = materialize(builder, timeout_ns, ElementType{ScalarType::kI64}, {}, "wait_until", loc);
  return {ptr, expected, timeout};
}

Attrs wait_attrs(CmpPredicate cmp, MemScope scope) {
  Attrs attrs;
  attrs.cmp = cmp;
  attrs.scope = scope;
  attrs.order = MemOrder::kAcquire;
  return attrs;
}

}  // namespace

Value wait_until(const Value& ptr, CmpPredicate cmp, const Operand& value, const Operand& timeout_ns,
                 MemScope scope, SourceLocation loc) {
  Builder& builder = Builder::current("wait_until", loc);
  WaitOperands w = wait_operands(builder, ptr, value, timeout_ns, loc);
  return builder.emit1(OpCode::kWaitUntil, {w.ptr, w.expected, w.timeout}, wait_attrs(cmp, scope),
                       Type{ElementType{ScalarType::kI1}, {}}, loc);
}

Waited wait_until(const Value& ptr, CmpPredicate cmp, const Operand& value, const Operand& timeout_ns,
                  MemScope scope, const WaitOptions& options, SourceLocation loc) {
  Builder& builder = Builder::current("wait_until", loc);
  WaitOperands w = wait_operands(builder, ptr, value, timeout_ns, loc);
  std::vector<Value> operands = {w.ptr, w.expected, w.timeout};
  if (options.abort_if_nonzero) {
    Type word = builder.type_of(*options.abort_if_nonzero, "wait_until", loc);
    ScalarType scalar = word.element.scalar;
    if (!word.element.pointer || !word.is_scalar() ||
        (scalar != ScalarType::kI32 && scalar != ScalarType::kU32 && scalar != ScalarType::kI64)) {
      throw Error(at(loc), "wait_until", "the abort word is " + word.str(), "a scalar pointer to i32, u32 or i64",
                  word.str(), "abort on one word: base + index, with scalars only");
    }
    operands.push_back(*options.abort_if_nonzero);
  }
  Type pointer = builder.type_of(ptr, "wait_until", loc);
  std::vector<Value> results =
      builder.emit(OpCode::kWaitUntil, operands, wait_attrs(cmp, scope),
                   {Type{ElementType{ScalarType::kI32}, {}}, Type{ElementType{pointer.element.scalar}, {}}}, loc);
  return {results[0], results[1]};
}

Value Waited::met() const { return outcome == kWaitMet; }
Value Waited::timed_out() const { return outcome == kWaitTimedOut; }
Value Waited::aborted() const { return outcome == kWaitAborted; }

}  // namespace monotile::dsl
