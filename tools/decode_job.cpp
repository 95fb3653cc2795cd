// `monotile decode`'s run: setup and the steps; see decode_job.h (the report:
// decode_job_report.cpp).
#include "tools/decode_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/jit.h"
#include "kernels/k3/bench_timing.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "runtime/decode/layer_check.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "tools/build_report.h"
#include "tools/device_choice.h"
#include "tools/host_all_reduce.h"

namespace monotile::tools {

absl::Status DecodeJob::setup_weights(const runtime::DeviceInfo& info) {
  const bool embedded = !model::embedded_config_json(o_.model).empty();
  // One rank's whole model must fit; else, for an embedded config, one layer of each kind does.
  const uint64_t bytes = plan_.bytes_read();
  const uint64_t room = info.vendor == dsl::Vendor::kCpu
                            ? uint64_t{16} << 30
                            : static_cast<uint64_t>(info.memory_bytes) / 10 * 9;
  if (o_.alias_weights && !embedded) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--alias-weights with --model ", o_.model,
        ": a checkpoint folder's weights are its own; expected an embedded config (k3-tiny or k3), "
        "whose weights are random; hint: drop --alias-weights, or use --model k3"));
  }
  bool alias = o_.alias_weights;
  if (bytes > room && !alias) {
    if (!embedded) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "rank %d of TP %d of %s reads %.1f GB of weights; the %s has room for %.1f GB; hint: "
          "--model k3-tiny, --model k3 (random weights made on the device, one layer per kind), or "
          "`monotile layer run` for one layer of a large model",
          o_.rank, o_.tp, o_.model, bytes / 1e9, runtime::describe(info), room / 1e9));
    }
    std::printf(
        "rank %d of TP %d of %s reads %.1f GB of weights; the device has room for %.1f GB: one "
        "layer of each kind is made and aliased\n",
        o_.rank, o_.tp, o_.model.c_str(), bytes / 1e9, room / 1e9);
    alias = true;
  }
  if (!alias) {
    MT_ASSIGN_OR_RETURN(weights_, dec::upload_rank_weights(*device_, config_, o_.tp, o_.rank, 0,
                                                           config_.num_hidden_layers, *source_));
    backbone_ = &weights_.backbone;
    return absl::OkStatus();
  }
  MT_ASSIGN_OR_RETURN(aliased_, AliasedWeights::create(*device_, jit::Jit::process_default(),
                                                       config_, plan_, o_.tp, o_.rank, o_.seed));
  backbone_ = &aliased_->backbone();
  std::printf(
      "weights: random on the device (seed %llu), one layer per kind aliased across %d layers: %d "
      "kinds, %.2f GB on the device viewed as %.2f GB; the KV caches random on the device too\n",
      static_cast<unsigned long long>(o_.seed), config_.num_hidden_layers, aliased_->kinds(),
      aliased_->device_bytes() / 1e9, aliased_->viewed_bytes() / 1e9);
  return absl::OkStatus();
}

absl::Status DecodeJob::setup_group() {
  if (o_.fork) {
    o_.tp = group_->size();
    o_.rank = group_->rank();
    exchanging_ = true;
    return absl::OkStatus();
  }
  if (!o_.mpi) {
    owned_group_ = dec::make_single_process_group();
    group_ = owned_group_.get();
    return absl::OkStatus();
  }
  MT_ASSIGN_OR_RETURN(owned_group_, dec::make_mpi_group());
  group_ = owned_group_.get();
  if (o_.tp != 0 && o_.tp != group_->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tp ", o_.tp, " with --mpi in a world of ", group_->size(),
                     group_->size() == 1 ? " process" : " processes", ": expected --tp ",
                     group_->size(), ", one rank a process; hint: mpirun -np ", o_.tp,
                     " monotile decode --mpi ..., or leave --tp out"));
  }
  o_.tp = group_->size();
  o_.rank = group_->rank();
  exchanging_ = o_.tp > 1;
  return absl::OkStatus();
}

// Each KDA layer's caches, drawn as at TP 1 from the layer's own stream and sliced to this rank's
// heads (conv channels q_r | k_r | v_r, the rank's recurrent states): every TP size starts from the
// same state, and the steps' draws (rng_) do not depend on the TP size.
absl::Status DecodeJob::setup_caches(std::vector<dec::KdaCache>& bound) {
  const int64_t pl = dims_.kda_projection, channels = 3 * pl, nhl = dims_.kda_heads;
  const int64_t p = config_.kda_projection(), nh = config_.kda_num_heads, d = config_.kda_head_dim;
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    if (!config_.is_kda_layer(layer)) continue;
    DeviceKdaCache& c = caches_[layer];
    c.slots = slots_;
    c.state_len = state_len_;
    c.channels = channels;
    c.state_elements = slots_ * nhl * d * d;
    MT_ASSIGN_OR_RETURN(c.conv,
                        device_->allocate(static_cast<size_t>(slots_ * state_len_ * channels) * 2));
    MT_ASSIGN_OR_RETURN(c.state, device_->allocate(static_cast<size_t>(c.state_elements) * 4));
    if (aliased_) {
      // Weights made on the device make the caches there too (K3's are about 2 GB a rank): conv
      // entries of variance 1, recurrent states of variance 1e-4, as the host draws them below.
      const float unit = static_cast<float>(std::sqrt(12.0));
      MT_RETURN_IF_ERROR(aliased_->fill(c.conv.address(), model::Dtype::kBF16,
                                        slots_ * state_len_ * channels,
                                        absl::StrCat("cache.", layer, ".conv"), -unit / 2, unit));
      MT_RETURN_IF_ERROR(aliased_->fill(c.state.address(), model::Dtype::kF32, c.state_elements,
                                        absl::StrCat("cache.", layer, ".recurrent"), -0.005f * unit,
                                        0.01f * unit));
    } else {
      std::seed_seq seeds{static_cast<uint32_t>(o_.seed), static_cast<uint32_t>(o_.seed >> 32),
                          static_cast<uint32_t>(layer)};
      std::mt19937 rng(seeds);
      std::normal_distribution<double> normal(0.0, 1.0);
      const int64_t entries = slots_ * state_len_;
      std::vector<uint16_t> conv(static_cast<size_t>(entries * channels));
      for (int64_t e = 0; e < entries; ++e) {
        for (int64_t i = 0; i < 3 * p; ++i) {
          const uint16_t v = model::bf16_from_double(normal(rng));
          const int64_t part = i / p, at = i % p - int64_t{o_.rank} * pl;
          if (at >= 0 && at < pl) conv[static_cast<size_t>(e * channels + part * pl + at)] = v;
        }
      }
      std::vector<float> state(static_cast<size_t>(c.state_elements));
      for (int64_t s = 0; s < slots_; ++s) {
        for (int64_t head = 0; head < nh; ++head) {
          const int64_t local = head - int64_t{o_.rank} * nhl;
          for (int64_t i = 0; i < d * d; ++i) {
            const float v = static_cast<float>(0.01 * normal(rng));
            if (local >= 0 && local < nhl)
              state[static_cast<size_t>((s * nhl + local) * d * d + i)] = v;
          }
        }
      }
      MT_RETURN_IF_ERROR(device_->copy_to_device(c.conv.address(), conv.data(), conv.size() * 2));
      MT_RETURN_IF_ERROR(
          device_->copy_to_device(c.state.address(), state.data(), state.size() * 4));
    }
    if (config_.served_kind(layer) != model::ServedKind::kWhole) continue;
    if (first_kda_ < 0) first_kda_ = layer;
    bound.push_back(
        {decode_->attention_name(layer),
         dec::TensorView::dense(model::Dtype::kBF16, {slots_, state_len_, channels},
                                c.conv.address()),
         dec::TensorView::dense(model::Dtype::kF32, {slots_, nhl, d, d}, c.state.address())});
  }
  return absl::OkStatus();
}

absl::Status DecodeJob::setup() {
  MT_ASSIGN_OR_RETURN(config_, model::load_config(o_.model));
  if (!model::embedded_config_json(o_.model).empty()) {
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::SeededWeights> seeded,
                        model::SeededWeights::create(config_, o_.seed));
    source_ = std::move(seeded);
  } else {
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint,
                        model::Checkpoint::open(o_.model));
    source_ = std::move(checkpoint);
  }
  // Each rank takes its GPU by its rank among this machine's ranks (MPI's node-local rank; under
  // --fork and alone, its rank).
  MT_ASSIGN_OR_RETURN(PickedDevice picked, pick_rank_device(o_.device, group_->local_rank(),
                                                            group_->local_size(), o_.gpu_index));
  device_ = std::move(picked.device);
  gpu_ = picked.gpu;
  gpus_ = picked.gpus;
  const runtime::DeviceInfo& info = device_->info();
  dec::DecodeOptions deployment{.decode_backend = std::string(dec::kSpecializedBackend),
                                .tensor_parallel_size = o_.tp,
                                .num_speculative_tokens = o_.q - 1,
                                .max_rows = o_.max_rows,
                                .model = &config_,
                                .device = dec::device_facts(info),
                                .other_ranks_stood_in = o_.tp > 1 && !exchanging_,
                                .checking_exchanges = exchanging_};
  MT_ASSIGN_OR_RETURN(std::optional<dec::DecodeConfig> config,
                      dec::specialized_decode_config(deployment));
  if (o_.requests * o_.q > config->max_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("--requests ", o_.requests, " x --q ", o_.q, " = ", o_.requests * o_.q,
                     " rows, expected at most --max-rows ", config->max_rows,
                     "; hint: fewer requests or a smaller q"));
  }
  MT_ASSIGN_OR_RETURN(dims_, model::rank_dims(config_, o_.tp, o_.rank));
  MT_ASSIGN_OR_RETURN(plan_, model::plan_rank(config_, o_.tp, o_.rank));
  const std::string gpu =
      gpus_ == 0 ? ""
                 : absl::StrCat(" (GPU ", gpu_.index, " of ", gpus_,
                                gpu_.sharers > 1 ? absl::StrCat(", shared by ", gpu_.sharers,
                                                                " ranks, each its share of the SMs")
                                                 : std::string(", to itself"),
                                ")");
  std::printf("monotile decode: %s, TP %d rank %d%s%s, q %d, %d requests a step, on %s%s%s\n",
              o_.model.c_str(), o_.tp, o_.rank,
              o_.mpi    ? " (a process of MPI's world)"
              : o_.fork ? " (a process forked with the other rank)"
                        : "",
              exchanging_
                  ? " exchanging partial sums with the other ranks (K2's over peer buffers, "
                    "the host stand-ins' through the group)"
              : o_.tp > 1 ? " alone (the other ranks' partial sums stood in by zero)"
                          : "",
              o_.q, o_.requests, runtime::describe(info).c_str(), gpu.c_str(),
              o_.graph ? ", each width's step captured once and replayed" : "");
  MT_RETURN_IF_ERROR(setup_weights(info));
  if (exchanging_ && o_.check && aliased_) {
    // Every rank alike: the weights are aliased on every rank or on none.
    return absl::InvalidArgumentError(absl::StrCat(
        "--check with ", o_.fork ? "--fork" : "--mpi", " at TP ", o_.tp,
        " and weights made on the device: the check's reference sums every rank's partials from "
        "the model's weights, which these are not; expected weights read from the model; hint: "
        "drop --alias-weights, or --check one rank alone (--tp ",
        o_.tp, " --rank R without ", o_.fork ? "--fork" : "--mpi", ")"));
  }
  // Exchanging ranks that share a GPU each get their share of its SMs, so that every rank's
  // persistent programs are resident together; a rank with its GPU to itself takes all of them.
  const int programs =
      exchanging_ && info.vendor != dsl::Vendor::kCpu ? gpu_.programs(info.compute_units) : 0;
  MT_ASSIGN_OR_RETURN(
      decode_, dec::SpecializedDecode::create(
                   *backbone_, *config, *group_, *device_, jit::Jit::process_default(),
                   {.on_progress = progress_printer(stderr),
                    .log = [](const std::string& line) { std::printf("%s\n", line.c_str()); },
                    .other_ranks_stood_in = o_.tp > 1 && !exchanging_,
                    .programs = programs,
                    .dependent_launch = o_.dependent_launch,
                    .k1_linear = o_.k1_linear}));

  // The KV caches: a slot pool twice the live positions, so each step's slots leave gaps.
  slots_ = int64_t{2} * config->max_rows + 1;
  state_len_ = config->q + 2;
  std::vector<dec::KdaCache> bound;
  MT_RETURN_IF_ERROR(setup_caches(bound));
  MT_ASSIGN_OR_RETURN(stream_, device_->create_stream());
  MT_RETURN_IF_ERROR(decode_->prepare_kv(bound, stream_));
  mla_context_.assign(static_cast<size_t>(o_.requests), 4);
  StandinKind standins =
      info.vendor == dsl::Vendor::kCpu ? StandinKind::kReference : StandinKind::kKernels;
  if (o_.standins)
    standins = *o_.standins == "kernels" ? StandinKind::kKernels : StandinKind::kReference;
  host_ = std::make_unique<HostLayers>(*device_, jit::Jit::process_default(), config_, dims_, plan_,
                                       *source_, *backbone_, standins, config->max_rows,
                                       o_.requests, 4 + int64_t{o_.steps + 1} * o_.q);
  if (aliased_) {
    // --check's reference reads the weights the device made: each kind's layer copied back once.
    host_->set_weight_loader([this](int layer) { return aliased_->host_weights(layer); });
  }
  if (exchanging_) host_->set_group(group_);
  // The layers no kernel serves, run whole by the host (layer 0).
  std::vector<int> host_layers;
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    if (config_.served_kind(layer) == model::ServedKind::kNone) host_layers.push_back(layer);
  }
  MT_RETURN_IF_ERROR(
      host_->prepare(host_layers, o_.requests * o_.q, o_.q, static_cast<int>(state_len_)));
  if (info.vendor != dsl::Vendor::kCpu) {
    // The floors' bandwidth, measured in this run: a 1 GiB device-to-device copy, best of 10.
    MT_ASSIGN_OR_RETURN(kernels::k3::Timing copy, kernels::k3::copy_floor(*device_, stream_, 10));
    bandwidth_ = kernels::k3::copy_bandwidth(copy);
  }
  return allocate_step();
}

absl::Status DecodeJob::allocate_step() {
  const int n = o_.requests, q = o_.q;
  const size_t th = static_cast<size_t>(n * q * config_.hidden_size);
  DeviceStep& s = step_;
  MT_ASSIGN_OR_RETURN(s.indices, device_->allocate(static_cast<size_t>(n * q) * 4));
  MT_ASSIGN_OR_RETURN(s.accepted, device_->allocate(static_cast<size_t>(n) * 4));
  MT_ASSIGN_OR_RETURN(s.starts, device_->allocate(static_cast<size_t>(n + 1) * 4));
  MT_ASSIGN_OR_RETURN(s.mla_slots, device_->allocate(static_cast<size_t>(n) * 4));
  MT_ASSIGN_OR_RETURN(s.mla_context, device_->allocate(static_cast<size_t>(n) * 4));
  MT_ASSIGN_OR_RETURN(s.prefix, device_->allocate(th * 2));
  MT_ASSIGN_OR_RETURN(s.blocks,
                      device_->allocate(th * static_cast<size_t>(config_.block_count()) * 2));
  s.host.q = q;
  s.host.device_state_indices = s.indices.address();
  s.host.device_num_accepted = s.accepted.address();
  s.host.device_mla_slots = s.mla_slots.address();
  s.host.device_mla_context = s.mla_context.address();
  return absl::OkStatus();
}

absl::Status DecodeJob::write_step(int padded, bool prefill, bool minus_one) {
  DeviceStep& s = step_;
  const int n = o_.requests, q = o_.q;
  std::vector<int32_t> pool(static_cast<size_t>(slots_ - 1));
  std::iota(pool.begin(), pool.end(), 1);
  std::shuffle(pool.begin(), pool.end(), rng_);
  s.host.state_indices.clear();
  s.host.num_accepted.clear();
  s.host.mla_slots.clear();
  s.host.mla_context.clear();
  const int32_t null_slot = minus_one ? -1 : 0;
  for (int r = 0; r < n; ++r) {
    const bool pad = r >= n - padded;
    for (int j = 0; j < q; ++j)
      s.host.state_indices.push_back(pad ? null_slot : pool[static_cast<size_t>(r * q + j)]);
    s.host.num_accepted.push_back(pad ? 1 : std::uniform_int_distribution<int>(1, q)(rng_));
    s.host.mla_slots.push_back(pad ? -1 : r);
    s.host.mla_context.push_back(mla_context_[static_cast<size_t>(r)]);
  }
  std::vector<int32_t> starts(static_cast<size_t>(n + 1));
  for (int r = 0; r <= n; ++r) {
    starts[static_cast<size_t>(r)] = (minus_one ? r : std::min(r, n - padded)) * q;
  }
  // New contents, the same buffers.
  MT_RETURN_IF_ERROR(device_->synchronize(stream_));
  MT_RETURN_IF_ERROR(
      device_->copy_to_device(s.indices.address(), s.host.state_indices.data(), n * q * 4));
  MT_RETURN_IF_ERROR(
      device_->copy_to_device(s.accepted.address(), s.host.num_accepted.data(), n * 4));
  MT_RETURN_IF_ERROR(device_->copy_to_device(s.starts.address(), starts.data(), starts.size() * 4));
  std::vector<int32_t> context(s.host.mla_context.begin(), s.host.mla_context.end());
  MT_RETURN_IF_ERROR(
      device_->copy_to_device(s.mla_slots.address(), s.host.mla_slots.data(), n * 4));
  MT_RETURN_IF_ERROR(device_->copy_to_device(s.mla_context.address(), context.data(), n * 4));
  dec::SpecMetadata m{
      .spec_sequence_masks = true,
      .num_prefills = prefill ? 1 : 0,
      .num_spec_decodes = prefill ? n - 1 : n,
      .uniform_spec_sequence_length = q,
      .spec_state_indices = dec::TensorView::dense(model::Dtype::kI32, {n, q}, s.indices.address()),
      .num_accepted_tokens = dec::TensorView::dense(model::Dtype::kI32, {n}, s.accepted.address()),
      .spec_query_start_loc =
          dec::TensorView::dense(model::Dtype::kI32, {n + 1}, s.starts.address())};
  s.metadata[decode_->kda_prefix()] = m;
  // The residual stream entering layer 0 (the embedding's stand-in) and empty AttnRes blocks.
  const size_t th = static_cast<size_t>(n * q * config_.hidden_size);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(th);
  for (double& v : values) v = normal(rng_);
  MT_RETURN_IF_ERROR(host_->write_bf16(s.prefix.address(), values));
  return device_->fill_bytes(s.blocks.address(), 0,
                             th * static_cast<size_t>(config_.block_count()) * 2);
}

absl::StatusOr<std::optional<dec::Step>> DecodeJob::plan() {
  const int width = o_.requests * o_.q;
  const DeviceKdaCache& first = caches_.at(first_kda_);
  const dec::TensorView state = dec::TensorView::dense(
      model::Dtype::kF32, {slots_, dims_.kda_heads, 128, 128}, first.state.address());
  return decode_->plan({.width = width, .attn_metadata = &step_.metadata, .kda_state = &state});
}

// Every layer of a planned step in order, through `recorder`: the served layers' launches, the
// host's layers (launches of the DSL stand-ins, or the reference's host work), and with --check the
// host's reads of each layer's inputs before it and its check after it. The same code runs a step
// eagerly and records it; host work is given as closures over the step's fixed buffers, so that a
// replay runs it on the new contents.
absl::Status DecodeJob::enqueue_layers(StepRecorder& recorder, const dec::Step& planned,
                                       EnqueueMode mode) {
  const int64_t h = config_.hidden_size, blocks = config_.block_count();
  dec::LayerIo io{.prefix = step_.prefix.address(),
                  .blocks = step_.blocks.address(),
                  .blocks_token_stride = blocks * h,
                  .blocks_block_stride = h,
                  .delta = 0,
                  .attention = nullptr};
  const bool reference = host_->kind() == StandinKind::kReference;
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    recorder.set_layer(layer);
    std::optional<dec::LayerLaunch> launch = planned.layer(layer);
    DeviceKdaCache* cache = caches_.contains(layer) ? &caches_.at(layer) : nullptr;
    const bool kda = config_.is_kda_layer(layer);
    LayerRow& row = rows_[layer];
    const std::string standin = host_->kind_name();
    row.standin = !launch;
    row.kind = !launch ? (kda ? "KDA + MLP: host stand-in (" + standin + ")"
                              : "MLA: host stand-in (" + standin + ")")
               : kda   ? std::string("KDA: kernels K1 + K2")
                       : "MLA: host attention stand-in + kernel K2; stand-in: " + standin;
    // --check holds every served layer to its reference, and the stand-ins too where DSL kernels
    // run them (the reference needs no check against itself).
    const bool check = mode.check && (launch || !reference);
    if (check) {
      MT_RETURN_IF_ERROR(
          recorder.host([this, layer, delta = io.delta] { return read_inputs(layer, delta); }));
    }
    // An eager layer's time: events around it on the stream, which is idle before it.
    runtime::Event start, end;
    if (mode.timed) {
      MT_RETURN_IF_ERROR(device_->synchronize(stream_));
      MT_ASSIGN_OR_RETURN(start, device_->create_event());
      MT_ASSIGN_OR_RETURN(end, device_->create_event());
      MT_RETURN_IF_ERROR(device_->record(start, stream_));
    }
    if (!launch && reference) {
      // The reference runs on the CPU over copies of the device's tensors: host work. Its output
      // (the next delta) is a buffer of the stand-in that stays put.
      auto delta = std::make_shared<runtime::DevicePtr>(0);
      const dec::LayerIo entry{.prefix = io.prefix,
                               .blocks = io.blocks,
                               .blocks_token_stride = io.blocks_token_stride,
                               .blocks_block_stride = io.blocks_block_stride,
                               .delta = io.delta,
                               .attention = nullptr};
      MT_RETURN_IF_ERROR(recorder.host([this, layer, cache, delta, entry] {
        dec::LayerIo at =
            entry;  // run_layer moves its delta on: every replay starts from the entry's
        MT_RETURN_IF_ERROR(host_->run_layer(layer, at, step_.host, cache, stream_));
        *delta = at.delta;
        return absl::OkStatus();
      }));
      io.delta = *delta;
    } else if (!launch) {
      // The DSL stand-in's reductions sit between its launches: host work, a recorded step's graph
      // cut around each.
      const kernels::standins::KdaMlpStandin::Reduce reduce = [this, &recorder](
                                                                  runtime::DevicePtr data,
                                                                  int64_t count, runtime::Stream&) {
        return recorder.host(
            [this, data, count] {
              return all_reduce_bf16(*group_, *device_, stream_, data, static_cast<size_t>(count));
            },
            /*launches_follow=*/true);
      };
      MT_RETURN_IF_ERROR(recorder.launching());
      MT_RETURN_IF_ERROR(host_->run_layer(layer, io, step_.host, cache, stream_, reduce));
    } else {
      if (reference) {
        // Inside the MLA layer's launch, between its launches: the graph is cut around it.
        io.attention = [this, &recorder](int l, const dec::LayerIo& at,
                                         runtime::Stream&) -> absl::StatusOr<runtime::DevicePtr> {
          auto core = std::make_shared<runtime::DevicePtr>(0);
          dec::LayerIo copy{.prefix = at.prefix,
                            .blocks = at.blocks,
                            .blocks_token_stride = at.blocks_token_stride,
                            .blocks_block_stride = at.blocks_block_stride,
                            .delta = at.delta,
                            .attention = nullptr};
          MT_RETURN_IF_ERROR(recorder.host(
              [this, l, copy, core]() -> absl::Status {
                MT_ASSIGN_OR_RETURN(*core, host_->attention(l, copy, step_.host, stream_));
                return absl::OkStatus();
              },
              /*launches_follow=*/true));
          return *core;
        };
      } else {
        io.attention = [this](int l, const dec::LayerIo& at, runtime::Stream& on) {
          return host_->attention(l, at, step_.host, on);
        };
      }
      MT_RETURN_IF_ERROR(recorder.launching());
      MT_RETURN_IF_ERROR((*launch)(io, stream_));
    }
    if (mode.timed) {
      MT_RETURN_IF_ERROR(device_->record(end, stream_));
      MT_RETURN_IF_ERROR(device_->synchronize(end));
      MT_ASSIGN_OR_RETURN(float ms, device_->elapsed_ms(start, end));
      row.seconds += ms / 1e3;
      ++row.runs;
    }
    if (check) {
      const bool served = launch.has_value();
      MT_RETURN_IF_ERROR(recorder.host(
          [this, layer, served, out = io.delta] { return check_outputs(layer, served, out); }));
    }
    if (mode.cut) MT_RETURN_IF_ERROR(recorder.cut());
  }
  step_out_ = io.delta;
  return absl::OkStatus();
}

absl::Status DecodeJob::run_step(int step) {
  const int width = o_.requests * o_.q;
  MT_ASSIGN_OR_RETURN(std::optional<dec::Step> planned, plan());
  const int padded =
      static_cast<int>(std::count(step_.host.mla_slots.begin(), step_.host.mla_slots.end(), -1));
  if (!planned) {
    std::optional<std::string_view> reason =
        dec::step_reason(&step_.metadata, decode_->kda_prefix(), width);
    std::printf("step %d: width %d, %d requests: the host's layers (%s)\n", step, width,
                o_.requests, reason ? std::string(*reason).c_str() : "no kernels");
    return absl::OkStatus();
  }
  int served = 0;
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer)
    served += planned->layer(layer).has_value();
  std::printf("step %d: width %d, %d requests (%d padded): kernels for %d of %d layers\n", step,
              width, o_.requests, padded, served, config_.num_hidden_layers);
  auto recorded = graphs_.find(width);
  if (recorded != graphs_.end()) {
    // A later step at a recorded width: the new contents are in the buffers; the graphs run again.
    const auto start = std::chrono::steady_clock::now();
    MT_RETURN_IF_ERROR(recorded->second.replay(*device_, stream_));
    MT_RETURN_IF_ERROR(device_->synchronize(stream_));
    std::printf(
        "  graph: replayed width %d's step (%d graphs%s), new metadata in the same buffers: %.2f "
        "ms\n",
        width, recorded->second.graphs(),
        recorded->second.host_parts() > 0
            ? absl::StrCat(" and ", recorded->second.host_parts(), " pieces of host work").c_str()
            : "",
        1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } else {
    StepRecorder recorder(*device_, stream_, o_.graph);
    MT_RETURN_IF_ERROR(
        enqueue_layers(recorder, *planned, {.check = o_.check, .cut = false, .timed = !o_.graph}));
    MT_ASSIGN_OR_RETURN(StepGraph graph, recorder.finish());
    if (o_.graph) {
      const StepGraph& g = graphs_.emplace(width, std::move(graph)).first->second;
      if (g.host_parts() == 0) {
        std::printf(
            "  graph: captured width %d's step as 1 graph: every launch of every layer on one "
            "stream\n",
            width);
      } else {
        std::printf(
            "  graph: captured width %d's step as %d graphs around %d pieces of host work, which "
            "no graph can hold: %s\n",
            width, g.graphs(), g.host_parts(),
            o_.check && host_->kind() == StandinKind::kReference
                ? "--check's reads and checks, and the stand-ins run by the float64 reference on "
                  "the CPU"
            : o_.check ? "--check's reads of each layer's inputs and its check"
                       : "the stand-ins run by the float64 reference on the CPU (--standins "
                         "kernels makes them launches)");
      }
    }
  }
  MT_RETURN_IF_ERROR(decode_->after_step(stream_));
  MT_RETURN_IF_ERROR(device_->synchronize(stream_));
  MT_RETURN_IF_ERROR(host_->check_health());
  MT_RETURN_IF_ERROR(print_step_digest());
  for (int r = 0; r < o_.requests; ++r) {
    mla_context_[static_cast<size_t>(r)] += step_.host.num_accepted[static_cast<size_t>(r)];
  }
  return absl::OkStatus();
}

absl::Status DecodeJob::run() {
  MT_RETURN_IF_ERROR(setup_group());
  if (o_.outputs) {
    // Refused before any work: a file that cannot be written.
    MT_ASSIGN_OR_RETURN(std::FILE * file, open_outputs());
    std::fclose(file);
  }
  MT_RETURN_IF_ERROR(setup());
  for (int step = 1; step <= o_.steps; ++step) {
    // Every other step pads its last request, as a graph replayed for fewer requests does: as
    // vLLM pads (slot 0, one accepted token, the last real end repeated), every fourth with -1.
    const int padded = step % 2 == 0 && o_.requests > 1 ? 1 : 0;
    MT_RETURN_IF_ERROR(write_step(padded, false, step % 4 == 0));
    MT_RETURN_IF_ERROR(run_step(step));
  }
  MT_RETURN_IF_ERROR(write_step(0, true));
  MT_RETURN_IF_ERROR(run_step(o_.steps + 1));
  MT_RETURN_IF_ERROR(print_cache_digest());
  if (o_.graph) MT_RETURN_IF_ERROR(time_layers());
  print_table();
  if (!checks_passed_)
    return absl::InternalError("a served layer failed its check against the reference");
  return absl::OkStatus();
}

}  // namespace monotile::tools
