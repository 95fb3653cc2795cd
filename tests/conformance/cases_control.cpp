// Runtime control flow: range with one and two carried values and runtime bounds, if_ with
// results (per instance), while_ with a data-dependent trip count, and nesting; plus a
// device_assert that holds and i1 logic.
#include <cmath>

#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

// Row sums and running maxima of x [16, n] over 16-column blocks: range(0, n, 16) with two carried
// tiles; n is a scalar argument.
Case range_case(int64_t n) {
  Case c;
  c.name = "range_two_carried/f32/[16, " + std::to_string(n) + "]";
  c.build = [n] {
    Builder b("range_two_carried");
    Value x = b.arg("x", ptr(f32)), sums = b.arg("sums", ptr(f32)), maxes = b.arg("maxes", ptr(f32));
    Value cols = b.arg("n", i32);
    Value rows = arange(0, 16);
    auto [total, largest] = range(0, cols, 16, zeros({16}, f32), full({16}, -1e30, f32),
                                  [&](Value k0, Value total, Value largest) {
                                    Value block = load(x + col(rows) * n + row(k0 + arange(0, 16)));
                                    return std::array{total + sum(block, 1), maximum(largest, max(block, 1))};
                                  });
    store(sums + rows, total);
    store(maxes + rows, largest);
    return b.finish();
  };
  c.tensors = {{"x", kF32, {16, n}, Role::kInput, uniform(-10, 10), std::nullopt},
               {"sums", kF32, {16}, Role::kOutput, nullptr, Tolerance{1e-4, 1e-5}},
               {"maxes", kF32, {16}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.scalars = {KernelArg::integer(kI32, n)};
  c.reference = [n](Tensors& t) {
    for (int64_t r = 0; r < 16; ++r) {
      double total = 0, largest = -1e30;
      for (int64_t k = 0; k < n; ++k) total += t["x"].get(r * n + k), largest = std::max(largest, t["x"].get(r * n + k));
      t["sums"].set(r, total);
      t["maxes"].set(r, largest);
    }
  };
  return c;
}

// Instance p: if x[p] > 0 then (x[p] * 2, 1) else (x[p] - 1, 0); nested: the then branch also
// runs a loop that adds 0.5 three times.
Case if_case() {
  Case c;
  c.name = "if_with_results_nested_range/f32/[32]";
  c.grid = {32, 1, 1};
  c.build = [] {
    Builder b("if_results");
    Value x = b.arg("x", ptr(f32)), out = b.arg("out", ptr(f32)), taken = b.arg("taken", ptr(i32));
    Value p = program_id(0);
    Value v = load(x + p);
    auto [result, flag] = if_(
        v > 0,
        [&] {
          Value doubled = range(0, 3, 1, v * 2, [&](Value, Value acc) { return acc + 0.5f; });
          return std::array{doubled, full({}, 1, i32)};
        },
        [&] { return std::array{v - 1, full({}, 0, i32)}; });
    store(out + p, result);
    store(taken + p, flag);
    return b.finish();
  };
  c.tensors = {{"x", kF32, {32}, Role::kInput, uniform(-5, 5), std::nullopt},
               {"out", kF32, {32}, Role::kOutput, nullptr, Tolerance::exact()},
               {"taken", kI32, {32}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    for (int64_t p = 0; p < 32; ++p) {
      const double v = t["x"].get(p);
      float then_value = static_cast<float>(v) * 2;
      for (int i = 0; i < 3; ++i) then_value += 0.5f;
      t["out"].set(p, v > 0 ? then_value : static_cast<float>(static_cast<float>(v) - 1));
      t["taken"].set_int(p, v > 0);
    }
  };
  return c;
}

// Instance p counts the Collatz steps of x[p] with while_ (a data-dependent trip count).
Case while_case() {
  Case c;
  c.name = "while_collatz/i32/[16]";
  c.grid = {16, 1, 1};
  c.build = [] {
    Builder b("collatz");
    Value x = b.arg("x", ptr(i32)), steps = b.arg("steps", ptr(i32));
    Value p = program_id(0);
    std::array<Value, 2> final_values = while_(
        load(x + p), full({}, 0, i32), [](Value n, Value) { return n != 1; },
        [](Value n, Value count) { return std::array{where(n % 2 == 0, n / 2, 3 * n + 1), count + 1}; });
    store(steps + p, final_values[1]);
    return b.finish();
  };
  c.tensors = {{"x", kI32, {16}, Role::kInput, integers(1, 1000), std::nullopt},
               {"steps", kI32, {16}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    for (int64_t p = 0; p < 16; ++p) {
      int64_t n = t["x"].get_int(p), count = 0;
      while (n != 1) n = n % 2 == 0 ? n / 2 : 3 * n + 1, ++count;
      t["steps"].set_int(p, count);
    }
  };
  return c;
}

// device_assert on a condition that holds everywhere changes nothing (and must not fire).
Case assert_holds_case() {
  Case c;
  c.name = "device_assert_holds/f32/[16, 64]";
  c.grid = {4, 1, 1};
  c.build = [] {
    Builder b("assert_holds");
    Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
    Value offsets = program_id(0) * 1024 + flat_offsets({16, 64});
    Value v = load(x + offsets);
    device_assert(v >= 0, "inputs are non-negative");
    device_assert(program_id(0) < num_programs(0), "program ids stay inside the grid");
    store(y + offsets, sqrt(v));
    return b.finish();
  };
  c.tensors = {{"x", kF32, {64, 64}, Role::kInput, uniform(0, 100), std::nullopt},
               {"y", kF32, {64, 64}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < t["x"].size(); ++i) t["y"].set(i, std::sqrt(t["x"].get(i)));
  };
  return c;
}

// i1 logic: !, &, |, ^ on comparison results, and i1 -> i32.
Case logic_case() {
  Case c;
  c.name = "i1_logic/i32/[64, 32]";
  c.build = [] {
    Builder b("logic");
    Value pa = b.arg("a", ptr(i32)), pb = b.arg("b", ptr(i32)), out = b.arg("out", ptr(i32));
    Value offsets = flat_offsets({64, 32});
    Value a = load(pa + offsets), bv = load(pb + offsets);
    Value lt = a < bv, eq = a == bv, odd = (a & 1) == 1;
    Value mixed = (((!lt) & odd) | (eq ^ odd)).to(i32) * 4 + (!eq).to(i32) * 2 + (lt | eq).to(i32);
    store(out + offsets, mixed);
    return b.finish();
  };
  c.tensors = {{"a", kI32, {64, 32}, Role::kInput, integers(0, 4), std::nullopt},
               {"b", kI32, {64, 32}, Role::kInput, integers(0, 4), std::nullopt},
               {"out", kI32, {64, 32}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < t["a"].size(); ++i) {
      const int64_t a = t["a"].get_int(i), b = t["b"].get_int(i);
      const bool lt = a < b, eq = a == b, odd = (a & 1) == 1;
      t["out"].set_int(i, int64_t{(!lt && odd) || (eq != odd)} * 4 + int64_t{!eq} * 2 + int64_t{lt || eq});
    }
  };
  return c;
}

}  // namespace

std::vector<Case> control_cases() {
  return {range_case(64), range_case(160), range_case(16), if_case(), while_case(), assert_holds_case(), logic_case()};
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (auto family : {elementwise_cases, math_cases, convert_cases, shape_cases, memory_cases, reduce_cases,
                      sort_cases, dot_cases, control_cases}) {
    std::vector<Case> more = family();
    cases.insert(cases.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return cases;
}

}  // namespace monotile::conformance
