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
#include "kernels/standins/kda_mlp_standin.h"
#include "kernels/standins/mla_standin.h"
#include "model/config.h"

namespace monotile::kernels::standins {
namespace {

// Every stand-in kernel of layer 0 (after K1, which K1's own compile test covers) and of the last
// MLA layer (the most AttnRes blocks) at `model`'s rank shapes, 16 rows of q 4: the plans the
// stand-ins load.
std::vector<dsl::Program> programs(const std::string& model, int tp, const dsl::Target& target) {
  model::ModelConfig config = *model::load_config(model);
  model::RankDims dims = *model::rank_dims(config, tp, 0);
  int last_mla = config.num_hidden_layers - 1;
  while (config.is_kda_layer(last_mla)) --last_mla;
  KdaMlpPlan whole = *KdaMlpStandin::plan(config, dims, 0, 16, 4, 6, false, target);
  MlaPlan mla = *MlaStandin::plan(config, dims, last_mla, 16, 4);
  std::vector<dsl::Program> out{whole.o_proj.program,   whole.residual.program,
                                whole.attn_res.program, whole.gate_up.program,
                                whole.situ.program,     whole.down.program};
  for (dsl::Program& program : mla.programs()) out.push_back(std::move(program));
  return out;
}

void expect_compiles(const std::string& arch) {
  dsl::Target target = *dsl::Target::parse(arch);
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << arch << ": " << compiler.status();
  for (auto [model, tp] : {std::pair{"k3-tiny", 1}, std::pair{"k3", 8}}) {
    for (const dsl::Program& program : programs(model, tp, target)) {
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
