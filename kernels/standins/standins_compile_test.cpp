// The stand-in kernels compile for sm_90a and gfx90a at k3-tiny's shapes and at a K3 TP 8 rank's,
// with no spills and no stack on NVIDIA; prints each build's resources. Skips cleanly without a
// compiler.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "dsl/target.h"
#include "jit/compiler.h"
#include "jit/program_build.h"
#include "kernels/standins/standins.h"
#include "model/config.h"

namespace monotile::kernels::standins {
namespace {

// Every stand-in program of layer 0 (after K1) and of an MLA layer at `model`'s rank shapes.
std::vector<dsl::Program> programs(const std::string& model, int tp) {
  model::ModelConfig config = *model::load_config(model);
  model::RankDims dims = *model::rank_dims(config, tp, 0);
  const int h = static_cast<int>(config.hidden_size), pl = static_cast<int>(dims.kda_projection);
  const int inter = static_cast<int>(dims.dense_intermediate);
  const MlaShape m = mla_shape(config, dims.mla_heads, 4);
  const float eps = static_cast<float>(config.rms_norm_eps);
  return {linear_program(linear_shape(h, pl)),
          linear_program(linear_shape(2 * inter, h)),
          linear_program(linear_shape(h, inter)),
          linear_program(linear_shape(m.fused_rows(), h)),
          linear_program(linear_shape(m.heads * m.qk(), m.q_lora)),
          residual_program(h, false),
          residual_program(h, true),
          attn_res_program({.hidden = h, .sources = 1, .eps = eps}),
          attn_res_program({.hidden = h,
                            .sources = config.previous_blocks(config.num_hidden_layers - 1),
                            .eps = eps}),
          situ_program({.intermediate = inter}),
          rms_norm_program(
              {.width = m.q_lora, .x_stride = m.fused_rows(), .y_stride = m.q_lora, .eps = eps}),
          mla_cache_append_program(m),
          mla_absorb_program(m),
          mla_attention_program(m),
          mla_output_program(m)};
}

void expect_compiles(const std::string& arch) {
  dsl::Target target = *dsl::Target::parse(arch);
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << arch << ": " << compiler.status();
  for (auto [model, tp] : {std::pair{"k3-tiny", 1}, std::pair{"k3", 8}}) {
    for (const dsl::Program& program : programs(model, tp)) {
      SCOPED_TRACE(program.name);
      absl::StatusOr<jit::ProgramBuild> made = jit::make_build(program, target);
      ASSERT_TRUE(made.ok()) << made.status();
      absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
      ASSERT_TRUE(result.ok()) << result.status();
      if (target.vendor() == dsl::Vendor::kNvidia) {
        EXPECT_EQ(result->report.spill_stores, 0);
        EXPECT_EQ(result->report.spill_loads, 0);
        EXPECT_EQ(result->report.stack_frame, 0);
      }
      std::cout << "resources " << arch << " " << program.name << ": " << result->report.summary()
                << "\n";
    }
  }
}

TEST(StandinsCompile, Sm90a) {
  expect_compiles("sm_90a");
}
TEST(StandinsCompile, Gfx90a) {
  expect_compiles("gfx90a");
}

}  // namespace
}  // namespace monotile::kernels::standins
