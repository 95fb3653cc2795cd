#include "kernels/k3/k1_test_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/dtype.h"
#include "support/status_macros.h"

namespace monotile::kernels::k3 {
namespace {

using conformance::DeviceBuffer;
using conformance::Executor;
using conformance::KernelArg;
using reference::KdaCache;
using reference::LayerInput;
using reference::RankLayerWeights;
using Vec = std::vector<double>;

constexpr int kD = 128;
constexpr int64_t kInterpreterWaitNs = int64_t{600} * 1000 * 1000 * 1000;
constexpr uint16_t kPoisonBf16 = 0x7fc1;  // a NaN: an output never written fails its check
// How much further from float64 the linear in_proj's outputs may be than vLLM's rounding points'
// (error RMS): measured 0.86-1.16x (docs/k1_linear.md).
constexpr double kLinearDistance = 1.5;

Vec random_normal(size_t n, double scale, std::mt19937& rng, bool bf16) {
  std::normal_distribution<double> normal(0.0, scale);
  Vec out(n);
  for (double& v : out) v = bf16 ? model::round_to_bf16(normal(rng)) : static_cast<float>(normal(rng));
  return out;
}

Vec random_uniform(size_t n, double lo, double hi, std::mt19937& rng) {
  std::uniform_real_distribution<double> uniform(lo, hi);
  Vec out(n);
  for (double& v : out) v = static_cast<float>(uniform(rng));
  return out;
}

// One rank's KDA-layer weights with the checkpoint's scales (projections ~ 1/sqrt(fan-in), norms
// near 1, A_log = log U(1, 16), small dt_bias), in the per-rank layout the kernels read.
RankLayerWeights random_weights(const model::ModelConfig& config, const model::RankDims& dims, std::mt19937& rng) {
  const int64_t h = config.hidden_size, pl = dims.kda_projection, rows = dims.in_proj_rows;
  RankLayerWeights w;
  w.dims = dims;
  Vec in_proj = random_normal(rows * h, 1.0 / std::sqrt(double(h)), rng, true);
  std::fill(in_proj.begin() + (rows - dims.in_proj_pad) * h, in_proj.end(), 0.0);
  w.values["self_attn.in_proj_qkvgfab.weight"] = std::move(in_proj);
  w.values["self_attn.f_b_proj.weight"] = random_normal(pl * kD, 1.0 / std::sqrt(double(kD)), rng, true);
  w.values["self_attn.conv1d.weight"] = random_uniform(3 * pl * 4, -0.5, 0.5, rng);
  w.values["self_attn.dt_bias"] = random_normal(pl, 0.5, rng, false);
  Vec a_log = random_uniform(dims.kda_heads, 1.0, 16.0, rng);
  for (double& v : a_log) v = static_cast<float>(std::log(v));
  w.values["self_attn.A_log"] = a_log;
  auto near_one = [&](int64_t n) {
    Vec v = random_normal(n, 0.1, rng, true);
    for (double& x : v) x = model::round_to_bf16(1.0 + x);
    return v;
  };
  w.values["self_attn.o_norm.weight"] = near_one(kD);
  w.values["self_attention_res_norm.weight"] = near_one(h);
  w.values["self_attention_res_proj.weight"] = random_normal(h, 1.0 / std::sqrt(double(h)), rng, true);
  w.values["input_layernorm.weight"] = near_one(h);
  return w;
}

std::vector<uint16_t> to_bf16(const Vec& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = model::bf16_from_double(v[i]);
  return out;
}

std::vector<float> to_f32(const Vec& v) { return std::vector<float>(v.begin(), v.end()); }

Vec from_bf16(const std::vector<uint16_t>& bits) {
  Vec out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = model::bf16_to_float(bits[i]);
  return out;
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

template <typename T>
std::span<std::byte> writable_bytes(std::vector<T>& v) {
  return std::as_writable_bytes(std::span<T>(v));
}

// What one launch leaves behind, as raw bits: its outputs and its scratch's hand-off rows.
struct K1Outputs {
  std::vector<uint16_t> prefix, blocks, core, conv, x_rows, proj;
  std::vector<float> state;
};

struct K1Buffers {
  DeviceBuffer prefix, blocks, core, conv, state, scratch;
};

absl::StatusOr<K1Outputs> read_outputs(Executor& executor, const K1Buffers& b, const K1Scratch& layout,
                                       const K1Build& build) {
  K1Outputs out;
  auto bf16s = [&](std::vector<uint16_t>& bits, const DeviceBuffer& buffer) {
    bits.resize(buffer.bytes / 2);
    return executor.copy_out(writable_bytes(bits), buffer);
  };
  MT_RETURN_IF_ERROR(bf16s(out.prefix, b.prefix));
  MT_RETURN_IF_ERROR(bf16s(out.blocks, b.blocks));
  MT_RETURN_IF_ERROR(bf16s(out.core, b.core));
  MT_RETURN_IF_ERROR(bf16s(out.conv, b.conv));
  out.state.resize(b.state.bytes / 4);
  MT_RETURN_IF_ERROR(executor.copy_out(writable_bytes(out.state), b.state));
  std::vector<uint8_t> scratch(static_cast<size_t>(layout.bytes));
  MT_RETURN_IF_ERROR(executor.copy_out(writable_bytes(scratch), b.scratch));
  auto rows = [&](std::vector<uint16_t>& bits, int64_t offset, int64_t count) {
    bits.resize(static_cast<size_t>(count));
    std::memcpy(bits.data(), scratch.data() + offset, static_cast<size_t>(count) * 2);
  };
  rows(out.x_rows, layout.x_rows, int64_t{build.tokens} * build.hidden);
  rows(out.proj, layout.proj, int64_t{build.tokens} * build.in_proj_rows);
  return out;
}

// Where two launches' bits differ: per array, the count and the rows (of `row_size` values).
template <typename T>
void compare_bits(const std::string& name, const std::vector<T>& a, const std::vector<T>& b, int64_t row_size,
                  std::string& out) {
  int64_t differing = 0;
  std::set<int64_t> rows;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) == 0) continue;
    ++differing;
    rows.insert(static_cast<int64_t>(i) / row_size);
  }
  if (differing == 0) return;
  absl::StrAppend(&out, out.empty() ? "" : "; ", name, " ", differing, " values in rows ", absl::StrJoin(rows, ","));
}

std::string compare_outputs(const K1Outputs& a, const K1Outputs& b, const K1Build& build) {
  std::string out;
  compare_bits("x_rows", a.x_rows, b.x_rows, build.hidden, out);
  compare_bits("proj", a.proj, b.proj, build.in_proj_rows, out);
  compare_bits("prefix", a.prefix, b.prefix, build.hidden, out);
  compare_bits("blocks", a.blocks, b.blocks, static_cast<int64_t>(a.blocks.size()) / build.tokens, out);
  compare_bits("core", a.core, b.core, build.projection(), out);
  compare_bits("conv_state (by slot)", a.conv, b.conv, static_cast<int64_t>(build.state_len) * 3 * build.projection(),
               out);
  compare_bits("recurrent_state (by slot)", a.state, b.state, int64_t{build.heads} * kD * kD, out);
  return out;
}

}  // namespace

std::string case_name(const K1Case& c) {
  return absl::StrCat(c.model, "_tp", c.tp, "r", c.rank, "_L", c.layer, "_n", c.requests, "_q", c.q, "_sl",
                      c.state_len == 0 ? c.q + 2 : c.state_len, c.delta ? "_delta" : "", c.padded ? "_padded" : "",
                      c.dim_first ? "_dimfirst" : "", c.counter_start != 0 ? "_counters_far" : "",
                      c.launches > 1 ? absl::StrCat("_x", c.launches) : "", c.cold ? "_cold" : "",
                      c.stream_k ? "_sk" : "", c.gemv_step > 0 ? absl::StrCat("_k", c.gemv_step) : "",
                      c.gemv_ahead > 0 ? absl::StrCat("_a", c.gemv_ahead) : "", c.prefetch ? "_pf" : "",
                      c.kda_loop ? "_kl" : "", c.kda_weights ? "_kw" : "", c.conv_split ? "_cs" : "", c.linear ? "_lin" : "", c.linear && c.sized ? "_sz" : "",
                      c.l2_fetch > 0 ? absl::StrCat("_lf", c.l2_fetch) : "");
}

bool K1Result::ok() const {
  if (!health.empty() && health[0] != 0) return false;
  if (repeat_mismatches != 0) return false;
  for (const OutputCheck& o : outputs) {
    if (!o.passed()) return false;
  }
  return true;
}

std::string K1Result::report() const {
  std::string out;
  if (!health.empty() && health[0] != 0) {
    absl::StrAppend(&out, "health FAILED; records:");
    for (size_t p = 1; p * kHealthRecordWords < health.size(); ++p) {
      const int32_t* r = &health[p * kHealthRecordWords];
      if (r[0] != 0) absl::StrAppend(&out, " [program ", r[5], " region ", r[1], " index ", r[2], " tag ", r[3], " seen ", r[4], "]");
    }
    absl::StrAppend(&out, "\n");
  }
  if (launches > 1) {
    absl::StrAppend(&out, launches - 1, " more launches on the same inputs: ", repeat_mismatches,
                    " differed from the first\n", repeat_report);
  }
  absl::StrAppend(&out, notes);
  for (const OutputCheck& o : outputs) {
    absl::StrAppend(&out, o.name, ": ", o.compared, " values, ", o.differing, " differ, error RMS ", o.error_rms,
                    " x RMS, worst ", o.worst_ulps, " bf16 ulps (", o.worst_rms,
                    " x RMS), ", o.outliers, " loose, ", o.failures, " failures", o.failures ? " (first: " + o.first_failure + ")" : "", "\n");
  }
  return out;
}

absl::StatusOr<K1Result> run_k1_case(const K1Case& c, Executor& executor, std::mt19937& rng) {
  MT_ASSIGN_OR_RETURN(model::ModelConfig config, model::load_config(c.model));
  MT_ASSIGN_OR_RETURN(model::RankDims dims, model::rank_dims(config, c.tp, c.rank));
  const int q = c.q, n = c.requests, tokens = n * q, state_len = c.state_len == 0 ? q + 2 : c.state_len;
  const int64_t h = config.hidden_size, pl = dims.kda_projection, nhl = dims.kda_heads, blocks = config.block_count();
  MT_ASSIGN_OR_RETURN(K1Build build, k1_build(config, c.layer, nhl, static_cast<int>(dims.in_proj_rows), tokens, q,
                                              state_len, c.delta));
  // On the interpreter every program is a thread of this machine, each interpreting its share of
  // the GEMVs: a wait's wall-clock bound must cover the others' work on a loaded 2-core machine (the
  // 132-program cases take seconds), so it is minutes there unless the case sets it.
  if (executor.name() == "interpreter") build.wait_ns = kInterpreterWaitNs;
  if (c.wait_ns > 0) build.wait_ns = c.wait_ns;
  // Shaped before the scratch is laid out: stream-K's partials and counters live there.
  if (!c.target.empty()) {
    MT_ASSIGN_OR_RETURN(dsl::Target target, dsl::Target::parse(c.target));
    build = k1_for_target(build, target);
  }
  if (c.stream_k) build.stream_k = true;
  if (c.gemv_step > 0) build.gemv_step = c.gemv_step;
  build.gemv_ahead = c.gemv_ahead;
  build.prefetch_weights = build.prefetch_next = c.prefetch;
  build.kda_loop = c.kda_loop;
  build.kda_weights_ahead = c.kda_weights;
  build.conv_state_split = c.conv_split;
  build.linear_in_proj = c.linear;
  if (c.linear && c.sized) build = k1_linear_sized(build);
  build.gemv_l2_fetch = c.l2_fetch;
  RankLayerWeights w = random_weights(config, dims, rng);

  // The step: request i uses slots from 1 + i q (a fresh slot per position), accepted count drawn
  // from 1..q; padded requests have every slot 0. Two spare slots stay untouched.
  const int slots = 1 + n * q + 2;
  LayerInput input;
  input.prefix = random_normal(tokens * h, 1.0, rng, true);
  if (c.delta) input.delta = random_normal(tokens * h, 0.5, rng, true);
  input.blocks = random_normal(tokens * blocks * h, 1.0, rng, true);
  input.meta.requests = n;
  input.meta.q = q;
  std::uniform_int_distribution<int> accepted(1, q);
  for (int r = 0; r < n; ++r) {
    const bool pad = r >= n - c.padded;
    for (int t = 0; t < q; ++t) input.meta.state_indices.push_back(pad ? 0 : 1 + r * q + t);
    input.meta.num_accepted.push_back(accepted(rng));
  }
  KdaCache cache{slots, state_len, random_normal(slots * state_len * 3 * pl, 1.0, rng, true),
                 random_normal(slots * nhl * kD * kD, 0.05, rng, false)};
  input.caches = {cache};
  // The linear in_proj is checked against the reference of its own rounding points (each source's
  // w_norm * v_s rounded, x not: docs/k1_linear.md); proj also against vLLM's (x rounded) and float64.
  MT_ASSIGN_OR_RETURN(reference::KdaAttentionOutput expected,
                      reference::kda_attention_reference(config, c.layer, w, input, reference::Rounding::kBf16,
                                                         c.linear ? reference::InProjInput::kLinearSources
                                                                  : reference::InProjInput::kRoundedX));
  // The linear form's distance from vLLM's rounding points, and vLLM's own from float64 (notes, and
  // core checked against vLLM's by the core rule).
  std::optional<reference::KdaAttentionOutput> vllm, float64;
  if (c.linear) {
    MT_ASSIGN_OR_RETURN(vllm, reference::kda_attention_reference(config, c.layer, w, input, reference::Rounding::kBf16));
    MT_ASSIGN_OR_RETURN(float64, reference::kda_attention_reference(config, c.layer, w, input, reference::Rounding::kNone));
  }
  // proj's references: bf16r(W_in x) with x of this form (the reference's), with x rounded to bf16
  // as vLLM rounds it, and W_in x with x unrounded (all three from the same rounded prefix and blocks).
  Vec proj_form_x, proj_rounded_x, proj_exact_x;
  if (c.check_proj || c.linear) {
    const Vec& w_in = w.values["self_attn.in_proj_qkvgfab.weight"];
    const int64_t rows = dims.in_proj_rows, nb = config.previous_blocks(c.layer);
    for (int t = 0; t < tokens; ++t) {
      std::vector<std::span<const double>> sources;
      for (int64_t b = 0; b < nb; ++b) sources.push_back(std::span<const double>(expected.blocks).subspan((t * blocks + b) * h, h));
      sources.push_back(std::span<const double>(expected.prefix).subspan(t * h, h));
      auto x_of = [&](reference::Rounding rounding) {
        return reference::attn_res_row(sources, w.values["self_attention_res_norm.weight"],
                                       w.values["self_attention_res_proj.weight"], w.values["input_layernorm.weight"],
                                       config.rms_norm_eps, rounding);
      };
      const Vec form = reference::matvec(w_in, std::span<const double>(expected.x).subspan(t * h, h), rows, h);
      const Vec rounded = reference::matvec(w_in, x_of(reference::Rounding::kBf16), rows, h);
      const Vec exact = reference::matvec(w_in, x_of(reference::Rounding::kNone), rows, h);
      for (double v : form) proj_form_x.push_back(model::round_to_bf16(v));
      for (double v : rounded) proj_rounded_x.push_back(model::round_to_bf16(v));
      proj_exact_x.insert(proj_exact_x.end(), exact.begin(), exact.end());
    }
  }

  // Device buffers: inputs, then the outputs poisoned, the scratch's control words zeroed.
  std::vector<KernelArg> args;
  auto upload = [&](std::span<const std::byte> host, std::string_view name) -> absl::StatusOr<DeviceBuffer> {
    MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, executor.allocate(std::max<size_t>(host.size(), 4), name));
    MT_RETURN_IF_ERROR(executor.copy_in(buffer, host));
    return buffer;
  };
  auto bf16_arg = [&](const Vec& v, std::string_view name) -> absl::StatusOr<DeviceBuffer> {
    MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, upload(bytes_of(to_bf16(v)), name));
    args.push_back(KernelArg::buffer(buffer, dsl::ScalarType::kBf16));
    return buffer;
  };
  auto f32_arg = [&](const Vec& v, std::string_view name) -> absl::StatusOr<DeviceBuffer> {
    MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, upload(bytes_of(to_f32(v)), name));
    args.push_back(KernelArg::buffer(buffer, dsl::ScalarType::kF32));
    return buffer;
  };
  auto i32_arg = [&](const std::vector<int32_t>& v, std::string_view name) -> absl::StatusOr<DeviceBuffer> {
    MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, upload(bytes_of(v), name));
    args.push_back(KernelArg::buffer(buffer, dsl::ScalarType::kI32));
    return buffer;
  };
  auto i64 = [&](int64_t v) { args.push_back(KernelArg::integer(dsl::ScalarType::kI64, v)); };

  // The conv state in the case's layout.
  Vec conv_host(cache.conv.size());
  const int64_t channels = 3 * pl;
  auto conv_index = [&](int64_t slot, int64_t entry, int64_t channel) {
    return c.dim_first ? (slot * channels + channel) * state_len + entry : (slot * state_len + entry) * channels + channel;
  };
  for (int64_t s = 0; s < slots; ++s) {
    for (int64_t e = 0; e < state_len; ++e) {
      for (int64_t ch = 0; ch < channels; ++ch) conv_host[conv_index(s, e, ch)] = cache.conv[(s * state_len + e) * channels + ch];
    }
  }

  MT_ASSIGN_OR_RETURN(DeviceBuffer prefix, bf16_arg(input.prefix, "prefix"));
  if (c.delta) MT_RETURN_IF_ERROR(bf16_arg(input.delta, "delta").status());
  MT_ASSIGN_OR_RETURN(DeviceBuffer blocks_buffer, bf16_arg(input.blocks, "blocks"));
  i64(blocks * h);
  i64(h);
  args.push_back(KernelArg::integer(dsl::ScalarType::kI32, build.nblocks));
  args.push_back(KernelArg::integer(dsl::ScalarType::kI32, build.write_index));
  MT_RETURN_IF_ERROR(bf16_arg(w.values["self_attention_res_norm.weight"], "ares_norm").status());
  MT_RETURN_IF_ERROR(bf16_arg(w.values["self_attention_res_proj.weight"], "ares_proj").status());
  MT_RETURN_IF_ERROR(bf16_arg(w.values["input_layernorm.weight"], "in_norm").status());
  MT_RETURN_IF_ERROR(bf16_arg(w.values["self_attn.in_proj_qkvgfab.weight"], "w_in").status());
  MT_RETURN_IF_ERROR(bf16_arg(w.values["self_attn.f_b_proj.weight"], "w_fb").status());
  MT_RETURN_IF_ERROR(f32_arg(w.values["self_attn.conv1d.weight"], "conv_w").status());
  MT_ASSIGN_OR_RETURN(DeviceBuffer conv_buffer, bf16_arg(conv_host, "conv_state"));
  i64(state_len * channels);
  i64(c.dim_first ? state_len : 1);
  i64(c.dim_first ? 1 : channels);
  MT_RETURN_IF_ERROR(f32_arg(w.values["self_attn.A_log"], "a_log").status());
  MT_RETURN_IF_ERROR(f32_arg(w.values["self_attn.dt_bias"], "dt_bias").status());
  MT_RETURN_IF_ERROR(bf16_arg(w.values["self_attn.o_norm.weight"], "o_norm").status());
  MT_ASSIGN_OR_RETURN(DeviceBuffer state_buffer, f32_arg(cache.state, "state"));
  i64(nhl * kD * kD);
  std::vector<int32_t> indices = input.meta.state_indices;
  MT_RETURN_IF_ERROR(i32_arg(indices, "state_indices").status());
  i64(q);
  MT_RETURN_IF_ERROR(i32_arg(input.meta.num_accepted, "num_accepted").status());
  std::vector<uint16_t> poison(static_cast<size_t>(tokens * pl), kPoisonBf16);
  MT_ASSIGN_OR_RETURN(DeviceBuffer core, upload(bytes_of(poison), "core"));
  args.push_back(KernelArg::buffer(core, dsl::ScalarType::kBf16));

  const K1Scratch layout = k1_scratch(build);
  std::vector<uint8_t> scratch_host(static_cast<size_t>(layout.bytes), 0xff);  // NaN data: a stale read shows...
  std::fill(scratch_host.begin(), scratch_host.begin() + layout.zeroed_bytes, 0);  // ...zeroed control words
  // Counters as a long-running rank leaves them: any multiple of every launch's span (handoff.h).
  for (int64_t at = layout.counters; at < layout.flags; at += 4) std::memcpy(&scratch_host[at], &c.counter_start, 4);
  MT_ASSIGN_OR_RETURN(DeviceBuffer scratch, upload(bytes_of(scratch_host), "scratch"));
  args.push_back(KernelArg::buffer(scratch, dsl::ScalarType::kBf16, layout.x_rows));
  args.push_back(KernelArg::buffer(scratch, dsl::ScalarType::kBf16, layout.proj));
  args.push_back(KernelArg::buffer(scratch, dsl::ScalarType::kF32, layout.o_rows));
  args.push_back(KernelArg::buffer(scratch, dsl::ScalarType::kF32, layout.ares));
  args.push_back(KernelArg::buffer(scratch, dsl::ScalarType::kI32, layout.flags));
  args.push_back(KernelArg::buffer(scratch, dsl::ScalarType::kI32, layout.counters));
  MT_ASSIGN_OR_RETURN(DeviceBuffer epoch, i32_arg({1}, "epoch"));
  args.push_back(KernelArg::integer(dsl::ScalarType::kI32, c.layer));
  const int programs = c.programs > 0 ? c.programs : std::max(tokens, 8);
  std::vector<int32_t> health(static_cast<size_t>(health_words(programs)), 0);
  MT_ASSIGN_OR_RETURN(DeviceBuffer health_buffer, i32_arg(health, "health"));
  MT_RETURN_IF_ERROR(i32_arg({0}, "alarm").status());
  if (c.prefetch) {  // the next weights: only asked into L2, never read
    MT_RETURN_IF_ERROR(bf16_arg(random_normal(h * pl, 1.0, rng, true), "next_weights").status());
    i64(h * pl);
  }

  const dsl::Program program = k1_program(build);
  // A buffer larger than any GPU's L2 (H200: 60 MB), written before each launch of a cold case.
  std::vector<uint8_t> evict_host(c.cold ? size_t{192} << 20 : 0);
  DeviceBuffer evict;
  if (c.cold) {
    MT_ASSIGN_OR_RETURN(evict, executor.allocate(evict_host.size(), "evict"));
  }
  auto launch_once = [&]() -> absl::Status {
    if (c.cold) MT_RETURN_IF_ERROR(executor.copy_in(evict, bytes_of(evict_host)));
    return executor.launch(program, {programs, 1, 1}, args);
  };
  MT_RETURN_IF_ERROR(launch_once());

  // Read back and compare.
  K1Result result;
  result.health.resize(health.size());
  MT_RETURN_IF_ERROR(executor.copy_out(writable_bytes(result.health), health_buffer));
  K1Outputs first;
  const K1Buffers buffers{prefix, blocks_buffer, core, conv_buffer, state_buffer, scratch};
  MT_ASSIGN_OR_RETURN(first, read_outputs(executor, buffers, layout, build));
  result.outputs.push_back(check_output("prefix", from_bf16(first.prefix), expected.prefix, {tokens, h},
                                        rule_for("prefix")));
  result.outputs.push_back(
      check_output("blocks", from_bf16(first.blocks), expected.blocks, {tokens, blocks, h}, rule_for("blocks")));
  result.outputs.push_back(check_output("core", from_bf16(first.core), expected.core, {tokens, pl}, rule_for("core")));
  Vec conv_actual(conv_host.size());
  {
    Vec device = from_bf16(first.conv);
    for (int64_t s = 0; s < slots; ++s) {
      for (int64_t e = 0; e < state_len; ++e) {
        for (int64_t ch = 0; ch < channels; ++ch) conv_actual[(s * state_len + e) * channels + ch] = device[conv_index(s, e, ch)];
      }
    }
  }
  // Slots the step does not write keep their exact bits (both caches).
  std::set<int> written;
  for (int r = 0; r < n; ++r) {
    const int32_t* row = &input.meta.state_indices[r * q];
    if (row[0] > 0) written.insert(row[0]);
    if (row[input.meta.num_accepted[r] - 1] > 0) {
      for (int t = 0; t < q; ++t) {
        if (row[t] > 0) written.insert(row[t]);
      }
    }
  }
  std::vector<bool> conv_exact(conv_actual.size()), state_exact(cache.state.size());
  for (int64_t s = 0; s < slots; ++s) {
    const bool untouched = !written.count(static_cast<int>(s));
    for (int64_t i = 0; i < state_len * channels; ++i) conv_exact[s * state_len * channels + i] = untouched;
    for (int64_t i = 0; i < nhl * kD * kD; ++i) state_exact[s * nhl * kD * kD + i] = untouched;
  }
  result.outputs.push_back(check_output("conv_state", conv_actual, expected.cache.conv, {slots, state_len, channels},
                                        rule_for("conv_state"), &conv_exact));
  result.outputs.push_back(check_output("recurrent_state", Vec(first.state.begin(), first.state.end()),
                                        expected.cache.state, {slots, nhl, kD, kD}, rule_for("recurrent_state"),
                                        &state_exact));
  if (!proj_exact_x.empty()) {
    const Vec proj = from_bf16(first.proj);
    const std::string form = c.linear ? " (linear)" : "";
    const std::vector<int64_t> shape{tokens, dims.in_proj_rows};
    result.outputs.push_back(check_output("proj", proj, proj_form_x, shape, rule_for("proj")));
    result.outputs.push_back(check_output("proj vs bf16 x" + form, proj, proj_rounded_x, shape, rule_for("proj vs bf16 x" + form)));
    result.outputs.push_back(check_output("proj vs float64 x" + form, proj, proj_exact_x, shape, rule_for("proj vs float64 x" + form)));
    const OutputCheck references = check_output("", proj_rounded_x, proj_exact_x, shape, {});
    result.notes = absl::StrCat("vLLM's proj (x rounded) vs float64 x's: ", references.differing, " of ", references.compared,
                                " differ, error RMS ", references.error_rms, " x RMS, worst ", references.worst_rms,
                                " x RMS\n");
  }
  if (vllm) {
    // Against float64 (Rounding::kNone, every output unrounded), over the slots the step writes: the
    // linear form's error RMS must stay within kLinearDistance of vLLM's rounding points' own (the
    // two forms round x differently, each about as far from float64); its distance from vLLM's
    // outputs is a note.
    const Vec state(first.state.begin(), first.state.end()), core_actual = from_bf16(first.core);
    const std::vector<bool> all(core_actual.size(), false);
    auto distance = [&](const std::string& what, std::span<const double> ours, std::span<const double> stock,
                        std::span<const double> exact, const std::vector<bool>& untouched) {
      const std::vector<int64_t> shape{static_cast<int64_t>(ours.size())};
      const OutputCheck mine = check_output("", ours, exact, shape, {}, &untouched);
      const OutputCheck theirs = check_output("", stock, exact, shape, {}, &untouched);
      const OutputCheck apart = check_output("", ours, stock, shape, {}, &untouched);
      OutputCheck d;
      d.name = what + ": error RMS from float64, linear / vLLM's";
      d.compared = mine.compared - mine.exact_compared;
      d.error_rms = mine.error_rms;
      d.worst_rms = mine.worst_rms;
      if (!(mine.error_rms <= kLinearDistance * theirs.error_rms + 1e-12)) {
        d.failures = 1;
        d.first_failure = absl::StrCat(mine.error_rms, " against ", theirs.error_rms, ", more than ", kLinearDistance, "x");
      }
      absl::StrAppend(&result.notes, what, ": error RMS from float64 ", mine.error_rms, " x RMS (vLLM's rounding points ",
                      theirs.error_rms, "; worst ", mine.worst_rms, " and ", theirs.worst_rms, "); from vLLM's: ",
                      apart.differing, " of ", apart.compared - apart.exact_compared, " differ, error RMS ", apart.error_rms,
                      ", worst ", apart.worst_rms, "\n");
      result.outputs.push_back(d);
    };
    distance("core", core_actual, vllm->core, float64->core, all);
    distance("conv_state", conv_actual, vllm->cache.conv, float64->cache.conv, conv_exact);
    distance("recurrent_state", state, vllm->cache.state, float64->cache.state, state_exact);
  }

  // Launches 2..L on the same inputs, restored, with the scratch's data poisoned again and the
  // control words as the launches before left them: each must equal the first bit for bit.
  const std::vector<uint16_t> prefix_bits = to_bf16(input.prefix), blocks_bits = to_bf16(input.blocks),
                              conv_bits = to_bf16(conv_host);
  const std::vector<float> state_bits = to_f32(cache.state);
  for (int launch = 1; launch < c.launches; ++launch) {
    MT_RETURN_IF_ERROR(executor.copy_in(prefix, bytes_of(prefix_bits)));
    MT_RETURN_IF_ERROR(executor.copy_in(blocks_buffer, bytes_of(blocks_bits)));
    MT_RETURN_IF_ERROR(executor.copy_in(conv_buffer, bytes_of(conv_bits)));
    MT_RETURN_IF_ERROR(executor.copy_in(state_buffer, bytes_of(state_bits)));
    MT_RETURN_IF_ERROR(executor.copy_in(core, bytes_of(poison)));
    MT_RETURN_IF_ERROR(executor.copy_out(writable_bytes(scratch_host), scratch));
    std::fill(scratch_host.begin() + layout.zeroed_bytes, scratch_host.end(), 0xff);
    MT_RETURN_IF_ERROR(executor.copy_in(scratch, bytes_of(scratch_host)));
    MT_RETURN_IF_ERROR(executor.copy_in(epoch, bytes_of(std::vector<int32_t>{launch + 1})));
    MT_RETURN_IF_ERROR(launch_once());
    MT_ASSIGN_OR_RETURN(K1Outputs again, read_outputs(executor, buffers, layout, build));
    std::string differs = compare_outputs(first, again, build);
    if (!differs.empty()) {
      ++result.repeat_mismatches;
      if (result.repeat_report.size() < 4000) absl::StrAppend(&result.repeat_report, "launch ", launch + 1, ": ", differs, "\n");
    }
  }
  result.launches = c.launches;
  executor.release_all();
  return result;
}

}  // namespace monotile::kernels::k3
