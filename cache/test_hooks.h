// Points where tests interpose on the cache: pausing a writer between fsync and rename (to kill
// it mid-publication), pretending the directory is on a network filesystem, failing writes as a
// full disk would. Process-local; production code never sets them.
#pragma once

#include <filesystem>
#include <functional>

namespace monotile::cache {

struct TestHooks {
  // Called with the staging file's path after it is written and synced, before it is published.
  std::function<void(const std::filesystem::path& staging_file)> before_publish;
  bool assume_network_filesystem = false;
  // When non-zero, publication fails with this errno before writing (ENOSPC: a full disk).
  int publish_errno = 0;
};

TestHooks& test_hooks();

}  // namespace monotile::cache
