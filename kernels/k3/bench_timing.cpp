#include "kernels/k3/bench_timing.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "jit/compile_all.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "support/status_macros.h"

namespace monotile::kernels::k3 {

Timing summarize(std::vector<float> times) {
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

void precompile(const std::vector<dsl::Program>& programs, const dsl::Target& target) {
  std::vector<jit::Build> builds;
  for (const dsl::Program& program : programs) {
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(program, target);
    if (made.ok()) builds.push_back(std::move(made->build));
  }
  const jit::CompileAllResult r = jit::compile_all(jit::Jit::process_default(), builds);
  std::printf("compiled %zu builds first (%zu from the cache, %zu failed) in %.1f s\n", r.unique,
              r.hits, r.failures, r.seconds);
  for (const absl::StatusOr<jit::CompiledBuild>& result : r.results) {
    if (!result.ok()) {
      std::printf("  the first failure: %s\n", std::string(result.status().message()).c_str());
      break;
    }
  }
  std::fflush(stdout);
}

absl::StatusOr<Timing> copy_floor(runtime::Device& device, runtime::Stream& stream,
                                  int iterations) {
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer from, device.allocate(kCopyBytes));
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer to, device.allocate(kCopyBytes));
  std::vector<float> times;
  for (int i = 0; i < iterations + 2; ++i) {
    MT_ASSIGN_OR_RETURN(runtime::Event start, device.create_event());
    MT_ASSIGN_OR_RETURN(runtime::Event end, device.create_event());
    MT_RETURN_IF_ERROR(device.record(start, stream));
    MT_RETURN_IF_ERROR(
        device.copy_on_device_async(to.address(), from.address(), kCopyBytes, stream));
    MT_RETURN_IF_ERROR(device.record(end, stream));
    MT_RETURN_IF_ERROR(device.synchronize(end));
    MT_ASSIGN_OR_RETURN(float ms, device.elapsed_ms(start, end));
    if (i >= 2) times.push_back(ms);
  }
  return summarize(times);
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string gpu_json_header(const runtime::DeviceInfo& info, int iterations, double bandwidth,
                            L2Flush flush) {
  char header[512];
  std::snprintf(
      header, sizeof header,
      " \"gpu\": true,\n \"device\": %s,\n \"programs\": %d,\n \"iterations\": %d,\n"
      " \"copy_bandwidth_bytes_per_s\": %.6e,\n \"l2_flushed\": %s,\n \"l2_flush\": \"%s\"",
      json_string(info.name).c_str(), info.compute_units, iterations, bandwidth,
      flush != L2Flush::kNone ? "true" : "false", l2_flush_name(flush));
  return header;
}

std::string no_gpu_json_header(const std::string& reason) {
  return " \"gpu\": false,\n \"reason\": " + json_string(reason);
}

bool write_json_document(const std::string& tool, const std::string& path,
                         const std::string& header, const std::vector<std::string>& shapes) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s\n", tool.c_str(), path.c_str());
    return false;
  }
  std::fprintf(file, "{\n%s,\n \"shapes\": [", header.c_str());
  for (size_t i = 0; i < shapes.size(); ++i)
    std::fprintf(file, "%s\n  %s", i == 0 ? "" : ",", shapes[i].c_str());
  std::fprintf(file, "\n ]\n}\n");
  return std::fclose(file) == 0;
}

}  // namespace monotile::kernels::k3
