// Reductions (sum, max, min, xor_sum, a custom combine) along each axis, argmax/argmin with ties
// and NaN, cumsum and a custom associative scan (forward and reverse), against float64 references.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

// Views a [rows, cols] tensor's line `line` along `axis` as (index k) -> flat element.
struct Lines {
  int64_t rows, cols;
  int axis;
  int64_t count() const { return axis == 0 ? cols : rows; }
  int64_t length() const { return axis == 0 ? rows : cols; }
  int64_t at(int64_t line, int64_t k) const { return axis == 0 ? k * cols + line : line * cols + k; }
};

// Float sums differ from the float64 reference by f32 accumulation (growing with the length) and
// by the final rounding to the dtype.
Tolerance sum_tolerance(ScalarType dtype, int64_t length) {
  const Tolerance base = Tolerance::for_dtype(dtype);
  return {base.abs + 1e-5 * static_cast<double>(length), base.rel};
}

using Fold = std::function<void(const HostTensor& x, const Lines& lines, HostTensor& out)>;

// out = reduce(x [rows, cols], axis) with one instance; out has the other dim's length.
Case reduction_case(const std::string& op, ScalarType dtype, ScalarType out_type, int64_t rows, int64_t cols, int axis,
                    std::function<Value(Value, int)> body, Generator generate, Fold fold,
                    std::optional<Tolerance> tolerance = std::nullopt) {
  Case c;
  c.name = absl::StrCat(case_name(op, dtype, {rows, cols}), "/axis", axis);
  const int64_t out_len = axis == 0 ? cols : rows;
  c.build = [=] {
    Builder b("reduce_" + op);
    Value x = b.arg("x", ptr(ElementType{dtype})), out = b.arg("out", ptr(ElementType{out_type}));
    store(out + arange(0, out_len), body(load(x + flat_offsets({rows, cols})), axis));
    return b.finish();
  };
  c.tensors = {{"x", dtype, {rows, cols}, Role::kInput, generate, std::nullopt},
               {"out", out_type, {out_len}, Role::kOutput, nullptr, tolerance}};
  c.reference = [fold, rows, cols, axis](Tensors& t) { fold(t["x"], Lines{rows, cols, axis}, t["out"]); };
  return c;
}

Fold float_fold(std::function<double(double, double)> combine) {
  return [combine](const HostTensor& x, const Lines& lines, HostTensor& out) {
    for (int64_t line = 0; line < lines.count(); ++line) {
      double acc = x.get(lines.at(line, 0));
      for (int64_t k = 1; k < lines.length(); ++k) acc = combine(acc, x.get(lines.at(line, k)));
      out.set(line, acc);
    }
  };
}
Fold int_fold(std::function<int64_t(int64_t, int64_t)> combine) {
  return [combine](const HostTensor& x, const Lines& lines, HostTensor& out) {
    for (int64_t line = 0; line < lines.count(); ++line) {
      int64_t acc = x.get_int(lines.at(line, 0));
      for (int64_t k = 1; k < lines.length(); ++k) acc = combine(acc, x.get_int(lines.at(line, k)));
      out.set_int(line, acc);
    }
  };
}
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b); }

// NaN is greater than every number; ties keep the lower index.
Fold arg_fold(bool is_max) {
  return [is_max](const HostTensor& x, const Lines& lines, HostTensor& out) {
    for (int64_t line = 0; line < lines.count(); ++line) {
      int64_t best = 0;
      for (int64_t k = 1; k < lines.length(); ++k) {
        const double a = x.get(lines.at(line, k)), b = x.get(lines.at(line, best));
        const bool better = is_max ? (std::isnan(a) ? !std::isnan(b) : (!std::isnan(b) && a > b))
                                   : (std::isnan(b) ? !std::isnan(a) : (!std::isnan(a) && a < b));
        if (better) best = k;
      }
      out.set_int(line, best);
    }
  };
}

void add_reductions(std::vector<Case>& cases) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{16, 64}, {128, 16}, {32, 32}};
  for (auto [rows, cols] : shapes) {
    for (int axis : {0, 1}) {
      for (ScalarType dtype : {kF32, kBf16, kF16}) {
        // Sums of ~100 terms: the reference sums in double, the kernel in f32 in its own order.
        const int64_t length = axis == 0 ? rows : cols;
        cases.push_back(reduction_case("sum", dtype, dtype, rows, cols, axis,
                                       [](Value x, int a) { return sum(x, a); }, uniform(-1, 1),
                                       float_fold([](double a, double b) { return a + b; }),
                                       sum_tolerance(dtype, length)));
        cases.push_back(reduction_case("max", dtype, dtype, rows, cols, axis, [](Value x, int a) { return max(x, a); },
                                       with_specials(uniform(-100, 100), 0.002), float_fold(nan_max),
                                       Tolerance::exact()));
        cases.push_back(reduction_case("min", dtype, dtype, rows, cols, axis, [](Value x, int a) { return min(x, a); },
                                       with_specials(uniform(-100, 100), 0.002), float_fold(nan_min),
                                       Tolerance::exact()));
        cases.push_back(reduction_case("argmax", dtype, kI32, rows, cols, axis,
                                       [](Value x, int a) { return argmax(x, a); },
                                       with_specials(integers(-4, 4), 0.01), arg_fold(true)));
        cases.push_back(reduction_case("argmin", dtype, kI32, rows, cols, axis,
                                       [](Value x, int a) { return argmin(x, a); },
                                       with_specials(integers(-4, 4), 0.01), arg_fold(false)));
      }
      for (ScalarType dtype : {kI32, kI64}) {
        cases.push_back(reduction_case(
            "sum", dtype, dtype, rows, cols, axis, [](Value x, int a) { return sum(x, a); },
            dtype == kI32 ? integers(INT32_MIN, INT32_MAX) : integers(INT64_MIN, INT64_MAX),
            int_fold([](int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); })));
        cases.push_back(reduction_case("max", dtype, dtype, rows, cols, axis, [](Value x, int a) { return max(x, a); },
                                       integers(-1000, 1000), int_fold([](int64_t a, int64_t b) { return std::max(a, b); })));
        cases.push_back(reduction_case("min", dtype, dtype, rows, cols, axis, [](Value x, int a) { return min(x, a); },
                                       integers(-1000, 1000), int_fold([](int64_t a, int64_t b) { return std::min(a, b); })));
        cases.push_back(reduction_case("xor_sum", dtype, dtype, rows, cols, axis,
                                       [](Value x, int a) { return xor_sum(x, a); }, integers(0, 1 << 30),
                                       int_fold([](int64_t a, int64_t b) { return a ^ b; })));
        cases.push_back(reduction_case("argmax", dtype, kI32, rows, cols, axis,
                                       [](Value x, int a) { return argmax(x, a); }, integers(-5, 5), arg_fold(true)));
      }
      // A custom combine: the largest magnitude (associative and commutative).
      cases.push_back(reduction_case(
          "reduce_max_abs", kF32, kF32, rows, cols, axis,
          [](Value x, int a) { return reduce(x, a, [](Value p, Value q) { return maximum(abs(p), abs(q)); }); },
          uniform(-100, 100), float_fold([](double a, double b) { return std::max(std::fabs(a), std::fabs(b)); }),
          Tolerance::exact()));
      cases.push_back(reduction_case(
          "reduce_wrapping_product", kI32, kI32, rows, cols, axis,
          [](Value x, int a) { return reduce(x, a, [](Value p, Value q) { return p * q; }); }, integers(-7, 7),
          int_fold([](int64_t a, int64_t b) {
            return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b)));
          })));
    }
  }
  // Rows of 128: every thread holds several rows (8 of f32 on 64-lane warps, 16 of i64), so the
  // lanes split the rows between them at the first shuffle levels and gather them back. Their own
  // op names ("sum_rows", ...) so that runs taking one case per op and dtype take them too.
  constexpr int64_t kManyRows = 64, kLongRow = 128;
  for (ScalarType dtype : {kF32, kBf16, kF16}) {
    cases.push_back(reduction_case(
        "sum_rows", dtype, dtype, kManyRows, kLongRow, 1, [](Value x, int a) { return sum(x, a); },
        uniform(-1, 1), float_fold([](double a, double b) { return a + b; }),
        sum_tolerance(dtype, kLongRow)));
    cases.push_back(reduction_case(
        "max_rows", dtype, dtype, kManyRows, kLongRow, 1, [](Value x, int a) { return max(x, a); },
        with_specials(uniform(-100, 100), 0.002), float_fold(nan_max), Tolerance::exact()));
    cases.push_back(reduction_case(
        "argmin_rows", dtype, kI32, kManyRows, kLongRow, 1,
        [](Value x, int a) { return argmin(x, a); }, with_specials(integers(-4, 4), 0.01),
        arg_fold(false)));
  }
  for (ScalarType dtype : {kI32, kI64}) {
    cases.push_back(reduction_case(
        "xor_sum_rows", dtype, dtype, kManyRows, kLongRow, 1,
        [](Value x, int a) { return xor_sum(x, a); }, integers(0, 1 << 30),
        int_fold([](int64_t a, int64_t b) { return a ^ b; })));
    cases.push_back(reduction_case(
        "argmax_rows", dtype, kI32, kManyRows, kLongRow, 1,
        [](Value x, int a) { return argmax(x, a); }, integers(-5, 5), arg_fold(true)));
  }
  cases.push_back(reduction_case(
      "reduce_max_abs_rows", kF32, kF32, kManyRows, kLongRow, 1,
      [](Value x, int a) {
        return reduce(x, a, [](Value p, Value q) { return maximum(abs(p), abs(q)); });
      },
      uniform(-100, 100),
      float_fold([](double a, double b) { return std::max(std::fabs(a), std::fabs(b)); }),
      Tolerance::exact()));
  // Whole-tile reductions to a scalar.
  Case whole;
  whole.name = "sum_all_max_all/f32/[32, 64]";
  whole.build = [] {
    Builder b("reduce_all");
    Value x = b.arg("x", ptr(f32)), out = b.arg("out", ptr(f32));
    Value v = load(x + flat_offsets({32, 64}));
    store(out, sum(v));
    store(out + 1, max(v));
    store(out + 2, sum(sum(v, 1, /*keep_dims=*/true)));
    return b.finish();
  };
  whole.tensors = {{"x", kF32, {32, 64}, Role::kInput, uniform(-1, 1), std::nullopt},
                   {"out", kF32, {3}, Role::kOutput, nullptr, Tolerance{1e-3, 1e-5}}};
  whole.reference = [](Tensors& t) {
    double total = 0, largest = -INFINITY;
    for (int64_t i = 0; i < t["x"].size(); ++i) total += t["x"].get(i), largest = std::max(largest, t["x"].get(i));
    t["out"].set(0, total);
    t["out"].set(1, largest);
    t["out"].set(2, total);
  };
  cases.push_back(whole);
}

// out = scan(x [rows, cols], axis, reverse).
Case scan_case(const std::string& op, ScalarType dtype, int64_t rows, int64_t cols, int axis, bool reverse,
               std::function<Value(Value, int, bool)> body, std::function<double(double, double)> combine,
               Generator generate, std::optional<Tolerance> tolerance) {
  Case c;
  c.name = absl::StrCat(case_name(op, dtype, {rows, cols}), "/axis", axis, reverse ? "/reverse" : "");
  c.build = [=] {
    Builder b("scan_" + op);
    Value x = b.arg("x", ptr(ElementType{dtype})), out = b.arg("out", ptr(ElementType{dtype}));
    Value offsets = flat_offsets({rows, cols});
    store(out + offsets, body(load(x + offsets), axis, reverse));
    return b.finish();
  };
  c.tensors = {{"x", dtype, {rows, cols}, Role::kInput, generate, std::nullopt},
               {"out", dtype, {rows, cols}, Role::kOutput, nullptr, tolerance}};
  c.reference = [=](Tensors& t) {
    const Lines lines{rows, cols, axis};
    for (int64_t line = 0; line < lines.count(); ++line) {
      double acc = 0;
      for (int64_t step = 0; step < lines.length(); ++step) {
        const int64_t k = reverse ? lines.length() - 1 - step : step;
        const double x = t["x"].get(lines.at(line, k));
        acc = step == 0 ? x : combine(acc, x);
        t["out"].set(lines.at(line, k), acc);
      }
    }
  };
  return c;
}

void add_scans(std::vector<Case>& cases) {
  for (int axis : {0, 1}) {
    for (bool reverse : {false, true}) {
      for (ScalarType dtype : {kF32, kBf16, kI32}) {
        const bool floats = is_float(dtype);
        cases.push_back(scan_case("cumsum", dtype, 16, 64, axis, reverse,
                                  [](Value x, int a, bool r) { return cumsum(x, a, r); },
                                  [](double a, double b) { return a + b; },
                                  floats ? uniform(-1, 1) : integers(-1000, 1000),
                                  floats ? std::optional(sum_tolerance(dtype, axis == 0 ? 16 : 64)) : std::nullopt));
      }
      cases.push_back(scan_case(
          "scan_running_max", kF32, 32, 32, axis, reverse,
          [](Value x, int a, bool r) { return associative_scan(x, a, [](Value p, Value q) { return maximum(p, q); }, r); },
          [](double a, double b) { return std::max(a, b); }, uniform(-100, 100), Tolerance::exact()));
    }
  }
}

}  // namespace

std::vector<Case> reduce_cases() {
  std::vector<Case> cases;
  add_reductions(cases);
  add_scans(cases);
  return cases;
}

}  // namespace monotile::conformance
