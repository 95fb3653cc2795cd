// Runtime control flow with values carried through it (C++ loops, by contrast, unroll at build
// time). A body is a C++ lambda called once, at build time, to build the region:
//   auto acc = range(0, K, 64, zeros({16}, f32), [&](Value k, Value acc) { return acc + ...; });
//   auto [m, l] = range(lo, hi, 1, m0, l0, [&](Value i, Value m, Value l) {
//     return std::array{m2, l2}; });
// With N carried values the call returns nothing (N = 0), a Value (N = 1) or std::array<Value, N>;
// a body returns the same (a Value, or std::array / std::vector / std::tuple of Values). A value
// made inside a body is visible only inside it: return it to use it after the loop.
#pragma once

#include <array>
#include <functional>
#include "support/source_location.h"
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dsl/value.h"

namespace monotile::dsl {
namespace detail {

using LoopBody = std::function<std::vector<Value>(Value index, const std::vector<Value>& carried)>;
using BranchBody = std::function<std::vector<Value>()>;
using CarriedBody = std::function<std::vector<Value>(const std::vector<Value>& carried)>;

std::vector<Value> build_for(const Operand& lo, const Operand& hi, const Operand& step,
                             const std::vector<Operand>& init, const LoopBody& body,
                             const SourceLocation& loc);
std::vector<Value> build_if(const Value& cond, const BranchBody& then_body,
                            const BranchBody* else_body, const SourceLocation& loc);
std::vector<Value> build_while(const std::vector<Operand>& init, const CarriedBody& cond,
                               const CarriedBody& body, const SourceLocation& loc);

inline Operand as_operand(const Operand& x, const SourceLocation&) { return x; }
inline Operand as_operand(const Value& x, const SourceLocation& loc) { return Operand(x, loc); }
template <typename T>
  requires std::is_arithmetic_v<std::decay_t<T>>
Operand as_operand(T x, const SourceLocation& loc) {
  return Operand(x, loc);
}

template <typename R>
std::vector<Value> to_values(R&& result) {
  using T = std::decay_t<R>;
  if constexpr (std::is_same_v<T, Value>) {
    return {result};
  } else if constexpr (std::is_same_v<T, std::vector<Value>>) {
    return result;
  } else {
    return std::apply([](auto&&... each) { return std::vector<Value>{Value(each)...}; }, result);
  }
}

template <typename F, size_t... I, typename... Prefix>
std::vector<Value> call_spread_at(F& f, const std::vector<Value>& values, std::index_sequence<I...>,
                                  Prefix... prefix) {
  if constexpr (std::is_void_v<decltype(f(prefix..., values[I]...))>) {
    f(prefix..., values[I]...);
    return {};
  } else {
    return to_values(f(prefix..., values[I]...));
  }
}

// Calls f(prefix..., values[0], ..., values[N-1]) and returns what it yields as a vector.
template <size_t N, typename F, typename... Prefix>
std::vector<Value> call_spread(F& f, const std::vector<Value>& values, Prefix... prefix) {
  return call_spread_at(f, values, std::make_index_sequence<N>{}, prefix...);
}

template <size_t N>
auto from_values(const std::vector<Value>& values) {
  if constexpr (N == 0) {
    return;
  } else if constexpr (N == 1) {
    return values[0];
  } else {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::array<Value, N>{values[I]...};
    }(std::make_index_sequence<N>{});
  }
}

template <size_t N, typename Tuple>
std::vector<Operand> leading_operands(Tuple& all, const SourceLocation& loc) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return std::vector<Operand>{as_operand(std::get<I>(all), loc)...};
  }(std::make_index_sequence<N>{});
}

}  // namespace detail

// for (i = lo; i < hi; i += step) with carried values: range(lo, hi, step, init..., body) where
// body(Value i, Value carried...) returns the next carried values. lo, hi, step are integer
// scalars or literals (the index has their common dtype, i32 for literals); step must be positive.
// The location is that of `lo` at the call.
template <typename... Rest>
auto range(const Operand& lo, const Operand& hi, const Operand& step, Rest&&... rest) {
  static_assert(sizeof...(Rest) >= 1, "range(lo, hi, step, carried..., body)");
  constexpr size_t kCarried = sizeof...(Rest) - 1;
  auto all = std::forward_as_tuple(std::forward<Rest>(rest)...);
  auto& body = std::get<kCarried>(all);
  std::vector<Value> results = detail::build_for(
      lo, hi, step, detail::leading_operands<kCarried>(all, lo.loc()),
      [&](Value index, const std::vector<Value>& carried) {
        return detail::call_spread<kCarried>(body, carried, index);
      },
      lo.loc());
  return detail::from_values<kCarried>(results);
}

// range with as many carried values as `init` holds, a count known when the kernel is built rather
// than when it is written (the depth of a software pipeline, say): body(Value i, carried) returns
// the next values, as many and of the same types.
inline std::vector<Value> range_carrying(
    const Operand& lo, const Operand& hi, const Operand& step, const std::vector<Value>& init,
    const std::function<std::vector<Value>(Value, const std::vector<Value>&)>& body) {
  std::vector<Operand> operands;
  for (const Value& value : init) operands.emplace_back(value, lo.loc());
  return detail::build_for(lo, hi, step, operands, body, lo.loc());
}

// if (cond) then_body() else else_body(): both return the same values (types and count), which
// if_ returns (nothing, a Value or std::array<Value, N>). cond is an i1 scalar.
template <typename Then, typename Else>
auto if_(const Value& cond, Then&& then_body, Else&& else_body,
         SourceLocation loc = SourceLocation::current()) {
  using Result = decltype(then_body());
  detail::BranchBody then_fn = [&] { return detail::call_spread<0>(then_body, {}); };
  detail::BranchBody else_fn = [&] { return detail::call_spread<0>(else_body, {}); };
  std::vector<Value> results = detail::build_if(cond, then_fn, &else_fn, loc);
  if constexpr (std::is_void_v<Result>) {
    return;
  } else if constexpr (std::is_same_v<std::decay_t<Result>, Value>) {
    return results.at(0);
  } else if constexpr (std::is_same_v<std::decay_t<Result>, std::vector<Value>>) {
    return results;
  } else {
    return detail::from_values<std::tuple_size_v<std::decay_t<Result>>>(results);
  }
}
// if (cond) then_body(), which returns nothing.
template <typename Then>
void if_(const Value& cond, Then&& then_body,
         SourceLocation loc = SourceLocation::current()) {
  detail::BranchBody then_fn = [&] { return detail::call_spread<0>(then_body, {}); };
  detail::build_if(cond, then_fn, nullptr, loc);
}

// while (cond(carried...)) carried = body(carried...): while_(init..., cond, body). cond returns an
// i1 scalar; body returns the next carried values. The location is that of the first init value.
template <typename... Rest>
auto while_(const Operand& first, Rest&&... rest) {
  static_assert(sizeof...(Rest) >= 2, "while_(init..., cond, body)");
  constexpr size_t kCarried = sizeof...(Rest) - 1;  // first + the rest minus cond and body
  auto all = std::forward_as_tuple(first, std::forward<Rest>(rest)...);
  auto& cond = std::get<kCarried>(all);
  auto& body = std::get<kCarried + 1>(all);
  std::vector<Value> results = detail::build_while(
      detail::leading_operands<kCarried>(all, first.loc()),
      [&](const std::vector<Value>& carried) { return detail::call_spread<kCarried>(cond, carried); },
      [&](const std::vector<Value>& carried) { return detail::call_spread<kCarried>(body, carried); },
      first.loc());
  return detail::from_values<kCarried>(results);
}

}  // namespace monotile::dsl
