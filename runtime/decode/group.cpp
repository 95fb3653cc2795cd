// The world-size-1 group.
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {
namespace {

class SingleProcessGroup final : public Group {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override {
    return std::vector<std::string>{std::string(bytes)};
  }
};

}  // namespace

std::unique_ptr<Group> make_single_process_group() {
  return std::make_unique<SingleProcessGroup>();
}

}  // namespace monotile::runtime::decode
