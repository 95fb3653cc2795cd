// statfs magic numbers (linux/magic.h and the filesystems' own headers) mapped to names.
#include "cache/filesystem_kind.h"

#include <sys/vfs.h>

#include <cstdio>

#include "cache/test_hooks.h"

namespace monotile::cache {
namespace {

struct KnownFilesystem {
  unsigned long magic;
  const char* name;
  bool network;
};

constexpr KnownFilesystem kKnown[] = {
    {0x6969, "nfs", true},          {0xff534d42, "cifs", true},   {0xfe534d42, "smb2", true},
    {0x517b, "smb", true},          {0x0bd00bd0, "lustre", true}, {0x47504653, "gpfs", true},
    {0x00c36400, "ceph", true},     {0x01021997, "9p", true},     {0x65735546, "fuse", true},
    {0x6b414653, "afs", true},      {0x5346414f, "afs", true},    {0x19830326, "fhgfs", true},
    {0xef53, "ext4", false},        {0x01021994, "tmpfs", false}, {0x58465342, "xfs", false},
    {0x9123683e, "btrfs", false},   {0x794c7630, "overlayfs", false}, {0x2fc12fc1, "zfs", false},
    {0xf2f52010, "f2fs", false},
};

}  // namespace

FilesystemKind filesystem_kind(const std::filesystem::path& dir) {
  if (test_hooks().assume_network_filesystem) return {"nfs (assumed by a test)", true};
  struct statfs info;
  if (statfs(dir.c_str(), &info) != 0) return {"unknown", false};
  unsigned long magic = static_cast<unsigned long>(info.f_type) & 0xffffffffUL;
  for (const KnownFilesystem& known : kKnown) {
    if (known.magic == magic) return {known.name, known.network};
  }
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "unknown (0x%lx)", magic);
  return {buffer, false};
}

}  // namespace monotile::cache
