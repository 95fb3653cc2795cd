// Reductions, scans, sort and top-k: axis and dtype checks, promotion of narrow integers, one op.
#include "dsl/reduce.h"

#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/promote.h"
#include "dsl/shape_ops.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

Type numeric_tile(Builder& builder, const Value& x, std::string_view op, bool allow_bool,
                  const SourceLocation& loc) {
  Type type = builder.type_of(x, op, loc);
  ScalarType scalar = type.element.scalar;
  if (type.element.pointer || scalar == ScalarType::kMxfp4 || (!allow_bool && scalar == ScalarType::kI1)) {
    throw Error(at(loc), std::string(op),
                std::string(op) + " does not take " + dtype_str(type.element) + " tiles",
                allow_bool ? "integer, i1 or float tiles" : "integer (not i1) or float tiles",
                dtype_str(type.element),
                scalar == ScalarType::kMxfp4 ? "dequantize first with dequant_mxfp4"
                                             : "load the data, or convert it, e.g. x.to(i32)");
  }
  if (type.is_scalar()) {
    throw Error(at(loc), std::string(op), std::string(op) + " of a scalar", "a tile", type.str(),
                "reductions, scans and sorts work along a tile's axis");
  }
  return type;
}

int checked_axis(int axis, const Type& type, std::string_view op, const SourceLocation& loc) {
  int rank = static_cast<int>(type.shape.size());
  if (axis < -rank || axis >= rank) {
    throw Error(at(loc), std::string(op),
                "axis " + std::to_string(axis) + " is out of range for " + type.str(),
                std::to_string(-rank) + ".." + std::to_string(rank - 1), std::to_string(axis),
                "axes count from 0; -1 is the last");
  }
  return axis < 0 ? axis + rank : axis;
}

// Narrow integers sum in i32 (Triton's rule), so that sum(mask) counts.
Value widen_for_sum(Builder& builder, const Value& x, const SourceLocation& loc) {
  ScalarType scalar = builder.type_of(x, "sum", loc).element.scalar;
  bool narrow = scalar == ScalarType::kI1 || scalar == ScalarType::kI8 || scalar == ScalarType::kU8 ||
                scalar == ScalarType::kI16;
  return narrow ? cast_value(builder, x, ElementType{ScalarType::kI32}, loc) : x;
}

Block combine_region(Builder& builder, ElementType element, const Combine& combine,
                     std::string_view op, const SourceLocation& loc) {
  Type scalar{element, {}};
  return builder.region(
      op, {scalar, scalar},
      [&](const std::vector<Value>& args) { return std::vector<Value>{combine(args[0], args[1])}; },
      [&](const std::vector<Value>& yielded) {
        Type got = builder.type_of(yielded[0], op, loc);
        if (got != scalar) {
          throw Error(at(loc), std::string(op),
                      "the combine function returns " + got.str() + ", not " + scalar.str(),
                      scalar.str(), got.str(),
                      "combine two scalars of the tile's dtype into one of the same dtype");
        }
      },
      loc);
}

Value reduce_along(OpCode code, ReduceKind kind, const Value& input, std::optional<int> axis,
                   bool keep_dims, const Combine* combine, std::string_view op,
                   const SourceLocation& loc) {
  Builder& builder = Builder::current(op, loc);
  Type type = numeric_tile(builder, input, op, code == OpCode::kReduce && kind != ReduceKind::kMax &&
                                                  kind != ReduceKind::kMin, loc);
  if (kind == ReduceKind::kXorSum && !is_integer(type.element.scalar)) {
    throw Error(at(loc), std::string(op), "xor_sum does not take " + dtype_str(type.element) + " tiles",
                "integer tiles", dtype_str(type.element), "reinterpret floats with x.bitcast(u32)");
  }
  Value x = kind == ReduceKind::kSum && code == OpCode::kReduce ? widen_for_sum(builder, input, loc)
                                                                : input;
  int along = 0;
  if (axis) {
    along = checked_axis(*axis, type, op, loc);
  } else if (type.shape.size() > 1) {
    x = reshape(x, {type.num_elements()}, loc);
  }
  Type source = builder.type_of(x, op, loc);
  Type result = source;
  result.shape.erase(result.shape.begin() + along);
  if (code == OpCode::kArgReduce) result.element = ElementType{ScalarType::kI32};
  Attrs attrs;
  attrs.axis = along;
  attrs.reduce = kind;
  std::vector<Block> regions;
  if (combine) regions.push_back(combine_region(builder, source.element, *combine, op, loc));
  Value reduced = builder.emit(code, {x}, std::move(attrs), {result}, loc, std::move(regions)).front();
  return keep_dims && axis ? expand_dims(reduced, along, loc) : reduced;
}

Value scan_along(ReduceKind kind, const Value& input, int axis, bool reverse,
                 const Combine* combine, std::string_view op, const SourceLocation& loc) {
  Builder& builder = Builder::current(op, loc);
  Type type = numeric_tile(builder, input, op, kind == ReduceKind::kSum, loc);
  Value x = kind == ReduceKind::kSum ? widen_for_sum(builder, input, loc) : input;
  Attrs attrs;
  attrs.axis = checked_axis(axis, type, op, loc);
  attrs.reduce = kind;
  attrs.reverse = reverse;
  Type result = builder.type_of(x, op, loc);
  std::vector<Block> regions;
  if (combine) regions.push_back(combine_region(builder, result.element, *combine, op, loc));
  return builder.emit(OpCode::kScan, {x}, std::move(attrs), {result}, loc, std::move(regions)).front();
}

}  // namespace

Value sum(const Value& x, std::optional<int> axis, bool keep_dims, SourceLocation loc) {
  return reduce_along(OpCode::kReduce, ReduceKind::kSum, x, axis, keep_dims, nullptr, "sum", loc);
}
Value max(const Value& x, std::optional<int> axis, bool keep_dims, SourceLocation loc) {
  return reduce_along(OpCode::kReduce, ReduceKind::kMax, x, axis, keep_dims, nullptr, "max", loc);
}
Value min(const Value& x, std::optional<int> axis, bool keep_dims, SourceLocation loc) {
  return reduce_along(OpCode::kReduce, ReduceKind::kMin, x, axis, keep_dims, nullptr, "min", loc);
}
Value xor_sum(const Value& x, std::optional<int> axis, bool keep_dims, SourceLocation loc) {
  return reduce_along(OpCode::kReduce, ReduceKind::kXorSum, x, axis, keep_dims, nullptr, "xor_sum", loc);
}
Value argmax(const Value& x, int axis, bool keep_dims, SourceLocation loc) {
  return reduce_along(OpCode::kArgReduce, ReduceKind::kMax, x, axis, keep_dims, nullptr, "argmax", loc);
}
Value argmin(const Value& x, int axis, bool keep_dims, SourceLocation loc) {
  return reduce_along(OpCode::kArgReduce, ReduceKind::kMin, x, axis, keep_dims, nullptr, "argmin", loc);
}
Value reduce(const Value& x, int axis, const Combine& combine, bool keep_dims, SourceLocation loc) {
  return reduce_along(OpCode::kReduce, ReduceKind::kCustom, x, axis, keep_dims, &combine, "reduce", loc);
}

Value cumsum(const Value& x, int axis, bool reverse, SourceLocation loc) {
  return scan_along(ReduceKind::kSum, x, axis, reverse, nullptr, "cumsum", loc);
}
Value associative_scan(const Value& x, int axis, const Combine& combine, bool reverse,
                       SourceLocation loc) {
  return scan_along(ReduceKind::kCustom, x, axis, reverse, &combine, "associative_scan", loc);
}

Sorted sort(const Value& x, int axis, bool descending, SourceLocation loc) {
  Builder& builder = Builder::current("sort", loc);
  Type type = numeric_tile(builder, x, "sort", true, loc);
  Attrs attrs;
  attrs.axis = checked_axis(axis, type, "sort", loc);
  attrs.descending = descending;
  Type indices{ElementType{ScalarType::kI32}, type.shape};
  std::vector<Value> results = builder.emit(OpCode::kSort, {x}, std::move(attrs), {type, indices}, loc);
  return {results[0], results[1]};
}

Sorted topk(const Value& x, int64_t k, bool descending, SourceLocation loc) {
  Builder& builder = Builder::current("topk", loc);
  Type type = numeric_tile(builder, x, "topk", true, loc);
  int64_t size = type.shape.back();
  if (k < 1 || k > size) {
    throw Error(at(loc), "topk",
                "k = " + std::to_string(k) + " is not within the last axis of " + type.str(),
                "1 <= k <= " + std::to_string(size), std::to_string(k),
                k < 1 ? "ask for at least one element" : "k cannot exceed the number of candidates");
  }
  Type values = type;
  values.shape.back() = k;
  Type indices{ElementType{ScalarType::kI32}, values.shape};
  Attrs attrs;
  attrs.axis = static_cast<int>(type.shape.size()) - 1;
  attrs.k = k;
  attrs.descending = descending;
  std::vector<Value> results = builder.emit(OpCode::kTopK, {x}, std::move(attrs), {values, indices}, loc);
  return {results[0], results[1]};
}

}  // namespace monotile::dsl
