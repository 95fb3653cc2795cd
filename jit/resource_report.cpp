// ResourceReport's text form: "key=value" lines in a fixed order; parsing ignores unknown keys.
#include "jit/resource_report.h"

#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

// The fields in text order, as (name, int member) and (name, int64 member) pairs.
struct IntField {
  std::string_view name;
  int ResourceReport::*member;
};
struct Int64Field {
  std::string_view name;
  int64_t ResourceReport::*member;
};
constexpr IntField kIntFields[] = {
    {"registers", &ResourceReport::registers},
    {"agprs", &ResourceReport::agprs},
    {"sgprs", &ResourceReport::sgprs},
    {"spill_stores", &ResourceReport::spill_stores},
    {"spill_loads", &ResourceReport::spill_loads},
    {"sgpr_spills", &ResourceReport::sgpr_spills},
};
constexpr Int64Field kInt64Fields[] = {
    {"stack_frame", &ResourceReport::stack_frame},
    {"shared_memory", &ResourceReport::shared_memory},
};
constexpr IntField kTrailingFields[] = {
    {"wavefront_size", &ResourceReport::wavefront_size},
    {"max_threads_per_block", &ResourceReport::max_threads_per_block},
};

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::string ResourceReport::to_text() const {
  std::string text;
  for (const IntField& field : kIntFields) absl::StrAppend(&text, to_absl(field.name), "=", this->*field.member, "\n");
  for (const Int64Field& field : kInt64Fields) absl::StrAppend(&text, to_absl(field.name), "=", this->*field.member, "\n");
  for (const IntField& field : kTrailingFields) absl::StrAppend(&text, to_absl(field.name), "=", this->*field.member, "\n");
  return text;
}

absl::StatusOr<ResourceReport> ResourceReport::from_text(std::string_view text) {
  ResourceReport report;
  for (absl::string_view line : absl::StrSplit(to_absl(text), '\n', absl::SkipEmpty())) {
    size_t equals = line.find('=');
    if (equals == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("resource report: line \"", line, "\" is not key=value"));
    }
    std::string_view key = to_std(line.substr(0, equals));
    std::string_view value = to_std(line.substr(equals + 1));
    bool known = false;
    bool parsed = true;
    for (const IntField& field : kIntFields) {
      if (field.name == key) known = true, parsed = parse_number(value, report.*field.member);
    }
    for (const IntField& field : kTrailingFields) {
      if (field.name == key) known = true, parsed = parse_number(value, report.*field.member);
    }
    for (const Int64Field& field : kInt64Fields) {
      if (field.name == key) known = true, parsed = parse_number(value, report.*field.member);
    }
    if (known && !parsed) {
      return absl::InvalidArgumentError(absl::StrCat("resource report: value of \"", to_absl(key),
                                                     "\" is not an integer: \"", to_absl(value), "\""));
    }
  }
  return report;
}

std::string ResourceReport::summary() const {
  std::string text = absl::StrCat("regs ", registers);
  if (agprs > 0 || sgprs > 0) absl::StrAppend(&text, ", agprs ", agprs, ", sgprs ", sgprs);
  absl::StrAppend(&text, ", spill stores ", spill_stores, ", spill loads ", spill_loads);
  if (sgpr_spills > 0) absl::StrAppend(&text, ", sgpr spills to vgpr lanes ", sgpr_spills);
  absl::StrAppend(&text, ", stack ", stack_frame, " B, smem ", shared_memory, " B");
  if (wavefront_size > 0) absl::StrAppend(&text, ", wave ", wavefront_size);
  return text;
}

}  // namespace monotile::jit
