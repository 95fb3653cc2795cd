// A launch binding's arguments in its build's parameter order, resolved once. A binding (K1Launch,
// K2Launch) names every value it can pass in a table; a build's parameters pick theirs from it by
// name when the launch is made, so that each later launch places its values by position: no name is
// looked up and, with at most kInlineArguments parameters, nothing is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/kernel.h"

namespace monotile::runtime {

// A binding's value and the parameter name it is for. The name is a string literal: the table is
// made in code on every launch, and a string_view keeps that free.
struct NamedArgument {
  std::string_view name;
  KernelArgument value;
};

// A loaded kernel's parameter names, in order.
std::vector<std::string> parameter_names(const Kernel& kernel);

class ParameterOrder {
 public:
  // Where each of `parameters` (a build's, in order) sits in `table` (a binding's).
  // InvalidArgument, naming `what` ("K1 of build \"...\""), for a parameter the table lacks or a
  // name it holds twice.
  static absl::StatusOr<ParameterOrder> resolve(std::vector<std::string> parameters,
                                                std::span<const NamedArgument> table,
                                                std::string_view what);

  // The values of `table`, a table of the same names in the same order as resolve's, in parameter
  // order.
  LaunchArguments arrange(std::span<const NamedArgument> table) const;

  // OK when `kernel`'s parameters are these, by name; else InvalidArgument naming the kernel,
  // what() and both lists. It allocates only to write that message.
  absl::Status check(const Kernel& kernel, absl::FunctionRef<std::string()> what) const;

  const std::vector<std::string>& parameters() const { return parameters_; }

 private:
  std::vector<std::string> parameters_;
  std::vector<uint16_t> positions_;  // positions_[i]: parameter i's entry in the table
  size_t table_size_ = 0;
};

}  // namespace monotile::runtime
