// The stand-ins' reductions over a group of threads: every rank gets the same sums, in rank order,
// and a bf16 tensor on the CPU device is reduced in place with one rounding; a rank that reduces
// another count is refused with the counts.
#include "tools/host_all_reduce.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/dtype.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/device_cpu.h"

namespace monotile::tools {
namespace {

using runtime::decode::Group;
using runtime::decode::InProcessGroup;

TEST(HostAllReduce, EveryRankGetsTheSumInRankOrder) {
  std::vector<std::vector<double>> got(3);
  // Rank order matters in floating point: 1e16 + 1 - 1e16 is 0 in double, 1e16 - 1e16 + 1 is 1.
  const std::vector<std::vector<double>> partials = {{1e16, 2.0}, {1.0, 3.0}, {-1e16, 4.0}};
  std::vector<absl::Status> statuses = InProcessGroup::run(3, [&](Group& group) -> absl::Status {
    absl::StatusOr<std::vector<double>> sum = sum_over_ranks(group, partials[group.rank()]);
    if (!sum.ok()) return sum.status();
    got[group.rank()] = *sum;
    return absl::OkStatus();
  });
  for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
  const std::vector<double> expected = {(1e16 + 1.0) + -1e16, 9.0};
  for (int r = 0; r < 3; ++r) EXPECT_EQ(got[r], expected) << "rank " << r;
}

TEST(HostAllReduce, RefusesARankWithAnotherCount) {
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    return sum_over_ranks(group, std::vector<double>(group.rank() == 0 ? 4 : 3, 1.0)).status();
  });
  EXPECT_EQ(statuses[0].message(),
            "a stand-in's TP reduction: rank 1 sent 3 partial sums, expected 4 as rank 0 did; "
            "every rank must "
            "reduce the same tensor at the same point");
  EXPECT_EQ(statuses[1].message(),
            "a stand-in's TP reduction: rank 0 sent 4 partial sums, expected 3 as rank 1 did; "
            "every rank must "
            "reduce the same tensor at the same point");
}

TEST(HostAllReduce, ReducesABf16TensorOnTheDeviceWithOneRounding) {
  // bf16 partials whose exact sum is no bf16: 1 + 2^-7 + 2^-9 rounds to 1 + 2^-7.
  const std::vector<std::vector<double>> partials = {{1.0 + 1.0 / 128, -3.0}, {1.0 / 512, 0.25}};
  std::vector<std::vector<double>> got(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    std::unique_ptr<runtime::Device> device = runtime::make_cpu_device();
    absl::StatusOr<runtime::Stream> stream = device->create_stream();
    if (!stream.ok()) return stream.status();
    absl::StatusOr<runtime::DeviceBuffer> buffer = device->allocate(4);
    if (!buffer.ok()) return buffer.status();
    std::vector<uint16_t> bits;
    for (double v : partials[group.rank()]) bits.push_back(model::bf16_from_double(v));
    absl::Status s = device->copy_to_device(buffer->address(), bits.data(), 4);
    if (s.ok()) s = all_reduce_bf16(group, *device, *stream, buffer->address(), 2);
    if (s.ok()) s = device->copy_to_host(bits.data(), buffer->address(), 4);
    for (uint16_t b : bits) got[group.rank()].push_back(model::bf16_to_float(b));
    return s;
  });
  for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
  const std::vector<double> expected = {1.0 + 1.0 / 128, -2.75};
  EXPECT_EQ(got[0], expected);
  EXPECT_EQ(got[1], expected);
}

}  // namespace
}  // namespace monotile::tools
