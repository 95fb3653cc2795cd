// Random layer steps and a rank's part of one; see layer_steps.h.
#include "tools/layer_steps.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/dtype.h"

namespace monotile::tools {
namespace {

// Columns [first, first + count) of every row of `columns` values.
template <typename T>
std::vector<T> column_slice(const std::vector<T>& whole, int64_t columns, int64_t first,
                            int64_t count) {
  std::vector<T> out;
  const int64_t rows = static_cast<int64_t>(whole.size()) / columns;
  out.reserve(static_cast<size_t>(rows * count));
  for (int64_t r = 0; r < rows; ++r) {
    auto from = whole.begin() + r * columns + first;
    out.insert(out.end(), from, from + count);
  }
  return out;
}

}  // namespace

LayerStep random_layer_step(const LayerShape& shape, const RandomStep& o) {
  std::mt19937_64 rng(o.seed);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto normal = [&] { return (uniform() - 0.5) * std::sqrt(12.0); };
  auto bf16s = [&](int64_t count, double scale) {
    std::vector<uint16_t> out(static_cast<size_t>(count));
    for (uint16_t& bits : out) bits = model::bf16_from_double(scale * normal());
    return out;
  };
  LayerStep step;
  step.requests = o.requests;
  step.q = o.q;
  step.slots = o.slots;
  step.state_len = o.state_len;
  step.has_delta = o.delta;
  step.dim_first = o.dim_first;
  const int64_t tokens = step.tokens();
  step.prefix = bf16s(tokens * shape.hidden, 1.0);
  if (!shape.attention) {
    step.blocks = bf16s(tokens * shape.block_count * shape.hidden, 1.0);
    step.core = bf16s(tokens * shape.core_width, 1.0);
    for (int n = 0; n <= o.requests; ++n) step.query_start_loc.push_back(n * o.q);
    return step;
  }
  if (step.has_delta) step.delta = bf16s(tokens * shape.hidden, 0.5);
  step.blocks = bf16s(tokens * shape.block_count * shape.hidden, 1.0);
  step.conv_state = bf16s(o.slots * o.state_len * shape.channels(), 1.0);
  step.recurrent_state.resize(static_cast<size_t>(o.slots * shape.heads * 128 * 128));
  for (float& value : step.recurrent_state) value = static_cast<float>(0.1 * normal());
  // Distinct slots for every live token, in a random order; padded requests as vLLM 0.33.0 pads a
  // FULL graph's replay: NULL_BLOCK_ID 0 in every column, one accepted token, and query_start_loc
  // the last real end repeated.
  std::vector<int32_t> free_slots;
  for (int64_t s = 1; s < o.slots; ++s) free_slots.push_back(static_cast<int32_t>(s));
  std::shuffle(free_slots.begin(), free_slots.end(), rng);
  size_t next = 0;
  for (int n = 0; n < o.requests; ++n) {
    const bool pad = n >= o.requests - o.padded;
    for (int t = 0; t < o.q; ++t) step.state_indices.push_back(pad ? 0 : free_slots[next++]);
    step.num_accepted.push_back(pad ? 1
                                    : 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(o.q)));
  }
  for (int n = 0; n <= o.requests; ++n) {
    step.query_start_loc.push_back(std::min(n, o.requests - o.padded) * o.q);
  }
  return step;
}

LayerStep rank_layer_step(const LayerStep& whole, const LayerShape& whole_shape,
                          const LayerShape& rank_shape, int rank) {
  LayerStep step = whole;
  if (!whole_shape.attention) {
    step.core = column_slice(whole.core, whole_shape.core_width, rank * rank_shape.core_width,
                             rank_shape.core_width);
    return step;
  }
  // The conv state's channels are q, k, v of P = NH x 128 each: the rank's Pl of each.
  const int64_t p = whole_shape.projection, pl = rank_shape.projection;
  const int64_t channels = whole_shape.channels(), rank_channels = rank_shape.channels();
  step.conv_state.assign(static_cast<size_t>(whole.slots * whole.state_len * rank_channels), 0);
  for (int64_t s = 0; s < whole.slots; ++s) {
    for (int64_t e = 0; e < whole.state_len; ++e) {
      for (int64_t part = 0; part < 3; ++part) {
        for (int64_t c = 0; c < pl; ++c) {
          step.conv_state[static_cast<size_t>(
              step.conv_index(s, part * pl + c, e, rank_channels))] =
              whole.conv_state[static_cast<size_t>(
                  whole.conv_index(s, part * p + rank * pl + c, e, channels))];
        }
      }
    }
  }
  // The recurrent state [slots, NH, 128, 128]: the rank's heads.
  const int64_t head = 128 * 128;
  step.recurrent_state = column_slice(whole.recurrent_state, whole_shape.heads * head,
                                      rank * rank_shape.heads * head, rank_shape.heads * head);
  return step;
}

}  // namespace monotile::tools
