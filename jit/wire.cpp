// Field encoding: "<name> <length>\n<bytes>\n" repeated; decoding checks every length and name.
#include "jit/wire.h"

#include <charconv>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

void put(std::string& out, std::string_view name, std::string_view value) {
  absl::StrAppend(&out, to_absl(name), " ", value.size(), "\n", to_absl(value), "\n");
}

// The fields in order; repeated names (options, headers) keep every value.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> split_fields(std::string_view bytes) {
  std::vector<std::pair<std::string, std::string>> fields;
  while (!bytes.empty()) {
    size_t space = bytes.find(' ');
    size_t newline = bytes.find('\n');
    if (space == std::string_view::npos || newline == std::string_view::npos || space > newline) {
      return absl::DataLossError("compile message: malformed field header");
    }
    size_t length = 0;
    auto [end, error] = std::from_chars(bytes.data() + space + 1, bytes.data() + newline, length);
    if (error != std::errc() || end != bytes.data() + newline || bytes.size() - newline - 1 < length + 1) {
      return absl::DataLossError("compile message: bad field length");
    }
    fields.emplace_back(std::string(bytes.substr(0, space)), std::string(bytes.substr(newline + 1, length)));
    bytes.remove_prefix(newline + 1 + length + 1);
  }
  return fields;
}

int to_int(std::string_view text) {
  int value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

}  // namespace

std::string encode_request(const CompileRequest& request) {
  std::string out;
  put(out, "target", request.target.str());
  put(out, "kernel_name", request.kernel_name);
  put(out, "build_name", request.build_name);
  put(out, "source", request.source);
  for (const std::string& option : request.options) put(out, "option", option);
  for (const Header& header : request.headers) {
    put(out, "header_name", header.name);
    put(out, "header_content", header.content);
  }
  put(out, "want_assembly", request.want_assembly ? "1" : "0");
  put(out, "test_sleep_seconds", absl::StrCat(request.test_sleep_seconds));
  return out;
}

absl::StatusOr<CompileRequest> decode_request(std::string_view bytes) {
  MT_ASSIGN_OR_RETURN(auto fields, split_fields(bytes));
  if (fields.empty() || fields[0].first != "target") return absl::DataLossError("compile request: no target");
  MT_ASSIGN_OR_RETURN(dsl::Target target, dsl::Target::parse(fields[0].second));
  CompileRequest request{.target = target};
  for (size_t i = 1; i < fields.size(); ++i) {
    const auto& [name, value] = fields[i];
    if (name == "kernel_name") request.kernel_name = value;
    else if (name == "build_name") request.build_name = value;
    else if (name == "source") request.source = value;
    else if (name == "option") request.options.push_back(value);
    else if (name == "header_name") request.headers.push_back({value, {}});
    else if (name == "header_content" && !request.headers.empty()) request.headers.back().content = value;
    else if (name == "want_assembly") request.want_assembly = value == "1";
    else if (name == "test_sleep_seconds") request.test_sleep_seconds = std::stod(value);
    else return absl::DataLossError(absl::StrCat("compile request: unknown field \"", name, "\""));
  }
  return request;
}

std::string encode_result(const absl::StatusOr<CompileResult>& result) {
  std::string out;
  if (!result.ok()) {
    put(out, "code", absl::StrCat(static_cast<int>(result.status().code())));
    put(out, "message", to_std(result.status().message()));
    return out;
  }
  put(out, "code", "0");
  put(out, "code_object", result->code_object);
  put(out, "log", result->log);
  put(out, "report", result->report.to_text());
  put(out, "assembly", result->assembly);
  return out;
}

absl::StatusOr<CompileResult> decode_result(std::string_view bytes) {
  MT_ASSIGN_OR_RETURN(auto fields, split_fields(bytes));
  std::map<std::string, std::string> named(fields.begin(), fields.end());
  if (!named.contains("code")) return absl::DataLossError("compile result: no status code");
  int code = to_int(named["code"]);
  if (code != 0) return absl::Status(static_cast<absl::StatusCode>(code), named["message"]);
  CompileResult result;
  result.code_object = named["code_object"];
  result.log = named["log"];
  result.assembly = named["assembly"];
  MT_ASSIGN_OR_RETURN(result.report, ResourceReport::from_text(named["report"]));
  return result;
}

}  // namespace monotile::jit
