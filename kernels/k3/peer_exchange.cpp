#include "kernels/k3/peer_exchange.h"

#include "dsl/dsl.h"
#include "support/check.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

int64_t aligned(int64_t bytes) {
  return (bytes + 255) / 256 * 256;
}

}  // namespace

PeerExchangeLayout peer_exchange_layout(int ranks, int64_t hidden, int64_t latent) {
  MT_CHECK(ranks >= 1 && ranks <= kMaxExchangeRanks, "an exchange spans 1..8 ranks");
  MT_CHECK(hidden % 2 == 0 && latent % 2 == 0,
           "an exchange's widths are even (bf16 pairs in words)");
  PeerExchangeLayout layout;
  layout.ranks = ranks;
  const std::array<int64_t, kExchanges> widths = {hidden, latent, hidden};
  int64_t at = 0;
  for (int i = 0; i < kExchanges; ++i) {
    PeerExchangeLayout::Region& region = layout.regions[static_cast<size_t>(i)];
    region.width = widths[static_cast<size_t>(i)];
    region.shares = (region.width + kExchangeColumns - 1) / kExchangeColumns;
    region.flags = at;
    at = aligned(at + ranks * region.shares * 4);
  }
  for (PeerExchangeLayout::Region& region : layout.regions) {
    region.data = at;
    at = aligned(at + int64_t{ranks} * kExchangeTokens * region.width * 2);
  }
  layout.half_bytes = at;
  return layout;
}

PeerExchange::PeerExchange(Buffers buffers, const PeerExchangeLayout& layout, ExchangeIndex index,
                           int rank, int tokens, int32_t region, int32_t peer_region,
                           HandoffContext context)
    : b_(std::move(buffers)),
      region_layout_(layout.regions[static_cast<size_t>(index)]),
      half_bytes_(layout.half_bytes),
      ranks_(layout.ranks),
      rank_(rank),
      tokens_(tokens),
      region_(region),
      peer_region_(peer_region),
      context_(context) {
  MT_CHECK(static_cast<int>(b_.buffers.size()) == ranks_,
           "a PeerExchange takes every rank's buffer");
  MT_CHECK(rank_ >= 0 && rank_ < ranks_, "a PeerExchange's rank is one of its ranks");
  MT_CHECK(tokens_ >= 1 && tokens_ <= kExchangeTokens, "a mailbox holds at most 16 rows");
}

// `cols` are the share's columns [C share, C share + C) (exchange.h): the words follow from the
// share.
void PeerExchange::contribute(const Value& partial, const Value&, const Value& share, int shares) {
  MT_CHECK(partial.shape()[0] == kExchangeColumns,
           "a contribution covers kExchangeColumns columns");
  MT_CHECK(shares == region_layout_.shares, "the shares are the layout's");
  constexpr int kWords = kExchangeColumns / 2;
  const int64_t padded = partial.shape()[1];
  const int64_t words = region_layout_.width / 2;  // a row's bf16 pairs
  auto ts = arange(0, padded);
  // The share's words: columns 2k and 2k + 1 in word k, the low half first (bf16 pairs in memory).
  auto ks = share * kWords + arange(0, kWords);
  auto mask = col(ks < words) & row(ts < tokens_);
  // This epoch's half, in i32 words (the half and the regions are 256-byte aligned).
  auto half = b_.parity.to(i64) * (half_bytes_ / 4);
  auto data_at = half + region_layout_.data / 4;
  auto flags_at = half + region_layout_.flags / 4 + share.to(i64);
  // Source `source`'s mailbox words [kWords, P] in a buffer, at this share's columns.
  auto mailbox = [&](const Value& buffer, int source) {
    return buffer + data_at + int64_t{source} * kExchangeTokens * words + row(ts) * words + col(ks);
  };
  // bf16(partial) as words: columns 2k and 2k + 1 of the share side by side, each rounded to bf16
  // (an f32 whose low 16 bits are zero), the even one's bits in the low half.
  auto pairs = split(trans(reshape(partial, {kWords, 2, padded}), {0, 2, 1}));
  auto even = pairs.first.to(bf16).to(f32).bitcast(i32);
  auto odd = pairs.second.to(bf16).to(f32).bitcast(i32);
  auto rounded = (odd & static_cast<int32_t>(0xffff0000u)) | ((even >> 16) & 0xffff);
  // Into this rank's mailbox of every rank's buffer (its own included), then, once every thread's
  // stores are ordered before it at system scope, the share's flag in each.
  for (int r = 0; r < ranks_; ++r)
    store(mailbox(b_.buffers[static_cast<size_t>(r)], rank_), rounded, mask);
  fence(Order::release, Scope::system);
  barrier();
  for (int r = 0; r < ranks_; ++r) {
    store_release(b_.buffers[static_cast<size_t>(r)] + flags_at + int64_t{rank_} * shares,
                  context_.tag, Scope::system);
  }
  // Every rank's partial of the share, from this rank's own buffer, summed in rank order: each
  // half of a word is its bf16 exactly as an f32 (the word shifted up, or its low half cleared).
  const Value& own = b_.buffers[static_cast<size_t>(rank_)];
  for (int source = 0; source < ranks_; ++source) {
    wait_flag(own + flags_at + int64_t{source} * shares, peer_region_, full({}, source, i32),
              context_, Scope::system);
  }
  auto even_sum = zeros({kWords, padded}, f32);
  auto odd_sum = zeros({kWords, padded}, f32);
  for (int source = 0; source < ranks_; ++source) {
    // L2, not L1: a line this program read in an earlier step must not be served stale.
    auto word = load(mailbox(own, source), mask, 0, {.cache = Cache::global});
    even_sum = even_sum + (word << 16).bitcast(f32);
    odd_sum = odd_sum + (word & static_cast<int32_t>(0xffff0000u)).bitcast(f32);
  }
  auto out = b_.output.out + row(ts) * region_layout_.width + col(ks * 2);
  store(out, even_sum.to(bf16), mask);
  store(out + 1, odd_sum.to(bf16), mask);
  arrive(b_.output.counter, shares, b_.output.flag, context_);
}

void PeerExchange::wait_reduced(const Value& index) {
  wait_flag(b_.output.flag, region_, index, context_);
}

}  // namespace monotile::kernels::k3
