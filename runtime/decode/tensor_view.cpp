// TensorView's density and alignment tests and its text form.
#include "runtime/decode/tensor_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/str_cat.h"

namespace monotile::runtime::decode {

int64_t TensorView::elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

bool TensorView::contiguous() const {
  if (strides.size() != shape.size()) return false;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string misalignment(uint64_t address) {
  if (address % kKernelPointerAlignment == 0) return "";
  return absl::StrCat(
      " starts at byte address 0x", absl::Hex(address), ", not a multiple of ",
      kKernelPointerAlignment, " (the kernels read it in ", kKernelPointerAlignment,
      "-byte vectors: give it its own allocation, or an offset into one that is a multiple of ",
      kKernelPointerAlignment, " bytes)");
}

TensorView TensorView::dense(model::Dtype dtype, std::vector<int64_t> shape, uint64_t data) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return TensorView{data, dtype, std::move(shape), std::move(strides)};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return model::str_cat("[", absl::StrJoin(shape, ", "), "]");
}

std::string describe(const TensorView& view) {
  return model::str_cat(model::dtype_name(view.dtype), " ", shape_text(view.shape), " strides ",
                        shape_text(view.strides));
}

}  // namespace monotile::runtime::decode
