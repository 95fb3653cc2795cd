// Float64 reference of the KDA speculative-verify recurrence, written from k3_layer.md 4.3-4.4 (the
// same reading as bench/kda_reference.py): gate, beta sigmoid, q/k l2norm, per token
// S *= exp(gate); e = (v - S k) beta; S += e k^T; o = S q. Invariant: every initial state is read
// before any state is written, and a request whose read slot is <= 0 has zero output and no store.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace monotile::kernels::kda {

// One verify step's inputs as exact values (pass the bf16 values the kernel sees). Layouts as the
// kernel's: q, k, v, g [T, H, D] with T = N q request-major; beta [T, H] raw; a_log [H]; dt_bias
// [H D]; state: `slots` slots of `slot_stride` values, head h of slot s at s slot_stride + h D D
// (V-first: row v, column k); state_indices [N, q]; num_accepted [N].
struct KdaStepValues {
  int heads = 0;
  int requests = 0;
  int q = 0;
  int head_dim = 128;
  std::vector<double> q_in, k_in, v_in, g_in, beta_raw, a_log, dt_bias;
  int64_t slot_stride = 0;
  std::vector<double> state;  // slots * slot_stride
  std::vector<int32_t> state_indices, num_accepted;
};

struct KdaStepResult {
  std::vector<double> o;      // [T, H, D]
  std::vector<double> state;  // the whole state buffer after the step
};

// InvalidArgument when sizes disagree, num_accepted[n] is outside 1..q, or a slot is past the
// buffer.
absl::StatusOr<KdaStepResult> kda_verify_reference(const KdaStepValues& in, double lower_bound = -5.0,
                                                   double l2_eps = 1e-6);

}  // namespace monotile::kernels::kda
