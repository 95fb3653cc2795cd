// K2's stage clock (K2Build::stage_clock): the points, in program order, where each program of a
// clock build stores global_timer() (ns) into clock[program * kK2ClockPoints + point]. A point a
// program never passes (a stage with no task for it) keeps what the buffer held (zero when it was
// zeroed), so a program's nonzero points never decrease.
#pragma once

#include <array>
#include <optional>

#include "dsl/value.h"

namespace monotile::kernels::k3 {

enum class K2ClockPoint : int {
  kStart,         // the program starts (before the fault hook)
  kOProj,         // A: its o_proj tasks handed in
  kAttnResDelta,  // B: its first task's wait for o_proj's rows passed
  kAttnResHalf,   // B: its first task's partials handed in
  kAttnResRow,    // B: its first task's wait for the row's partials passed
  kAttnRes,       // B: its MLP AttnRes tasks done
  kLogits,        // C: its router logits tasks done (a block's last with the block's candidates)
  kRouteReady,    // C: its first route row's wait (every logit) passed
  kTopk,          // C: its first route row's top-k chosen (from the blocks' candidates)
  kRouter,        // C: its route rows done
  kLatent,        // D and E: its latent and shared-activation tasks done (one loop takes both)
  kSharedAct,     // E: the same point (kept so that the table's columns stay where they were)
  kUnion,         // G: the union built (program 0) or passed (the others)
  kExpertsReady,  // H: its waits (the union, the latent; once a program with tasks) passed
  kExpertFirst,   // H: its first task (32 gate and 32 up rows of a union expert's w13) done
  kExperts,       // H: its expert activation tasks done
  kRoutedReady,   // I: its wait (every expert activation; once a program with tasks) passed
  kRoutedFirst,   // I: its first task (a union chunk's w2 on 64 latent rows) done
  kRouted,        // I: its routed-sum chunk tasks done
  kLatentSum,     // I': its chunk sums handed to the latent exchange
  kNormed,        // J: its routed RMSNorm rows done
  kShared,        // F: its shared partial tasks done
  kFinal,         // K: its shared + up-projection columns handed in (the program's end)
};

inline constexpr int kK2ClockPoints = static_cast<int>(K2ClockPoint::kFinal) + 1;

// The points' short names, in order (k2_bench's table).
inline constexpr std::array<const char*, kK2ClockPoints> kK2ClockPointNames = {
    "start",        "A o_proj",     "B delta",    "B half",    "B row",     "B attn_res",
    "C logits",     "C ready",      "C top-k",    "C router",  "D latent",  "E shared act",
    "G union",      "H ready",      "H 1st task", "H experts", "I ready",   "I 1st task",
    "I routed sum", "I' chunk sum", "J norm",     "F shared",  "K up + out"};

// A program's clock: without a clock parameter (a plain build) every tick builds nothing.
class K2Clock {
 public:
  K2Clock() = default;
  explicit K2Clock(dsl::Value clock) : clock_(clock) {}
  // Stores the global timer at this program's `point`.
  void tick(K2ClockPoint point) const;
  // The same where the i1 scalar `when` holds (e.g. a loop's first task).
  void tick_if(const dsl::Value& when, K2ClockPoint point) const;

 private:
  std::optional<dsl::Value> clock_;
};

}  // namespace monotile::kernels::k3
