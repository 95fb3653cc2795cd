// monotile.Group and agree: the TP ranks' one verdict.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "python/src/bindings.h"
#include "python/src/python_group.h"
#include "python/src/status_errors.h"
#include "runtime/decode/agree.h"
#include "runtime/decode/group.h"

namespace monotile::python {

using runtime::decode::Group;

void bind_group(nb::module_& m) {
  nb::class_<Group>(
      m, "Group",
      "The TP ranks that agree before a collective path starts. Every function taking a group also "
      "takes any object with rank(), size() and all_gather(bytes) -> list[bytes] "
      "(monotile.vllm.Group wraps a torch.distributed CPU group).")
      .def("rank", &Group::rank)
      .def("size", &Group::size)
      .def(
          "all_gather",
          [](Group& g, nb::bytes bytes) {
            std::vector<std::string> all =
                value(g.all_gather(std::string_view(bytes.c_str(), bytes.size())));
            nb::list out;
            for (const std::string& b : all) out.append(nb::bytes(b.data(), b.size()));
            return out;
          },
          nb::arg("data"), nb::sig("def all_gather(self, data: bytes) -> list[bytes]"),
          "Every rank's bytes, in rank order.");

  m.def("single_process_group", &runtime::decode::make_single_process_group, "World size 1.");
  m.def(
      "agree",
      [](const std::vector<std::string>& reasons, nb::handle group, const std::string& what) {
        GroupArgument g = group_argument(group);
        check(runtime::decode::agree(reasons, *g.group, what));
      },
      nb::arg("reasons"), nb::arg("group"), nb::arg("what"),
      nb::sig("def agree(reasons: list[str], group: object, what: str) -> None"),
      "One verdict on every rank: returns when no rank has reasons, else raises ValueError on "
      "every rank (its own "
      "reasons, or 'another TP rank refused (rank R)'). Every rank calls it at the same point.");
}

}  // namespace monotile::python
