// dot, dequant_mxfp4, mxfp4_pairs and unpack_bf16: shape chaining and dtype checks, the target's
// matrix-unit rule.
#include "dsl/dot.h"

#include "dsl/builder.h"
#include "dsl/creation.h"
#include "dsl/error.h"
#include "dsl/matrix_rules.h"
#include "dsl/promote.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

}  // namespace

Value dot(const Value& a, const Value& b, std::optional<Value> acc, SourceLocation loc) {
  Builder& builder = Builder::current("dot", loc);
  Type ta = builder.type_of(a, "dot", loc), tb = builder.type_of(b, "dot", loc);
  if (ta.shape.size() != 2 || tb.shape.size() != 2) {
    throw Error(at(loc), "dot", "dot takes 2-D tiles: lhs " + ta.str() + ", rhs " + tb.str(),
                "lhs [M, K] and rhs [K, N]", ta.str() + " and " + tb.str(),
                "reshape or expand_dims to 2-D; for a vector use broadcasting and sum");
  }
  if (ta.shape[1] != tb.shape[0]) {
    throw Error(at(loc), "dot",
                "inner dimensions differ: lhs " + shape_str(ta.shape) + ", rhs " + shape_str(tb.shape),
                "rhs [" + std::to_string(ta.shape[1]) + ", N]", shape_str(tb.shape),
                "dot(a, b) multiplies a [M, K] by b [K, N]; transpose one with trans(x)");
  }
  ScalarType operand = ta.element.scalar;
  bool supported = !ta.element.pointer && (operand == ScalarType::kF16 ||
                                           operand == ScalarType::kBf16 || operand == ScalarType::kF32);
  if (!supported || ta.element != tb.element) {
    throw Error(at(loc), "dot",
                "dot operands are " + dtype_str(ta.element) + " and " + dtype_str(tb.element),
                "both f16, both bf16 or both f32", dtype_str(ta.element) + " and " + dtype_str(tb.element),
                "convert both, e.g. a.to(bf16) and b.to(bf16)");
  }
  Type result{ElementType{ScalarType::kF32}, {ta.shape[0], tb.shape[1]}};
  if (builder.target()) {
    DotProblem problem = dot_problem(*builder.target(), operand, ta.shape[1]);
    if (!problem.what.empty()) {
      throw Error(at(loc), "dot", problem.what, problem.expected, problem.actual, problem.hint);
    }
  }
  Value accumulator;
  if (acc) {
    Type tc = builder.type_of(*acc, "dot", loc);
    if (tc != result) {
      throw Error(at(loc), "dot", "the accumulator is " + tc.str() + ", not " + result.str(),
                  result.str(), tc.str(), "accumulate in f32 with the result's shape [M, N]");
    }
    accumulator = *acc;
  } else {
    accumulator = zeros(result.shape, result.element, loc);
  }
  return builder.emit1(OpCode::kDot, {a, b, accumulator}, {}, std::move(result), loc);
}

Value dequant_mxfp4(const Value& packed, const Value& scales, ElementType out, SourceLocation loc) {
  Builder& builder = Builder::current("dequant_mxfp4", loc);
  Type tp = builder.type_of(packed, "dequant_mxfp4", loc);
  Type ts = builder.type_of(scales, "dequant_mxfp4", loc);
  if (tp.element != ElementType{ScalarType::kMxfp4} || ts.element != ElementType{ScalarType::kU8}) {
    throw Error(at(loc), "dequant_mxfp4",
                "operands are " + tp.str() + " and " + ts.str() + ", not mxfp4 values and u8 scales",
                "mxfp4[..., n/2] and u8[..., n/32]", tp.str() + " and " + ts.str(),
                "load packed bytes through ptr(mxfp4) and scales through ptr(u8)");
  }
  if (!is_float(out.scalar) || out.scalar == ScalarType::kF64 || out.pointer) {
    throw Error(at(loc), "dequant_mxfp4", "dequant_mxfp4 does not produce " + dtype_str(out),
                "f32, bf16 or f16", dtype_str(out), "dequantize to bf16 or f32");
  }
  bool chained = !tp.is_scalar() && tp.shape.size() == ts.shape.size() &&
                 ts.shape.back() * 16 == tp.shape.back();
  for (size_t i = 0; chained && i + 1 < tp.shape.size(); ++i) chained = tp.shape[i] == ts.shape[i];
  if (!chained) {
    throw Error(at(loc), "dequant_mxfp4",
                "scales " + shape_str(ts.shape) + " do not cover packed " + shape_str(tp.shape),
                "one scale per 16 packed bytes (32 values) with equal leading dims",
                shape_str(tp.shape) + " and " + shape_str(ts.shape),
                "for n values, packed is [..., n/2] and scales [..., n/32]");
  }
  Type result{out, tp.shape};
  result.shape.back() *= 2;
  return builder.emit1(OpCode::kDequantMxfp4, {packed, scales}, {}, std::move(result), loc);
}

Value mxfp4_pairs(const Value& packed, const Value& codes, SourceLocation loc) {
  Builder& builder = Builder::current("mxfp4_pairs", loc);
  Type tp = builder.type_of(packed, "mxfp4_pairs", loc);
  Type tc = builder.type_of(codes, "mxfp4_pairs", loc);
  const bool bytes = tp.element == ElementType{ScalarType::kU8} || tp.element == ElementType{ScalarType::kMxfp4};
  if (!bytes || tc.element != ElementType{ScalarType::kU8}) {
    throw Error(at(loc), "mxfp4_pairs", "operands are " + tp.str() + " and " + tc.str() + ", not packed bytes and u8 codes",
                "u8 (or mxfp4) bytes and u8 codes", tp.str() + " and " + tc.str(),
                "load the packed weights and their scale codes as u8");
  }
  if (tp.shape != tc.shape) {
    throw Error(at(loc), "mxfp4_pairs", "codes " + shape_str(tc.shape) + " differ from packed " + shape_str(tp.shape),
                "one code per packed byte: " + shape_str(tp.shape), shape_str(tc.shape),
                "load each byte's code (a group's 16 bytes read the same one), e.g. scales + (byte >> 4)");
  }
  return builder.emit1(OpCode::kMxfp4Pairs, {packed, codes}, {}, Type{ElementType{ScalarType::kI32}, tp.shape}, loc);
}

Value mxfp4_word_pairs(const Value& words, const Value& codes, int scale_bias, Mxfp4Placement placement,
                       SourceLocation loc) {
  Builder& builder = Builder::current("mxfp4_word_pairs", loc);
  if (scale_bias < kMinMxfp4ScaleBias || scale_bias > 0) {
    throw Error(at(loc), "mxfp4_word_pairs", "scale_bias " + std::to_string(scale_bias) + " is out of range",
                std::to_string(kMinMxfp4ScaleBias) + "..0", std::to_string(scale_bias),
                "0 scales exactly by 2^(code - 127); a negative bias b scales by 2^(code - 127 + b) for codes up to 128 - b");
  }
  Type tw = builder.type_of(words, "mxfp4_word_pairs", loc);
  Type tc = builder.type_of(codes, "mxfp4_word_pairs", loc);
  if (tw.element != ElementType{ScalarType::kI32} || tw.is_scalar() || tc.element != ElementType{ScalarType::kU8}) {
    throw Error(at(loc), "mxfp4_word_pairs", "operands are " + tw.str() + " and " + tc.str() + ", not packed words and u8 codes",
                "i32[..., n] words and u8[..., n] codes", tw.str() + " and " + tc.str(),
                "read the packed bytes through a ptr(i32) view, four a word, and their scale codes as u8");
  }
  if (tw.shape != tc.shape) {
    throw Error(at(loc), "mxfp4_word_pairs", "codes " + shape_str(tc.shape) + " differ from words " + shape_str(tw.shape),
                "one code per word: " + shape_str(tw.shape), shape_str(tc.shape),
                "load each word's code (a group's 4 words read the same one), e.g. scales + (word >> 2)");
  }
  Type result{ElementType{ScalarType::kI32}, tw.shape};
  result.shape.back() *= 4;
  Attrs attrs;
  attrs.int_value = scale_bias;
  // The default placement adds nothing, so that the text (and hash) of a program written before the
  // choice existed stays the same.
  if (placement != Mxfp4Placement::kCopies) attrs.ints = {static_cast<int64_t>(placement)};
  return builder.emit1(OpCode::kMxfp4WordPairs, {words, codes}, attrs, std::move(result), loc);
}

Value unpack_bf16(const Value& words, SourceLocation loc) {
  Builder& builder = Builder::current("unpack_bf16", loc);
  Type tw = builder.type_of(words, "unpack_bf16", loc);
  if (tw.element != ElementType{ScalarType::kI32} || tw.is_scalar()) {
    throw Error(at(loc), "unpack_bf16", "unpack_bf16 takes a tile of i32 words, not " + tw.str(), "i32[..., n]",
                tw.str(), "read bf16 pairs through a ptr(i32) view, or make them with mxfp4_pairs");
  }
  Type result{ElementType{ScalarType::kBf16}, tw.shape};
  result.shape.back() *= 2;
  return builder.emit1(OpCode::kUnpackBf16, {words}, {}, std::move(result), loc);
}

}  // namespace monotile::dsl
