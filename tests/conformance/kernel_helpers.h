// Building blocks for conformance kernels and their references: flat tile offsets, and the common
// shapes of case (a unary or binary elementwise op over one whole tile).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dsl/dsl.h"
#include "tests/conformance/conformance_case.h"

namespace monotile::conformance {

// i32 tile of `shape` holding each element's row-major flat index (rank 1 to 3).
dsl::Value flat_offsets(const std::vector<int64_t>& shape);

// "[16, 32]".
std::string shape_name(const std::vector<int64_t>& shape);
// "add/bf16/[16, 32]".
std::string case_name(const std::string& op, dsl::ScalarType dtype, const std::vector<int64_t>& shape);

using UnaryOp = std::function<dsl::Value(dsl::Value)>;
using BinaryOp = std::function<dsl::Value(dsl::Value, dsl::Value)>;

// y = op(x) over one tile of `shape`; the float reference maps each x to y (stored rounded to
// y's dtype), the integer one likewise on int64 (stored wrapped).
struct ElementwiseSpec {
  std::string op;
  dsl::ScalarType in = dsl::ScalarType::kF32;
  dsl::ScalarType out = dsl::ScalarType::kF32;
  std::vector<int64_t> shape;
  Generator generate_a;
  Generator generate_b;  // binary only
  std::function<double(double)> float_unary;
  std::function<double(double, double)> float_binary;
  std::function<int64_t(int64_t)> int_unary;
  std::function<int64_t(int64_t, int64_t)> int_binary;
  std::optional<Tolerance> tolerance;
};
Case unary_case(const ElementwiseSpec& spec, UnaryOp op);
Case binary_case(const ElementwiseSpec& spec, BinaryOp op);

}  // namespace monotile::conformance
