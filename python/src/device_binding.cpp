// monotile.Device: the CPU interpreter, a GPU found by discovery, or (for measuring the host path)
// a device that counts launches instead of running them.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include "absl/strings/str_cat.h"
#include "python/src/bindings.h"
#include "python/src/device_handle.h"
#include "python/src/status_errors.h"
#include "runtime/device_cpu.h"
#include "runtime/discovery.h"
#include "runtime/interpreter_module.h"

namespace monotile::python {

std::shared_ptr<DeviceHandle> make_cpu_handle() {
  auto handle = std::make_shared<DeviceHandle>();
  handle->device =
      runtime::make_cpu_device(runtime::interpreter_loader(runtime::ProgramCatalog::process()));
  handle->tensors = {1, 0};
  return handle;
}

std::shared_ptr<DeviceHandle> make_gpu_handle(TensorDevice wanted) {
  const dsl::Vendor vendor = wanted.type == 10 ? dsl::Vendor::kAmd : dsl::Vendor::kNvidia;
  runtime::Discovery found = runtime::discover_devices({.include_cpu = false});
  for (std::unique_ptr<runtime::Device>& device : found.devices) {
    if (device->info().vendor == vendor && device->info().ordinal == wanted.id) {
      auto handle = std::make_shared<DeviceHandle>();
      handle->device = std::move(device);
      handle->tensors = wanted;
      return handle;
    }
  }
  throw std::runtime_error(absl::StrCat("no device for tensors on ", device_text(wanted), ": ",
                                        runtime::no_gpu_reason(found)));
}

void bind_device(nb::module_& m) {
  nb::class_<DeviceHandle>(
      m, "Device",
      "A device the executor runs on: the CPU interpreter or a GPU (CUDA or ROCm), reached "
      "through its driver loaded at run time.")
      .def_prop_ro(
          "name", [](const DeviceHandle& d) { return runtime::describe(d.device->info()); },
          "As messages name it: 'cpu device \"cpu interpreter\" (cpu)', 'nvidia device 0 ...'.")
      .def_prop_ro(
          "target", [](const DeviceHandle& d) { return d.device->info().target.str(); },
          "What code for it is compiled for: 'sm_90a', 'gfx942:sramecc+:xnack-', 'cpu'.")
      .def_prop_ro("compute_units",
                   [](const DeviceHandle& d) { return d.device->info().compute_units; })
      .def_prop_ro(
          "dlpack_device",
          [](const DeviceHandle& d) { return nb::make_tuple(d.tensors.type, d.tensors.id); },
          "(DLPack device type, id): every tensor given to an executor on it must be there.")
      .def_prop_ro(
          "launches",
          [](const DeviceHandle& d) -> nb::object {
            if (!d.counting) return nb::none();
            return nb::int_(d.counting->launches());
          },
          "Launches counted so far (the launch-counting device), else None.")
      .def("__repr__", [](const DeviceHandle& d) {
        return absl::StrCat("<monotile.Device ", runtime::describe(d.device->info()), ">");
      });

  m.def("cpu_device", &make_cpu_handle,
        "The CPU interpreter's device: the executor runs without a GPU.");
  m.def(
      "gpu_device",
      [](const std::string& kind, int index) {
        if (kind != "cuda" && kind != "rocm")
          raise_refusal(
              absl::StrCat("gpu_device: kind \"", kind, "\": expected \"cuda\" or \"rocm\""));
        return make_gpu_handle({kind == "cuda" ? 2 : 10, index});
      },
      nb::arg("kind") = "cuda", nb::arg("index") = 0,
      "The GPU that torch calls `kind:index` (RuntimeError saying why when there is none).");
  m.def(
      "launch_counting_device",
      []() {
        auto handle = std::make_shared<DeviceHandle>();
        auto counting =
            std::make_unique<runtime::decode::LaunchCountingDevice>(runtime::make_cpu_device(
                runtime::interpreter_loader(runtime::ProgramCatalog::process())));
        handle->counting = counting.get();
        handle->device = std::move(counting);
        handle->tensors = {1, 0};
        return handle;
      },
      "The CPU device with launches counted and not run: what a step costs the host, alone "
      "(benchmarks).");
}

}  // namespace monotile::python
