// `monotile devices`: every device discovery found (GPUs, then the CPU interpreter), and for each
// GPU backend without a device, why. Exits 0 whatever it finds: no GPU is a normal answer.
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "runtime/discovery.h"
#include "tools/command_flags.h"
#include "tools/commands.h"

namespace monotile::tools {
namespace {

constexpr std::string_view kUsage =
    "usage: monotile devices\n"
    "  lists the GPUs and the CPU interpreter found, and for each GPU vendor without a device, why\n";

std::string unit_count(const runtime::DeviceInfo& info) {
  switch (info.vendor) {
    case dsl::Vendor::kNvidia: return absl::StrFormat("%d SMs", info.compute_units);
    case dsl::Vendor::kAmd: return absl::StrFormat("%d CUs", info.compute_units);
    case dsl::Vendor::kCpu: return absl::StrFormat("%d threads", info.compute_units);
  }
  return "";
}

std::string vendor_label(dsl::Vendor vendor) {
  switch (vendor) {
    case dsl::Vendor::kNvidia: return "NVIDIA";
    case dsl::Vendor::kAmd: return "AMD";
    case dsl::Vendor::kCpu: return "CPU";
  }
  return "";
}

}  // namespace

int devices_command(Args args) {
  if (std::optional<int> status = help_only(args, kUsage)) return *status;
  if (!args.empty()) {
    std::fprintf(stderr, "monotile devices: takes no arguments, got \"%.*s\"\n",
                 static_cast<int>(args[0].size()), args[0].data());
    return 2;
  }
  runtime::Discovery discovery = runtime::discover_devices();
  std::printf("devices:\n");
  for (size_t index = 0; index < discovery.devices.size(); ++index) {
    const runtime::DeviceInfo& info = discovery.devices[index]->info();
    std::printf("  %zu  %-6s  %-28s  %-24s  %-12s  %7.1f GiB  %s\n", index,
                vendor_label(info.vendor).c_str(), info.name.c_str(), info.target.str().c_str(),
                unit_count(info).c_str(),
                static_cast<double>(info.memory_bytes) / (1024.0 * 1024.0 * 1024.0),
                info.driver.c_str());
  }
  if (!discovery.missing.empty()) {
    std::printf("no GPU of these vendors:\n");
    for (const runtime::MissingBackend& missing : discovery.missing) {
      std::printf("  %-6s  %s\n", vendor_label(missing.vendor).c_str(), missing.reason.c_str());
    }
  }
  if (!discovery.skipped.empty()) {
    std::printf("left out:\n");
    for (const std::string& reason : discovery.skipped) std::printf("  %s\n", reason.c_str());
  }
  return 0;
}

}  // namespace monotile::tools
