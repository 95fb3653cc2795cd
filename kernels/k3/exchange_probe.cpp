// The exchange probe's program; see exchange_probe.h.
#include "kernels/k3/exchange_probe.h"

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"
#include "kernels/k3/handoff.h"
#include "kernels/k3/k2.h"
#include "support/check.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

PeerExchangeLayout exchange_probe_layout(int tp, int64_t hidden) {
  return peer_exchange_layout(tp, hidden, 2);
}

std::string exchange_probe_name(const ExchangeProbe& p) {
  return absl::StrCat("k3_exchange_probe_tp", p.tp, "r", p.rank, "_t", p.tokens, "_h", p.hidden);
}

Program exchange_probe_program(const ExchangeProbe& p) {
  MT_CHECK(p.tp >= 2 && p.tp <= kMaxExchangeRanks && p.rank >= 0 && p.rank < p.tp,
           "a probe exchanges among 2..8 ranks, this one of them");
  MT_CHECK(p.tokens >= 1 && p.tokens <= kExchangeTokens && p.hidden % kExchangeColumns == 0,
           "a probe's rows fit a mailbox and its columns whole shares");
  Builder b(exchange_probe_name(p), {.num_warps = p.num_warps, .min_programs_per_sm = 1});
  auto src = b.arg("src", ptr(bf16));
  auto out = b.arg("out", ptr(bf16));
  auto counters = b.arg("counters", ptr(i32));
  auto flags = b.arg("flags", ptr(i32));
  auto epoch = b.arg("epoch", ptr(i32));
  auto slot = b.arg("slot", i32);
  auto health = b.arg("health", ptr(i32));
  auto alarm = b.arg("alarm", ptr(i32));
  auto clock = b.arg("clock", ptr(i64));
  std::vector<Value> peers;
  for (int r = 0; r < p.tp; ++r) peers.push_back(b.arg(absl::StrCat("peer", r), ptr(i32)));
  store(clock + program_id(0).to(i64) * 2, global_timer());
  HandoffContext hc{
      .tag = launch_tag(epoch, slot), .health = health, .alarm = alarm, .wait_ns = p.wait_ns};
  const PeerExchangeLayout layout = exchange_probe_layout(p.tp, p.hidden);
  // Region ids as K2's final reduction's (k2.h K2Region): the reduced rows, and a peer's share.
  PeerExchange exchange(
      PeerExchange::Buffers{.buffers = peers,
                            .parity = load(epoch, {.cache = Cache::volatile_}) & 1,
                            .output = {.out = out, .counter = counters, .flag = flags}},
      layout, ExchangeIndex::kFinal, p.rank, p.tokens, static_cast<int32_t>(K2Region::kMoe),
      static_cast<int32_t>(K2Region::kFinalPeers), hc);
  const int shares = static_cast<int>(p.hidden / kExchangeColumns);
  range(program_id(0), shares, num_programs(0), [&](Value share) {
    auto cols = share * kExchangeColumns + arange(0, kExchangeColumns);
    auto ts = arange(0, kExchangeTokens);
    // This rank's partial of the share's columns [C, P] (K2's GEMV tasks' layout), rows past T
    // zero.
    auto partial =
        load(src + row(ts) * p.hidden + col(cols), col(cols < p.hidden) & row(ts < p.tokens), 0.0f);
    exchange.contribute(partial.to(f32), cols, share, shares);
  });
  exchange.wait_reduced(full({}, 0, i32));
  store(clock + program_id(0).to(i64) * 2 + 1, global_timer());
  return b.finish();
}

}  // namespace monotile::kernels::k3
