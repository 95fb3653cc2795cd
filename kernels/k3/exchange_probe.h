// The exchange probe: K2's reduction across TP ranks (PeerExchange, the final one's region) alone
// in a kernel, for its own latency (runtime/decode/exchange_bench.cpp) and its bits
// (exchange_probe_ test): each program hands in 64-column shares of this rank's partial rows src
// [T, H] (bf16) as K2's GEMV tasks would, then waits for the reduced rows out [T, H] = bf16(sum
// over ranks in rank order of src_r). Each program stamps the global timer on entering and on
// leaving into `clock` (i64 [programs, 2]), so that the ranks' stamps, one GPU's clock, bound the
// exchange between the last program's start and the last program's end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "kernels/k3/peer_exchange.h"

namespace monotile::kernels::k3 {

struct ExchangeProbe {
  int tp = 2;      // ranks, 2..8
  int rank = 0;    // this one
  int tokens = 4;  // T, 1..kExchangeTokens
  int64_t hidden = 7168;
  int64_t wait_ns = 10'000'000'000;  // every wait's bound (handoff.h)
  int num_warps = 4;
};

// The peer buffer a probe of `tp` ranks at `hidden` exchanges over (the final region's width is
// `hidden`; the latent region is left at its least).
PeerExchangeLayout exchange_probe_layout(int tp, int64_t hidden);

// "k3_exchange_probe_tp{tp}r{rank}_t{T}_h{H}".
std::string exchange_probe_name(const ExchangeProbe& probe);

// Parameters, in order: src (ptr<bf16> [T, H]), out (ptr<bf16> [T, H]), counters (ptr<i32>, one
// word), flags (ptr<i32>, one word), epoch (ptr<i32>), slot (i32), health (ptr<i32>,
// health_words(programs)), alarm (ptr<i32>), clock (ptr<i64> [programs, 2]), then peer{r}
// (ptr<i32>) for r in 0..tp-1: rank r's buffer of exchange_probe_layout(tp, H).bytes() as this rank
// addresses it. The counter and flag words are zeroed once and never again (handoff.h arrive).
dsl::Program exchange_probe_program(const ExchangeProbe& probe);

}  // namespace monotile::kernels::k3
