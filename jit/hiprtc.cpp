// The hiprtc backend. The hiprtc entry points used are declared here (no ROCm header needed to
// build) and bound with dlopen. The installed version comes from hipRuntimeGetVersion (hiprtcVersion
// reports a CUDA-compatibility number, 9.0, on HIP 5.2) and comgr's amd_comgr_get_version.
#include "jit/hiprtc.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/comgr.h"
#include "support/shared_library.h"
#include "support/status_macros.h"
#include "support/strings.h"
#include "xxhash.h"

namespace monotile::jit {
namespace {

using hiprtcResult = int;
using hiprtcProgram = struct HiprtcProgramOpaque*;
constexpr hiprtcResult kHiprtcSuccess = 0;

struct HiprtcApi {
  const char* (*hiprtcGetErrorString)(hiprtcResult);
  hiprtcResult (*hiprtcCreateProgram)(hiprtcProgram*, const char*, const char*, int, const char**, const char**);
  hiprtcResult (*hiprtcCompileProgram)(hiprtcProgram, int, const char**);
  hiprtcResult (*hiprtcDestroyProgram)(hiprtcProgram*);
  hiprtcResult (*hiprtcGetProgramLogSize)(hiprtcProgram, size_t*);
  hiprtcResult (*hiprtcGetProgramLog)(hiprtcProgram, char*);
  hiprtcResult (*hiprtcGetCodeSize)(hiprtcProgram, size_t*);
  hiprtcResult (*hiprtcGetCode)(hiprtcProgram, char*);
  int (*hipRuntimeGetVersion)(int*);
  std::string library_path;
  HipVersion version;
  ComgrVersion comgr;
  std::string device_libs;  // a fingerprint of the device-library bitcode files
  std::vector<std::string> device_lib_files;
};

// The device-library bitcode hiprtc links in, hashed by content (3 MB, about a millisecond): a
// change of any file changes generated code, while the folder and the files' times (which differ
// between installs of the same package) must not change keys, or a shipped bundle would miss.
std::string device_libs_fingerprint(std::vector<std::string>& files_out) {
  std::vector<std::filesystem::path> folders;
  if (const char* env = std::getenv("HIP_DEVICE_LIB_PATH"); env != nullptr && *env) folders.emplace_back(env);
  folders.emplace_back("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
  folders.emplace_back("/opt/rocm/amdgcn/bitcode");
  for (const std::filesystem::path& folder : folders) {
    std::error_code error;
    if (!std::filesystem::is_directory(folder, error)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& file : std::filesystem::directory_iterator(folder, error)) files.push_back(file.path());
    std::sort(files.begin(), files.end());
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    std::string bytes;
    for (const std::filesystem::path& file : files) {
      std::string name = file.filename().string();
      XXH3_64bits_update(state, name.data(), name.size() + 1);
      std::ifstream in(file, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      XXH3_64bits_update(state, bytes.data(), bytes.size());
    }
    for (const std::filesystem::path& file : files) files_out.push_back(file.string());
    uint64_t digest = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return absl::StrFormat("device libs %d files %016x", files.size(), digest);
  }
  return "device libs not found";
}

absl::StatusOr<HiprtcApi> load_api() {
  MT_ASSIGN_OR_RETURN(SharedLibrary library, SharedLibrary::open({"libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"}));
  HiprtcApi api{};
  MT_RETURN_IF_ERROR(library.bind("hiprtcGetErrorString", api.hiprtcGetErrorString));
  MT_RETURN_IF_ERROR(library.bind("hiprtcCreateProgram", api.hiprtcCreateProgram));
  MT_RETURN_IF_ERROR(library.bind("hiprtcCompileProgram", api.hiprtcCompileProgram));
  MT_RETURN_IF_ERROR(library.bind("hiprtcDestroyProgram", api.hiprtcDestroyProgram));
  MT_RETURN_IF_ERROR(library.bind("hiprtcGetProgramLogSize", api.hiprtcGetProgramLogSize));
  MT_RETURN_IF_ERROR(library.bind("hiprtcGetProgramLog", api.hiprtcGetProgramLog));
  MT_RETURN_IF_ERROR(library.bind("hiprtcGetCodeSize", api.hiprtcGetCodeSize));
  MT_RETURN_IF_ERROR(library.bind("hiprtcGetCode", api.hiprtcGetCode));
  MT_RETURN_IF_ERROR(library.bind("hipRuntimeGetVersion", api.hipRuntimeGetVersion));
  api.library_path = library.path();
  int packed = 0;
  if (api.hipRuntimeGetVersion(&packed) != 0) {
    return absl::InternalError(absl::StrCat("hipRuntimeGetVersion failed in ", library.path()));
  }
  // HIP_VERSION = major * 10^7 + minor * 10^5 + patch.
  api.version = {packed / 10000000, packed / 100000 % 100, packed % 100000};
  absl::StatusOr<ComgrVersion> comgr = comgr_version();
  if (!comgr.ok()) return with_context(comgr.status(), "hiprtc needs comgr to read resources");
  api.comgr = *comgr;
  api.device_libs = device_libs_fingerprint(api.device_lib_files);
  return api;
}

const absl::StatusOr<HiprtcApi>& api() {
  static const absl::StatusOr<HiprtcApi>* loaded = new absl::StatusOr<HiprtcApi>(load_api());
  return *loaded;
}

std::string version_text(HipVersion hip) { return absl::StrCat(hip.major, ".", hip.minor, ".", hip.patch); }

// Architectures newer than some hiprtc releases: asking an older hiprtc to build them aborts the
// process (comgr 2.4 / LLVM 15 do not know gfx941/942/1100; gfx940 is known to LLVM but not comgr).
struct MinimumHip {
  std::string_view arch;
  int major;
  int minor;
  std::string_view llvm;
};
constexpr MinimumHip kMinimumHip[] = {
    {"gfx940", 6, 0, "LLVM 17+"},  {"gfx941", 6, 0, "LLVM 17+"},  {"gfx942", 6, 0, "LLVM 17+"},
    {"gfx950", 6, 4, "LLVM 19+"},  {"gfx1100", 6, 0, "LLVM 17+"}, {"gfx1200", 6, 3, "LLVM 19+"},
    {"gfx1201", 6, 3, "LLVM 19+"},
};

class HiprtcCompiler final : public Compiler {
 public:
  HiprtcCompiler(const HiprtcApi& api, dsl::Target target) : api_(api), target_(std::move(target)) {}

  std::string identity() const override {
    return absl::StrCat("hiprtc ", version_text(api_.version), " + comgr ", api_.comgr.major, ".", api_.comgr.minor);
  }
  // The library's file name and size tell builds of one version apart; its folder and time do
  // not enter, so a bundle warmed on a build box hits on a worker with the same packages.
  std::string key_identity() const override {
    struct stat info {};
    std::string stamp = std::filesystem::path(api_.library_path).filename().string();
    if (::stat(api_.library_path.c_str(), &info) == 0) absl::StrAppend(&stamp, " ", info.st_size, " bytes");
    return absl::StrCat(identity(), " (", stamp, "; ", api_.device_libs, ")");
  }
  std::string name() const override { return "hiprtc"; }
  std::vector<std::string> files() const override {
    std::vector<std::string> files = {api_.library_path, api_.comgr.library_path};
    files.insert(files.end(), api_.device_lib_files.begin(), api_.device_lib_files.end());
    return files;
  }
  absl::Status check_target() const override {
    return check_hiprtc_supports(target_, api_.version, api_.comgr.major, api_.comgr.minor);
  }
  bool target_needs_probe() const override { return true; }

  absl::StatusOr<CompileResult> compile(const CompileRequest& request) override {
    std::vector<const char*> header_sources;
    std::vector<const char*> header_names;
    for (const Header& header : request.headers) {
      header_sources.push_back(header.content.c_str());
      header_names.push_back(header.name.c_str());
    }
    hiprtcProgram program = nullptr;
    std::string file_name = source_file_name(request.target, request.kernel_name);
    hiprtcResult created = api_.hiprtcCreateProgram(&program, request.source.c_str(), file_name.c_str(),
                                                    static_cast<int>(header_sources.size()),
                                                    header_sources.data(), header_names.data());
    if (created != kHiprtcSuccess) {
      return absl::InternalError(absl::StrCat("hiprtcCreateProgram failed: ", api_.hiprtcGetErrorString(created)));
    }
    std::vector<std::string> options = {absl::StrCat("--offload-arch=", target_.str()), "-std=c++17", "-O3"};
    options.insert(options.end(), request.options.begin(), request.options.end());
    std::vector<const char*> option_pointers;
    for (const std::string& option : options) option_pointers.push_back(option.c_str());
    hiprtcResult compiled =
        api_.hiprtcCompileProgram(program, static_cast<int>(option_pointers.size()), option_pointers.data());
    CompileResult result;
    size_t size = 0;
    if (api_.hiprtcGetProgramLogSize(program, &size) == kHiprtcSuccess && size > 0) {
      result.log.resize(size);
      api_.hiprtcGetProgramLog(program, result.log.data());
      while (!result.log.empty() && result.log.back() == '\0') result.log.pop_back();
    }
    absl::Status status = absl::OkStatus();
    if (compiled != kHiprtcSuccess) {
      status = absl::InvalidArgumentError(absl::StrCat(api_.hiprtcGetErrorString(compiled), "\n", result.log));
    } else if (api_.hiprtcGetCodeSize(program, &size) != kHiprtcSuccess || size == 0) {
      status = absl::InternalError("hiprtc produced no code object");
    } else {
      result.code_object.resize(size);
      api_.hiprtcGetCode(program, result.code_object.data());
    }
    api_.hiprtcDestroyProgram(&program);
    MT_RETURN_IF_ERROR(status);
    MT_ASSIGN_OR_RETURN(result.report, read_amd_resources(result.code_object, request.kernel_name));
    if (request.want_assembly) {
      MT_ASSIGN_OR_RETURN(result.assembly, disassemble_amd(result.code_object, target_.str()));
    }
    return result;
  }

 private:
  const HiprtcApi& api_;
  dsl::Target target_;
};

}  // namespace

absl::Status check_hiprtc_supports(const dsl::Target& target, HipVersion hip, int comgr_major, int comgr_minor) {
  for (const MinimumHip& minimum : kMinimumHip) {
    if (minimum.arch != target.arch()) continue;
    if (hip.major > minimum.major || (hip.major == minimum.major && hip.minor >= minimum.minor)) break;
    return absl::FailedPreconditionError(absl::StrCat(
        "hiprtc cannot compile for ", target.str(), ": ", target.arch(), " needs ROCm ", minimum.major, ".",
        minimum.minor, " or newer hiprtc/comgr (", to_absl(minimum.llvm), "); installed: hiprtc ",
        version_text(hip), " with comgr ", comgr_major, ".", comgr_minor,
        "; hint: build on a machine with a newer ROCm, or target gfx90a"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Compiler>> make_hiprtc_compiler(const dsl::Target& target) {
  if (target.vendor() != dsl::Vendor::kAmd) {
    return absl::InvalidArgumentError(absl::StrCat("hiprtc cannot compile for \"", target.str(), "\""));
  }
  const absl::StatusOr<HiprtcApi>& loaded = api();
  if (!loaded.ok()) return with_context(loaded.status(), "hiprtc is not available");
  return std::unique_ptr<Compiler>(new HiprtcCompiler(*loaded, target));
}

}  // namespace monotile::jit
