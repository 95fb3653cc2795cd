// Creation ops: each checks its arguments and emits one op (full of a Value broadcasts it).
#include "dsl/creation.h"

#include <limits>

#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/promote.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

Value grid_query(OpCode code, int axis, const SourceLocation& loc) {
  std::string op(op_name(code));
  Builder& builder = Builder::current(op, loc);
  if (axis < 0 || axis > 2) {
    throw Error(at(loc), op, "grid axis " + std::to_string(axis) + " is out of range", "0, 1 or 2",
                std::to_string(axis), "the grid has three axes: 0, 1 and 2");
  }
  Attrs attrs;
  attrs.axis = axis;
  return builder.emit1(code, {}, std::move(attrs), Type{ElementType{ScalarType::kI32}, {}}, loc);
}

}  // namespace

Value program_id(int axis, SourceLocation loc) {
  return grid_query(OpCode::kProgramId, axis, loc);
}

Value num_programs(int axis, SourceLocation loc) {
  return grid_query(OpCode::kNumPrograms, axis, loc);
}

Value arange(int64_t start, int64_t end, SourceLocation loc) {
  Builder& builder = Builder::current("arange", loc);
  if (end <= start) {
    throw Error(at(loc), "arange",
                "the range [" + std::to_string(start) + ", " + std::to_string(end) + ") is empty",
                "start < end", std::to_string(start) + " >= " + std::to_string(end),
                "arange(start, end) counts from start up to end - 1");
  }
  if (start < std::numeric_limits<int32_t>::min() || end - 1 > std::numeric_limits<int32_t>::max()) {
    throw Error(at(loc), "arange", "the range does not fit i32", "values within i32",
                "[" + std::to_string(start) + ", " + std::to_string(end) + ")",
                "add a large base as a scalar: base + arange(0, n)");
  }
  Type type{ElementType{ScalarType::kI32}, {end - start}};
  Builder::check_layout(type, "arange", loc);
  Attrs attrs;
  attrs.ints = {start, end};
  return builder.emit1(OpCode::kArange, {}, std::move(attrs), std::move(type), loc);
}

Value full(const std::vector<int64_t>& shape, const Operand& value, ElementType dtype,
           SourceLocation loc) {
  Builder& builder = Builder::current("full", loc);
  for (int64_t dim : shape) {
    if (dim < 1) {
      throw Error(at(loc), "full", "shape " + shape_str(shape) + " has a dimension below 1",
                  "dimensions >= 1", shape_str(shape), "use a scalar shape {} for a single value");
    }
  }
  if (dtype.pointer || dtype.scalar == ScalarType::kMxfp4) {
    throw Error(at(loc), "full", "full of " + dtype_str(dtype), "a number dtype", dtype_str(dtype),
                "fill a numeric tile; pointers come from arguments");
  }
  Builder::check_layout(Type{dtype, shape}, "full", loc);
  if (value.is_value() && !builder.type_of(value.value(), "full", loc).is_scalar()) {
    throw Error(at(loc), "full", "the fill value is a tile, not a scalar", "a scalar",
                builder.type_of(value.value(), "full", loc).str(), "use broadcast_to for tiles");
  }
  return materialize(builder, value, dtype, shape, "full", loc);
}

Value zeros(const std::vector<int64_t>& shape, ElementType dtype, SourceLocation loc) {
  return full(shape, Operand(0, loc), dtype, loc);
}

Value full_like(const Value& x, const Operand& value, SourceLocation loc) {
  Type type = Builder::current("full_like", loc).type_of(x, "full_like", loc);
  return full(type.shape, value, type.element, loc);
}

Value zeros_like(const Value& x, SourceLocation loc) {
  return full_like(x, Operand(0, loc), loc);
}

}  // namespace monotile::dsl
