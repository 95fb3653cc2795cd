// Group: the TP ranks that must agree before a collective path starts (the seed's TP CPU group).
// Every rank calls all_gather at the same point with the same byte count.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace monotile::runtime::decode {

class Group {
 public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank among the group's ranks on its own machine (node), and how many those are: which GPU
  // a rank takes (tools/device_choice.h). By default every rank is on one machine, as the
  // in-process and socket-pair groups' are; the MPI group asks MPI.
  virtual int local_rank() const { return rank(); }
  virtual int local_size() const { return size(); }
  // Every rank's `bytes`, in rank order (this rank's at rank()).
  virtual absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) = 0;
};

// One process, world size 1: all_gather returns its own bytes.
std::unique_ptr<Group> make_single_process_group();

}  // namespace monotile::runtime::decode
