// Small helpers the tutorials share: naming host vectors as interpreter allocations, and f32 <->
// bf16 conversions for the host side of a test. Nothing here is needed to write a kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/interp/float16.h"
#include "dsl/interp/interpreter.h"

namespace monotile::tutorial {

// The interpreter checks every access against these ranges: give it each buffer the kernel uses.
template <typename T>
dsl::interp::Allocation allocation(const std::vector<T>& buffer, std::string name) {
  return {buffer.data(), buffer.size() * sizeof(T), std::move(name)};
}

// bf16 data on the host is raw 16-bit patterns.
inline uint16_t to_bf16(double value) { return dsl::interp::bf16_bits_from_double(value); }
inline double from_bf16(uint16_t bits) { return dsl::interp::bf16_bits_to_double(bits); }

}  // namespace monotile::tutorial
