// Element-type constants a kernel names (f32, bf16, ptr(bf16), ...), as in Triton's tl.float32.
// They are plain ElementType values; C++ literals get their dtype from promotion (docs/dsl.md).
#pragma once

#include "dsl/ir.h"

namespace monotile::dsl {

inline constexpr ElementType i1{ScalarType::kI1};
inline constexpr ElementType i8{ScalarType::kI8};
inline constexpr ElementType u8{ScalarType::kU8};
inline constexpr ElementType i16{ScalarType::kI16};
inline constexpr ElementType i32{ScalarType::kI32};
inline constexpr ElementType u32{ScalarType::kU32};
inline constexpr ElementType i64{ScalarType::kI64};
inline constexpr ElementType f16{ScalarType::kF16};
inline constexpr ElementType bf16{ScalarType::kBf16};
inline constexpr ElementType f32{ScalarType::kF32};
inline constexpr ElementType f64{ScalarType::kF64};
inline constexpr ElementType mxfp4{ScalarType::kMxfp4};

// A pointer to global memory holding elements of `pointee` (which must not itself be a pointer).
constexpr ElementType ptr(ElementType pointee) { return ElementType{pointee.scalar, true}; }

}  // namespace monotile::dsl
