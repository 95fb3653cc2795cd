// A checkpoint folder: config.json plus safetensors shards, listed by model.safetensors.index.json
// when present (else every *.safetensors file). Tensors are zero-copy views into the maps.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/safetensors.h"

namespace monotile::model {

// Where a rank's loader reads tensors from. `read` copies bytes [offset, offset + out.size()) of
// the tensor's stored range; a test source counts them.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual const TensorInfo* find(std::string_view name) const = 0;
  virtual absl::Status read(const TensorInfo& tensor, uint64_t offset, std::span<uint8_t> out) const = 0;
};

class Checkpoint : public TensorSource {
 public:
  // Refused, naming the file: an unreadable or malformed index, an index naming a file that is
  // missing, a shard that is truncated or malformed, a tensor the index places in a shard that
  // lacks it, a tensor in two shards.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> open(const std::string& dir);

  const TensorInfo* find(std::string_view name) const override;
  absl::Status read(const TensorInfo& tensor, uint64_t offset, std::span<uint8_t> out) const override;
  std::span<const uint8_t> bytes(const TensorInfo& tensor) const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::pair<size_t, const TensorInfo*>, std::less<>> tensors_;
};

}  // namespace monotile::model
