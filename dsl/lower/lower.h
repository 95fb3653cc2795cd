// lower(): one tile program -> one HIP/CUDA C++ kernel for a GPU target. The function is the list of
// passes (verify, simplify, layouts, axis analysis, op lowering, emission), each in its own file.
// The generated source needs no header and is the same text for the same (program, target, options).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/target.h"

namespace monotile::dsl::lower {

// Changes whenever the generated code for a given program can change; part of every cache key.
inline constexpr std::string_view kLoweringVersion = "monotile-lower-1";

// A field that changes the generated source must also join jit/direct_mode.cpp's direct_key, or a
// direct entry made under one value would answer for another.
struct LowerOptions {
  // Pointer arguments are assumed aligned to this many bytes (Triton's default specialization made
  // explicit: torch allocations and our runtime's buffers are 256-byte aligned; a pointer offset by
  // a non-multiple of 16 bytes must not be passed, or vector accesses fault). Power of two, >= 1.
  int pointer_alignment = 16;
  // Keep the IR text after each pass in LoweredKernel::dumps; also on when MONOTILE_DUMP_IR is set
  // (to anything but "0"), in which case the dumps also go to stderr.
  bool dump_after_each = false;
  // Emit #line directives pointing at the user's C++, for reading a dumped source by hand or, with
  // the compiler's line table (jit::make_build adds it), for a profiler to charge its samples to
  // the user's lines. Off by default: a path in the source would make the cache key depend on where
  // the checkout lives and on every line above the kernel. Diagnostics use LoweredKernel::origins
  // instead. Also on when MONOTILE_LINE_INFO is set (line_info_requested).
  bool line_directives = false;
};

// Where a run of generated lines came from: from `generated_line` (1-based) on, until the next
// entry, the code is the op at `loc` in the user's C++.
struct SourceOrigin {
  int generated_line = 0;
  SourceLoc loc;
  friend bool operator==(const SourceOrigin&, const SourceOrigin&) = default;
};

// One kernel parameter as the launcher must pass it (in order).
struct KernelParam {
  std::string name;       // the program's parameter name
  ElementType type;       // pointer or scalar
  std::string c_type;     // its spelling in the kernel signature: "mt_bf16*", "int", ...
  int size = 0;           // bytes in the argument buffer
  int alignment = 0;
  friend bool operator==(const KernelParam&, const KernelParam&) = default;
};

struct PassDump {
  std::string pass;  // "verify", "simplify", "layouts", "axis", "ops", "emit"
  std::string text;
};

struct LoweredKernel {
  std::string source;       // complete CUDA/HIP C++ text
  std::string kernel_name;  // the extern "C" __global__ function
  int block_threads = 0;    // num_warps * target.warp_size()
  int64_t dynamic_shared_bytes = 0;  // pass at launch (above 48 KiB NVIDIA needs the opt-in attribute)
  std::vector<KernelParam> params;
  // The program waits for its grid dependency with an instruction of this target (ir.h): the
  // runtime may launch it before its predecessor on the stream ends (programmatic serialization).
  bool waits_for_grid_dependency = false;
  std::vector<SourceOrigin> origins;  // generated lines -> the user's file:line, in source order
  std::vector<PassDump> dumps;  // when requested
};

// Errors: InvalidArgument for a program this target cannot run (a CPU target, a malformed program,
// num_warps not a power of two or too many threads), Unimplemented for an op/dtype combination the
// lowering does not cover; each names the op and the user's file:line.
absl::StatusOr<LoweredKernel> lower(const Program& program, const Target& target,
                                    const LowerOptions& options = {});

// Whether MONOTILE_DUMP_IR asks every lower() to print its passes to stderr.
bool dump_ir_requested();

// Whether MONOTILE_LINE_INFO (set to anything but "" or "0") asks every lower() for #line
// directives and every build for a line table, so that a profiler (Nsight Compute's source view,
// rocprof) shows the user's C++ lines. Such builds get their own cache entries.
bool line_info_requested();

}  // namespace monotile::dsl::lower
