// K2 test cases shared by the interpreter and GPU tests: random inputs and weights of one rank's
// layer at any model shape (MXFP4 experts included), one K2 run on a conformance Executor with every
// output poisoned, and the checks against the float64 reference (gtest assertions: the file is
// compiled into the test binaries, not into a library).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/k3/k2.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/config.h"
#include "tests/conformance/executor.h"

namespace monotile::kernels::k3 {

// How a case shapes the router's inputs: random, exact ties (odd experts copy the even ones),
// NaN scores (every even expert), or every row forced onto experts 0..top_k-1 (only their MXFP4
// bytes are then held, which K3's 896 experts need on the interpreter).
enum class Router { kRandom, kTies, kNan, kSameExperts };

struct K2Case {
  std::string model = "k3-tiny";
  int tp = 1;
  int layer = 1;
  int tokens = 4;
  int programs = 8;
  Router router = Router::kRandom;
  std::string target = {};  // non-empty: the build is shaped for this target (k2_for_target)
  bool stage_clock = false;  // the stage_clock build (K2Build::stage_clock); its name ends "_clock"
  int prefetch_steps = 0;  // K2Build::expert_prefetch_steps; others end the name "_pf{n}"
  int routed_chunks = K2Build{}.routed_chunks;  // K2Build::routed_chunks; others end the name "_rc{n}"
  int latent_rows = K2Build{}.latent_rows;  // K2Build::latent_rows; others end the name "_lr{n}"
  int front_parts = 0;  // K2Build::front_parts; nonzero ends the name "_kp{n}"
  int gemv_step = 0;    // nonzero: K2Build::gemv_step (the name then ends "_s{n}")
  int expert_stages = 0;  // nonzero: K2Build::expert_stages (the name then ends "_es{n}")
  int expert_stage_steps = 1;  // K2Build::expert_stage_steps (others end the name "_ew{n}")
  bool codes_ahead = false;    // K2Build::expert_codes_ahead (the name then ends "_ec")
  int stage_fetch = 0;  // K2Build::expert_stage_fetch (others end the name "_sf{n}")
  int task_loop = 0;    // K2Build::expert_task_loop (others end the name "_et{n}")
  int first_fetch = 0;  // K2Build::expert_first_fetch (others end the name "_ef{n}")
  bool up_ahead = false;  // K2Build::up_ahead (the name then ends "_ua")
  int routed_stages = 0;  // nonzero: K2Build::routed_stages (the name then ends "_rs{n}")
  bool shared_early = false;  // K2Build::shared_early (the name then ends "_fe")
  int top_k = 0;  // nonzero: the config's num_experts_per_token (the name then ends "_k{n}")
  int experts = 0;  // nonzero: the config's num_experts (the name then ends "_e{n}")
  bool chunk_handoff = false;  // K2Build::chunk_handoff (the name then ends "_ch")
  // Health cases (not in case_name): the launch's epoch word; a nonzero fault_ns builds the fault
  // hook (K2Build::fault_ns) for epoch fault_epoch at this layer's slot; a nonzero wait_ns bounds
  // the waits instead of the interpreter's minutes; poison_union fills the route and the union's
  // scratch with ids outside [0, E) and a union size past T top_k, as a stale scratch may hold.
  int32_t epoch = 3;
  // Launches on one scratch, the checked one last: each earlier one with its own epoch, then the
  // inputs restored and every output and scratch byte past the control words poisoned again (the
  // control words carry over, as the counters that no launch resets do between steps).
  int launches = 1;
  int32_t fault_epoch = 0;
  int64_t fault_ns = 0;
  int64_t wait_ns = 0;
  bool poison_union = false;
};

std::string case_name(const K2Case& c);

// One case's inputs on the host (bf16 as bits, MXFP4 as the checkpoint's bytes), named as K2's
// parameters, and the float64 reference of its stages.
struct K2Inputs {
  K2Case c;
  K2Build build;  // on the interpreter with waits bounded by minutes
  model::ModelConfig config;
  int64_t block_count = 0;  // blocks is [T, block_count, H]
  std::vector<uint16_t> core, w_o, prefix, blocks, mlp_res_norm, mlp_res_proj, post_norm, w_gate, w_ld, w_gu, w_sd,
      latent_norm, w_up;
  std::vector<float> gate_bias;
  std::vector<uint8_t> w13, w13_scale, w2, w2_scale;
  reference::RankLayerWeights weights;  // the MoE's, for its reference
  std::vector<double> a, prefix_after, y;  // the reference's a, P' and y [T, H]
  std::vector<reference::RouterChoice> route;
  std::vector<std::vector<double>> keys;  // per row: sigmoid(logit) + bias per expert
};

// Generates the case, seeded by the test's case rng; `interpreter` bounds waits by minutes. A
// refused build fails the test and leaves the tensors empty.
K2Inputs make_k2_inputs(const K2Case& c, bool interpreter);

// What a K2 run wrote: a and y from its scratch, P' in place of the prefix, the route and m.
struct K2Outputs {
  std::vector<uint16_t> a, prefix, y, out;  // bf16 bits [T, H]
  std::vector<int32_t> route_experts;       // [T, top_k]
  std::vector<float> route_weights;
};

// Checks a, P', y, the route (near-ties within the margin, k1_check.h check_route) and m against
// the reference, with gtest assertions. With `ranks` > 1, `got` is one rank's of a TP run whose
// reductions summed that many bf16-rounded partials (PeerExchange) and `in` the TP 1 case: a (and
// P' and y after it) may then differ from the one-rounding reference by the partials' roundings.
// m is then compared to the reference over `ranks` shards of the case's weights, summing the same
// bf16-rounded partials, on the kernel's y.
void check_k2_outputs(const K2Inputs& in, const K2Outputs& got, int ranks = 1);

// One launch of K2 on the case's inputs, outputs poisoned first: the launch's status (the
// interpreter refuses an out-of-bounds access), the health words, what it wrote and, for a
// stage_clock build, its clock words [programs, kK2ClockPoints] (zeroed before the launch).
struct K2Run {
  absl::Status launched;
  std::vector<int32_t> health;
  K2Outputs got;
  std::vector<int64_t> clock;
};
K2Run run_k2(const K2Inputs& in, conformance::Executor& executor);

// A stage_clock run's clock words (gtest assertions): every program passed every point but the
// first-task points of H and I (only programs with such a task pass them), and the points a program
// passed never go back in time.
void check_k2_clock(const K2Run& run, int programs);

// Generates the case (seeded by the test's case rng), runs K2 on `executor` and checks a, P', y,
// the route and the MoE output against the reference, and a stage_clock build's clock.
void run_k2_case(const K2Case& c, conformance::Executor& executor);

}  // namespace monotile::kernels::k3
