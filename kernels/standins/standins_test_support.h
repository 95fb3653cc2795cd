// The stand-ins' test cases, shared by the interpreter and GPU tests: seeded weights of one layer
// of a rank uploaded to a device, fresh random inputs, outputs poisoned (NaN) before the launches,
// the launches on the device, and each output against the float64 reference (kernels/reference)
// by the rules of kernels/k3/k1_check.h.
#pragma once

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/k3/k1_check.h"
#include "runtime/device.h"

namespace monotile::kernels::standins {

struct StandinCase {
  std::string model = "k3-tiny";
  int tp = 1, rank = 0;
  int layer = 0;  // layer 0 (KDA + dense MLP) or an MLA layer
  int requests = 2, q = 2;
  int padded = 0;  // the last requests are padded (slots -1, one accepted token)
};

std::string case_name(const StandinCase& c);
// GoogleTest prints a case by its name.
inline void PrintTo(const StandinCase& c, std::ostream* out) {
  *out << case_name(c);
}

struct StandinResult {
  std::vector<kernels::k3::OutputCheck> outputs;
  bool ok() const;
  std::string report() const;
};

// The whole KDA + dense MLP layer (kda_mlp_standin.h) against layer_reference: P', the blocks, the
// KDA caches and m.
absl::StatusOr<StandinResult> run_kda_mlp_case(const StandinCase& c, runtime::Device& device,
                                               jit::Jit& jit, std::mt19937& rng);

// An MLA layer's host half (mla_standin.h) against the reference: the folded prefix, x (AttnRes),
// the latent cache after the append, and core (mla_attention_reference).
absl::StatusOr<StandinResult> run_mla_case(const StandinCase& c, runtime::Device& device,
                                           jit::Jit& jit, std::mt19937& rng);

}  // namespace monotile::kernels::standins
