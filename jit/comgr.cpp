// The comgr client. The handful of comgr entry points and enum values used are declared here from
// amd_comgr.h (comgr 2.x ABI), so the build needs no ROCm headers; the library is dlopened.
#include "jit/comgr.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/shared_library.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

using Status = int;  // amd_comgr_status_t
constexpr Status kSuccess = 0;
struct Data { uint64_t handle; };
struct DataSet { uint64_t handle; };
struct ActionInfo { uint64_t handle; };
struct MetadataNode { uint64_t handle; };
constexpr int kDataKindSource = 0x1;      // AMD_COMGR_DATA_KIND_SOURCE
constexpr int kDataKindExecutable = 0x8;  // AMD_COMGR_DATA_KIND_EXECUTABLE
constexpr int kMetadataKindMap = 0x2;     // AMD_COMGR_METADATA_KIND_MAP
constexpr int kMetadataKindList = 0x3;    // AMD_COMGR_METADATA_KIND_LIST
constexpr int kDisassembleExecutable = 0xC;  // AMD_COMGR_ACTION_DISASSEMBLE_EXECUTABLE_TO_SOURCE

struct ComgrApi {
  void (*get_version)(size_t*, size_t*);
  Status (*create_data)(int, Data*);
  Status (*set_data)(Data, size_t, const char*);
  Status (*set_data_name)(Data, const char*);
  Status (*release_data)(Data);
  Status (*get_data)(Data, size_t*, char*);
  Status (*get_data_metadata)(Data, MetadataNode*);
  Status (*destroy_metadata)(MetadataNode);
  Status (*get_metadata_kind)(MetadataNode, int*);
  Status (*get_metadata_string)(MetadataNode, size_t*, char*);
  Status (*metadata_lookup)(MetadataNode, const char*, MetadataNode*);
  Status (*get_metadata_list_size)(MetadataNode, size_t*);
  Status (*index_list_metadata)(MetadataNode, size_t, MetadataNode*);
  Status (*create_data_set)(DataSet*);
  Status (*destroy_data_set)(DataSet);
  Status (*data_set_add)(DataSet, Data);
  Status (*create_action_info)(ActionInfo*);
  Status (*destroy_action_info)(ActionInfo);
  Status (*action_info_set_isa_name)(ActionInfo, const char*);
  Status (*do_action)(int, ActionInfo, DataSet, DataSet);
  Status (*action_data_get_data)(DataSet, int, size_t, Data*);
  ComgrVersion version;
};

absl::StatusOr<ComgrApi> load_api() {
  MT_ASSIGN_OR_RETURN(SharedLibrary library, SharedLibrary::open({"libamd_comgr.so.2", "libamd_comgr.so"}));
  ComgrApi api{};
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_get_version", api.get_version));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_create_data", api.create_data));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_set_data", api.set_data));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_set_data_name", api.set_data_name));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_release_data", api.release_data));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_get_data", api.get_data));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_get_data_metadata", api.get_data_metadata));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_destroy_metadata", api.destroy_metadata));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_get_metadata_kind", api.get_metadata_kind));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_get_metadata_string", api.get_metadata_string));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_metadata_lookup", api.metadata_lookup));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_get_metadata_list_size", api.get_metadata_list_size));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_index_list_metadata", api.index_list_metadata));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_create_data_set", api.create_data_set));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_destroy_data_set", api.destroy_data_set));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_data_set_add", api.data_set_add));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_create_action_info", api.create_action_info));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_destroy_action_info", api.destroy_action_info));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_action_info_set_isa_name", api.action_info_set_isa_name));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_do_action", api.do_action));
  MT_RETURN_IF_ERROR(library.bind("amd_comgr_action_data_get_data", api.action_data_get_data));
  size_t major = 0;
  size_t minor = 0;
  api.get_version(&major, &minor);
  api.version = {static_cast<int>(major), static_cast<int>(minor), library.path()};
  return api;
}

const absl::StatusOr<ComgrApi>& api() {
  static const absl::StatusOr<ComgrApi>* loaded = new absl::StatusOr<ComgrApi>(load_api());
  return *loaded;
}

absl::Status check(Status status, std::string_view what) {
  if (status == kSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("comgr: ", to_absl(what), " failed with status ", status));
}

// Releases comgr handles on every path out of a function.
struct DataHandle {
  const ComgrApi& api;
  Data data{0};
  ~DataHandle() { if (data.handle != 0) api.release_data(data); }
};
struct MetadataHandle {
  const ComgrApi& api;
  MetadataNode node{0};
  ~MetadataHandle() { if (node.handle != 0) api.destroy_metadata(node); }
};

absl::Status make_executable(const ComgrApi& comgr, std::string_view code, DataHandle& out) {
  MT_RETURN_IF_ERROR(check(comgr.create_data(kDataKindExecutable, &out.data), "create_data"));
  MT_RETURN_IF_ERROR(check(comgr.set_data(out.data, code.size(), code.data()), "set_data"));
  return check(comgr.set_data_name(out.data, "kernel.co"), "set_data_name");
}

// The string value at `key` of map `node`, or nothing when the key is absent.
absl::StatusOr<std::string> lookup_string(const ComgrApi& comgr, MetadataNode node, const char* key) {
  MetadataHandle value{comgr};
  if (comgr.metadata_lookup(node, key, &value.node) != kSuccess) return std::string();
  size_t size = 0;
  MT_RETURN_IF_ERROR(check(comgr.get_metadata_string(value.node, &size, nullptr), key));
  std::string text(size, '\0');
  MT_RETURN_IF_ERROR(check(comgr.get_metadata_string(value.node, &size, text.data()), key));
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

absl::StatusOr<int64_t> lookup_int(const ComgrApi& comgr, MetadataNode node, const char* key) {
  MT_ASSIGN_OR_RETURN(std::string text, lookup_string(comgr, node, key));
  if (text.empty()) return 0;
  return std::stoll(text);
}

}  // namespace

absl::StatusOr<ComgrVersion> comgr_version() {
  const absl::StatusOr<ComgrApi>& loaded = api();
  if (!loaded.ok()) return loaded.status();
  return loaded->version;
}

absl::StatusOr<ResourceReport> read_amd_resources(std::string_view code_object, std::string_view kernel_name) {
  const absl::StatusOr<ComgrApi>& loaded = api();
  if (!loaded.ok()) return with_context(loaded.status(), "comgr is not available");
  const ComgrApi& comgr = *loaded;
  DataHandle executable{comgr};
  MT_RETURN_IF_ERROR(make_executable(comgr, code_object, executable));
  MetadataHandle root{comgr};
  MT_RETURN_IF_ERROR(check(comgr.get_data_metadata(executable.data, &root.node), "get_data_metadata"));
  MetadataHandle kernels{comgr};
  if (comgr.metadata_lookup(root.node, "amdhsa.kernels", &kernels.node) != kSuccess) {
    return absl::NotFoundError("code object metadata has no amdhsa.kernels list (code object v2?)");
  }
  int kind = 0;
  MT_RETURN_IF_ERROR(check(comgr.get_metadata_kind(kernels.node, &kind), "get_metadata_kind"));
  if (kind != kMetadataKindList) return absl::InternalError("amdhsa.kernels is not a list");
  size_t count = 0;
  MT_RETURN_IF_ERROR(check(comgr.get_metadata_list_size(kernels.node, &count), "get_metadata_list_size"));
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    MetadataHandle kernel{comgr};
    MT_RETURN_IF_ERROR(check(comgr.index_list_metadata(kernels.node, i, &kernel.node), "index_list_metadata"));
    MT_RETURN_IF_ERROR(check(comgr.get_metadata_kind(kernel.node, &kind), "get_metadata_kind"));
    if (kind != kMetadataKindMap) continue;
    MT_ASSIGN_OR_RETURN(std::string name, lookup_string(comgr, kernel.node, ".name"));
    names.push_back(name);
    if (name != kernel_name) continue;
    ResourceReport report;
    MT_ASSIGN_OR_RETURN(int64_t vgprs, lookup_int(comgr, kernel.node, ".vgpr_count"));
    MT_ASSIGN_OR_RETURN(int64_t agprs, lookup_int(comgr, kernel.node, ".agpr_count"));
    MT_ASSIGN_OR_RETURN(int64_t sgprs, lookup_int(comgr, kernel.node, ".sgpr_count"));
    MT_ASSIGN_OR_RETURN(int64_t vgpr_spills, lookup_int(comgr, kernel.node, ".vgpr_spill_count"));
    MT_ASSIGN_OR_RETURN(int64_t sgpr_spills, lookup_int(comgr, kernel.node, ".sgpr_spill_count"));
    MT_ASSIGN_OR_RETURN(report.shared_memory, lookup_int(comgr, kernel.node, ".group_segment_fixed_size"));
    MT_ASSIGN_OR_RETURN(report.stack_frame, lookup_int(comgr, kernel.node, ".private_segment_fixed_size"));
    MT_ASSIGN_OR_RETURN(int64_t wavefront, lookup_int(comgr, kernel.node, ".wavefront_size"));
    MT_ASSIGN_OR_RETURN(int64_t max_threads, lookup_int(comgr, kernel.node, ".max_flat_workgroup_size"));
    report.registers = static_cast<int>(vgprs);
    report.agprs = static_cast<int>(agprs);
    report.sgprs = static_cast<int>(sgprs);
    // A spilled register is both stored and reloaded: the metadata has one count for both. SGPRs
    // spill into VGPR lanes, not memory: they are counted apart (resource_report.h).
    report.spill_stores = static_cast<int>(vgpr_spills);
    report.spill_loads = report.spill_stores;
    report.sgpr_spills = static_cast<int>(sgpr_spills);
    report.wavefront_size = static_cast<int>(wavefront);
    report.max_threads_per_block = static_cast<int>(max_threads);
    return report;
  }
  std::string listed;
  for (const std::string& name : names) absl::StrAppend(&listed, listed.empty() ? "" : ", ", "\"", name, "\"");
  return absl::NotFoundError(absl::StrCat("code object has no kernel \"", to_absl(kernel_name),
                                          "\" (it has ", listed.empty() ? "none" : listed,
                                          "); hint: is the kernel extern \"C\"?"));
}

absl::StatusOr<std::string> disassemble_amd(std::string_view code_object, std::string_view target) {
  const absl::StatusOr<ComgrApi>& loaded = api();
  if (!loaded.ok()) return with_context(loaded.status(), "comgr is not available");
  const ComgrApi& comgr = *loaded;
  DataHandle executable{comgr};
  MT_RETURN_IF_ERROR(make_executable(comgr, code_object, executable));
  DataSet input{0};
  DataSet output{0};
  ActionInfo info{0};
  absl::Status status = check(comgr.create_data_set(&input), "create_data_set");
  if (status.ok()) status = check(comgr.create_data_set(&output), "create_data_set");
  if (status.ok()) status = check(comgr.data_set_add(input, executable.data), "data_set_add");
  if (status.ok()) status = check(comgr.create_action_info(&info), "create_action_info");
  std::string isa = absl::StrCat("amdgcn-amd-amdhsa--", to_absl(target));
  if (status.ok()) status = check(comgr.action_info_set_isa_name(info, isa.c_str()), "action_info_set_isa_name");
  if (status.ok()) status = check(comgr.do_action(kDisassembleExecutable, info, input, output), "disassemble");
  std::string text;
  DataHandle source{comgr};
  if (status.ok()) status = check(comgr.action_data_get_data(output, kDataKindSource, 0, &source.data), "action_data_get_data");
  size_t size = 0;
  if (status.ok()) status = check(comgr.get_data(source.data, &size, nullptr), "get_data");
  if (status.ok()) {
    text.resize(size);
    status = check(comgr.get_data(source.data, &size, text.data()), "get_data");
  }
  if (info.handle != 0) comgr.destroy_action_info(info);
  if (output.handle != 0) comgr.destroy_data_set(output);
  if (input.handle != 0) comgr.destroy_data_set(input);
  MT_RETURN_IF_ERROR(status);
  return text;
}

}  // namespace monotile::jit
