// Target: what code is compiled for and run on (NVIDIA sm_*, AMD gfx*, or the CPU interpreter).
// A Target is a value passed explicitly everywhere; its string form round-trips exactly
// (parse(t.str()) == t) and is what the kernel cache key hashes, so it must stay stable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace monotile::dsl {

enum class Vendor { kNvidia, kAmd, kCpu };

std::string_view vendor_name(Vendor vendor);  // "nvidia", "amd", "cpu"

// Element types a matrix unit multiplies (accumulation is always f32).
enum class MatrixOperand { kF16, kBf16 };

// One shape the matrix unit executes in a single instruction: D[m, n] += A[m, k] * B[k, n].
struct MatrixShape {
  int m = 0;
  int n = 0;
  int k = 0;
  MatrixOperand operand = MatrixOperand::kBf16;
  std::string_view instruction;  // "mma.sync.m16n8k16", "v_mfma_f32_32x32x8bf16_1k", ...
  friend bool operator==(const MatrixShape&, const MatrixShape&) = default;
};

// An AMD target-id feature such as "sramecc+" or "xnack-".
struct TargetFeature {
  std::string name;  // "sramecc" or "xnack"
  bool enabled = false;
  friend bool operator==(const TargetFeature&, const TargetFeature&) = default;
};

class Target {
 public:
  // Accepted forms:
  //   "cpu"                          the interpreter
  //   "sm_<cc>" or "sm_<cc>a"        NVIDIA, cc in 75 80 86 87 88 89 90 100 103 110 120 121
  //                                  ("a" = arch-specific features such as wgmma on sm_90a)
  //   "gfx<id>[:feature(+|-)]..."    AMD, id in 908 90a 940 941 942 950 1030 1100 1200 1201,
  //                                  features "sramecc" and "xnack" in that (alphabetical) order
  // Anything else is an InvalidArgument error that lists these forms.
  static absl::StatusOr<Target> parse(std::string_view text);

  // The interpreter target.
  static Target cpu();

  // The exact string it was parsed from.
  const std::string& str() const { return text_; }
  Vendor vendor() const { return vendor_; }
  // The architecture without features: "sm_90a", "gfx942", "cpu".
  const std::string& arch() const { return arch_; }
  const std::vector<TargetFeature>& features() const { return features_; }
  // NVIDIA compute capability times ten (90 for sm_90a), 0 elsewhere.
  int compute_capability() const { return compute_capability_; }
  // Threads that execute in lockstep: 32 on NVIDIA and RDNA, 64 on CDNA (gfx9), 1 on the CPU.
  int warp_size() const { return warp_size_; }
  // Most shared memory (LDS) one block may use, in bytes, including the opt-in carve-out.
  int64_t shared_memory_per_block() const { return shared_memory_per_block_; }
  // Most 32-bit registers a thread may use before spilling.
  int max_registers_per_thread() const { return max_registers_per_thread_; }
  // Most threads in one block.
  int max_threads_per_block() const { return max_threads_per_block_; }
  // Matrix-unit shapes, preferred first; empty when the target has none (CPU).
  const std::vector<MatrixShape>& matrix_shapes() const { return matrix_shapes_; }
  // Whether warp-group MMA (wgmma) exists: sm_90a only.
  bool has_wgmma() const { return has_wgmma_; }

  // A stable 64-bit fingerprint of str() (XXH3), the same in every process and build.
  uint64_t fingerprint() const;

  friend bool operator==(const Target& a, const Target& b) { return a.text_ == b.text_; }
  template <typename H>
  friend H AbslHashValue(H h, const Target& t) {
    return H::combine(std::move(h), t.text_);
  }

 private:
  Target() = default;

  std::string text_;
  Vendor vendor_ = Vendor::kCpu;
  std::string arch_;
  std::vector<TargetFeature> features_;
  int compute_capability_ = 0;
  int warp_size_ = 1;
  int64_t shared_memory_per_block_ = 0;
  int max_registers_per_thread_ = 0;
  int max_threads_per_block_ = 1;
  std::vector<MatrixShape> matrix_shapes_;
  bool has_wgmma_ = false;
};

}  // namespace monotile::dsl
