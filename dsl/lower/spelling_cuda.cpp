// NVIDIA's spelling: CUDA C++ for NVRTC with inline PTX for ordered accesses, atomics with scope,
// cache hints, the global timer and mma.sync. No CUDA header is needed (bf16/f16 are our own types).
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "dsl/lower/spelling.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

std::string prelude(const Target& target) {
  std::string text = R"(__device__ __forceinline__ unsigned long long mt_globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void mt_trap() { __trap(); }
// The reciprocal of an x in [1, 2] (sigmoid's 1 + e^-|x|), at most 1 ulp, as one MUFU.RCP
// (rcp.approx.ftz: no subnormal in or out there). __frcp_rn took about ten instructions a call and a
// branch to its slow path, while a layer kernel's sigmoids (the conv's SiLU, the gates) run hundreds
// of them a thread in straight-line code.
__device__ __forceinline__ float mt_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ unsigned short mt_f32_to_f16_bits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float mt_f16_bits_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
)";
  if (target.compute_capability() >= 80) {
    // min/max.NaN: one instruction where the portable form needs a NaN test, a select and an add
    // (3 per element of a max reduction). NaN in, canonical NaN out (payloads are not kept: ir.h).
    text += R"(#define MT_BF16X2_FMA 1
__device__ __forceinline__ unsigned short mt_f32_to_bf16_bits(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float mt_fmin(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float mt_fmax(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
)";
    text += R"(__device__ __forceinline__ unsigned mt_shared_u32(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void mt_cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
// Copies 16 bytes when `full`; without it reads nothing and writes 16 zero bytes (src-size 0).
__device__ __forceinline__ void mt_cp_async16_zfill(unsigned dst, const void* src, bool full) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(full ? 16 : 0) : "memory");
}
// The two copies with L2 fetching 64, 128 or 256 bytes around the source (PTX ISA 7.4's .L2::NB
// prefetch size; _l2_N for N bytes): the rest of a row's line or lines then waits in L2 for the
// copies of the stages after this one, with no request slot held for it.
)";
    for (int fetch : {64, 128, 256}) {
      absl::StrAppend(&text, "__device__ __forceinline__ void mt_cp_async16_l2_", fetch,
                      "(unsigned dst, const void* src) {\n  asm volatile(\"cp.async.cg.shared.global.L2::", fetch,
                      "B [%0], [%1], 16;\" :: \"r\"(dst), \"l\"(src) : \"memory\");\n}\n");
      absl::StrAppend(&text, "__device__ __forceinline__ void mt_cp_async16_zfill_l2_", fetch,
                      "(unsigned dst, const void* src, bool full) {\n  asm volatile(\"cp.async.cg.shared.global.L2::",
                      fetch,
                      "B [%0], [%1], 16, %2;\" :: \"r\"(dst), \"l\"(src), \"r\"(full ? 16 : 0) : \"memory\");\n}\n");
    }
    text += R"(__device__ __forceinline__ void mt_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void mt_cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
__device__ __forceinline__ void mt_ldmatrix_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void mt_ldmatrix_x2(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void mt_ldmatrix_x4_trans(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2,
                                                     unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void mt_ldmatrix_x2_trans(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr));
}
)";
    if (target.has_wgmma()) {
      // Descriptor (PTX ISA, "Matrix Descriptor Format"): start address >> 4 in bits 0-13, leading
      // byte offset >> 4 in 16-29 (unused for swizzled K-major tiles), stride byte offset >> 4 in
      // 32-45 (1024: from one 8-row group to the next), swizzle mode in 62-63 (1: 128-byte).
      text += R"(__device__ __forceinline__ unsigned long long mt_wgmma_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ void mt_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void mt_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void mt_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
__device__ __forceinline__ void mt_wgmma_hold(float& x) { asm volatile("" : "+f"(x) :: "memory"); }
__device__ __forceinline__ void mt_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
)";
    }
  } else {
    text += R"(#define MT_BF16X2_FMA 1
__device__ __forceinline__ unsigned short mt_f32_to_bf16_bits(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float mt_fmin(float a, float b) { return (a != a || b != b) ? a + b : fminf(a, b); }
__device__ __forceinline__ float mt_fmax(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }
)";
  }
  return text;
}

std::string_view scope_suffix(MemScope scope) {
  switch (scope) {
    case MemScope::kBlock: return "cta";
    case MemScope::kGpu: return "gpu";
    case MemScope::kSystem: return "sys";
  }
  return "gpu";
}

std::string_view order_suffix(MemOrder order) {
  switch (order) {
    case MemOrder::kPlain:
    case MemOrder::kRelaxed: return "relaxed";
    case MemOrder::kAcquire: return "acquire";
    case MemOrder::kRelease: return "release";
    case MemOrder::kAcqRel: return "acq_rel";
  }
  return "relaxed";
}

std::string shuffle_xor(std::string_view value, std::string_view lane_mask) {
  return absl::StrCat("__shfl_xor_sync(0xffffffffu, ", to_absl(value), ", ", to_absl(lane_mask), ")");
}

// PTX type and asm constraint of an atomic's operand.
struct PtxType {
  std::string_view type;
  std::string_view constraint;
};

std::optional<PtxType> atomic_type(AtomicKind kind, ScalarType type) {
  bool bitwise = kind == AtomicKind::kAnd || kind == AtomicKind::kOr || kind == AtomicKind::kXor ||
                 kind == AtomicKind::kXchg;
  switch (type) {
    case ScalarType::kI32: return bitwise ? PtxType{"b32", "r"} : PtxType{kind == AtomicKind::kAdd ? "u32" : "s32", "r"};
    case ScalarType::kU32: return bitwise ? PtxType{"b32", "r"} : PtxType{"u32", "r"};
    case ScalarType::kI64: return bitwise ? PtxType{"b64", "l"} : PtxType{kind == AtomicKind::kAdd ? "u64" : "s64", "l"};
    case ScalarType::kF32:
      if (kind == AtomicKind::kAdd) return PtxType{"f32", "f"};
      return std::nullopt;
    case ScalarType::kF64:
      if (kind == AtomicKind::kAdd) return PtxType{"f64", "d"};
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::string_view atomic_op(AtomicKind kind) {
  switch (kind) {
    case AtomicKind::kAdd: return "add";
    case AtomicKind::kMax: return "max";
    case AtomicKind::kMin: return "min";
    case AtomicKind::kAnd: return "and";
    case AtomicKind::kOr: return "or";
    case AtomicKind::kXor: return "xor";
    case AtomicKind::kXchg: return "exch";
  }
  return "add";
}

std::string atomic_rmw(AtomicKind kind, MemOrder order, MemScope scope, ScalarType type, std::string_view ptr,
                       std::string_view value, std::string_view dest) {
  std::optional<PtxType> ptx = atomic_type(kind, type);
  if (!ptx) return "";
  // Signed 32/64-bit values pass through their unsigned patterns for the "r"/"l" constraints.
  std::string_view cast = ptx->constraint == "r" ? "(unsigned)" : (ptx->constraint == "l" ? "(unsigned long long)" : "");
  std::string_view out_type = ptx->constraint == "r" ? "unsigned" : (ptx->constraint == "l" ? "unsigned long long" : "");
  std::string out = out_type.empty() ? std::string(dest) : absl::StrCat("mt_old");
  std::string text = absl::StrCat("asm volatile(\"atom.", to_absl(order_suffix(order)), ".",
                                  to_absl(scope_suffix(scope)), ".global.", to_absl(atomic_op(kind)), ".",
                                  to_absl(ptx->type), " %0, [%1], %2;\" : \"=", to_absl(ptx->constraint),
                                  "\"(", out, ") : \"l\"(", to_absl(ptr), "), \"", to_absl(ptx->constraint),
                                  "\"(", to_absl(cast), to_absl(value), ") : \"memory\");");
  if (out_type.empty()) return text;
  return absl::StrCat("{ ", to_absl(out_type), " mt_old; ", text, " ", to_absl(dest), " = mt_old; }");
}

std::string atomic_cas(MemOrder order, MemScope scope, int bytes, std::string_view ptr, std::string_view expected,
                       std::string_view desired, std::string_view dest) {
  std::string_view c = bytes == 8 ? "l" : "r";
  return absl::StrCat("asm volatile(\"atom.", to_absl(order_suffix(order)), ".", to_absl(scope_suffix(scope)),
                      ".global.cas.b", bytes * 8, " %0, [%1], %2, %3;\" : \"=", to_absl(c), "\"(", to_absl(dest),
                      ") : \"l\"(", to_absl(ptr), "), \"", to_absl(c), "\"(", to_absl(expected), "), \"",
                      to_absl(c), "\"(", to_absl(desired), ") : \"memory\");");
}

std::string load_ordered(MemOrder order, MemScope scope, int bytes, std::string_view ptr, std::string_view dest) {
  std::string_view c = bytes == 8 ? "l" : "r";
  std::string_view sem = order == MemOrder::kAcquire || order == MemOrder::kAcqRel ? "acquire" : "relaxed";
  return absl::StrCat("asm volatile(\"ld.", to_absl(sem), ".", to_absl(scope_suffix(scope)), ".global.b",
                      bytes * 8, " %0, [%1];\" : \"=", to_absl(c), "\"(", to_absl(dest), ") : \"l\"(", to_absl(ptr),
                      ") : \"memory\");");
}

std::string store_ordered(MemOrder order, MemScope scope, int bytes, std::string_view ptr, std::string_view value) {
  std::string_view c = bytes == 8 ? "l" : "r";
  std::string_view sem = order == MemOrder::kRelease || order == MemOrder::kAcqRel ? "release" : "relaxed";
  return absl::StrCat("asm volatile(\"st.", to_absl(sem), ".", to_absl(scope_suffix(scope)), ".global.b",
                      bytes * 8, " [%0], %1;\" :: \"l\"(", to_absl(ptr), "), \"", to_absl(c), "\"(", to_absl(value),
                      ") : \"memory\");");
}

std::string fence(MemOrder, MemScope scope) {
  // PTX fences are sc or acq_rel; acq_rel covers acquire, release and acq_rel.
  return absl::StrCat("asm volatile(\"fence.acq_rel.", to_absl(scope_suffix(scope)), ";\" ::: \"memory\");");
}

std::string_view cache_operator(CacheHint cache, EvictHint evict, bool load) {
  if (evict == EvictHint::kFirst) return ".L1::evict_first";
  if (evict == EvictHint::kLast) return ".L1::evict_last";
  switch (cache) {
    case CacheHint::kDefault: return "";
    case CacheHint::kCacheAll: return load ? ".ca" : ".wb";
    case CacheHint::kCacheGlobal: return ".cg";
    case CacheHint::kStreaming: return ".cs";
    case CacheHint::kVolatile: return load ? ".cv" : ".wt";
  }
  return "";
}

std::string vector_operands(int bytes, std::string_view words, int first, bool out) {
  std::string braces = "{";
  std::string bindings;
  int n = bytes / 4;
  for (int w = 0; w < n; ++w) {
    absl::StrAppend(&braces, w ? "," : "", "%", first + w);
    absl::StrAppend(&bindings, w ? ", " : "", out ? "\"=r\"(" : "\"r\"(", to_absl(words), "[", w, "])");
  }
  braces += "}";
  return absl::StrCat(n == 1 ? absl::StrCat("%", first) : braces, "|", bindings);
}

// l2_fetch: PTX ISA 7.4's .L2::64B / 128B / 256B prefetch size (sm_75 and later).
std::string load_hinted(CacheHint cache, EvictHint evict, int l2_fetch, int bytes, std::string_view ptr,
                        std::string_view words) {
  std::string op(cache_operator(cache, evict, true));
  if (l2_fetch != 0) absl::StrAppend(&op, ".L2::", l2_fetch, "B");
  if (op.empty() || bytes < 4) return "";
  std::string operands = vector_operands(bytes, words, 0, true);
  size_t bar = operands.find('|');
  std::string_view vec = bytes == 16 ? ".v4" : (bytes == 8 ? ".v2" : "");
  return absl::StrCat("asm volatile(\"ld.global", to_absl(op), to_absl(vec), ".u32 ", operands.substr(0, bar),
                      ", [%", bytes / 4, "];\" : ", operands.substr(bar + 1), " : \"l\"(", to_absl(ptr),
                      ") : \"memory\");");
}

std::string store_hinted(CacheHint cache, EvictHint evict, int bytes, std::string_view ptr, std::string_view words) {
  std::string_view op = cache_operator(cache, evict, false);
  if (op.empty() || bytes < 4) return "";
  std::string operands = vector_operands(bytes, words, 1, false);
  size_t bar = operands.find('|');
  std::string_view vec = bytes == 16 ? ".v4" : (bytes == 8 ? ".v2" : "");
  return absl::StrCat("asm volatile(\"st.global", to_absl(op), to_absl(vec), ".u32 [%0], ", operands.substr(0, bar),
                      ";\" :: \"l\"(", to_absl(ptr), "), ", operands.substr(bar + 1), " : \"memory\");");
}

// PTX ISA 7.4, sm_80 and later. evict_last: the prefetched lines are the data a later stage reads,
// so they should outlive the streaming traffic in between.
std::string prefetch_l2(std::string_view ptr) {
  return absl::StrCat("asm volatile(\"prefetch.global.L2::evict_last [%0];\" :: \"l\"(", to_absl(ptr),
                      "));");
}

// griddepcontrol: PTX ISA 7.8, sm_90 and later. Every thread executes it: a program counts as having
// asked once any of its threads has, and each thread that reads a predecessor's output waits itself.
// The wait's memory clobber keeps the compiler from moving a load above it.
std::string launch_dependents(const Target& target) {
  return target.compute_capability() >= 90 ? "asm volatile(\"griddepcontrol.launch_dependents;\");" : "";
}

std::string wait_grid_dependency(const Target& target) {
  return target.compute_capability() >= 90 ? "asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");" : "";
}

std::string matrix_multiply(const MatrixUnit& unit, std::string_view a, std::string_view b, std::string_view c) {
  MT_CHECK(unit.shape.m == 16 && unit.shape.n == 8 && unit.shape.k == 16);
  std::string_view type = unit.shape.operand == MatrixOperand::kBf16 ? "bf16" : "f16";
  auto pack = [](std::string_view array, int pair) {
    return absl::StrCat("((unsigned)", to_absl(array), "[", 2 * pair, "] | ((unsigned)", to_absl(array), "[",
                        2 * pair + 1, "] << 16))");
  };
  return absl::StrCat(
      "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.", to_absl(type), ".", to_absl(type),
      ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(", to_absl(c), "[0]), \"+f\"(",
      to_absl(c), "[1]), \"+f\"(", to_absl(c), "[2]), \"+f\"(", to_absl(c), "[3]) : \"r\"(", pack(a, 0), "), \"r\"(",
      pack(a, 1), "), \"r\"(", pack(a, 2), "), \"r\"(", pack(a, 3), "), \"r\"(", pack(b, 0), "), \"r\"(", pack(b, 1),
      "));");
}

// cp.async and ldmatrix arrived with sm_80.
bool stages_matrix_operands(const Target& target) { return target.compute_capability() >= 80; }

std::string matrix_multiply_words(const MatrixUnit& unit, const std::vector<std::string>& a,
                                  const std::vector<std::string>& b, const std::vector<std::string>& c) {
  MT_CHECK(unit.shape.m == 16 && unit.shape.n == 8 && unit.shape.k == 16 && a.size() == 4 && b.size() == 2 &&
           c.size() == 4);
  std::string_view type = unit.shape.operand == MatrixOperand::kBf16 ? "bf16" : "f16";
  return absl::StrCat("asm(\"mma.sync.aligned.m16n8k16.row.col.f32.", to_absl(type), ".", to_absl(type),
                      ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(", c[0], "), \"+f\"(",
                      c[1], "), \"+f\"(", c[2], "), \"+f\"(", c[3], ") : \"r\"(", a[0], "), \"r\"(", a[1],
                      "), \"r\"(", a[2], "), \"r\"(", a[3], "), \"r\"(", b[0], "), \"r\"(", b[1], "));");
}

// scale-d is a predicate set true (accumulate); A and B unscaled and K-major (no transpose).
std::string warpgroup_multiply(MatrixOperand operand, int n, std::string_view a, std::string_view b,
                               const std::vector<std::string>& c) {
  MT_CHECK(n % 8 == 0 && n >= 8 && n <= 256 && c.size() == static_cast<size_t>(n / 2));
  std::string_view type = operand == MatrixOperand::kBf16 ? "bf16" : "f16";
  const int regs = n / 2;
  std::string list;
  for (int i = 0; i < regs; ++i) absl::StrAppend(&list, i == 0 ? "" : ",", "%", i);
  std::string text = absl::StrCat("asm volatile(\"{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n", n,
                                  "k16.f32.", to_absl(type), ".", to_absl(type), " {", list, "}, %", regs, ", %",
                                  regs + 1, ", p, 1, 1, 0, 0; }\" : ");
  for (int i = 0; i < regs; ++i) absl::StrAppend(&text, i == 0 ? "" : ", ", "\"+f\"(", c[i], ")");
  absl::StrAppend(&text, " : \"l\"(", to_absl(a), "), \"l\"(", to_absl(b), ") : \"memory\");");
  return text;
}

}  // namespace

const Spelling& cuda_spelling() {
  static const Spelling spelling{
      .vendor = "nvidia",
      .prelude = prelude,
      .shared_memory_decl = "extern __shared__ __align__(128) unsigned char mt_smem[];",
      .thread_index = "(int)threadIdx.x",
      .block_index = {"(int)blockIdx.x", "(int)blockIdx.y", "(int)blockIdx.z"},
      .grid_size = {"(int)gridDim.x", "(int)gridDim.y", "(int)gridDim.z"},
      .barrier = "__syncthreads()",
      .backoff = "__nanosleep(32)",
      .shuffle_xor = shuffle_xor,
      .atomic_rmw = atomic_rmw,
      .atomic_cas = atomic_cas,
      .load_ordered = load_ordered,
      .store_ordered = store_ordered,
      .fence = fence,
      .load_hinted = load_hinted,
      .store_hinted = store_hinted,
      .prefetch_l2 = prefetch_l2,
      .launch_dependents = launch_dependents,
      .wait_grid_dependency = wait_grid_dependency,
      .matrix_multiply = matrix_multiply,
      .stages_matrix_operands = stages_matrix_operands,
      .matrix_multiply_words = matrix_multiply_words,
      .warpgroup_multiply = warpgroup_multiply,
  };
  return spelling;
}

}  // namespace monotile::dsl::lower
