// Value conversions (cast), bit reinterpretation (bitcast), pointer arithmetic (addptr, keeping the
// pointer's provenance) and MXFP4 dequantization. Casts round to nearest even; float -> int
// truncates toward zero and, where ir.h leaves out-of-range undefined, saturates (NaN -> 0) like
// the GPUs' cvt.rzi.sat.
#include <bit>
#include <cmath>
#include <limits>

#include "dsl/scalar_semantics.h"
#include "dsl/interp/ops.h"

namespace monotile::dsl::interp {
namespace {

int64_t float_to_int(ScalarType type, double value) {
  if (type == ScalarType::kI1) return value != 0 ? 1 : 0;  // NaN != 0: true
  if (std::isnan(value)) return 0;
  const double truncated = std::trunc(value);
  double low = 0, high = 0;
  switch (type) {
    case ScalarType::kI8: low = -128, high = 127; break;
    case ScalarType::kU8:
    case ScalarType::kMxfp4: low = 0, high = 255; break;
    case ScalarType::kI16: low = -32768, high = 32767; break;
    case ScalarType::kI32: low = -2147483648.0, high = 2147483647.0; break;
    case ScalarType::kU32: low = 0, high = 4294967295.0; break;
    default:
      if (truncated >= 9223372036854775807.0) return INT64_MAX;
      if (truncated <= -9223372036854775808.0) return INT64_MIN;
      return static_cast<int64_t>(truncated);
  }
  return static_cast<int64_t>(std::min(std::max(truncated, low), high));
}

absl::Status exec_cast(Frame& frame, const Op& op) {
  const ElementType from = frame.operand_type(op, 0).element;
  const ElementType to = frame.result_type(op).element;
  const Tile& in = frame.operand(op, 0);
  Tile& out = frame.result(op);
  const bool from_float = stored_as_float(from), to_float = stored_as_float(to);
  if (from_float && to_float) {
    for (size_t i = 0; i < in.floats.size(); ++i) out.floats[i] = round_float(to.scalar, in.floats[i]);
  } else if (from_float) {
    for (size_t i = 0; i < in.floats.size(); ++i) out.ints[i] = float_to_int(to.scalar, in.floats[i]);
  } else if (to_float) {
    // int -> double is exact below 2^53 (every type but extreme i64 values), then one rounding.
    for (size_t i = 0; i < in.ints.size(); ++i) {
      out.floats[i] = round_float(to.scalar, static_cast<double>(in.ints[i]));
    }
  } else if (to.pointer || from.pointer) {
    // Pointer <-> integer or pointer <-> pointer: the address, wrapped to the integer's width. A
    // pointer keeps its provenance; one made from an integer has none.
    const ScalarType target = arithmetic_type(to);
    for (size_t i = 0; i < in.ints.size(); ++i) out.ints[i] = wrap_integer(target, static_cast<uint64_t>(in.ints[i]));
    if (to.pointer && from.pointer) out.provenance = in.provenance;
  } else if (to.scalar == ScalarType::kI1) {
    for (size_t i = 0; i < in.ints.size(); ++i) out.ints[i] = in.ints[i] != 0;
  } else {
    with_integer_wrap(to.scalar, [&](auto wrap) {
      for (size_t i = 0; i < in.ints.size(); ++i) out.ints[i] = wrap(static_cast<uint64_t>(in.ints[i]));
    });
  }
  return absl::OkStatus();
}

// The dtype's bit pattern of a canonical element.
uint64_t to_bits(ScalarType type, const Tile& tile, size_t i) {
  switch (type) {
    case ScalarType::kF64: return std::bit_cast<uint64_t>(tile.floats[i]);
    case ScalarType::kF32: return std::bit_cast<uint32_t>(static_cast<float>(tile.floats[i]));
    case ScalarType::kF16: return f16_bits_from_double(tile.floats[i]);
    case ScalarType::kBf16: return bf16_bits_from_double(tile.floats[i]);
    default: {
      const int bits = scalar_type_bits(type);
      const uint64_t value = static_cast<uint64_t>(tile.ints[i]);
      return bits >= 64 ? value : value & ((uint64_t{1} << bits) - 1);
    }
  }
}

void from_bits(ScalarType type, uint64_t bits, Tile& tile, size_t i) {
  switch (type) {
    case ScalarType::kF64: tile.floats[i] = std::bit_cast<double>(bits); break;
    case ScalarType::kF32: tile.floats[i] = std::bit_cast<float>(static_cast<uint32_t>(bits)); break;
    case ScalarType::kF16: tile.floats[i] = f16_bits_to_double(static_cast<uint16_t>(bits)); break;
    case ScalarType::kBf16: tile.floats[i] = bf16_bits_to_double(static_cast<uint16_t>(bits)); break;
    default: tile.ints[i] = wrap_integer(type, bits); break;
  }
}

absl::Status exec_bitcast(Frame& frame, const Op& op) {
  const ScalarType from = arithmetic_type(frame.operand_type(op, 0).element);
  const ScalarType to = arithmetic_type(frame.result_type(op).element);
  const Tile& in = frame.operand(op, 0);
  Tile& out = frame.result(op);
  const size_t n = in.size();
  for (size_t i = 0; i < n; ++i) from_bits(to, to_bits(from, in, i), out, i);
  if (frame.operand_type(op, 0).element.pointer && frame.result_type(op).element.pointer) {
    out.provenance = in.provenance;
  }
  return absl::OkStatus();
}

absl::Status exec_addptr(Frame& frame, const Op& op) {
  const auto element_bytes = static_cast<uint64_t>(scalar_type_bytes(frame.operand_type(op, 0).element.scalar));
  const Tile& pointers = frame.operand(op, 0);
  const std::vector<int64_t>& base = pointers.ints;
  const std::vector<int64_t>& offset = frame.operand(op, 1).ints;
  Tile& result = frame.result(op);
  std::vector<int64_t>& out = result.ints;
  for (size_t i = 0; i < base.size(); ++i) {
    out[i] = static_cast<int64_t>(static_cast<uint64_t>(base[i]) + static_cast<uint64_t>(offset[i]) * element_bytes);
  }
  result.provenance = pointers.provenance;  // an offset never changes the pointer's buffer
  return absl::OkStatus();
}

// e2m1: sign, 2 exponent bits, 1 mantissa bit.
constexpr double kE2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

absl::Status exec_dequant_mxfp4(Frame& frame, const Op& op) {
  const Type& out_type = frame.result_type(op);
  const int64_t n = out_type.shape.back();
  if (n % 32 != 0) return op_error(frame, op, "the last dim must be a multiple of 32, got " + out_type.str());
  const std::vector<int64_t>& packed = frame.operand(op, 0).ints;
  const std::vector<int64_t>& scales = frame.operand(op, 1).ints;
  std::vector<double>& out = frame.result(op).floats;
  const int64_t rows = out_type.num_elements() / n;
  const ScalarType type = out_type.element.scalar;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const auto byte = static_cast<uint32_t>(packed[static_cast<size_t>(r * (n / 2) + j / 2)]);
      const uint32_t nibble = (j % 2 == 0) ? (byte & 0xf) : (byte >> 4);  // low nibble first
      const auto scale = static_cast<int>(scales[static_cast<size_t>(r * (n / 32) + j / 32)]);
      double value = kE2m1[nibble & 7] * std::ldexp(1.0, scale - 127);
      if (nibble & 8) value = -value;
      if (scale == 255) value = std::nan("");
      out[static_cast<size_t>(r * n + j)] = round_float(type, value);
    }
  }
  return absl::OkStatus();
}

// Each byte's two values (low nibble first) times 2^(code - 127), rounded to bf16 (exact but where
// they overflow to infinity; code 255 is NaN), as one word: the low nibble's bf16 in the low half.
absl::Status exec_mxfp4_pairs(Frame& frame, const Op& op) {
  const std::vector<int64_t>& packed = frame.operand(op, 0).ints;
  const std::vector<int64_t>& codes = frame.operand(op, 1).ints;
  std::vector<int64_t>& out = frame.result(op).ints;
  for (size_t i = 0; i < packed.size(); ++i) {
    const auto byte = static_cast<uint32_t>(packed[i]) & 0xffu;
    const auto code = static_cast<int>(static_cast<uint32_t>(codes[i]) & 0xffu);
    uint32_t word = 0;
    for (int half = 0; half < 2; ++half) {
      const uint32_t nibble = (byte >> (4 * half)) & 0xfu;
      double value = kE2m1[nibble & 7] * std::ldexp(1.0, code - 127);
      if (nibble & 8) value = -value;
      if (code == 255) value = std::nan("");
      word |= static_cast<uint32_t>(bf16_bits_from_double(value)) << (16 * half);
    }
    out[i] = static_cast<int32_t>(word);
  }
  return absl::OkStatus();
}

// Word j's nibbles i and i + 4 (its elements i and i + 4 of 8) times 2^(code - 127) as the bf16 pair in
// word 4j + i, each rounded as exec_mxfp4_pairs' values. With a scale bias b (attrs.int_value < 0),
// times 2^(code - 127 + b) for codes up to 128 - b, and the value (as e2m1 x 2^-126) times infinity
// for larger ones, as dsl/dot.h says.
absl::Status exec_mxfp4_word_pairs(Frame& frame, const Op& op) {
  const std::vector<int64_t>& words = frame.operand(op, 0).ints;
  const std::vector<int64_t>& codes = frame.operand(op, 1).ints;
  std::vector<int64_t>& out = frame.result(op).ints;
  const int bias = static_cast<int>(op.attrs.int_value);
  for (size_t j = 0; j < words.size(); ++j) {
    const auto word = static_cast<uint32_t>(words[j]);
    const auto code = static_cast<int>(static_cast<uint32_t>(codes[j]) & 0xffu);
    for (int i = 0; i < 4; ++i) {
      uint32_t pair = 0;
      for (int half = 0; half < 2; ++half) {
        const uint32_t nibble = (word >> (4 * (i + 4 * half))) & 0xfu;
        double value = kE2m1[nibble & 7] * std::ldexp(1.0, code - 127 + bias);
        if (bias != 0 && code - 1 + bias > 127) value = kE2m1[nibble & 7] * std::numeric_limits<double>::infinity();
        if (nibble & 8) value = -value;
        if (bias == 0 && code == 255) value = std::nan("");
        pair |= static_cast<uint32_t>(bf16_bits_from_double(value)) << (16 * half);
      }
      out[4 * j + i] = static_cast<int32_t>(pair);
    }
  }
  return absl::OkStatus();
}

// Word j of each row (i32) into elements 2j (its low half) and 2j + 1 (its high half), bf16.
absl::Status exec_unpack_bf16(Frame& frame, const Op& op) {
  const std::vector<int64_t>& words = frame.operand(op, 0).ints;
  std::vector<double>& out = frame.result(op).floats;
  for (size_t i = 0; i < words.size(); ++i) {
    const auto word = static_cast<uint32_t>(words[i]);
    out[2 * i] = bf16_bits_to_double(static_cast<uint16_t>(word & 0xffffu));
    out[2 * i + 1] = bf16_bits_to_double(static_cast<uint16_t>(word >> 16));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status exec_convert(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kCast: return exec_cast(frame, op);
    case OpCode::kBitcast: return exec_bitcast(frame, op);
    case OpCode::kAddPtr: return exec_addptr(frame, op);
    case OpCode::kDequantMxfp4: return exec_dequant_mxfp4(frame, op);
    case OpCode::kMxfp4Pairs: return exec_mxfp4_pairs(frame, op);
    case OpCode::kUnpackBf16: return exec_unpack_bf16(frame, op);
    case OpCode::kMxfp4WordPairs: return exec_mxfp4_word_pairs(frame, op);
    default: return op_error(frame, op, "not a conversion op");
  }
}

}  // namespace monotile::dsl::interp
