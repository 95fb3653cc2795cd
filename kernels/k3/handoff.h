// Hand-offs between the program instances of a persistent layer kernel: data written with plain
// stores, then a flag set to the launch's tag with a release; consumers wait on the flag with
// acquire loads. Tags differ for every (step, layer) launch, so no flag is ever reset. Every wait is
// bounded: after the timeout it records itself in the rank's health words, raises the alarm and
// returns, and a wait that finds the rank already failed returns at once, so a failed launch runs to
// its end instead of hanging (the executor's fail-stop reads the health words).
#pragma once

#include <cstdint>

#include "dsl/value.h"

namespace monotile::kernels::k3 {

// What a kernel's waits need, built once at the top of the program.
struct HandoffContext {
  dsl::Value tag;     // i32: step_tag(epoch, slot)
  dsl::Value health;  // ptr<i32>: word 0 FAILED, then 8-word records per program
  dsl::Value alarm;   // ptr<i32>
  int64_t wait_ns = 0;
};

// Reads the epoch word and forms the tag (k1.h step_tag).
dsl::Value launch_tag(const dsl::Value& epoch, const dsl::Value& slot);

// Makes this program's earlier stores visible at gpu scope, then sets *flag = tag.
void publish(const dsl::Value& flag, const HandoffContext& context);

// One of `arrivals` programs that each finish a share of one piece of work: makes this program's
// earlier stores visible, counts it on *counter, and the last to arrive sets *flag = tag, publishing
// every share. A counter is never reset: every launch adds exactly `span` (0: arrival_span(arrivals)),
// a power of two >= arrivals (the last arrival adds the rest), so a launch's arrivals are told apart
// by the counter's low bits, through any number of launches and across the i32 wrap. Builds whose
// arrivals differ but that share a counter (a rank's widths share their scratch) pass one span.
void arrive(const dsl::Value& counter, int arrivals, const dsl::Value& flag, const HandoffContext& context,
            int span = 0);

// What arrive() adds to its counter per launch by default: the least power of two >= arrivals.
int arrival_span(int arrivals);

// Counts this program on *counter as arrive() does, without a flag, and returns whether it was the
// last of the `arrivals` (an i1 scalar); the last one's acquire covers every earlier share.
dsl::Value count_arrival(const dsl::Value& counter, int arrivals, int span = 0);
// The same for a number of arrivals known only at run time (i32 scalar, 1..span).
dsl::Value count_arrival(const dsl::Value& counter, const dsl::Value& arrivals, int span);

// Waits (wait_until, acquire at `scope`) until *flag holds the tag, the timeout passes (recorded
// under `region` and `index` with the value the wait's last load saw), or the rank fails: FAILED is
// re-read on every spin, so a wait under way when another program gives up ends at once, with no
// record. The flag is looked at first, so a flag already set costs one round trip. Later plain loads of
// every thread of the program see what the flag's publisher stored. A flag another rank sets in
// this rank's peer buffer (peer_exchange.h) is waited on at system scope.
void wait_flag(const dsl::Value& flag, int32_t region, const dsl::Value& index, const HandoffContext& context,
               dsl::MemScope scope = dsl::MemScope::kGpu);

}  // namespace monotile::kernels::k3
