// Step.layer(i)'s callable: the seed's layer signature over LayerLaunch. Every tensor is checked
// (device, dtype, shape, strides) before anything is enqueued; the prefix and blocks are updated in
// place and returned as given, `out` is the executor's buffer of this layer's MoE output.
#include <nanobind/ndarray.h>

#include "absl/strings/str_cat.h"
#include "python/src/executor_object.h"
#include "python/src/host_registration.h"
#include "python/src/status_errors.h"
#include "runtime/decode/tensor_view.h"
#include "support/strings.h"

namespace monotile::python {
namespace {

using runtime::decode::TensorView;

// The kernels read every row of the blocks in 16-byte vectors: 8 bf16.
constexpr int64_t kVectorElements = runtime::decode::kKernelPointerAlignment / 2;

// ValueError: `layer 3 prefix_sum: expected BF16 [4, 256] contiguous, found F32 [4, 256] strides
// [256, 1]`.
[[noreturn]] void refuse(int layer, std::string_view what, std::string_view expected,
                         const TensorView& found, std::string_view hint = {}) {
  raise_refusal(absl::StrCat("layer ", layer, " ", to_absl(what), ": expected ", to_absl(expected),
                             ", found ", runtime::decode::describe(found),
                             hint.empty() ? "" : "; hint: ", to_absl(hint)));
}

// A bf16 [width, hidden] row-major tensor on the executor's device.
ImportedTensor rows(const ExecutorObject& executor, int layer, nb::handle object,
                    std::string_view what, int width, int64_t columns) {
  auto where = [&] { return absl::StrCat("layer ", layer, " ", to_absl(what)); };
  ImportedTensor t = import_tensor(object, where);
  check_device(t, executor.device->tensors, where);
  const std::vector<int64_t>& s = t.view.shape;
  const bool shaped = s.size() == 2 && s[0] == width && s[1] == columns;
  if (t.view.dtype != model::Dtype::kBF16 || !shaped || !t.view.contiguous()) {
    refuse(layer, what, absl::StrCat("BF16 [", width, ", ", columns, "] contiguous"), t.view,
           t.view.contiguous() ? std::string_view{}
                               : "the kernels read it in place: pass a contiguous tensor");
  }
  return t;
}

}  // namespace

bool ExecutorObject::owns(uint64_t address) const {
  for (const auto& [key, tensor] : outputs) {
    if (std::get<0>(key) == address) return true;
  }
  return false;
}

nb::object output_tensor(ExecutorObject& executor, uint64_t address, int width, bool numpy) {
  nb::handle owner = executor.output_owner;
  const auto key = std::make_tuple(address, width, numpy);
  if (auto found = executor.outputs.find(key); found != executor.outputs.end())
    return found->second;
  const size_t shape[2] = {static_cast<size_t>(width),
                           static_cast<size_t>(executor.config->hidden_size)};
  nb::object tensor;
  if (numpy) {
    tensor = nb::cast(
        nb::ndarray<nb::numpy, uint16_t>(reinterpret_cast<void*>(address), 2, shape, owner));
  } else {
    const nb::dlpack::dtype bf16{static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
    tensor = nb::cast(nb::ndarray<nb::pytorch>(reinterpret_cast<void*>(address), 2, shape, owner,
                                               nullptr, bf16, executor.device->tensors.type,
                                               executor.device->tensors.id));
  }
  executor.outputs.emplace(key, tensor);
  return tensor;
}

nb::object call_layer(LayerObject& self, nb::handle positions, nb::handle prefix_sum,
                      nb::handle block_residual, nb::handle prefix_delta) {
  ExecutorObject& executor = *self.step->executor;
  const int layer = self.layer;
  const int width = self.step->step->width();
  const int64_t hidden = executor.config->hidden_size;

  const ImportedTensor prefix = rows(executor, layer, prefix_sum, "prefix_sum", width, hidden);
  ImportedTensor blocks = import_tensor(
      block_residual, [&] { return absl::StrCat("layer ", layer, " block_residual"); });
  check_device(blocks, executor.device->tensors,
               [&] { return absl::StrCat("layer ", layer, " block_residual"); });
  const int block_count = executor.config->block_count();
  const TensorView& b = blocks.view;
  if (b.dtype != model::Dtype::kBF16 || b.shape.size() != 3 || b.shape[0] != width ||
      b.shape[1] < block_count || b.shape[2] != hidden || b.strides[2] != 1 ||
      b.strides[1] < hidden || b.strides[0] < b.shape[1] * b.strides[1] ||
      b.strides[1] % kVectorElements != 0 || b.strides[0] % kVectorElements != 0) {
    refuse(layer, "block_residual",
           absl::StrCat(
               "BF16 [", width, ", >= ", block_count, ", ", hidden,
               "] with the last dimension dense, blocks not overlapping, strides multiples of ",
               kVectorElements, " (16 bytes)"),
           b);
  }
  runtime::decode::LayerIo io;
  io.prefix = prefix.view.data;
  io.blocks = b.data;
  io.blocks_token_stride = b.strides[0];
  io.blocks_block_stride = b.strides[1];
  // The CPU interpreter reaches the host's tensors only while they are registered (the executor's
  // own output buffers are its device's memory already).
  HostRegistration registrations[3];
  registrations[0] = HostRegistration::make(
      *executor.device, prefix.view, [&] { return absl::StrCat("layer ", layer, " prefix_sum"); });
  registrations[1] = HostRegistration::make(
      *executor.device, b, [&] { return absl::StrCat("layer ", layer, " block_residual"); });
  if (!prefix_delta.is_none()) {
    const ImportedTensor delta = rows(executor, layer, prefix_delta, "prefix_delta", width, hidden);
    io.delta = delta.view.data;
    if (!executor.owns(io.delta)) {
      registrations[2] = HostRegistration::make(*executor.device, delta.view, [&] {
        return absl::StrCat("layer ", layer, " prefix_delta");
      });
    }
  }
  if (executor.attention.is_valid() && !executor.attention.is_none())
    io.attention = executor.attention_hook;

  executor.call = {positions, prefix_sum, block_residual, prefix_delta, width, nb::object(), {}};
  const absl::Status launched = (*self.launch)(io, self.step->stream);
  executor.call = {};
  check(launched);
  nb::object out = output_tensor(executor, io.delta, width, prefix.numpy);
  return nb::make_tuple(prefix_sum, block_residual, out);
}

}  // namespace monotile::python
