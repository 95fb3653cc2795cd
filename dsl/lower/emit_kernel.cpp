// Emission: prelude + signature + preamble + body, and the parameter list the launcher checks.
#include "dsl/lower/emit_kernel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dsl/lower/spelling.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

constexpr std::string_view kSharedPrelude = R"(struct mt_bf16 { unsigned short bits; };
struct mt_f16 { unsigned short bits; };
struct alignas(8) mt_u32x2 { unsigned v[2]; };
struct alignas(16) mt_u32x4 { unsigned v[4]; };
)";

constexpr std::string_view kSharedHelpers = R"(__device__ __forceinline__ float mt_round_bf16(float x) {
  return __uint_as_float((unsigned)mt_f32_to_bf16_bits(x) << 16);
}
__device__ __forceinline__ float mt_round_f16(float x) { return mt_f16_bits_to_f32(mt_f32_to_f16_bits(x)); }
// f64 -> f32 rounded to odd: an inexact result gets its last bit set. Rounding that to bf16 or f16
// (at least 2 bits narrower) then gives the f64 value rounded once; f64 -> f32 -> f16 by nearest
// twice would be off by one ulp where the first rounding lands on a half-way point.
__device__ __forceinline__ float mt_f32_round_odd(double x) {
  float f = (float)x;
  if ((double)f != x && x == x) {
    if (fabs((double)f) > fabs(x)) f = __uint_as_float(__float_as_uint(f) - 1u);
    f = __uint_as_float(__float_as_uint(f) | 1u);
  }
  return f;
}
__device__ __forceinline__ double mt_fmin(double a, double b) { return (a != a || b != b) ? a + b : fmin(a, b); }
__device__ __forceinline__ double mt_fmax(double a, double b) { return (a != a || b != b) ? a + b : fmax(a, b); }
// e^-|x| never overflows: for x < 0 the sigmoid is e^x / (1 + e^x), accurate to a few ulps down into
// the subnormals, where 1 / (1 + e^-x) is zero once e^-x overflows (x < -88.7). The reciprocal's
// argument is in [1, 2].
__device__ __forceinline__ float mt_sigmoid(float x) {
  const float e = expf(-fabsf(x));
  const float r = mt_rcp(1.0f + e);
  return x >= 0.0f ? r : e * r;
}
__device__ __forceinline__ double mt_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ __forceinline__ float mt_softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }
__device__ __forceinline__ double mt_softplus(double x) { return fmax(x, 0.0) + log1p(exp(-fabs(x))); }
// f32 sin/cos without the libraries' Payne-Hanek slow path (which needs local memory): reduction by
// pi/2 in f64 (exact enough for |x| < 1e5, graceful beyond), then Taylor series to r^15 on |r| <= pi/4.
__device__ __forceinline__ float mt_sincos(float x, int shift) {
  const double k = rint((double)x * 0.63661977236758134);
  const double r = ((double)x - k * 1.5707963267948966) - k * 6.123233995736766e-17;
  const double r2 = r * r;
  const double s = r + r * r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 +
                   r2 * (-1.0 / 39916800 + r2 * (1.0 / 6227020800.0 - r2 / 1307674368000.0))))));
  const double c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
                   r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0 - r2 / 87178291200.0))))));
  const int quadrant = ((int)(long long)k + shift) & 3;
  const double v = quadrant == 0 ? s : quadrant == 1 ? c : quadrant == 2 ? -s : -c;
  return (float)v;
}
__device__ __forceinline__ float mt_sinf(float x) { return mt_sincos(x, 0); }
__device__ __forceinline__ float mt_cosf(float x) { return mt_sincos(x, 1); }
// f64 sin/cos, likewise without the slow path: pi/2 in two parts through fma (accurate for
// |x| < 1e9), then Taylor series to r^17 / r^18 on |r| <= pi/4 (truncation below 1e-16).
__device__ __forceinline__ double mt_sincos64(double x, int shift) {
  const double k = rint(x * 0.63661977236758134);
  double r = fma(-k, 1.5707963267948966, x);
  r = fma(-k, 6.123233995736766e-17, r);
  const double r2 = r * r;
  const double s = r + r * r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 +
                   r2 * (-1.0 / 39916800 + r2 * (1.0 / 6227020800.0 + r2 * (-1.0 / 1307674368000.0 +
                   r2 * (1.0 / 355687428096000.0))))))));
  const double c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
                   r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0 + r2 * (-1.0 / 87178291200.0 +
                   r2 * (1.0 / 20922789888000.0 - r2 / 6402373705728000.0))))))));
  const int quadrant = ((int)(long long)k + shift) & 3;
  return quadrant == 0 ? s : quadrant == 1 ? c : quadrant == 2 ? -s : -c;
}
__device__ __forceinline__ double mt_sin64(double x) { return x != x || x - x != 0 ? x - x : mt_sincos64(x, 0); }
__device__ __forceinline__ double mt_cos64(double x) { return x != x || x - x != 0 ? x - x : mt_sincos64(x, 1); }
// f64 rsqrt as one division of a square root: the library's rsqrt carries a slow path that spills
// when many elements share a thread.
__device__ __forceinline__ double mt_rsqrt64(double x) { return 1.0 / sqrt(x); }
// Offset along one dim of register i: k = (i / stride) % regs; k / spt repetitions of `cover` apart.
__device__ __forceinline__ int mt_roff(int i, int stride, int spt, int regs, int cover) {
  const int k = (i / stride) % regs;
  return (k / spt) * cover + k % spt;
}
// argmax/argmin: whether (v, i) beats (best, best_i); NaN is greater than every number, ties go low.
template <typename T>
__device__ __forceinline__ bool mt_arg_better(bool is_max, T v, int i, T best, int best_i) {
  const bool v_nan = v != v, best_nan = best != best;
  if (v_nan || best_nan) {
    if (v_nan && best_nan) return i < best_i;
    return is_max ? v_nan : best_nan;
  }
  if (v == best) return i < best_i;
  return is_max ? best < v : v < best;
}
// sort/topk order: NaN greatest, ties to the lower index; index -1 marks padding, which sorts last.
// Selects only, no early returns: the lanes of a bitonic step take different cases, and branches
// there diverged (a K3 router row's 1024-wide top-k ran 84 branches a step).
template <typename T>
__device__ __forceinline__ bool mt_sort_before(bool descending, T a, int ia, T b, int ib) {
  const bool a_nan = a != a, b_nan = b != b;
  const bool by_value = descending ? b < a : a < b;
  const bool tie = (a == b) | (a_nan & b_nan);
  const bool ordered = (a_nan != b_nan) ? (descending ? a_nan : b_nan) : (tie ? ia < ib : by_value);
  return (ia >= 0) & ((ib < 0) | ordered);
}
// One compare-exchange of a bitonic step: after it `a` (the lower position) holds the element that
// sorts first when `up`, the other one otherwise.
template <typename T>
__device__ __forceinline__ void mt_bitonic_pair(bool descending, bool up, T& a, int& ia, T& b, int& ib) {
  const bool swap = up ? mt_sort_before(descending, b, ib, a, ia) : mt_sort_before(descending, a, ia, b, ib);
  const T ka = a;
  const int ja = ia;
  a = swap ? b : a;
  ia = swap ? ib : ia;
  b = swap ? ka : b;
  ib = swap ? ja : ib;
}
// The same step seen from one side, its partner's element given: `a` becomes the one of the two that
// sorts first when `take_first`, the other one otherwise.
template <typename T>
__device__ __forceinline__ void mt_bitonic_keep(bool descending, bool take_first, T& a, int& ia, T b, int ib) {
  const bool take_b = mt_sort_before(descending, a, ia, b, ib) != take_first;
  a = take_b ? b : a;
  ia = take_b ? ib : ia;
}
// A sort key's 32 bits in the order sort and topk take (unsigned order is value order): NaN
// greatest, -0 equal to +0, then IEEE order for floats; two's complement order for signed integers.
// (f16 and bf16 sit in float registers; 8- and 16-bit integers promote to int without changing
// their order.)
__device__ __forceinline__ unsigned mt_sort_bits(float v) {
  const unsigned u = v == 0.0f ? 0u : __float_as_uint(v);
  return v != v ? 0xffffffffu : u ^ ((unsigned)((int)u >> 31) | 0x80000000u);
}
__device__ __forceinline__ unsigned mt_sort_bits(int v) { return (unsigned)v ^ 0x80000000u; }
__device__ __forceinline__ unsigned mt_sort_bits(unsigned v) { return v; }
// An element and its index as one word that sorts first when it is the greater: the key's order
// bits (complemented for an ascending sort) above, then a set bit marking a real element, then the
// index counted down from the end of its line, so that on equal keys the lower index is greater
// and no two real elements are ever equal. Padding is 0: it sorts after every real element.
template <typename T>
__device__ __forceinline__ unsigned long long mt_sort_word(bool descending, T v, int index, int padded) {
  const unsigned bits = descending ? mt_sort_bits(v) : ~mt_sort_bits(v);
  return ((unsigned long long)bits << 32) | 0x80000000ull | (unsigned long long)(padded - 1 - index);
}
// Bitonic steps over such words: one unsigned compare and selects, no value, NaN or index tests.
__device__ __forceinline__ void mt_bitonic_keep_word(bool take_first, unsigned long long& a, unsigned long long b) {
  a = ((b > a) == take_first) ? b : a;
}
__device__ __forceinline__ void mt_bitonic_pair_word(bool up, unsigned long long& a, unsigned long long& b) {
  const unsigned long long first = a > b ? a : b, second = a > b ? b : a;
  a = up ? first : second;
  b = up ? second : first;
}
// One MXFP4 element: e2m1 `nibble` (sign, 2 exponent bits, 1 mantissa bit) times 2^(scale - 127).
__device__ __forceinline__ float mt_mxfp4(unsigned nibble, unsigned scale) {
  const unsigned magnitude = nibble & 7u;
  const unsigned exponent = magnitude >> 1, mantissa = magnitude & 1u;
  float value = exponent == 0 ? 0.5f * (float)mantissa
                              : (1.0f + 0.5f * (float)mantissa) * (float)(1u << (exponent - 1));
  if (nibble & 8u) value = -value;
  if (scale == 255u) return __uint_as_float(0x7fc00000u);
  const float factor = scale == 0u ? __uint_as_float(0x00400000u) : __uint_as_float(scale << 23);
  return value * factor;
}
#ifdef MT_BF16X2_FMA
// Two e2m1 values placed as bf16 bits e2m1 x 2^-126 (sign at 15 and 31, magnitude at 6..8 and
// 22..24; codes 0 and 1 subnormal) times 2^126 and times 2^(code - 127): two exact multiplies of
// both halves at once (bf16x2 FMA, NVIDIA sm_80 and up).
__device__ __forceinline__ int mt_mxfp4_scaled(unsigned raw, unsigned code) {
  const unsigned scale = code == 0u ? 0x00400040u : code == 255u ? 0x7fc07fc0u : (code << 7) * 0x00010001u;
  unsigned r;
  asm("{ .reg .b32 t; fma.rn.bf16x2 t, %1, %2, %4; fma.rn.bf16x2 %0, t, %3, %4; }"
      : "=r"(r) : "r"(raw), "r"(0x7e807e80u), "r"(scale), "r"(0x80008000u));
  return (int)r;
}
#endif
// A packed MXFP4 byte's two values (low nibble first) times 2^(code - 127) as one word of two bf16
// (the low nibble's in the low half): exact, as every MXFP4 value is a bf16, but where they
// overflow; code 255 is NaN. With bf16x2 FMA the nibbles' bits are placed and scaled by
// mt_mxfp4_scaled: 6 instructions a byte where the f32 path takes 13.
__device__ __forceinline__ int mt_mxfp4_pair(unsigned byte, unsigned code) {
#ifdef MT_BF16X2_FMA
  // Magnitudes (bits 0..2 and 4..6) to bits 6..8 and 22..24, signs (bits 3 and 7) to 15 and 31: two
  // shifted copies each, added where they cannot overlap (multiplies), then one mask.
  const unsigned magnitudes = byte * 0x00040040u;
  const unsigned signs = (byte & 0x88u) * 0x01001000u;
  return mt_mxfp4_scaled((magnitudes | signs) & 0x81c081c0u, code);
#endif
#ifndef MT_BF16X2_FMA
  const unsigned low = __float_as_uint(mt_mxfp4(byte & 15u, code)) >> 16;
  const unsigned high = __float_as_uint(mt_mxfp4((byte >> 4) & 15u, code)) >> 16;
  return (int)(low | (high << 16));
#endif
}
#ifdef MT_BF16X2_FMA
// The same values times 2^bias (bias -126..-1) at one multiply: 2^126 x 2^(code - 127) x 2^bias
// as one bf16 factor, whose exponent field code + 126 + bias saturates at 255 (infinity) for codes
// above 128 - bias (dsl/dot.h mxfp4_word_pairs). Rounded to nearest even like any product.
__device__ __forceinline__ int mt_mxfp4_biased(unsigned raw, unsigned code, int bias) {
  const unsigned exponent = min(code + (unsigned)(126 + bias), 255u);
  unsigned r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(raw), "r"(exponent * 0x00800080u), "r"(0x80008000u));
  return (int)r;
}
#endif
#ifndef MT_BF16X2_FMA
// One element of mt_mxfp4_word_pair with a bias, as bf16 bits (rounded to nearest even: values
// under bf16's smallest subnormal are not exact).
__device__ __forceinline__ unsigned mt_mxfp4_biased_bits(unsigned nibble, unsigned code, int bias) {
  if ((int)code - 1 + bias > 127) return (nibble & 7u) == 0u ? 0x7fc0u : (nibble & 8u) ? 0xff80u : 0x7f80u;
  // 2^(code - 127 + bias) as an f32 (at most 2, subnormal or zero below 2^-126): the product is
  // then exact wherever bf16's rounding can tell.
  const int k = (int)code - 127 + bias;
  const float factor = k >= -126 ? __uint_as_float((unsigned)(k + 127) << 23) : k >= -149 ? __uint_as_float(1u << (k + 149)) : 0.0f;
  const unsigned bits = __float_as_uint(mt_mxfp4(nibble, 127u) * factor);
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}
#endif
// Nibbles `which` and `which` + 4 of a packed MXFP4 word (its elements `which` and `which` + 4 of 8)
// times 2^(code - 127) as a bf16 pair, exact as mt_mxfp4_pair's; with a bias (a constant), times
// 2^(code - 127 + bias) as mt_mxfp4_biased. `which` and `placement` (dsl/dot.h Mxfp4Placement: 0
// copies, 1 shifts) are constants where it is unrolled, so the word is never taken apart into bytes:
// both nibbles move at once, sign to bits 15 and 31 and magnitude to e2m1 x 2^-126's places (6..8,
// 22..24), then the scale's multiplies.
#ifdef MT_BF16X2_FMA
__device__ __forceinline__ unsigned mt_mxfp4_word_raw(unsigned word, unsigned which, unsigned placement) {
  // Element 3's sign is already in place: one shift brings its magnitude, two masks keep the fields.
  if (which == 3u) return (word & 0x80008000u) | ((word >> 6) & 0x01c001c0u);
  if (placement != 0u) {
    // A shift for each field's copy (element 2's magnitude moves right, its sign left).
    const unsigned at = word << (12u - 4u * which);
    return (at & 0x80008000u) | ((at >> 6) & 0x01c001c0u);
  }
  if (which == 2u) {
    // The word's signs beside its magnitudes 6 bits lower (element 3's shift, computed once for
    // both): one select takes element 2's sign bits from the word and its magnitude bits from the
    // shifted word, then one shift by 4 and one mask.
    return (((word & 0x08000800u) | ((word >> 6) & ~0x08000800u)) << 4) & 0x81c081c0u;
  }
  // Elements 0 and 1 move left by s (magnitude) and s + 6 (sign): the two nibbles kept, one multiply
  // by 2^s + 2^(s + 6) adds both copies (4 bits each at s..s+3 and s+6..s+9 from each nibble: they
  // cannot overlap, so nothing carries), one mask keeps the four fields.
  const unsigned s = 6u - 4u * which;
  return ((word & (0x000f000fu << (4u * which))) * ((1u << s) | (1u << (s + 6u)))) & 0x81c081c0u;
}
#endif
__device__ __forceinline__ int mt_mxfp4_word_pair(unsigned word, unsigned which, unsigned code, int bias,
                                                  unsigned placement) {
#ifdef MT_BF16X2_FMA
  const unsigned raw = mt_mxfp4_word_raw(word, which, placement);
  return bias == 0 ? mt_mxfp4_scaled(raw, code) : mt_mxfp4_biased(raw, code, bias);
#endif
#ifndef MT_BF16X2_FMA
  (void)placement;  // the same values whichever placement
  const unsigned low_nibble = (word >> (4u * which)) & 15u, high_nibble = (word >> (4u * which + 16u)) & 15u;
  if (bias != 0) {
    return (int)(mt_mxfp4_biased_bits(low_nibble, code, bias) | (mt_mxfp4_biased_bits(high_nibble, code, bias) << 16));
  }
  const unsigned low = __float_as_uint(mt_mxfp4(low_nibble, code)) >> 16;
  const unsigned high = __float_as_uint(mt_mxfp4(high_nibble, code)) >> 16;
  return (int)(low | (high << 16));
#endif
}
)";

struct ParamAbi {
  std::string c_type;
  int size;
};

ParamAbi param_abi(ElementType type) {
  if (type.pointer) return {memory_type(type.scalar) + "*", 8};
  switch (type.scalar) {
    case ScalarType::kI1: return {"bool", 1};
    case ScalarType::kF16: return {"mt_f16", 2};
    case ScalarType::kBf16: return {"mt_bf16", 2};
    default: return {register_type(type), scalar_type_bytes(type.scalar)};
  }
}

}  // namespace

std::string kernel_name_for(std::string_view program_name) {
  std::string name;
  for (char c : program_name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    name += ok ? c : '_';
  }
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) name = "k_" + name;
  return name;
}

LoweredKernel emit_kernel(const LoweringState& state, const LoweredBody& body) {
  const Spelling& spelling = spelling_for(state.target);
  LoweredKernel kernel;
  kernel.kernel_name = kernel_name_for(state.program.name);
  kernel.block_threads = state.program.options.num_warps * state.target.warp_size();
  kernel.dynamic_shared_bytes = body.shared_bytes;
  std::string signature;
  for (size_t i = 0; i < state.program.params.size(); ++i) {
    const Param& param = state.program.params[i];
    ParamAbi abi = param_abi(param.type);
    kernel.params.push_back(KernelParam{param.name, param.type, abi.c_type, abi.size, abi.size});
    absl::StrAppend(&signature, i ? ", " : "", abi.c_type, " p_", i);
  }
  std::string& source = kernel.source;
  absl::StrAppend(&source, "// Generated by monotile for ", state.target.str(), ": program \"", state.program.name,
                  "\" (", kernel.block_threads, " threads, ", body.shared_bytes, " bytes of shared memory).\n");
  absl::StrAppend(&source, to_absl(kSharedPrelude), spelling.prelude(state.target), to_absl(kSharedHelpers));
  // HIP's second argument means something else (waves per execution unit): NVIDIA only.
  const int min_blocks = state.target.vendor() == Vendor::kNvidia ? state.program.options.min_programs_per_sm : 0;
  absl::StrAppend(&source, "\nextern \"C\" __global__ void __launch_bounds__(", kernel.block_threads,
                  min_blocks > 0 ? absl::StrCat(", ", min_blocks) : std::string(), ") ", kernel.kernel_name, "(",
                  signature, ") {\n");
  if (body.shared_bytes > 0) absl::StrAppend(&source, "  ", to_absl(spelling.shared_memory_decl), "\n");
  absl::StrAppend(&source, body.preamble);
  const int first_body_line = static_cast<int>(std::count(source.begin(), source.end(), '\n')) + 1;
  for (const SourceOrigin& origin : body.origins) {
    kernel.origins.push_back({first_body_line + origin.generated_line, origin.loc});
  }
  absl::StrAppend(&source, body.body, "}\n");
  return kernel;
}

}  // namespace monotile::dsl::lower
