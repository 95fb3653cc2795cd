// Shape ops: argument checks, then one IR op each.
#include "dsl/shape_ops.h"

#include <algorithm>

#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/promote.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

// `axis` normalized into [0, size); throws naming `op` when out of range.
int normalize_axis(int axis, int size, std::string_view op, const SourceLocation& loc) {
  if (axis < -size || axis >= size) {
    throw Error(at(loc), std::string(op),
                "axis " + std::to_string(axis) + " is out of range for " + std::to_string(size) +
                    " positions",
                std::to_string(-size) + ".." + std::to_string(size - 1), std::to_string(axis),
                "negative axes count from the end (-1 is the last)");
  }
  return axis < 0 ? axis + size : axis;
}

}  // namespace

Value expand_dims(const Value& x, int axis, SourceLocation loc) {
  Builder& builder = Builder::current("expand_dims", loc);
  Type type = builder.type_of(x, "expand_dims", loc);
  int rank = static_cast<int>(type.shape.size());
  axis = normalize_axis(axis, rank + 1, "expand_dims", loc);
  type.shape.insert(type.shape.begin() + axis, 1);
  Attrs attrs;
  attrs.axis = axis;
  return builder.emit1(OpCode::kExpandDims, {x}, std::move(attrs), std::move(type), loc);
}

Value row(const Value& x, SourceLocation loc) { return expand_dims(x, 0, loc); }
Value col(const Value& x, SourceLocation loc) {
  Type type = Builder::current("col", loc).type_of(x, "col", loc);
  if (type.shape.size() != 1) {
    throw Error(at(loc), "col", "col takes a 1-D tile, not " + type.str(), "a 1-D tile", type.str(),
                "use expand_dims(x, axis) for other ranks");
  }
  return expand_dims(x, 1, loc);
}

Value broadcast_to(const Value& x, const std::vector<int64_t>& shape, SourceLocation loc) {
  Builder& builder = Builder::current("broadcast_to", loc);
  Builder::check_layout(Type{builder.type_of(x, "broadcast_to", loc).element, shape}, "broadcast_to", loc);
  return broadcast_value(builder, x, shape, "broadcast_to", loc);
}

Value reshape(const Value& x, std::vector<int64_t> shape, SourceLocation loc) {
  Builder& builder = Builder::current("reshape", loc);
  Type type = builder.type_of(x, "reshape", loc);
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (shape[i] < 1) {
      throw Error(at(loc), "reshape", "shape " + shape_str(shape) + " has an invalid dimension",
                  "dimensions >= 1 (one may be -1)", shape_str(shape),
                  "give every dim a positive size, or -1 for one dim to infer it");
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0 && known > 0 && type.num_elements() % known == 0) {
    shape[inferred] = type.num_elements() / known;
  }
  Type result{type.element, shape};
  if (inferred >= 0 ? shape[inferred] == -1 : result.num_elements() != type.num_elements()) {
    throw Error(at(loc), "reshape",
                "cannot reshape " + shape_str(type.shape) + " (" + std::to_string(type.num_elements()) +
                    " elements) to " + shape_str(shape),
                std::to_string(type.num_elements()) + " elements", shape_str(shape),
                "the element count must stay the same");
  }
  if (result == type) return x;
  Builder::check_layout(result, "reshape", loc);
  return builder.emit1(OpCode::kReshape, {x}, {}, std::move(result), loc);
}

Value trans(const Value& x, std::vector<int64_t> perm, SourceLocation loc) {
  Builder& builder = Builder::current("trans", loc);
  Type type = builder.type_of(x, "trans", loc);
  int64_t rank = static_cast<int64_t>(type.shape.size());
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t i = 0; valid && i < rank; ++i) valid = sorted[i] == i;
  if (!valid) {
    throw Error(at(loc), "trans",
                "permutation " + shape_str(perm) + " does not permute the dims of " + type.str(),
                "a permutation of 0.." + std::to_string(rank - 1), shape_str(perm),
                "list every dim once, e.g. {1, 0} for a 2-D transpose");
  }
  Type result{type.element, {}};
  for (int64_t axis : perm) result.shape.push_back(type.shape[axis]);
  Attrs attrs;
  attrs.ints = perm;
  return builder.emit1(OpCode::kTrans, {x}, std::move(attrs), std::move(result), loc);
}

Value join(const Value& a, const Value& b, SourceLocation loc) {
  Builder& builder = Builder::current("join", loc);
  Type ta = builder.type_of(a, "join", loc), tb = builder.type_of(b, "join", loc);
  if (ta != tb) {
    throw Error(at(loc), "join", "operands differ: " + ta.str() + " and " + tb.str(), ta.str(),
                tb.str(), "join takes two values of one type; cast or broadcast one first");
  }
  ta.shape.push_back(2);
  return builder.emit1(OpCode::kJoin, {a, b}, {}, std::move(ta), loc);
}

std::pair<Value, Value> split(const Value& x, SourceLocation loc) {
  Builder& builder = Builder::current("split", loc);
  Type type = builder.type_of(x, "split", loc);
  if (type.shape.empty() || type.shape.back() != 2) {
    throw Error(at(loc), "split", "split needs a last dim of 2, not " + type.str(), "[..., 2]",
                shape_str(type.shape), "reshape to [..., 2] first, e.g. reshape(x, {n / 2, 2})");
  }
  type.shape.pop_back();
  std::vector<Value> halves = builder.emit(OpCode::kSplit, {x}, {}, {type, type}, loc);
  return {halves[0], halves[1]};
}

Value cat(const Value& a, const Value& b, int axis, SourceLocation loc) {
  Builder& builder = Builder::current("cat", loc);
  Type ta = builder.type_of(a, "cat", loc), tb = builder.type_of(b, "cat", loc);
  if (ta.is_scalar() || tb.is_scalar()) {
    throw Error(at(loc), "cat", "cat of a scalar", "tiles", ta.is_scalar() ? ta.str() : tb.str(),
                "make a tile with full({1}, x, dtype) first");
  }
  axis = normalize_axis(axis, static_cast<int>(ta.shape.size()), "cat", loc);
  Type expected = ta;
  expected.shape[axis] = tb.shape.size() == ta.shape.size() ? tb.shape[axis] : -1;
  if (expected != tb) {
    throw Error(at(loc), "cat",
                "operands " + ta.str() + " and " + tb.str() + " differ outside axis " +
                    std::to_string(axis),
                "same dtype and dims except along the axis", ta.str() + " and " + tb.str(),
                "cast or broadcast one operand first");
  }
  Type result = ta;
  result.shape[axis] += tb.shape[axis];
  Builder::check_layout(result, "cat", loc);
  Attrs attrs;
  attrs.axis = axis;
  return builder.emit1(OpCode::kCat, {a, b}, std::move(attrs), std::move(result), loc);
}

}  // namespace monotile::dsl
