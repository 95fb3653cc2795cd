// Target parsing and the per-architecture facts (warp size, shared memory, matrix shapes).
// Numbers are the vendors' published limits; the table below is the single place they live.
#include "dsl/target.h"

#include <charconv>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "support/strings.h"
#include "xxhash.h"

namespace monotile::dsl {
namespace {

constexpr std::string_view kAcceptedForms =
    "accepted forms: \"cpu\"; \"sm_<cc>\" or \"sm_<cc>a\" with cc in 75 80 86 87 88 89 90 100 103 "
    "110 120 121 (e.g. \"sm_90a\"); \"gfx<id>\" with id in 908 90a 940 941 942 950 1030 1100 1200 "
    "1201, optionally followed by \":sramecc+|-\" and then \":xnack+|-\" (e.g. \"gfx90a\", "
    "\"gfx942:sramecc+:xnack-\")";

constexpr MatrixShape kMmaM16N8K16Bf16{16, 8, 16, MatrixOperand::kBf16, "mma.sync.m16n8k16"};
constexpr MatrixShape kMmaM16N8K16F16{16, 8, 16, MatrixOperand::kF16, "mma.sync.m16n8k16"};
constexpr MatrixShape kMmaM16N8K8F16{16, 8, 8, MatrixOperand::kF16, "mma.sync.m16n8k8"};

struct NvidiaArch {
  int cc;
  int64_t shared_memory;  // opt-in maximum per block
};
constexpr NvidiaArch kNvidiaArchs[] = {
    {75, 64 * 1024},   {80, 163 * 1024}, {86, 99 * 1024},  {87, 163 * 1024},
    {88, 99 * 1024},   {89, 99 * 1024},  {90, 227 * 1024}, {100, 227 * 1024},
    {103, 227 * 1024}, {110, 227 * 1024}, {120, 99 * 1024}, {121, 99 * 1024},
};

struct AmdArch {
  std::string_view id;
  int warp_size;
  int64_t lds;
  int vgprs;  // per thread, AGPRs included where they are unified with VGPRs
  bool has_features;  // sramecc / xnack apply
  std::span<const MatrixShape> matrix;
};
constexpr MatrixShape kCdna1[] = {
    {32, 32, 4, MatrixOperand::kBf16, "v_mfma_f32_32x32x4bf16"},
    {32, 32, 8, MatrixOperand::kF16, "v_mfma_f32_32x32x8f16"},
    {16, 16, 16, MatrixOperand::kF16, "v_mfma_f32_16x16x16f16"},
};
constexpr MatrixShape kCdna2And3[] = {
    {32, 32, 8, MatrixOperand::kBf16, "v_mfma_f32_32x32x8bf16_1k"},
    {16, 16, 16, MatrixOperand::kBf16, "v_mfma_f32_16x16x16bf16_1k"},
    {32, 32, 8, MatrixOperand::kF16, "v_mfma_f32_32x32x8f16"},
    {16, 16, 16, MatrixOperand::kF16, "v_mfma_f32_16x16x16f16"},
};
constexpr MatrixShape kCdna4[] = {
    {16, 16, 32, MatrixOperand::kBf16, "v_mfma_f32_16x16x32_bf16"},
    {32, 32, 16, MatrixOperand::kBf16, "v_mfma_f32_32x32x16_bf16"},
    {16, 16, 32, MatrixOperand::kF16, "v_mfma_f32_16x16x32_f16"},
    {32, 32, 16, MatrixOperand::kF16, "v_mfma_f32_32x32x16_f16"},
};
constexpr MatrixShape kRdna3And4[] = {
    {16, 16, 16, MatrixOperand::kBf16, "v_wmma_f32_16x16x16_bf16"},
    {16, 16, 16, MatrixOperand::kF16, "v_wmma_f32_16x16x16_f16"},
};
constexpr AmdArch kAmdArchs[] = {
    {"908", 64, 64 * 1024, 256, true, kCdna1},
    {"90a", 64, 64 * 1024, 512, true, kCdna2And3},
    {"940", 64, 64 * 1024, 512, true, kCdna2And3},
    {"941", 64, 64 * 1024, 512, true, kCdna2And3},
    {"942", 64, 64 * 1024, 512, true, kCdna2And3},
    {"950", 64, 160 * 1024, 512, true, kCdna4},
    {"1030", 32, 64 * 1024, 256, false, {}},
    {"1100", 32, 64 * 1024, 256, false, kRdna3And4},
    {"1200", 32, 64 * 1024, 256, false, kRdna3And4},
    {"1201", 32, 64 * 1024, 256, false, kRdna3And4},
};

absl::Status invalid(std::string_view text, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid target \"", to_absl(text), "\": ", to_absl(what), "; ", to_absl(kAcceptedForms)));
}

}  // namespace

std::string_view vendor_name(Vendor vendor) {
  switch (vendor) {
    case Vendor::kNvidia: return "nvidia";
    case Vendor::kAmd: return "amd";
    case Vendor::kCpu: return "cpu";
  }
  return "unknown";
}

Target Target::cpu() {
  Target target;
  target.text_ = "cpu";
  target.arch_ = "cpu";
  target.vendor_ = Vendor::kCpu;
  target.warp_size_ = 1;
  target.shared_memory_per_block_ = int64_t{1} << 30;
  target.max_registers_per_thread_ = 1 << 20;
  target.max_threads_per_block_ = 1;
  return target;
}

absl::StatusOr<Target> Target::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  Target target;
  target.text_ = std::string(text);
  if (text.starts_with("sm_")) {
    std::string_view digits = text.substr(3);
    bool arch_specific = digits.ends_with('a');
    if (arch_specific) digits.remove_suffix(1);
    int cc = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), cc);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
      return invalid(text, "the compute capability is not a number");
    }
    const NvidiaArch* found = nullptr;
    for (const NvidiaArch& arch : kNvidiaArchs) {
      if (arch.cc == cc) found = &arch;
    }
    if (found == nullptr) return invalid(text, absl::StrCat("unknown compute capability ", cc));
    target.vendor_ = Vendor::kNvidia;
    target.arch_ = target.text_;
    target.compute_capability_ = cc;
    target.warp_size_ = 32;
    target.shared_memory_per_block_ = found->shared_memory;
    target.max_registers_per_thread_ = 255;
    target.max_threads_per_block_ = 1024;
    if (cc >= 80) {
      target.matrix_shapes_ = {kMmaM16N8K16Bf16, kMmaM16N8K16F16};
    } else {
      target.matrix_shapes_ = {kMmaM16N8K8F16};
    }
    target.has_wgmma_ = cc == 90 && arch_specific;
    return target;
  }
  if (text.starts_with("gfx")) {
    std::vector<std::string_view> parts;
    for (absl::string_view part : absl::StrSplit(to_absl(text), ':')) parts.push_back(to_std(part));
    std::string_view id = parts[0].substr(3);
    const AmdArch* found = nullptr;
    for (const AmdArch& arch : kAmdArchs) {
      if (arch.id == id) found = &arch;
    }
    if (found == nullptr) return invalid(text, absl::StrCat("unknown AMD architecture gfx", to_absl(id)));
    std::string previous;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string_view part = parts[i];
      if (!found->has_features) {
        return invalid(text, absl::StrCat("gfx", to_absl(id), " takes no target features"));
      }
      if (part.size() < 2 || (part.back() != '+' && part.back() != '-')) {
        return invalid(text, absl::StrCat("feature \"", to_absl(part), "\" must end in + or -"));
      }
      std::string name(part.substr(0, part.size() - 1));
      if (name != "sramecc" && name != "xnack") {
        return invalid(text, absl::StrCat("unknown feature \"", name, "\""));
      }
      if (!previous.empty() && name <= previous) {
        return invalid(text, "features must appear once each, sramecc before xnack");
      }
      previous = name;
      target.features_.push_back({name, part.back() == '+'});
    }
    target.vendor_ = Vendor::kAmd;
    target.arch_ = std::string(parts[0]);
    target.warp_size_ = found->warp_size;
    target.shared_memory_per_block_ = found->lds;
    target.max_registers_per_thread_ = found->vgprs;
    target.max_threads_per_block_ = 1024;
    target.matrix_shapes_.assign(found->matrix.begin(), found->matrix.end());
    return target;
  }
  return invalid(text, "unknown vendor prefix");
}

uint64_t Target::fingerprint() const { return XXH3_64bits(text_.data(), text_.size()); }

}  // namespace monotile::dsl
