// The stand-ins' reductions over the group, in fixed rank order; see host_all_reduce.h.
#include "tools/host_all_reduce.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "model/dtype.h"
#include "support/status_macros.h"

namespace monotile::tools {

absl::StatusOr<std::vector<double>> sum_over_ranks(runtime::decode::Group& group,
                                                   const std::vector<double>& partial) {
  const size_t bytes = partial.size() * sizeof(double);
  MT_ASSIGN_OR_RETURN(
      std::vector<std::string> all,
      group.all_gather(std::string_view(reinterpret_cast<const char*>(partial.data()), bytes)));
  std::vector<double> sum(partial.size(), 0.0), values(partial.size());
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != bytes) {
      return absl::InternalError(absl::StrCat(
          "a stand-in's TP reduction: rank ", r, " sent ", all[r].size() / sizeof(double),
          " partial sums, expected ", partial.size(), " as rank ", group.rank(),
          " did; every rank must reduce the same tensor at the same point"));
    }
    std::memcpy(values.data(), all[r].data(), bytes);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += values[i];
  }
  return sum;
}

absl::Status all_reduce_bf16(runtime::decode::Group& group, runtime::Device& device,
                             runtime::Stream& stream, runtime::DevicePtr data, size_t count) {
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  std::vector<uint16_t> bits(count);
  MT_RETURN_IF_ERROR(device.copy_to_host(bits.data(), data, count * 2));
  std::vector<double> partial(count);
  for (size_t i = 0; i < count; ++i) partial[i] = model::bf16_to_float(bits[i]);
  MT_ASSIGN_OR_RETURN(std::vector<double> sum, sum_over_ranks(group, partial));
  for (size_t i = 0; i < count; ++i) bits[i] = model::bf16_from_double(sum[i]);
  return device.copy_to_device(data, bits.data(), count * 2);
}

}  // namespace monotile::tools
