// K2 across TP ranks in tests (k2_tp_test on the interpreter, k2_tp_gpu_test on a GPU): a rank's
// shards of one TP 1 case (k3_checkpoint.md 3), its tensors on its device, and one rank's steps on
// its peer buffer. Compiled into the test binaries (gtest assertions), not into a library.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/k2_test_support.h"
#include "kernels/k3/peer_exchange.h"
#include "model/config.h"
#include "runtime/decode/group.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/k2_launch.h"
#include "runtime/k2_step_test_support.h"
#include "runtime/launch_state.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

using kernels::k3::K2Inputs;
using kernels::k3::K2Outputs;

// Rows [first, first + count) of each of `blocks` row-major blocks of `rows` rows of `row_bytes`
// bytes: a rank's slice of a tensor of per-expert (or per-half) blocks.
template <typename T>
inline std::vector<T> slice_rows(const std::vector<T>& whole, int64_t blocks, int64_t rows,
                                 int64_t row_elements, int64_t first, int64_t count) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(blocks * count * row_elements));
  for (int64_t b = 0; b < blocks; ++b) {
    auto from = whole.begin() + (b * rows + first) * row_elements;
    out.insert(out.end(), from, from + count * row_elements);
  }
  return out;
}

// Columns [first, first + count) of a row-major [rows, columns] tensor.
template <typename T>
inline std::vector<T> slice_columns(const std::vector<T>& whole, int64_t rows, int64_t columns,
                                    int64_t first, int64_t count) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(rows * count));
  for (int64_t r = 0; r < rows; ++r) {
    auto from = whole.begin() + r * columns + first;
    out.insert(out.end(), from, from + count);
  }
  return out;
}

// Rank `rank` of `tp`'s K2 case cut from the TP 1 case `whole` (k3_checkpoint.md 3): o_proj's
// input columns (core and w_o), the shared experts' gate rows and up rows (w_gu) and down columns
// (w_sd), each expert's w1 rows and w3 rows (w13 and its scales) and w2 columns (bytes and scale
// codes), up_proj's rows; the rest replicated. Its build exchanges over `tp` ranks.
inline K2Inputs rank_inputs(const K2Inputs& whole, int tp, int rank) {
  K2Inputs in = whole;
  const model::RankDims dims = *model::rank_dims(whole.config, tp, rank);
  absl::StatusOr<kernels::k3::K2Build> build = kernels::k3::k2_build(
      whole.config, dims, whole.c.layer, static_cast<int>(dims.kda_projection), whole.c.tokens);
  EXPECT_TRUE(build.ok()) << build.status();
  in.build = *build;
  in.build.wait_ns = whole.build.wait_ns;
  in.build.tp = tp;
  in.build.rank = rank;
  const kernels::k3::K2Build& w = whole.build;
  const int64_t h = w.hidden, t_count = w.tokens, lat = w.latent;
  const int64_t cw = in.build.core_width, si = in.build.shared_rows, ir = in.build.expert_rows;
  const int64_t held = static_cast<int64_t>(whole.w13.size()) / (2 * w.expert_rows * lat / 2);
  in.core = slice_columns(whole.core, t_count, w.core_width, rank * cw, cw);
  in.w_o = slice_columns(whole.w_o, h, w.core_width, rank * cw, cw);
  std::vector<uint16_t> gate = slice_rows(whole.w_gu, 1, 2 * w.shared_rows, h, rank * si, si);
  std::vector<uint16_t> up =
      slice_rows(whole.w_gu, 1, 2 * w.shared_rows, h, w.shared_rows + rank * si, si);
  in.w_gu = gate;
  in.w_gu.insert(in.w_gu.end(), up.begin(), up.end());
  in.w_sd = slice_columns(whole.w_sd, h, w.shared_rows, rank * si, si);
  auto w13 = [&](const std::vector<uint8_t>& bytes, int64_t row_bytes) {
    std::vector<uint8_t> out;
    for (int64_t e = 0; e < held; ++e) {
      for (int64_t half = 0; half < 2; ++half) {
        auto from = bytes.begin() + ((e * 2 + half) * w.expert_rows + rank * ir) * row_bytes;
        out.insert(out.end(), from, from + ir * row_bytes);
      }
    }
    return out;
  };
  in.w13 = w13(whole.w13, lat / 2);
  in.w13_scale = w13(whole.w13_scale, lat / 32);
  in.w2 = slice_columns(whole.w2, held * lat, w.expert_rows / 2, rank * ir / 2, ir / 2);
  in.w2_scale =
      slice_columns(whole.w2_scale, held * lat, w.expert_rows / 32, rank * ir / 32, ir / 32);
  in.w_up = slice_rows(whole.w_up, 1, h, lat, in.build.up_first, in.build.up_rows);
  return in;
}

// What one rank did over its steps.
struct RankSteps {
  absl::Status status;               // the first error making, launching or reading back
  std::vector<K2Outputs> steps;      // each launched step's outputs
  std::vector<absl::Status> health;  // each launched step's check_health
  std::vector<double> seconds;       // each launched step's launch to synchronize
};

// One rank's K2 over `programs` programs on `device`, for each epoch of `epochs` in turn on one
// scratch and its peer buffer (made here, collectively over `group`; nothing zeroed between steps).
// `skip(rank, step)` true: this rank does not launch that step (a rank that died or stalled before
// it); `failing(rank, step)` true: that launch is expected to give up a wait
// (K2StepTensors::reset), and the rank's scratch starts zeroed. Ends with a barrier, so that no
// rank frees its buffer while another may still write into it.
inline RankSteps run_k2_rank(Group& group, Device& device, const K2Inputs& in, int programs,
                             const std::vector<int32_t>& epochs,
                             const std::function<bool(int, size_t)>& skip = nullptr,
                             const std::function<bool(int, size_t)>& failing = nullptr) {
  RankSteps run;
  const int tp = group.size(), rank = group.rank();
  const kernels::k3::PeerExchangeLayout layout =
      kernels::k3::peer_exchange_layout(tp, in.build.hidden, in.build.latent);
  absl::StatusOr<std::unique_ptr<PeerBuffer>> peer =
      PeerBuffer::create(device, group, static_cast<size_t>(layout.bytes()));
  if (!peer.ok()) {
    run.status = peer.status();
    return run;
  }
  run.status = [&]() -> absl::Status {
    MT_ASSIGN_OR_RETURN(Kernel kernel, load_k2(device, in.build, jit::Jit::process_default()));
    MT_ASSIGN_OR_RETURN(LaunchState made, LaunchState::create(device, programs, "K2"));
    auto state = std::make_shared<LaunchState>(std::move(made));
    std::vector<DevicePtr> peers;
    for (int r = 0; r < tp; ++r) peers.push_back((*peer)->address(r));
    state->set_peers(peers);
    MT_ASSIGN_OR_RETURN(K2Launch launch, K2Launch::create(device, in.build, state, &kernel));
    MT_ASSIGN_OR_RETURN(Stream stream, device.create_stream());
    K2StepTensors tensors(device, in);
    if (failing) {
      // The data a failed launch reads where it skipped a wait: zero, never out of bounds.
      MT_RETURN_IF_ERROR(
          device.fill_bytes(launch.scratch(), 0, static_cast<size_t>(launch.layout().bytes)));
    }
    for (size_t s = 0; s < epochs.size(); ++s) {
      if (skip && skip(rank, s)) continue;
      tensors.reset(launch, failing && failing(rank, s));
      MT_RETURN_IF_ERROR(launch.set_epoch(epochs[s]));
      const auto start = std::chrono::steady_clock::now();
      MT_RETURN_IF_ERROR(launch.launch(kernel, tensors.tensors(), in.c.layer, stream));
      MT_RETURN_IF_ERROR(device.synchronize(stream));
      run.seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      run.health.push_back(launch.check_health());
      run.steps.push_back(tensors.outputs(launch));
    }
    return absl::OkStatus();
  }();
  absl::Status barrier = group.all_gather("").status();
  if (run.status.ok()) run.status = barrier;
  return run;
}

}  // namespace monotile::runtime::decode
