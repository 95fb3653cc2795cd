// DLPack to TensorView: dtype by code and bits, shape and strides in elements, the data address
// with the producer's byte offset applied.
#include "python/src/tensor_import.h"

#include <nanobind/ndarray.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "python/src/status_errors.h"
#include "support/strings.h"

namespace monotile::python {
namespace {

using model::Dtype;

std::optional<Dtype> dtype_of(nb::dlpack::dtype dtype, bool numpy) {
  if (dtype.lanes != 1) return std::nullopt;
  using Code = nb::dlpack::dtype_code;
  switch (static_cast<Code>(dtype.code)) {
    case Code::Bfloat:
      if (dtype.bits == 16) return Dtype::kBF16;
      break;
    case Code::Float:
      if (dtype.bits == 16) return Dtype::kF16;
      if (dtype.bits == 32) return Dtype::kF32;
      if (dtype.bits == 64) return Dtype::kF64;
      break;
    case Code::Int:
      if (dtype.bits == 8) return Dtype::kI8;
      if (dtype.bits == 16) return Dtype::kI16;
      if (dtype.bits == 32) return Dtype::kI32;
      if (dtype.bits == 64) return Dtype::kI64;
      break;
    case Code::UInt:
      if (dtype.bits == 8) return Dtype::kU8;
      if (dtype.bits == 16) return numpy ? Dtype::kBF16 : Dtype::kU16;
      if (dtype.bits == 32) return Dtype::kU32;
      if (dtype.bits == 64) return Dtype::kU64;
      break;
    case Code::Bool:
      return Dtype::kBool;
    default:
      break;
  }
  return std::nullopt;
}

bool is_numpy_array(nb::handle object) {
  return std::strcmp(Py_TYPE(object.ptr())->tp_name, "numpy.ndarray") == 0;
}

}  // namespace

std::string device_text(TensorDevice device) {
  switch (device.type) {
    case 1:
      return "cpu";
    case 2:
      return absl::StrCat("cuda:", device.id);
    case 10:
      return absl::StrCat("rocm:", device.id);
    default:
      return absl::StrCat("DLPack device type ", device.type, ":", device.id);
  }
}

ImportedTensor import_tensor(nb::handle object, absl::FunctionRef<std::string()> what) {
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(object, array, /*convert=*/false)) {
    // torch refuses to export a tensor that requires grad (a parameter): say so, not just "found".
    const bool grad =
        nb::hasattr(object, "requires_grad") && nb::bool_(object.attr("requires_grad"));
    raise_refusal(absl::StrCat(
        what(), ": expected a tensor (torch, numpy or any DLPack producer), found ",
        nb::type_name(object.type()).c_str(),
        grad ? "; hint: a tensor that requires grad cannot cross DLPack: pass tensor.detach() (a "
               "view of the same memory)"
             : ""));
  }
  ImportedTensor out;
  out.numpy = is_numpy_array(object);
  const std::optional<Dtype> dtype = dtype_of(array.dtype(), out.numpy);
  if (!dtype) {
    raise_refusal(absl::StrCat(what(), ": DLPack dtype (code ", int{array.dtype().code}, ", ",
                               int{array.dtype().bits}, " bits, ", int{array.dtype().lanes},
                               " lanes) has no monotile counterpart"));
  }
  out.view.dtype = *dtype;
  out.view.data = reinterpret_cast<uint64_t>(array.data());
  out.view.shape.resize(array.ndim());
  out.view.strides.resize(array.ndim());
  for (size_t d = 0; d < array.ndim(); ++d) {
    out.view.shape[d] = static_cast<int64_t>(array.shape(d));
    out.view.strides[d] = array.stride(d);
  }
  out.device = {array.device_type(), array.device_id()};
  return out;
}

void check_device(const ImportedTensor& tensor, TensorDevice device,
                  absl::FunctionRef<std::string()> what) {
  if (tensor.device == device) return;
  raise_refusal(absl::StrCat(
      what(), " is on ", device_text(tensor.device), ", expected ", device_text(device),
      " (the executor's device); hint: move it there, the executor never copies"));
}

}  // namespace monotile::python
