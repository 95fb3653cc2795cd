// Cache::open and the on-disk cache itself: read-only layers then the writable one, lock-free
// verified reads, atomic publication, compile-once across threads (InFlight) and processes
// (KeyLock), LRU eviction after a store, and degradation to "no writable layer" with one warning
// whenever the directory cannot take files. Nothing here ever fails the caller's compile.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cache/cache.h"
#include "cache/counters.h"
#include "cache/entry_format.h"
#include "cache/eviction.h"
#include "cache/file_io.h"
#include "cache/filesystem_kind.h"
#include "cache/in_flight.h"
#include "cache/key_lock.h"
#include "cache/layout.h"
#include "support/log.h"
#include "support/status_macros.h"

namespace monotile::cache {
namespace {

constexpr std::chrono::milliseconds kFirstPoll{1};
constexpr std::chrono::milliseconds kLongestPoll{20};
constexpr std::chrono::seconds kTouchInterval{60};

uint64_t now_unix_ms() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000 + static_cast<uint64_t>(now.tv_nsec) / 1000000;
}

struct Layer {
  Layout layout;
  bool writable = false;
};

class DiskCache final : public Cache {
 public:
  explicit DiskCache(const Config& config);

  std::optional<Entry> lookup(const KeyBuilder& builder) override;
  absl::Status store(const KeyBuilder& builder, const Entry& entry) override;
  absl::StatusOr<Entry> get_or_compute(const KeyBuilder& builder,
                                       const std::function<absl::StatusOr<Entry>()>& compute,
                                       bool* hit) override;
  Stats stats() const override;
  Stats process_stats() const override;
  const Config& config() const override { return config_; }
  bool writable() const override { return writable_.load(); }

 private:
  std::optional<Entry> find(const KeyBuilder& builder, const Key& key);
  void report_bad(const Layer& layer, const std::filesystem::path& path, uint64_t size,
                  std::string_view defect);
  absl::StatusOr<Entry> compute_once(const KeyBuilder& builder, const Key& key,
                                     const std::function<absl::StatusOr<Entry>()>& compute,
                                     bool* from_cache);
  absl::StatusOr<Entry> compute_and_store(const KeyBuilder& builder,
                                          const std::function<absl::StatusOr<Entry>()>& compute);
  absl::StatusOr<Publication> publish(const Key& key, std::string_view bytes);
  void maybe_evict(const Key& keep);
  void degrade(const absl::Status& why);
  void count(const CounterDelta& delta);
  const Layout& writable_layout() const { return layers_.back().layout; }

  Config config_;
  std::vector<Layer> layers_;  // read-only ones in order, then the writable one if it opened
  std::atomic<bool> writable_{false};
  bool compile_lock_ = true;  // off on network filesystems
  std::unique_ptr<PersistentCounters> counters_;
  mutable std::mutex process_mutex_;
  CounterDelta process_;  // guarded by process_mutex_
  InFlight in_flight_;
};

DiskCache::DiskCache(const Config& config) : config_(config) {
  if (!config_.enabled) {
    log_info("kernel cache disabled (MONOTILE_CACHE_DISABLE or Config::enabled): every kernel is compiled");
    return;
  }
  for (const std::filesystem::path& dir : config_.read_only_dirs) {
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) {
      log_warning_once(absl::StrCat("cache-ro:", dir.string()),
                       absl::StrCat("read-only cache directory \"", dir.string(),
                                    "\" does not exist or is not a directory; skipping it"));
      continue;
    }
    layers_.push_back(Layer{Layout(dir), false});
  }
  if (config_.writable_dir.empty()) return;
  Layout layout(config_.writable_dir);
  if (absl::Status status = layout.create(); !status.ok()) {
    degrade(status);
    return;
  }
  layers_.push_back(Layer{layout, true});
  writable_ = true;
  counters_ = std::make_unique<PersistentCounters>(layout.stats_dir());
  FilesystemKind kind = filesystem_kind(layout.root());
  if (kind.network) {
    compile_lock_ = false;
    log_warning_once(absl::StrCat("cache-network:", layout.root().string()),
                     absl::StrCat("cache directory \"", layout.root().string(), "\" is on a network filesystem (",
                                  kind.name, "): cross-process compile locks are off, so processes may compile ",
                                  "the same kernel at once (harmless: the first to publish wins); ",
                                  "hint: point MONOTILE_CACHE_DIR at a local disk and ship shared kernels as ",
                                  "a read-only directory in MONOTILE_CACHE_READONLY_DIRS"));
  }
  remove_stale_files(layout, kStaleFileAge);
}

void DiskCache::degrade(const absl::Status& why) {
  writable_ = false;
  log_warning_once(absl::StrCat("cache-unwritable:", config_.writable_dir.string()),
                   absl::StrCat("kernel cache directory \"", config_.writable_dir.string(),
                                "\" cannot be written (", std::string(why.message()),
                                "); kernels will be compiled without caching; hint: set MONOTILE_CACHE_DIR ",
                                "to a writable local directory, or MONOTILE_CACHE_DISABLE=1 to silence this"));
}

void DiskCache::count(const CounterDelta& delta) {
  {
    std::lock_guard lock(process_mutex_);
    process_.hits += delta.hits;
    process_.misses += delta.misses;
    process_.stores += delta.stores;
    process_.corrupt += delta.corrupt;
    process_.evictions += delta.evictions;
    process_.bytes += delta.bytes;
    process_.entries += delta.entries;
  }
  // Counters are best effort: a full disk must not turn a hit into an error.
  if (counters_ && writable_) counters_->add(delta).IgnoreError();
}

std::optional<Entry> DiskCache::find(const KeyBuilder& builder, const Key& key) {
  std::optional<PreimageDigest> digest;
  for (const Layer& layer : layers_) {
    std::filesystem::path path = layer.layout.entry_path(key);
    timespec last_used{};
    absl::StatusOr<std::string> bytes = read_whole_file(path, &last_used);
    if (!bytes.ok()) {
      if (!absl::IsNotFound(bytes.status())) {
        log_warning_once(absl::StrCat("cache-read:", path.string()),
                         absl::StrCat(std::string(bytes.status().message()), "; treating it as a cache miss"));
      }
      continue;
    }
    if (!digest) digest = digest_preimage(builder.preimage());
    uint64_t size = bytes->size();
    absl::StatusOr<ParsedEntry> parsed = parse_entry(std::move(*bytes));
    std::string defect;
    if (!parsed.ok()) {
      defect = std::string(parsed.status().message());
    } else if (!(parsed->header.key == key)) {
      defect = absl::StrCat("key mismatch: the file holds key ", parsed->header.key.hex());
    } else if (!(parsed->header.preimage == *digest)) {
      defect = "preimage digest mismatch: the entry was built from other inputs than this key's "
               "(a key collision or a tampered entry)";
    }
    if (!defect.empty()) {
      report_bad(layer, path, size, defect);
      continue;
    }
    // LRU bookkeeping, at most once a minute per entry: a hot entry's every hit need not dirty
    // its inode, and eviction needs no finer order than that.
    if (layer.writable && writable_ && ::time(nullptr) - last_used.tv_sec >= kTouchInterval.count()) {
      touch_file(path).IgnoreError();
    }
    return std::move(parsed->entry);
  }
  return std::nullopt;
}

void DiskCache::report_bad(const Layer& layer, const std::filesystem::path& path, uint64_t size,
                           std::string_view defect) {
  bool removed = layer.writable && writable_ && unlink(path.c_str()) == 0;
  const char* outcome = removed          ? "removed it; it will be rebuilt"
                        : layer.writable ? "could not remove it"
                                         : "skipping it (read-only layer, left as is)";
  log_warning_once(absl::StrCat("cache-bad:", path.string(), ":", std::string(defect)),
                   absl::StrCat("bad cache entry \"", path.string(), "\": ", std::string(defect), "; ", outcome));
  CounterDelta delta;
  delta.corrupt = 1;
  if (removed) {
    delta.bytes = -static_cast<int64_t>(size);
    delta.entries = -1;
  }
  count(delta);
  if (removed && counters_) {
    // The damage may have changed the file's size since it was counted (a truncation): rescan.
    // Bad entries are rare, so an O(entries) scan here costs nothing in steady state.
    uint64_t bytes = 0, entries = 0;
    for (const EntryFile& file : scan_entry_files(layer.layout)) {
      bytes += file.size;
      ++entries;
    }
    counters_->set_size(bytes, entries).IgnoreError();
  }
}

std::optional<Entry> DiskCache::lookup(const KeyBuilder& builder) {
  std::optional<Entry> entry = find(builder, builder.key());
  CounterDelta delta;
  (entry ? delta.hits : delta.misses) = 1;
  count(delta);
  return entry;
}

absl::StatusOr<Publication> DiskCache::publish(const Key& key, std::string_view bytes) {
  const Layout& layout = writable_layout();
  absl::StatusOr<Publication> published =
      publish_file(layout.staging_dir(), layout.entry_path(key), bytes, key.hex());
  if (absl::IsNotFound(published.status())) {
    // Someone removed the directory under us (rm -rf of the cache): recreate it once and retry.
    MT_RETURN_IF_ERROR(layout.create());
    published = publish_file(layout.staging_dir(), layout.entry_path(key), bytes, key.hex());
  }
  return published;
}

absl::Status DiskCache::store(const KeyBuilder& builder, const Entry& entry) {
  if (!writable_) {
    return absl::FailedPreconditionError(
        config_.enabled ? "kernel cache has no writable directory (see the warning above, or set MONOTILE_CACHE_DIR)"
                        : "kernel cache is disabled");
  }
  Key key = builder.key();
  EntryHeader header{kFormatVersion, key, digest_preimage(builder.preimage()), now_unix_ms()};
  std::string bytes = serialize_entry(header, entry);
  absl::StatusOr<Publication> published = publish(key, bytes);
  if (!published.ok()) {
    absl::Status status = with_context(published.status(), absl::StrCat("cannot store cache entry ", key.hex()));
    if (is_unwritable(status)) {
      degrade(status);
    } else {
      log_warning_once(absl::StrCat("cache-store:", std::string(status.message())), std::string(status.message()));
    }
    return status;
  }
  if (*published == Publication::kPublished) {
    CounterDelta delta;
    delta.stores = 1;
    delta.bytes = static_cast<int64_t>(bytes.size());
    delta.entries = 1;
    count(delta);
    maybe_evict(key);
  }
  return absl::OkStatus();
}

void DiskCache::maybe_evict(const Key& keep) {
  if (config_.max_bytes == 0 || !counters_) return;
  if (counters_->sum().bytes <= config_.max_bytes) return;
  // One evictor at a time; the others carry on (the running one brings the size down for all).
  auto lock = KeyLock::try_acquire(writable_layout().stats_dir() / "evict.lock");
  if (!lock.ok() || !lock->has_value()) return;
  // Down to 90% so that the next few stores do not each rescan the directory.
  EvictionResult result = evict_entries(writable_layout(), config_.max_bytes / 10 * 9, std::nullopt, keep);
  CounterDelta delta;
  delta.evictions = static_cast<int64_t>(result.removed_entries);
  count(delta);
  counters_->set_size(result.kept_bytes, result.kept_entries).IgnoreError();
  remove_stale_files(writable_layout(), kStaleFileAge);
  log_info(absl::StrCat("kernel cache over its limit: evicted ", result.removed_entries, " entries (",
                        result.removed_bytes, " bytes), kept ", result.kept_entries));
}

absl::StatusOr<Entry> DiskCache::compute_and_store(const KeyBuilder& builder,
                                                   const std::function<absl::StatusOr<Entry>()>& compute) {
  absl::StatusOr<Entry> entry = compute();
  // A failed store was logged; the caller still gets its kernel.
  if (entry.ok() && writable_) store(builder, *entry).IgnoreError();
  return entry;
}

absl::StatusOr<Entry> DiskCache::compute_once(const KeyBuilder& builder, const Key& key,
                                              const std::function<absl::StatusOr<Entry>()>& compute,
                                              bool* from_cache) {
  if (!writable_ || !compile_lock_) return compute_and_store(builder, compute);
  std::filesystem::path lock_path = writable_layout().lock_path(key);
  auto deadline = std::chrono::steady_clock::now() + config_.compile_wait_timeout;
  std::chrono::milliseconds poll = kFirstPoll;
  for (;;) {
    absl::StatusOr<std::optional<KeyLock>> lock = KeyLock::try_acquire(lock_path);
    if (!lock.ok()) {
      log_warning_once(absl::StrCat("cache-lock:", config_.writable_dir.string()),
                       absl::StrCat(std::string(lock.status().message()),
                                    "; compiling without the cross-process compile lock"));
      return compute_and_store(builder, compute);
    }
    if (lock->has_value()) {
      // Double-check under the lock: the previous holder published before releasing it.
      if (std::optional<Entry> entry = find(builder, key)) {
        *from_cache = true;
        return std::move(*entry);
      }
      return compute_and_store(builder, compute);  // the lock is released after the store
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      log_warning_once(absl::StrCat("cache-wait:", key.hex()),
                       absl::StrCat("waited ", config_.compile_wait_timeout.count(), " ms for process ",
                                    KeyLock::holder_pid(lock_path), " to compile cache entry ", key.hex(),
                                    " (lock \"", lock_path.string(), "\"); compiling it here; hint: ",
                                    "MONOTILE_CACHE_WAIT_TIMEOUT sets how long to wait"));
      return compute_and_store(builder, compute);
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(poll, deadline - now));
    poll = std::min(poll * 2, kLongestPoll);
    if (std::optional<Entry> entry = find(builder, key)) {
      *from_cache = true;
      return std::move(*entry);
    }
  }
}

absl::StatusOr<Entry> DiskCache::get_or_compute(const KeyBuilder& builder,
                                                const std::function<absl::StatusOr<Entry>()>& compute,
                                                bool* hit) {
  Key key = builder.key();
  if (hit != nullptr) *hit = false;
  CounterDelta delta;
  if (std::optional<Entry> entry = find(builder, key)) {
    delta.hits = 1;
    count(delta);
    if (hit != nullptr) *hit = true;
    return std::move(*entry);
  }
  auto [flight, leader] = in_flight_.join(key);
  if (!leader) {
    absl::StatusOr<Entry> shared = InFlight::wait(*flight);
    if (shared.ok()) {
      delta.hits = 1;
      count(delta);
      if (hit != nullptr) *hit = true;
    }
    return shared;
  }
  bool from_cache = false;
  absl::StatusOr<Entry> result = compute_once(builder, key, compute, &from_cache);
  in_flight_.finish(key, flight, result);
  (from_cache ? delta.hits : delta.misses) = 1;
  count(delta);
  if (hit != nullptr) *hit = from_cache;
  return result;
}

Stats to_stats(const CounterDelta& counts) {
  auto clamp = [](int64_t value) { return static_cast<uint64_t>(std::max<int64_t>(value, 0)); };
  return Stats{clamp(counts.hits),      clamp(counts.misses), clamp(counts.stores), clamp(counts.corrupt),
               clamp(counts.evictions), clamp(counts.bytes),  clamp(counts.entries)};
}

Stats DiskCache::stats() const {
  if (counters_) return counters_->sum();
  return process_stats();
}

Stats DiskCache::process_stats() const {
  std::lock_guard lock(process_mutex_);
  return to_stats(process_);
}

}  // namespace

std::unique_ptr<Cache> Cache::open(const Config& config) { return std::make_unique<DiskCache>(config); }

}  // namespace monotile::cache
