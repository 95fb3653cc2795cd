// The Python objects of the executor and what each keeps alive: a Backbone its weights, an executor
// its backbone, device, group and bound caches, a Step its executor and metadata, a layer launch
// its step. The library reads every tensor in place, so a view lives exactly as long as its owner
// here.
#pragma once

#include <nanobind/nanobind.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model/config.h"
#include "python/src/device_handle.h"
#include "python/src/host_registration.h"
#include "python/src/python_group.h"
#include "python/src/tensor_import.h"
#include "runtime/decode/specialized_decode.h"

namespace monotile::python {

namespace nb = nanobind;

struct BackboneObject {
  nb::object config;  // the monotile.ModelConfig backbone.config points into
  runtime::decode::Backbone backbone;
  std::vector<nb::object> tensors;     // every weight's Python object
  std::optional<TensorDevice> device;  // the first weight's device (None: no weights)
};

// One layer's speculative-decode metadata (runtime::decode::SpecMetadata) and its tensors' owners.
struct SpecMetadataObject {
  runtime::decode::SpecMetadata meta;
  nb::object spec_state_indices, num_accepted_tokens, spec_query_start_loc;
  std::optional<TensorDevice> device;  // of the first tensor given
};

struct KdaCacheObject {
  runtime::decode::KdaCache cache;
  nb::object conv, recurrent;
  TensorDevice device;
};

// The arguments of the layer launch running now, for the MLA layers' host attention callback.
struct CurrentCall {
  nb::handle positions, prefix_sum, block_residual, prefix_delta;
  int width = 0;
  nb::object core;  // the callback's result, alive until the launch returns
  HostRegistration core_registration;
};

struct ExecutorObject {
  std::shared_ptr<DeviceHandle> device;
  nb::object backbone;
  GroupArgument group;
  // Shared with output_owner, so that a tensor handed out keeps the buffers it views.
  std::shared_ptr<runtime::decode::SpecializedDecode> decode;
  // The stream the executor enqueues on: `stream_source()`'s native handle, read when a step is
  // planned, prepare_kv binds or after_step votes (a GPU executor's default source is torch's
  // current stream, so that torch.cuda.CUDAGraph captures the step); without a source, own_stream.
  nb::object stream_source;
  runtime::Stream own_stream;
  nb::object attention;            // the host's MLA half, or None
  std::vector<nb::object> caches;  // the last prepare_kv's KdaCache objects
  CurrentCall call;
  // The io.attention every MLA launch gets: calls `attention` with `call`'s arguments.
  std::function<absl::StatusOr<runtime::DevicePtr>(int, const runtime::decode::LayerIo&,
                                                   runtime::Stream&)>
      attention_hook;
  // The executor's output buffers as the tensors handed out: by (address, width, numpy or not).
  // Their owner is output_owner (a capsule holding the executor's device and decode, not this
  // object): the executor holds the tensors, so they must not hold it back.
  std::map<std::tuple<uint64_t, int, bool>, nb::object> outputs;
  nb::object output_owner;
  const model::ModelConfig* config = nullptr;
  model::RankDims dims;
  // Last, so dropped first: the weights' and the bound caches' registrations with the CPU device.
  std::vector<HostRegistration> weight_registrations, cache_registrations;

  // Whether `address` is one of the executor's output buffers (device memory it allocated).
  bool owns(uint64_t address) const;
};

struct StepObject {
  nb::object executor_object;  // keeps `executor` alive
  ExecutorObject* executor = nullptr;
  std::unique_ptr<runtime::decode::AttnMetadata> metadata;
  nb::object metadata_owner;  // the routing layer's SpecMetadata
  std::optional<runtime::decode::Step> step;
  runtime::Stream stream;  // the host's stream when the step was planned: its launches go there
  std::vector<HostRegistration> registrations;  // the metadata's, with the CPU device
};

struct LayerObject {
  nb::object step_object;
  StepObject* step = nullptr;
  std::optional<runtime::decode::LayerLaunch> launch;
  int layer = 0;
};

// The stream that is current for the executor now, wrapped (not owned).
runtime::Stream current_stream(ExecutorObject& executor);

// The routing layer's entry of a dict {layer name: SpecMetadata} (the only entry plan and the
// launches read) in a map that stays put, or nothing for None; `owner` keeps its tensors alive.
std::unique_ptr<runtime::decode::AttnMetadata> metadata_argument(nb::handle attn_metadata,
                                                                 const std::string& kda_prefix,
                                                                 nb::object& owner);

// The launch: (positions, prefix_sum, block_residual, prefix_delta) -> (prefix_sum, block_residual,
// out).
nb::object call_layer(LayerObject& self, nb::handle positions, nb::handle prefix_sum,
                      nb::handle block_residual, nb::handle prefix_delta);

// The executor's output buffer at `address` as a bf16 [width, hidden] tensor: numpy (uint16 bits)
// or torch, made once and handed out again after.
nb::object output_tensor(ExecutorObject& executor, uint64_t address, int width, bool numpy);

}  // namespace monotile::python
