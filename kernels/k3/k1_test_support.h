// K1 test cases shared by the interpreter and GPU tests: random weights of one rank's KDA layer at
// any model shape (no checkpoint needed), random step inputs, one run on a conformance Executor
// with every output poisoned beforehand, and the comparison against the float64 reference.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/k3/k1.h"
#include "kernels/k3/k1_check.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/config.h"
#include "tests/conformance/executor.h"

namespace monotile::kernels::k3 {

struct K1Case {
  std::string model = "k3-tiny";
  int tp = 1;
  int rank = 0;
  int layer = 1;
  int requests = 2;
  int q = 4;
  int state_len = 0;  // 0: q + 2
  bool delta = true;
  int padded = 0;     // the last `padded` requests have every slot 0
  bool dim_first = false;  // conv state [slots, 3 Pl, SL] instead of [slots, SL, 3 Pl]
  int programs = 0;   // 0: max(tokens, 8)
  std::string target = {};  // non-empty: the build is shaped for this target (k1_for_target)
  int32_t counter_start = 0;  // every counter's value before the launch: a multiple of 256 as a long
                              // run leaves them, or any other value to break the arrivals on purpose
  int64_t wait_ns = 0;        // > 0: the build's wait timeout
  int launches = 1;           // > 1: launch again on the same inputs (restored), each launch's
                              // outputs and hand-off rows equal to the first's bit for bit
  bool cold = false;          // before each launch, overwrite a buffer larger than the L2 so that
                              // the weights come from memory, as in a model's step
  bool stream_k = false;      // stage B as stream-K (K1Build::stream_k)
  int gemv_step = 0;          // > 0: in_proj's K step (k3-tiny's 256 columns make one step of 256)
  int gemv_ahead = 0;         // > 0: in_proj's W tiles in registers this many steps ahead (K1Build)
  bool prefetch = false;      // K1Build::prefetch_weights and prefetch_next (an o_proj-shaped next
                              // weight, [H, Pl] bf16, asked into L2)
  bool kda_loop = false;      // K1Build::kda_loop
  bool kda_weights = false;   // K1Build::kda_weights_ahead
  bool conv_split = false;    // K1Build::conv_state_split
  bool linear = false;        // K1Build::linear_in_proj
  int l2_fetch = 0;           // > 0: K1Build::gemv_l2_fetch
  bool sized = false;         // with `linear`: the build sized for the layer's own sources (k1_linear_sized)
  // Also checks proj (the in_proj output, from the scratch) against bf16r(W_in x) with x at vLLM's
  // rounding points (x rounded to bf16) and against W_in x with x in float64 (unrounded): on with
  // `linear`, whose numerics differ there (docs/k1_linear.md).
  bool check_proj = false;
};

std::string case_name(const K1Case& c);

struct K1Result {
  std::vector<OutputCheck> outputs;
  std::vector<int32_t> health;
  int launches = 1;
  int repeat_mismatches = 0;  // launches after the first whose bits differed from it
  std::string repeat_report;  // per such launch: which arrays, how many values, which rows
  std::string notes;          // with proj checked: how far vLLM's proj (x rounded) is from float64's
  bool ok() const;
  std::string report() const;
};

// Generates the case from `rng`, runs K1 on `executor` and compares it with the reference.
absl::StatusOr<K1Result> run_k1_case(const K1Case& c, conformance::Executor& executor, std::mt19937& rng);

}  // namespace monotile::kernels::k3
