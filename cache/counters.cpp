// Sharded persistent counters (counters.h). Record: "MTKSTAT1", seven little-endian int64
// (hits, misses, stores, corrupt, evictions, bytes, entries), XXH3-64 of the preceding 64 bytes.
#include "cache/counters.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "cache/file_io.h"
#include "support/log.h"

namespace monotile::cache {
namespace {

constexpr std::string_view kStatsMagic = "MTKSTAT1";
constexpr size_t kRecordSize = 8 + 7 * 8 + 8;

std::filesystem::path shard_path(const std::filesystem::path& dir, int shard) {
  char name[16];
  std::snprintf(name, sizeof name, "shard-%02d", shard);
  return dir / name;
}

int64_t* fields(CounterDelta& counts) {
  static_assert(sizeof(CounterDelta) == 7 * sizeof(int64_t));
  return &counts.hits;
}

void encode(const CounterDelta& counts, unsigned char* out) {
  std::memcpy(out, kStatsMagic.data(), 8);
  CounterDelta copy = counts;
  for (int i = 0; i < 7; ++i) {
    uint64_t value = static_cast<uint64_t>(fields(copy)[i]);
    for (int b = 0; b < 8; ++b) out[8 + 8 * i + b] = static_cast<unsigned char>(value >> (8 * b));
  }
  uint64_t check = XXH3_64bits(out, kRecordSize - 8);
  for (int b = 0; b < 8; ++b) out[kRecordSize - 8 + b] = static_cast<unsigned char>(check >> (8 * b));
}

// Decodes a record; an empty (new) file is all zeros, a damaged one too (with a warning).
CounterDelta decode(const unsigned char* bytes, ssize_t size, const std::filesystem::path& path) {
  CounterDelta counts;
  if (size <= 0) return counts;
  auto u64 = [&](size_t offset) {
    uint64_t value = 0;
    for (int b = 7; b >= 0; --b) value = (value << 8) | bytes[offset + b];
    return value;
  };
  if (size != static_cast<ssize_t>(kRecordSize) || std::memcmp(bytes, kStatsMagic.data(), 8) != 0 ||
      u64(kRecordSize - 8) != XXH3_64bits(bytes, kRecordSize - 8)) {
    log_warning_once(absl::StrCat("stats:", path.string()),
                     absl::StrCat("cache counters \"", path.string(), "\" are damaged; counting them as zero"));
    return counts;
  }
  for (int i = 0; i < 7; ++i) fields(counts)[i] = static_cast<int64_t>(u64(8 + 8 * i));
  return counts;
}

// The signed sum of every shard, each read under a shared flock.
CounterDelta read_total(const std::filesystem::path& dir) {
  CounterDelta total;
  for (int shard = 0; shard < kCounterShards; ++shard) {
    std::filesystem::path path = shard_path(dir, shard);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    unsigned char record[kRecordSize];
    ssize_t size = -1;
    if (flock(fd, LOCK_SH) == 0) size = pread(fd, record, sizeof record, 0);
    close(fd);
    CounterDelta counts = decode(record, size, path);
    for (int i = 0; i < 7; ++i) fields(total)[i] += fields(counts)[i];
  }
  return total;
}

}  // namespace

PersistentCounters::~PersistentCounters() {
  std::lock_guard lock(mutex_);
  if (fd_ >= 0) close(fd_);
}

absl::Status PersistentCounters::update_shard(int shard, const std::function<void(CounterDelta&)>& change) {
  std::lock_guard lock(mutex_);
  std::filesystem::path path = shard_path(dir_, shard);
  // One descriptor per process and shard; reopened after fork (the child must lock on its own).
  int fd = -1;
  bool own_shard = shard == getpid() % kCounterShards;
  if (own_shard && fd_ >= 0 && fd_pid_ == getpid()) {
    fd = fd_;
  } else {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return status_from_errno(errno, absl::StrCat("cannot open \"", path.string(), "\""));
    if (own_shard) {
      if (fd_ >= 0 && fd_pid_ == getpid()) close(fd_);
      fd_ = fd;
      fd_pid_ = getpid();
    }
  }
  absl::Status status;
  if (flock(fd, LOCK_EX) != 0) {
    status = status_from_errno(errno, absl::StrCat("cannot lock \"", path.string(), "\""));
  } else {
    unsigned char record[kRecordSize];
    ssize_t size = pread(fd, record, sizeof record, 0);
    CounterDelta counts = decode(record, size, path);
    change(counts);
    encode(counts, record);
    if (pwrite(fd, record, sizeof record, 0) != static_cast<ssize_t>(sizeof record)) {
      status = status_from_errno(errno, absl::StrCat("cannot write \"", path.string(), "\""));
    }
    flock(fd, LOCK_UN);
  }
  if (fd != fd_) close(fd);
  return status;
}

absl::Status PersistentCounters::add(const CounterDelta& delta) {
  return update_shard(getpid() % kCounterShards, [&](CounterDelta& counts) {
    CounterDelta copy = delta;
    for (int i = 0; i < 7; ++i) fields(counts)[i] += fields(copy)[i];
  });
}

Stats PersistentCounters::sum() const {
  CounterDelta total = read_total(dir_);
  auto clamp = [](int64_t value) { return static_cast<uint64_t>(std::max<int64_t>(value, 0)); };
  return Stats{clamp(total.hits),      clamp(total.misses), clamp(total.stores), clamp(total.corrupt),
               clamp(total.evictions), clamp(total.bytes),  clamp(total.entries)};
}

absl::Status PersistentCounters::set_size(uint64_t bytes, uint64_t entries) {
  CounterDelta tracked = read_total(dir_);
  CounterDelta correction;
  correction.bytes = static_cast<int64_t>(bytes) - tracked.bytes;
  correction.entries = static_cast<int64_t>(entries) - tracked.entries;
  if (correction.bytes == 0 && correction.entries == 0) return absl::OkStatus();
  return add(correction);
}

absl::Status PersistentCounters::zero_events() {
  for (int shard = 0; shard < kCounterShards; ++shard) {
    if (access(shard_path(dir_, shard).c_str(), F_OK) != 0) continue;
    absl::Status status = update_shard(shard, [](CounterDelta& counts) {
      counts = CounterDelta{0, 0, 0, 0, 0, counts.bytes, counts.entries};
    });
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace monotile::cache
