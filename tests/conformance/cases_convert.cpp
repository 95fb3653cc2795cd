// Casts between every kind of dtype pair (float rounding to nearest even, float -> int truncation,
// int -> float rounding, integer wrap and extension, to/from i1), bitcasts, and MXFP4 dequant.
// All exact: a conversion has one right answer.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "dsl/interp/float16.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;
using Pairs = std::vector<std::pair<ScalarType, ScalarType>>;

// Arbitrary bit patterns of the tensor's width (every exponent, subnormals, infinities); NaNs
// are made quiet, since a signaling NaN may be quieted by any float move. With
// `canonical_16bit_nans`, f16/bf16 NaNs become the canonical 0x7fff, since GPUs hold 16-bit floats
// widened to f32 and narrowing a NaN drops its sign and payload (ir.h).
Generator random_bits(bool canonical_16bit_nans = false) {
  return [canonical_16bit_nans](HostTensor& tensor, Rng& rng) {
    std::uniform_int_distribution<uint64_t> dist;
    const size_t width = static_cast<size_t>(scalar_type_bytes(tensor.dtype()));
    std::span<std::byte> bytes = tensor.bytes();
    for (int64_t i = 0; i < tensor.size(); ++i) {
      uint64_t bits = dist(rng);
      if (tensor.dtype() == kF32 && ((bits >> 23) & 0xff) == 0xff) bits |= 1u << 22;
      if (tensor.dtype() == kF16 && ((bits >> 10) & 0x1f) == 0x1f) bits |= 1u << 9;
      if (tensor.dtype() == kBf16 && ((bits >> 7) & 0xff) == 0xff) bits |= 1u << 6;
      if (tensor.dtype() == kF64 && ((bits >> 52) & 0x7ff) == 0x7ff) bits |= uint64_t{1} << 51;
      const bool nan16 = (tensor.dtype() == kF16 && ((bits >> 10) & 0x1f) == 0x1f && (bits & 0x3ff)) ||
                         (tensor.dtype() == kBf16 && ((bits >> 7) & 0xff) == 0xff && (bits & 0x7f));
      if (canonical_16bit_nans && nan16) bits = 0x7fff;
      std::memcpy(bytes.data() + static_cast<size_t>(i) * width, &bits, width);
    }
  };
}

Case cast_case(ScalarType from, ScalarType to, Generator generate) {
  ElementwiseSpec spec;
  spec.op = "cast_to_" + std::string(scalar_type_name(to));
  spec.in = from, spec.out = to, spec.shape = {32, 64};
  spec.generate_a = std::move(generate);
  spec.tolerance = Tolerance::exact();
  if (is_float(to)) {
    // HostTensor::set rounds the exact double to the target once (nearest even).
    spec.float_unary = [](double x) { return x; };
  } else if (is_float(from)) {
    spec.float_unary = [to](double x) { return to == kI1 ? (x != 0 ? 1.0 : 0.0) : std::trunc(x); };
  } else {
    spec.int_unary = [to](int64_t x) { return to == kI1 ? int64_t{x != 0} : x; };  // set_int wraps
  }
  return unary_case(spec, [to](Value x) { return x.to(ElementType{to}); });
}

Case bitcast_case(ScalarType from, ScalarType to) {
  Case c;
  c.name = case_name("bitcast_to_" + std::string(scalar_type_name(to)), from, {16, 32});
  c.build = [from, to] {
    Builder b("bitcast");
    Value x = b.arg("x", ptr(ElementType{from})), y = b.arg("y", ptr(ElementType{to}));
    Value offsets = flat_offsets({16, 32});
    store(y + offsets, load(x + offsets).bitcast(ElementType{to}));
    return b.finish();
  };
  c.tensors = {{"x", from, {16, 32}, Role::kInput, random_bits(/*canonical_16bit_nans=*/true), std::nullopt},
               {"y", to, {16, 32}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [](Tensors& t) {
    std::span<const std::byte> in = t["x"].bytes();
    std::span<std::byte> out = t["y"].bytes();
    std::memcpy(out.data(), in.data(), in.size());
  };
  return c;
}

// Element (r, j) of `packed` [rows, n/2] (two e2m1 a byte, low nibble first) times its scale from
// `scales` [rows, n/32] (2^(code - 127); NaN for code 255), in float64.
double mxfp4_element(Tensors& t, int64_t n, int64_t r, int64_t j) {
  static constexpr double kE2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const int64_t byte = t["packed"].get_int(r * (n / 2) + j / 2);
  const int64_t nibble = j % 2 == 0 ? (byte & 0xf) : (byte >> 4);
  const int64_t scale = t["scales"].get_int(r * (n / 32) + j / 32);
  if (scale == 255) return std::nan("");
  return (nibble & 8 ? -1 : 1) * kE2m1[nibble & 7] * std::ldexp(1.0, static_cast<int>(scale) - 127);
}

// packed mxfp4 [rows, n/2] and scales u8 [rows, n/32] -> out [rows, n].
Case dequant_case(ScalarType out_type, int64_t rows, int64_t n) {
  Case c;
  c.name = case_name("dequant_mxfp4", out_type, {rows, n});
  c.build = [=] {
    Builder b("dequant");
    Value packed = b.arg("packed", ptr(mxfp4)), scales = b.arg("scales", ptr(u8));
    Value out = b.arg("out", ptr(ElementType{out_type}));
    Value q = load(packed + flat_offsets({rows, n / 2}));
    Value s = load(scales + flat_offsets({rows, n / 32}));
    store(out + flat_offsets({rows, n}), dequant_mxfp4(q, s, ElementType{out_type}));
    return b.finish();
  };
  Generator scales = [](HostTensor& tensor, Rng& rng) {
    std::uniform_int_distribution<int> exponent(112, 142), rare(0, 15);
    for (int64_t i = 0; i < tensor.size(); ++i) tensor.set_int(i, rare(rng) == 0 ? 255 : exponent(rng));
  };
  c.tensors = {{"packed", kMxfp4, {rows, n / 2}, Role::kInput, integers(0, 255), std::nullopt},
               {"scales", kU8, {rows, n / 32}, Role::kInput, scales, std::nullopt},
               {"out", out_type, {rows, n}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [rows, n](Tensors& t) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        t["out"].set(r * n + j, mxfp4_element(t, n, r, j));
      }
    }
  };
  return c;
}

// i32 words [16, 32] -> bf16 [16, 64] (unpack_bf16): each word's halves, low first; any bits (NaNs
// canonical: the store keeps bits, but a NaN's payload is not promised).
Case unpack_bf16_case() {
  Case c;
  c.name = case_name("unpack_bf16", kI32, {16, 32});
  c.build = [] {
    Builder b("unpack_bf16");
    Value words = b.arg("words", ptr(i32)), out = b.arg("out", ptr(bf16));
    store(out + flat_offsets({16, 64}), unpack_bf16(load(words + flat_offsets({16, 32}))));
    return b.finish();
  };
  Generator halves = [](HostTensor& tensor, Rng& rng) {
    std::uniform_int_distribution<uint32_t> bits(0, 0xffff);
    auto half = [&] {
      uint32_t h = bits(rng);
      return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0 ? 0x7fc0u : h;  // a NaN made canonical
    };
    for (int64_t i = 0; i < tensor.size(); ++i) tensor.set_int(i, static_cast<int32_t>(half() | (half() << 16)));
  };
  c.tensors = {{"words", kI32, {16, 32}, Role::kInput, halves, std::nullopt},
               {"out", kBf16, {16, 64}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < 16 * 32; ++i) {
      const auto word = static_cast<uint32_t>(t["words"].get_int(i));
      t["out"].set(2 * i, dsl::interp::bf16_bits_to_double(static_cast<uint16_t>(word & 0xffffu)));
      t["out"].set(2 * i + 1, dsl::interp::bf16_bits_to_double(static_cast<uint16_t>(word >> 16)));
    }
  };
  return c;
}

// Scale codes 0 (subnormal scale), 1, the usual range, up to overflow (254), and 255 (NaN).
Generator scale_codes() {
  return [](HostTensor& tensor, Rng& rng) {
    std::uniform_int_distribution<int> exponent(100, 150), pick(0, 15);
    for (int64_t i = 0; i < tensor.size(); ++i) {
      const int p = pick(rng);
      tensor.set_int(i, p == 0 ? 0 : p == 1 ? 1 : p == 2 ? 254 : p == 3 ? 255 : p == 4 ? 200 : exponent(rng));
    }
  };
}

// packed u8 [rows, n/2] with a code per byte (u8 [rows, n/32] read at byte / 16) -> the bf16 pairs
// of mxfp4_pairs, unpacked: out bf16 [rows, n]. Codes 0 (subnormal scale), 1, the usual range, up to
// overflow (254), and 255 (NaN).
Case mxfp4_pairs_case(int64_t rows, int64_t n) {
  Case c;
  c.name = case_name("mxfp4_pairs", kU8, {rows, n / 2});
  c.build = [=] {
    Builder b("mxfp4_pairs");
    Value packed = b.arg("packed", ptr(u8)), scales = b.arg("scales", ptr(u8));
    Value out = b.arg("out", ptr(bf16));
    auto r = col(arange(0, static_cast<int>(rows))), j = row(arange(0, static_cast<int>(n / 2)));
    Value q = load(packed + r * static_cast<int>(n / 2) + j);
    Value s = load(scales + r * static_cast<int>(n / 32) + (j >> 4));
    store(out + flat_offsets({rows, n}), unpack_bf16(mxfp4_pairs(q, s)));
    return b.finish();
  };
  c.tensors = {{"packed", kU8, {rows, n / 2}, Role::kInput, integers(0, 255), std::nullopt},
               {"scales", kU8, {rows, n / 32}, Role::kInput, scale_codes(), std::nullopt},
               {"out", kBf16, {rows, n}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [rows, n](Tensors& t) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        // exact but where it overflows
        t["out"].set(r * n + j, dsl::interp::round_to_bf16(mxfp4_element(t, n, r, j)));
      }
    }
  };
  return c;
}

// packed words i32 [rows, n/8] with a code per word (u8 [rows, n/32] read at word / 4) -> the bf16
// pairs of mxfp4_word_pairs, unpacked: out bf16 [rows, n], each word's eight values in the order
// 0 4 1 5 2 6 3 7. Codes as mxfp4_pairs_case's. Either placement (dsl/dot.h) gives the same values.
Case mxfp4_word_pairs_case(int64_t rows, int64_t n, int bias = 0, Mxfp4Placement placement = Mxfp4Placement::kCopies) {
  Case c;
  c.name = case_name(absl::StrCat(bias == 0 ? "mxfp4_word_pairs" : "mxfp4_word_pairs_bias" + std::to_string(-bias),
                                  placement == Mxfp4Placement::kShifts ? "_shifts" : ""),
                     kI32, {rows, n / 8});
  c.build = [=] {
    Builder b("mxfp4_word_pairs");
    Value packed = b.arg("words", ptr(i32)), scales = b.arg("scales", ptr(u8));
    Value out = b.arg("out", ptr(bf16));
    auto r = col(arange(0, static_cast<int>(rows))), j = row(arange(0, static_cast<int>(n / 8)));
    Value q = load(packed + r * static_cast<int>(n / 8) + j);
    Value s = load(scales + r * static_cast<int>(n / 32) + (j >> 2));
    store(out + flat_offsets({rows, n}), unpack_bf16(mxfp4_word_pairs(q, s, bias, placement)));
    return b.finish();
  };
  c.tensors = {{"words", kI32, {rows, n / 8}, Role::kInput, integers(INT32_MIN, INT32_MAX), std::nullopt},
               {"scales", kU8, {rows, n / 32}, Role::kInput, scale_codes(), std::nullopt},
               {"out", kBf16, {rows, n}, Role::kOutput, nullptr, Tolerance::exact()}};
  // With a bias: the values times 2^bias for codes up to 128 - bias, infinity times e2m1 above (NaN
  // for zeros), so codes 200 and 254 of scale_codes() land beyond the range at -64 and within it at -126.
  c.reference = [rows, n, bias](Tensors& t) {
    static constexpr double kE2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        const auto word = static_cast<uint32_t>(t["words"].get_int(r * (n / 8) + j / 8));
        const int64_t e = j % 8, nibble = (word >> (4 * e)) & 0xf;
        const int scale = static_cast<int>(t["scales"].get_int(r * (n / 32) + j / 32));
        const double sign = nibble & 8 ? -1 : 1;
        double value = (scale == 255 && bias == 0) ? std::nan("") : sign * kE2m1[nibble & 7] * std::ldexp(1.0, scale - 127 + bias);
        if (bias != 0 && scale - 1 + bias > 127) value = sign * kE2m1[nibble & 7] * std::numeric_limits<double>::infinity();
        // element e of its word's eight lands at 2 (e % 4) + e / 4
        t["out"].set(r * n + j - e + 2 * (e % 4) + e / 4, dsl::interp::round_to_bf16(value));
      }
    }
  };
  return c;
}

}  // namespace

std::vector<Case> convert_cases() {
  std::vector<Case> cases;
  // float -> float: arbitrary patterns exercise ties, subnormals, overflow to infinity and NaN.
  for (auto [from, to] : Pairs{{kF32, kBf16}, {kF32, kF16}, {kF64, kF32}, {kF64, kBf16}, {kF64, kF16},
                          {kBf16, kF32}, {kF16, kF32}, {kBf16, kF16}, {kF16, kBf16}, {kF32, kF64}}) {
    cases.push_back(cast_case(from, to, random_bits()));
  }
  // float -> int: truncation toward zero of in-range values.
  cases.push_back(cast_case(kF32, kI32, uniform(-2.0e9, 2.0e9)));
  cases.push_back(cast_case(kF32, kI8, uniform(-128.9, 127.9)));
  cases.push_back(cast_case(kF32, kU32, uniform(0, 4.0e9)));
  cases.push_back(cast_case(kF64, kI64, uniform(-9.0e18, 9.0e18)));
  cases.push_back(cast_case(kBf16, kI32, uniform(-1.0e9, 1.0e9)));
  cases.push_back(cast_case(kF16, kI16, uniform(-32000, 32000)));
  cases.push_back(cast_case(kF32, kI1, with_specials(integers(-2, 2), 0.2)));
  // int -> float: full-range integers round to nearest even.
  cases.push_back(cast_case(kI32, kF32, integers(INT32_MIN, INT32_MAX)));
  cases.push_back(cast_case(kI32, kBf16, integers(INT32_MIN, INT32_MAX)));
  cases.push_back(cast_case(kI32, kF16, integers(-70000, 70000)));
  cases.push_back(cast_case(kU32, kF32, integers(0, UINT32_MAX)));
  cases.push_back(cast_case(kI64, kF64, integers(INT64_MIN, INT64_MAX)));
  cases.push_back(cast_case(kI8, kF32, integers(-128, 127)));
  cases.push_back(cast_case(kI1, kF32, integers(0, 1)));
  // int -> int: wrap when narrowing, sign or zero extension when widening, != 0 for i1.
  for (auto [from, to] : Pairs{{kI32, kI8}, {kI8, kI32}, {kU32, kI64}, {kI64, kI32}, {kI32, kU32},
                          {kU8, kI32}, {kI16, kI8}, {kI1, kI32}, {kI32, kI1}, {kI64, kU32}}) {
    Generator values = from == kI1 ? integers(0, 1)
                       : from == kI8 ? integers(-128, 127)
                       : from == kU8 ? integers(0, 255)
                       : from == kI16 ? integers(-32768, 32767)
                       : from == kU32 ? integers(0, UINT32_MAX)
                       : from == kI64 ? integers(INT64_MIN, INT64_MAX)
                                      : integers(INT32_MIN, INT32_MAX);
    cases.push_back(cast_case(from, to, values));
  }
  for (auto [from, to] : Pairs{{kF32, kI32}, {kI32, kF32}, {kF32, kU32}, {kBf16, kI16}, {kF16, kI16},
                          {kI16, kBf16}, {kF64, kI64}, {kI64, kF64}}) {
    cases.push_back(bitcast_case(from, to));
  }
  for (ScalarType out : {kF32, kBf16, kF16}) cases.push_back(dequant_case(out, 16, 64));
  cases.push_back(dequant_case(kF32, 4, 256));
  cases.push_back(unpack_bf16_case());
  cases.push_back(mxfp4_pairs_case(16, 64));
  cases.push_back(mxfp4_pairs_case(8, 256));
  cases.push_back(mxfp4_word_pairs_case(16, 64));
  cases.push_back(mxfp4_word_pairs_case(8, 256));
  cases.push_back(mxfp4_word_pairs_case(16, 64, -64));
  cases.push_back(mxfp4_word_pairs_case(8, 256, -126));
  cases.push_back(mxfp4_word_pairs_case(16, 64, 0, Mxfp4Placement::kShifts));
  cases.push_back(mxfp4_word_pairs_case(16, 64, -64, Mxfp4Placement::kShifts));
  return cases;
}

}  // namespace monotile::conformance
