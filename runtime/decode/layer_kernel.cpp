// A served layer's launches in a step (the seed's WholeLayer.launch and FfnLayer.launch).
#include "runtime/decode/runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/decode/tensor_view.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

absl::Status LayerKernel::launch(const Runner& runner, const SpecMetadata& meta, int width, LayerIo& io,
                                 Stream& stream) const {
  // Every refusal comes before the first enqueue, so a refused layer leaves the step untouched.
  if (io.delta == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer ", layer, ": no pending delta; expected the previous layer's MoE output (a served layer ",
        "always follows another layer); hint: pass the output `delta` of the previous layer's launch"));
  }
  const std::pair<const char*, uint64_t> pointers[] = {{"prefix", io.prefix},
                                                       {"blocks", io.blocks},
                                                       {"delta", io.delta},
                                                       {"spec_state_indices", meta.spec_state_indices.data},
                                                       {"num_accepted_tokens", meta.num_accepted_tokens.data}};
  for (const auto& [name, address] : pointers) {
    if (std::string off = misalignment(address); !off.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("layer ", layer, ": ", name, off));
    }
  }
  if (kind == model::ServedKind::kFfn && !io.attention) {
    return absl::InvalidArgumentError(absl::StrCat("layer ", layer,
                                                   " is an MLA layer: LayerIo::attention is empty; expected the "
                                                   "host's AttnRes and attention up to o_proj"));
  }
  const K1Entry* k1_entry = nullptr;
  if (kind == model::ServedKind::kWhole) {
    auto found = k1_entries.find({width, state_len});
    if (found == k1_entries.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "layer ", layer, ": no K1 build for width ", width, " and conv state_len ", state_len,
          "; hint: call prepare_kv after every KV-cache bind (it compiles what a binding needs)"));
    }
    k1_entry = found->second;
  }
  const K2Entry& k2_entry = *k2_entries.at(width);

  if (first) {
    const KernelArgument epoch =
        KernelArgument::pointer(reinterpret_cast<const void*>(runner.state().epoch()), dsl::ScalarType::kI32);
    MT_RETURN_IF_ERROR(runner.step_begin().launch(Dim3{1, 1, 1}, std::span(&epoch, 1), stream));
  }
  K2Tensors t2 = k2;
  t2.prefix = io.prefix;
  t2.blocks = io.blocks;
  t2.blocks_token_stride = io.blocks_token_stride;
  t2.blocks_block_stride = io.blocks_block_stride;
  t2.out = runner.out(layer);
  t2.route_experts = runner.route_experts();
  t2.route_weights = runner.route_weights();
  if (kind == model::ServedKind::kWhole) {
    K1Tensors t1 = k1;
    t1.prefix = io.prefix;
    t1.delta = io.delta;
    t1.blocks = io.blocks;
    t1.blocks_token_stride = io.blocks_token_stride;
    t1.blocks_block_stride = io.blocks_block_stride;
    t1.state_indices = meta.spec_state_indices.data;
    t1.state_indices_stride = meta.spec_state_indices.strides.empty() ? 0 : meta.spec_state_indices.strides[0];
    t1.num_accepted = meta.num_accepted_tokens.data;
    t1.core = runner.core();
    MT_RETURN_IF_ERROR(k1_entry->launch.launch(*k1_entry->kernel, t1, layer, stream));
    t2.core = runner.core();
  } else {
    MT_ASSIGN_OR_RETURN(t2.core, io.attention(layer, io, stream));
  }
  MT_RETURN_IF_ERROR(k2_entry.launch.launch(*k2_entry.kernel, t2, layer, stream));
  io.delta = t2.out;
  return absl::OkStatus();
}

}  // namespace monotile::runtime::decode
