// A Build: one kernel to compile for one target, with everything that decides its code object
// (source, entry, target, options, in-memory headers, the generating code's version stamp) and what
// the launcher and the executor need besides (launch shape, dynamic shared memory, resource policy).
// Today builds hold hand-written source; the DSL's lowering fills the same fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "dsl/lower/lower.h"
#include "dsl/target.h"
#include "jit/compiler.h"

namespace monotile::jit {

// How the kernel is launched; not part of the key (it does not change the code object), but a
// block larger than the kernel's launch bounds is refused by the resource check.
struct LaunchInfo {
  int block_x = 1;
  int block_y = 1;
  int block_z = 1;
  int64_t dynamic_shared_memory = 0;  // bytes, on top of the kernel's static shared memory
  // The kernel waits for its grid dependency (dsl/ir.h's dependent launch): it is launched with
  // programmatic stream serialization, so that it may start before its predecessor has ended.
  bool programmatic_dependency = false;
  int threads() const { return block_x * block_y * block_z; }
};

// What a build may use. By default a build that spills, uses scratch (local memory) or exceeds the
// target's shared memory fails: the executor must know before graph capture. Opting out is explicit.
struct ResourcePolicy {
  bool allow_spills = false;
  bool allow_scratch = false;           // stack frame / private segment without spills
  bool allow_shared_overflow = false;   // more shared memory than Target::shared_memory_per_block()
};

class Build {
 public:
  Build(std::string name, std::string kernel_name, std::string source, dsl::Target target)
      : name(std::move(name)), kernel_name(std::move(kernel_name)), source(std::move(source)),
        target(std::move(target)) {}

  std::string name;         // what people call it: "block_reduce", "kda_verify_w8"
  std::string kernel_name;  // the extern "C" entry in `source`
  std::string source;       // complete HIP/CUDA C++
  dsl::Target target;
  std::vector<std::string> options;    // extra compiler flags
  std::vector<Header> headers;         // what `source` #includes, in memory
  std::string generator_version;       // version stamp of the code that wrote `source` (the DSL's
                                       // lowering version; "hand-written" for samples)
  LaunchInfo launch;
  ResourcePolicy policy;
  // Where the generated lines came from in the author's C++ (empty for hand-written sources):
  // compile errors name those lines. Never part of the key, so a build's key does not depend on
  // the folder its source lives in or on the lines above the kernel.
  std::vector<dsl::lower::SourceOrigin> origins;

  // The request the compiler receives.
  CompileRequest request() const;
};

// A build compiled (or loaded from the cache), ready to hand to a device.
struct CompiledBuild {
  std::string name;
  std::string kernel_name;
  std::string target;        // Target::str()
  cache::Key key;
  std::string code_object;
  ResourceReport report;
  std::string log;
  LaunchInfo launch;
  std::string compiler;      // the compiler's identity
  bool hit = false;          // loaded from the cache rather than compiled by this call
  double seconds = 0;        // wall time of compile_build
};

}  // namespace monotile::jit
