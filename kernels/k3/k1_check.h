// One output of a K1 run against the float64 reference, by the rule of its kind (`monotile layer run
// --check` and K1's tests). Errors are measured in bf16 ulps at the reference value's magnitude; a
// rule allows a few ulps, an absolute floor near zero (a share of the output's RMS), and a small share
// of outliers within a loose bound (roundings that flipped upstream). NaN or infinity never passes;
// values marked exact (cache slots the step does not touch) must keep their bits.
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

// The rule of each output of K1 (prefix, blocks, x, core, conv_state, recurrent_state).
CheckRule rule_for(const std::string& output);

}  // namespace monotile::kernels::k3
