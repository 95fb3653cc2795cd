// The CPU device: memory, copies, fills, streams, events, host-mapped memory, graph capture and
// launching through a plugged-in module loader (here a hand-written kernel standing in for the
// interpreter).
#include "runtime/device_cpu.h"

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/seed.h"

namespace monotile::runtime {
namespace {

using ::testing::HasSubstr;

std::vector<float> random_floats(size_t count) {
  std::mt19937 generator = monotile::testing::case_rng();
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

template <typename T>
T* host_view(DevicePtr address) {
  return reinterpret_cast<T*>(address);
}

TEST(CpuDevice, DescribesItself) {
  std::unique_ptr<Device> device = make_cpu_device();
  const DeviceInfo& info = device->info();
  EXPECT_EQ(info.vendor, dsl::Vendor::kCpu);
  EXPECT_EQ(info.target.str(), "cpu");
  EXPECT_EQ(info.name, "cpu interpreter");
  EXPECT_GE(info.compute_units, 1);
  EXPECT_GT(info.memory_bytes, 0);
}

TEST(CpuDevice, CopiesRoundTripThroughDeviceMemory) {
  std::unique_ptr<Device> device = make_cpu_device();
  const std::vector<float> input = random_floats(1000);
  const size_t bytes = input.size() * sizeof(float);
  absl::StatusOr<DeviceBuffer> first = device->allocate(bytes);
  absl::StatusOr<DeviceBuffer> second = device->allocate(bytes);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->address() % 256, 0u);
  ASSERT_TRUE(device->copy_to_device(first->address(), input.data(), bytes).ok());
  ASSERT_TRUE(device->copy_on_device(second->address(), first->address(), bytes).ok());
  std::vector<float> output(input.size(), std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(device->copy_to_host(output.data(), second->address(), bytes).ok());
  EXPECT_EQ(output, input);
  // Device memory is host memory.
  EXPECT_EQ(host_view<float>(second->address())[999], input[999]);
}

TEST(CpuDevice, FillsBytes) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<DeviceBuffer> buffer = device->allocate(64);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(device->fill_bytes(buffer->address(), 0xAB, 64).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(host_view<uint8_t>(buffer->address())[i], 0xAB);
}

TEST(CpuDevice, ZeroByteAllocationIsAnError) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<DeviceBuffer> buffer = device->allocate(0);
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(buffer.status().message()),
            "allocating a buffer of 0 bytes on cpu device 0 \"cpu interpreter\" (cpu)");
}

TEST(CpuDevice, CopiesOutsideEveryAllocationAreErrors) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<DeviceBuffer> buffer = device->allocate(64);
  ASSERT_TRUE(buffer.ok());
  char host[128] = {};
  absl::Status status = device->copy_to_device(buffer->address() + 32, host, 64);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("copy_to_device on cpu device 0 \"cpu interpreter\" (cpu): the destination ["));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(") is outside every allocation; the nearest below is buffer #1 (64 bytes) at 0x"));
  EXPECT_FALSE(device->copy_to_host(host, 8, 4).ok());
  EXPECT_FALSE(device->fill_bytes(buffer->address() + 64, 0, 1).ok());
  EXPECT_TRUE(device->fill_bytes(buffer->address() + 63, 0, 1).ok());
}

TEST(CpuDevice, AsyncCopiesRunInStreamOrder) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Stream> stream = device->create_stream();
  absl::StatusOr<DeviceBuffer> buffer = device->allocate(16 * sizeof(int));
  ASSERT_TRUE(stream.ok() && buffer.ok());
  std::vector<int> input(16);
  for (int i = 0; i < 16; ++i) input[i] = i * 7 - 3;
  std::vector<int> output(16, -1);
  ASSERT_TRUE(device->fill_bytes_async(buffer->address(), 0, buffer->size(), *stream).ok());
  ASSERT_TRUE(device->copy_to_device_async(buffer->address(), input.data(), buffer->size(), *stream).ok());
  ASSERT_TRUE(device->copy_to_host_async(output.data(), buffer->address(), buffer->size(), *stream).ok());
  ASSERT_TRUE(device->synchronize(*stream).ok());
  EXPECT_EQ(output, input);
}

TEST(CpuDevice, EventsMeasureHostTime) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Stream> stream = device->create_stream();
  absl::StatusOr<Event> start = device->create_event();
  absl::StatusOr<Event> end = device->create_event();
  ASSERT_TRUE(stream.ok() && start.ok() && end.ok());
  ASSERT_TRUE(device->record(*start, *stream).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(device->record(*end, *stream).ok());
  ASSERT_TRUE(device->synchronize(*end).ok());
  absl::StatusOr<float> elapsed = device->elapsed_ms(*start, *end);
  ASSERT_TRUE(elapsed.ok()) << elapsed.status();
  EXPECT_GE(*elapsed, 19.0f);
  EXPECT_LT(*elapsed, 5000.0f);
}

TEST(CpuDevice, UnrecordedEventIsAnError) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Stream> stream = device->create_stream();
  absl::StatusOr<Event> start = device->create_event();
  absl::StatusOr<Event> end = device->create_event();
  ASSERT_TRUE(stream.ok() && start.ok() && end.ok());
  ASSERT_TRUE(device->record(*start, *stream).ok());
  absl::StatusOr<float> elapsed = device->elapsed_ms(*start, *end);
  ASSERT_FALSE(elapsed.ok());
  EXPECT_THAT(std::string(elapsed.status().message()),
              HasSubstr("the end event was never recorded; hint: record both events"));
}

TEST(CpuDevice, HostMappedMemoryIsZeroedAndSharedWithoutCopies) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<HostMappedBuffer> health = device->allocate_host_mapped(8 * sizeof(uint32_t));
  ASSERT_TRUE(health.ok());
  uint32_t* words = health->host_as<uint32_t>();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(words[i], 0u);
  EXPECT_EQ(reinterpret_cast<uint64_t>(health->host()), health->address());
  // A device-side write (a copy into the mapped address) is visible to the host with no sync.
  const uint32_t flag = 0xFA11;
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(device->copy_to_device_async(health->address() + 4 * sizeof(uint32_t), &flag,
                                           sizeof(flag), *stream).ok());
  EXPECT_EQ(words[4], 0xFA11u);
}

TEST(CpuDevice, WithoutLoaderCannotLaunch) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Module> module = device->load_module("program bytes", "vector_add");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(module.status().message()),
              HasSubstr("this CPU device cannot launch kernels: it was made without a program "
                        "loader, so module \"vector_add\" (13 bytes) cannot be loaded; hint: "
                        "make it with make_cpu_device(interpreter_loader(...))"));
}

TEST(CpuDevice, CapturedWorkRunsOnlyOnReplay) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Stream> stream = device->create_stream();
  absl::StatusOr<DeviceBuffer> buffer = device->allocate(32);
  ASSERT_TRUE(stream.ok() && buffer.ok());
  ASSERT_TRUE(device->fill_bytes(buffer->address(), 0, 32).ok());
  ASSERT_TRUE(device->begin_capture(*stream).ok());
  ASSERT_TRUE(device->fill_bytes_async(buffer->address(), 0x5A, 32, *stream).ok());
  absl::StatusOr<Graph> graph = device->end_capture(*stream);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(host_view<uint8_t>(buffer->address())[7], 0);
  ASSERT_TRUE(device->replay(*graph, *stream).ok());
  ASSERT_TRUE(device->synchronize(*stream).ok());
  EXPECT_EQ(host_view<uint8_t>(buffer->address())[7], 0x5A);
}

TEST(CpuDevice, AWrappedStreamIsTheHostsAndOutlivesNothing) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Stream> own = device->create_stream();
  absl::StatusOr<DeviceBuffer> buffer = device->allocate(32);
  ASSERT_TRUE(own.ok() && buffer.ok());
  ASSERT_TRUE(device->fill_bytes(buffer->address(), 0, 32).ok());
  {
    absl::StatusOr<Stream> wrapped = device->wrap_stream(own->native());
    ASSERT_TRUE(wrapped.ok()) << wrapped.status();
    EXPECT_FALSE(wrapped->owned());
    EXPECT_EQ(wrapped->native(), own->native());
    // Capture begun on the host's own handle records the work enqueued through the wrapper.
    ASSERT_TRUE(device->begin_capture(*own).ok());
    ASSERT_TRUE(device->fill_bytes_async(buffer->address(), 0x3C, 32, *wrapped).ok());
    absl::StatusOr<Graph> graph = device->end_capture(*own);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(host_view<uint8_t>(buffer->address())[3], 0);
    ASSERT_TRUE(device->replay(*graph, *wrapped).ok());
    EXPECT_EQ(host_view<uint8_t>(buffer->address())[3], 0x3C);
  }
  // The wrapper gave nothing back: the host's stream still works.
  ASSERT_TRUE(device->fill_bytes_async(buffer->address(), 0x11, 32, *own).ok());
  ASSERT_TRUE(device->synchronize(*own).ok());
  EXPECT_EQ(host_view<uint8_t>(buffer->address())[3], 0x11);
}

TEST(CpuDevice, AWrappedEventRecordsOnTheHostsEvent) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Stream> stream = device->create_stream();
  absl::StatusOr<Event> start = device->create_event();
  absl::StatusOr<Event> end = device->create_event();
  ASSERT_TRUE(stream.ok() && start.ok() && end.ok());
  {
    absl::StatusOr<Event> wrapped = device->wrap_event(start->native());
    ASSERT_TRUE(wrapped.ok()) << wrapped.status();
    ASSERT_TRUE(device->record(*wrapped, *stream).ok());
  }
  ASSERT_TRUE(device->record(*end, *stream).ok());
  EXPECT_TRUE(device->elapsed_ms(*start, *end).ok()) << "the host's event was recorded through the wrapper";
}

TEST(CpuDevice, WrapsOnlyItsOwnLiveHandles) {
  std::unique_ptr<Device> device = make_cpu_device();
  uint64_t gone = 0;
  {
    absl::StatusOr<Stream> stream = device->create_stream();
    ASSERT_TRUE(stream.ok());
    gone = stream->native();
  }
  absl::StatusOr<Stream> wrapped = device->wrap_stream(gone);
  EXPECT_EQ(wrapped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(wrapped.status().message()),
            absl::StrCat("wrap_stream on cpu device 0 \"cpu interpreter\" (cpu): 0x", absl::Hex(gone),
                         " is not a live stream of this device; hint: on the CPU device, wrap the native() of "
                         "what its create_stream returned"));
  absl::StatusOr<Event> event = device->wrap_event(0);
  EXPECT_EQ(std::string(event.status().message()),
            "wrap_event on cpu device 0 \"cpu interpreter\" (cpu): 0x0 is not a live event of this device; hint: on "
            "the CPU device, wrap the native() of what its create_event returned");
}

TEST(CpuDevice, EndCaptureWithoutBeginIsAnError) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(stream.ok());
  absl::StatusOr<Graph> graph = device->end_capture(*stream);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()),
              HasSubstr("end_capture on a stream that is not capturing"));
}

TEST(CpuDevice, RejectsAStreamOfAnotherDevice) {
  std::unique_ptr<Device> first = make_cpu_device();
  std::unique_ptr<Device> second = make_cpu_device();
  absl::StatusOr<Stream> stream = first->create_stream();
  ASSERT_TRUE(stream.ok());
  absl::Status status = second->synchronize(*stream);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("stream given to cpu device 0 \"cpu interpreter\" (cpu) belongs to cpu "
                        "device 0 \"cpu interpreter\" (cpu); hint: create it on the device"));
}

// c[i] = a[i] + b[i] for i < n, one "block" per grid x; checks its pointers are live memory.
class VectorAddKernel final : public CpuKernel {
 public:
  std::span<const size_t> parameter_sizes() const override { return sizes_; }
  absl::Status run(const LaunchConfig& config, void** args,
                   std::span<const CpuAllocation> memory) override {
    const auto* a = *static_cast<const float* const*>(args[0]);
    const auto* b = *static_cast<const float* const*>(args[1]);
    auto* c = *static_cast<float* const*>(args[2]);
    const int n = *static_cast<const int*>(args[3]);
    for (const void* pointer : {static_cast<const void*>(a), static_cast<const void*>(b),
                                static_cast<const void*>(c)}) {
      bool live = false;
      for (const CpuAllocation& allocation : memory) live |= allocation.base == pointer;
      if (!live) return absl::InvalidArgumentError("argument is not a live allocation");
    }
    const uint64_t threads = config.grid.count() * config.block.count();
    for (uint64_t i = 0; i < threads && i < static_cast<uint64_t>(n); ++i) c[i] = a[i] + b[i];
    ++runs;
    return absl::OkStatus();
  }
  int runs = 0;

 private:
  const std::vector<size_t> sizes_ = {sizeof(void*), sizeof(void*), sizeof(void*), sizeof(int)};
};

class TestModule final : public CpuModule {
 public:
  absl::StatusOr<CpuKernel*> kernel(std::string_view name) override {
    if (name == "vector_add") return &kernel_;
    return absl::NotFoundError(absl::StrCat("no kernel \"", std::string(name), "\"; it has \"vector_add\""));
  }
  VectorAddKernel kernel_;
};

CpuModuleLoader test_loader(VectorAddKernel** kernel) {
  return [kernel](std::string_view, std::string_view) -> absl::StatusOr<std::unique_ptr<CpuModule>> {
    auto module = std::make_unique<TestModule>();
    *kernel = &module->kernel_;
    return std::unique_ptr<CpuModule>(std::move(module));
  };
}

TEST(CpuDevice, LaunchesThroughPluggedLoaderAndReplaysCapturedArguments) {
  VectorAddKernel* kernel = nullptr;
  std::unique_ptr<Device> device = make_cpu_device(test_loader(&kernel));
  absl::StatusOr<Module> module = device->load_module("unused", "vector_add");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Function> function = device->function(*module, "vector_add");
  ASSERT_TRUE(function.ok()) << function.status();
  constexpr int kCount = 100;
  const std::vector<float> a = random_floats(kCount);
  const std::vector<float> b = random_floats(kCount);
  absl::StatusOr<DeviceBuffer> a_buffer = device->allocate(kCount * sizeof(float));
  absl::StatusOr<DeviceBuffer> b_buffer = device->allocate(kCount * sizeof(float));
  absl::StatusOr<DeviceBuffer> c_buffer = device->allocate(kCount * sizeof(float));
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(a_buffer.ok() && b_buffer.ok() && c_buffer.ok() && stream.ok());
  ASSERT_TRUE(device->copy_to_device(a_buffer->address(), a.data(), a_buffer->size()).ok());
  ASSERT_TRUE(device->copy_to_device(b_buffer->address(), b.data(), b_buffer->size()).ok());
  ASSERT_TRUE(device->fill_bytes(c_buffer->address(), 0xFF, c_buffer->size()).ok());  // NaN

  DevicePtr a_address = a_buffer->address(), b_address = b_buffer->address(),
            c_address = c_buffer->address();
  int count = kCount;
  void* args[] = {&a_address, &b_address, &c_address, &count};
  const LaunchConfig config{{4, 1, 1}, {32, 1, 1}, 0};
  ASSERT_TRUE(device->begin_capture(*stream).ok());
  ASSERT_TRUE(device->launch(*function, config, args, *stream).ok());
  absl::StatusOr<Graph> graph = device->end_capture(*stream);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(kernel->runs, 0);
  count = 0;  // the captured launch keeps the value it was captured with
  ASSERT_TRUE(device->replay(*graph, *stream).ok());
  ASSERT_TRUE(device->synchronize(*stream).ok());
  EXPECT_EQ(kernel->runs, 1);
  std::vector<float> c(kCount);
  ASSERT_TRUE(device->copy_to_host(c.data(), c_buffer->address(), c_buffer->size()).ok());
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "element " << i;
}

TEST(CpuDevice, LaunchErrorsNameTheKernelAndConfig) {
  VectorAddKernel* kernel = nullptr;
  std::unique_ptr<Device> device = make_cpu_device(test_loader(&kernel));
  absl::StatusOr<Module> module = device->load_module("unused", "vector_add");
  ASSERT_TRUE(module.ok());
  absl::StatusOr<Function> function = device->function(*module, "vector_add");
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(function.ok() && stream.ok());
  DevicePtr bogus = 64;
  int count = 1;
  void* args[] = {&bogus, &bogus, &bogus, &count};
  absl::Status status = device->launch(*function, {{2, 1, 1}, {8, 1, 1}, 0}, args, *stream);
  EXPECT_EQ(std::string(status.message()),
            "kernel \"vector_add\" (grid 2x1x1, block 8x1x1, smem 0): argument is not a live "
            "allocation");
  status = device->launch(*function, {{0, 1, 1}, {8, 1, 1}, 0}, args, *stream);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("launch of \"vector_add\" (grid 0x1x1, block 8x1x1, smem 0): every grid "
                        "and block size must be >= 1"));
}

TEST(CpuDevice, MissingKernelNamesTheModule) {
  VectorAddKernel* kernel = nullptr;
  std::unique_ptr<Device> device = make_cpu_device(test_loader(&kernel));
  absl::StatusOr<Module> module = device->load_module("unused", "samples");
  ASSERT_TRUE(module.ok());
  absl::StatusOr<Function> function = device->function(*module, "vector_mul");
  ASSERT_FALSE(function.ok());
  EXPECT_EQ(std::string(function.status().message()),
            "looking up \"vector_mul\" in module \"samples\": no kernel \"vector_mul\"; it has "
            "\"vector_add\"");
}

TEST(CpuDevice, DynamicSharedMemoryLimitIsChecked) {
  VectorAddKernel* kernel = nullptr;
  std::unique_ptr<Device> device = make_cpu_device(test_loader(&kernel));
  absl::StatusOr<Module> module = device->load_module("unused", "samples");
  ASSERT_TRUE(module.ok());
  absl::StatusOr<Function> function = device->function(*module, "vector_add");
  ASSERT_TRUE(function.ok());
  EXPECT_TRUE(device->set_max_dynamic_shared_memory(*function, 96 * 1024).ok());
  absl::Status status = device->set_max_dynamic_shared_memory(*function, -1);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("set_max_dynamic_shared_memory for \"vector_add\": -1 bytes is outside"));
}


TEST(CpuDevice, RegisteredHostMemoryIsReachableUntilUnregistered) {
  std::unique_ptr<Device> device = make_cpu_device();
  std::vector<float> host = {1, 2, 3, 4};
  const DevicePtr address = reinterpret_cast<DevicePtr>(host.data());
  float out = 0;
  EXPECT_THAT(std::string(device->copy_to_host(&out, address, 4).message()), HasSubstr("outside every allocation"));
  ASSERT_TRUE(register_host_memory(*device, host.data(), 16, "numpy x").ok());
  ASSERT_TRUE(register_host_memory(*device, host.data(), 8, "numpy x[:2]").ok());  // counted, range kept
  ASSERT_TRUE(device->copy_to_host(&out, address + 12, 4).ok());
  EXPECT_EQ(out, 4);
  ASSERT_TRUE(device->fill_bytes(address, 0, 4).ok());
  EXPECT_EQ(host[0], 0);
  ASSERT_TRUE(unregister_host_memory(*device, host.data()).ok());
  EXPECT_TRUE(device->copy_to_host(&out, address, 4).ok()) << "one registration is left";
  ASSERT_TRUE(unregister_host_memory(*device, host.data()).ok());
  EXPECT_FALSE(device->copy_to_host(&out, address, 4).ok());
  absl::Status again = unregister_host_memory(*device, host.data());
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.message()), HasSubstr("it is not registered"));
}

TEST(CpuDevice, RegisteringItsOwnAllocationsOrNothingIsRefused) {
  std::unique_ptr<Device> device = make_cpu_device();
  DeviceBuffer buffer = *device->allocate(64);
  const void* inside = reinterpret_cast<const void*>(buffer.address() + 16);
  absl::Status overlapping = register_host_memory(*device, inside, 8, "view");
  EXPECT_EQ(overlapping.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(overlapping.message()),
              HasSubstr("registering host memory \"view\" [0x"));
  EXPECT_THAT(std::string(overlapping.message()), HasSubstr("which the device allocated"));
  std::vector<char> host(8);
  EXPECT_THAT(std::string(register_host_memory(*device, host.data(), 0, "empty").message()),
              HasSubstr("registering 0 bytes of host memory (\"empty\")"));
}

}  // namespace
}  // namespace monotile::runtime
