// The conformance suite's own runner (fresh inputs, poisoned outputs, float64 references) over an
// Executor that lowers each program for gfx90a and runs the generated kernel on the host emulation
// (host_emulation_hip.h). One case per op and dtype keeps the host compiles to a few minutes.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dsl/interp/float16.h"
#include "dsl/lower/host_emulation_build.h"
#include "dsl/lower/lower.h"
#include "gtest/gtest.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/executor.h"
#include "tests/testing/seed.h"

namespace monotile::dsl::lower {
namespace {

// GCC spells clang's ext_vector_type as vector_size (the host compiler is GCC).
std::string for_host(std::string source) {
  const std::pair<std::string, std::string> vectors[] = {
      {"short mt_s16x4 __attribute__((ext_vector_type(4)))", "short mt_s16x4 __attribute__((vector_size(8)))"},
      {"_Float16 mt_f16x4 __attribute__((ext_vector_type(4)))", "_Float16 mt_f16x4 __attribute__((vector_size(8)))"},
      {"float mt_f32x4 __attribute__((ext_vector_type(4)))", "float mt_f32x4 __attribute__((vector_size(16)))"},
      {"float mt_f32x16 __attribute__((ext_vector_type(16)))", "float mt_f32x16 __attribute__((vector_size(64)))"},
      {"unsigned mt_u32v2 __attribute__((ext_vector_type(2)))", "unsigned mt_u32v2 __attribute__((vector_size(8)))"},
      {"unsigned mt_u32v4 __attribute__((ext_vector_type(4)))", "unsigned mt_u32v4 __attribute__((vector_size(16)))"},
  };
  for (const auto& [from, to] : vectors) {
    size_t at = source.find(from);
    if (at != std::string::npos) source.replace(at, from.size(), to);
  }
  return source;
}

// Round-to-nearest-even f64 -> 16-bit patterns for bf16/f16 scalar arguments.
uint16_t bf16_bits(double value) {
  float f = static_cast<float>(value);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

class EmulationExecutor : public conformance::Executor {
 public:
  ~EmulationExecutor() override {
    release_all();
    for (auto& [source, library] : libraries_) dlclose(library);
  }
  std::string name() const override { return "gfx90a-host-emulation"; }

  absl::StatusOr<conformance::DeviceBuffer> allocate(size_t bytes, std::string_view) override {
    void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    buffers_.push_back(memory);
    return conformance::DeviceBuffer{reinterpret_cast<uint64_t>(memory), bytes};
  }
  absl::Status copy_in(conformance::DeviceBuffer buffer, std::span<const std::byte> host) override {
    std::memcpy(reinterpret_cast<void*>(buffer.address), host.data(), host.size());
    return absl::OkStatus();
  }
  absl::Status copy_out(std::span<std::byte> host, conformance::DeviceBuffer buffer) override {
    std::memcpy(host.data(), reinterpret_cast<const void*>(buffer.address), host.size());
    return absl::OkStatus();
  }
  void release_all() override {
    for (void* memory : buffers_) std::free(memory);
    buffers_.clear();
  }

  absl::Status launch(const Program& program, const conformance::LaunchGrid& grid,
                      std::span<const conformance::KernelArg> args) override {
    Target target = Target::parse("gfx90a").value();
    absl::StatusOr<LoweredKernel> kernel = lower(program, target);
    if (!kernel.ok()) return kernel.status();
    absl::StatusOr<void*> library = load(*kernel);
    if (!library.ok()) return library.status();
    auto run = reinterpret_cast<void (*)(void**, int, int, int, int, int)>(dlsym(*library, "emu_launch"));
    if (args.size() != kernel->params.size()) return absl::InvalidArgumentError("argument count differs");
    std::vector<std::array<unsigned char, 16>> storage(args.size());
    std::vector<void*> pointers(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const conformance::KernelArg& arg = args[i];
      unsigned char* slot = storage[i].data();
      if (arg.is_buffer) {
        uint64_t address = arg.device_buffer.address + arg.byte_offset;
        std::memcpy(slot, &address, 8);
      } else if (arg.type.scalar == ScalarType::kBf16) {
        uint16_t bits = bf16_bits(arg.float_value);
        std::memcpy(slot, &bits, 2);
      } else if (arg.type.scalar == ScalarType::kF16) {
        uint16_t half = dsl::interp::f16_bits_from_double(arg.float_value);
        std::memcpy(slot, &half, 2);
      } else if (arg.type.scalar == ScalarType::kF32) {
        float value = static_cast<float>(arg.float_value);
        std::memcpy(slot, &value, 4);
      } else if (arg.type.scalar == ScalarType::kF64) {
        std::memcpy(slot, &arg.float_value, 8);
      } else {
        std::memcpy(slot, &arg.int_value, 8);  // little-endian: the low bytes are the narrower value
      }
      pointers[i] = slot;
    }
    run(pointers.data(), grid.x, grid.y, grid.z, kernel->block_threads, target.warp_size());
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<void*> load(const LoweredKernel& kernel) {
    auto found = libraries_.find(kernel.source);
    if (found != libraries_.end()) return found->second;
    std::string source = absl::StrCat("#include \"" MONOTILE_HOST_EMULATION "\"\n", for_host(kernel.source));
    absl::StrAppend(&source, "extern \"C\" void emu_run_thread(void** a) { ", kernel.kernel_name, "(");
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      absl::StrAppend(&source, i ? ", *(" : "*(", kernel.params[i].c_type, "*)a[", i, "]");
    }
    source += "); }\n";
    std::filesystem::path dir =
        std::filesystem::path(::testing::TempDir()) / absl::StrCat("monotile_conformance_emulation_", getpid());
    std::filesystem::create_directories(dir);
    const std::filesystem::path stem = dir / absl::StrCat("k", libraries_.size());
    absl::StatusOr<void*> library = testing::build_host_emulation(source, "-std=c++20 -O0 -w -shared -fPIC", stem);
    if (!library.ok()) return library.status();
    libraries_.emplace(kernel.source, *library);
    return *library;
  }

  std::vector<void*> buffers_;
  std::map<std::string, void*> libraries_;
};

// One case per (op, dtype): the name's text before its shape. The emulation runs a grid's programs
// one after another, so cases whose programs wait on each other are left out.
std::vector<conformance::Case> selected_cases() {
  std::vector<conformance::Case> selected;
  std::set<std::string> seen;
  for (conformance::Case& c : conformance::all_cases()) {
    if (c.concurrent_programs) continue;
    std::string key = c.name.substr(0, c.name.find("/["));
    if (seen.insert(key).second) selected.push_back(std::move(c));
  }
  return selected;
}

TEST(ConformanceOnGeneratedCode, OneCasePerOpAndDtypeMatchesItsReference) {
  if (std::system(MONOTILE_HOST_CXX " --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler";
  EmulationExecutor executor;
  int passed = 0;
  std::vector<conformance::Case> cases = selected_cases();
  for (const conformance::Case& c : cases) {
    absl::Status status = conformance::run_case(executor, c, monotile::testing::shared_seed(c.name));
    executor.release_all();
    EXPECT_TRUE(status.ok()) << c.name << ": " << status;
    passed += status.ok();
  }
  std::printf("%d of %zu conformance cases pass on generated gfx90a code\n", passed, cases.size());
}

}  // namespace
}  // namespace monotile::dsl::lower
