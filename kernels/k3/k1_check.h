// One output of a K1 or K2 run against the float64 reference, by the rule of its kind (`monotile
// layer run --check` and the kernels' tests). Errors are measured in bf16 ulps at the reference value's magnitude; a
// rule allows a few ulps, an absolute floor near zero (a share of the output's RMS), and a small share
// of outliers within a loose bound (roundings that flipped upstream). NaN or infinity never passes;
// values marked exact (cache slots the step does not touch) must keep their bits. A route is judged
// as expert sets with a margin for near-ties.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace monotile::kernels::k3 {

struct CheckRule {
  double ulps = 0;               // the tight bound, in bf16 ulps at the reference's magnitude
  double abs_share = 0;          // or |error| <= abs_share x RMS(reference)
  double outlier_share = 0;      // at most this share of the values judged by the rule (those not
                                 // compared bit for bit) may miss the tight bound...
  double outlier_abs_share = 0;  // ...each within outlier_abs_share x RMS(reference)
  std::string why;               // the rule's justification, printed with --check
};

struct OutputCheck {
  std::string name;
  int64_t compared = 0;
  int64_t exact_compared = 0;  // of them, values that must keep their bits
  int64_t differing = 0;       // values judged by the rule that differ from the reference at all
  int64_t outliers = 0;
  int64_t failures = 0;
  double worst_ulps = 0;       // over the values judged by ulps; infinity for NaN or infinity
  double worst_rms = 0;        // the worst |error| / RMS(reference): near zero, ulps overstate an error
  double error_rms = 0;        // RMS(error) / RMS(reference) over the values judged by the rule
  std::string first_failure;   // "core[3, 17]: got ..., expected ..."
  bool passed() const { return failures == 0; }
};

// bf16 ulps of `error` at the magnitude of `reference`: error / 2^(floor(log2 |reference|) - 7),
// with |reference| floored at the smallest normal bf16 (2^-126).
double bf16_ulps(double error, double reference);

// Compares `actual` with `reference` element by element. `shape` names positions in messages;
// `exact[i]` (when given) marks values compared bit for bit as floats (their stored bits).
OutputCheck check_output(const std::string& name, std::span<const double> actual, std::span<const double> reference,
                         const std::vector<int64_t>& shape, const CheckRule& rule,
                         const std::vector<bool>* exact = nullptr);

// The rule of each output of K1 (prefix, blocks, x, core, conv_state, recurrent_state) and of K2
// (a, prefix' (the prefix after K2, P'), y, out).
CheckRule rule_for(const std::string& output);

// One row's route against the reference's: the same experts in the same order, or where they
// differ, experts whose keys sit within `margin` of the k-th key (the inputs' roundings can swap
// near-ties); on the same set, the weights within 1e-3 absolute. `keys` holds every expert's
// sigmoid(logit) + bias. "" when it passes, else what is wrong (expected and actual).
std::string check_route(std::span<const int> want_experts, std::span<const double> want_weights,
                        std::span<const double> keys, std::span<const int32_t> experts, std::span<const float> weights,
                        double margin);

}  // namespace monotile::kernels::k3
