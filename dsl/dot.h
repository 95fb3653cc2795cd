// Matrix products and the MXFP4 dequantization that feeds them.
#pragma once

#include <optional>
#include "support/source_location.h"

#include "dsl/dtype.h"
#include "dsl/value.h"

namespace monotile::dsl {

// acc + a @ b with a [M, K] and b [K, N] both f16, both bf16 or both f32; accumulates in f32 and
// returns f32 [M, N]. acc (f32 [M, N]) defaults to zeros. With a Target given to the Builder, K is
// checked against the matrix unit here; otherwise when the program is verified for a target.
Value dot(const Value& a, const Value& b, std::optional<Value> acc = std::nullopt,
          SourceLocation loc = SourceLocation::current());

// MXFP4 to floats: packed mxfp4 [..., n/2] (two e2m1 per byte, low nibble first) and scales u8
// [..., n/32] (ue8m0 exponents, one per 32 values) -> `out` [..., n] (f32, bf16 or f16).
Value dequant_mxfp4(const Value& packed, const Value& scales, ElementType out = bf16,
                    SourceLocation loc = SourceLocation::current());

// Each packed MXFP4 byte (u8 or mxfp4; two e2m1 values, low nibble first) times 2^(code - 127) for
// its u8 ue8m0 `code` (same shape: a scale per byte, so a group's code repeats over its 16 bytes),
// as one i32 word holding the two values as bf16, the low nibble's in the low half. Exact, as every
// MXFP4 value is a bf16, but where a value overflows to infinity; code 255 gives NaN. With
// unpack_bf16 it feeds a dot: on NVIDIA sm_80 and up both halves are decoded and scaled at once.
Value mxfp4_pairs(const Value& packed, const Value& codes, SourceLocation loc = SourceLocation::current());

// Four packed MXFP4 bytes at once: `words` i32 [..., n] holds them as read from memory (byte b in
// bits 8b..8b+7, so nibble i, bits 4i..4i+3, is the word's element i of 8), `codes` u8 [..., n] one
// ue8m0 code per word. Word 4j + i of the result i32 [..., 4n] holds word j's elements i (low half)
// and i + 4 (high half) times 2^(code - 127) as bf16, exact as mxfp4_pairs' (overflow to infinity,
// code 255 NaN). With unpack_bf16 the values arrive in the order 0 4 1 5 2 6 3 7 of each word's
// eight, so a dot's other operand must hold its K in that order too; in exchange each word decodes
// without taking its bytes apart (NVIDIA sm_80 and up: about 3 integer operations and one or two
// bf16x2 multiplies a word of the result, against 6 and a byte's extraction for mxfp4_pairs). Each
// result word's thread holds its source word where the layouts allow, so nothing moves.
//
// The most negative scale_bias of mxfp4_word_pairs: 2^b stays a normal bf16.
inline constexpr int kMinMxfp4ScaleBias = -126;

// How NVIDIA's decode (sm_80 and up) puts a result word's two nibbles (its elements i and i + 4)
// into bf16's places: sign to bits 15 and 31, exponent and mantissa to 6..8 and 22..24 (e2m1 x
// 2^-126, then the scale's multiplies). Both halves move by the same shift, so one 32-bit operation
// moves both; the sign and the magnitude need shifts 6 apart. The values are the same either way;
// only the instructions differ (docs/perf.md, SASS of K2's expert loops).
enum class Mxfp4Placement {
  // Elements 0 and 1 (both fields move left): the two nibbles kept by a mask, one integer multiply
  // by 2^s + 2^(s + 6) adds the two shifted copies (they cannot overlap, so nothing carries), one
  // mask. Element 3 (its sign already in place): the word shifted right by 6, two masks. Element 2:
  // one select of the word's sign bits and that shifted word's magnitude bits, a shift, a mask.
  // 12 integer operations a packed word.
  kCopies,
  // Each shifted copy made by its own shift, then two masks: 4 integer operations a result word, 3
  // for element 3: 15 a packed word (kept to time the two side by side).
  kShifts,
};

// With `scale_bias` b (-126..-1) the values are scaled by 2^b too, at one multiply a word instead of
// two (a GEMV undoes b on its f32 sums): word 4j + i holds bf16(e2m1 x 2^(code - 127 + b)), rounded
// to nearest even (so values below bf16's smallest subnormal become zero), for codes up to 128 - b.
// Larger codes, 255 included, are outside that multiply's range: each value is then infinity with
// its sign, and NaN where it is zero. A caller that may meet such codes checks them first
// (mxfp4_gemv.h does, per task) and takes b = 0 for them.
// `placement` chooses NVIDIA's instructions only (Mxfp4Placement); the interpreter and other
// targets compute the same values whichever it is.
Value mxfp4_word_pairs(const Value& words, const Value& codes, int scale_bias = 0,
                       Mxfp4Placement placement = Mxfp4Placement::kCopies,
                       SourceLocation loc = SourceLocation::current());

// i32 words [..., n] as bf16 [..., 2n]: word j's low half is element 2j, its high half 2j + 1 (the
// order of bf16 pairs in memory read as words). Where each word's thread keeps both halves it moves
// nothing: a dot's operand built this way comes straight from the words' registers.
Value unpack_bf16(const Value& words, SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
