// The interpreter plugged into the CPU device: a CpuKernel that runs a dsl::Program with
// dsl::interp::interpret over the device's live allocations, and a ProgramCatalog that gives each
// program a CPU "code object" (a short key naming it) for Device::load_module. Programs are not
// serialized: the catalog keeps them in memory for the life of the process.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"
#include "dsl/ir.h"
#include "runtime/cpu_module.h"

namespace monotile::runtime {

class ProgramCatalog {
 public:
  // Keeps `program` and returns its code object, "monotile-interp:<program hash>:<name>"; adding an
  // identical program again returns the same key.
  std::string add(dsl::Program program);
  // The program behind a code object; NotFound naming the key otherwise.
  absl::StatusOr<std::shared_ptr<const dsl::Program>> find(std::string_view code_object) const;

  // The catalog the CPU device of discover_devices() loads from.
  static const std::shared_ptr<ProgramCatalog>& process();

 private:
  mutable absl::Mutex mutex_;
  std::map<std::string, std::shared_ptr<const dsl::Program>, std::less<>> programs_
      ABSL_GUARDED_BY(mutex_);
};

// A module loader for make_cpu_device: each code object names one program of `catalog`, and the
// module's one kernel is that program (looked up by the program's name).
CpuModuleLoader interpreter_loader(std::shared_ptr<const ProgramCatalog> catalog);

// A kernel running `program`. Launch arguments follow the GPU convention: a pointer parameter is an
// 8-byte device address, a scalar its value in its storage size (f16/bf16 as their 16-bit
// pattern). The grid is the launch's grid; the block size is ignored (an interpreter program
// instance is the whole block).
std::unique_ptr<CpuKernel> make_interpreter_kernel(std::shared_ptr<const dsl::Program> program);

}  // namespace monotile::runtime
