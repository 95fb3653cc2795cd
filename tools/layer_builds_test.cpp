// layer_builds at the shapes layer_tp_bench runs on a GPU by default: k3's KDA layer 1 and MLA
// layer 3, 2 requests x q 4, at TP 1 (the whole layer on one GPU) and at TP 2 (each rank, K2
// exchanging), for sm_90a: k1_build and k2_build accept them and their programs lower, so that
// the GPU run is not refused at its first build. Checked here, where there is no GPU.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "dsl/target.h"
#include "jit/program_build.h"
#include "tools/layer_launch.h"
#include "tools/layer_steps.h"
#include "tools/layer_weights.h"

namespace monotile::tools {
namespace {

TEST(LayerBuilds, K3Tp1AndTp2LayersLowerForSm90a) {
  const dsl::Target target = *dsl::Target::parse("sm_90a");
  for (int layer : {1, 3}) {
    for (int tp : {1, 2}) {
      for (int rank = 0; rank < tp; ++rank) {
        SCOPED_TRACE(absl::StrCat("layer ", layer, " tp ", tp, " rank ", rank));
        absl::StatusOr<LayerModel> m =
            open_layer_model("k3", 1, tp, rank, layer, LayerStage::kLayer);
        ASSERT_TRUE(m.ok()) << m.status();
        const LayerShape shape =
            layer_shape(m->config, m->dims, m->runs_k1(), m->runs_k2(), m->core_width());
        LayerStep step;  // the builds read the step's sizes only
        step.requests = 2;
        step.q = 4;
        step.state_len = 6;
        step.has_delta = true;
        absl::StatusOr<LayerBuilds> builds = layer_builds(*m, step, shape, target, false, tp > 1);
        ASSERT_TRUE(builds.ok()) << builds.status();
        EXPECT_EQ(builds->k1.has_value(), layer == 1);
        ASSERT_TRUE(builds->k2.has_value());
        EXPECT_EQ(builds->k2->tp, tp);
        EXPECT_EQ(builds->k2->rank, rank);
        if (builds->k1) {
          absl::StatusOr<jit::ProgramBuild> k1 =
              jit::make_build(kernels::k3::k1_program(*builds->k1), target);
          EXPECT_TRUE(k1.ok()) << k1.status();
        }
        absl::StatusOr<jit::ProgramBuild> k2 =
            jit::make_build(kernels::k3::k2_program(*builds->k2), target);
        EXPECT_TRUE(k2.ok()) << k2.status();
      }
    }
  }
}

}  // namespace
}  // namespace monotile::tools
