// The vendor spelling table: everything the one emitter writes differently for NVIDIA and AMD
// (tinygrad's renderers are the model). Entries are plain data or small functions that return C++
// text; the emitter never names a vendor intrinsic itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dsl/ir.h"
#include "dsl/lower/matrix_unit.h"
#include "dsl/target.h"

namespace monotile::dsl::lower {

struct Spelling {
  std::string_view vendor;
  // Vendor helpers the kernel may call (all __device__ __forceinline__), after the shared prelude's
  // types: mt_f32_to_bf16_bits(float) -> unsigned short (round to nearest even),
  // mt_f32_to_f16_bits(float), mt_f16_bits_to_f32(unsigned short), mt_globaltimer_ns() -> unsigned
  // long long, mt_trap(), mt_rcp(float) (the reciprocal of an x in [1, 2], <= 1 ulp), mt_fmin/mt_fmax(float,
  // float) (NaN if either operand is NaN), and the matrix-unit vector types.
  std::string (*prelude)(const Target& target);
  // Declares `mt_smem`, the block's dynamic shared memory (16-byte aligned).
  std::string_view shared_memory_decl;
  std::string_view thread_index;  // the thread's index in the (1-D) block
  std::string_view block_index[3];  // the program id along x, y, z
  std::string_view grid_size[3];    // the number of programs along x, y, z
  std::string_view barrier;       // a block-wide barrier statement, without ';'
  std::string_view backoff;       // a short pause inside a spin loop, without ';'
  // An expression: `value` from the lane whose index is this lane's xor `lane_mask` (every lane
  // participates). `value` is int, unsigned, long long, unsigned long long, float or double.
  std::string (*shuffle_xor)(std::string_view value, std::string_view lane_mask);
  // Statements: `dest = ` the old value of an atomic read-modify-write / compare-and-swap at `ptr`.
  // Empty when the vendor has no such atomic for `type` (the emitter then loops on CAS).
  std::string (*atomic_rmw)(AtomicKind kind, MemOrder order, MemScope scope, ScalarType type,
                            std::string_view ptr, std::string_view value, std::string_view dest);
  // CAS on the 32- or 64-bit pattern (`bytes`) of unsigned / unsigned long long values.
  std::string (*atomic_cas)(MemOrder order, MemScope scope, int bytes, std::string_view ptr,
                            std::string_view expected, std::string_view desired, std::string_view dest);
  // Ordered (relaxed/acquire) load and (relaxed/release) store of a 32- or 64-bit pattern.
  std::string (*load_ordered)(MemOrder order, MemScope scope, int bytes, std::string_view ptr,
                              std::string_view dest);
  std::string (*store_ordered)(MemOrder order, MemScope scope, int bytes, std::string_view ptr,
                               std::string_view value);
  std::string (*fence)(MemOrder order, MemScope scope);
  // A load of `bytes` (4, 8 or 16) into `words` (unsigned[bytes / 4]) with a cache/eviction hint and
  // L2's fetch size (AccessOptions::l2_fetch), or empty when neither has a spelling for this vendor
  // (a plain access is then used).
  std::string (*load_hinted)(CacheHint cache, EvictHint evict, int l2_fetch, int bytes, std::string_view ptr,
                             std::string_view words);
  std::string (*store_hinted)(CacheHint cache, EvictHint evict, int bytes, std::string_view ptr,
                              std::string_view words);
  // A statement asking for the line holding `ptr` (a global address) to be brought into L2, or null
  // where the vendor has no such instruction (the emitter then drops the hint).
  std::string (*prefetch_l2)(std::string_view ptr);
  // Programmatic dependent launch (ir.h): a statement letting the next kernel on the stream start
  // (launch_dependents) or waiting until the previous one has ended, its writes visible
  // (wait_grid_dependency); empty where `target` has no such instruction, and null where the vendor
  // has none (the emitter then writes nothing, and the kernel launches after its predecessor ends).
  std::string (*launch_dependents)(const Target& target);
  std::string (*wait_grid_dependency)(const Target& target);
  // One matrix instruction: c (float[c_elems]) += a * b, with a and b arrays of 16-bit patterns
  // (unsigned short[a_elems] / [b_elems]).
  std::string (*matrix_multiply)(const MatrixUnit& unit, std::string_view a, std::string_view b,
                                 std::string_view c);
  // Whether dot operands can be staged global -> shared by asynchronous copies and read back with
  // matrix loads (pipeline.h). The prelude then defines mt_shared_u32(const void*) (a shared address),
  // mt_cp_async16(unsigned dst, const void* src), mt_cp_async16_zfill(dst, src, bool full) (zeros
  // when not full, reading nothing), their forms with L2 fetching F bytes around the source
  // (mt_cp_async16_l2_F, mt_cp_async16_zfill_l2_F; F 64, 128 or 256: a load's
  // AccessOptions::l2_fetch), mt_cp_async_commit(), mt_cp_async_wait<N>() (all
  // but the newest N groups of this thread landed) and mt_ldmatrix_x4 / _x2 and their _trans forms
  // (unsigned addr, unsigned&...).
  bool (*stages_matrix_operands)(const Target& target);
  // One matrix instruction on packed registers: a and b are 32-bit words holding two 16-bit
  // elements each (the instruction's register order), c the float accumulator lvalues.
  std::string (*matrix_multiply_words)(const MatrixUnit& unit, const std::vector<std::string>& a,
                                       const std::vector<std::string>& b, const std::vector<std::string>& c);
  // One warpgroup MMA (m64 n `n` k16, c += a b), or null where the vendor has none: a and b are
  // matrix descriptor expressions (unsigned long long) of K-major tiles in shared memory, c the
  // n / 2 float accumulator lvalues in the instruction's register order. Where the target has it
  // (Target::has_wgmma) the prelude defines mt_wgmma_desc(unsigned addr) (a 128-byte-swizzled tile
  // of 128-byte rows at a shared address), mt_wgmma_fence(), mt_wgmma_commit(), mt_wgmma_wait<N>(),
  // mt_wgmma_hold(float&) (keeps the compiler from touching an accumulator before the wait) and
  // mt_fence_proxy_async() (orders this thread's shared-memory writes before the unit's reads).
  std::string (*warpgroup_multiply)(MatrixOperand operand, int n, std::string_view a, std::string_view b,
                                    const std::vector<std::string>& c);
};

// The table for `target`'s vendor (NVIDIA or AMD); MT_CHECKs that it is a GPU target.
const Spelling& spelling_for(const Target& target);

// Whether `target` lowers wait_grid_dependency to an instruction (ir.h: a program that waits may
// then be launched before its predecessor ends).
bool has_grid_dependency_wait(const Target& target);

const Spelling& cuda_spelling();
const Spelling& hip_spelling();

}  // namespace monotile::dsl::lower
