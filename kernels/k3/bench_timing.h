// What the layer kernels' benchmarks share: median and best of timed launches, and the HBM floor's
// reference, the device-to-device copy bandwidth measured in the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/target.h"
#include "kernels/k3/l2_flush.h"
#include "runtime/device.h"

namespace monotile::kernels::k3 {

struct Timing {
  double median_ms = 0, best_ms = 0;
};

// The median and the best of `times` (milliseconds; not empty).
Timing summarize(std::vector<float> times);

// A 1 GiB device-to-device copy, `iterations` timed after two warm-ups.
inline constexpr int64_t kCopyBytes = int64_t{1} << 30;
absl::StatusOr<Timing> copy_floor(runtime::Device& device, runtime::Stream& stream, int iterations);

// Bytes read + written per second by the copy's best time: the bandwidth every floor uses.
inline double copy_bandwidth(const Timing& copy) {
  return 2.0 * kCopyBytes / (copy.best_ms * 1e-3);
}

// Compiles `programs` for `target` into the kernel cache on every core and prints one line of
// counts, before a benchmark times the first of them: each layer kernel takes NVRTC seconds, and
// one after another a run with variants spent minutes compiling. A program that fails here fails
// again, with its error, where it is timed.
void precompile(const std::vector<dsl::Program>& programs, const dsl::Target& target);

// A JSON string literal of `text` (quotes, backslashes and control characters escaped): the
// benchmarks' --json documents.
std::string json_string(const std::string& text);

// The leading members of a --json document: with a GPU, "gpu": true, its name, the programs a
// launch runs (its compute units), the iterations, the copy bandwidth (bytes/s), whether the L2
// was flushed before each launch and how ("l2_flush": "read", "write" or "none"; l2_flush.h);
// without one, "gpu": false and why.
std::string gpu_json_header(const runtime::DeviceInfo& info, int iterations, double bandwidth,
                            L2Flush flush);
std::string no_gpu_json_header(const std::string& reason);

// Writes {header, "shapes": [shapes...]} (each shape one JSON object) to `path`; false, with `tool`
// naming the message on stderr, when the file cannot be written.
bool write_json_document(const std::string& tool, const std::string& path,
                         const std::string& header, const std::vector<std::string>& shapes);

}  // namespace monotile::kernels::k3
