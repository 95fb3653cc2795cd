// write_file / read_file with errno in their messages.
#include "support/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace monotile {

absl::Status write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::error_code error;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), error);
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    return absl::InternalError(absl::StrCat("cannot write \"", path.string(), "\": ",
                                            errno != 0 ? std::strerror(errno) : "write failed",
                                            "; hint: check the folder's permissions and free space"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> read_file(const std::filesystem::path& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read \"", path.string(), "\": ",
                                            errno != 0 ? std::strerror(errno) : "open failed"));
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace monotile
