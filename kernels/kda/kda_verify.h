// The KDA speculative-verify recurrence (fla's fused_recurrent_kda with spec decoding, k3_layer.md
// 4.3-4.4) as one DSL program: in-kernel gate, beta sigmoid and q/k l2norm, fp32 V-first state
// [slots, H, 128, 128], the state after token t stored to column t of state_indices. Invariant: one
// program instance owns a [block_v, 128] slice of one (request, head) state for all q tokens, so
// the state is read once and written q times with no exchange between instances.
#pragma once

#include <array>
#include <optional>
#include "support/source_location.h"
#include <string>
#include <vector>

#include "dsl/ir.h"

namespace monotile::kernels::kda {

// Key and value head dimension (the state is kHeadDim x kHeadDim per head).
inline constexpr int kHeadDim = 128;
// gate = kLowerBound * sigmoid(exp(A_log) (g + dt_bias)).
inline constexpr float kLowerBound = -5.0f;
// q and k: x / sqrt(sum(x^2) + kL2NormEps).
inline constexpr float kL2NormEps = 1e-6f;

struct KdaVerifyConfig {
  int heads = 12;     // H: heads on this rank
  int requests = 1;   // N: requests of q tokens each (only the grid and the name depend on it)
  int q = 4;          // tokens per request (num_spec + 1)
  int block_v = 0;    // state rows (V) per program instance: a power of two dividing 128; 0: chosen
  int num_warps = 0;  // 0: chosen with block_v (4 when block_v is given)
  bool stream_state = true;  // state loads and stores carry the streaming (evict-first) hint
  // Every reduction over K reads the initial state (the chunked form: shorter dependent chains,
  // more per-head dot products); false: token by token.
  bool chunked = false;
  // Reductions over K exchange half of a lane's rows per shuffle level (KernelOptions); false: a
  // butterfly per row; empty: chosen with the split (true from 8 rows a warp).
  std::optional<bool> multi_row_reductions = std::nullopt;
  // q, k, v, g, beta and the gate parameters are loaded before the state (issued while the slots
  // are in flight); false: after it, once the slots have arrived (measured faster, kda_verify.cpp).
  bool inputs_before_state = false;
  std::string label = {};  // non-empty: a variant, named kda_verify_h{H}_n{N}_q{q}__{label}
};

// The config with block_v, num_warps and multi_row_reductions filled in (the choice for 0 or
// empty), checked: throws dsl::Error at
// `loc` for heads or requests < 1, q outside 1..8, block_v not a power of two dividing 128, or
// num_warps not a power of two in 1..8.
KdaVerifyConfig resolve(KdaVerifyConfig config, SourceLocation loc = SourceLocation::current());

// The program, named kda_verify_h{H}_n{N}_q{q}. Parameters, in order (the side-by-side harness's
// names, docs/bench.md): q, k, v, g (ptr<bf16> [T, H, 128], T = N q request-major), beta
// (ptr<bf16> [T, H], raw), a_log (ptr<f32> [H]), dt_bias (ptr<f32> [H 128]), state (ptr<f32>
// [slots, H, 128, 128]), slot_stride (i64, elements between slots; a multiple of 4), state_indices
// (ptr<i32> [N, q]), num_accepted (ptr<i32> [N], 1..q), o (ptr<bf16> [T, H, 128]).
// Per request: the state is read from slot state_indices[n, num_accepted[n] - 1]; a slot <= 0 there
// means no state: the request's o rows are zero and no state is read or stored. Otherwise after each
// token t the state is stored to slot state_indices[n, t] when that slot is > 0. Every initial
// state is read before any is written only within a program instance: slots of distinct requests
// must not overlap (they never do in a KV cache).
dsl::Program kda_verify_program(const KdaVerifyConfig& config,
                                SourceLocation loc = SourceLocation::current());

// The launch grid: (128 / block_v, H, N).
std::array<int, 3> kda_verify_grid(const KdaVerifyConfig& config);

// "kda_verify_h{H}_n{N}_q{q}", plus "__{label}" for a variant.
std::string kda_verify_name(const KdaVerifyConfig& config);

// Alternatives to the chosen config of one shape, labelled, measured beside it by the side-by-side
// harness: the other measured split, the chosen split with the other reduction form, at the
// latency-bound shapes (H N <= 192) the chosen split with its inputs loaded before the state, and
// from H N = 96 the chosen split without the streaming hint on the state.
std::vector<KdaVerifyConfig> kda_verify_variants(int heads, int requests, int q);

}  // namespace monotile::kernels::kda
