// One rule per op code. Each rule returns a short description of the first violation.
#include "dsl/op_rules.h"

#include <algorithm>
#include <cmath>

#include "dsl/dot.h"
#include "dsl/scalar_semantics.h"
#include "dsl/scalar_values.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl {
namespace {

const ElementType kBool{ScalarType::kI1};
const ElementType kI32{ScalarType::kI32};
const Type kBoolScalar{kBool, {}};

bool numeric(ElementType t) { return !t.pointer && t.scalar != ScalarType::kMxfp4; }
bool arithmetic(ElementType t) { return numeric(t) && t.scalar != ScalarType::kI1; }
bool integral(ElementType t) { return !t.pointer && is_integer(t.scalar); }
bool floating(ElementType t) { return !t.pointer && is_float(t.scalar); }

class Rule {
 public:
  Rule(const Program& program, const Op& op) : program_(program), op_(op) {}

  const Type& in(size_t i) const { return program_.type_of(op_.operands.at(i)); }
  const Type& out(size_t i) const { return program_.type_of(op_.results.at(i)); }
  size_t ins() const { return op_.operands.size(); }

  std::string counts(size_t operands, size_t results, size_t regions = 0) const {
    if (op_.operands.size() != operands) {
      return "expected " + std::to_string(operands) + " operands, got " + std::to_string(op_.operands.size());
    }
    if (op_.results.size() != results) {
      return "expected " + std::to_string(results) + " results, got " + std::to_string(op_.results.size());
    }
    if (op_.regions.size() != regions) {
      return "expected " + std::to_string(regions) + " regions, got " + std::to_string(op_.regions.size());
    }
    return "";
  }

  std::string layout() const {
    for (ValueId id : op_.results) {
      for (int64_t dim : program_.type_of(id).shape) {
        if (!is_layout_size(dim)) {
          return "result " + program_.type_of(id).str() + " has a dimension that is neither a power of two nor a multiple of " +
                 std::to_string(kLayoutQuantum);
        }
      }
    }
    return "";
  }

  // Region `index` has arguments of `args` and yields values of `yields`.
  std::string region(size_t index, const std::vector<Type>& args, const std::vector<Type>& yields) const {
    const Block& block = op_.regions.at(index);
    if (block.args.size() != args.size()) return "region " + std::to_string(index) + " has the wrong number of arguments";
    for (size_t i = 0; i < args.size(); ++i) {
      if (program_.type_of(block.args[i]) != args[i]) {
        return "region " + std::to_string(index) + " argument " + std::to_string(i) + " is " +
               program_.type_of(block.args[i]).str() + ", expected " + args[i].str();
      }
    }
    const Op& yield = block.ops.back();
    if (yield.operands.size() != yields.size()) return "region " + std::to_string(index) + " yields the wrong number of values";
    for (size_t i = 0; i < yields.size(); ++i) {
      if (program_.type_of(yield.operands[i]) != yields[i]) {
        return "region " + std::to_string(index) + " yields " + program_.type_of(yield.operands[i]).str() +
               " at position " + std::to_string(i) + ", expected " + yields[i].str();
      }
    }
    return "";
  }

  std::string check() const;

 private:
  std::string elementwise(size_t arity, bool (*accepts)(ElementType), bool compare) const;
  std::string memory_access() const;
  std::string across() const;
  std::string control() const;
  std::string shape_op() const;

  const Program& program_;
  const Op& op_;
};

#define MT_RULE(expr)                  \
  do {                                 \
    std::string problem_ = (expr);     \
    if (!problem_.empty()) return problem_; \
  } while (0)
#define MT_REQUIRE(cond, text) \
  do {                         \
    if (!(cond)) return text;  \
  } while (0)

std::string Rule::elementwise(size_t arity, bool (*accepts)(ElementType), bool compare) const {
  MT_RULE(counts(arity, 1));
  for (size_t i = 1; i < arity; ++i) MT_REQUIRE(in(i) == in(0), "operands differ: " + in(0).str() + " and " + in(i).str());
  MT_REQUIRE(accepts(in(0).element), "does not take " + in(0).str());
  Type expected = compare ? Type{kBool, in(0).shape} : in(0);
  MT_REQUIRE(out(0) == expected, "result is " + out(0).str() + ", expected " + expected.str());
  return "";
}

std::string Rule::shape_op() const {
  const Attrs& a = op_.attrs;
  switch (op_.code) {
    case OpCode::kBroadcast: {
      MT_RULE(counts(1, 1));
      MT_REQUIRE(in(0).element == out(0).element, "changes the element type");
      bool ok = in(0).is_scalar() || in(0).shape.size() == out(0).shape.size();
      for (size_t i = 0; ok && !in(0).is_scalar() && i < in(0).shape.size(); ++i) {
        ok = in(0).shape[i] == out(0).shape[i] || in(0).shape[i] == 1;
      }
      MT_REQUIRE(ok, in(0).str() + " does not broadcast to " + out(0).str());
      return "";
    }
    case OpCode::kExpandDims: {
      MT_RULE(counts(1, 1));
      MT_REQUIRE(a.axis >= 0 && static_cast<size_t>(a.axis) <= in(0).shape.size(), "axis out of range");
      Type expected = in(0);
      expected.shape.insert(expected.shape.begin() + a.axis, 1);
      MT_REQUIRE(out(0) == expected, "result is " + out(0).str() + ", expected " + expected.str());
      return "";
    }
    case OpCode::kReshape:
      MT_RULE(counts(1, 1));
      MT_REQUIRE(in(0).element == out(0).element && in(0).num_elements() == out(0).num_elements(),
                 "cannot reshape " + in(0).str() + " to " + out(0).str());
      return "";
    case OpCode::kTrans: {
      MT_RULE(counts(1, 1));
      std::vector<int64_t> sorted = a.ints;
      std::sort(sorted.begin(), sorted.end());
      bool ok = sorted.size() == in(0).shape.size();
      for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
      MT_REQUIRE(ok, "perm " + shape_str(a.ints) + " is not a permutation");
      Type expected{in(0).element, {}};
      for (int64_t axis : a.ints) expected.shape.push_back(in(0).shape[axis]);
      MT_REQUIRE(out(0) == expected, "result is " + out(0).str() + ", expected " + expected.str());
      return "";
    }
    case OpCode::kJoin: {
      MT_RULE(counts(2, 1));
      MT_REQUIRE(in(0) == in(1), "operands differ");
      Type expected = in(0);
      expected.shape.push_back(2);
      MT_REQUIRE(out(0) == expected, "result is " + out(0).str() + ", expected " + expected.str());
      return "";
    }
    case OpCode::kSplit: {
      MT_RULE(counts(1, 2));
      MT_REQUIRE(!in(0).shape.empty() && in(0).shape.back() == 2, "last dim is not 2");
      Type expected = in(0);
      expected.shape.pop_back();
      MT_REQUIRE(out(0) == expected && out(1) == expected, "results are not " + expected.str());
      return "";
    }
    case OpCode::kCat: {
      MT_RULE(counts(2, 1));
      MT_REQUIRE(in(0).element == in(1).element && in(0).shape.size() == in(1).shape.size() &&
                     a.axis >= 0 && static_cast<size_t>(a.axis) < in(0).shape.size(),
                 "operands do not concatenate");
      Type expected = in(0);
      expected.shape[a.axis] += in(1).shape[a.axis];
      Type other = in(1);
      other.shape[a.axis] = in(0).shape[a.axis];
      MT_REQUIRE(other == in(0) && out(0) == expected, "result is " + out(0).str() + ", expected " + expected.str());
      return "";
    }
    default: return "not a shape op";
  }
}

std::string Rule::memory_access() const {
  const Attrs& a = op_.attrs;
  auto pointer = [&]() -> std::string {
    MT_REQUIRE(ins() >= 1 && in(0).element.pointer, "the address is not a pointer");
    return "";
  };
  auto data = [&](size_t i) -> std::string {
    Type expected{ElementType{in(0).element.scalar, false}, in(0).shape};
    MT_REQUIRE(in(i) == expected, "operand " + std::to_string(i) + " is " + in(i).str() + ", expected " + expected.str());
    return "";
  };
  auto mask = [&](size_t i) -> std::string {
    MT_REQUIRE(in(i) == (Type{kBool, in(0).shape}), "mask is " + in(i).str() + ", expected i1" + shape_str(in(0).shape));
    return "";
  };
  size_t masks = a.has_mask ? 1 : 0;
  switch (op_.code) {
    case OpCode::kLoad: {
      MT_RULE(counts(1 + masks + (a.has_other ? 1 : 0), 1));
      MT_RULE(pointer());
      MT_REQUIRE(!a.has_other || a.has_mask, "other without a mask");
      if (a.has_mask) MT_RULE(mask(1));
      if (a.has_other) MT_RULE(data(2));
      MT_REQUIRE(a.order == MemOrder::kPlain || a.order == MemOrder::kRelaxed || a.order == MemOrder::kAcquire,
                 "a load cannot have order " + std::string(order_name(a.order)));
      Type expected{ElementType{in(0).element.scalar, false}, in(0).shape};
      MT_REQUIRE(out(0) == expected, "result is " + out(0).str() + ", expected " + expected.str());
      return "";
    }
    case OpCode::kStore:
      MT_RULE(counts(2 + masks, 0));
      MT_RULE(pointer());
      MT_RULE(data(1));
      if (a.has_mask) MT_RULE(mask(2));
      MT_REQUIRE(a.order == MemOrder::kPlain || a.order == MemOrder::kRelaxed || a.order == MemOrder::kRelease,
                 "a store cannot have order " + std::string(order_name(a.order)));
      return "";
    case OpCode::kPrefetch:
      MT_RULE(counts(1 + masks, 0));
      MT_RULE(pointer());
      if (a.has_mask) MT_RULE(mask(1));
      return "";
    case OpCode::kAtomicRmw:
    case OpCode::kAtomicCas: {
      size_t values = op_.code == OpCode::kAtomicCas ? 2 : 1;
      MT_RULE(counts(1 + values + masks, 1));
      MT_RULE(pointer());
      for (size_t i = 1; i <= values; ++i) MT_RULE(data(i));
      if (a.has_mask) MT_RULE(mask(1 + values));
      MT_REQUIRE(a.order != MemOrder::kPlain, "an atomic needs an order other than plain");
      MT_REQUIRE(out(0) == in(1), "result is " + out(0).str() + ", expected " + in(1).str());
      MT_REQUIRE(op_.code == OpCode::kAtomicCas ? atomic_cas_takes(in(1).element.scalar)
                                                 : atomic_takes(a.atomic, in(1).element.scalar),
                 std::string(op_.code == OpCode::kAtomicCas ? "atomic_cas" : "atomic_" + std::string(atomic_name(a.atomic))) +
                     " does not take " + std::string(scalar_type_name(in(1).element.scalar)) + " memory");
      return "";
    }
    case OpCode::kWaitUntil: {
      // The plain form (flag, value, timeout) -> i1; the second form (..., [abort]) -> (i32, value).
      const bool with_abort = op_.operands.size() == 4;
      const bool second_form = op_.results.size() == 2 || with_abort;
      MT_RULE(counts(with_abort ? 4 : 3, second_form ? 2 : 1));
      MT_REQUIRE(in(0).is_scalar() && in(0).element.pointer && is_integer(in(0).element.scalar),
                 "the flag is " + in(0).str() + ", expected a scalar pointer to an integer");
      MT_RULE(data(1));
      MT_REQUIRE(in(2) == (Type{ElementType{ScalarType::kI64}, {}}), "the timeout is " + in(2).str() + ", expected i64");
      if (with_abort) {
        MT_REQUIRE(in(3).is_scalar() && in(3).element.pointer && is_integer(in(3).element.scalar),
                   "the abort word is " + in(3).str() + ", expected a scalar pointer to an integer");
      }
      if (!second_form) {
        MT_REQUIRE(out(0) == kBoolScalar, "result is " + out(0).str() + ", expected i1");
        return "";
      }
      MT_REQUIRE(out(0) == (Type{ElementType{ScalarType::kI32}, {}}), "the outcome is " + out(0).str() + ", expected i32");
      Type seen{ElementType{in(0).element.scalar, false}, {}};
      MT_REQUIRE(out(1) == seen, "the value seen is " + out(1).str() + ", expected " + seen.str());
      return "";
    }
    default: return "not a memory access";
  }
}

std::string Rule::across() const {
  const Attrs& a = op_.attrs;
  bool custom = a.reduce == ReduceKind::kCustom;
  MT_RULE(counts(1, op_.code == OpCode::kSort || op_.code == OpCode::kTopK ? 2 : 1,
                 (op_.code == OpCode::kReduce || op_.code == OpCode::kScan) && custom ? 1 : 0));
  MT_REQUIRE(numeric(in(0).element) && !in(0).is_scalar(), "does not take " + in(0).str());
  MT_REQUIRE(a.axis >= 0 && static_cast<size_t>(a.axis) < in(0).shape.size(), "axis out of range");
  Type removed = in(0);
  removed.shape.erase(removed.shape.begin() + a.axis);
  Type scalar{in(0).element, {}};
  switch (op_.code) {
    case OpCode::kReduce:
      MT_REQUIRE(a.reduce != ReduceKind::kXorSum || integral(in(0).element), "xor_sum of a float tile");
      MT_REQUIRE(out(0) == removed, "result is " + out(0).str() + ", expected " + removed.str());
      if (custom) MT_RULE(region(0, {scalar, scalar}, {scalar}));
      return "";
    case OpCode::kArgReduce:
      MT_REQUIRE(a.reduce == ReduceKind::kMax || a.reduce == ReduceKind::kMin, "arg_reduce needs max or min");
      removed.element = kI32;
      MT_REQUIRE(out(0) == removed, "result is " + out(0).str() + ", expected " + removed.str());
      return "";
    case OpCode::kScan:
      MT_REQUIRE(a.reduce == ReduceKind::kSum || custom, "scan needs sum or custom");
      MT_REQUIRE(out(0) == in(0), "result is " + out(0).str() + ", expected " + in(0).str());
      if (custom) MT_RULE(region(0, {scalar, scalar}, {scalar}));
      return "";
    case OpCode::kSort:
      MT_REQUIRE(out(0) == in(0) && out(1) == (Type{kI32, in(0).shape}), "results are not values and i32 indices");
      return "";
    case OpCode::kTopK: {
      MT_REQUIRE(static_cast<size_t>(a.axis) + 1 == in(0).shape.size(), "topk works along the last axis");
      MT_REQUIRE(a.k >= 1 && a.k <= in(0).shape.back(), "k = " + std::to_string(a.k) + " is out of range");
      Type values = in(0);
      values.shape.back() = a.k;
      MT_REQUIRE(out(0) == values && out(1) == (Type{kI32, values.shape}), "results are not values and i32 indices of " + values.str());
      return "";
    }
    default: return "not an op across a tile";
  }
}

std::string Rule::control() const {
  std::vector<Type> results;
  for (ValueId id : op_.results) results.push_back(program_.type_of(id));
  switch (op_.code) {
    case OpCode::kFor: {
      MT_REQUIRE(ins() >= 3 && op_.regions.size() == 1, "expected (lo, hi, step, init...) and one region");
      MT_REQUIRE(in(0).is_scalar() && integral(in(0).element) && in(1) == in(0) && in(2) == in(0),
                 "bounds are not integer scalars of one type");
      MT_REQUIRE(results.size() == ins() - 3, "results do not match the carried values");
      std::vector<Type> args{in(0)};
      for (size_t i = 3; i < ins(); ++i) {
        MT_REQUIRE(in(i) == results[i - 3], "carried value " + std::to_string(i - 3) + " changes type");
        args.push_back(in(i));
      }
      return region(0, args, results);
    }
    case OpCode::kIf:
      MT_REQUIRE(ins() == 1 && op_.regions.size() == 2, "expected (cond) and two regions");
      MT_REQUIRE(in(0) == kBoolScalar, "the condition is " + in(0).str() + ", expected i1");
      MT_RULE(region(0, {}, results));
      return region(1, {}, results);
    case OpCode::kWhile: {
      MT_REQUIRE(op_.regions.size() == 2, "expected two regions");
      std::vector<Type> carried;
      for (size_t i = 0; i < ins(); ++i) carried.push_back(in(i));
      MT_REQUIRE(carried == results, "results do not match the carried values");
      MT_RULE(region(0, carried, {kBoolScalar}));
      return region(1, carried, carried);
    }
    default: return "not control flow";
  }
}

bool accepts_number(ElementType t) { return arithmetic(t); }
bool accepts_compare(ElementType t) { return numeric(t); }
bool accepts_integer(ElementType t) { return integral(t); }
bool accepts_shift(ElementType t) { return integral(t) && t.scalar != ScalarType::kI1; }
bool accepts_float(ElementType t) { return floating(t); }
bool accepts_umulhi(ElementType t) {
  return !t.pointer && (t.scalar == ScalarType::kI32 || t.scalar == ScalarType::kU32 || t.scalar == ScalarType::kI64);
}

std::string Rule::check() const {
  if (op_.code != OpCode::kFor && op_.code != OpCode::kIf && op_.code != OpCode::kWhile &&
      op_.code != OpCode::kReduce && op_.code != OpCode::kScan && !op_.regions.empty()) {
    return "has regions it does not take";
  }
  MT_RULE(layout());
  const Attrs& a = op_.attrs;
  switch (op_.code) {
    case OpCode::kConstant:
      MT_RULE(counts(0, 1));
      MT_REQUIRE(numeric(out(0).element), "a constant of " + out(0).str());
      // Constants hold exactly a value of their dtype, so that equal programs print equally.
      if (is_float(out(0).element.scalar)) {
        double value = a.float_value;
        MT_REQUIRE(std::isnan(value) || round_to_dtype(out(0).element.scalar, value) == value,
                   "float constant " + std::to_string(value) + " is not a " + out(0).str() + " value");
      } else {
        MT_REQUIRE(wrap_to_dtype(out(0).element.scalar, a.int_value) == a.int_value,
                   "integer constant " + std::to_string(a.int_value) + " does not fit " + out(0).str());
      }
      return "";
    case OpCode::kArange:
      MT_RULE(counts(0, 1));
      MT_REQUIRE(a.ints.size() == 2 && a.ints[0] < a.ints[1] && out(0) == (Type{kI32, {a.ints[1] - a.ints[0]}}),
                 "bounds " + shape_str(a.ints) + " do not match " + out(0).str());
      return "";
    case OpCode::kProgramId:
    case OpCode::kNumPrograms:
      MT_RULE(counts(0, 1));
      MT_REQUIRE(a.axis >= 0 && a.axis <= 2, "axis " + std::to_string(a.axis) + " is not 0, 1 or 2");
      MT_REQUIRE(out(0) == (Type{kI32, {}}), "result is not an i32 scalar");
      return "";
    case OpCode::kBroadcast:
    case OpCode::kExpandDims:
    case OpCode::kReshape:
    case OpCode::kTrans:
    case OpCode::kJoin:
    case OpCode::kSplit:
    case OpCode::kCat: return shape_op();
    case OpCode::kUnpackBf16: {
      MT_RULE(counts(1, 1));
      Type expected{ElementType{ScalarType::kBf16}, in(0).shape};
      if (!expected.is_scalar()) expected.shape.back() *= 2;
      MT_REQUIRE(in(0).element == kI32 && !in(0).is_scalar() && out(0) == expected,
                 "expected i32[..., n] -> bf16[..., 2n], got " + in(0).str() + " -> " + out(0).str());
      return "";
    }
    case OpCode::kMxfp4WordPairs: {
      MT_RULE(counts(2, 1));
      Type expected{kI32, in(0).shape};
      if (!expected.is_scalar()) expected.shape.back() *= 4;
      MT_REQUIRE(in(0).element == kI32 && !in(0).is_scalar() && in(1) == (Type{ElementType{ScalarType::kU8}, in(0).shape}) &&
                     out(0) == expected,
                 "expected i32[..., n] and u8[..., n] -> i32[..., 4n], got " + in(0).str() + " and " + in(1).str() +
                     " -> " + out(0).str());
      // The placement (dsl/dot.h Mxfp4Placement): none for kCopies, else its number.
      MT_REQUIRE(a.ints.empty() || (a.ints.size() == 1 && a.ints[0] == static_cast<int64_t>(Mxfp4Placement::kShifts)),
                 "placement " + shape_str(a.ints) + " is not one of dsl/dot.h's Mxfp4Placement");
      return "";
    }
    case OpCode::kAdd:
    case OpCode::kSub:
    case OpCode::kMul:
    case OpCode::kDiv:
    case OpCode::kRem:
    case OpCode::kMin:
    case OpCode::kMax: return elementwise(2, accepts_number, false);
    case OpCode::kAnd:
    case OpCode::kOr:
    case OpCode::kXor: return elementwise(2, accepts_integer, false);
    case OpCode::kShl:
    case OpCode::kShr: return elementwise(2, accepts_shift, false);
    case OpCode::kUmulhi: return elementwise(2, accepts_umulhi, false);
    case OpCode::kCmp: return elementwise(2, accepts_compare, true);
    case OpCode::kNeg:
    case OpCode::kAbs: return elementwise(1, accepts_number, false);
    case OpCode::kNot: return elementwise(1, accepts_integer, false);
    case OpCode::kExp:
    case OpCode::kExp2:
    case OpCode::kLog:
    case OpCode::kLog2:
    case OpCode::kSqrt:
    case OpCode::kRsqrt:
    case OpCode::kSin:
    case OpCode::kCos:
    case OpCode::kTanh:
    case OpCode::kSigmoid:
    case OpCode::kSoftplus:
    case OpCode::kErf:
    case OpCode::kFloor:
    case OpCode::kCeil: return elementwise(1, accepts_float, false);
    case OpCode::kFma: return elementwise(3, accepts_float, false);
    case OpCode::kSelect:
      MT_RULE(counts(3, 1));
      MT_REQUIRE(in(0) == (Type{kBool, in(1).shape}), "the condition is " + in(0).str());
      MT_REQUIRE(in(1) == in(2) && out(0) == in(1) && numeric(in(1).element), "operands differ");
      return "";
    case OpCode::kBitcast:
      if (in(0).element.pointer || out(0).element.pointer) {
        MT_RULE(counts(1, 1));
        MT_REQUIRE(in(0).element.pointer && out(0).element.pointer && in(0).shape == out(0).shape,
                   "a pointer reinterprets only as a pointer: " + in(0).str() + " to " + out(0).str());
        return "";
      }
      [[fallthrough]];
    case OpCode::kCast:
      MT_RULE(counts(1, 1));
      MT_REQUIRE(numeric(in(0).element) && numeric(out(0).element) && in(0).shape == out(0).shape,
                 "cannot convert " + in(0).str() + " to " + out(0).str());
      MT_REQUIRE(op_.code == OpCode::kCast ||
                     scalar_type_bits(in(0).element.scalar) == scalar_type_bits(out(0).element.scalar),
                 "bitcast changes the bit width");
      return "";
    case OpCode::kMxfp4Pairs:
      MT_RULE(counts(2, 1));
      MT_REQUIRE((in(0).element == ElementType{ScalarType::kU8} || in(0).element == ElementType{ScalarType::kMxfp4}) &&
                     in(1).element == ElementType{ScalarType::kU8} && in(1).shape == in(0).shape &&
                     out(0) == (Type{kI32, in(0).shape}),
                 "expected packed u8 or mxfp4 bytes and u8 codes of one shape -> i32");
      return "";
    case OpCode::kAddPtr:
      MT_RULE(counts(2, 1));
      MT_REQUIRE(in(0).element.pointer && integral(in(1).element) && in(1).element.scalar != ScalarType::kI1 &&
                     in(0).shape == in(1).shape && out(0) == in(0),
                 "expected a pointer and an integer offset of one shape");
      return "";
    case OpCode::kDequantMxfp4: {
      MT_RULE(counts(2, 1));
      MT_REQUIRE(in(0).element == ElementType{ScalarType::kMxfp4} && in(1).element == ElementType{ScalarType::kU8} &&
                     !in(0).is_scalar() && in(0).shape.size() == in(1).shape.size() &&
                     in(1).shape.back() * 16 == in(0).shape.back(),
                 "expected mxfp4[..., n/2] and u8[..., n/32]");
      Type expected{out(0).element, in(0).shape};
      expected.shape.back() *= 2;
      MT_REQUIRE(floating(out(0).element) && out(0) == expected, "result is " + out(0).str());
      return "";
    }
    case OpCode::kLoad:
    case OpCode::kStore:
    case OpCode::kPrefetch:
    case OpCode::kAtomicRmw:
    case OpCode::kAtomicCas:
    case OpCode::kWaitUntil: return memory_access();
    case OpCode::kFence:
      MT_RULE(counts(0, 0));
      MT_REQUIRE(a.order == MemOrder::kAcquire || a.order == MemOrder::kRelease || a.order == MemOrder::kAcqRel,
                 "a fence needs acquire, release or acq_rel");
      return "";
    case OpCode::kBarrier:
    case OpCode::kLaunchDependents:
    case OpCode::kWaitGridDependency: return counts(0, 0);
    case OpCode::kGlobalTimer:
      MT_RULE(counts(0, 1));
      MT_REQUIRE(out(0) == (Type{ElementType{ScalarType::kI64}, {}}), "result is not an i64 scalar");
      return "";
    case OpCode::kReduce:
    case OpCode::kArgReduce:
    case OpCode::kScan:
    case OpCode::kSort:
    case OpCode::kTopK: return across();
    case OpCode::kDot: {
      MT_RULE(counts(3, 1));
      const Type &x = in(0), &y = in(1);
      MT_REQUIRE(x.shape.size() == 2 && y.shape.size() == 2 && x.shape[1] == y.shape[0],
                 "shapes " + shape_str(x.shape) + " and " + shape_str(y.shape) + " do not chain");
      MT_REQUIRE(x.element == y.element && (x.element.scalar == ScalarType::kF16 || x.element.scalar == ScalarType::kBf16 ||
                                            x.element.scalar == ScalarType::kF32) && !x.element.pointer,
                 "operands are " + x.str() + " and " + y.str());
      Type expected{ElementType{ScalarType::kF32}, {x.shape[0], y.shape[1]}};
      MT_REQUIRE(in(2) == expected && out(0) == expected, "accumulator and result must be " + expected.str());
      return "";
    }
    case OpCode::kFor:
    case OpCode::kIf:
    case OpCode::kWhile: return control();
    case OpCode::kYield: return op_.results.empty() ? "" : "yield has results";
    case OpCode::kAssert:
      MT_RULE(counts(1, 0));
      MT_REQUIRE(in(0).element == kBool, "the condition is " + in(0).str());
      return "";
    case OpCode::kPrint: return op_.results.empty() ? "" : "print has results";
  }
  return "unknown op code";
}

}  // namespace

std::string check_op(const Program& program, const Op& op) { return Rule(program, op).check(); }

bool atomic_takes(AtomicKind kind, ScalarType type) {
  const bool int32_64 = type == ScalarType::kI32 || type == ScalarType::kU32 || type == ScalarType::kI64;
  const bool wide_float = type == ScalarType::kF32 || type == ScalarType::kF64;
  switch (kind) {
    case AtomicKind::kAdd:
      return int32_64 || wide_float || type == ScalarType::kF16 || type == ScalarType::kBf16;
    case AtomicKind::kMax:
    case AtomicKind::kMin:
    case AtomicKind::kXchg: return int32_64 || wide_float;
    case AtomicKind::kAnd:
    case AtomicKind::kOr:
    case AtomicKind::kXor: return int32_64;
  }
  return false;
}

bool atomic_cas_takes(ScalarType type) {
  return type == ScalarType::kI32 || type == ScalarType::kU32 || type == ScalarType::kI64;
}

}  // namespace monotile::dsl
