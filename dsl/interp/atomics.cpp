// Atomics (read-modify-write and compare-and-swap, per selected lane in row-major order), fences,
// the barrier (a no-op: an instance is one thread), the global timer and wait_until. Host atomics
// are system-wide, so every scope is honoured by the strongest; orders map to std::memory_order.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "absl/strings/str_format.h"
#include "dsl/interp/memory_access.h"
#include "dsl/interp/ops.h"
#include "dsl/scalar_semantics.h"
#include "support/log.h"
#include "support/strings.h"

namespace monotile::dsl::interp {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The new value of an atomic RMW on canonical values.
double combine(ScalarType type, AtomicKind kind, double old_value, double value) {
  switch (kind) {
    case AtomicKind::kAdd:
      if (type == ScalarType::kF64) return old_value + value;
      return round_float(type, static_cast<float>(old_value) + static_cast<float>(value));
    case AtomicKind::kMax: return float_max(old_value, value);
    case AtomicKind::kMin: return float_min(old_value, value);
    default: return value;  // kXchg (bitwise kinds are refused earlier)
  }
}

int64_t combine(ScalarType type, AtomicKind kind, int64_t old_value, int64_t value) {
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  switch (kind) {
    case AtomicKind::kAdd: return wrap_integer(type, u(old_value) + u(value));
    case AtomicKind::kMax: return std::max(old_value, value);
    case AtomicKind::kMin: return std::min(old_value, value);
    case AtomicKind::kAnd: return old_value & value;
    case AtomicKind::kOr: return old_value | value;
    case AtomicKind::kXor: return old_value ^ value;
    case AtomicKind::kXchg: return value;
  }
  return value;
}

template <typename Value>
Value* data_of(Tile& tile) {
  if constexpr (std::is_same_v<Value, double>) return tile.floats.data();
  else return tile.ints.data();
}
template <typename Value>
const Value* data_of(const Tile& tile) {
  if constexpr (std::is_same_v<Value, double>) return tile.floats.data();
  else return tile.ints.data();
}

absl::Status exec_atomic_rmw(Frame& frame, const Op& op) {
  const Type& pointer_type = frame.operand_type(op, 0);
  const ScalarType type = pointer_type.element.scalar;
  const AtomicKind kind = op.attrs.atomic;
  if (is_float(type) && (kind == AtomicKind::kAnd || kind == AtomicKind::kOr || kind == AtomicKind::kXor)) {
    return op_error(frame, op, absl::StrFormat("atomic %s takes integer memory, got ptr<%s>",
                                               to_absl(atomic_name(kind)), to_absl(scalar_type_name(type))));
  }
  const std::vector<int64_t>& addresses = frame.operand(op, 0).ints;
  const Tile& value = frame.operand(op, 1);
  const int64_t* mask = op.attrs.has_mask ? frame.operand(op, 2).ints.data() : nullptr;
  absl::Status status =
      check_access(frame, op, pointer_type, frame.operand(op, 0), mask, "updates");
  if (!status.ok()) return status;
  Tile& out = frame.result(op);
  const std::memory_order order = to_std_order(op.attrs.order);
  dispatch_scalar(type, [&](auto tag) {
    using C = Codec<decltype(tag)::value>;
    using Raw = typename C::Raw;
    using Value = typename C::Value;
    const Value* values = data_of<Value>(value);
    Value* olds = data_of<Value>(out);
    const bool splat = value.size() == 1;
    for (size_t i = 0; i < addresses.size(); ++i) {
      if (mask != nullptr && mask[i] == 0) {
        olds[i] = Value{0};
        continue;
      }
      std::atomic_ref<Raw> ref(*reinterpret_cast<Raw*>(static_cast<uintptr_t>(addresses[i])));
      const Value operand = values[splat ? 0 : i];
      if (kind == AtomicKind::kXchg) {
        olds[i] = C::decode(ref.exchange(C::encode(operand), order));
        continue;
      }
      Raw expected = ref.load(std::memory_order_relaxed);
      while (!ref.compare_exchange_weak(expected, C::encode(combine(type, kind, C::decode(expected), operand)), order,
                                        failure_order(order))) {
      }
      olds[i] = C::decode(expected);
    }
  });
  return absl::OkStatus();
}

absl::Status exec_atomic_cas(Frame& frame, const Op& op) {
  const Type& pointer_type = frame.operand_type(op, 0);
  const std::vector<int64_t>& addresses = frame.operand(op, 0).ints;
  const Tile& expected_tile = frame.operand(op, 1);
  const Tile& desired_tile = frame.operand(op, 2);
  const int64_t* mask = op.attrs.has_mask ? frame.operand(op, 3).ints.data() : nullptr;
  absl::Status status =
      check_access(frame, op, pointer_type, frame.operand(op, 0), mask, "updates");
  if (!status.ok()) return status;
  Tile& out = frame.result(op);
  const std::memory_order order = to_std_order(op.attrs.order);
  dispatch_scalar(pointer_type.element.scalar, [&](auto tag) {
    using C = Codec<decltype(tag)::value>;
    using Raw = typename C::Raw;
    using Value = typename C::Value;
    const Value* expected_values = data_of<Value>(expected_tile);
    const Value* desired_values = data_of<Value>(desired_tile);
    Value* olds = data_of<Value>(out);
    const bool splat = expected_tile.size() == 1;
    for (size_t i = 0; i < addresses.size(); ++i) {
      if (mask != nullptr && mask[i] == 0) {
        olds[i] = Value{0};
        continue;
      }
      std::atomic_ref<Raw> ref(*reinterpret_cast<Raw*>(static_cast<uintptr_t>(addresses[i])));
      // Compares bit patterns, like the hardware.
      Raw expected = C::encode(expected_values[splat ? 0 : i]);
      ref.compare_exchange_strong(expected, C::encode(desired_values[splat ? 0 : i]), order, failure_order(order));
      olds[i] = C::decode(expected);
    }
  });
  return absl::OkStatus();
}

std::string format_value(double value) { return absl::StrFormat("%.9g", value); }
std::string format_value(int64_t value) { return absl::StrFormat("%d", value); }

template <typename Value>
bool holds(CmpPredicate cmp, Value a, Value b) {
  switch (cmp) {
    case CmpPredicate::kEq: return a == b;
    case CmpPredicate::kNe: return a != b;
    case CmpPredicate::kLt: return a < b;
    case CmpPredicate::kLe: return a <= b;
    case CmpPredicate::kGt: return a > b;
    case CmpPredicate::kGe: return a >= b;
  }
  return false;
}

// The bounded spin: the flag (acquire), then the abort word if the op has one (relaxed: a word
// another thread sets mid-wait ends it within one iteration), then the clock.
absl::Status exec_wait_until(Frame& frame, const Op& op) {
  const Type& pointer_type = frame.operand_type(op, 0);
  const std::vector<int64_t>& address = frame.operand(op, 0).ints;
  absl::Status status =
      check_access(frame, op, pointer_type, frame.operand(op, 0), nullptr, "waits on");
  if (!status.ok()) return status;
  const bool with_abort = op.operands.size() == 4;
  if (with_abort) {
    status = check_access(frame, op, frame.operand_type(op, 3), frame.operand(op, 3), nullptr, "aborts on");
    if (!status.ok()) return status;
  }
  const Tile& target = frame.operand(op, 1);
  const int64_t timeout_ns = frame.operand(op, 2).ints.at(0);
  const int64_t start = now_ns();
  int32_t outcome = kWaitMet;
  std::string last_seen;
  bool cancelled = false;
  // Reads the abort word (any of the integer dtypes a wait takes) with a relaxed load.
  auto abort_set = [&]() -> bool {
    if (!with_abort) return false;
    bool set = false;
    dispatch_scalar(frame.operand_type(op, 3).element.scalar, [&](auto tag) {
      using Raw = typename Codec<decltype(tag)::value>::Raw;
      std::atomic_ref<Raw> word(
          *reinterpret_cast<Raw*>(static_cast<uintptr_t>(frame.operand(op, 3).ints.at(0))));
      set = word.load(std::memory_order_relaxed) != Raw{0};
    });
    return set;
  };
  dispatch_scalar(pointer_type.element.scalar, [&](auto tag) {
    using C = Codec<decltype(tag)::value>;
    using Value = typename C::Value;
    const Value wanted = data_of<Value>(target)[0];
    std::atomic_ref<typename C::Raw> ref(*reinterpret_cast<typename C::Raw*>(static_cast<uintptr_t>(address[0])));
    auto finish = [&](int32_t how, Value seen) {
      outcome = how;
      if (op.results.size() == 2) data_of<Value>(frame.result(op, 1))[0] = seen;
      if (how == kWaitTimedOut) {
        last_seen = absl::StrFormat("%s, waiting for %s %s", format_value(seen), to_absl(cmp_name(op.attrs.cmp)),
                                    format_value(wanted));
      }
    };
    for (int64_t spins = 0;; ++spins) {
      const Value seen = C::decode(ref.load(std::memory_order_acquire));
      if (holds(op.attrs.cmp, seen, wanted)) return finish(kWaitMet, seen);
      if (abort_set()) return finish(kWaitAborted, seen);
      if (now_ns() - start >= timeout_ns) return finish(kWaitTimedOut, seen);
      if (frame.shared->cancelled.load(std::memory_order_relaxed)) {
        cancelled = true;
        return;
      }
      if (spins > 64) std::this_thread::yield();  // other instances (threads) must make progress
    }
  });
  if (cancelled) return cancelled_error(frame, op);
  // The plain form yields i1 timed_out; the form with options (two results) the outcome and the value.
  frame.result(op).ints[0] = op.results.size() == 2 ? outcome : (outcome == kWaitTimedOut ? 1 : 0);
  if (outcome == kWaitTimedOut) {
    const auto bytes = static_cast<size_t>(scalar_type_bytes(pointer_type.element.scalar));
    std::string report = absl::StrFormat(
        "%s: timed out after %d ns: %s is %s", op_context(frame, op), timeout_ns,
        frame.shared->memory->describe(static_cast<uint64_t>(address[0]), bytes), last_seen);
    std::lock_guard<std::mutex> lock(frame.shared->output_mutex);
    if (frame.shared->options->wait_timeouts != nullptr) frame.shared->options->wait_timeouts->push_back(report);
    else log_warning(report);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status exec_sync(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kAtomicRmw: return exec_atomic_rmw(frame, op);
    case OpCode::kAtomicCas: return exec_atomic_cas(frame, op);
    case OpCode::kFence: {
      const std::memory_order order = to_std_order(op.attrs.order);
      std::atomic_thread_fence(order == std::memory_order_relaxed ? std::memory_order_seq_cst : order);
      return absl::OkStatus();
    }
    case OpCode::kBarrier: return absl::OkStatus();  // one thread per instance: nothing to wait for
    case OpCode::kGlobalTimer: frame.result(op).ints[0] = now_ns(); return absl::OkStatus();
    case OpCode::kWaitUntil: return exec_wait_until(frame, op);
    // A launch starts after its predecessor has ended here: there is nothing to release or wait for.
    case OpCode::kLaunchDependents:
    case OpCode::kWaitGridDependency: return absl::OkStatus();
    default: return op_error(frame, op, "not a synchronization op");
  }
}

}  // namespace monotile::dsl::interp
