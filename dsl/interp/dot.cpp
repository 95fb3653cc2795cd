// dot(a [M, K], b [K, N], acc [M, N]): f32 (or f64/integer) accumulation per output in k order,
// starting from acc. Products of f16/bf16 are exact in f32, so only the accumulation order matters
// (the GPU's tree order differs within the tolerance ir.h promises).
#include "dsl/interp/ops.h"

namespace monotile::dsl::interp {

absl::Status exec_dot(Frame& frame, const Op& op) {
  const Type& a_type = frame.operand_type(op, 0);
  const Type& b_type = frame.operand_type(op, 1);
  const Type& out_type = frame.result_type(op);
  if (a_type.shape.size() != 2 || b_type.shape.size() != 2 || a_type.shape[1] != b_type.shape[0]) {
    return op_error(frame, op, "inner dimensions differ: lhs " + a_type.str() + ", rhs " + b_type.str());
  }
  const int64_t m = a_type.shape[0], k = a_type.shape[1], n = b_type.shape[1];
  const Tile& a = frame.operand(op, 0);
  const Tile& b = frame.operand(op, 1);
  const Tile& acc = frame.operand(op, 2);
  Tile& out = frame.result(op);
  const ScalarType result = out_type.element.scalar;
  if (result == ScalarType::kF32) {
    // Float copies with b transposed keep the inner loop contiguous.
    std::vector<float> af(a.floats.begin(), a.floats.end()), bt(static_cast<size_t>(k * n));
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t j = 0; j < n; ++j) bt[static_cast<size_t>(j * k + kk)] = static_cast<float>(b.floats[static_cast<size_t>(kk * n + j)]);
    }
    for (int64_t i = 0; i < m; ++i) {
      const float* row = af.data() + i * k;
      for (int64_t j = 0; j < n; ++j) {
        const float* col = bt.data() + j * k;
        float sum = static_cast<float>(acc.floats[static_cast<size_t>(i * n + j)]);
        for (int64_t kk = 0; kk < k; ++kk) sum += row[kk] * col[kk];
        out.floats[static_cast<size_t>(i * n + j)] = sum;
      }
    }
  } else if (is_float(result)) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = acc.floats[static_cast<size_t>(i * n + j)];
        for (int64_t kk = 0; kk < k; ++kk) {
          sum += a.floats[static_cast<size_t>(i * k + kk)] * b.floats[static_cast<size_t>(kk * n + j)];
        }
        out.floats[static_cast<size_t>(i * n + j)] = round_float(result, sum);
      }
    }
  } else {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        uint64_t sum = static_cast<uint64_t>(acc.ints[static_cast<size_t>(i * n + j)]);
        for (int64_t kk = 0; kk < k; ++kk) {
          sum += static_cast<uint64_t>(a.ints[static_cast<size_t>(i * k + kk)]) *
                 static_cast<uint64_t>(b.ints[static_cast<size_t>(kk * n + j)]);
        }
        out.ints[static_cast<size_t>(i * n + j)] = wrap_integer(result, sum);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace monotile::dsl::interp
