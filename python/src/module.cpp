// monotile._monotile: the executor (SpecializedDecode) and its host-side checks, for a Python host
// such as vLLM. `import monotile` re-exports it with the pure-Python parts (monotile.vllm).
#include <nanobind/nanobind.h>

#include "python/src/bindings.h"
#include "support/version.h"

NB_MODULE(_monotile, m) {
  namespace py = monotile::python;
  m.doc() = "monotile's Kimi-K3 specialized decode: the executor SpecializedDecode and its checks.";
  m.attr("__version__") = monotile::version();
  py::bind_device(m);
  py::bind_group(m);
  py::bind_decode_checks(m);
  py::bind_executor(m);
  nanobind::module_ testing =
      m.def_submodule("testing",
                      "Helpers for tests and benchmarks: seeded K3 weights as "
                      "arrays, the float64 check of one layer.");
  py::bind_testing(testing);
}
