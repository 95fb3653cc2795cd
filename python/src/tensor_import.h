// Tensors from Python by DLPack (torch, numpy, anything with __dlpack__ or the buffer protocol),
// zero-copy: the view is the producer's memory, its strides as given. Nothing is ever copied or
// made contiguous here; a strided or misaligned tensor reaches the library's checks as it is and
// is refused there. numpy has no bfloat16: a numpy uint16 array stands for bf16 bits.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "runtime/decode/tensor_view.h"

namespace monotile::python {

namespace nb = nanobind;

// Where a tensor lives, as DLPack numbers it (device type 1: CPU, 2: CUDA, 10: ROCm).
struct TensorDevice {
  int type = 1;
  int id = 0;
  bool operator==(const TensorDevice&) const = default;
};
// "cpu", "cuda:0", "rocm:1"
std::string device_text(TensorDevice device);

struct ImportedTensor {
  runtime::decode::TensorView view;
  TensorDevice device;
  bool numpy = false;  // a numpy array (outputs for it are numpy arrays too)
};

// `object` as a view. ValueError naming `what()` when it is not a tensor or its dtype has no
// counterpart (`what` is called only then: a launch imports its tensors on every call). The caller
// keeps `object` alive as long as the view is used.
ImportedTensor import_tensor(nb::handle object, absl::FunctionRef<std::string()> what);
inline ImportedTensor import_tensor(nb::handle object, std::string_view what) {
  return import_tensor(object, [what] { return std::string(what); });
}

// ValueError unless `tensor` is on `device`: "<what> is on cuda:0, expected cpu (the executor's
// device)".
void check_device(const ImportedTensor& tensor, TensorDevice device,
                  absl::FunctionRef<std::string()> what);
inline void check_device(const ImportedTensor& tensor, TensorDevice device, std::string_view what) {
  check_device(tensor, device, [what] { return std::string(what); });
}

}  // namespace monotile::python
