// Dtype promotion and broadcasting for the builder's ops: Triton's rules for mixing dtypes and
// C++ literals, numpy's for shapes. The IR never converts implicitly, so these helpers insert the
// kCast / kExpandDims / kBroadcast / kConstant ops that make operands identical in type and shape.
#pragma once

#include "support/source_location.h"
#include <span>
#include <string_view>
#include <vector>

#include "dsl/builder.h"
#include "dsl/ir.h"
#include "dsl/value.h"

namespace monotile::dsl {

// The dtype of a literal standing alone: i1 for bool, i32 for an integer (i64 when it does not fit),
// f32 for a floating-point literal.
ElementType literal_dtype(const Operand& literal);

// The dtype operands meet at: the common dtype of the values (Triton's promotion), which literals
// adopt (an integer literal promotes i1 to i32; a float literal promotes integers to f32). Throws
// for pointers and mxfp4 (callers handle pointers before).
ElementType common_dtype(Builder& builder, std::span<const Operand> operands, std::string_view op,
                         const SourceLocation& loc);

// The shape every operand broadcasts to (numpy rules; literals are scalars); throws naming all
// shapes when they do not broadcast.
std::vector<int64_t> common_shape(Builder& builder, std::span<const Operand> operands,
                                  std::string_view op, const SourceLocation& loc);

// `value` (same dtype) stretched to `shape`: leading size-1 dims are added with kExpandDims and
// size-1 dims stretched with kBroadcast. Throws when the value's shape does not broadcast to it.
Value broadcast_value(Builder& builder, const Value& value, const std::vector<int64_t>& shape,
                      std::string_view op, const SourceLocation& loc);

// `value` converted to `dtype` with kCast (itself when it already has that dtype).
Value cast_value(Builder& builder, const Value& value, ElementType dtype,
                 const SourceLocation& loc);

// An operand as a value of `dtype` and `shape`: a literal becomes a kConstant (throws when an
// integer literal does not fit `dtype`), a value is cast and broadcast.
Value materialize(Builder& builder, const Operand& operand, ElementType dtype,
                  const std::vector<int64_t>& shape, std::string_view op,
                  const SourceLocation& loc);

// "f32", "ptr<bf16>": the name of an element type in messages.
std::string dtype_str(ElementType type);

}  // namespace monotile::dsl
