// Safetensors files: the header parser (bounds and sizes checked before anything is allocated), a
// memory-mapped reader whose tensors are zero-copy views, and a writer. A tensor's bytes are
// [begin, end) of the data section, which starts after the 8-byte length and the JSON header.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/dtype.h"

namespace monotile::model {

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // bytes into the data section
  uint64_t end = 0;
  std::string file;        // the shard's file name (no folder)
  uint64_t file_offset = 0;  // begin, counted from the start of the file

  int64_t elements() const;
  uint64_t nbytes() const { return static_cast<uint64_t>(elements()) * dtype_size(dtype); }
  // The stored byte range holds exactly the elements, densely (safetensors has no strides; a
  // longer range is a strided or padded tensor the kernels cannot read as is).
  bool contiguous() const { return end - begin == nbytes(); }
  // The first byte sits at a multiple of the element size in the file (the map is page aligned).
  bool aligned() const { return file_offset % dtype_size(dtype) == 0; }
};

// Parses a header (the JSON after the 8-byte length). `data_size` is the number of bytes after the
// header. Refused, naming `file` and the tensor: malformed JSON, an unknown dtype, a negative or
// overflowing shape, a range past the data, a range shorter than the shape needs, overlaps.
// "__metadata__" is returned in `metadata` when given.
absl::StatusOr<std::vector<TensorInfo>> parse_safetensors_header(
    std::string_view header, uint64_t data_size, std::string_view file,
    std::map<std::string, std::string>* metadata = nullptr);

// One memory-mapped safetensors file.
class SafetensorsFile {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;
  // The tensor's stored bytes, a view into the map.
  std::span<const uint8_t> bytes(const TensorInfo& tensor) const;
  const std::string& path() const { return path_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  uint64_t data_offset_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
};

// A tensor to write: its bytes must be elements * dtype size long.
struct TensorToWrite {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// Writes `tensors` in the given order, each aligned to 8 bytes in the file.
absl::Status write_safetensors(const std::string& path, std::span<const TensorToWrite> tensors,
                               const std::map<std::string, std::string>& metadata = {});

}  // namespace monotile::model
