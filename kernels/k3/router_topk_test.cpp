// router_topk on the interpreter against a host reference: the k largest keys by value, the lower
// index first on ties, for key sets full of exact ties and -inf (the router's NaN and padding
// keys), in the two-round shapes (n 512 to 2048, k 4 to 32) and in one network (n 256, or k 64:
// more than a quarter of a chunk). Outputs are poisoned beforehand; values and indices must match
// exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/router_stage.h"
#include "tests/conformance/interpreter_executor.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::k3 {
namespace {

using conformance::DeviceBuffer;
using conformance::KernelArg;

dsl::Program topk_program(int64_t n, int k) {
  using namespace monotile::dsl;  // NOLINT: the test's kernel reads as the DSL guide writes them
  Builder b("router_topk_test", {.num_warps = 8});
  auto keys = b.arg("keys", ptr(f32));
  auto values = b.arg("values", ptr(f32));
  auto ids = b.arg("ids", ptr(i32));
  Sorted top = router_topk(load(keys + arange(0, static_cast<int>(n))), n, k);
  auto slots = arange(0, k);
  store(values + slots, top.values);
  store(ids + slots, top.indices);
  return b.finish();
}

// Keys of few distinct values, so that ties cross chunk boundaries, `minus_inf` of them -inf.
void expect_the_reference_order(int64_t n, int k, double minus_inf = 0.2) {
  SCOPED_TRACE(::testing::Message() << "n " << n << ", k " << k << ", -inf " << minus_inf);
  std::mt19937 rng = testing::case_rng();
  const float inf = std::numeric_limits<float>::infinity();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> level(1, 8);
  std::vector<float> keys(n);
  for (float& key : keys)
    key = unit(rng) < minus_inf ? -inf : 0.25f * static_cast<float>(level(rng));
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[a] > keys[b]; });

  conformance::InterpreterExecutor executor;
  auto upload = [&](std::span<const std::byte> host, std::string_view name) {
    DeviceBuffer buffer = *executor.allocate(host.size(), name);
    EXPECT_TRUE(executor.copy_in(buffer, host).ok());
    return buffer;
  };
  std::vector<float> values(k, std::numeric_limits<float>::quiet_NaN());
  std::vector<int32_t> ids(k, -7);
  DeviceBuffer keys_buffer = upload(std::as_bytes(std::span(keys)), "keys");
  DeviceBuffer values_buffer = upload(std::as_bytes(std::span(values)), "values");
  DeviceBuffer ids_buffer = upload(std::as_bytes(std::span(ids)), "ids");
  const std::vector<KernelArg> args = {KernelArg::buffer(keys_buffer, dsl::ScalarType::kF32),
                                       KernelArg::buffer(values_buffer, dsl::ScalarType::kF32),
                                       KernelArg::buffer(ids_buffer, dsl::ScalarType::kI32)};
  absl::Status launched = executor.launch(topk_program(n, k), {1, 1, 1}, args);
  ASSERT_TRUE(launched.ok()) << launched;
  ASSERT_TRUE(executor.copy_out(std::as_writable_bytes(std::span(values)), values_buffer).ok());
  ASSERT_TRUE(executor.copy_out(std::as_writable_bytes(std::span(ids)), ids_buffer).ok());
  for (int j = 0; j < k; ++j) {
    EXPECT_EQ(ids[j], order[j]) << "slot " << j;
    EXPECT_EQ(values[j], keys[order[j]]) << "slot " << j;
  }
}

TEST(RouterTopk, TwoRoundsKeepTheOrderOfOneNetwork) {
  expect_the_reference_order(1024, 16);  // K3: 896 experts padded to 1024, top 16
  expect_the_reference_order(512, 8);
  expect_the_reference_order(2048, 32);
  expect_the_reference_order(1024, 4);
}

TEST(RouterTopk, SmallOrOddShapesTakeOneNetwork) {
  expect_the_reference_order(256, 16);
  expect_the_reference_order(1024, 64);  // k above a chunk's quarter
}

// Fewer finite keys than k: every finite key first, then the -inf keys by index, across chunks.
TEST(RouterTopk, MostlyMinusInfinity) {
  expect_the_reference_order(1024, 32, 0.99);
  expect_the_reference_order(1024, 16, 0.995);
}

}  // namespace
}  // namespace monotile::kernels::k3
