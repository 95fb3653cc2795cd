// The pieces of the `monotile._monotile` module, each binding one part of the library.
#pragma once

#include <nanobind/nanobind.h>

namespace monotile::python {

namespace nb = nanobind;

void bind_device(nb::module_& m);         // Device, cpu_device, gpu_device, launch_counting_device
void bind_group(nb::module_& m);          // Group, single_process_group, agree
void bind_decode_checks(nb::module_& m);  // configs, Backbone, KdaCache, SpecMetadata, the reasons
void bind_executor(nb::module_& m);       // SpecializedDecode, Step, LayerLaunch
void bind_testing(
    nb::module_& m);  // the testing submodule: seeded weights, the float64 layer check

}  // namespace monotile::python
