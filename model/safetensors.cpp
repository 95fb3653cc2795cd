// Safetensors parsing, mapping and writing. Sizes are checked in 128-bit arithmetic before any
// allocation, so a header claiming 2^60 elements is refused, never allocated.
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "model/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace monotile::model {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

std::string shape_text(const std::vector<int64_t>& shape) {
  return str_cat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status bad(std::string_view file, std::string_view name, std::string_view what) {
  return absl::InvalidArgumentError(str_cat("safetensors file \"", file, "\": tensor \"", name, "\": ", what));
}

absl::StatusOr<TensorInfo> parse_entry(std::string_view file, const std::string& name, const Json& entry,
                                       uint64_t data_size) {
  if (!entry.is_object()) return bad(file, name, "entry is not an object");
  auto dtype_it = entry.find("dtype");
  auto shape_it = entry.find("shape");
  auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || !dtype_it->is_string()) return bad(file, name, "missing string \"dtype\"");
  if (shape_it == entry.end() || !shape_it->is_array()) return bad(file, name, "missing array \"shape\"");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return bad(file, name, "\"data_offsets\" must be an array of two integers");
  }
  TensorInfo info;
  info.name = name;
  std::string dtype_text = dtype_it->get<std::string>();
  std::optional<Dtype> dtype = dtype_from_name(dtype_text);
  if (!dtype) return bad(file, name, str_cat("unknown dtype \"", dtype_text, "\""));
  info.dtype = *dtype;
  unsigned __int128 elements = 1;
  for (const Json& dim : *shape_it) {
    if (!dim.is_number_unsigned() && !(dim.is_number_integer() && dim.get<int64_t>() >= 0)) {
      return bad(file, name, "shape dimensions must be non-negative integers");
    }
    uint64_t value = dim.get<uint64_t>();
    elements *= value;
    if (value > (uint64_t{1} << 62) || elements > (static_cast<unsigned __int128>(1) << 62)) {
      return bad(file, name, "shape has too many elements");
    }
    info.shape.push_back(static_cast<int64_t>(value));
  }
  if (info.shape.size() > 8) return bad(file, name, str_cat("rank ", info.shape.size(), " is more than 8"));
  for (const Json& offset : *offsets_it) {
    if (!offset.is_number_unsigned() && !(offset.is_number_integer() && offset.get<int64_t>() >= 0)) {
      return bad(file, name, "data_offsets must be non-negative integers");
    }
  }
  info.begin = (*offsets_it)[0].get<uint64_t>();
  info.end = (*offsets_it)[1].get<uint64_t>();
  if (info.begin > info.end || info.end > data_size) {
    return bad(file, name, str_cat("data_offsets [", info.begin, ", ", info.end, ") are outside the ",
                                        data_size, " data bytes; hint: the file may be truncated"));
  }
  unsigned __int128 needed = elements * static_cast<unsigned>(dtype_size(info.dtype));
  if (needed > info.end - info.begin) {
    return bad(file, name, str_cat("shape ", shape_text(info.shape), " ", dtype_text, " needs ",
                                        static_cast<uint64_t>(needed), " bytes, data_offsets give ",
                                        info.end - info.begin));
  }
  return info;
}

}  // namespace

int64_t TensorInfo::elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

absl::StatusOr<std::vector<TensorInfo>> parse_safetensors_header(std::string_view header, uint64_t data_size,
                                                                  std::string_view file,
                                                                  std::map<std::string, std::string>* metadata) {
  Json root = Json::parse(header.begin(), header.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return absl::InvalidArgumentError(str_cat("safetensors file \"", file, "\": the header is not valid JSON"));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(str_cat("safetensors file \"", file, "\": the header is not a JSON object"));
  }
  std::vector<TensorInfo> tensors;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) {
        return absl::InvalidArgumentError(str_cat("safetensors file \"", file, "\": \"__metadata__\" is not an object"));
      }
      for (auto meta = it->begin(); meta != it->end(); ++meta) {
        if (!meta->is_string()) {
          return absl::InvalidArgumentError(str_cat("safetensors file \"", file, "\": metadata \"", meta.key(),
                                                         "\" is not a string"));
        }
        if (metadata) (*metadata)[meta.key()] = meta->get<std::string>();
      }
      continue;
    }
    absl::StatusOr<TensorInfo> info = parse_entry(file, it.key(), *it, data_size);
    if (!info.ok()) return info.status();
    info->file = std::string(file);
    tensors.push_back(*std::move(info));
  }
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& tensor : tensors) by_offset.push_back(&tensor);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end && by_offset[i]->begin != by_offset[i]->end) {
      return bad(file, by_offset[i]->name, str_cat("bytes overlap tensor \"", by_offset[i - 1]->name, "\""));
    }
  }
  return tensors;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(str_cat("cannot open safetensors file \"", path, "\": ", std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::InternalError(str_cat("cannot stat \"", path, "\": ", std::strerror(errno)));
  }
  auto file = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  file->path_ = path;
  file->map_size_ = static_cast<size_t>(st.st_size);
  if (file->map_size_ < 8) {
    ::close(fd);
    return absl::InvalidArgumentError(str_cat("safetensors file \"", path, "\": ", file->map_size_,
                                                   " bytes, shorter than the 8-byte header length; hint: truncated"));
  }
  void* map = ::mmap(nullptr, file->map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::InternalError(str_cat("cannot map \"", path, "\": ", std::strerror(errno)));
  }
  file->map_ = static_cast<const uint8_t*>(map);
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t{file->map_[i]} << (8 * i);
  if (header_size > kMaxHeaderBytes || header_size > file->map_size_ - 8) {
    return absl::InvalidArgumentError(str_cat("safetensors file \"", path, "\": header length ", header_size,
                                                   " exceeds the file's ", file->map_size_ - 8,
                                                   " remaining bytes (limit ", kMaxHeaderBytes, "); hint: truncated"));
  }
  file->data_offset_ = 8 + header_size;
  std::string name = path.substr(path.find_last_of('/') + 1);
  std::string_view header(reinterpret_cast<const char*>(file->map_ + 8), header_size);
  absl::StatusOr<std::vector<TensorInfo>> tensors =
      parse_safetensors_header(header, file->map_size_ - file->data_offset_, name);
  if (!tensors.ok()) return tensors.status();
  file->tensors_ = *std::move(tensors);
  for (size_t i = 0; i < file->tensors_.size(); ++i) {
    file->tensors_[i].file_offset = file->data_offset_ + file->tensors_[i].begin;
    file->index_.emplace(file->tensors_[i].name, i);
  }
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), map_size_);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> SafetensorsFile::bytes(const TensorInfo& tensor) const {
  return {map_ + data_offset_ + tensor.begin, static_cast<size_t>(tensor.end - tensor.begin)};
}

absl::Status write_safetensors(const std::string& path, std::span<const TensorToWrite> tensors,
                               const std::map<std::string, std::string>& metadata) {
  // Widest elements first, as the format's own writer orders them, so every tensor stays aligned.
  std::vector<const TensorToWrite*> order;
  for (const TensorToWrite& tensor : tensors) order.push_back(&tensor);
  std::stable_sort(order.begin(), order.end(), [](const TensorToWrite* a, const TensorToWrite* b) {
    return dtype_size(a->dtype) > dtype_size(b->dtype);
  });
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorToWrite* tensor : order) {
    int64_t elements = 1;
    for (int64_t dim : tensor->shape) elements *= dim;
    if (tensor->data.size() != static_cast<size_t>(elements) * dtype_size(tensor->dtype)) {
      return absl::InvalidArgumentError(str_cat("writing \"", path, "\": tensor \"", tensor->name, "\" has ",
                                                     tensor->data.size(), " bytes, its shape needs ",
                                                     elements * dtype_size(tensor->dtype)));
    }
    header[tensor->name] = {{"dtype", std::string(dtype_name(tensor->dtype))},
                            {"shape", tensor->shape},
                            {"data_offsets", {offset, offset + tensor->data.size()}}};
    offset += tensor->data.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(str_cat("cannot create \"", path, "\""));
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const TensorToWrite* tensor : order) {
    out.write(reinterpret_cast<const char*>(tensor->data.data()), static_cast<std::streamsize>(tensor->data.size()));
  }
  out.close();
  if (!out) return absl::DataLossError(str_cat("writing \"", path, "\" failed"));
  return absl::OkStatus();
}

}  // namespace monotile::model
