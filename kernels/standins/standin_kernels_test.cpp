// Each stand-in kernel alone on the CPU interpreter against the float64 reference of its step
// (kernels/reference/k3_parts.h), at shapes whose edges are masked (rows and columns that are not
// multiples of the tiles), with fresh random inputs and outputs poisoned first.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <random>
#include <vector>

#include "kernels/k3/k1_check.h"
#include "kernels/reference/k3_parts.h"
#include "kernels/standins/standin_launch.h"
#include "kernels/standins/standins.h"
#include "model/dtype.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::standins {
namespace {

namespace ref = kernels::reference;
using kernels::k3::check_output;
using kernels::k3::rule_for;

class StandinKernels : public ::testing::Test {
 protected:
  StandinKernels()
      : device_(runtime::make_cpu_device(
            runtime::interpreter_loader(runtime::ProgramCatalog::process()))),
        rng_(testing::case_rng()) {}

  std::vector<double> random(size_t count, double scale = 1.0) {
    std::normal_distribution<double> normal(0.0, scale);
    std::vector<double> values(count);
    for (double& v : values) v = model::round_to_bf16(normal(rng_));
    return values;
  }
  // A bf16 buffer holding `values`, or NaN (poisoned) when empty with `count`.
  runtime::DevicePtr bf16(const std::vector<double>& values, size_t count = 0) {
    std::vector<uint16_t> bits(values.empty() ? count : values.size(), 0x7fc0);
    for (size_t i = 0; i < values.size(); ++i) bits[i] = model::bf16_from_double(values[i]);
    buffers_.push_back(*device_->allocate(bits.size() * 2));
    EXPECT_TRUE(
        device_->copy_to_device(buffers_.back().address(), bits.data(), bits.size() * 2).ok());
    return buffers_.back().address();
  }
  std::vector<double> read(runtime::DevicePtr address, size_t count) {
    std::vector<uint16_t> bits(count);
    EXPECT_TRUE(device_->copy_to_host(bits.data(), address, count * 2).ok());
    std::vector<double> values(count);
    for (size_t i = 0; i < count; ++i) values[i] = model::bf16_to_float(bits[i]);
    return values;
  }
  void run(dsl::Program program, Grid grid, std::span<const runtime::KernelArgument> args) {
    absl::StatusOr<StandinKernel> kernel =
        StandinKernel::load(*device_, jit::Jit::process_default(), {std::move(program), grid});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    absl::StatusOr<runtime::Stream> stream = device_->create_stream();
    ASSERT_TRUE(stream.ok());
    ASSERT_TRUE(kernel->launch(args, *stream).ok());
    ASSERT_TRUE(device_->synchronize(*stream).ok());
  }

  std::unique_ptr<runtime::Device> device_;
  std::mt19937 rng_;
  std::vector<runtime::DeviceBuffer> buffers_;
};

TEST_F(StandinKernels, LinearRoundsOnceOverMaskedTiles) {
  const int tokens = 3, rows = 100, cols = 200;
  const std::vector<double> x = random(tokens * cols), w = random(rows * cols, 0.1);
  const runtime::DevicePtr y = bf16({}, tokens * rows);
  const LinearShape shape = linear_shape(rows, cols);
  run(linear_program(shape), linear_grid(shape, tokens),
      std::array{bf16_argument(bf16(x)), bf16_argument(bf16(w)), bf16_argument(y)});
  std::vector<double> want;
  for (int t = 0; t < tokens; ++t) {
    for (double v : ref::matvec(w, std::span(x).subspan(t * cols, cols), rows, cols))
      want.push_back(model::round_to_bf16(v));
  }
  const kernels::k3::OutputCheck check =
      check_output("y", read(y, want.size()), want, {tokens, rows}, rule_for("x"));
  EXPECT_TRUE(check.passed()) << check.first_failure;
}

TEST_F(StandinKernels, SituMatchesTheReference) {
  const int tokens = 2, inter = 100;
  const std::vector<double> gu = random(tokens * 2 * inter, 3.0);
  const runtime::DevicePtr act = bf16({}, tokens * inter);
  const SituShape shape{.intermediate = inter};
  run(situ_program(shape), situ_grid(shape, tokens),
      std::array{bf16_argument(bf16(gu)), bf16_argument(act)});
  std::vector<double> want;
  for (int t = 0; t < tokens; ++t) {
    for (int i = 0; i < inter; ++i) {
      want.push_back(model::round_to_bf16(
          ref::situ(gu[t * 2 * inter + i], gu[t * 2 * inter + inter + i], 4.0, 25.0)));
    }
  }
  const kernels::k3::OutputCheck check =
      check_output("act", read(act, want.size()), want, {tokens, inter}, rule_for("x"));
  EXPECT_TRUE(check.passed()) << check.first_failure;
}

TEST_F(StandinKernels, RmsNormReadsAStridedSlice) {
  const int tokens = 3, width = 64, stride = 100;
  const std::vector<double> x = random(tokens * stride), w = random(width);
  const runtime::DevicePtr y = bf16({}, tokens * width);
  const RmsNormShape shape{.width = width, .x_stride = stride, .y_stride = width, .eps = 1e-5f};
  run(rms_norm_program(shape), Grid{tokens},
      std::array{bf16_argument(bf16(x)), bf16_argument(bf16(w)), bf16_argument(y)});
  std::vector<double> want;
  for (int t = 0; t < tokens; ++t) {
    for (double v :
         ref::rms_norm(std::span(x).subspan(t * stride, width), w, 1e-5, ref::Rounding::kNone)) {
      want.push_back(model::round_to_bf16(v));
    }
  }
  const kernels::k3::OutputCheck check =
      check_output("y", read(y, want.size()), want, {tokens, width}, rule_for("x"));
  EXPECT_TRUE(check.passed()) << check.first_failure;
}

TEST_F(StandinKernels, ResidualAddsOrRestarts) {
  const int tokens = 2, hidden = 256;
  for (bool restart : {false, true}) {
    const std::vector<double> p = random(tokens * hidden), a = random(tokens * hidden);
    const runtime::DevicePtr prefix = bf16(p);
    run(residual_program(hidden, restart), Grid{tokens},
        std::array{bf16_argument(prefix), bf16_argument(bf16(a))});
    std::vector<double> want(p.size());
    for (size_t i = 0; i < p.size(); ++i)
      want[i] = restart ? a[i] : model::round_to_bf16(p[i] + a[i]);
    const kernels::k3::OutputCheck check = check_output("prefix", read(prefix, want.size()), want,
                                                        {tokens, hidden}, rule_for("prefix"));
    EXPECT_TRUE(check.passed()) << (restart ? "restart: " : "add: ") << check.first_failure;
  }
}

TEST_F(StandinKernels, AttnResMixesTheSources) {
  const int tokens = 2, hidden = 240, blocks = 4;
  for (int sources : {0, 3}) {
    const std::vector<double> b = random(tokens * blocks * hidden), p = random(tokens * hidden);
    const std::vector<double> norm = random(hidden), proj = random(hidden),
                              out_norm = random(hidden);
    const runtime::DevicePtr y = bf16({}, tokens * hidden);
    run(attn_res_program({.hidden = hidden, .sources = sources, .eps = 1e-5f}), Grid{tokens},
        std::array{bf16_argument(bf16(b)), i64_scalar(blocks * hidden), i64_scalar(hidden),
                   bf16_argument(bf16(p)), bf16_argument(bf16(norm)), bf16_argument(bf16(proj)),
                   bf16_argument(bf16(out_norm)), bf16_argument(y)});
    std::vector<double> want;
    for (int t = 0; t < tokens; ++t) {
      std::vector<std::span<const double>> rows;
      for (int s = 0; s < sources; ++s)
        rows.push_back(std::span(b).subspan((t * blocks + s) * hidden, hidden));
      rows.push_back(std::span(p).subspan(t * hidden, hidden));
      for (double v : ref::attn_res_row(rows, norm, proj, out_norm, 1e-5, ref::Rounding::kBf16))
        want.push_back(v);
    }
    const kernels::k3::OutputCheck check =
        check_output("y", read(y, want.size()), want, {tokens, hidden}, rule_for("x"));
    EXPECT_TRUE(check.passed()) << sources << " blocks: " << check.first_failure;
  }
}

}  // namespace
}  // namespace monotile::kernels::standins
