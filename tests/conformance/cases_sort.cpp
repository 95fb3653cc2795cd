// sort along either axis (ascending and descending) and topk along the last axis, with many ties
// and some NaNs: values and i32 indices must match exactly (ties to the lower index, NaN greater
// than every number). Includes the MoE router's shape: top-16 of 896.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

// Orders indices of one line: by value (descending or ascending, NaN greatest), then by index.
std::vector<int64_t> ordered(const std::vector<double>& values, bool descending) {
  std::vector<int64_t> index(values.size());
  std::iota(index.begin(), index.end(), 0);
  const auto rank = [](double v) { return std::isnan(v) ? INFINITY : v; };  // NaN above +inf below
  std::stable_sort(index.begin(), index.end(), [&](int64_t a, int64_t b) {
    const double va = values[static_cast<size_t>(a)], vb = values[static_cast<size_t>(b)];
    const bool a_nan = std::isnan(va), b_nan = std::isnan(vb);
    if (a_nan != b_nan) return descending ? a_nan : b_nan;  // NaN first when descending, last ascending
    if (a_nan) return false;
    return descending ? rank(va) > rank(vb) : rank(va) < rank(vb);
  });
  return index;
}

// values, indices = sort(x [rows, cols], axis) or topk(x, k) along the last axis.
Case sort_case(ScalarType dtype, int64_t rows, int64_t cols, int axis, bool descending, int64_t k) {
  const bool topk_op = k > 0;
  const int64_t out_cols = topk_op ? k : cols;
  Case c;
  c.name = absl::StrCat(case_name(topk_op ? absl::StrCat("topk", k) : std::string("sort"), dtype, {rows, cols}),
                        "/axis", axis, descending ? "/descending" : "/ascending");
  c.build = [=] {
    Builder b(topk_op ? "topk" : "sort");
    Value x = b.arg("x", ptr(ElementType{dtype}));
    Value values = b.arg("values", ptr(ElementType{dtype})), indices = b.arg("indices", ptr(i32));
    Value v = load(x + flat_offsets({rows, cols}));
    Sorted sorted = topk_op ? topk(v, k, descending) : sort(v, axis, descending);
    Value out_offsets = flat_offsets({rows, out_cols});
    store(values + out_offsets, sorted.values);
    store(indices + out_offsets, sorted.indices);
    return b.finish();
  };
  // A few distinct values make ties common; floats also get NaN and signed zeros.
  Generator generate = is_float(dtype) ? with_specials(integers(-6, 6), 0.03) : integers(-6, 6);
  c.tensors = {{"x", dtype, {rows, cols}, Role::kInput, generate, std::nullopt},
               {"values", dtype, {rows, out_cols}, Role::kOutput, nullptr, Tolerance::exact()},
               {"indices", kI32, {rows, out_cols}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [=](Tensors& t) {
    const int64_t lines = axis == 0 ? cols : rows, length = axis == 0 ? rows : cols;
    const auto at = [&](int64_t line, int64_t i, int64_t width) { return axis == 0 ? i * width + line : line * width + i; };
    for (int64_t line = 0; line < lines; ++line) {
      std::vector<double> values(static_cast<size_t>(length));
      for (int64_t i = 0; i < length; ++i) values[static_cast<size_t>(i)] = t["x"].get(at(line, i, cols));
      const std::vector<int64_t> order = ordered(values, descending);
      for (int64_t r = 0; r < (topk_op ? k : length); ++r) {
        const int64_t source = order[static_cast<size_t>(r)];
        t["values"].set(at(line, r, out_cols), values[static_cast<size_t>(source)]);
        t["indices"].set_int(at(line, r, out_cols), source);
      }
    }
  };
  return c;
}

}  // namespace

std::vector<Case> sort_cases() {
  std::vector<Case> cases;
  for (ScalarType dtype : {kF32, kBf16, kI32}) {
    for (bool descending : {false, true}) {
      cases.push_back(sort_case(dtype, 16, 64, 1, descending, 0));
      cases.push_back(sort_case(dtype, 32, 16, 0, descending, 0));
      cases.push_back(sort_case(dtype, 8, 128, 1, descending, 16));
    }
  }
  // The MoE router: top-16 of 896 experts per token, ties to the lower expert.
  for (ScalarType dtype : {kF32, kBf16}) cases.push_back(sort_case(dtype, 4, 896, 1, true, 16));
  cases.push_back(sort_case(kF32, 2, 64, 1, false, 8));
  return cases;
}

}  // namespace monotile::conformance
