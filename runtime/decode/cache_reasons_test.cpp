#include "runtime/decode/cache_reasons.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace monotile::runtime::decode {
namespace {

using model::Dtype;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kQ = 4;

struct K3Rank {
  model::ModelConfig config = *model::load_config("k3");
  model::RankDims dims = *model::rank_dims(config, 8, 0);
};

const K3Rank& k3() {
  static const K3Rank rank;
  return rank;
}

// TP 8: 12 heads, 3 x 1536 conv channels; 3 slots, state_len q + 2.
KdaCache good_cache(std::string layer = "model.layers.1.self_attn") {
  return {std::move(layer), TensorView::dense(Dtype::kBF16, {3, kQ + 2, 4608}, 0x1000),
          TensorView::dense(Dtype::kF32, {3, 12, 128, 128}, 0x100000)};
}

std::vector<std::string> reasons(const std::vector<KdaCache>& caches) {
  return cache_reasons(caches, k3().config, k3().dims, kQ);
}

TEST(CacheReasons, ChannelsLastIsAccepted) {
  EXPECT_THAT(reasons({good_cache()}), ElementsAre());
}

TEST(CacheReasons, DimFirstIsAccepted) {
  KdaCache cache = good_cache();
  cache.conv = TensorView::dense(Dtype::kBF16, {3, 4608, kQ + 2});
  EXPECT_THAT(reasons({cache}), ElementsAre());
}

TEST(CacheReasons, ChannelsLastViewedDimFirstIsAccepted) {
  KdaCache cache = good_cache();
  cache.conv.shape = {3, 4608, kQ + 2};
  cache.conv.strides = {4608 * (kQ + 2), 1, 4608};
  EXPECT_THAT(reasons({cache}), ElementsAre());
}

TEST(CacheReasons, PaddedSlotsAreAccepted) {
  KdaCache cache = good_cache();
  cache.recurrent.strides[0] = 12 * 128 * 128 + 64;
  cache.conv.strides[0] = (kQ + 2) * 4608 + 8;
  EXPECT_THAT(reasons({cache}), ElementsAre());
}

// The kernels read the states in 16-byte vectors from their base addresses.
TEST(CacheReasons, MisalignedStates) {
  KdaCache cache = good_cache();
  cache.conv.data += 2;
  cache.recurrent.data += 8;
  EXPECT_THAT(
      reasons({cache}),
      ElementsAre(
          "layer \"model.layers.1.self_attn\": conv state starts at byte address 0x1002, not a "
          "multiple of 16 (the kernels read it in 16-byte vectors: give it its own allocation, or "
          "an offset into one that is a multiple of 16 bytes)",
          HasSubstr("recurrent state starts at byte address 0x100008, not a multiple of 16")));
}

TEST(CacheReasons, ConvDtypeOtherThanBf16) {
  KdaCache cache = good_cache();
  cache.conv.dtype = Dtype::kF16;
  EXPECT_THAT(reasons({cache}), ElementsAre("layer \"model.layers.1.self_attn\": conv state dtype "
                                            "F16: expected BF16 (mamba_cache_dtype "
                                            "\"bfloat16\" or the model's dtype)"));
}

TEST(CacheReasons, RecurrentDtypeOtherThanFp32SkipsItsShape) {
  KdaCache cache = good_cache();
  cache.recurrent = TensorView::dense(Dtype::kBF16, {3, 7});
  EXPECT_THAT(
      reasons({cache}),
      ElementsAre("layer \"model.layers.1.self_attn\": recurrent state dtype BF16: expected "
                  "F32 (mamba_ssm_cache_dtype \"float32\")"));
}

TEST(CacheReasons, RecurrentShapeOfAnotherRank) {
  KdaCache cache = good_cache();
  cache.recurrent = TensorView::dense(Dtype::kF32, {3, 24, 128, 128});
  EXPECT_THAT(reasons({cache}),
              ElementsAre(HasSubstr("recurrent state F32 [3, 24, 128, 128] strides [393216, 16384, "
                                    "128, 1]: expected [slots, 12, 128, 128]")));
}

TEST(CacheReasons, ASlotsRecurrentStateMustBeDense) {
  KdaCache cache = good_cache();
  cache.recurrent.strides = {12 * 128 * 128, 128 * 128, 1, 128};  // K-first
  EXPECT_THAT(
      reasons({cache}),
      ElementsAre(HasSubstr("a slot's recurrent state must be dense: found F32 [3, 12, 128, "
                            "128] strides [196608, 16384, 1, 128], expected strides [*, "
                            "16384, 128, 1]")));
}

TEST(CacheReasons, RecurrentSlotStrideMultipleOfFour) {
  KdaCache cache = good_cache();
  cache.recurrent.strides[0] = 12 * 128 * 128 + 2;
  EXPECT_THAT(reasons({cache}),
              ElementsAre(HasSubstr("recurrent slot stride 196610: expected a multiple of 4 of at "
                                    "least 196608 (the kernel's state_slot_stride)")));
}

TEST(CacheReasons, ConvStateLenBelowQPlusTwo) {
  KdaCache cache = good_cache();
  cache.conv = TensorView::dense(Dtype::kBF16, {3, 3, 4608});
  EXPECT_THAT(
      reasons({cache}),
      ElementsAre(HasSubstr("conv state_len 3 (BF16 [3, 3, 4608] strides [13824, 4608, 1]): "
                            "expected at least q + 2 = 6 (short_conv_kernel_size - 1 + "
                            "num_speculative_tokens)")));
}

TEST(CacheReasons, ConvShapeOfNeitherLayout) {
  KdaCache cache = good_cache();
  cache.conv = TensorView::dense(Dtype::kBF16, {3, 6, 9216});
  EXPECT_THAT(reasons({cache}),
              ElementsAre(HasSubstr("conv state BF16 [3, 6, 9216] strides [55296, 9216, 1]: "
                                    "expected channels-last [slots, state_len, 4608] or dim-first "
                                    "[slots, 4608, state_len]")));
}

TEST(CacheReasons, ConvStridesMustBePositive) {
  KdaCache cache = good_cache();
  cache.conv.strides[1] = 0;
  EXPECT_THAT(
      reasons({cache}),
      ElementsAre(HasSubstr("conv state strides [27648, 0, 1]: expected positive strides")));
}

TEST(CacheReasons, ConvSlotsMustNotOverlap) {
  KdaCache cache = good_cache();
  cache.conv.strides[0] = 4608;
  EXPECT_THAT(reasons({cache}),
              ElementsAre(HasSubstr("conv slot stride 4608 lets slots overlap: expected at least "
                                    "27648")));
}

TEST(CacheReasons, SlotCountsOfThePairDiffer) {
  KdaCache cache = good_cache();
  cache.recurrent = TensorView::dense(Dtype::kF32, {5, 12, 128, 128});
  EXPECT_THAT(reasons({cache}),
              ElementsAre(HasSubstr("conv state has 3 slots, recurrent state 5: expected one slot "
                                    "count for the pair")));
}

TEST(CacheReasons, EveryReasonOfEveryLayerInLayerOrder) {
  KdaCache first = good_cache("model.layers.1.self_attn");
  first.conv.dtype = Dtype::kF32;
  first.recurrent.strides[0] = 196610;
  KdaCache second = good_cache("model.layers.2.self_attn");
  second.conv = TensorView::dense(Dtype::kBF16, {3, 2, 4608});
  std::vector<std::string> found = reasons({first, second});
  ASSERT_EQ(found.size(), 3u);
  EXPECT_THAT(found[0], HasSubstr("layers.1.self_attn\": conv state dtype F32"));
  EXPECT_THAT(found[1], HasSubstr("layers.1.self_attn\": recurrent slot stride 196610"));
  EXPECT_THAT(found[2], HasSubstr("layers.2.self_attn\": conv state_len 2"));
  std::vector<std::string> swapped = reasons({second, first});
  ASSERT_EQ(swapped.size(), 3u);
  EXPECT_THAT(swapped[0], HasSubstr("layers.2.self_attn\": conv state_len 2"));
  EXPECT_THAT(swapped[2], HasSubstr("layers.1.self_attn\": recurrent slot stride 196610"));
}

}  // namespace
}  // namespace monotile::runtime::decode
