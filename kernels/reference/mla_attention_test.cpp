// The MLA attention reference on k3-tiny's layer 3 with seeded weights: it equals attention with
// kv_b applied to every cached token (no absorption); one visible token gives its gated value;
// later tokens of a step leave earlier rows alone; padded requests are zero and touch no entry; TP
// ranks hold the TP 1 output's head columns; bf16 rounding lands on bf16 values near the exact
// result; malformed inputs are refused with every reason.
#include "kernels/reference/mla_attention.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::reference {
namespace {

using Vec = std::vector<double>;

constexpr int kLayer = 3;
constexpr int64_t kSlots = 4, kCapacity = 8;

// Layer 3's attention weights of every rank at TP 1 and 2.
struct Weights {
  model::ModelConfig config;
  std::map<int, std::vector<RankLayerWeights>> ranks;  // [tp] -> ranks
};

Weights* g_weights = nullptr;

class MlaAttention : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<model::ModelConfig> config = model::load_config("k3-tiny");
    ASSERT_TRUE(config.ok()) << config.status();
    absl::StatusOr<std::unique_ptr<model::SeededWeights>> seeded =
        model::SeededWeights::create(*config, testing::shared_seed("mla reference weights"));
    ASSERT_TRUE(seeded.ok()) << seeded.status();
    g_weights = new Weights{*config, {}};
    for (int tp : {1, 2}) {
      for (int r = 0; r < tp; ++r) {
        absl::StatusOr<model::RankPlan> plan = model::plan_rank(*config, tp, r);
        ASSERT_TRUE(plan.ok()) << plan.status();
        // The attention's tensors only: the MoE's are not read here.
        model::LayerPlan layer = plan->layers[kLayer];
        std::erase_if(layer.tensors,
                      [](const model::RankTensor& t) { return !t.name.starts_with("self_attn."); });
        absl::StatusOr<RankLayerWeights> w = load_rank_layer(layer, plan->dims, **seeded);
        ASSERT_TRUE(w.ok()) << w.status();
        g_weights->ranks[tp].push_back(*std::move(w));
      }
    }
  }
  static void TearDownTestSuite() {
    delete g_weights;
    g_weights = nullptr;
  }
  const model::ModelConfig& config() const { return g_weights->config; }
  const RankLayerWeights& tp1() const { return g_weights->ranks[1][0]; }
  int64_t entry() const { return config().kv_lora_rank + config().qk_rope_head_dim; }
  int64_t core_width() const { return int64_t{config().num_attention_heads} * config().v_head_dim; }
};

Vec random_bf16(size_t n, double scale, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, scale);
  Vec out(n);
  for (double& v : out) v = model::round_to_bf16(normal(rng));
  return out;
}

// A cache of random bf16 entries (norm-sized c_kv, unit k_pe), as earlier steps would leave it.
MlaCache random_cache(const model::ModelConfig& c, std::mt19937& rng) {
  MlaCache cache = make_mla_cache(c, kSlots, kCapacity);
  cache.entries = random_bf16(cache.entries.size(), 1.0, rng);
  return cache;
}

::testing::AssertionResult agree(const Vec& actual, const Vec& expected,
                                 testing::Tolerance tolerance) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "sizes " << actual.size() << " and " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(actual[i]) || !testing::agrees(actual[i], expected[i], tolerance)) {
      return ::testing::AssertionFailure()
             << "index " << i << ": " << actual[i] << " vs " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

constexpr testing::Tolerance kFp64{1e-10, 1e-10};

// One token's projections in float64, written from the checkpoint's names: the full query per head
// [nope | rope], the cache entry [kv_a_layernorm(c_kv) | k_pe] and the gate.
struct Projected {
  Vec q, entry, gate;
};

Projected project(const model::ModelConfig& c, const RankLayerWeights& w,
                  std::span<const double> x) {
  const int64_t heads = w.dims.mla_heads, kv_a = c.kv_lora_rank + c.qk_rope_head_dim;
  const int64_t rows = c.q_lora_rank + kv_a + heads * c.v_head_dim;
  Vec fused = matvec(w.at("self_attn.fused_qkv_a_proj.weight"), x, rows, c.hidden_size);
  std::span<const double> all(fused);
  Vec q_c = rms_norm(all.subspan(0, c.q_lora_rank), w.at("self_attn.q_a_layernorm.weight"),
                     c.rms_norm_eps, Rounding::kNone);
  Projected p;
  p.entry = rms_norm(all.subspan(c.q_lora_rank, c.kv_lora_rank),
                     w.at("self_attn.kv_a_layernorm.weight"), c.rms_norm_eps, Rounding::kNone);
  p.entry.insert(p.entry.end(), fused.begin() + c.q_lora_rank + c.kv_lora_rank,
                 fused.begin() + c.q_lora_rank + kv_a);
  p.gate.assign(fused.begin() + c.q_lora_rank + kv_a, fused.end());
  p.q = matvec(w.at("self_attn.q_b_proj.weight"), q_c,
               heads * (c.qk_nope_head_dim + c.qk_rope_head_dim), c.q_lora_rank);
  return p;
}

// The attention without absorption: per head, k = [W_UK c_kv | k_pe] and v = W_UV c_kv of every
// visible token, softmax(q k / sqrt(nope + rope)) v, times sigmoid(gate). `cache` is before the
// step.
Vec unabsorbed(const model::ModelConfig& c, const RankLayerWeights& w, const Vec& x,
               const MlaStep& step, MlaCache cache) {
  const int64_t heads = w.dims.mla_heads, nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim,
                v = c.v_head_dim;
  const int64_t lora = c.kv_lora_rank, entry = lora + rope, h = c.hidden_size;
  std::span<const double> kv_b = w.at("self_attn.kv_b_proj.weight");
  Vec core(step.slots.size() * step.q * heads * v, 0.0);
  for (size_t n = 0; n < step.slots.size(); ++n) {
    if (step.slots[n] < 0) continue;
    std::vector<Projected> tokens;
    for (int j = 0; j < step.q; ++j) {
      tokens.push_back(project(c, w, std::span<const double>(x).subspan((n * step.q + j) * h, h)));
      std::copy(tokens[j].entry.begin(), tokens[j].entry.end(),
                cache.entries.begin() + (step.slots[n] * kCapacity + step.context[n] + j) * entry);
    }
    for (int j = 0; j < step.q; ++j) {
      const int64_t visible = step.context[n] + j + 1;
      for (int64_t head = 0; head < heads; ++head) {
        std::span<const double> w_k = kv_b.subspan(head * (nope + v) * lora, nope * lora);
        std::span<const double> w_v = kv_b.subspan((head * (nope + v) + nope) * lora, v * lora);
        std::span<const double> q(tokens[j].q.data() + head * (nope + rope), nope + rope);
        Vec weights, values;
        for (int64_t p = 0; p < visible; ++p) {
          std::span<const double> cached(
              cache.entries.data() + (step.slots[n] * kCapacity + p) * entry, entry);
          Vec k = matvec(w_k, cached.subspan(0, lora), nope, lora);
          k.insert(k.end(), cached.begin() + lora, cached.end());
          double dot = 0;
          for (int64_t i = 0; i < nope + rope; ++i) dot += q[i] * k[i];
          weights.push_back(std::exp(dot / std::sqrt(static_cast<double>(nope + rope))));
          Vec value = matvec(w_v, cached.subspan(0, lora), v, lora);
          values.insert(values.end(), value.begin(), value.end());
        }
        double total = 0;
        for (double e : weights) total += e;
        for (int64_t i = 0; i < v; ++i) {
          double sum = 0;
          for (int64_t p = 0; p < visible; ++p) sum += weights[p] * values[p * v + i];
          core[((n * step.q + j) * heads + head) * v + i] =
              sum / total * sigmoid(tokens[j].gate[head * v + i]);
        }
      }
    }
  }
  return core;
}

TEST_F(MlaAttention, EqualsAttentionWithoutAbsorption) {
  SCOPED_TRACE(testing::replay_hint());
  std::mt19937 rng = testing::case_rng();
  const MlaStep step{3, {2, 0, 3}, {5, 0, 2}};
  const Vec x = random_bf16(9 * config().hidden_size, 1.0, rng);
  MlaCache cache = random_cache(config(), rng);
  const Vec expected = unabsorbed(config(), tp1(), x, step, cache);
  absl::StatusOr<Vec> core =
      mla_attention_reference(config(), kLayer, tp1(), x, step, cache, Rounding::kNone);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_TRUE(agree(*core, expected, kFp64));
}

TEST_F(MlaAttention, OneVisibleTokenGivesItsGatedValue) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = config();
  std::mt19937 rng = testing::case_rng();
  const Vec x = random_bf16(c.hidden_size, 1.0, rng);
  MlaCache cache = random_cache(c, rng);
  absl::StatusOr<Vec> core =
      mla_attention_reference(c, kLayer, tp1(), x, MlaStep{1, {1}, {0}}, cache, Rounding::kBf16);
  ASSERT_TRUE(core.ok()) << core.status();
  // The only visible token is the new one at position 0, with softmax weight exactly 1: the latent
  // output is its cached c_kv, and the row is bf16r(bf16r(W_UV c_kv) sigmoid(gate)) bit for bit.
  const int64_t heads = c.num_attention_heads, nope = c.qk_nope_head_dim, v = c.v_head_dim,
                lora = c.kv_lora_rank;
  std::span<const double> c_kv(cache.entries.data() + kCapacity * entry(), lora);
  const int64_t gate_row = c.q_lora_rank + entry();
  Vec gate = matvec(tp1().at("self_attn.fused_qkv_a_proj.weight").subspan(gate_row * c.hidden_size),
                    x, heads * v, c.hidden_size);
  std::span<const double> kv_b = tp1().at("self_attn.kv_b_proj.weight");
  for (int64_t head = 0; head < heads; ++head) {
    Vec value = matvec(kv_b.subspan((head * (nope + v) + nope) * lora, v * lora), c_kv, v, lora);
    for (int64_t i = 0; i < v; ++i) {
      const double expected = model::round_to_bf16(
          model::round_to_bf16(value[i]) * sigmoid(model::round_to_bf16(gate[head * v + i])));
      ASSERT_EQ((*core)[head * v + i], expected) << "head " << head << ", " << i;
    }
  }
}

TEST_F(MlaAttention, LaterTokensDoNotChangeEarlierRows) {
  SCOPED_TRACE(testing::replay_hint());
  std::mt19937 rng = testing::case_rng();
  const MlaStep step{3, {0, 1}, {4, 2}};
  const int64_t h = config().hidden_size, width = core_width();
  Vec x = random_bf16(6 * h, 1.0, rng);
  const MlaCache initial = random_cache(config(), rng);
  MlaCache cache = initial;
  absl::StatusOr<Vec> before =
      mla_attention_reference(config(), kLayer, tp1(), x, step, cache, Rounding::kBf16);
  // Replace the last token of request 0 (row 2).
  Vec other = random_bf16(h, 1.0, rng);
  std::copy(other.begin(), other.end(), x.begin() + 2 * h);
  cache = initial;
  absl::StatusOr<Vec> after =
      mla_attention_reference(config(), kLayer, tp1(), x, step, cache, Rounding::kBf16);
  ASSERT_TRUE(before.ok() && after.ok());
  for (int64_t row : {0, 1, 3, 4, 5}) {
    EXPECT_TRUE(std::equal(before->begin() + row * width, before->begin() + (row + 1) * width,
                           after->begin() + row * width))
        << "row " << row;
  }
  EXPECT_FALSE(std::equal(before->begin() + 2 * width, before->begin() + 3 * width,
                          after->begin() + 2 * width));
}

TEST_F(MlaAttention, PaddedRequestIsZeroAndOnlyNewPositionsAreWritten) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = config();
  std::mt19937 rng = testing::case_rng();
  const MlaStep step{2, {3, -1, 0}, {1, 5, 6}};
  const int64_t h = c.hidden_size, width = core_width();
  const Vec x = random_bf16(6 * h, 1.0, rng);
  const MlaCache initial = random_cache(c, rng);
  MlaCache cache = initial;
  absl::StatusOr<Vec> core =
      mla_attention_reference(c, kLayer, tp1(), x, step, cache, Rounding::kNone);
  ASSERT_TRUE(core.ok()) << core.status();
  for (int64_t i = 0; i < 6 * width; ++i) {
    const bool padded = i >= 2 * width && i < 4 * width;
    if (padded)
      ASSERT_EQ((*core)[i], 0.0) << i;
    else
      ASSERT_NE((*core)[i], 0.0) << i;
  }
  // Slot 3 gains positions 1, 2 and slot 0 positions 6, 7; every other entry is kept, slots 1 and 2
  // whole. A written entry is the token's [kv_a_layernorm(c_kv) | k_pe].
  for (int64_t slot = 0; slot < kSlots; ++slot) {
    for (int64_t p = 0; p < kCapacity; ++p) {
      const int64_t at = (slot * kCapacity + p) * entry();
      const Vec got(cache.entries.begin() + at, cache.entries.begin() + at + entry());
      const Vec was(initial.entries.begin() + at, initial.entries.begin() + at + entry());
      int64_t row = -1;
      if (slot == 3 && (p == 1 || p == 2)) row = p - 1;
      if (slot == 0 && (p == 6 || p == 7)) row = 4 + p - 6;
      if (row < 0) {
        EXPECT_EQ(got, was) << "slot " << slot << ", position " << p;
      } else {
        Projected token = project(c, tp1(), std::span<const double>(x).subspan(row * h, h));
        EXPECT_TRUE(agree(got, token.entry, kFp64)) << "slot " << slot << ", position " << p;
      }
    }
  }
}

TEST_F(MlaAttention, TpRanksHoldTheHeadColumnsOfTp1) {
  SCOPED_TRACE(testing::replay_hint());
  std::mt19937 rng = testing::case_rng();
  const MlaStep step{2, {1, 2}, {3, 0}};
  const int64_t width = core_width(), half = width / 2;
  const Vec x = random_bf16(4 * config().hidden_size, 1.0, rng);
  const MlaCache initial = random_cache(config(), rng);
  MlaCache cache = initial;
  absl::StatusOr<Vec> full =
      mla_attention_reference(config(), kLayer, tp1(), x, step, cache, Rounding::kBf16);
  ASSERT_TRUE(full.ok()) << full.status();
  for (int r = 0; r < 2; ++r) {
    MlaCache rank_cache = initial;
    absl::StatusOr<Vec> part = mla_attention_reference(config(), kLayer, g_weights->ranks[2][r], x,
                                                       step, rank_cache, Rounding::kBf16);
    ASSERT_TRUE(part.ok()) << part.status();
    ASSERT_EQ(part->size(), full->size() / 2);
    // Each head's arithmetic is the same on both sides, so the halves agree bit for bit, and the
    // replicated latent cache comes out the same on every rank.
    for (int64_t t = 0; t < 4; ++t) {
      EXPECT_TRUE(std::equal(part->begin() + t * half, part->begin() + (t + 1) * half,
                             full->begin() + t * width + r * half))
          << "rank " << r << ", row " << t;
    }
    EXPECT_EQ(rank_cache.entries, cache.entries) << "rank " << r;
  }
}

TEST_F(MlaAttention, Bf16RoundingGivesBf16ValuesNearTheExactResult) {
  SCOPED_TRACE(testing::replay_hint());
  std::mt19937 rng = testing::case_rng();
  const MlaStep step{3, {0, 3}, {2, 4}};
  const Vec x = random_bf16(6 * config().hidden_size, 1.0, rng);
  const MlaCache initial = random_cache(config(), rng);
  MlaCache exact_cache = initial, rounded_cache = initial;
  absl::StatusOr<Vec> exact =
      mla_attention_reference(config(), kLayer, tp1(), x, step, exact_cache, Rounding::kNone);
  absl::StatusOr<Vec> rounded =
      mla_attention_reference(config(), kLayer, tp1(), x, step, rounded_cache, Rounding::kBf16);
  ASSERT_TRUE(exact.ok() && rounded.ok());
  for (double v : *rounded) ASSERT_EQ(v, model::round_to_bf16(v));
  for (double v : rounded_cache.entries) ASSERT_EQ(v, model::round_to_bf16(v));
  // A handful of bf16 roundings (2^-8 relative each) along the path, relative to the output scale.
  double scale = 0;
  for (double v : *exact) scale = std::max(scale, std::fabs(v));
  EXPECT_TRUE(agree(*rounded, *exact, testing::Tolerance{0.03 * scale, 0.03}));
  EXPECT_NE(*rounded, *exact);
}

TEST_F(MlaAttention, RefusesAKdaLayer) {
  MlaCache cache = make_mla_cache(config(), kSlots, kCapacity);
  const Vec x(config().hidden_size, 0.0);
  absl::StatusOr<Vec> core =
      mla_attention_reference(config(), 1, tp1(), x, MlaStep{1, {0}, {0}}, cache, Rounding::kNone);
  ASSERT_FALSE(core.ok());
  EXPECT_EQ(core.status().message(), "mla reference layer 1: not an MLA layer");
}

TEST_F(MlaAttention, RefusesEveryBadStepInOneMessage) {
  MlaCache cache = make_mla_cache(config(), kSlots, kCapacity);
  const Vec x(5 * config().hidden_size, 0.0);
  const MlaStep step{2, {9, 1, 1, -1}, {0, 7, 0, 100}};
  absl::StatusOr<Vec> core =
      mla_attention_reference(config(), kLayer, tp1(), x, step, cache, Rounding::kNone);
  ASSERT_FALSE(core.ok());
  EXPECT_EQ(core.status().message(),
            "mla reference layer 3: x has 1280 values, expected [8, 256] (4 requests of 2 tokens); "
            "request 0: slot 9 outside the cache's 4 slots; "
            "request 1: context 7 + q 2 exceeds the cache capacity 8; "
            "request 2: slot 1 is taken by an earlier request");
}

TEST_F(MlaAttention, RefusesWeightsAndCacheOfOtherSizes) {
  RankLayerWeights w = tp1();
  w.values["self_attn.q_b_proj.weight"].resize(10);
  MlaCache cache = make_mla_cache(config(), kSlots, kCapacity);
  cache.entries.pop_back();
  const Vec x(config().hidden_size, 0.0);
  absl::StatusOr<Vec> core =
      mla_attention_reference(config(), kLayer, w, x, MlaStep{1, {0}, {0}}, cache, Rounding::kNone);
  ASSERT_FALSE(core.ok());
  EXPECT_EQ(core.status().message(),
            "mla reference layer 3: \"self_attn.q_b_proj.weight\" has 10 values, expected [384, "
            "64] for 8 heads; "
            "the cache has 1535 values, expected [4, 8, 48]");
}

}  // namespace
}  // namespace monotile::kernels::reference
