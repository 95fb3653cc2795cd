// Test support for the KDA verify kernel: random inputs shaped like bench/kda_inputs.py (slots dealt
// at random, written slots poisoned with NaN, padded requests, a slot stride wider than H D D), one
// run on any conformance executor (the interpreter or a GPU), and the check against the float64
// reference with per-dtype tolerances. NaN never passes; a slot the step must not write must keep
// its exact bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/kda/kda_reference.h"
#include "kernels/kda/kda_verify.h"
#include "tests/conformance/executor.h"

namespace monotile::kernels::kda::testing {

struct KdaCase {
  KdaVerifyConfig config;
  int padded = 0;              // the last `padded` requests are padding: every slot 0, one accepted
  bool later_slot_zero = false;  // request 0 gets slot 0 in one column other than its read column
  bool negative_read = false;  // request 1 reads slot -1 while its other columns name real slots
  int slot_pad = 4;            // values per slot beyond H D D (a multiple of 4)
  std::vector<int32_t> accepted;  // when not empty: num_accepted of the first requests
  uint32_t seed = 1;
};

// What the kernel is given (bf16 as bit patterns).
struct KdaHostInputs {
  KdaVerifyConfig config;
  std::vector<uint16_t> q, k, v, g, beta;
  std::vector<float> a_log, dt_bias, state;
  int64_t slot_stride = 0;
  std::vector<int32_t> state_indices, num_accepted;

  KdaStepValues values() const;  // the exact values, for the reference
};

struct KdaOutputs {
  std::vector<uint16_t> o;  // poisoned (NaN) before the run
  std::vector<float> state;
};

KdaHostInputs make_inputs(const KdaCase& c);

// Allocates, copies in, launches `program` (built for inputs.config) on its grid, copies out.
absl::StatusOr<KdaOutputs> run_kda(conformance::Executor& executor, const dsl::Program& program,
                                   const KdaHostInputs& inputs);

// "" when `got` matches `ref` (o within one bf16 rounding plus f32 error, state within f32 error,
// no-state rows exactly zero, unwritten slots bit-identical); otherwise the first failure.
std::string check_kda(const KdaHostInputs& inputs, const KdaOutputs& got, const KdaStepResult& ref);

}  // namespace monotile::kernels::kda::testing
