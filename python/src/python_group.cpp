// PythonGroup: the Group interface over a Python object's methods.
#include "python/src/python_group.h"

#include <nanobind/stl/string.h>

#include "absl/strings/str_cat.h"
#include "python/src/status_errors.h"

namespace monotile::python {
namespace {

int call_int(nb::handle group, const char* method) {
  nb::object value = group.attr(method);
  if (PyCallable_Check(value.ptr())) value = value();
  return nb::cast<int>(value);
}

}  // namespace

PythonGroup::PythonGroup(nb::object group) : group_(std::move(group)) {
  for (const char* method : {"rank", "size", "all_gather"}) {
    if (!nb::hasattr(group_, method)) {
      raise_refusal(absl::StrCat(
          "group: a ", nb::type_name(group_.type()).c_str(), " has no ", method,
          "(); expected a monotile.Group, monotile.vllm.Group(process_group) or an object "
          "with rank(), size() and all_gather(bytes) -> list[bytes]"));
    }
  }
  rank_ = call_int(group_, "rank");
  size_ = call_int(group_, "size");
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    raise_refusal(
        absl::StrCat("group: rank ", rank_, " of size ", size_, ": expected 0 <= rank < size"));
  }
}

absl::StatusOr<std::vector<std::string>> PythonGroup::all_gather(std::string_view bytes) {
  const std::string where = absl::StrCat("all_gather of a ", nb::type_name(group_.type()).c_str());
  std::vector<std::string> out;
  try {
    nb::object result = group_.attr("all_gather")(nb::bytes(bytes.data(), bytes.size()));
    for (nb::handle entry : result) {
      if (!nb::isinstance<nb::bytes>(entry)) {
        return absl::InternalError(absl::StrCat(
            where, ": returned a ", nb::type_name(entry.type()).c_str(), " entry, expected bytes"));
      }
      nb::bytes b = nb::borrow<nb::bytes>(entry);
      out.emplace_back(b.c_str(), b.size());
    }
  } catch (nb::python_error& error) {
    return absl::InternalError(absl::StrCat(where, " raised: ", python_error_text(error)));
  }
  if (static_cast<int>(out.size()) != size_) {
    return absl::InternalError(
        absl::StrCat(where, ": ", out.size(), " entries, expected the group's size ", size_));
  }
  return out;
}

GroupArgument group_argument(nb::handle object) {
  GroupArgument out;
  out.object = nb::borrow(object);
  if (nb::isinstance<runtime::decode::Group>(object)) {
    out.group = nb::cast<runtime::decode::Group*>(object);
  } else {
    out.wrapped = std::make_shared<PythonGroup>(nb::borrow(object));
    out.group = out.wrapped.get();
  }
  return out;
}

}  // namespace monotile::python
