#include "kernels/k3/l2_flush.h"

#include <cstdio>
#include <vector>

#include "dsl/dsl.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "support/status_macros.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

std::optional<L2Flush> parse_l2_flush(const std::string& text) {
  if (text == "read") return L2Flush::kRead;
  if (text == "write") return L2Flush::kWrite;
  if (text == "none") return L2Flush::kNone;
  return std::nullopt;
}

std::optional<L2Flush> parse_flush_option(const std::string& tool, const std::string& value) {
  const std::optional<L2Flush> mode = parse_l2_flush(value);
  if (mode && *mode != L2Flush::kNone) return mode;
  std::fprintf(stderr, "%s: --flush %s: expected read or write\n", tool.c_str(), value.c_str());
  return std::nullopt;
}

const char* l2_flush_name(L2Flush flush) {
  switch (flush) {
    case L2Flush::kRead:
      return "read";
    case L2Flush::kWrite:
      return "write";
    case L2Flush::kNone:
      break;
  }
  return "none";
}

std::string l2_flush_description(L2Flush flush) {
  switch (flush) {
    case L2Flush::kRead:
      return "a 256 MiB read (cold L2, clean lines) before each launch";
    case L2Flush::kWrite:
      return "a 256 MiB memset (cold L2, dirty lines to write back) before each launch";
    case L2Flush::kNone:
      break;
  }
  return "--warm: no L2 flush between launches";
}

Program l2_read_program(int64_t bytes) {
  Builder b("l2_read_bytes" + std::to_string(bytes), {.num_warps = 8});
  auto src = b.arg("src", ptr(i32)), out = b.arg("out", ptr(i32));
  auto offs = program_id(0).to(i64) * kL2ReadBlock + arange(0, kL2ReadBlock);
  store(out + program_id(0), sum(load(src + offs)));
  return b.finish();
}

absl::StatusOr<L2Flusher> L2Flusher::create(runtime::Device& device, L2Flush flush) {
  L2Flusher f;
  f.mode_ = flush;
  if (flush == L2Flush::kNone) return f;
  MT_ASSIGN_OR_RETURN(f.buffer_, device.allocate(kL2FlushBytes));
  MT_RETURN_IF_ERROR(device.fill_bytes(f.buffer_.address(), 1, kL2FlushBytes));
  if (flush == L2Flush::kWrite) return f;
  const int64_t programs = kL2FlushBytes / 4 / kL2ReadBlock;
  MT_ASSIGN_OR_RETURN(f.sums_, device.allocate(static_cast<size_t>(programs) * 4));
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild made,
                      jit::make_build(l2_read_program(kL2FlushBytes), device.info().target));
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled,
                      jit::Jit::process_default().compile_build(made.build));
  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel,
                      runtime::Kernel::load(device, compiled, std::move(made.params)));
  f.read_.emplace(std::move(kernel));
  return f;
}

absl::Status L2Flusher::run(runtime::Device& device, runtime::Stream& stream, int launch) const {
  switch (mode_) {
    case L2Flush::kNone:
      return absl::OkStatus();
    case L2Flush::kWrite:
      return device.fill_bytes_async(buffer_.address(), static_cast<uint8_t>(launch), kL2FlushBytes,
                                     stream);
    case L2Flush::kRead: {
      const std::vector<runtime::KernelArgument> args = {
          runtime::KernelArgument::pointer(reinterpret_cast<const void*>(buffer_.address()),
                                           ScalarType::kI32),
          runtime::KernelArgument::pointer(reinterpret_cast<const void*>(sums_.address()),
                                           ScalarType::kI32)};
      return read_->launch({static_cast<uint32_t>(kL2FlushBytes / 4 / kL2ReadBlock), 1, 1}, args,
                           stream);
    }
  }
  return absl::OkStatus();
}

}  // namespace monotile::kernels::k3
