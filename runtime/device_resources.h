// RAII handles to what a Device creates: device buffers, host-mapped buffers, streams, events,
// modules and instantiated graphs. Each owns one native handle and gives it back to its device when
// destroyed, so the device must outlive every handle it made. Move-only; a moved-from or default
// handle owns nothing. A Function is not owned: it lives as long as its Module. A Stream or Event
// that wraps the host's own native handle (Device::wrap_stream, wrap_event) is not owned either:
// it gives nothing back, and the host keeps the native handle alive while the wrapper is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace monotile::runtime {

class Device;

// A device address. On the CPU device it is the host address itself.
using DevicePtr = uint64_t;

enum class ResourceKind { kBuffer, kHostMapped, kStream, kEvent, kModule, kGraph, kPeerMapping };

class DeviceResource {
 public:
  DeviceResource() = default;
  DeviceResource(DeviceResource&& other) noexcept;
  DeviceResource& operator=(DeviceResource&& other) noexcept;
  DeviceResource(const DeviceResource&) = delete;
  DeviceResource& operator=(const DeviceResource&) = delete;
  ~DeviceResource();

  // Gives the handle back to its device now (a wrapped handle is only forgotten).
  void reset();
  bool valid() const { return device_ != nullptr; }
  // Whether destroying it gives the native handle back (false: the host's handle, wrapped).
  bool owned() const { return owned_; }
  // The device that made it; null when it owns nothing.
  Device* device() const { return device_; }
  ResourceKind kind() const { return kind_; }
  // The backend's own handle (its stream, event, module or graph, or a device address), for the
  // backend only.
  uint64_t native() const { return native_; }

 protected:
  DeviceResource(Device* device, ResourceKind kind, uint64_t native, bool owned = true)
      : device_(device), kind_(kind), native_(native), owned_(owned) {}

 private:
  Device* device_ = nullptr;
  ResourceKind kind_ = ResourceKind::kBuffer;
  uint64_t native_ = 0;
  bool owned_ = true;
};

class DeviceBuffer : public DeviceResource {
 public:
  DeviceBuffer() = default;
  DevicePtr address() const { return native(); }
  size_t size() const { return size_; }

 private:
  friend class Device;
  DeviceBuffer(Device* device, DevicePtr address, size_t size)
      : DeviceResource(device, ResourceKind::kBuffer, address), size_(size) {}
  size_t size_ = 0;
};

// Device memory another process (a TP rank) may map: the buffer, zero-filled, and the handle that
// names it to Device::map_peer in that process (opaque bytes that travel through the TP group).
struct ExportedBuffer {
  DeviceBuffer buffer;
  std::string handle;
};

// Another rank's exported buffer mapped into this device's address space; destroying it unmaps it
// (the exporter's buffer lives on until its own rank frees it).
class PeerMapping : public DeviceResource {
 public:
  PeerMapping() = default;
  DevicePtr address() const { return native(); }
  size_t size() const { return size_; }

 private:
  friend class Device;
  PeerMapping(Device* device, DevicePtr address, size_t size)
      : DeviceResource(device, ResourceKind::kPeerMapping, address), size_(size) {}
  size_t size_ = 0;
};

// Pinned host memory mapped into the device's address space: the host reads and writes host()
// while kernels use address(), with no copy and no synchronize (health words, mailboxes).
class HostMappedBuffer : public DeviceResource {
 public:
  HostMappedBuffer() = default;
  void* host() const { return reinterpret_cast<void*>(native()); }
  template <typename T>
  T* host_as() const {
    return static_cast<T*>(host());
  }
  DevicePtr address() const { return device_address_; }
  size_t size() const { return size_; }

 private:
  friend class Device;
  HostMappedBuffer(Device* device, void* host, DevicePtr device_address, size_t size)
      : DeviceResource(device, ResourceKind::kHostMapped, reinterpret_cast<uint64_t>(host)),
        device_address_(device_address),
        size_(size) {}
  DevicePtr device_address_ = 0;
  size_t size_ = 0;
};

// An in-order queue of copies and launches.
class Stream : public DeviceResource {
 public:
  Stream() = default;

 private:
  friend class Device;
  Stream(Device* device, uint64_t native, bool owned)
      : DeviceResource(device, ResourceKind::kStream, native, owned) {}
};

// A point in a stream; two recorded events give the time between them.
class Event : public DeviceResource {
 public:
  Event() = default;

 private:
  friend class Device;
  Event(Device* device, uint64_t native, bool owned)
      : DeviceResource(device, ResourceKind::kEvent, native, owned) {}
};

// A loaded code object (CUBIN, HSA code object, or an interpreter program on the CPU).
class Module : public DeviceResource {
 public:
  Module() = default;
  // What it was loaded as, for messages.
  const std::string& label() const { return label_; }

 private:
  friend class Device;
  Module(Device* device, uint64_t native, std::string label)
      : DeviceResource(device, ResourceKind::kModule, native), label_(std::move(label)) {}
  std::string label_;
};

// A captured stream, instantiated and ready to replay.
class Graph : public DeviceResource {
 public:
  Graph() = default;

 private:
  friend class Device;
  Graph(Device* device, uint64_t native) : DeviceResource(device, ResourceKind::kGraph, native) {}
};

// A kernel in a Module; valid while the Module lives.
class Function {
 public:
  Function() = default;
  const std::string& name() const { return name_; }
  Device* device() const { return device_; }
  uint64_t native() const { return native_; }

 private:
  friend class Device;
  Function(Device* device, uint64_t native, std::string name)
      : device_(device), native_(native), name_(std::move(name)) {}
  Device* device_ = nullptr;
  uint64_t native_ = 0;
  std::string name_;
};

}  // namespace monotile::runtime
