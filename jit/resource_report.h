// What a compiled kernel uses, read from ptxas -v (NVIDIA) or the code object's metadata through
// comgr (AMD). Its text form is stable "key=value" lines: it is what the cache stores.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace monotile::jit {

struct ResourceReport {
  int registers = 0;          // NVIDIA registers per thread; AMD VGPRs (arch VGPRs)
  int agprs = 0;              // AMD accumulation registers
  int sgprs = 0;              // AMD scalar registers
  int spill_stores = 0;       // bytes (NVIDIA) or spilled VGPRs (AMD: to memory or to AGPRs)
  int spill_loads = 0;
  // AMD: scalar registers kept in VGPR lanes past the SGPR limit (v_writelane / v_readlane: one
  // VALU instruction per reload, no memory traffic). A persistent kernel whose arguments alone fill
  // most of the 102 SGPRs has them; they are reported, and the resource policy does not refuse them.
  int sgpr_spills = 0;
  int64_t stack_frame = 0;    // NVIDIA local memory per thread; AMD private segment (scratch)
  int64_t shared_memory = 0;  // static shared memory / LDS bytes
  int wavefront_size = 0;     // AMD; 32 on NVIDIA
  int max_threads_per_block = 0;

  // One "key=value" line per field, in declaration order.
  std::string to_text() const;
  // Parses to_text()'s output; unknown keys are ignored (newer writers), a malformed line or
  // value is an error naming it.
  static absl::StatusOr<ResourceReport> from_text(std::string_view text);
  // A one-line human summary, e.g. "regs 32, spills 0/0 B, stack 0 B, smem 1024 B".
  std::string summary() const;

  friend bool operator==(const ResourceReport&, const ResourceReport&) = default;
};

}  // namespace monotile::jit
