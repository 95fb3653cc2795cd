// KDA verify test support: inputs, one run on an executor, the check against float64.
#include "kernels/kda/kda_test_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>

#include "absl/strings/str_cat.h"
#include "dsl/interp/float16.h"
#include "support/status_macros.h"
#include "tests/testing/compare.h"

namespace monotile::kernels::kda::testing {
namespace {

using conformance::DeviceBuffer;
using conformance::KernelArg;
using dsl::ScalarType;
using dsl::interp::bf16_bits_from_double;
using dsl::interp::bf16_bits_to_double;

constexpr uint16_t kBf16Nan = 0x7fc1;

std::vector<uint16_t> random_bf16(size_t count, double stddev, std::mt19937& rng) {
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<uint16_t> out(count);
  for (uint16_t& v : out) v = bf16_bits_from_double(dist(rng));
  return out;
}

std::vector<float> random_f32(size_t count, double stddev, std::mt19937& rng) {
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<float> out(count);
  for (float& v : out) v = static_cast<float>(dist(rng));
  return out;
}

// Uniform in [-a, a] with a = sqrt(3) stddev: the state's many values, drawn quickly.
std::vector<float> random_uniform_f32(size_t count, double stddev, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(static_cast<float>(-std::sqrt(3.0) * stddev),
                                             static_cast<float>(std::sqrt(3.0) * stddev));
  std::vector<float> out(count);
  for (float& v : out) v = dist(rng);
  return out;
}

std::vector<double> widen(const std::vector<uint16_t>& bf16) {
  std::vector<double> out(bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) out[i] = bf16_bits_to_double(bf16[i]);
  return out;
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

template <typename T>
absl::StatusOr<DeviceBuffer> upload(conformance::Executor& executor, const std::vector<T>& host, std::string_view name) {
  MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, executor.allocate(host.size() * sizeof(T), name));
  MT_RETURN_IF_ERROR(executor.copy_in(buffer, bytes_of(host)));
  return buffer;
}

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

}  // namespace

KdaStepValues KdaHostInputs::values() const {
  KdaStepValues out;
  out.heads = config.heads;
  out.requests = config.requests;
  out.q = config.q;
  out.head_dim = kHeadDim;
  out.q_in = widen(q);
  out.k_in = widen(k);
  out.v_in = widen(v);
  out.g_in = widen(g);
  out.beta_raw = widen(beta);
  out.a_log.assign(a_log.begin(), a_log.end());
  out.dt_bias.assign(dt_bias.begin(), dt_bias.end());
  out.slot_stride = slot_stride;
  out.state.assign(state.begin(), state.end());
  out.state_indices = state_indices;
  out.num_accepted = num_accepted;
  return out;
}

KdaHostInputs make_inputs(const KdaCase& c) {
  std::mt19937 rng(c.seed);
  KdaHostInputs in;
  in.config = c.config;
  const int H = c.config.heads, N = c.config.requests, Q = c.config.q, D = kHeadDim;
  const int real = N - c.padded;
  const size_t tokens = size_t(N) * Q, act = tokens * H * D;
  in.q = random_bf16(act, 1.0, rng);
  in.k = random_bf16(act, 1.0, rng);
  in.v = random_bf16(act, 1.0, rng);
  in.g = random_bf16(act, 1.0, rng);
  in.beta = random_bf16(tokens * H, 1.0, rng);
  in.a_log = random_f32(H, 0.5, rng);
  in.dt_bias = random_f32(size_t(H) * D, 0.5, rng);
  in.slot_stride = int64_t{H} * D * D + c.slot_pad;
  const int slots = 1 + real * Q;
  in.state = random_uniform_f32(size_t(slots) * in.slot_stride, 0.1, rng);
  std::vector<int32_t> order(size_t(real) * Q);
  std::iota(order.begin(), order.end(), 1);
  std::shuffle(order.begin(), order.end(), rng);
  in.state_indices.assign(tokens, 0);
  in.num_accepted.assign(N, 1);
  std::uniform_int_distribution<int> accepted(1, Q);
  for (int n = 0; n < real; ++n) {
    for (int t = 0; t < Q; ++t) in.state_indices[size_t(n) * Q + t] = order[size_t(n) * Q + t];
    in.num_accepted[n] = n < int(c.accepted.size()) ? c.accepted[n] : accepted(rng);
  }
  if (c.later_slot_zero && real >= 1 && Q > 1) {
    int read = in.num_accepted[0] - 1;
    in.state_indices[(read + 1) % Q] = 0;
  }
  if (c.negative_read && real >= 2) in.state_indices[size_t(1) * Q + in.num_accepted[1] - 1] = -1;
  // Poison every slot this step writes (a real request with a state, columns other than its read).
  for (int n = 0; n < real; ++n) {
    int32_t read = in.state_indices[size_t(n) * Q + in.num_accepted[n] - 1];
    if (read <= 0) continue;
    for (int t = 0; t < Q; ++t) {
      int32_t slot = in.state_indices[size_t(n) * Q + t];
      if (slot <= 0 || slot == read) continue;
      std::fill_n(in.state.begin() + slot * in.slot_stride, in.slot_stride, std::numeric_limits<float>::quiet_NaN());
    }
  }
  return in;
}

absl::StatusOr<KdaOutputs> run_kda(conformance::Executor& executor, const dsl::Program& program,
                                   const KdaHostInputs& in) {
  KdaOutputs out;
  out.o.assign(in.q.size(), kBf16Nan);
  MT_ASSIGN_OR_RETURN(DeviceBuffer q, upload(executor, in.q, "q"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer k, upload(executor, in.k, "k"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer v, upload(executor, in.v, "v"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer g, upload(executor, in.g, "g"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer beta, upload(executor, in.beta, "beta"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer a_log, upload(executor, in.a_log, "a_log"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer dt_bias, upload(executor, in.dt_bias, "dt_bias"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer state, upload(executor, in.state, "state"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer indices, upload(executor, in.state_indices, "state_indices"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer accepted, upload(executor, in.num_accepted, "num_accepted"));
  MT_ASSIGN_OR_RETURN(DeviceBuffer o, upload(executor, out.o, "o"));
  const std::vector<KernelArg> args = {
      KernelArg::buffer(q, ScalarType::kBf16),        KernelArg::buffer(k, ScalarType::kBf16),
      KernelArg::buffer(v, ScalarType::kBf16),        KernelArg::buffer(g, ScalarType::kBf16),
      KernelArg::buffer(beta, ScalarType::kBf16),     KernelArg::buffer(a_log, ScalarType::kF32),
      KernelArg::buffer(dt_bias, ScalarType::kF32),   KernelArg::buffer(state, ScalarType::kF32),
      KernelArg::integer(ScalarType::kI64, in.slot_stride),
      KernelArg::buffer(indices, ScalarType::kI32),   KernelArg::buffer(accepted, ScalarType::kI32),
      KernelArg::buffer(o, ScalarType::kBf16)};
  const std::array<int, 3> grid = kda_verify_grid(in.config);
  MT_RETURN_IF_ERROR(executor.launch(program, {grid[0], grid[1], grid[2]}, args));
  out.state.resize(in.state.size());
  MT_RETURN_IF_ERROR(executor.copy_out(std::as_writable_bytes(std::span<uint16_t>(out.o)), o));
  MT_RETURN_IF_ERROR(executor.copy_out(std::as_writable_bytes(std::span<float>(out.state)), state));
  return out;
}

std::string check_kda(const KdaHostInputs& in, const KdaOutputs& got, const KdaStepResult& ref) {
  const int H = in.config.heads, N = in.config.requests, Q = in.config.q, D = kHeadDim;
  if (got.o.size() != ref.o.size() || got.state.size() != ref.state.size()) return "output sizes differ";
  std::vector<bool> written(in.state.size() / in.slot_stride, false);
  for (int n = 0; n < N; ++n) {
    const int32_t read = in.state_indices[size_t(n) * Q + in.num_accepted[n] - 1];
    for (int t = 0; t < Q; ++t) {
      const int32_t slot = in.state_indices[size_t(n) * Q + t];
      if (read > 0 && slot > 0) written[slot] = true;
    }
    for (int t = 0; t < Q; ++t) {
      for (int h = 0; h < H; ++h) {
        const size_t row = ((size_t(n) * Q + t) * H + h) * D;
        double row_max = 0;
        for (int d = 0; d < D; ++d) row_max = std::max(row_max, std::abs(ref.o[row + d]));
        for (int d = 0; d < D; ++d) {
          const double value = bf16_bits_to_double(got.o[row + d]), want = ref.o[row + d];
          auto where = [&] { return absl::StrCat("o[token ", n * Q + t, ", head ", h, ", ", d, "] (request ", n, ")"); };
          if (std::isnan(value)) return where() + " is NaN (not written?)";
          if (read <= 0 && value != 0.0) return absl::StrCat(where(), " = ", value, ", expected exactly 0 (no state)");
          // One bf16 rounding (2^-9 relative) plus f32 accumulation error relative to the row.
          if (!monotile::testing::agrees(value, want, {1e-5 * row_max, 1.0 / 256})) {
            return absl::StrCat(where(), " = ", value, ", expected ", want, " (tolerance ",
                                std::abs(want) / 256 + 1e-5 * row_max, ")");
          }
        }
      }
    }
  }
  for (size_t slot = 0; slot < written.size(); ++slot) {
    for (int h = 0; h < H; ++h) {
      const size_t base = slot * in.slot_stride + size_t(h) * D * D;
      double tile_max = 0;
      for (size_t i = 0; i < size_t(D) * D; ++i) tile_max = std::max(tile_max, std::abs(ref.state[base + i]));
      for (size_t i = 0; i < size_t(D) * D; ++i) {
        const float value = got.state[base + i];
        auto where = [&] { return absl::StrCat("state[slot ", slot, ", head ", h, ", v ", i / D, ", k ", i % D, "]"); };
        if (!written[slot]) {
          if (bits_of(value) != bits_of(in.state[base + i])) {
            return absl::StrCat(where(), " = ", value, " changed from ", in.state[base + i], " (no store expected)");
          }
          continue;
        }
        if (std::isnan(value)) return where() + " is NaN (not written?)";
        if (!monotile::testing::agrees(value, ref.state[base + i], {1e-5 * tile_max, 1e-5})) {
          return absl::StrCat(where(), " = ", value, ", expected ", ref.state[base + i], " (tolerance ",
                              1e-5 * (std::abs(ref.state[base + i]) + tile_max), ")");
        }
      }
    }
    // The slot's padding past H D D is never touched.
    for (size_t i = size_t(H) * D * D; i < size_t(in.slot_stride); ++i) {
      const size_t at = slot * in.slot_stride + i;
      if (bits_of(got.state[at]) != bits_of(in.state[at])) return absl::StrCat("slot ", slot, " padding value ", i, " changed");
    }
  }
  return "";
}

}  // namespace monotile::kernels::kda::testing
