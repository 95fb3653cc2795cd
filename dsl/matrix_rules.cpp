// The matrix unit's constraint on K, read from the target's shape table.
#include "dsl/matrix_rules.h"

#include <algorithm>

namespace monotile::dsl {

DotProblem dot_problem(const Target& target, ScalarType operand, int64_t k) {
  if (operand != ScalarType::kF16 && operand != ScalarType::kBf16) return {};
  MatrixOperand wanted = operand == ScalarType::kF16 ? MatrixOperand::kF16 : MatrixOperand::kBf16;
  int min_k = 0;
  for (const MatrixShape& shape : target.matrix_shapes()) {
    if (shape.operand == wanted) min_k = min_k == 0 ? shape.k : std::min(min_k, shape.k);
  }
  if (min_k == 0 || (k >= min_k && k % min_k == 0)) return {};
  std::string dtype(scalar_type_name(operand));
  std::string minimum = std::to_string(min_k);
  DotProblem problem;
  problem.expected = "K >= " + minimum + " and a multiple of " + minimum;
  problem.actual = "K = " + std::to_string(k);
  problem.what = k < min_k ? "K = " + std::to_string(k) + " is below the matrix unit's minimum " +
                                 minimum + " for " + dtype + " on " + target.str()
                           : "K = " + std::to_string(k) + " is not a multiple of the matrix unit's " +
                                 minimum + " for " + dtype + " on " + target.str();
  problem.hint = "pad K to a multiple of " + minimum +
                 " with masked zeros, or for a tiny K use broadcasting and sum";
  return problem;
}

}  // namespace monotile::dsl
