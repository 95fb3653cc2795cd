// Opening a checkpoint folder: the index's weight map, each shard mapped once, every name checked.
#include "model/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "model/str_cat.h"
#include "nlohmann/json.hpp"

namespace monotile::model {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::string& dir) {
  auto checkpoint = std::make_unique<Checkpoint>();
  checkpoint->dir_ = dir;
  fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::map<std::string, std::string> weight_map;
  std::vector<std::string> file_names;
  std::error_code error;
  if (fs::exists(index_path, error)) {
    std::ifstream in(index_path);
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json index = nlohmann::json::parse(text.str(), nullptr, false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      return absl::InvalidArgumentError(str_cat("checkpoint index \"", index_path.string(),
                                                     "\": expected a JSON object with a \"weight_map\" object"));
    }
    std::set<std::string> unique;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it->is_string()) {
        return absl::InvalidArgumentError(str_cat("checkpoint index \"", index_path.string(), "\": tensor \"",
                                                       it.key(), "\" maps to ", it->type_name(), ", expected a file name"));
      }
      std::string file = it->get<std::string>();
      if (file.empty() || file.find('/') != std::string::npos || file == "..") {
        return absl::InvalidArgumentError(str_cat("checkpoint index \"", index_path.string(), "\": tensor \"",
                                                       it.key(), "\" maps to \"", file, "\", expected a file in the folder"));
      }
      weight_map[it.key()] = file;
      if (unique.insert(file).second) file_names.push_back(file);
    }
  } else {
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
      if (entry.path().extension() == ".safetensors") file_names.push_back(entry.path().filename().string());
    }
    std::sort(file_names.begin(), file_names.end());
    if (file_names.empty()) {
      return absl::NotFoundError(str_cat("checkpoint \"", dir, "\": no model.safetensors.index.json and no *.safetensors file",
                                              error ? str_cat(" (", error.message(), ")") : ""));
    }
  }
  for (const std::string& name : file_names) {
    absl::StatusOr<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open((fs::path(dir) / name).string());
    if (!file.ok()) {
      return absl::Status(file.status().code(),
                          str_cat(file.status().message(), weight_map.empty() ? "" : " (named by model.safetensors.index.json)"));
    }
    size_t file_index = checkpoint->files_.size();
    for (const TensorInfo& tensor : (*file)->tensors()) {
      auto [it, inserted] = checkpoint->tensors_.emplace(tensor.name, std::make_pair(file_index, &tensor));
      if (!inserted) {
        return absl::InvalidArgumentError(str_cat("checkpoint \"", dir, "\": tensor \"", tensor.name, "\" is in both \"",
                                                       checkpoint->files_[it->second.first]->path(), "\" and \"",
                                                       (*file)->path(), "\""));
      }
    }
    checkpoint->files_.push_back(*std::move(file));
  }
  for (const auto& [tensor, file] : weight_map) {
    auto it = checkpoint->tensors_.find(tensor);
    if (it == checkpoint->tensors_.end() || it->second.second->file != file) {
      return absl::InvalidArgumentError(str_cat("checkpoint index \"", index_path.string(), "\": tensor \"", tensor,
                                                     "\" should be in \"", file, "\" but ",
                                                     it == checkpoint->tensors_.end() ? std::string("no shard holds it")
                                                                                      : "\"" + it->second.second->file + "\" holds it"));
    }
  }
  return checkpoint;
}

const TensorInfo* Checkpoint::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second.second;
}

std::span<const uint8_t> Checkpoint::bytes(const TensorInfo& tensor) const {
  auto it = tensors_.find(tensor.name);
  return files_[it->second.first]->bytes(*it->second.second);
}

absl::Status Checkpoint::read(const TensorInfo& tensor, uint64_t offset, std::span<uint8_t> out) const {
  std::span<const uint8_t> all = bytes(tensor);
  if (offset > all.size() || out.size() > all.size() - offset) {
    return absl::OutOfRangeError(str_cat("tensor \"", tensor.name, "\": read of ", out.size(), " bytes at ", offset,
                                              " is past its ", all.size(), " bytes"));
  }
  std::memcpy(out.data(), all.data() + offset, out.size());
  return absl::OkStatus();
}

}  // namespace monotile::model
