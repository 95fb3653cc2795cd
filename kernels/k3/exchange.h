// A TP reduction inside a layer kernel: every rank's program instances hand in their partial rows,
// a block of columns at a time, and every rank then reads the reduced rows [T, width] from one
// buffer behind one flag. K2's three reductions (o_proj's, the routed latent's, the final one) go
// through it: at TP 1 LocalExchange, across ranks PeerExchange (peer_exchange.h, over the TP
// group's peer buffers), so the stages that hand in and read back never change. The reduced value
// is bf16(sum over ranks in rank order of bf16(partial)), as the stock all-reduce of bf16 partials
// gives (k3_layer.md 4.6, 4.7), bit for bit the same on every rank.
#pragma once

#include <cstdint>

#include "dsl/value.h"
#include "kernels/k3/handoff.h"

namespace monotile::kernels::k3 {

// Where an exchange leaves the reduced rows on this rank, behind the flag that the last of the
// shares finishing here sets (arrive, handoff.h).
struct ExchangeOutput {
  dsl::Value out;      // ptr<bf16> [tokens, width]
  dsl::Value counter;  // ptr<i32>: one counter word (arrive)
  dsl::Value flag;     // ptr<i32>: one flag word
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  // Hands in this rank's partial of columns `cols` [C] for every token: `partial` [C, P] f32 (a
  // GEMV task's accumulator, P >= tokens padded), share number `share` (i32 scalar) of `shares`
  // calls that together cover every column once, share s covering columns [C s, C s + C). Call it
  // from every program that computes a share; every rank's programs make the same shares.
  virtual void contribute(const dsl::Value& partial, const dsl::Value& cols,
                          const dsl::Value& share, int shares) = 0;
  // Waits until every column of the reduced rows is readable from out(); `index` goes into a
  // health record if the wait gives up.
  virtual void wait_reduced(const dsl::Value& index) = 0;
  // The reduced rows: ptr<bf16> [T, width].
  virtual dsl::Value out() const = 0;
  // The flag wait_reduced waits on (for stages that wait themselves, as AttnRes does for a delta).
  virtual dsl::Value done_flag() const = 0;
};

// TP 1: the partial is the sum. contribute() rounds it into `out` and counts the share; the last
// share publishes the flag.
class LocalExchange final : public Exchange {
 public:
  using Buffers = ExchangeOutput;
  LocalExchange(Buffers buffers, int tokens, int64_t width, int32_t region, HandoffContext context)
      : b_(buffers), tokens_(tokens), width_(width), region_(region), context_(context) {}
  void contribute(const dsl::Value& partial, const dsl::Value& cols, const dsl::Value& share,
                  int shares) override;
  void wait_reduced(const dsl::Value& index) override;
  dsl::Value out() const override { return b_.out; }
  dsl::Value done_flag() const override { return b_.flag; }

 private:
  Buffers b_;
  int tokens_;
  int64_t width_;
  int32_t region_;
  HandoffContext context_;
};

}  // namespace monotile::kernels::k3
