// SeededWeights: any byte range reads what the whole tensor holds there, the same seed gives the
// same bytes and another seed others, values follow their role's scale, k3's tensors are listed
// without being made, and a read past a tensor's end is refused naming it.
#include "model/seeded_weights.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/config.h"

namespace monotile::model {
namespace {

std::unique_ptr<SeededWeights> weights(const std::string& name, uint64_t seed) {
  absl::StatusOr<ModelConfig> config = load_config(name);
  EXPECT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::unique_ptr<SeededWeights>> made = SeededWeights::create(*config, seed);
  EXPECT_TRUE(made.ok()) << made.status();
  return *std::move(made);
}

const TensorInfo& first_ending(const SeededWeights& w, const std::string& suffix) {
  for (const TensorInfo& tensor : w.tensors()) {
    if (absl::EndsWith(tensor.name, suffix)) return tensor;
  }
  ADD_FAILURE() << "no tensor ending in " << suffix;
  return w.tensors().front();
}

std::vector<uint8_t> read(const SeededWeights& w, const TensorInfo& tensor, uint64_t offset, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  EXPECT_TRUE(w.read(tensor, offset, out).ok());
  return out;
}

// The tensor's values as doubles (bf16 or f32).
std::vector<double> values(const SeededWeights& w, const TensorInfo& tensor) {
  std::vector<uint8_t> bytes = read(w, tensor, 0, tensor.nbytes());
  std::vector<double> out(static_cast<size_t>(tensor.elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (tensor.dtype == Dtype::kF32) {
      float value;
      std::memcpy(&value, bytes.data() + 4 * i, 4);
      out[i] = value;
    } else {
      uint16_t bits;
      std::memcpy(&bits, bytes.data() + 2 * i, 2);
      out[i] = bf16_to_float(bits);
    }
  }
  return out;
}

TEST(SeededWeights, AnyRangeReadsWhatTheWholeTensorHolds) {
  auto w = weights("k3-tiny", 5);
  const TensorInfo& tensor = first_ending(*w, "self_attn.o_proj.weight");
  const std::vector<uint8_t> whole = read(*w, tensor, 0, tensor.nbytes());
  for (uint64_t offset : std::vector<uint64_t>{0, 1, 7, 1000, tensor.nbytes() - 3}) {
    const std::vector<uint8_t> part = read(*w, tensor, offset, 3);
    EXPECT_EQ(std::memcmp(part.data(), whole.data() + offset, 3), 0) << offset;
  }
}

TEST(SeededWeights, TheSeedDecides) {
  auto a = weights("k3-tiny", 5), b = weights("k3-tiny", 5), c = weights("k3-tiny", 6);
  const TensorInfo& tensor = first_ending(*a, "self_attn.q_proj.weight");
  EXPECT_EQ(read(*a, tensor, 0, 4096), read(*b, tensor, 0, 4096));
  EXPECT_NE(read(*a, tensor, 0, 4096), read(*c, tensor, 0, 4096));
}

TEST(SeededWeights, ValuesFollowTheirRole) {
  auto w = weights("k3-tiny", 3);
  for (double v : values(*w, first_ending(*w, "input_layernorm.weight"))) EXPECT_NEAR(v, 1.0, 0.051);
  const TensorInfo& a_log = first_ending(*w, "self_attn.A_log");
  EXPECT_EQ(a_log.shape, (std::vector<int64_t>{11}));  // 4/3 of the 8 heads, as the published checkpoint
  for (double v : values(*w, a_log)) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, std::log(16.0) + 1e-6);
  }
  for (double v : values(*w, first_ending(*w, "self_attn.q_conv1d.weight"))) EXPECT_LE(std::fabs(v), 0.5);
  for (double v : values(*w, first_ending(*w, "self_attn.dt_bias"))) EXPECT_LE(std::fabs(v), 0.25);
  const TensorInfo& projection = first_ending(*w, "self_attn.o_proj.weight");
  double sum = 0;
  const std::vector<double> p = values(*w, projection);
  for (double v : p) sum += v * v;
  const double rms = std::sqrt(sum / static_cast<double>(p.size()));
  EXPECT_NEAR(rms * std::sqrt(static_cast<double>(projection.shape.back())), 1.0, 0.05);
}

TEST(SeededWeights, K3IsListedWithoutBeingMade) {
  auto w = weights("k3", 1);
  const TensorInfo& tensor = first_ending(*w, "self_attn.q_proj.weight");
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{12288, 7168}));
  // One row from the middle of a 176 MB tensor.
  EXPECT_EQ(read(*w, tensor, 7000 * 7168 * 2, 7168 * 2).size(), 7168u * 2);
}

TEST(SeededWeights, AReadPastTheEndNamesTheTensor) {
  auto w = weights("k3-tiny", 1);
  const TensorInfo& tensor = first_ending(*w, "self_attn.A_log");
  std::vector<uint8_t> out(8);
  const absl::Status status = w->read(tensor, tensor.nbytes() - 4, out);
  EXPECT_EQ(std::string(status.message()),
            absl::StrCat("reading bytes [40, 48) of \"", tensor.name, "\", which has 44"));
}

}  // namespace
}  // namespace monotile::model
