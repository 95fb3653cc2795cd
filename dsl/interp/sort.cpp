// sort (along an axis) and topk (along the last axis): both order by value with NaN greater than
// every number and break ties toward the lower index, so results are fully deterministic.
#include <algorithm>
#include <numeric>

#include "dsl/interp/ops.h"
#include "dsl/scalar_semantics.h"

namespace monotile::dsl::interp {
namespace {

// Strict "comes first" on values: ascending (NaN last) or descending (NaN first).
struct ValueOrder {
  bool descending = false;
  bool operator()(double a, double b) const {
    return descending ? nan_last_less(b, a) : nan_last_less(a, b);
  }
  bool operator()(int64_t a, int64_t b) const { return descending ? a > b : a < b; }
};

// Orders the indices [0, length) of one line of `values` (stride `stride` from `base`), ties to
// the lower index; only the first `count` positions need to be right.
template <typename Value>
void order_line(const Value* values, size_t base, int64_t stride, int64_t length, int64_t count, ValueOrder order,
                std::vector<int64_t>& indices) {
  indices.resize(static_cast<size_t>(length));
  std::iota(indices.begin(), indices.end(), 0);
  const auto first = [&](int64_t a, int64_t b) {
    const Value va = values[base + static_cast<size_t>(a * stride)];
    const Value vb = values[base + static_cast<size_t>(b * stride)];
    if (order(va, vb)) return true;
    if (order(vb, va)) return false;
    return a < b;
  };
  if (count < length) std::partial_sort(indices.begin(), indices.begin() + count, indices.end(), first);
  else std::sort(indices.begin(), indices.end(), first);
}

template <typename Value>
Value* data_of(Tile& tile) {
  if constexpr (std::is_same_v<Value, double>) return tile.floats.data();
  else return tile.ints.data();
}
template <typename Value>
const Value* data_of(const Tile& tile) {
  if constexpr (std::is_same_v<Value, double>) return tile.floats.data();
  else return tile.ints.data();
}

template <typename Value>
void sort_tile(Frame& frame, const Op& op, bool topk) {
  const Type& type = frame.operand_type(op, 0);
  const int axis = topk ? static_cast<int>(type.shape.size()) - 1 : op.attrs.axis;
  int64_t outer = 1, length = type.shape[static_cast<size_t>(axis)], inner = 1;
  for (int d = 0; d < static_cast<int>(type.shape.size()); ++d) {
    if (d < axis) outer *= type.shape[static_cast<size_t>(d)];
    if (d > axis) inner *= type.shape[static_cast<size_t>(d)];
  }
  const int64_t count = topk ? op.attrs.k : length;
  const Value* in = data_of<Value>(frame.operand(op, 0));
  Value* values = data_of<Value>(frame.result(op, 0));
  int64_t* indices_out = frame.result(op, 1).ints.data();
  const ValueOrder order{op.attrs.descending};
  std::vector<int64_t> indices;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      order_line(in, static_cast<size_t>(o * length * inner + i), inner, length, count, order, indices);
      for (int64_t r = 0; r < count; ++r) {
        const auto at = static_cast<size_t>((o * count + r) * inner + i);
        const int64_t source = indices[static_cast<size_t>(r)];
        values[at] = in[static_cast<size_t>((o * length + source) * inner + i)];
        indices_out[at] = source;
      }
    }
  }
}

}  // namespace

absl::Status exec_sort(Frame& frame, const Op& op) {
  const bool topk = op.code == OpCode::kTopK;
  const Type& type = frame.operand_type(op, 0);
  if (topk && (op.attrs.k < 1 || op.attrs.k > type.shape.back())) {
    return op_error(frame, op, "k must be in [1, " + std::to_string(type.shape.back()) + "], got " +
                                   std::to_string(op.attrs.k));
  }
  if (stored_as_float(type.element)) sort_tile<double>(frame, op, topk);
  else sort_tile<int64_t>(frame, op, topk);
  return absl::OkStatus();
}

}  // namespace monotile::dsl::interp
