// Element codecs between memory and canonical tile values, and single-element accesses that go
// through std::atomic_ref whenever the access is ordered or instances run concurrently (a plain
// access racing with another thread's atomic would be undefined behaviour in C++).
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dsl/scalar_semantics.h"
#include "dsl/ir.h"

namespace monotile::dsl::interp {

// Raw: the memory representation (an unsigned/signed integer of the element's size).
// Value: the canonical tile value (int64_t or double).
template <ScalarType S>
struct Codec;

#define MT_INT_CODEC(S, RAW)                                                        \
  template <>                                                                       \
  struct Codec<S> {                                                                 \
    using Raw = RAW;                                                                \
    using Value = int64_t;                                                          \
    static int64_t decode(Raw raw) { return static_cast<int64_t>(raw); }           \
    static Raw encode(int64_t value) { return static_cast<Raw>(value); }           \
  }
MT_INT_CODEC(ScalarType::kI8, int8_t);
MT_INT_CODEC(ScalarType::kU8, uint8_t);
MT_INT_CODEC(ScalarType::kMxfp4, uint8_t);
MT_INT_CODEC(ScalarType::kI16, int16_t);
MT_INT_CODEC(ScalarType::kI32, int32_t);
MT_INT_CODEC(ScalarType::kU32, uint32_t);
MT_INT_CODEC(ScalarType::kI64, int64_t);
#undef MT_INT_CODEC

template <>
struct Codec<ScalarType::kI1> {  // one byte; any non-zero byte reads as true
  using Raw = uint8_t;
  using Value = int64_t;
  static int64_t decode(Raw raw) { return raw != 0 ? 1 : 0; }
  static Raw encode(int64_t value) { return value != 0 ? 1 : 0; }
};
template <>
struct Codec<ScalarType::kF16> {
  using Raw = uint16_t;
  using Value = double;
  static double decode(Raw raw) { return f16_bits_to_double(raw); }
  static Raw encode(double value) { return f16_bits_from_double(value); }
};
template <>
struct Codec<ScalarType::kBf16> {
  using Raw = uint16_t;
  using Value = double;
  static double decode(Raw raw) { return bf16_bits_to_double(raw); }
  static Raw encode(double value) { return bf16_bits_from_double(value); }
};
template <>
struct Codec<ScalarType::kF32> {
  using Raw = uint32_t;
  using Value = double;
  static double decode(Raw raw) { return std::bit_cast<float>(raw); }
  static Raw encode(double value) { return std::bit_cast<uint32_t>(static_cast<float>(value)); }
};
template <>
struct Codec<ScalarType::kF64> {
  using Raw = uint64_t;
  using Value = double;
  static double decode(Raw raw) { return std::bit_cast<double>(raw); }
  static Raw encode(double value) { return std::bit_cast<uint64_t>(value); }
};

// Calls fn(std::integral_constant<ScalarType, S>{}) for the runtime `type`.
template <typename Fn>
decltype(auto) dispatch_scalar(ScalarType type, Fn&& fn) {
  using enum ScalarType;
  switch (type) {
    case kI1: return fn(std::integral_constant<ScalarType, kI1>{});
    case kI8: return fn(std::integral_constant<ScalarType, kI8>{});
    case kU8: return fn(std::integral_constant<ScalarType, kU8>{});
    case kI16: return fn(std::integral_constant<ScalarType, kI16>{});
    case kI32: return fn(std::integral_constant<ScalarType, kI32>{});
    case kU32: return fn(std::integral_constant<ScalarType, kU32>{});
    case kI64: return fn(std::integral_constant<ScalarType, kI64>{});
    case kF16: return fn(std::integral_constant<ScalarType, kF16>{});
    case kBf16: return fn(std::integral_constant<ScalarType, kBf16>{});
    case kF32: return fn(std::integral_constant<ScalarType, kF32>{});
    case kF64: return fn(std::integral_constant<ScalarType, kF64>{});
    case kMxfp4: break;
  }
  return fn(std::integral_constant<ScalarType, kMxfp4>{});
}

inline std::memory_order to_std_order(MemOrder order) {
  switch (order) {
    case MemOrder::kAcquire: return std::memory_order_acquire;
    case MemOrder::kRelease: return std::memory_order_release;
    case MemOrder::kAcqRel: return std::memory_order_acq_rel;
    default: return std::memory_order_relaxed;
  }
}

// The failure order of a compare-exchange whose success order is `order` (no release part).
inline std::memory_order failure_order(std::memory_order order) {
  if (order == std::memory_order_acq_rel || order == std::memory_order_acquire) return std::memory_order_acquire;
  return std::memory_order_relaxed;
}

template <typename Raw>
Raw read_raw(uint64_t address, bool atomic, std::memory_order order) {
  Raw* pointer = reinterpret_cast<Raw*>(static_cast<uintptr_t>(address));
  if (!atomic) {
    Raw raw;
    std::memcpy(&raw, pointer, sizeof(Raw));
    return raw;
  }
  if (order == std::memory_order_release || order == std::memory_order_acq_rel) order = std::memory_order_acquire;
  return std::atomic_ref<Raw>(*pointer).load(order);
}

template <typename Raw>
void write_raw(uint64_t address, Raw raw, bool atomic, std::memory_order order) {
  Raw* pointer = reinterpret_cast<Raw*>(static_cast<uintptr_t>(address));
  if (!atomic) {
    std::memcpy(pointer, &raw, sizeof(Raw));
    return;
  }
  if (order == std::memory_order_acquire || order == std::memory_order_acq_rel) order = std::memory_order_release;
  std::atomic_ref<Raw>(*pointer).store(raw, order);
}

}  // namespace monotile::dsl::interp
