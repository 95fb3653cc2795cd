// The NVRTC backend. The few NVRTC entry points used are declared here (no SDK header needed to
// build) and bound with dlopen; the toolkit's include folder is never needed because generated
// code includes nothing but the in-memory headers its build carries.
#include "jit/nvrtc.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "support/shared_library.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

using nvrtcResult = int;
using nvrtcProgram = struct NvrtcProgramOpaque*;
constexpr nvrtcResult kNvrtcSuccess = 0;

// The NVRTC API this backend uses, bound once per process.
struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);
  nvrtcResult (*nvrtcGetSupportedArchs)(int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  std::string library_path;
  int major = 0;
  int minor = 0;
  std::vector<int> archs;
};

absl::StatusOr<NvrtcApi> load_api() {
  // MONOTILE_NVRTC_LIBRARY names the library itself: `monotile warmup --nvrtc-library` sets it so
  // that a build box compiles with (and keys its bundle by) a copy of the workers' NVRTC.
  const char* named = std::getenv("MONOTILE_NVRTC_LIBRARY");
  MT_ASSIGN_OR_RETURN(SharedLibrary library,
                      named != nullptr && *named != '\0'
                          ? SharedLibrary::open({named})
                          : SharedLibrary::open({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}));
  NvrtcApi api{};
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetErrorString", api.nvrtcGetErrorString));
  MT_RETURN_IF_ERROR(library.bind("nvrtcVersion", api.nvrtcVersion));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetNumSupportedArchs", api.nvrtcGetNumSupportedArchs));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetSupportedArchs", api.nvrtcGetSupportedArchs));
  MT_RETURN_IF_ERROR(library.bind("nvrtcCreateProgram", api.nvrtcCreateProgram));
  MT_RETURN_IF_ERROR(library.bind("nvrtcDestroyProgram", api.nvrtcDestroyProgram));
  MT_RETURN_IF_ERROR(library.bind("nvrtcCompileProgram", api.nvrtcCompileProgram));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetProgramLogSize", api.nvrtcGetProgramLogSize));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetProgramLog", api.nvrtcGetProgramLog));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetCUBINSize", api.nvrtcGetCUBINSize));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetCUBIN", api.nvrtcGetCUBIN));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetPTXSize", api.nvrtcGetPTXSize));
  MT_RETURN_IF_ERROR(library.bind("nvrtcGetPTX", api.nvrtcGetPTX));
  api.library_path = library.path();
  if (api.nvrtcVersion(&api.major, &api.minor) != kNvrtcSuccess) {
    return absl::InternalError(absl::StrCat("nvrtcVersion failed in ", library.path()));
  }
  int count = 0;
  if (api.nvrtcGetNumSupportedArchs(&count) == kNvrtcSuccess && count > 0) {
    api.archs.resize(count);
    if (api.nvrtcGetSupportedArchs(api.archs.data()) != kNvrtcSuccess) api.archs.clear();
  }
  return api;
}

// The API, loaded on first use; a failure is remembered and returned to every caller.
const absl::StatusOr<NvrtcApi>& api() {
  static const absl::StatusOr<NvrtcApi>* loaded = new absl::StatusOr<NvrtcApi>(load_api());
  return *loaded;
}

// The library's file name and size: builds of one NVRTC version differ in size. Its folder and
// time do not enter, so a bundle warmed on a build box hits on a worker with the same toolkit.
std::string file_stamp(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return name;
  return absl::StrCat(name, " ", info.st_size, " bytes");
}

class NvrtcCompiler final : public Compiler {
 public:
  NvrtcCompiler(const NvrtcApi& api, dsl::Target target) : api_(api), target_(std::move(target)) {}

  std::string identity() const override { return absl::StrCat("nvrtc ", api_.major, ".", api_.minor); }
  std::string key_identity() const override {
    return absl::StrCat(identity(), " (", file_stamp(api_.library_path), ")");
  }
  std::string name() const override { return "nvrtc"; }
  std::vector<std::string> files() const override { return {api_.library_path}; }

  absl::Status check_target() const override {
    const std::vector<int>& archs = api_.archs;
    if (archs.empty() || std::find(archs.begin(), archs.end(), target_.compute_capability()) != archs.end()) {
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "nvrtc ", api_.major, ".", api_.minor, " cannot compile for ", target_.str(),
        ": it supports compute capabilities ", absl::StrJoin(archs, " "),
        "; hint: install a CUDA toolkit whose NVRTC lists ", target_.compute_capability()));
  }

  absl::StatusOr<CompileResult> compile(const CompileRequest& request) override {
    std::vector<const char*> header_sources;
    std::vector<const char*> header_names;
    for (const Header& header : request.headers) {
      header_sources.push_back(header.content.c_str());
      header_names.push_back(header.name.c_str());
    }
    nvrtcProgram program = nullptr;
    std::string file_name = source_file_name(request.target, request.kernel_name);
    nvrtcResult created = api_.nvrtcCreateProgram(
        &program, request.source.c_str(), file_name.c_str(), static_cast<int>(header_sources.size()),
        header_sources.data(), header_names.data());
    if (created != kNvrtcSuccess) {
      return absl::InternalError(absl::StrCat("nvrtcCreateProgram failed: ", api_.nvrtcGetErrorString(created)));
    }
    std::vector<std::string> options = {absl::StrCat("-arch=", target_.arch()), "-std=c++17",
                                        "-Xptxas", "-v", "-Xptxas", "-warn-spills"};
    options.insert(options.end(), request.options.begin(), request.options.end());
    std::vector<const char*> option_pointers;
    for (const std::string& option : options) option_pointers.push_back(option.c_str());
    nvrtcResult compiled =
        api_.nvrtcCompileProgram(program, static_cast<int>(option_pointers.size()), option_pointers.data());

    CompileResult result;
    size_t log_size = 0;
    if (api_.nvrtcGetProgramLogSize(program, &log_size) == kNvrtcSuccess && log_size > 1) {
      result.log.resize(log_size);
      api_.nvrtcGetProgramLog(program, result.log.data());
      result.log.resize(log_size - 1);
    }
    absl::Status status = absl::OkStatus();
    if (compiled != kNvrtcSuccess) {
      status = absl::InvalidArgumentError(
          absl::StrCat(api_.nvrtcGetErrorString(compiled), "\n", result.log));
    } else {
      size_t size = 0;
      api_.nvrtcGetCUBINSize(program, &size);
      result.code_object.resize(size);
      if (size == 0 || api_.nvrtcGetCUBIN(program, result.code_object.data()) != kNvrtcSuccess) {
        status = absl::InternalError("nvrtc produced no CUBIN");
      }
      if (status.ok() && request.want_assembly && api_.nvrtcGetPTXSize(program, &size) == kNvrtcSuccess) {
        result.assembly.resize(size);
        api_.nvrtcGetPTX(program, result.assembly.data());
        if (!result.assembly.empty() && result.assembly.back() == '\0') result.assembly.pop_back();
      }
    }
    api_.nvrtcDestroyProgram(&program);
    MT_RETURN_IF_ERROR(status);
    MT_ASSIGN_OR_RETURN(result.report, parse_ptxas_log(result.log, request.kernel_name));
    return result;
  }

 private:
  const NvrtcApi& api_;
  dsl::Target target_;
};

// The first integer in `text` after `prefix`'s end, e.g. number_before(" bytes smem").
bool number_before(std::string_view line, std::string_view suffix, int64_t& out) {
  size_t at = line.find(suffix);
  if (at == std::string_view::npos) return false;
  size_t begin = at;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == at) return false;
  std::from_chars(line.data() + begin, line.data() + at, out);
  return true;
}

}  // namespace

absl::StatusOr<ResourceReport> parse_ptxas_log(std::string_view log, std::string_view kernel_name) {
  ResourceReport report;
  report.wavefront_size = 32;
  std::string entry = absl::StrCat("Compiling entry function '", to_absl(kernel_name), "'");
  std::string properties = absl::StrCat("Function properties for ", to_absl(kernel_name));
  bool in_entry = false;
  bool in_properties = false;
  bool found = false;
  for (absl::string_view piece : absl::StrSplit(to_absl(log), '\n')) {
    std::string_view line = to_std(piece);
    if (line.find("Compiling entry function") != std::string_view::npos) {
      in_entry = line.find(entry) != std::string_view::npos;
      found = found || in_entry;
      continue;
    }
    if (line.find("Function properties for") != std::string_view::npos) {
      in_properties = line.find(properties) != std::string_view::npos &&
                      line.size() == line.find(properties) + properties.size();
      continue;
    }
    int64_t value = 0;
    if (in_properties) {
      if (number_before(line, " bytes stack frame", value)) report.stack_frame = value;
      if (number_before(line, " bytes spill stores", value)) report.spill_stores = static_cast<int>(value);
      if (number_before(line, " bytes spill loads", value)) report.spill_loads = static_cast<int>(value);
      in_properties = false;
    }
    if (in_entry && line.find("Used ") != std::string_view::npos) {
      if (number_before(line, " registers", value)) report.registers = static_cast<int>(value);
      if (number_before(line, " bytes smem", value)) report.shared_memory = value;
    }
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat("ptxas report: no entry function \"", to_absl(kernel_name),
                                            "\" in the log; hint: is the kernel extern \"C\"?\n", to_absl(log)));
  }
  return report;
}

absl::StatusOr<std::unique_ptr<Compiler>> make_nvrtc_compiler(const dsl::Target& target) {
  if (target.vendor() != dsl::Vendor::kNvidia) {
    return absl::InvalidArgumentError(absl::StrCat("nvrtc cannot compile for \"", target.str(), "\""));
  }
  const absl::StatusOr<NvrtcApi>& loaded = api();
  if (!loaded.ok()) return with_context(loaded.status(), "nvrtc is not available");
  return std::unique_ptr<Compiler>(new NvrtcCompiler(*loaded, target));
}

}  // namespace monotile::jit
