// The host stand-ins' TP reductions in `monotile decode --mpi` (decode_host_layers.h): each rank's
// partial sums gathered through the group and added in rank order 0..T-1, so that every rank holds
// the same sums, bit for bit, and the float64 reference's over all ranks (rank_layer_reference).
#pragma once

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/decode/group.h"
#include "runtime/device.h"

namespace monotile::tools {

// Every rank's `partial` summed in rank order (not rounded). Every rank of `group` calls it at the
// same point with as many values. Refused: a rank that sent another count.
absl::StatusOr<std::vector<double>> sum_over_ranks(runtime::decode::Group& group,
                                                   const std::vector<double>& partial);

// A bf16 tensor [count] on `device` reduced in place: read once `stream` is done, summed over the
// ranks as sum_over_ranks does, rounded to bf16 once, written back.
absl::Status all_reduce_bf16(runtime::decode::Group& group, runtime::Device& device,
                             runtime::Stream& stream, runtime::DevicePtr data, size_t count);

}  // namespace monotile::tools
