// A TP reduction inside a layer kernel: every rank's program instances hand in their partial rows,
// a block of columns at a time, and every rank then reads the reduced rows [T, width] from one
// buffer behind one flag. K2's o_proj goes through it; TP 1 is LocalExchange. Peer-memory
// exchanges across processes (the [tp] work) implement the same interface, so the stages that hand
// in and read back never change. The reduced value is bf16(sum over ranks in rank order of
// bf16(partial)), as the stock all-reduce of bf16 partials gives (k3_layer.md 4.6, 4.7).
#pragma once

#include <cstdint>

#include "dsl/value.h"
#include "kernels/k3/handoff.h"

namespace monotile::kernels::k3 {

class Exchange {
 public:
  virtual ~Exchange() = default;
  // Hands in this rank's partial of columns `cols` [C] for every token: `partial` [C, P] f32 (a
  // GEMV task's accumulator, P >= tokens padded), one of `shares` calls that together cover every
  // column once. Call it from every program that computes a share.
  virtual void contribute(const dsl::Value& partial, const dsl::Value& cols, int shares) = 0;
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
  struct Buffers {
    dsl::Value out;      // ptr<bf16> [tokens, width]
    dsl::Value counter;  // ptr<i32>: one counter word (arrive)
    dsl::Value flag;     // ptr<i32>: one flag word
  };
  LocalExchange(Buffers buffers, int tokens, int64_t width, int32_t region, HandoffContext context)
      : b_(buffers), tokens_(tokens), width_(width), region_(region), context_(context) {}
  void contribute(const dsl::Value& partial, const dsl::Value& cols, int shares) override;
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
