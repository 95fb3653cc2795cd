// dot(a, b, acc) with f32 accumulation over dtypes and shapes, alone and inside a runtime K loop
// (B as [K, N] or as trans of [N, K]; A as trans of [K, M]);
// the reference accumulates in double, the tolerance grows with K (accumulation order differs).
#include "absl/strings/str_cat.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

// out [M, N] = acc + a [M, K] @ b [K, N]; with `block_k` > 0 a runtime loop over K blocks.
Case dot_case(ScalarType dtype, int64_t m, int64_t k, int64_t n, int64_t block_k) {
  Case c;
  c.name = absl::StrCat("dot/", std::string(scalar_type_name(dtype)), "/", m, "x", k, "x", n,
                        block_k > 0 ? absl::StrCat("/k_loop", block_k) : "");
  c.build = [=] {
    Builder b("dot");
    Value pa = b.arg("a", ptr(ElementType{dtype})), pb = b.arg("b", ptr(ElementType{dtype}));
    Value pacc = b.arg("acc", ptr(f32)), out = b.arg("out", ptr(f32));
    Value acc = load(pacc + flat_offsets({m, n}));
    if (block_k == 0) {
      acc = dot(load(pa + flat_offsets({m, k})), load(pb + flat_offsets({k, n})), acc);
    } else {
      acc = range(0, k, block_k, acc, [&](Value k0, Value acc) {
        Value a = load(pa + col(arange(0, m)) * k + row(k0 + arange(0, block_k)));
        Value bt = load(pb + col(k0 + arange(0, block_k)) * n + row(arange(0, n)));
        return dot(a, bt, acc);
      });
    }
    store(out + flat_offsets({m, n}), acc);
    return b.finish();
  };
  c.tensors = {{"a", dtype, {m, k}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"b", dtype, {k, n}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"acc", kF32, {m, n}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"out", kF32, {m, n}, Role::kOutput, nullptr, Tolerance{2e-6 * static_cast<double>(k), 1e-5}}};
  c.reference = [=](Tensors& t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = t["acc"].get(i * n + j);
        for (int64_t kk = 0; kk < k; ++kk) sum += t["a"].get(i * k + kk) * t["b"].get(kk * n + j);
        t["out"].set(i * n + j, sum);
      }
    }
  };
  return c;
}

// C = acc + A B^T with B given as [N, K] (both operands K-contiguous) in a runtime K loop: the shape
// whose loads the lowering stages through shared memory and pipelines on targets that can.
// With `rows` < m, A holds only `rows` rows and the load masks the others (they read as zero).
Case dot_nt_case(ScalarType dtype, int64_t m, int64_t k, int64_t n, int64_t block_k, int64_t rows = 0) {
  Case c;
  c.name = absl::StrCat("dot_nt/", std::string(scalar_type_name(dtype)), "/", m, "x", k, "x", n, "/k_loop", block_k,
                        rows > 0 ? absl::StrCat("/rows", rows) : "");
  const int64_t a_rows = rows > 0 ? rows : m;
  c.build = [=] {
    Builder b("dot_nt");
    Value pa = b.arg("a", ptr(ElementType{dtype})), pb = b.arg("b", ptr(ElementType{dtype}));
    Value pacc = b.arg("acc", ptr(f32)), out = b.arg("out", ptr(f32));
    Value acc = load(pacc + flat_offsets({m, n}));
    acc = range(0, k, block_k, acc, [&](Value k0, Value acc) {
      Value ks = row(k0 + arange(0, block_k));
      Value a_ptr = pa + col(arange(0, m)) * k + ks;
      Value a = a_rows < m ? load(a_ptr, col(arange(0, m)) < int(a_rows)) : load(a_ptr);
      Value bt = load(pb + col(arange(0, n)) * k + ks);
      return dot(a, trans(bt), acc);
    });
    store(out + flat_offsets({m, n}), acc);
    return b.finish();
  };
  c.tensors = {{"a", dtype, {a_rows, k}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"b", dtype, {n, k}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"acc", kF32, {m, n}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"out", kF32, {m, n}, Role::kOutput, nullptr, Tolerance{2e-6 * static_cast<double>(k), 1e-5}}};
  c.reference = [=](Tensors& t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = t["acc"].get(i * n + j);
        for (int64_t kk = 0; i < a_rows && kk < k; ++kk) sum += t["a"].get(i * k + kk) * t["b"].get(j * k + kk);
        t["out"].set(i * n + j, sum);
      }
    }
  };
  return c;
}

// C = acc + A^T B with A given as [K, M] and B as [K, N] (both M/N-contiguous) in a runtime K loop.
Case dot_tn_case(ScalarType dtype, int64_t m, int64_t k, int64_t n, int64_t block_k) {
  Case c;
  c.name = absl::StrCat("dot_tn/", std::string(scalar_type_name(dtype)), "/", m, "x", k, "x", n, "/k_loop", block_k);
  c.build = [=] {
    Builder b("dot_tn");
    Value pa = b.arg("a", ptr(ElementType{dtype})), pb = b.arg("b", ptr(ElementType{dtype}));
    Value pacc = b.arg("acc", ptr(f32)), out = b.arg("out", ptr(f32));
    Value acc = load(pacc + flat_offsets({m, n}));
    acc = range(0, k, block_k, acc, [&](Value k0, Value acc) {
      Value ks = col(k0 + arange(0, block_k));
      Value at = load(pa + ks * m + row(arange(0, m)));
      Value bk = load(pb + ks * n + row(arange(0, n)));
      return dot(trans(at), bk, acc);
    });
    store(out + flat_offsets({m, n}), acc);
    return b.finish();
  };
  c.tensors = {{"a", dtype, {k, m}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"b", dtype, {k, n}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"acc", kF32, {m, n}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"out", kF32, {m, n}, Role::kOutput, nullptr, Tolerance{2e-6 * static_cast<double>(k), 1e-5}}};
  c.reference = [=](Tensors& t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = t["acc"].get(i * n + j);
        for (int64_t kk = 0; kk < k; ++kk) sum += t["a"].get(kk * m + i) * t["b"].get(kk * n + j);
        t["out"].set(i * n + j, sum);
      }
    }
  };
  return c;
}

}  // namespace

std::vector<Case> dot_cases() {
  std::vector<Case> cases;
  for (ScalarType dtype : {kBf16, kF16, kF32}) {
    cases.push_back(dot_case(dtype, 16, 16, 16, 0));
    cases.push_back(dot_case(dtype, 32, 64, 16, 0));
    cases.push_back(dot_case(dtype, 64, 32, 128, 0));
    cases.push_back(dot_case(dtype, 16, 256, 32, 64));
  }
  cases.push_back(dot_case(kBf16, 128, 128, 128, 32));
  for (ScalarType dtype : {kBf16, kF16}) {
    cases.push_back(dot_nt_case(dtype, 16, 256, 32, 64));    // one warp row, K step of 4 instructions
    cases.push_back(dot_nt_case(dtype, 64, 64, 8, 64));      // one n-tile per warp (the x2 matrix load)
    cases.push_back(dot_nt_case(dtype, 128, 160, 64, 32));   // K steps not a multiple of the stages
  }
  cases.push_back(dot_nt_case(kBf16, 64, 512, 128, 128));  // 16 units per row: the wide swizzle
  cases.push_back(dot_nt_case(kBf16, 16, 256, 32, 64, 5));  // masked A rows: zero-filled copies
  cases.push_back(dot_tn_case(kBf16, 64, 128, 32, 32));    // A given [K, M]: transposed fragments
  cases.push_back(dot_tn_case(kF16, 32, 64, 8, 16));       // ... with an odd n-tile and 2 units per row
  return cases;
}

}  // namespace monotile::conformance
