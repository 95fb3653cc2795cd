// Creation ops (arange, full, zeros, program ids over a 3-D grid) and shape ops (broadcast_to,
// expand_dims, reshape, trans, join, split, cat), all exact, over several dtypes.
#include "absl/strings/str_cat.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

const ScalarType kDtypes[] = {kF32, kBf16, kI32, kI8};

Generator values_for(ScalarType dtype) { return is_float(dtype) ? uniform(-100, 100) : integers(-100, 100); }

std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}
int64_t flatten(const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

// out (out_shape) = body(x loaded as in_shape); out[i] = x[source(i)].
Case move_case(const std::string& op, ScalarType dtype, std::vector<int64_t> in_shape, std::vector<int64_t> out_shape,
               std::function<Value(Value)> body, std::function<int64_t(int64_t)> source) {
  Case c;
  c.name = absl::StrCat(case_name(op, dtype, in_shape), "->", shape_name(out_shape));
  c.build = [=] {
    Builder b("shape_" + op);
    Value x = b.arg("x", ptr(ElementType{dtype})), y = b.arg("y", ptr(ElementType{dtype}));
    store(y + flat_offsets(out_shape), body(load(x + flat_offsets(in_shape))));
    return b.finish();
  };
  c.tensors = {{"x", dtype, in_shape, Role::kInput, values_for(dtype), std::nullopt},
               {"y", dtype, out_shape, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [source](Tensors& t) {
    for (int64_t i = 0; i < t["y"].size(); ++i) t["y"].set(i, t["x"].get(source(i)));
  };
  return c;
}

void add_moves(std::vector<Case>& cases, ScalarType dtype) {
  // broadcast_to: size-1 dims and missing leading dims stretch.
  cases.push_back(move_case("broadcast_to", dtype, {1, 32}, {16, 32},
                            [](Value x) { return broadcast_to(x, {16, 32}); }, [](int64_t i) { return i % 32; }));
  cases.push_back(move_case("broadcast_to", dtype, {16, 1}, {16, 32},
                            [](Value x) { return broadcast_to(x, {16, 32}); }, [](int64_t i) { return i / 32; }));
  cases.push_back(move_case("broadcast_to", dtype, {32}, {4, 8, 32},
                            [](Value x) { return broadcast_to(x, {4, 8, 32}); }, [](int64_t i) { return i % 32; }));
  cases.push_back(move_case("expand_dims", dtype, {64}, {1, 64}, [](Value x) { return expand_dims(x, 0); },
                            [](int64_t i) { return i; }));
  cases.push_back(move_case("reshape", dtype, {64, 32}, {32, 64}, [](Value x) { return reshape(x, {32, 64}); },
                            [](int64_t i) { return i; }));
  cases.push_back(move_case("reshape", dtype, {16, 32}, {4, 4, 32}, [](Value x) { return reshape(x, {4, -1, 32}); },
                            [](int64_t i) { return i; }));
  cases.push_back(move_case("trans", dtype, {16, 64}, {64, 16}, [](Value x) { return trans(x); }, [](int64_t i) {
    const std::vector<int64_t> out = unflatten(i, {64, 16});
    return flatten({out[1], out[0]}, {16, 64});
  }));
  // Result dim i is x's dim perm[i].
  cases.push_back(move_case("trans_201", dtype, {2, 16, 32}, {32, 2, 16}, [](Value x) { return trans(x, {2, 0, 1}); },
                            [](int64_t i) {
                              const std::vector<int64_t> out = unflatten(i, {32, 2, 16});
                              return flatten({out[1], out[2], out[0]}, {2, 16, 32});
                            }));
  // join(x, x + ...) is tested through two inputs below; here split then join back swapped.
  cases.push_back(move_case("split_join", dtype, {32, 2}, {32, 2},
                            [](Value x) {
                              auto [even, odd] = split(x);
                              return join(odd, even);
                            },
                            [](int64_t i) { return i ^ 1; }));
  cases.push_back(move_case("cat_self_axis0", dtype, {16, 32}, {32, 32}, [](Value x) { return cat(x, x, 0); },
                            [](int64_t i) { return i % (16 * 32); }));
  cases.push_back(move_case("cat_self_axis1", dtype, {16, 32}, {16, 64}, [](Value x) { return cat(x, x, 1); },
                            [](int64_t i) { return (i / 64) * 32 + i % 32; }));
}

// out = join(a, b) [n, 2] and cat(a, b) along 0: two distinct inputs.
Case join_cat_case(ScalarType dtype) {
  Case c;
  c.name = case_name("join_cat", dtype, {32});
  c.build = [dtype] {
    Builder b("join_cat");
    Value pa = b.arg("a", ptr(ElementType{dtype})), pb = b.arg("b", ptr(ElementType{dtype}));
    Value joined = b.arg("joined", ptr(ElementType{dtype})), cat_out = b.arg("catted", ptr(ElementType{dtype}));
    Value a = load(pa + arange(0, 32)), bv = load(pb + arange(0, 32));
    store(joined + flat_offsets({32, 2}), join(a, bv));
    store(cat_out + arange(0, 64), cat(a, bv, 0));
    return b.finish();
  };
  c.tensors = {{"a", dtype, {32}, Role::kInput, values_for(dtype), std::nullopt},
               {"b", dtype, {32}, Role::kInput, values_for(dtype), std::nullopt},
               {"joined", dtype, {32, 2}, Role::kOutput, nullptr, Tolerance::exact()},
               {"catted", dtype, {64}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < 32; ++i) {
      t["joined"].set(2 * i, t["a"].get(i));
      t["joined"].set(2 * i + 1, t["b"].get(i));
      t["catted"].set(i, t["a"].get(i));
      t["catted"].set(32 + i, t["b"].get(i));
    }
  };
  return c;
}

Case creation_case(ScalarType dtype) {
  Case c;
  c.name = case_name("arange_full_zeros", dtype, {64});
  c.build = [dtype] {
    Builder b("creation");
    Value ranged = b.arg("ranged", ptr(i32)), filled = b.arg("filled", ptr(ElementType{dtype}));
    Value zeroed = b.arg("zeroed", ptr(ElementType{dtype})), from_scalar = b.arg("from_scalar", ptr(ElementType{dtype}));
    Value scalar = b.arg("scalar", ElementType{dtype});
    store(ranged + arange(0, 64), arange(5, 69));
    store(filled + flat_offsets({4, 16}), full({4, 16}, 3, ElementType{dtype}));
    store(zeroed + arange(0, 64), zeros({64}, ElementType{dtype}));
    store(from_scalar + arange(0, 64), full({64}, scalar, ElementType{dtype}));
    return b.finish();
  };
  c.tensors = {{"ranged", kI32, {64}, Role::kOutput, nullptr, std::nullopt},
               {"filled", dtype, {4, 16}, Role::kOutput, nullptr, Tolerance::exact()},
               {"zeroed", dtype, {64}, Role::kOutput, nullptr, Tolerance::exact()},
               {"from_scalar", dtype, {64}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.scalars = {is_float(dtype) ? KernelArg::floating(dtype, -7.5) : KernelArg::integer(dtype, -7)};
  c.reference = [dtype](Tensors& t) {
    for (int64_t i = 0; i < 64; ++i) {
      t["ranged"].set_int(i, 5 + i);
      t["filled"].set(i, 3);
      t["zeroed"].set(i, 0);
      t["from_scalar"].set(i, is_float(dtype) ? -7.5 : -7);
    }
  };
  return c;
}

// Every instance of a 4x3x2 grid writes its ids and the grid's size.
Case program_id_case() {
  Case c;
  c.name = "program_id_num_programs/i32/[2, 3, 4]";
  c.grid = {4, 3, 2};
  c.build = [] {
    Builder b("program_ids");
    Value ids = b.arg("ids", ptr(i32)), counts = b.arg("counts", ptr(i32));
    Value x = program_id(0), y = program_id(1), z = program_id(2);
    store(ids + (z * 3 + y) * 4 + x, x + 16 * y + 256 * z);
    Value slot = counts + ((z * 3 + y) * 4 + x) * 3;
    store(slot, num_programs(0));
    store(slot + 1, num_programs(1));
    store(slot + 2, num_programs(2));
    return b.finish();
  };
  c.tensors = {{"ids", kI32, {2, 3, 4}, Role::kOutput, nullptr, std::nullopt},
               {"counts", kI32, {24, 3}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    for (int64_t z = 0; z < 2; ++z) {
      for (int64_t y = 0; y < 3; ++y) {
        for (int64_t x = 0; x < 4; ++x) {
          const int64_t linear = (z * 3 + y) * 4 + x;
          t["ids"].set_int(linear, x + 16 * y + 256 * z);
          t["counts"].set_int(linear * 3, 4);
          t["counts"].set_int(linear * 3 + 1, 3);
          t["counts"].set_int(linear * 3 + 2, 2);
        }
      }
    }
  };
  return c;
}

}  // namespace

std::vector<Case> shape_cases() {
  std::vector<Case> cases;
  for (ScalarType dtype : kDtypes) {
    add_moves(cases, dtype);
    cases.push_back(join_cat_case(dtype));
    cases.push_back(creation_case(dtype));
  }
  cases.push_back(program_id_case());
  return cases;
}

}  // namespace monotile::conformance
