// Real compiles through the JIT's compiler interface: every sample program (and the dot paths)
// lowers and compiles for sm_90a and gfx90a with no spills and no scratch. Skips cleanly when the
// compiler library is not installed.
#include <memory>
#include <string>

#include "dsl/dsl.h"
#include "dsl/lower/lower.h"
#include "dsl/lower/lower_test_util.h"
#include "dsl/test_programs.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"

namespace monotile::dsl::lower {
namespace {

bool has_print(const Block& block) {
  for (const Op& op : block.ops) {
    if (op.code == OpCode::kPrint) return true;
    for (const Block& region : op.regions) {
      if (has_print(region)) return true;
    }
  }
  return false;
}

// Lowers and compiles; returns the report, or skips the test when there is no compiler.
void expect_compiles_clean(const Program& program, const char* target_text) {
  Target target = testing::target(target_text);
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << target_text << ": " << compiler.status();
  LoweredKernel kernel = testing::lowered(program, target_text);
  jit::CompileRequest request{.kernel_name = kernel.kernel_name, .source = kernel.source, .target = target,
                              .options = {}, .headers = {}, .build_name = program.name, .build_key = ""};
  absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(request);
  ASSERT_TRUE(result.ok()) << program.name << " for " << target_text << ": " << result.status();
  const jit::ResourceReport& report = result->report;
  EXPECT_EQ(report.spill_stores, 0) << program.name << " " << target_text;
  EXPECT_EQ(report.spill_loads, 0) << program.name << " " << target_text;
  // printf needs a small stack frame for its arguments; nothing else may use scratch.
  if (!has_print(program.body)) {
    EXPECT_EQ(report.stack_frame, 0) << program.name << " " << target_text;
  }
  if (target.vendor() == Vendor::kAmd) {
    EXPECT_EQ(report.wavefront_size, target.warp_size());
  }
}

class SampleCompiles : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(SampleCompiles, WithoutSpillsOrScratch) {
  auto [name, target] = GetParam();
  for (const auto& sample : dsl::testing::sample_programs()) {
    if (sample.name == name) expect_compiles_clean(sample.build(), target.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Lowering, SampleCompiles,
                         ::testing::Combine(::testing::Values("rms_norm", "gemv", "kda_verify", "softmax",
                                                              "router_topk", "persistent", "shapes_and_bits"),
                                            ::testing::Values("sm_90a", "gfx90a")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

Program matmul(int m, int n, int k) {
  Builder b("matmul", {.num_warps = 4});
  auto a = b.arg("a", ptr(bf16)), bp = b.arg("b", ptr(bf16)), c = b.arg("c", ptr(f32));
  auto rows = col(arange(0, m)), cols = row(arange(0, n)), ks = arange(0, k);
  auto acc = zeros({m, n}, f32);
  acc = range(0, 4 * k, k, acc, [&](Value k0, Value acc) {
    auto a_tile = load(a + rows * (4 * k) + row(k0 + ks));
    auto b_tile = load(bp + col(k0 + ks) * n + cols);
    return dot(a_tile, b_tile, acc);
  });
  store(c + rows * n + cols, acc);
  return b.finish();
}

TEST(DotCompiles, OnTheMatrixUnitsOfBothVendors) {
  expect_compiles_clean(matmul(64, 64, 32), "sm_90a");
  expect_compiles_clean(matmul(64, 64, 32), "gfx90a");
}

TEST(DotCompiles, BelowTheMatrixUnitOnBothVendors) {
  expect_compiles_clean(matmul(4, 8, 32), "sm_90a");
  expect_compiles_clean(matmul(4, 8, 32), "gfx90a");
}

Program half_atomics() {
  Builder b("half_atomics", {.num_warps = 4});
  auto acc = b.arg("acc", ptr(bf16)), peak = b.arg("peak", ptr(f16)), x = b.arg("x", ptr(f32));
  auto offs = arange(0, 128);
  auto v = load(x + offs);
  atomic_add(acc + offs, v.to(bf16), Scope::gpu, Order::relaxed);
  atomic_add(peak + offs, v.to(f16), Scope::system, Order::acq_rel);
  return b.finish();
}

TEST(AtomicsCompile, SixteenBitAtomicsOnBothVendors) {
  expect_compiles_clean(half_atomics(), "sm_90a");
  expect_compiles_clean(half_atomics(), "gfx90a");
}

Program warm_then_copy() {
  Builder b("warm_then_copy", {.num_warps = 4});
  auto w = b.arg("w", ptr(bf16)), x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto n = b.arg("n", i32);
  auto offs = program_id(0) * 1024 + arange(0, 1024);
  prefetch(w + offs, offs < n);
  prefetch(w + offs * 64);
  prefetch(w);
  store(y + arange(0, 256), load(x + arange(0, 256)));
  return b.finish();
}

TEST(PrefetchCompiles, OnBothVendors) {
  expect_compiles_clean(warm_then_copy(), "sm_90a");
  expect_compiles_clean(warm_then_copy(), "gfx90a");
}

// griddepcontrol assembles for sm_90a (PTX ISA 7.8); gfx90a gets nothing to assemble.
Program dependent_copy() {
  Builder b("dependent_copy", {.num_warps = 4});
  auto w = b.arg("w", ptr(bf16)), x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  launch_dependents();
  prefetch(w + arange(0, 1024));
  wait_grid_dependency();
  store(y + arange(0, 256), load(x + arange(0, 256)));
  return b.finish();
}

TEST(GridDependencyCompiles, OnBothVendors) {
  expect_compiles_clean(dependent_copy(), "sm_90a");
  expect_compiles_clean(dependent_copy(), "gfx90a");
}

}  // namespace
}  // namespace monotile::dsl::lower
