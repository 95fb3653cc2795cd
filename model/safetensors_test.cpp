// Safetensors round trips for every dtype, and the header refusals (each naming file and tensor).
#include "model/safetensors.h"

#include <filesystem>
#include <fstream>
#include <random>

#include "gtest/gtest.h"
#include "tests/testing/seed.h"

namespace monotile::model {
namespace {

namespace fs = std::filesystem;

std::string temp_path(std::string_view name) {
  return (fs::path(::testing::TempDir()) / (std::string("monotile_st_") + std::to_string(getpid()) + "_" + std::string(name))).string();
}

TEST(Safetensors, RoundTripsEveryDtype) {
  SCOPED_TRACE(testing::replay_hint());
  std::mt19937 rng = testing::case_rng();
  const Dtype dtypes[] = {Dtype::kBool, Dtype::kU8,  Dtype::kI8,  Dtype::kU16, Dtype::kI16,     Dtype::kF16,    Dtype::kBF16,
                          Dtype::kU32,  Dtype::kI32, Dtype::kF32, Dtype::kU64, Dtype::kI64, Dtype::kF64, Dtype::kF8E4M3, Dtype::kF8E5M2};
  std::vector<TensorToWrite> tensors;
  for (Dtype dtype : dtypes) {
    TensorToWrite t{std::string("t_") + std::string(dtype_name(dtype)), dtype, {3, 5}, {}};
    t.data.resize(15 * dtype_size(dtype));
    for (uint8_t& b : t.data) b = static_cast<uint8_t>(rng());
    tensors.push_back(t);
  }
  tensors.push_back({"empty", Dtype::kF32, {0, 7}, {}});
  std::string path = temp_path("all.safetensors");
  ASSERT_TRUE(write_safetensors(path, tensors, {{"format", "pt"}}).ok());
  absl::StatusOr<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  for (const TensorToWrite& t : tensors) {
    const TensorInfo* info = (*file)->find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->dtype, t.dtype);
    EXPECT_EQ(info->shape, t.shape);
    EXPECT_TRUE(info->contiguous());
    EXPECT_TRUE(info->aligned()) << t.name;
    std::span<const uint8_t> bytes = (*file)->bytes(*info);
    EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), t.data) << t.name;
  }
  fs::remove(path);
}

std::string header_error(std::string_view header, uint64_t data_size = 1024) {
  absl::StatusOr<std::vector<TensorInfo>> parsed = parse_safetensors_header(header, data_size, "x.safetensors");
  return parsed.ok() ? "ok" : std::string(parsed.status().message());
}

TEST(Safetensors, RefusesHugeShapeBeforeAllocating) {
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[1073741824,1073741824,1073741824],"data_offsets":[0,16]}})"),
            "safetensors file \"x.safetensors\": tensor \"w\": shape has too many elements");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"BF16","shape":[1152921504606846976],"data_offsets":[0,16]}})"),
            "safetensors file \"x.safetensors\": tensor \"w\": shape [1152921504606846976] BF16 needs "
            "2305843009213693952 bytes, data_offsets give 16");
}

TEST(Safetensors, RefusesBadRanges) {
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,2048]}})"),
            "safetensors file \"x.safetensors\": tensor \"w\": data_offsets [0, 2048) are outside the 1024 data "
            "bytes; hint: the file may be truncated");
  EXPECT_EQ(header_error(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})"),
            "safetensors file \"x.safetensors\": tensor \"b\": bytes overlap tensor \"a\"");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})"),
            "safetensors file \"x.safetensors\": tensor \"w\": unknown dtype \"Q4\"");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})"),
            "safetensors file \"x.safetensors\": tensor \"w\": shape dimensions must be non-negative integers");
  EXPECT_EQ(header_error("{\"w\":"), "safetensors file \"x.safetensors\": the header is not valid JSON");
}

TEST(Safetensors, LongerRangeIsStridedNotRefused) {
  absl::StatusOr<std::vector<TensorInfo>> parsed =
      parse_safetensors_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,32]}})", 64, "x");
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE((*parsed)[0].contiguous());
}

TEST(Safetensors, TruncatedFileIsRefusedWithItsName) {
  std::string path = temp_path("short.safetensors");
  std::vector<TensorToWrite> tensors = {{"w", Dtype::kF32, {64}, std::vector<uint8_t>(256, 1)}};
  ASSERT_TRUE(write_safetensors(path, tensors).ok());
  fs::resize_file(path, fs::file_size(path) - 10);
  absl::StatusOr<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("short.safetensors"), absl::string_view::npos) << file.status();
  EXPECT_NE(file.status().message().find("truncated"), absl::string_view::npos) << file.status();
  fs::resize_file(path, 4);
  file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("shorter than the 8-byte header length"), absl::string_view::npos);
  fs::remove(path);
}

}  // namespace
}  // namespace monotile::model
