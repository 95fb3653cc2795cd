// A generated tiny checkpoint end to end: `model check` passes at every TP size and rank; each kind
// of corruption gives a reason naming the tensor or file; sharding then re-assembling gives the
// checkpoint back for every tensor kind at TP 1/2/4/8; a rank reads exactly its plan's bytes.
#include <filesystem>
#include <fstream>
#include <map>

#include "gtest/gtest.h"
#include "model/checkpoint.h"
#include "model/model_check.h"
#include "model/shard_plan.h"
#include "model/tensor_names.h"
#include "model/tiny_checkpoint.h"
#include "nlohmann/json.hpp"
#include "tests/testing/seed.h"

namespace monotile::model {
namespace {

namespace fs = std::filesystem;

class TinyCheckpoint : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::path(::testing::TempDir()) / ("monotile_tiny_" + std::to_string(getpid()))).string());
    TinyCheckpointOptions options;
    options.seed = testing::shared_seed("tiny checkpoint");
    absl::Status status = write_tiny_checkpoint(*dir_, options);
    ASSERT_TRUE(status.ok()) << status;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  // A copy of the checkpoint to corrupt.
  std::string copy(std::string_view name) {
    std::string target = *dir_ + "_" + std::string(name);
    fs::remove_all(target);
    fs::copy(*dir_, target);
    copies_.push_back(target);
    return target;
  }
  void TearDown() override {
    for (const std::string& c : copies_) fs::remove_all(c);
  }

  static std::string* dir_;
  std::vector<std::string> copies_;
};

std::string* TinyCheckpoint::dir_ = nullptr;

std::string joined(const std::vector<std::string>& reasons) {
  std::string out;
  for (const std::string& r : reasons) out += r + "\n";
  return out;
}

TEST_F(TinyCheckpoint, CheckPassesAtEveryTpAndRank) {
  SCOPED_TRACE(testing::replay_hint());
  for (int tp : {1, 2, 4, 8}) {
    for (int rank = 0; rank < tp; ++rank) {
      ModelCheck check = check_model(*dir_, tp, rank);
      EXPECT_TRUE(check.reasons.empty()) << "tp " << tp << " rank " << rank << ":\n" << joined(check.reasons);
    }
  }
  ModelCheck check = check_model(*dir_, 8, 3);
  EXPECT_NE(check.report.find("checkpoint: 2 safetensors files"), std::string::npos) << check.report;
}

TEST_F(TinyCheckpoint, HasAtLeastTwoShardsAndAnIndex) {
  EXPECT_TRUE(fs::exists(fs::path(*dir_) / "model.safetensors.index.json"));
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::open(*dir_);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_GE((*checkpoint)->files().size(), 2u);
}

// Rewrites one shard file: `edit` changes the header JSON and may change the data bytes.
void rewrite_shard(const std::string& path, const std::function<void(nlohmann::json&, std::string&)>& edit) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_size));
  std::string data = bytes.substr(8 + header_size);
  edit(header, data);
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i)));
  out << text << data;
}

// The shard holding `tensor`, from the index.
std::string shard_of(const std::string& dir, const std::string& tensor) {
  std::ifstream in(fs::path(dir) / "model.safetensors.index.json");
  nlohmann::json index = nlohmann::json::parse(in);
  return (fs::path(dir) / index["weight_map"][tensor].get<std::string>()).string();
}

void expect_reason(const std::string& dir, std::string_view needle, std::string_view also = {}) {
  for (int tp : {1, 8}) {
    ModelCheck check = check_model(dir, tp, tp - 1);
    std::string all = joined(check.reasons);
    EXPECT_FALSE(check.reasons.empty()) << "tp " << tp;
    EXPECT_NE(all.find(needle), std::string::npos) << "tp " << tp << ", looking for " << needle << " in:\n" << all;
    if (!also.empty()) {
      EXPECT_NE(all.find(also), std::string::npos) << "looking for " << also << " in:\n" << all;
    }
  }
}

const std::string kFb = layer_tensor(1, "self_attn.f_b_proj.weight");
const std::string kALog = layer_tensor(2, "self_attn.A_log");
const std::string kDtBias = layer_tensor(1, "self_attn.dt_bias");
const std::string kOProj = layer_tensor(3, "self_attn.o_proj.weight");

TEST_F(TinyCheckpoint, MissingTensor) {
  std::string dir = copy("missing");
  rewrite_shard(shard_of(dir, kFb), [](nlohmann::json& h, std::string&) { h.erase(kFb); });
  // The index still names it: refused as the index's tensor, naming it.
  expect_reason(dir, kFb);
  std::ifstream in(fs::path(dir) / "model.safetensors.index.json");
  nlohmann::json index = nlohmann::json::parse(in);
  in.close();
  index["weight_map"].erase(kFb);
  std::ofstream(fs::path(dir) / "model.safetensors.index.json") << index.dump();
  expect_reason(dir, "tensor \"" + kFb + "\" is missing; expected BF16 [1024, 128] contiguous");
}

TEST_F(TinyCheckpoint, WrongShape) {
  std::string dir = copy("shape");
  rewrite_shard(shard_of(dir, kFb), [](nlohmann::json& h, std::string&) { h[kFb]["shape"] = {128, 1024}; });
  expect_reason(dir, "layer 1: tensor \"" + kFb + "\": shape differs: found BF16 [128, 1024], expected BF16 [1024, 128] contiguous");
}

TEST_F(TinyCheckpoint, WrongDtype) {
  std::string dir = copy("dtype");
  rewrite_shard(shard_of(dir, kDtBias), [](nlohmann::json& h, std::string&) { h[kDtBias]["dtype"] = "I32"; });
  expect_reason(dir, "tensor \"" + kDtBias + "\": dtype differs: found I32 [1024], expected F32 [1024] contiguous");
}

TEST_F(TinyCheckpoint, StridedTensor) {
  std::string dir = copy("strided");
  // The range is twice as long as the shape needs (as a non-contiguous tensor would be stored).
  rewrite_shard(shard_of(dir, kOProj), [](nlohmann::json& h, std::string&) {
    h[kOProj]["shape"] = {256, 128};
  });
  expect_reason(dir, "tensor \"" + kOProj + "\" is strided", "layer 3");
}

TEST_F(TinyCheckpoint, MisalignedTensor) {
  std::string dir = copy("misaligned");
  rewrite_shard(shard_of(dir, kOProj), [](nlohmann::json& h, std::string&) {
    uint64_t begin = h[kOProj]["data_offsets"][0].get<uint64_t>();
    uint64_t end = h[kOProj]["data_offsets"][1].get<uint64_t>();
    h[kOProj]["data_offsets"] = {begin + 1, end - 1};
    h[kOProj]["shape"] = {256, 255};
  });
  expect_reason(dir, "tensor \"" + kOProj + "\" is misaligned");
}

TEST_F(TinyCheckpoint, NanInALog) {
  std::string dir = copy("nan");
  rewrite_shard(shard_of(dir, kALog), [](nlohmann::json& h, std::string& data) {
    uint64_t begin = h[kALog]["data_offsets"][0].get<uint64_t>();
    float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(data.data() + begin + 4 * 5, &nan, 4);
  });
  expect_reason(dir, "layer 2: tensor \"" + kALog + "\" holds 1 non-finite value (first at index 5); expected finite fp32");
}

TEST_F(TinyCheckpoint, TruncatedShard) {
  std::string dir = copy("truncated");
  std::string shard = shard_of(dir, kFb);
  fs::resize_file(shard, fs::file_size(shard) - 1000);
  expect_reason(dir, fs::path(shard).filename().string(), "truncated");
}

TEST_F(TinyCheckpoint, IndexNamesMissingFile) {
  std::string dir = copy("index");
  std::ifstream in(fs::path(dir) / "model.safetensors.index.json");
  nlohmann::json index = nlohmann::json::parse(in);
  in.close();
  index["weight_map"][kFb] = "model-00003-of-00003.safetensors";
  std::ofstream(fs::path(dir) / "model.safetensors.index.json") << index.dump();
  expect_reason(dir, "model-00003-of-00003.safetensors", "named by model.safetensors.index.json");
}

// Counts the bytes every read takes, so a rank's traffic can be checked against its plan.
class CountingSource : public TensorSource {
 public:
  explicit CountingSource(const Checkpoint& checkpoint) : checkpoint_(checkpoint) {}
  const TensorInfo* find(std::string_view name) const override { return checkpoint_.find(name); }
  absl::Status read(const TensorInfo& tensor, uint64_t offset, std::span<uint8_t> out) const override {
    bytes_ += out.size();
    return checkpoint_.read(tensor, offset, out);
  }
  mutable uint64_t bytes_ = 0;

 private:
  const Checkpoint& checkpoint_;
};

using Bytes = std::vector<uint8_t>;

// Rows [begin, begin + count) of a row-major buffer with `row_bytes` per row.
Bytes rows(const Bytes& all, int64_t row_bytes, int64_t begin, int64_t count) {
  return Bytes(all.begin() + begin * row_bytes, all.begin() + (begin + count) * row_bytes);
}

Bytes source_bytes(const Checkpoint& checkpoint, const std::string& name) {
  const TensorInfo* info = checkpoint.find(name);
  EXPECT_NE(info, nullptr) << name;
  if (!info) return {};
  std::span<const uint8_t> bytes = checkpoint.bytes(*info);
  return Bytes(bytes.begin(), bytes.end());
}

// Column blocks of every rank put side by side: [rows, cols_per_rank * tp] from tp [rows, cols_per_rank].
Bytes join_columns(const std::vector<Bytes>& parts, int64_t rows_count) {
  Bytes out;
  int64_t part_row = static_cast<int64_t>(parts[0].size()) / rows_count;
  for (int64_t r = 0; r < rows_count; ++r) {
    for (const Bytes& part : parts) out.insert(out.end(), part.begin() + r * part_row, part.begin() + (r + 1) * part_row);
  }
  return out;
}

TEST_F(TinyCheckpoint, ShardThenReassemble) {
  SCOPED_TRACE(testing::replay_hint());
  absl::StatusOr<std::unique_ptr<Checkpoint>> opened = Checkpoint::open(*dir_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const Checkpoint& ckpt = **opened;
  absl::StatusOr<ModelConfig> config = load_config(*dir_);
  ASSERT_TRUE(config.ok());
  const ModelConfig& c = *config;
  const int64_t h = c.hidden_size, p = c.kda_projection(), hd = c.kda_head_dim, lat = c.routed_expert_hidden_size;
  std::map<int, uint64_t> totals_;
  for (int tp : {1, 2, 4, 8}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    // Per layer and tensor name, each rank's bytes.
    std::map<std::pair<int, std::string>, std::vector<Bytes>> loaded;
    uint64_t total_read = 0;
    for (int rank = 0; rank < tp; ++rank) {
      absl::StatusOr<RankPlan> plan = plan_rank(c, tp, rank);
      ASSERT_TRUE(plan.ok()) << plan.status();
      CountingSource source(ckpt);
      for (const LayerPlan& layer : plan->layers) {
        for (const RankTensor& tensor : layer.tensors) {
          absl::StatusOr<Bytes> bytes = load_rank_tensor(tensor, source);
          ASSERT_TRUE(bytes.ok()) << bytes.status();
          ASSERT_EQ(bytes->size(), tensor.nbytes()) << tensor.name;
          loaded[{layer.layer, tensor.name}].push_back(*std::move(bytes));
        }
      }
      EXPECT_EQ(source.bytes_, plan->bytes_read()) << "rank " << rank;
      total_read += source.bytes_;
    }
    const int64_t pl = p / tp, nhl = c.kda_num_heads / tp;
    auto parts = [&](int layer, const std::string& name) -> const std::vector<Bytes>& {
      auto it = loaded.find({layer, name});
      EXPECT_NE(it, loaded.end()) << name;
      return it->second;
    };
    auto attn = [&](int layer, std::string_view s) { return layer_tensor(layer, "self_attn." + std::string(s)); };
    // KDA layer 1: in_proj blocks, f_b, conv, dt_bias, A_log, o_norm, o_proj.
    {
      const int L = 1;
      const std::vector<Bytes>& in_proj = parts(L, "self_attn.in_proj_qkvgfab.weight");
      const char* blocks[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "g_proj.weight"};
      for (int i = 0; i < 4; ++i) {
        Bytes joined;
        for (const Bytes& part : in_proj) {
          Bytes block = rows(part, h * 2, i * pl, pl);
          joined.insert(joined.end(), block.begin(), block.end());
        }
        EXPECT_EQ(joined, source_bytes(ckpt, attn(L, blocks[i]))) << blocks[i];
      }
      Bytes beta;
      for (const Bytes& part : in_proj) {
        EXPECT_EQ(rows(part, h * 2, 4 * pl, hd), source_bytes(ckpt, attn(L, "f_a_proj.weight")));
        Bytes block = rows(part, h * 2, 4 * pl + hd, nhl);
        beta.insert(beta.end(), block.begin(), block.end());
        int64_t pad = static_cast<int64_t>(part.size()) / (h * 2) - (4 * pl + hd + nhl);
        EXPECT_EQ((4 * pl + hd + nhl + pad) % 16, 0);
        Bytes pad_rows = rows(part, h * 2, 4 * pl + hd + nhl, pad);
        EXPECT_EQ(pad_rows, Bytes(pad_rows.size(), 0));
      }
      EXPECT_EQ(beta, source_bytes(ckpt, attn(L, "b_proj.weight")));
      Bytes fb, dt, alog, conv[3];
      for (const Bytes& part : parts(L, "self_attn.f_b_proj.weight")) fb.insert(fb.end(), part.begin(), part.end());
      EXPECT_EQ(fb, source_bytes(ckpt, attn(L, "f_b_proj.weight")));
      for (const Bytes& part : parts(L, "self_attn.dt_bias")) dt.insert(dt.end(), part.begin(), part.end());
      EXPECT_EQ(dt, source_bytes(ckpt, attn(L, "dt_bias")));
      for (const Bytes& part : parts(L, "self_attn.A_log")) alog.insert(alog.end(), part.begin(), part.end());
      EXPECT_EQ(alog, rows(source_bytes(ckpt, attn(L, "A_log")), 4, 0, c.kda_num_heads));
      for (const Bytes& part : parts(L, "self_attn.conv1d.weight")) {
        for (int i = 0; i < 3; ++i) {
          Bytes block = rows(part, 16, i * pl, pl);
          conv[i].insert(conv[i].end(), block.begin(), block.end());
        }
      }
      EXPECT_EQ(conv[0], source_bytes(ckpt, attn(L, "q_conv1d.weight")));
      EXPECT_EQ(conv[1], source_bytes(ckpt, attn(L, "k_conv1d.weight")));
      EXPECT_EQ(conv[2], source_bytes(ckpt, attn(L, "v_conv1d.weight")));
      Bytes onorm = source_bytes(ckpt, attn(L, "o_norm.weight"));
      for (const Bytes& part : parts(L, "self_attn.o_norm.weight")) {
        ASSERT_EQ(part.size(), static_cast<size_t>(2 * hd));
        for (int64_t i = 0; i < hd; ++i) {
          float value;
          std::memcpy(&value, onorm.data() + 4 * i, 4);
          uint16_t bits;
          std::memcpy(&bits, part.data() + 2 * i, 2);
          EXPECT_EQ(bits, bf16_from_float(value)) << i;
        }
      }
      EXPECT_EQ(join_columns(parts(L, "self_attn.o_proj.weight"), h), source_bytes(ckpt, attn(L, "o_proj.weight")));
    }
    // MLA layer 3: fused q_a | kv_a | g rows, q_b/kv_b rows, o_proj columns.
    {
      const int L = 3;
      int64_t kv_a = c.kv_lora_rank + c.qk_rope_head_dim, g_local = c.num_attention_heads / tp * c.v_head_dim;
      Bytes gate;
      for (const Bytes& part : parts(L, "self_attn.fused_qkv_a_proj.weight")) {
        EXPECT_EQ(rows(part, h * 2, 0, c.q_lora_rank), source_bytes(ckpt, attn(L, "q_a_proj.weight")));
        EXPECT_EQ(rows(part, h * 2, c.q_lora_rank, kv_a), source_bytes(ckpt, attn(L, "kv_a_proj_with_mqa.weight")));
        Bytes block = rows(part, h * 2, c.q_lora_rank + kv_a, g_local);
        gate.insert(gate.end(), block.begin(), block.end());
      }
      EXPECT_EQ(gate, source_bytes(ckpt, attn(L, "g_proj.weight")));
      for (std::string_view name : {"q_b_proj.weight", "kv_b_proj.weight"}) {
        Bytes joined;
        for (const Bytes& part : parts(L, "self_attn." + std::string(name))) joined.insert(joined.end(), part.begin(), part.end());
        EXPECT_EQ(joined, source_bytes(ckpt, attn(L, name)));
      }
      EXPECT_EQ(join_columns(parts(L, "self_attn.o_proj.weight"), h), source_bytes(ckpt, attn(L, "o_proj.weight")));
      for (const Bytes& part : parts(L, "self_attn.q_a_layernorm.weight")) {
        EXPECT_EQ(part, source_bytes(ckpt, attn(L, "q_a_layernorm.weight")));
      }
    }
    // Dense layer 0 and the shared experts of layer 2: [gate_r | up_r] rows, down columns.
    for (auto [L, prefix, intermediate] : {std::tuple<int, std::string, int64_t>{0, "mlp.", c.intermediate_size},
                                           {2, "block_sparse_moe.shared_experts.", c.shared_intermediate()}}) {
      int64_t local = intermediate / tp;
      Bytes gate, up;
      for (const Bytes& part : parts(L, prefix + "gate_up_proj.weight")) {
        Bytes g = rows(part, h * 2, 0, local), u = rows(part, h * 2, local, local);
        gate.insert(gate.end(), g.begin(), g.end());
        up.insert(up.end(), u.begin(), u.end());
      }
      EXPECT_EQ(gate, source_bytes(ckpt, layer_tensor(L, prefix + "gate_proj.weight"))) << prefix;
      EXPECT_EQ(up, source_bytes(ckpt, layer_tensor(L, prefix + "up_proj.weight"))) << prefix;
      EXPECT_EQ(join_columns(parts(L, prefix + "down_proj.weight"), h),
                source_bytes(ckpt, layer_tensor(L, prefix + "down_proj.weight")))
          << prefix;
    }
    // MoE of layer 12: router and latent replicated, up_proj rows, experts split on the intermediate.
    {
      const int L = 12;
      std::string moe = "block_sparse_moe.";
      for (std::string_view name : {"gate.weight", "gate.e_score_correction_bias", "routed_expert_down_proj.weight",
                                    "routed_expert_norm.weight"}) {
        for (const Bytes& part : parts(L, moe + std::string(name))) {
          EXPECT_EQ(part, source_bytes(ckpt, layer_tensor(L, moe + std::string(name)))) << name;
        }
      }
      Bytes up;
      for (const Bytes& part : parts(L, moe + "routed_expert_up_proj.weight")) up.insert(up.end(), part.begin(), part.end());
      EXPECT_EQ(up, source_bytes(ckpt, layer_tensor(L, moe + "routed_expert_up_proj.weight")));
      int64_t ir = c.moe_intermediate_size / tp;
      for (int e = 0; e < c.num_experts; e += 5) {
        for (auto [part_name, width] : {std::pair<std::string, int64_t>{"weight_packed", lat / 2}, {"weight_scale", lat / 32}}) {
          std::string w13 = moe + "experts.w13_" + (part_name == "weight_packed" ? std::string("weight") : "weight_scale");
          Bytes w1, w3;
          for (const Bytes& part : parts(L, w13)) {
            Bytes a = rows(part, width, e * 2 * ir, ir), b = rows(part, width, e * 2 * ir + ir, ir);
            w1.insert(w1.end(), a.begin(), a.end());
            w3.insert(w3.end(), b.begin(), b.end());
          }
          EXPECT_EQ(w1, source_bytes(ckpt, expert_tensor(L, e, "w1", part_name))) << e << part_name;
          EXPECT_EQ(w3, source_bytes(ckpt, expert_tensor(L, e, "w3", part_name))) << e << part_name;
          std::string w2 = moe + "experts.w2_" + (part_name == "weight_packed" ? std::string("weight") : "weight_scale");
          std::vector<Bytes> columns;
          int64_t cols = part_name == "weight_packed" ? ir / 2 : ir / 32;
          for (const Bytes& part : parts(L, w2)) columns.push_back(rows(part, cols, e * lat, lat));
          EXPECT_EQ(join_columns(columns, lat), source_bytes(ckpt, expert_tensor(L, e, "w2", part_name))) << e << part_name;
        }
      }
    }
    // AttnRes weights and norms: replicated; embedding: vocab rows split.
    for (const Bytes& part : parts(12, "mlp_res_proj.weight")) {
      EXPECT_EQ(part, source_bytes(ckpt, layer_tensor(12, "mlp_res_proj.weight")));
    }
    Bytes embed;
    for (const Bytes& part : parts(-1, "embed_tokens.weight")) embed.insert(embed.end(), part.begin(), part.end());
    Bytes full = source_bytes(ckpt, model_tensor("embed_tokens.weight"));
    EXPECT_EQ(rows(embed, h * 2, 0, c.vocab_size), full);
    totals_[tp] = total_read;
  }
  // Replicated tensors are read by every rank, split ones once in all: the ranks of a larger TP
  // size read more in all, but each rank less than TP 1's one rank.
  EXPECT_GT(totals_[8], totals_[1]);
  absl::StatusOr<RankPlan> tp8 = plan_rank(c, 8, 3);
  ASSERT_TRUE(tp8.ok());
  EXPECT_LT(tp8->bytes_read() * 3, totals_[1]);
}

}  // namespace
}  // namespace monotile::model
