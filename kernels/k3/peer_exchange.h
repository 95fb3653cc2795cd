// PeerExchange: K2's reductions across the TP ranks of one group, over their peer buffers
// (runtime/decode/peer_buffer.h; the seed's push-to-all all-reduce, seed_source.md 3.4). Each
// rank's program that computes a share of columns rounds its partial to bf16 and stores it into
// every rank's buffer (bf16 pairs in i32 words), in the mailbox of its own source rank, then sets
// that share's ready flag there to the launch's tag (data plus ready flags: the data with plain
// stores, then a system-scope release). It then waits until every rank's flag for the same share
// holds the tag in its own buffer and sums the ranks' partials in rank order 0..ranks-1 in f32,
// rounded once: every rank computes bf16(sum over r of bf16(partial_r)) from the same bits in the
// same order, so every rank holds the same result bit for bit and the replicated work downstream
// (the router above all) chooses the same experts everywhere. The shares that finish on this rank
// are counted as LocalExchange counts them, and the last publishes the reduced rows behind one
// flag.
//
// Tags and buffers: the tag is the launch's (handoff.h: step_tag(epoch, 128 + layer)), so every K2
// of every step sets flags no other launch sets, and nothing is ever zeroed (the buffers start
// zeroed; a tag is never 0). The buffer is double-buffered by epoch parity: a step uses the half
// of its epoch's parity, so a rank one step ahead writes the other half. Inside a half, every
// layer of a step reuses the same mailboxes: a rank's partials of layer l+1 reach a peer's o_proj
// and latent mailboxes only after the rank had the peer's MoE-output shares of layer l, which the
// peer sends once it has read those mailboxes of layer l; they reach its MoE-output mailboxes only
// after the rank had the peer's o_proj shares of layer l+1, sent once the peer's layer l ended.
// The epoch is masked to 22 bits in the tag (and wraps as an i32 beyond), so a stale flag could
// match only 2^22 steps later in the same half, and every step rewrites every flag of its half.
//
// Every wait is bounded (HandoffContext::wait_ns): one that gives up records its region, the peer
// it waited on (the flag index), the expected and the seen tag in the rank's health words, raises
// the alarm and sets FAILED, and every later wait of the launch returns at once: a rank whose peer
// stalled or died ends its launch, with garbage, instead of hanging (the executor's FailStop then
// stops every rank).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "dsl/value.h"
#include "kernels/k3/exchange.h"
#include "kernels/k3/handoff.h"

namespace monotile::kernels::k3 {

// Columns one contribution covers (K2's GEMV tasks: 64 rows each).
inline constexpr int kExchangeColumns = 64;
// The most ranks an exchange spans (the seed's TP 8), and the rows a mailbox holds (K2's most
// tokens): the layout is the same for every width, so the widths of a rank share one buffer.
inline constexpr int kMaxExchangeRanks = 8;
inline constexpr int kExchangeTokens = 16;

// K2's three exchanges, in their place in the buffer.
enum class ExchangeIndex : int { kOProj = 0, kLatent = 1, kFinal = 2 };
inline constexpr int kExchanges = 3;

// The peer buffer of `ranks` ranks for K2 at hidden size `hidden` and latent `latent`, in bytes
// from the buffer's start. One half a parity: first every exchange's flags, i32 [ranks (source),
// shares], then every exchange's data, bf16 [ranks (source), kExchangeTokens, width] (as i32
// words of two columns, the even one in the low half); each region 256-byte aligned. The half at
// parity p starts at p * half_bytes. Widths are even.
struct PeerExchangeLayout {
  struct Region {
    int64_t width = 0;   // columns reduced
    int64_t shares = 0;  // ceil(width / kExchangeColumns)
    int64_t flags = 0;   // byte offset in a half
    int64_t data = 0;    // byte offset in a half
  };
  int ranks = 0;
  std::array<Region, kExchanges> regions;
  int64_t half_bytes = 0;
  int64_t bytes() const { return 2 * half_bytes; }
};
PeerExchangeLayout peer_exchange_layout(int ranks, int64_t hidden, int64_t latent);

class PeerExchange final : public Exchange {
 public:
  struct Buffers {
    // ptr<i32>: rank r's peer buffer as this rank addresses it, for r in 0..ranks-1 (pointer
    // parameters: the DSL makes no pointer from an integer, so a device table of addresses could
    // not be used). The data are bf16 pairs in i32 words, so that one pointer a rank serves flags
    // and data (on AMD every pointer parameter holds two SGPRs through the kernel).
    std::vector<dsl::Value> buffers;
    dsl::Value parity;      // i32 scalar: the epoch's parity, 0 or 1
    ExchangeOutput output;  // this rank's reduced rows, counter and flag
  };
  // `rank` is this rank (0..layout.ranks-1); `region` and `peer_region` are the health-record
  // regions of a wait on the reduced rows and of a wait on a peer's flag (its index: that peer).
  PeerExchange(Buffers buffers, const PeerExchangeLayout& layout, ExchangeIndex index, int rank,
               int tokens, int32_t region, int32_t peer_region, HandoffContext context);
  void contribute(const dsl::Value& partial, const dsl::Value& cols, const dsl::Value& share,
                  int shares) override;
  void wait_reduced(const dsl::Value& index) override;
  dsl::Value out() const override { return b_.output.out; }
  dsl::Value done_flag() const override { return b_.output.flag; }

 private:
  Buffers b_;
  PeerExchangeLayout::Region region_layout_;
  int64_t half_bytes_;
  int ranks_;
  int rank_;
  int tokens_;
  int32_t region_;
  int32_t peer_region_;
  HandoffContext context_;
};

}  // namespace monotile::kernels::k3
