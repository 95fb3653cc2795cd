// AMD's spelling: HIP C++ for hiprtc (which pre-includes the HIP runtime header) with clang's
// __hip_atomic_* builtins for scoped atomics, __builtin_amdgcn_fence, s_memrealtime for the timer and
// MFMA builtins. hiprtc 5.2 has no bf16 type: bf16 is our 16-bit pattern with software RNE.
#include <string>

#include "absl/strings/str_cat.h"
#include "dsl/lower/spelling.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

// s_memrealtime counts at a constant 100 MHz on gfx9 (CDNA) parts: 10 ns per tick.
constexpr int kRealtimeNsPerTick = 10;

std::string prelude(const Target&) {
  return absl::StrCat(R"(typedef short mt_s16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 mt_f16x4 __attribute__((ext_vector_type(4)));
typedef float mt_f32x4 __attribute__((ext_vector_type(4)));
typedef float mt_f32x16 __attribute__((ext_vector_type(16)));
typedef unsigned mt_u32v2 __attribute__((ext_vector_type(2)));
typedef unsigned mt_u32v4 __attribute__((ext_vector_type(4)));
__device__ __forceinline__ unsigned long long mt_globaltimer_ns() {
  return __builtin_amdgcn_s_memrealtime() * )", kRealtimeNsPerTick, R"(ull;
}
__device__ __forceinline__ void mt_trap() { __builtin_trap(); }
// v_rcp_f32 (1 ulp): the IEEE divide sequence needs scalar registers per division and spills them
// when many run side by side.
__device__ __forceinline__ float mt_rcp(float x) { return __builtin_amdgcn_rcpf(x); }
__device__ __forceinline__ unsigned short mt_f32_to_f16_bits(float f) {
  return __builtin_bit_cast(unsigned short, (_Float16)f);
}
__device__ __forceinline__ float mt_f16_bits_to_f32(unsigned short h) {
  return (float)__builtin_bit_cast(_Float16, h);
}
__device__ __forceinline__ unsigned short mt_f32_to_bf16_bits(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float mt_fmin(float a, float b) { return (a != a || b != b) ? a + b : fminf(a, b); }
__device__ __forceinline__ float mt_fmax(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }
)");
}

std::string_view hip_scope(MemScope scope) {
  switch (scope) {
    case MemScope::kBlock: return "__HIP_MEMORY_SCOPE_WORKGROUP";
    case MemScope::kGpu: return "__HIP_MEMORY_SCOPE_AGENT";
    case MemScope::kSystem: return "__HIP_MEMORY_SCOPE_SYSTEM";
  }
  return "__HIP_MEMORY_SCOPE_AGENT";
}

std::string_view hip_order(MemOrder order) {
  switch (order) {
    case MemOrder::kPlain:
    case MemOrder::kRelaxed: return "__ATOMIC_RELAXED";
    case MemOrder::kAcquire: return "__ATOMIC_ACQUIRE";
    case MemOrder::kRelease: return "__ATOMIC_RELEASE";
    case MemOrder::kAcqRel: return "__ATOMIC_ACQ_REL";
  }
  return "__ATOMIC_RELAXED";
}

std::string shuffle_xor(std::string_view value, std::string_view lane_mask) {
  return absl::StrCat("__shfl_xor(", to_absl(value), ", ", to_absl(lane_mask), ")");
}

std::string atomic_rmw(AtomicKind kind, MemOrder order, MemScope scope, ScalarType type, std::string_view ptr,
                       std::string_view value, std::string_view dest) {
  bool integer = type == ScalarType::kI32 || type == ScalarType::kU32 || type == ScalarType::kI64;
  bool floating = type == ScalarType::kF32 || type == ScalarType::kF64;
  // Float min/max go through the emitter's CAS loop so that NaN propagates like the interpreter's.
  if (!integer && !(floating && (kind == AtomicKind::kAdd || kind == AtomicKind::kXchg))) return "";
  std::string_view builtin;
  switch (kind) {
    case AtomicKind::kAdd: builtin = "__hip_atomic_fetch_add"; break;
    case AtomicKind::kMax: builtin = "__hip_atomic_fetch_max"; break;
    case AtomicKind::kMin: builtin = "__hip_atomic_fetch_min"; break;
    case AtomicKind::kAnd: builtin = "__hip_atomic_fetch_and"; break;
    case AtomicKind::kOr: builtin = "__hip_atomic_fetch_or"; break;
    case AtomicKind::kXor: builtin = "__hip_atomic_fetch_xor"; break;
    case AtomicKind::kXchg: builtin = "__hip_atomic_exchange"; break;
  }
  return absl::StrCat(to_absl(dest), " = ", to_absl(builtin), "(", to_absl(ptr), ", ", to_absl(value), ", ",
                      to_absl(hip_order(order)), ", ", to_absl(hip_scope(scope)), ");");
}

std::string_view failure_order(MemOrder order) {
  return order == MemOrder::kAcquire || order == MemOrder::kAcqRel ? "__ATOMIC_ACQUIRE" : "__ATOMIC_RELAXED";
}

std::string atomic_cas(MemOrder order, MemScope scope, int bytes, std::string_view ptr, std::string_view expected,
                       std::string_view desired, std::string_view dest) {
  std::string_view type = bytes == 8 ? "unsigned long long" : "unsigned";
  return absl::StrCat("{ ", to_absl(type), " mt_expected = ", to_absl(expected),
                      "; __hip_atomic_compare_exchange_strong((", to_absl(type), "*)(", to_absl(ptr),
                      "), &mt_expected, ", to_absl(desired), ", ", to_absl(hip_order(order)), ", ",
                      to_absl(failure_order(order)), ", ", to_absl(hip_scope(scope)), "); ", to_absl(dest),
                      " = mt_expected; }");
}

std::string load_ordered(MemOrder order, MemScope scope, int bytes, std::string_view ptr, std::string_view dest) {
  std::string_view type = bytes == 8 ? "unsigned long long" : "unsigned";
  std::string_view sem = order == MemOrder::kAcquire || order == MemOrder::kAcqRel ? "__ATOMIC_ACQUIRE" : "__ATOMIC_RELAXED";
  return absl::StrCat(to_absl(dest), " = __hip_atomic_load((", to_absl(type), "*)(", to_absl(ptr), "), ",
                      to_absl(sem), ", ", to_absl(hip_scope(scope)), ");");
}

std::string store_ordered(MemOrder order, MemScope scope, int bytes, std::string_view ptr, std::string_view value) {
  std::string_view type = bytes == 8 ? "unsigned long long" : "unsigned";
  std::string_view sem = order == MemOrder::kRelease || order == MemOrder::kAcqRel ? "__ATOMIC_RELEASE" : "__ATOMIC_RELAXED";
  return absl::StrCat("__hip_atomic_store((", to_absl(type), "*)(", to_absl(ptr), "), ", to_absl(value), ", ",
                      to_absl(sem), ", ", to_absl(hip_scope(scope)), ");");
}

std::string fence(MemOrder order, MemScope scope) {
  std::string_view sem = order == MemOrder::kAcquire   ? "__ATOMIC_ACQUIRE"
                         : order == MemOrder::kRelease ? "__ATOMIC_RELEASE"
                                                       : "__ATOMIC_ACQ_REL";
  std::string_view where = scope == MemScope::kBlock ? "workgroup" : (scope == MemScope::kGpu ? "agent" : "");
  return absl::StrCat("__builtin_amdgcn_fence(", to_absl(sem), ", \"", to_absl(where), "\");");
}

// Streaming / evict-first accesses become nontemporal (slc/nt bits); volatile is a volatile access;
// other hints have no HIP spelling and take the plain path.
std::string load_hinted(CacheHint cache, EvictHint evict, int /*l2_fetch: no spelling*/, int bytes,
                        std::string_view ptr, std::string_view words) {
  bool nontemporal = cache == CacheHint::kStreaming || evict == EvictHint::kFirst;
  bool is_volatile = cache == CacheHint::kVolatile;
  if ((!nontemporal && !is_volatile) || bytes < 4) return "";
  std::string_view type = bytes == 16 ? "mt_u32v4" : (bytes == 8 ? "mt_u32v2" : "unsigned");
  std::string read = nontemporal ? absl::StrCat("__builtin_nontemporal_load((const ", to_absl(type), "*)(", to_absl(ptr), "))")
                                 : absl::StrCat("*(const volatile ", to_absl(type), "*)(", to_absl(ptr), ")");
  std::string text = absl::StrCat("{ ", to_absl(type), " mt_t = ", read, ";");
  if (bytes == 4) {
    absl::StrAppend(&text, " ", to_absl(words), "[0] = mt_t;");
  } else {
    for (int w = 0; w < bytes / 4; ++w) absl::StrAppend(&text, " ", to_absl(words), "[", w, "] = mt_t[", w, "];");
  }
  return text + " }";
}

std::string store_hinted(CacheHint cache, EvictHint evict, int bytes, std::string_view ptr, std::string_view words) {
  bool nontemporal = cache == CacheHint::kStreaming || evict == EvictHint::kFirst;
  bool is_volatile = cache == CacheHint::kVolatile;
  if ((!nontemporal && !is_volatile) || bytes < 4) return "";
  std::string_view type = bytes == 16 ? "mt_u32v4" : (bytes == 8 ? "mt_u32v2" : "unsigned");
  std::string text = absl::StrCat("{ ", to_absl(type), " mt_t;");
  if (bytes == 4) {
    absl::StrAppend(&text, " mt_t = ", to_absl(words), "[0];");
  } else {
    for (int w = 0; w < bytes / 4; ++w) absl::StrAppend(&text, " mt_t[", w, "] = ", to_absl(words), "[", w, "];");
  }
  if (nontemporal) {
    absl::StrAppend(&text, " __builtin_nontemporal_store(mt_t, (", to_absl(type), "*)(", to_absl(ptr), ")); }");
  } else {
    absl::StrAppend(&text, " *(volatile ", to_absl(type), "*)(", to_absl(ptr), ") = mt_t; }");
  }
  return text;
}

std::string matrix_multiply(const MatrixUnit& unit, std::string_view a, std::string_view b, std::string_view c) {
  bool bf16 = unit.shape.operand == MatrixOperand::kBf16;
  bool big = unit.shape.m == 32;
  MT_CHECK(big ? (unit.shape.n == 32 && unit.shape.k == 8) : (unit.shape.m == 16 && unit.shape.n == 16 && unit.shape.k == 16));
  std::string_view acc_type = big ? "mt_f32x16" : "mt_f32x4";
  std::string builtin = absl::StrCat("__builtin_amdgcn_mfma_f32_", big ? "32x32x8" : "16x16x16", bf16 ? "bf16_1k" : "f16");
  auto operand = [&](std::string_view array) {
    std::string v = absl::StrCat("mt_s16x4{(short)", to_absl(array), "[0], (short)", to_absl(array), "[1], (short)",
                                 to_absl(array), "[2], (short)", to_absl(array), "[3]}");
    return bf16 ? v : absl::StrCat("__builtin_bit_cast(mt_f16x4, ", v, ")");
  };
  std::string text = absl::StrCat("{ ", to_absl(acc_type), " mt_acc; for (int e = 0; e < ", unit.c_elems,
                                  "; ++e) mt_acc[e] = ", to_absl(c), "[e]; mt_acc = ", builtin, "(", operand(a), ", ",
                                  operand(b), ", mt_acc, 0, 0, 0); for (int e = 0; e < ", unit.c_elems, "; ++e) ",
                                  to_absl(c), "[e] = mt_acc[e]; }");
  return text;
}

// MFMA operands still go through registers and shared memory by the generic path.
bool stages_matrix_operands(const Target&) { return false; }

}  // namespace

const Spelling& hip_spelling() {
  static const Spelling spelling{
      .vendor = "amd",
      .prelude = prelude,
      .shared_memory_decl = "extern __shared__ __attribute__((aligned(16))) unsigned char mt_smem[];",
      .thread_index = "(int)threadIdx.x",
      .block_index = {"(int)blockIdx.x", "(int)blockIdx.y", "(int)blockIdx.z"},
      .grid_size = {"(int)gridDim.x", "(int)gridDim.y", "(int)gridDim.z"},
      .barrier = "__syncthreads()",
      .backoff = "__builtin_amdgcn_s_sleep(1)",
      .shuffle_xor = shuffle_xor,
      .atomic_rmw = atomic_rmw,
      .atomic_cas = atomic_cas,
      .load_ordered = load_ordered,
      .store_ordered = store_ordered,
      .fence = fence,
      .load_hinted = load_hinted,
      .store_hinted = store_hinted,
      // gfx90a and gfx942 have no L2 prefetch instruction; a dummy load would cost registers and a
      // wait, so the hint is dropped (the emitter leaves a comment in its place).
      .prefetch_l2 = nullptr,
      // HIP has no programmatic dependent launch: a kernel starts after its predecessor has ended,
      // so there is nothing to release or wait for.
      .launch_dependents = nullptr,
      .wait_grid_dependency = nullptr,
      .matrix_multiply = matrix_multiply,
      .stages_matrix_operands = stages_matrix_operands,
      .matrix_multiply_words = nullptr,
      .warpgroup_multiply = nullptr,
  };
  return spelling;
}


}  // namespace monotile::dsl::lower
