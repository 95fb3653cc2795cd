// Mutation fuzzing of the safetensors header parser and the config reader: 10^5 mutated inputs
// each from valid seeds, drawn from the run's seed. Nothing may crash, throw or allocate without
// bound; every refusal is a Status.
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "tests/testing/seed.h"

namespace monotile::model {
namespace {

constexpr int kInputs = 100000;

// One random edit: a byte flipped, a byte inserted or deleted, a span duplicated, a token
// (digits, quotes, brackets, huge numbers) spliced in.
std::string mutate(std::string text, std::mt19937_64& rng) {
  static const char* kTokens[] = {"1152921504606846976", "-1", "18446744073709551615", "1e308", "\"", "{", "}", "[",
                                  "]", ",", ":", "null", "true", "\"F32\"", "\"BF16\"", "0", "[0,0]", "\\u0000", "NaN"};
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t at = text.empty() ? 0 : rng() % text.size();
    switch (rng() % 5) {
      case 0: if (!text.empty()) text[at] = static_cast<char>(rng()); break;
      case 1: text.insert(at, 1, static_cast<char>(rng())); break;
      case 2: if (!text.empty()) text.erase(at, 1 + rng() % 8); break;
      case 3: {
        size_t length = std::min<size_t>(text.size() - std::min(at, text.size()), rng() % 32);
        text.insert(rng() % (text.size() + 1), text.substr(at, length));
        break;
      }
      default: text.insert(at, kTokens[rng() % (sizeof kTokens / sizeof *kTokens)]);
    }
  }
  return text;
}

TEST(Fuzz, SafetensorsHeader) {
  SCOPED_TRACE(testing::replay_hint());
  std::mt19937_64 rng(testing::case_seed());
  const std::string seeds[] = {
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}})",
      R"({"w":{"dtype":"F32","shape":[1073741824,4],"data_offsets":[0,16]}})",
      R"({"x":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})"};
  int accepted = 0;
  for (int i = 0; i < kInputs; ++i) {
    std::string input = mutate(seeds[i % 3], rng);
    absl::StatusOr<std::vector<TensorInfo>> parsed = parse_safetensors_header(input, 64, "fuzz.safetensors");
    if (!parsed.ok()) continue;
    ++accepted;
    for (const TensorInfo& t : *parsed) {
      ASSERT_LE(t.end, 64u) << input;
      ASSERT_LE(t.nbytes(), t.end - t.begin) << input;
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, kInputs);
}

TEST(Fuzz, ConfigReader) {
  SCOPED_TRACE(testing::replay_hint());
  std::mt19937_64 rng(testing::case_seed());
  std::string seed(embedded_config_json("k3-tiny"));
  int accepted = 0;
  for (int i = 0; i < kInputs; ++i) {
    std::string input = mutate(seed, rng);
    absl::StatusOr<ModelConfig> config = parse_config(input, "fuzz.json");
    if (!config.ok()) {
      ASSERT_FALSE(config.status().message().empty());
      continue;
    }
    ++accepted;
    // Whatever was accepted must be usable: rank dims either refuse or give whole shares.
    for (int tp : {1, 8}) {
      absl::StatusOr<RankDims> dims = rank_dims(*config, tp, 0);
      if (dims.ok()) {
        ASSERT_EQ(dims->kda_heads * tp, config->kda_num_heads);
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace monotile::model
