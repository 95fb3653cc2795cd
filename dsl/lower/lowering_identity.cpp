// The lowering's identity from its ELF image. Why the image and not a hash of dsl/lower's sources
// made at build time: the sources miss the headers they include, the compiler, its flags and every
// library linked in, and a build-time stamp goes stale when a file is edited without reconfiguring;
// the image is exactly what runs. Why the file read back and not the memory alone: initialized data
// is changed by the running process, and relocated tables differ between runs; the file holds them
// as written. The read-only segments are compared with memory first, so a file rebuilt after this
// process started is never taken for the code it runs.
#include "dsl/lower/lowering_identity.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "dsl/lower/lower.h"
#include "xxhash.h"

namespace monotile::dsl::lower {
namespace {

struct LoadedImage {
  uintptr_t anchor = 0;
  uintptr_t base = 0;
  std::string path;
  bool found = false;
};

int find_image(dl_phdr_info* info, size_t, void* data) {
  LoadedImage& image = *static_cast<LoadedImage*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (image.anchor < start || image.anchor >= start + segment.p_memsz) continue;
    image.base = info->dlpi_addr;
    // The program itself has no name in the loader's list.
    image.path = info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' ? info->dlpi_name
                                                                          : "/proc/self/exe";
    image.found = true;
    return 1;
  }
  return 0;
}

class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  bool read(void* into, size_t size, off_t offset) const {
    auto* bytes = static_cast<char*>(into);
    while (size > 0) {
      const ssize_t got = ::pread(fd_, bytes, size, offset);
      if (got <= 0) return false;
      bytes += got;
      size -= static_cast<size_t>(got);
      offset += got;
    }
    return true;
  }
  bool open() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::optional<std::string> hash_image() {
  using Lower =
      absl::StatusOr<LoweredKernel> (*)(const Program&, const Target&, const LowerOptions&);
  const Lower anchor = &lower;
  LoadedImage image;
  image.anchor = reinterpret_cast<uintptr_t>(anchor);
  dl_iterate_phdr(find_image, &image);
  if (!image.found) return std::nullopt;
  File file(image.path);
  ElfW(Ehdr) header{};
  if (!file.open() || !file.read(&header, sizeof header, 0)) return std::nullopt;
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_phentsize != sizeof(ElfW(Phdr))) {
    return std::nullopt;
  }
  std::vector<ElfW(Phdr)> segments(header.e_phnum);
  if (!file.read(segments.data(), segments.size() * sizeof(ElfW(Phdr)),
                 static_cast<off_t>(header.e_phoff))) {
    return std::nullopt;
  }
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  std::vector<char> bytes;
  bool same_image = true;
  for (const ElfW(Phdr) & segment : segments) {
    if (segment.p_type != PT_LOAD) continue;
    bytes.resize(segment.p_filesz);
    if (!file.read(bytes.data(), bytes.size(), static_cast<off_t>(segment.p_offset))) {
      same_image = false;
      break;
    }
    const bool read_only = (segment.p_flags & PF_W) == 0;
    const void* mapped = reinterpret_cast<const void*>(image.base + segment.p_vaddr);
    if (read_only && std::memcmp(bytes.data(), mapped, bytes.size()) != 0) {
      same_image = false;
      break;
    }
    XXH3_128bits_update(state, bytes.data(), bytes.size());
  }
  const XXH128_hash_t digest = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  if (!same_image) return std::nullopt;
  return absl::StrFormat("%016x%016x", digest.high64, digest.low64);
}

}  // namespace

const std::optional<std::string>& lowering_identity() {
  static const std::optional<std::string> identity = hash_image();
  return identity;
}

}  // namespace monotile::dsl::lower
