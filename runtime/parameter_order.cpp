// Parameter orders; see parameter_order.h.
#include "runtime/parameter_order.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::runtime {

std::vector<std::string> parameter_names(const Kernel& kernel) {
  std::vector<std::string> names;
  for (const dsl::lower::KernelParam& param : kernel.params()) names.push_back(param.name);
  return names;
}

absl::StatusOr<ParameterOrder> ParameterOrder::resolve(std::vector<std::string> parameters,
                                                       std::span<const NamedArgument> table,
                                                       std::string_view what) {
  ParameterOrder order;
  order.table_size_ = table.size();
  for (size_t i = 0; i < table.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (table[j].name == table[i].name) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the binding of ", to_absl(what), " names \"", to_absl(table[i].name), "\" twice"));
      }
    }
  }
  for (const std::string& parameter : parameters) {
    auto found = std::find_if(table.begin(), table.end(),
                              [&](const NamedArgument& entry) { return entry.name == parameter; });
    if (found == table.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(to_absl(what), " has a parameter \"", parameter,
                       "\" that its binding does not pass; hint: add it to the "
                       "binding's table of arguments"));
    }
    order.positions_.push_back(static_cast<uint16_t>(found - table.begin()));
  }
  order.parameters_ = std::move(parameters);
  return order;
}

LaunchArguments ParameterOrder::arrange(std::span<const NamedArgument> table) const {
  MT_CHECK(table.size() == table_size_,
           "a launch's table of arguments differs from the one resolved");
  LaunchArguments arguments;
  for (uint16_t position : positions_) arguments.push_back(table[position].value);
  return arguments;
}

absl::Status ParameterOrder::check(const Kernel& kernel,
                                   absl::FunctionRef<std::string()> what) const {
  const std::vector<dsl::lower::KernelParam>& params = kernel.params();
  const bool same = params.size() == parameters_.size() &&
                    std::equal(params.begin(), params.end(), parameters_.begin(),
                               [](const dsl::lower::KernelParam& param, const std::string& name) {
                                 return param.name == name;
                               });
  if (same) return absl::OkStatus();
  std::vector<std::string> got;
  for (const dsl::lower::KernelParam& param : params) got.push_back(param.name);
  return absl::InvalidArgumentError(absl::StrCat(
      "kernel \"", kernel.name(), "\" is not ", what(), ": parameters (", absl::StrJoin(got, ", "),
      "), expected (", absl::StrJoin(parameters_, ", "), ")"));
}

}  // namespace monotile::runtime
