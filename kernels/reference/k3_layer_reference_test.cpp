// The layer reference on a generated tiny checkpoint: TP 1 equals the sum over TP 2, 4 and 8 ranks
// within fp64 rounding for KDA, MLA-FFN, block-write and dense layers; the dense MLP alone is the
// rounded sum of its ranks' partials; rows without state have no
// attention; bf16 rounding stays within bf16 tolerance of the exact layer and finite; the
// deferred-delta loop is bit-identical to the stock loop; one rank's share with its reductions
// given is the layer over all ranks, bit for bit.
#include "kernels/reference/k3_layer_reference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "model/tiny_checkpoint.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::reference {
namespace {

namespace fs = std::filesystem;
using Vec = std::vector<double>;

constexpr int kRequests = 3, kQ = 3, kSlots = 8;
constexpr int kTokens = kRequests * kQ;
const int kTpSizes[] = {1, 2, 4, 8};

// Every layer's weights for every TP size, from one generated checkpoint.
struct Model {
  model::ModelConfig config;
  std::map<int, std::map<int, std::vector<RankLayerWeights>>> weights;  // [tp][layer] -> ranks
};

Model* g_model = nullptr;

class K3LayerReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string dir = (fs::path(::testing::TempDir()) / ("monotile_k3_ref_" + std::to_string(getpid()))).string();
    model::TinyCheckpointOptions options;
    options.seed = testing::shared_seed("k3 reference checkpoint");
    ASSERT_TRUE(model::write_tiny_checkpoint(dir, options).ok());
    absl::StatusOr<std::unique_ptr<model::Checkpoint>> checkpoint = model::Checkpoint::open(dir);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    g_model = new Model;
    absl::StatusOr<model::ModelConfig> config = model::load_config(dir);
    ASSERT_TRUE(config.ok());
    g_model->config = *config;
    for (int tp : kTpSizes) {
      for (int rank = 0; rank < tp; ++rank) {
        absl::StatusOr<model::RankPlan> plan = model::plan_rank(*config, tp, rank);
        ASSERT_TRUE(plan.ok()) << plan.status();
        for (int layer : {0, 1, 2, 3, 12}) {
          absl::StatusOr<RankLayerWeights> w = load_rank_layer(plan->layers[layer], plan->dims, **checkpoint);
          ASSERT_TRUE(w.ok()) << w.status();
          g_model->weights[tp][layer].push_back(*std::move(w));
        }
      }
    }
    fs::remove_all(dir);
  }
  static void TearDownTestSuite() {
    delete g_model;
    g_model = nullptr;
  }
};

Vec random_bf16(size_t n, double scale, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, scale);
  Vec out(n);
  for (double& v : out) v = model::round_to_bf16(normal(rng));
  return out;
}

// The TP 1 step inputs; request 2 has no state (every index 0), request 1 accepted one token.
struct Step {
  LayerInput input;
  KdaCache full_cache;  // TP 1 layout
};

Step make_step(const model::ModelConfig& c, std::mt19937& rng, bool with_delta) {
  const int64_t h = c.hidden_size, p = c.kda_projection(), d = c.kda_head_dim;
  Step step;
  step.input.prefix = random_bf16(kTokens * h, 1.0, rng);
  if (with_delta) step.input.delta = random_bf16(kTokens * h, 0.5, rng);
  step.input.blocks = random_bf16(kTokens * c.block_count() * h, 1.0, rng);
  step.input.attention_output = random_bf16(kTokens * h, 0.5, rng);
  step.input.meta = {kRequests, kQ, {1, 2, 3, 4, 5, 6, 0, 0, 0}, {2, 1, 1}};
  step.full_cache.slots = kSlots;
  step.full_cache.state_len = kQ + c.conv_size - 2;
  step.full_cache.conv = random_bf16(kSlots * step.full_cache.state_len * 3 * p, 1.0, rng);
  step.full_cache.state = random_bf16(kSlots * c.kda_num_heads * d * d, 0.05, rng);
  return step;
}

// Rank r's share of the TP 1 caches: conv channels [q_r | k_r | v_r], the rank's heads' states.
KdaCache split_cache(const model::ModelConfig& c, const KdaCache& full, int tp, int r) {
  const int64_t p = c.kda_projection(), pl = p / tp, d = c.kda_head_dim, nh = c.kda_num_heads, nhl = nh / tp;
  KdaCache out{full.slots, full.state_len, Vec(full.slots * full.state_len * 3 * pl), Vec(full.slots * nhl * d * d)};
  for (int64_t s = 0; s < full.slots * full.state_len; ++s) {
    for (int blk = 0; blk < 3; ++blk) {
      for (int64_t i = 0; i < pl; ++i) out.conv[s * 3 * pl + blk * pl + i] = full.conv[s * 3 * p + blk * p + r * pl + i];
    }
  }
  for (int64_t s = 0; s < full.slots; ++s) {
    std::copy(full.state.begin() + (s * nh + r * nhl) * d * d, full.state.begin() + (s * nh + (r + 1) * nhl) * d * d,
              out.state.begin() + s * nhl * d * d);
  }
  return out;
}

LayerInput input_for(const model::ModelConfig& c, const Step& step, int tp) {
  LayerInput input = step.input;
  for (int r = 0; r < tp; ++r) input.caches.push_back(split_cache(c, step.full_cache, tp, r));
  return input;
}

// Agreement of two buffers, with the first disagreement in the message; NaN never passes.
::testing::AssertionResult agree(const Vec& actual, const Vec& expected, testing::Tolerance tolerance) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "sizes " << actual.size() << " and " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(actual[i]) || !testing::agrees(actual[i], expected[i], tolerance)) {
      return ::testing::AssertionFailure() << "index " << i << ": " << actual[i] << " vs " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// fp64 rounding of sums of a few thousand O(1) terms.
constexpr testing::Tolerance kFp64{1e-10, 1e-10};

void expect_tp_invariant(int layer, bool with_delta) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  Step step = make_step(c, rng, with_delta);
  absl::StatusOr<LayerOutput> tp1 =
      layer_reference(c, layer, g_model->weights[1][layer], input_for(c, step, 1), Rounding::kNone);
  ASSERT_TRUE(tp1.ok()) << tp1.status();
  for (int tp : {2, 4, 8}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    absl::StatusOr<LayerOutput> split =
        layer_reference(c, layer, g_model->weights[tp][layer], input_for(c, step, tp), Rounding::kNone);
    ASSERT_TRUE(split.ok()) << split.status();
    EXPECT_TRUE(agree(split->attention_output, tp1->attention_output, kFp64)) << "attention output";
    EXPECT_TRUE(agree(split->prefix, tp1->prefix, kFp64)) << "prefix";
    EXPECT_TRUE(agree(split->mlp_input, tp1->mlp_input, kFp64)) << "mlp input";
    EXPECT_TRUE(agree(split->mlp_output, tp1->mlp_output, kFp64)) << "mlp output";
    EXPECT_TRUE(agree(split->hidden, tp1->hidden, kFp64)) << "hidden";
    EXPECT_TRUE(agree(split->blocks, tp1->blocks, kFp64)) << "blocks";
    if (c.is_kda_layer(layer)) {
      for (int r = 0; r < tp; ++r) {
        KdaCache expected = split_cache(c, tp1->caches[0], tp, r);
        EXPECT_TRUE(agree(split->caches[r].conv, expected.conv, kFp64)) << "conv state, rank " << r;
        EXPECT_TRUE(agree(split->caches[r].state, expected.state, kFp64)) << "recurrent state, rank " << r;
      }
    }
  }
  // Something happened: the MLP output is not zero and everything is finite.
  double norm = 0;
  for (double v : tp1->mlp_output) norm += v * v;
  EXPECT_GT(norm, 0);
  for (double v : tp1->hidden) ASSERT_TRUE(std::isfinite(v));
}

TEST_F(K3LayerReference, TpInvariantKda) { expect_tp_invariant(1, true); }
TEST_F(K3LayerReference, TpInvariantMlaFfn) { expect_tp_invariant(3, true); }
TEST_F(K3LayerReference, TpInvariantBlockWrite) { expect_tp_invariant(12, true); }
TEST_F(K3LayerReference, TpInvariantDenseLayerZero) { expect_tp_invariant(0, false); }

TEST_F(K3LayerReference, DenseMlpSumsTheRanksPartials) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  const int64_t h = c.hidden_size;
  const Vec y = random_bf16(h, 1.0, rng);
  const std::vector<RankLayerWeights>& ranks = g_model->weights[2][0];
  // Exact: TP 2's reduction is TP 1's MLP.
  Vec tp1 = dense_mlp_reference(c, g_model->weights[1][0], y, Rounding::kNone);
  EXPECT_TRUE(agree(dense_mlp_reference(c, ranks, y, Rounding::kNone), tp1, kFp64));
  double norm = 0;
  for (double v : tp1) norm += v * v;
  EXPECT_GT(norm, 0);
  // One rank at a time: each call is that rank's bf16 partial; their rounded sum is the MLP.
  Vec m = dense_mlp_reference(c, ranks, y, Rounding::kBf16);
  Vec sum(static_cast<size_t>(h), 0.0);
  for (const RankLayerWeights& rank : ranks) {
    Vec partial = dense_mlp_reference(c, std::span<const RankLayerWeights>(&rank, 1), y, Rounding::kBf16);
    for (int64_t i = 0; i < h; ++i) sum[i] += partial[i];
  }
  for (double& v : sum) v = model::round_to_bf16(v);
  EXPECT_EQ(sum, m);
}

TEST_F(K3LayerReference, RowsWithoutStateHaveNoAttentionAndTouchNoSlot) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  Step step = make_step(c, rng, true);
  LayerInput input = input_for(c, step, 2);
  // Unrounded, so that a live row's sum of two rank partials is never exactly zero by chance.
  absl::StatusOr<LayerOutput> out = layer_reference(c, 1, g_model->weights[2][1], input, Rounding::kNone);
  ASSERT_TRUE(out.ok()) << out.status();
  const int64_t h = c.hidden_size;
  for (int64_t i = 2 * kQ * h; i < 3 * kQ * h; ++i) ASSERT_EQ(out->attention_output[i], 0.0) << i;
  for (int64_t i = 0; i < kQ * h; ++i) ASSERT_NE(out->attention_output[i], 0.0) << i;
  for (int r = 0; r < 2; ++r) {
    const KdaCache& before = input.caches[r];
    const KdaCache& after = out->caches[r];
    const int64_t conv_slot = before.state_len * 3 * c.kda_projection() / 2;
    const int64_t state_slot = static_cast<int64_t>(before.state.size()) / kSlots;
    // Slot 0 (null) and 7 (unused) untouched; slots 1..6 written where the indices say.
    EXPECT_TRUE(std::equal(before.conv.begin(), before.conv.begin() + conv_slot, after.conv.begin()));
    EXPECT_TRUE(std::equal(before.state.begin(), before.state.begin() + state_slot, after.state.begin()));
    EXPECT_TRUE(std::equal(before.state.begin() + 7 * state_slot, before.state.end(), after.state.begin() + 7 * state_slot));
    EXPECT_FALSE(std::equal(before.state.begin() + state_slot, before.state.begin() + 2 * state_slot,
                            after.state.begin() + state_slot));
  }
}

TEST_F(K3LayerReference, Bf16RoundingStaysNearTheExactLayer) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  Step step = make_step(c, rng, true);
  for (int layer : {1, 3, 12}) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    absl::StatusOr<LayerOutput> exact = layer_reference(c, layer, g_model->weights[8][layer], input_for(c, step, 8), Rounding::kNone);
    absl::StatusOr<LayerOutput> rounded = layer_reference(c, layer, g_model->weights[8][layer], input_for(c, step, 8), Rounding::kBf16);
    ASSERT_TRUE(exact.ok() && rounded.ok());
    for (double v : rounded->hidden) ASSERT_EQ(v, model::round_to_bf16(v));
    for (double v : rounded->mlp_output) ASSERT_EQ(v, model::round_to_bf16(v));
    // bf16 data: a few ulps (2^-8 relative each) through a layer's roundings, relative to the scale.
    double scale = 0;
    for (double v : exact->hidden) scale = std::max(scale, std::fabs(v));
    const testing::Tolerance bf16_data{0.03 * scale, 0.03};
    EXPECT_TRUE(agree(rounded->attention_output, exact->attention_output, bf16_data));
    // A near-tie of router keys may pick another expert once the input is rounded (k3_layer.md,
    // correction 6): such rows are compared on their attention part only.
    const int64_t h = c.hidden_size;
    int compared = 0;
    for (int64_t t = 0; t < kTokens; ++t) {
      std::span<const double> y_exact(exact->mlp_input.data() + t * h, h), y_rounded(rounded->mlp_input.data() + t * h, h);
      std::vector<int> a = route_row(c, g_model->weights[8][layer][0], y_exact, Rounding::kNone).experts;
      std::vector<int> b = route_row(c, g_model->weights[8][layer][0], y_rounded, Rounding::kBf16).experts;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) continue;
      ++compared;
      Vec row_rounded(rounded->hidden.begin() + t * h, rounded->hidden.begin() + (t + 1) * h);
      Vec row_exact(exact->hidden.begin() + t * h, exact->hidden.begin() + (t + 1) * h);
      EXPECT_TRUE(agree(row_rounded, row_exact, bf16_data)) << "row " << t;
    }
    EXPECT_GE(compared, kTokens / 2);
  }
}

TEST_F(K3LayerReference, DeferredDeltaLoopEqualsStockLoop) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  Step step = make_step(c, rng, false);
  const int tp = 4;
  std::map<int, std::vector<KdaCache>> caches;
  std::map<int, Vec> attention;
  for (int layer : {0, 1, 2}) caches[layer] = input_for(c, step, tp).caches;
  attention[3] = step.input.attention_output;
  std::vector<std::vector<RankLayerWeights>> layers = {g_model->weights[tp][0], g_model->weights[tp][1],
                                                       g_model->weights[tp][2], g_model->weights[tp][3]};
  LayerInput input = step.input;
  std::map<int, std::vector<KdaCache>> deferred_caches = caches;
  absl::StatusOr<LayerOutput> deferred = layers_reference(c, 0, layers, input, deferred_caches, attention, Rounding::kBf16);
  ASSERT_TRUE(deferred.ok()) << deferred.status();
  // Stock: each layer gets P_new = bf16r(P' + m) as its prefix and no delta.
  LayerInput stock = step.input;
  LayerOutput out;
  for (int layer = 0; layer < 4; ++layer) {
    if (c.is_kda_layer(layer)) stock.caches = caches[layer];
    stock.attention_output = attention.count(layer) ? attention[layer] : Vec{};
    absl::StatusOr<LayerOutput> next = layer_reference(c, layer, layers[layer], stock, Rounding::kBf16);
    ASSERT_TRUE(next.ok()) << next.status();
    out = *std::move(next);
    if (c.is_kda_layer(layer)) caches[layer] = out.caches;
    stock.prefix = out.hidden;
    stock.blocks = out.blocks;
  }
  EXPECT_EQ(deferred->hidden, out.hidden);
  EXPECT_EQ(deferred->blocks, out.blocks);
  for (int layer : {0, 1, 2}) {
    for (int r = 0; r < tp; ++r) {
      EXPECT_EQ(deferred_caches[layer][r].state, caches[layer][r].state) << layer << " " << r;
      EXPECT_EQ(deferred_caches[layer][r].conv, caches[layer][r].conv) << layer << " " << r;
    }
  }
  for (double v : out.hidden) ASSERT_TRUE(std::isfinite(v));
}

// Two ranks as threads: each PartialSum call posts the rank's partial and waits for the other's,
// then sums the two in rank order.
class TwoRankSums {
 public:
  PartialSum sum(int rank) {
    return [this, rank](const Vec& partial) -> absl::StatusOr<Vec> {
      std::unique_lock lock(mutex_);
      const size_t call = calls_[rank]++;
      if (posted_.size() <= call) posted_.resize(call + 1);
      posted_[call][rank] = partial;
      changed_.notify_all();
      changed_.wait(lock, [&] { return !posted_[call][1 - rank].empty(); });
      Vec total(partial.size(), 0.0);
      for (const Vec& p : posted_[call]) {
        for (size_t i = 0; i < total.size(); ++i) total[i] += p[i];
      }
      return total;
    };
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::array<size_t, 2> calls_{};
  std::vector<std::array<Vec, 2>> posted_;
};

TEST_F(K3LayerReference, RankShareWithItsReductionsIsTheLayerOverAllRanks) {
  SCOPED_TRACE(testing::replay_hint());
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  Step step = make_step(c, rng, false);
  const LayerInput all = input_for(c, step, 2);
  absl::StatusOr<LayerOutput> whole = layer_reference(c, 0, g_model->weights[2][0], all, Rounding::kBf16);
  ASSERT_TRUE(whole.ok()) << whole.status();
  TwoRankSums sums;
  std::array<absl::StatusOr<LayerOutput>, 2> shares{absl::UnknownError("not run"), absl::UnknownError("not run")};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      LayerInput input = all;
      input.caches = {all.caches[r]};
      shares[r] = rank_layer_reference(c, 0, g_model->weights[2][0][r], input, Rounding::kBf16, sums.sum(r));
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(shares[r].ok()) << shares[r].status();
    EXPECT_EQ(shares[r]->attention_output, whole->attention_output);
    EXPECT_EQ(shares[r]->prefix, whole->prefix);
    EXPECT_EQ(shares[r]->mlp_output, whole->mlp_output);
    EXPECT_EQ(shares[r]->blocks, whole->blocks);
    ASSERT_EQ(shares[r]->caches.size(), 1u);
    EXPECT_EQ(shares[r]->caches[0].conv, whole->caches[r].conv);
    EXPECT_EQ(shares[r]->caches[0].state, whole->caches[r].state);
  }
  // Not trivially equal: the reductions add something to each rank's partial.
  absl::StatusOr<LayerOutput> alone =
      layer_reference(c, 0, std::span(&g_model->weights[2][0][0], 1),
                      [&] {
                        LayerInput input = all;
                        input.caches = {all.caches[0]};
                        return input;
                      }(),
                      Rounding::kBf16);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_NE(alone->mlp_output, whole->mlp_output);
  EXPECT_NE(alone->attention_output, whole->attention_output);
}

TEST_F(K3LayerReference, RankShareRefusesTheLatentMoe) {
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  Step step = make_step(c, rng, true);
  LayerInput input = input_for(c, step, 1);
  absl::StatusOr<LayerOutput> out = rank_layer_reference(
      c, 1, g_model->weights[1][1][0], input, Rounding::kBf16,
      [](const Vec& partial) -> absl::StatusOr<Vec> { return partial; });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "k3 reference layer 1: one rank's share with its reductions given covers the dense MLP's layers (below " +
                std::to_string(c.first_k_dense_replace) +
                "), not the latent MoE's; hint: layer_reference over every rank's weights");
}

TEST_F(K3LayerReference, RefusesBadMetadata) {
  const model::ModelConfig& c = g_model->config;
  std::mt19937 rng = testing::case_rng();
  Step step = make_step(c, rng, true);
  LayerInput input = input_for(c, step, 1);
  input.meta.num_accepted[0] = 4;
  absl::StatusOr<LayerOutput> out = layer_reference(c, 1, g_model->weights[1][1], input, Rounding::kNone);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "k3 reference: num_accepted[0] = 4, expected 1..3");
}

}  // namespace
}  // namespace monotile::kernels::reference
