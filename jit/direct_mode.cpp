// Direct entries: the key is the program's text and the lowering's identity beside the build key's
// non-source fields; the entry's metadata holds the launch and the signature, each field
// length-prefixed so that no name can be misread as a separator.
#include "jit/direct_mode.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dsl/printer.h"
#include "jit/build_key.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

// Bumped whenever the key's fields or the entry's metadata change.
constexpr std::string_view kDirectVersion = "direct build 1";

// "<length>:<bytes>" for each field, in order.
std::string encode_fields(const std::vector<std::string>& fields) {
  std::string text;
  for (const std::string& field : fields) absl::StrAppend(&text, field.size(), ":", field);
  return text;
}

std::optional<std::vector<std::string>> decode_fields(std::string_view text) {
  std::vector<std::string> fields;
  while (!text.empty()) {
    const size_t colon = text.find(':');
    size_t length = 0;
    if (colon == std::string_view::npos ||
        !absl::SimpleAtoi(to_absl(text.substr(0, colon)), &length) ||
        length > text.size() - colon - 1) {
      return std::nullopt;
    }
    fields.emplace_back(text.substr(colon + 1, length));
    text.remove_prefix(colon + 1 + length);
  }
  return fields;
}

template <typename Integer>
bool parse(const std::string& text, Integer& value) {
  return absl::SimpleAtoi(to_absl(text), &value);
}

std::string encode_launch(const LaunchInfo& launch) {
  return encode_fields({absl::StrCat(launch.block_x), absl::StrCat(launch.block_y),
                        absl::StrCat(launch.block_z), absl::StrCat(launch.dynamic_shared_memory),
                        launch.programmatic_dependency ? "1" : "0"});
}

std::optional<LaunchInfo> decode_launch(const std::string& text) {
  std::optional<std::vector<std::string>> fields = decode_fields(text);
  LaunchInfo launch;
  if (!fields || fields->size() != 5 || !parse((*fields)[0], launch.block_x) ||
      !parse((*fields)[1], launch.block_y) || !parse((*fields)[2], launch.block_z) ||
      !parse((*fields)[3], launch.dynamic_shared_memory) ||
      ((*fields)[4] != "0" && (*fields)[4] != "1")) {
    return std::nullopt;
  }
  launch.programmatic_dependency = (*fields)[4] == "1";
  return launch;
}

constexpr size_t kParamFields = 6;

std::string encode_params(const std::vector<dsl::lower::KernelParam>& params) {
  std::vector<std::string> fields;
  for (const dsl::lower::KernelParam& p : params) {
    fields.insert(fields.end(), {p.name, std::string(dsl::scalar_type_name(p.type.scalar)),
                                 p.type.pointer ? "1" : "0", p.c_type, absl::StrCat(p.size),
                                 absl::StrCat(p.alignment)});
  }
  return encode_fields(fields);
}

std::optional<std::vector<dsl::lower::KernelParam>> decode_params(const std::string& text) {
  std::optional<std::vector<std::string>> fields = decode_fields(text);
  if (!fields || fields->size() % kParamFields != 0) return std::nullopt;
  std::vector<dsl::lower::KernelParam> params;
  for (size_t i = 0; i < fields->size(); i += kParamFields) {
    dsl::lower::KernelParam& p = params.emplace_back();
    const std::optional<dsl::ScalarType> scalar = dsl::parse_scalar_type((*fields)[i + 1]);
    const std::string& pointer = (*fields)[i + 2];
    if (!scalar || (pointer != "0" && pointer != "1") || !parse((*fields)[i + 4], p.size) ||
        !parse((*fields)[i + 5], p.alignment)) {
      return std::nullopt;
    }
    p.name = (*fields)[i];
    p.type = {*scalar, pointer == "1"};
    p.c_type = (*fields)[i + 3];
  }
  return params;
}

const std::string* field(const cache::Entry& entry, const std::string& name) {
  auto found = entry.metadata.find(name);
  return found != entry.metadata.end() ? &found->second : nullptr;
}

}  // namespace

std::optional<cache::KeyBuilder> direct_key(Jit& jit, const dsl::Program& program,
                                            const dsl::Target& target,
                                            const ProgramBuildOptions& options,
                                            const std::optional<std::string>& lowering_identity) {
  // A dump is asked of the lowering or of the compiler, which a direct entry would skip.
  if (!jit.config().direct_mode || !lowering_identity || options.lower.dump_after_each ||
      options.lower.line_directives || dsl::lower::line_info_requested() ||
      dsl::lower::dump_ir_requested() || !jit.config().dump_dir.empty()) {
    return std::nullopt;
  }
  absl::StatusOr<CompilerFacts> facts = jit.compiler_facts(target);
  if (!facts.ok()) return std::nullopt;
  cache::KeyBuilder key;
  key.add("record", kDirectVersion)
      .add("jit_version", kJitVersion)
      .add("generator_version", dsl::lower::kLoweringVersion)
      .add("lowering", *lowering_identity)
      .add("compiler", facts->key_identity)
      .add("target", target.str())
      .add("pointer_alignment", absl::StrCat(options.lower.pointer_alignment))
      .add_sorted("options", options.options)
      .add("program", dsl::to_text(program));
  return key;
}

std::optional<CompiledProgram> recall_direct(Jit& jit, const cache::KeyBuilder& key,
                                             const dsl::Program& program, const dsl::Target& target,
                                             const ProgramBuildOptions& options) {
  std::optional<cache::Entry> entry = jit.cache().lookup(key);
  if (!entry) return std::nullopt;
  const std::string *kernel = field(*entry, "kernel"), *launch_text = field(*entry, "launch"),
                    *params_text = field(*entry, "params"),
                    *build_key_hex = field(*entry, "build_key"),
                    *compiler = field(*entry, "compiler");
  if (kernel == nullptr || launch_text == nullptr || params_text == nullptr ||
      build_key_hex == nullptr || compiler == nullptr) {
    return std::nullopt;
  }
  std::optional<LaunchInfo> launch = decode_launch(*launch_text);
  std::optional<std::vector<dsl::lower::KernelParam>> params = decode_params(*params_text);
  std::optional<cache::Key> build_key = cache::Key::from_hex(*build_key_hex);
  if (!launch || !params || !build_key) return std::nullopt;
  // The build as make_build would have made it, but for the source, which nothing after a hit
  // reads.
  Build build(program.name, *kernel, "", target);
  build.options = options.options;
  build.generator_version = std::string(dsl::lower::kLoweringVersion);
  build.launch = *launch;
  build.policy = options.policy;
  absl::StatusOr<CompiledBuild> compiled =
      compiled_build(build, *build_key, std::move(*entry), *compiler, true);
  if (!compiled.ok()) return std::nullopt;
  return CompiledProgram{std::move(*compiled), std::move(*params)};
}

void remember_direct(Jit& jit, const cache::KeyBuilder& key, const Build& build,
                     const std::vector<dsl::lower::KernelParam>& params,
                     const CompiledBuild& compiled) {
  cache::Entry entry;
  entry.code_object = compiled.code_object;
  entry.resource_report = compiled.report.to_text();
  entry.compile_log = compiled.log;
  entry.metadata = {{"kernel", build.kernel_name},
                    {"target", build.target.str()},
                    {"build", build.name},
                    {"compiler", compiled.compiler},
                    {"build_key", compiled.key.hex()},
                    {"launch", encode_launch(build.launch)},
                    {"params", encode_params(params)}};
  jit.cache().store(key, entry).IgnoreError();  // a read-only cache only forgets
}

}  // namespace monotile::jit
