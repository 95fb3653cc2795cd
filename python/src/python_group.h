// A Group over any Python object with rank(), size() and all_gather(bytes) -> list of bytes (a
// torch.distributed CPU group through monotile.vllm.Group, or a test's stand-in); duck-typed, so
// nothing here imports torch.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/decode/group.h"

namespace monotile::python {

namespace nb = nanobind;

class PythonGroup final : public runtime::decode::Group {
 public:
  // rank() and size() are read once here: a group's membership does not change.
  explicit PythonGroup(nb::object group);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // The object's all_gather; a Python exception, a result that is not `size` bytes objects, or
  // another rank's entry of another length becomes an error naming the group's type.
  absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override;

 private:
  nb::object group_;
  int rank_ = 0, size_ = 1;
};

// What a function taking a group gets: a bound monotile.Group as it is, any other object wrapped.
struct GroupArgument {
  runtime::decode::Group* group = nullptr;
  std::shared_ptr<PythonGroup> wrapped;  // set when `object` was a Python group
  nb::object object;                     // keeps the Python side alive
};
GroupArgument group_argument(nb::handle object);

}  // namespace monotile::python
