// What kind of filesystem holds a directory, from statfs(2)'s magic number. Network filesystems
// (NFS, SMB, Lustre, GPFS, Ceph, 9p, FUSE mounts such as sshfs) get flock semantics that range
// from emulated to absent, so the cache turns its cross-process compile lock off there.
#pragma once

#include <filesystem>
#include <string>

namespace monotile::cache {

struct FilesystemKind {
  std::string name;  // "nfs", "ext4", "tmpfs"... or "unknown (0x...)"
  bool network = false;
};

FilesystemKind filesystem_kind(const std::filesystem::path& dir);

}  // namespace monotile::cache
