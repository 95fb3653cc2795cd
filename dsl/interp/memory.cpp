// Loads, stores and prefetches: masked lanes touch no memory (a masked load yields `other`, or
// zero), every selected lane is checked first for alignment and against the allocation of the
// argument its pointer was derived from, so a failing op has no partial effect; a prefetch is only
// checked.
#include "absl/strings/str_format.h"
#include "dsl/interp/memory_access.h"
#include "dsl/interp/ops.h"

namespace monotile::dsl::interp {

namespace {

// Names the buffer of the lane's argument when it has one, else the nearest allocation.
absl::Status out_of_bounds(const Frame& frame, const Op& op, const Type& pointer_type, size_t lane,
                           uint64_t address, size_t bytes, int32_t origin, std::string_view verb) {
  const MemoryMap& memory = *frame.shared->memory;
  std::string where;
  if (origin == kNoOrigin) {
    where = memory.describe_outside(address, bytes);
  } else {
    const auto param = static_cast<size_t>(origin);
    where = memory.describe_outside(*frame.argument_buffers[param],
                                    frame.program->params[param].name, address, bytes);
  }
  return op_error(frame, op,
                  absl::StrFormat("lane %s %s %d bytes out of bounds: %s",
                                  lane_str(pointer_type.shape, static_cast<int64_t>(lane)), verb,
                                  bytes, where));
}

}  // namespace

absl::Status check_access(Frame& frame, const Op& op, const Type& pointer_type,
                          const Tile& pointers, const int64_t* mask, std::string_view verb) {
  const auto bytes = static_cast<size_t>(scalar_type_bytes(pointer_type.element.scalar));
  const MemoryMap& memory = *frame.shared->memory;
  const std::vector<int64_t>& addresses = pointers.ints;
  const Provenance& provenance = pointers.provenance;
  // The common case, every lane from one argument, compares with one buffer's bounds.
  const Buffer* uniform = provenance.is_uniform() && provenance.uniform != kNoOrigin
                              ? frame.argument_buffers[static_cast<size_t>(provenance.uniform)]
                              : nullptr;
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (mask != nullptr && mask[i] == 0) continue;
    const auto address = static_cast<uint64_t>(addresses[i]);
    if (address % bytes != 0) [[unlikely]] {
      return op_error(frame, op, absl::StrFormat("lane %s %s %d bytes at misaligned address 0x%x (%s)",
                                                 lane_str(pointer_type.shape, static_cast<int64_t>(i)), verb, bytes,
                                                 address, memory.describe(address, bytes)));
    }
    bool inside = false;
    if (uniform != nullptr) {
      inside = uniform->holds(address, bytes);
    } else {
      const int32_t origin = provenance.at(i);
      inside = origin == kNoOrigin
                   ? memory.contains(address, bytes)
                   : frame.argument_buffers[static_cast<size_t>(origin)]->holds(address, bytes);
    }
    if (!inside) [[unlikely]] {
      return out_of_bounds(frame, op, pointer_type, i, address, bytes, provenance.at(i), verb);
    }
  }
  return absl::OkStatus();
}

namespace {

// Accesses are atomic when ordered, volatile, or racing with other threads.
bool is_atomic_access(const Frame& frame, const Op& op) {
  return op.attrs.order != MemOrder::kPlain || op.attrs.cache == CacheHint::kVolatile || frame.shared->concurrent;
}

absl::Status exec_load(Frame& frame, const Op& op) {
  const Type& pointer_type = frame.operand_type(op, 0);
  const Tile& pointers = frame.operand(op, 0);
  const std::vector<int64_t>& addresses = pointers.ints;
  const int64_t* mask = op.attrs.has_mask ? frame.operand(op, 1).ints.data() : nullptr;
  const Tile* other = op.attrs.has_other ? &frame.operand(op, op.attrs.has_mask ? 2 : 1) : nullptr;
  absl::Status status = check_access(frame, op, pointer_type, pointers, mask, "reads");
  if (!status.ok()) return status;
  Tile& out = frame.result(op);
  const bool atomic = is_atomic_access(frame, op);
  const std::memory_order order = to_std_order(op.attrs.order);
  dispatch_scalar(pointer_type.element.scalar, [&](auto tag) {
    using C = Codec<decltype(tag)::value>;
    auto* values = [&] {
      if constexpr (std::is_same_v<typename C::Value, double>) return out.floats.data();
      else return out.ints.data();
    }();
    const auto* others = [&]() -> const typename C::Value* {
      if (other == nullptr) return nullptr;
      if constexpr (std::is_same_v<typename C::Value, double>) return other->floats.data();
      else return other->ints.data();
    }();
    for (size_t i = 0; i < addresses.size(); ++i) {
      if (mask != nullptr && mask[i] == 0) {
        values[i] = others != nullptr ? others[i] : typename C::Value{0};
        continue;
      }
      values[i] = C::decode(read_raw<typename C::Raw>(static_cast<uint64_t>(addresses[i]), atomic, order));
    }
  });
  return absl::OkStatus();
}

absl::Status exec_store(Frame& frame, const Op& op) {
  const Type& pointer_type = frame.operand_type(op, 0);
  const Tile& pointers = frame.operand(op, 0);
  const std::vector<int64_t>& addresses = pointers.ints;
  const Tile& value = frame.operand(op, 1);
  const int64_t* mask = op.attrs.has_mask ? frame.operand(op, 2).ints.data() : nullptr;
  absl::Status status = check_access(frame, op, pointer_type, pointers, mask, "writes");
  if (!status.ok()) return status;
  const bool atomic = is_atomic_access(frame, op);
  const std::memory_order order = to_std_order(op.attrs.order);
  dispatch_scalar(pointer_type.element.scalar, [&](auto tag) {
    using C = Codec<decltype(tag)::value>;
    const auto* values = [&] {
      if constexpr (std::is_same_v<typename C::Value, double>) return value.floats.data();
      else return value.ints.data();
    }();
    // A scalar value stored through a tile of pointers is splat (the builder normally broadcasts).
    const bool splat = value.size() == 1;
    for (size_t i = 0; i < addresses.size(); ++i) {
      if (mask != nullptr && mask[i] == 0) continue;
      write_raw<typename C::Raw>(static_cast<uint64_t>(addresses[i]), C::encode(values[splat ? 0 : i]), atomic, order);
    }
  });
  return absl::OkStatus();
}

// A hint with no effect here, checked as the load it stands for would be.
absl::Status exec_prefetch(Frame& frame, const Op& op) {
  const int64_t* mask = op.attrs.has_mask ? frame.operand(op, 1).ints.data() : nullptr;
  return check_access(frame, op, frame.operand_type(op, 0), frame.operand(op, 0), mask,
                      "prefetches");
}

}  // namespace

absl::Status exec_memory(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kLoad: return exec_load(frame, op);
    case OpCode::kPrefetch: return exec_prefetch(frame, op);
    default: return exec_store(frame, op);
  }
}

}  // namespace monotile::dsl::interp
