// The CPU device (see device_cpu.h). Work on a stream is a list of closures: run at once, or kept
// while the stream captures; a graph is such a list, replayed in order.
#include "runtime/device_cpu.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "runtime/driver_error.h"
#include "support/log.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

// Like a GPU allocator, so that code that relies on 256-byte alignment behaves the same here.
constexpr size_t kAlignment = 256;

using Work = std::function<absl::Status()>;

struct CpuStream {
  bool capturing = false;
  std::vector<Work> captured;
};

struct CpuEvent {
  std::optional<std::chrono::steady_clock::time_point> time;
};

struct CpuGraph {
  std::vector<Work> work;
};

struct LoadedModule {
  std::unique_ptr<CpuModule> module;
};

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? int64_t{pages} * page_size : 0;
}

template <typename T>
T* from_native(uint64_t native) {
  return reinterpret_cast<T*>(native);
}

template <typename T>
uint64_t to_native(T* pointer) {
  return reinterpret_cast<uint64_t>(pointer);
}

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(CpuModuleLoader loader) : loader_(std::move(loader)) {
    info_.vendor = dsl::Vendor::kCpu;
    info_.ordinal = 0;
    info_.name = "cpu interpreter";
    info_.target = dsl::Target::cpu();
    info_.compute_units = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    info_.memory_bytes = physical_memory_bytes();
    info_.max_shared_memory_per_block = info_.target.shared_memory_per_block();
    info_.driver = loader_ ? "interpreter" : "no program loader: cannot launch";
  }

  ~CpuDevice() override {
    absl::MutexLock lock(&mutex_);
    // The host's registered memory and other devices' mapped buffers are not this device's to free.
    const size_t owned = allocations_.size() - registered_.size() - peer_maps_.size();
    if (owned > 0) {
      log_warning(absl::StrCat("cpu device destroyed with ", owned, " allocation(s) still live; they are leaked"));
    }
  }

  absl::Status register_host(const void* base, size_t bytes, std::string_view name) {
    if (bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat("registering 0 bytes of host memory (\"", to_absl(name),
                                                     "\") with ", describe(info_)));
    }
    absl::MutexLock lock(&mutex_);
    auto registered = registered_.find(base);
    if (registered != registered_.end()) {
      ++registered->second;
      CpuAllocation& allocation = allocations_.at(base);
      allocation.bytes = std::max(allocation.bytes, bytes);
      return absl::OkStatus();
    }
    const uint64_t begin = to_native(base), end = begin + bytes;
    for (const auto& [other_base, allocation] : allocations_) {
      const uint64_t other = to_native(other_base);
      if (registered_.count(other_base) == 0 && begin < other + allocation.bytes && other < end) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "registering host memory \"%s\" [0x%x, 0x%x) with %s: it overlaps %s, which the device allocated",
            to_absl(name), begin, end, describe(info_), allocation.name));
      }
    }
    allocations_[base] = CpuAllocation{base, bytes, std::string(name)};
    registered_[base] = 1;
    return absl::OkStatus();
  }

  absl::Status unregister_host(const void* base) {
    absl::MutexLock lock(&mutex_);
    auto registered = registered_.find(base);
    if (registered == registered_.end()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "unregistering host memory at 0x%x from %s: it is not registered", to_native(base), describe(info_)));
    }
    if (--registered->second == 0) {
      registered_.erase(registered);
      allocations_.erase(base);
    }
    return absl::OkStatus();
  }

  const DeviceInfo& info() const override { return info_; }

  absl::StatusOr<DeviceBuffer> allocate(size_t bytes) override {
    MT_ASSIGN_OR_RETURN(void* memory, allocate_host(bytes, "buffer"));
    return make_buffer(to_native(memory), bytes);
  }

  absl::StatusOr<HostMappedBuffer> allocate_host_mapped(size_t bytes) override {
    MT_ASSIGN_OR_RETURN(void* memory, allocate_host(bytes, "host-mapped buffer"));
    std::memset(memory, 0, bytes);
    return make_host_mapped(memory, to_native(memory), bytes);
  }

  // Peer memory: a shared memory file (memfd) mapped here, so that the ranks may be threads of this
  // process (InProcessGroup) or processes of this machine (mpirun). A handle names the process, the
  // address there and the file's descriptor there: this process uses the address, another maps
  // /proc/<pid>/fd/<fd> (the file lives as long as its owner's mapping).
  absl::StatusOr<ExportedBuffer> allocate_exportable(size_t bytes) override {
    if (bytes == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("allocating an exported buffer of 0 bytes on ", describe(info_)));
    }
    const int fd = memfd_create("monotile peer buffer", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const std::string reason = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return absl::ResourceExhaustedError(absl::StrCat("allocating an exported buffer of ",
                                                       describe_bytes(bytes), " on ", describe(info_),
                                                       ": a shared memory file failed: ", reason));
    }
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return absl::ResourceExhaustedError(absl::StrCat("allocating an exported buffer of ",
                                                       describe_bytes(bytes), " on ", describe(info_),
                                                       ": mapping its shared memory file failed: ",
                                                       reason));
    }
    {
      absl::MutexLock lock(&mutex_);
      allocations_[memory] = CpuAllocation{
          memory, bytes,
          absl::StrCat("exported buffer #", ++allocation_count_, " (", bytes, " bytes)")};
      shared_[memory] = SharedFile{fd, bytes};
    }
    return ExportedBuffer{make_buffer(to_native(memory), bytes),
                          absl::StrCat("cpu ", getpid(), " ", to_native(memory), " ", bytes, " ", fd)};
  }
  absl::StatusOr<PeerMapping> map_peer(std::string_view handle, size_t bytes) override {
    long long pid = 0;
    uint64_t address = 0, exported = 0;
    int fd = -1;
    char extra = 0;
    const std::string text(handle);
    if (std::sscanf(text.c_str(), "cpu %lld %" SCNu64 " %" SCNu64 " %d%c", &pid, &address,
                    &exported, &fd, &extra) != 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a peer buffer's handle of ", handle.size(), " bytes given to ", describe(info_),
          ": not the CPU device's (\"cpu <pid> <address> <bytes> <fd>\")"));
    }
    if (bytes > exported) {
      return absl::InvalidArgumentError(absl::StrCat("mapping ", bytes,
                                                     " bytes of a peer buffer of ", exported,
                                                     " bytes on ", describe(info_)));
    }
    if (pid != getpid()) return map_other_process(pid, fd, bytes);
    // A buffer of another CPU device of this process: this device's range checks accept it while
    // it is mapped (counted: the same buffer may be mapped more than once).
    absl::MutexLock lock(&mutex_);
    const void* base = from_native<const void>(address);
    if (auto mapped = peer_maps_.find(base); mapped != peer_maps_.end()) {
      ++mapped->second;
    } else if (!allocations_.contains(base)) {
      allocations_[base] =
          CpuAllocation{base, bytes, absl::StrCat("peer buffer (", bytes, " bytes)")};
      peer_maps_[base] = 1;
    }
    return make_peer_mapping(address, bytes);
  }

  // Another process's buffer: its shared memory file mapped here, at an address of this process.
  absl::StatusOr<PeerMapping> map_other_process(long long pid, int fd, size_t bytes) {
    const std::string path = absl::StrCat("/proc/", pid, "/fd/", fd);
    const int opened = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    void* memory = opened < 0 ? MAP_FAILED
                              : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, opened, 0);
    const std::string reason = std::strerror(errno);
    if (opened >= 0) ::close(opened);
    if (memory == MAP_FAILED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a peer buffer of process ", pid, " given to ", describe(info_), " of process ", getpid(),
          ": mapping ", path, " failed: ", reason,
          "; hint: the CPU device's ranks are threads of one process or processes of one user on "
          "this machine"));
    }
    absl::MutexLock lock(&mutex_);
    allocations_[memory] = CpuAllocation{
        memory, bytes, absl::StrCat("peer buffer of process ", pid, " (", bytes, " bytes)")};
    peer_maps_[memory] = 1;
    foreign_[memory] = bytes;
    return make_peer_mapping(to_native(memory), bytes);
  }

  absl::Status copy_to_device(DevicePtr destination, const void* source, size_t bytes) override {
    MT_RETURN_IF_ERROR(check_range("copy_to_device", "destination", destination, bytes));
    std::memcpy(from_native<void>(destination), source, bytes);
    return absl::OkStatus();
  }
  absl::Status copy_to_host(void* destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(check_range("copy_to_host", "source", source, bytes));
    std::memcpy(destination, from_native<const void>(source), bytes);
    return absl::OkStatus();
  }
  absl::Status copy_on_device(DevicePtr destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(check_range("copy_on_device", "destination", destination, bytes));
    MT_RETURN_IF_ERROR(check_range("copy_on_device", "source", source, bytes));
    std::memmove(from_native<void>(destination), from_native<const void>(source), bytes);
    return absl::OkStatus();
  }
  absl::Status fill_bytes(DevicePtr destination, uint8_t value, size_t bytes) override {
    MT_RETURN_IF_ERROR(check_range("fill_bytes", "destination", destination, bytes));
    std::memset(from_native<void>(destination), value, bytes);
    return absl::OkStatus();
  }

  absl::Status copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                                    Stream& stream) override {
    return enqueue(stream, [=, this] { return copy_to_device(destination, source, bytes); });
  }
  absl::Status copy_to_host_async(void* destination, DevicePtr source, size_t bytes,
                                  Stream& stream) override {
    return enqueue(stream, [=, this] { return copy_to_host(destination, source, bytes); });
  }
  absl::Status copy_on_device_async(DevicePtr destination, DevicePtr source, size_t bytes,
                                    Stream& stream) override {
    return enqueue(stream, [=, this] { return copy_on_device(destination, source, bytes); });
  }
  absl::Status fill_bytes_async(DevicePtr destination, uint8_t value, size_t bytes,
                                Stream& stream) override {
    return enqueue(stream, [=, this] { return fill_bytes(destination, value, bytes); });
  }

  absl::StatusOr<Stream> create_stream() override {
    auto* stream = new CpuStream;
    absl::MutexLock lock(&mutex_);
    live_.insert(stream);
    return make_stream(to_native(stream));
  }

  absl::StatusOr<Stream> wrap_stream(uint64_t native) override {
    MT_RETURN_IF_ERROR(check_live(native, "wrap_stream", "stream", "create_stream"));
    return Device::wrap_stream(native);
  }
  absl::StatusOr<Event> wrap_event(uint64_t native) override {
    MT_RETURN_IF_ERROR(check_live(native, "wrap_event", "event", "create_event"));
    return Device::wrap_event(native);
  }

  absl::Status synchronize(Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(stream, "stream"));
    if (from_native<CpuStream>(stream.native())->capturing) {
      return absl::FailedPreconditionError(
          "synchronize on a stream that is capturing; hint: call end_capture first");
    }
    return absl::OkStatus();  // work ran when it was enqueued
  }

  absl::Status synchronize() override { return absl::OkStatus(); }

  absl::StatusOr<Event> create_event() override {
    auto* event = new CpuEvent;
    absl::MutexLock lock(&mutex_);
    live_.insert(event);
    return make_event(to_native(event));
  }

  absl::Status record(Event& event, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(event, "event"));
    CpuEvent* target = from_native<CpuEvent>(event.native());
    return enqueue(stream, [target] {
      target->time = std::chrono::steady_clock::now();
      return absl::OkStatus();
    });
  }

  absl::Status synchronize(Event& event) override { return check_owned(event, "event"); }

  absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) override {
    MT_RETURN_IF_ERROR(check_owned(start, "start event"));
    MT_RETURN_IF_ERROR(check_owned(end, "end event"));
    const CpuEvent* first = from_native<CpuEvent>(start.native());
    const CpuEvent* last = from_native<CpuEvent>(end.native());
    if (!first->time || !last->time) {
      return absl::FailedPreconditionError(absl::StrCat(
          "elapsed_ms on ", describe(info_), ": the ", !first->time ? "start" : "end",
          " event was never recorded; hint: record both events on a stream first"));
    }
    return std::chrono::duration<float, std::milli>(*last->time - *first->time).count();
  }

  absl::StatusOr<Module> load_module(std::string_view code_object,
                                     std::string_view label) override {
    if (!loader_) {
      return absl::UnimplementedError(absl::StrCat(
          "this CPU device cannot launch kernels: it was made without a program loader, so module \"",
          to_absl(label), "\" (", code_object.size(),
          " bytes) cannot be loaded; hint: make it with make_cpu_device(interpreter_loader(...))"));
    }
    absl::StatusOr<std::unique_ptr<CpuModule>> module = loader_(code_object, label);
    if (!module.ok()) {
      return with_context(module.status(),
                          absl::StrCat("loading module \"", to_absl(label), "\" on the CPU device"));
    }
    auto* loaded = new LoadedModule{std::move(*module)};
    return make_module(to_native(loaded), label);
  }

  absl::StatusOr<Function> function(const Module& module, std::string_view name) override {
    MT_RETURN_IF_ERROR(check_owned(module, "module"));
    LoadedModule* loaded = from_native<LoadedModule>(module.native());
    absl::StatusOr<CpuKernel*> kernel = loaded->module->kernel(name);
    if (!kernel.ok()) {
      return with_context(kernel.status(), absl::StrCat("looking up \"", to_absl(name),
                                                        "\" in module \"", module.label(), "\""));
    }
    return make_function(to_native(*kernel), name);
  }

  absl::Status set_max_dynamic_shared_memory(const Function& function, int64_t bytes) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    if (bytes < 0 || bytes > info_.max_shared_memory_per_block) {
      return absl::InvalidArgumentError(absl::StrCat(
          "set_max_dynamic_shared_memory for \"", function.name(), "\": ", bytes,
          " bytes is outside [0, ", info_.max_shared_memory_per_block, "] on ", describe(info_)));
    }
    return absl::OkStatus();
  }

  absl::Status launch(const Function& function, const LaunchConfig& config, void** args,
                      Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    if (config.grid.count() == 0 || config.block.count() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("launch of \"", function.name(), "\" (",
                                                     describe(config),
                                                     "): every grid and block size must be >= 1"));
    }
    CpuKernel* kernel = from_native<CpuKernel>(function.native());
    // Copy the argument values now, as a GPU driver does at launch.
    std::span<const size_t> sizes = kernel->parameter_sizes();
    auto values = std::make_shared<std::vector<std::vector<unsigned char>>>();
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto* bytes = static_cast<const unsigned char*>(args[i]);
      values->emplace_back(bytes, bytes + sizes[i]);
    }
    std::string name = function.name();
    return enqueue(stream, [this, kernel, config, values, name] {
      std::vector<void*> pointers;
      for (std::vector<unsigned char>& value : *values) pointers.push_back(value.data());
      absl::Status status = kernel->run(config, pointers.data(), live_allocations());
      return with_context(status, absl::StrCat("kernel \"", name, "\" (", describe(config), ")"));
    });
  }

  absl::Status begin_capture(Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(stream, "stream"));
    CpuStream* queue = from_native<CpuStream>(stream.native());
    if (queue->capturing) {
      return absl::FailedPreconditionError("begin_capture on a stream that is already capturing");
    }
    queue->capturing = true;
    queue->captured.clear();
    return absl::OkStatus();
  }

  absl::StatusOr<Graph> end_capture(Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(stream, "stream"));
    CpuStream* queue = from_native<CpuStream>(stream.native());
    if (!queue->capturing) {
      return absl::FailedPreconditionError(
          "end_capture on a stream that is not capturing; hint: call begin_capture first");
    }
    queue->capturing = false;
    auto* graph = new CpuGraph{std::move(queue->captured)};
    queue->captured.clear();
    return make_graph(to_native(graph));
  }

  absl::Status replay(const Graph& graph, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(graph, "graph"));
    const CpuGraph* recording = from_native<CpuGraph>(graph.native());
    for (const Work& work : recording->work) MT_RETURN_IF_ERROR(enqueue(stream, work));
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<void*> allocate_host(size_t bytes, std::string_view what) {
    if (bytes == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("allocating a ", to_absl(what), " of 0 bytes on ", describe(info_)));
    }
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* memory = std::aligned_alloc(kAlignment, rounded);
    if (memory == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("allocating a ", to_absl(what), " of ",
                                                       describe_bytes(bytes), " on ",
                                                       describe(info_), " failed: out of memory"));
    }
    absl::MutexLock lock(&mutex_);
    allocations_[memory] = CpuAllocation{
        memory, bytes, absl::StrCat(to_absl(what), " #", ++allocation_count_, " (", bytes, " bytes)")};
    return memory;
  }

  // A GPU would fault (or corrupt memory) on an address outside every allocation; here it is an
  // error naming the call, the range and the nearest allocation below it.
  absl::Status check_range(std::string_view call, std::string_view role, DevicePtr address,
                           size_t bytes) {
    absl::MutexLock lock(&mutex_);
    auto above = allocations_.upper_bound(from_native<const void>(address));
    if (above != allocations_.begin()) {
      const CpuAllocation& allocation = std::prev(above)->second;
      const uint64_t base = to_native(allocation.base);
      if (address >= base && address + bytes <= base + allocation.bytes) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s on %s: the %s [0x%x, 0x%x) is outside every allocation; the nearest below is %s at "
          "0x%x",
          to_absl(call), describe(info_), to_absl(role), address, address + bytes, allocation.name,
          base));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s on %s: the %s [0x%x, 0x%x) is outside every allocation", to_absl(call),
        describe(info_), to_absl(role), address, address + bytes));
  }

  std::vector<CpuAllocation> live_allocations() {
    absl::MutexLock lock(&mutex_);
    std::vector<CpuAllocation> live;
    live.reserve(allocations_.size());
    for (const auto& [base, allocation] : allocations_) live.push_back(allocation);
    return live;
  }

  // A native handle the host wraps must be a live stream or event of this device: on the CPU device
  // it is a pointer, and a wrong one would be dereferenced.
  absl::Status check_live(uint64_t native, std::string_view call, std::string_view what, std::string_view make) {
    absl::MutexLock lock(&mutex_);
    if (live_.contains(from_native<const void>(native))) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s on %s: 0x%x is not a live %s of this device; hint: on the CPU device, wrap the native() of what its "
        "%s returned",
        to_absl(call), describe(info_), native, to_absl(what), to_absl(make)));
  }
  void forget(uint64_t native) {
    absl::MutexLock lock(&mutex_);
    live_.erase(from_native<const void>(native));
  }

  absl::Status enqueue(Stream& stream, Work work) {
    MT_RETURN_IF_ERROR(check_owned(stream, "stream"));
    CpuStream* queue = from_native<CpuStream>(stream.native());
    if (queue->capturing) {
      queue->captured.push_back(std::move(work));
      return absl::OkStatus();
    }
    return work();
  }

  void release(ResourceKind kind, uint64_t native) noexcept override {
    switch (kind) {
      case ResourceKind::kBuffer:
      case ResourceKind::kHostMapped: {
        void* memory = from_native<void>(native);
        std::optional<SharedFile> shared;
        {
          absl::MutexLock lock(&mutex_);
          allocations_.erase(memory);
          if (auto file = shared_.find(memory); file != shared_.end()) {
            shared = file->second;
            shared_.erase(file);
          }
        }
        if (shared) {
          munmap(memory, shared->bytes);
          ::close(shared->fd);
        } else {
          std::free(memory);
        }
        return;
      }
      case ResourceKind::kStream: forget(native); delete from_native<CpuStream>(native); return;
      case ResourceKind::kEvent: forget(native); delete from_native<CpuEvent>(native); return;
      case ResourceKind::kModule: delete from_native<LoadedModule>(native); return;
      case ResourceKind::kGraph: delete from_native<CpuGraph>(native); return;
      case ResourceKind::kPeerMapping: {
        // Another device's buffer: nothing to free here, only this device's view of it to end.
        absl::MutexLock lock(&mutex_);
        const void* base = from_native<const void>(native);
        if (auto mapped = peer_maps_.find(base);
            mapped != peer_maps_.end() && --mapped->second == 0) {
          peer_maps_.erase(mapped);
          allocations_.erase(base);
          // Another process's: this process's mapping of its file.
          if (auto foreign = foreign_.find(base); foreign != foreign_.end()) {
            munmap(const_cast<void*>(base), foreign->second);
            foreign_.erase(foreign);
          }
        }
        return;
      }
    }
  }

  DeviceInfo info_;
  CpuModuleLoader loader_;
  absl::Mutex mutex_;
  std::map<const void*, CpuAllocation> allocations_ ABSL_GUARDED_BY(mutex_);
  // Of allocations_, the host's own memory (register_host): how many registrations each base has.
  std::map<const void*, int> registered_ ABSL_GUARDED_BY(mutex_);
  // Other devices' buffers this one has mapped (map_peer), with their mapping counts.
  std::map<const void*, int> peer_maps_ ABSL_GUARDED_BY(mutex_);
  // Exported buffers: their shared memory files. Of peer_maps_, other processes' buffers mapped
  // here, with their sizes.
  struct SharedFile {
    int fd = -1;
    size_t bytes = 0;
  };
  std::map<const void*, SharedFile> shared_ ABSL_GUARDED_BY(mutex_);
  std::map<const void*, size_t> foreign_ ABSL_GUARDED_BY(mutex_);
  int64_t allocation_count_ ABSL_GUARDED_BY(mutex_) = 0;
  std::set<const void*> live_ ABSL_GUARDED_BY(mutex_);  // the streams and events made, not yet released
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(CpuModuleLoader loader) {
  return std::make_unique<CpuDevice>(std::move(loader));
}

absl::Status register_host_memory(Device& device, const void* base, size_t bytes, std::string_view name) {
  auto* cpu = dynamic_cast<CpuDevice*>(&device);
  if (cpu == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("registering host memory with ", describe(device.info()), ": not the CPU device"));
  }
  return cpu->register_host(base, bytes, name);
}

absl::Status unregister_host_memory(Device& device, const void* base) {
  auto* cpu = dynamic_cast<CpuDevice*>(&device);
  if (cpu == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("unregistering host memory from ", describe(device.info()), ": not the CPU device"));
  }
  return cpu->unregister_host(base);
}

}  // namespace monotile::runtime
