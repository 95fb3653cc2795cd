// The executor's layer names come from the Backbone and the config: with the config's prefix (the
// published checkpoint's "language_model.model.layers") and with a text-only model's
// "model.layers", plan routes on the first KDA layer's attention under that name, and prepare_kv
// matches caches by it.
#include "runtime/decode/layer_names.h"

#include "gmock/gmock.h"
#include "runtime/decode/executor_test_support.h"

namespace monotile::runtime::decode {
namespace {

class LayerNames : public ExecutorFixture {
 protected:
  std::unique_ptr<Device> make_device() override {
    return make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  }

  // Layers 1-3 (two KDA layers, one MLA layer) under `prefix` ("" for the config's): the names the
  // executor gives them, whether caches keyed by `cache_prefix` bind, and whether a step keyed by
  // `metadata_prefix` is planned.
  void check(const std::string& prefix, const std::string& expected, const std::string& other) {
    std::mt19937 rng = monotile::testing::case_rng();
    Backbone backbone = weights_.backbone;
    backbone.layers_prefix = prefix;
    backbone.start_layer = 1;
    backbone.end_layer = 4;
    EXPECT_EQ(layers_prefix(backbone), expected);
    std::unique_ptr<Group> group = make_single_process_group();
    absl::StatusOr<std::unique_ptr<SpecializedDecode>> made = SpecializedDecode::create(
        backbone, {.q = kQ, .max_rows = 4}, *group, *device_, jit::Jit::process_default(),
        {.on_progress = nullptr, .log = [](const std::string&) {}});
    ASSERT_TRUE(made.ok()) << made.status();
    SpecializedDecode& decode = **made;
    EXPECT_EQ(decode.kda_prefix(), expected + ".1.self_attn");
    EXPECT_EQ(decode.attention_name(3), expected + ".3.self_attn");

    // The fixture's caches are keyed "model.layers.N.self_attn"; rename them.
    std::vector<KdaCache> caches = bind_caches(rng);
    std::erase_if(caches, [](const KdaCache& c) {
      return c.layer != "model.layers.1.self_attn" && c.layer != "model.layers.2.self_attn";
    });
    auto named = [&](const std::string& names) {
      std::vector<KdaCache> out = caches;
      for (size_t i = 0; i < out.size(); ++i)
        out[i].layer = attention_name(names, static_cast<int>(i) + 1);
      return out;
    };
    Stream stream = *device_->create_stream();
    absl::Status refused = decode.prepare_kv(named(other), stream);
    EXPECT_THAT(std::string(refused.message()),
                ::testing::HasSubstr(
                    absl::StrCat("no cache for KDA layer \"", expected, ".1.self_attn\"")));
    ASSERT_TRUE(decode.prepare_kv(named(expected), stream).ok());

    StepInputs in = make_step(decode, 2);
    fill_step(in, 0, rng);
    const TensorView& state = caches.front().recurrent;
    EXPECT_EQ(in.metadata.begin()->first, expected + ".1.self_attn")
        << "make_step keys by kda_prefix()";
    absl::StatusOr<std::optional<Step>> step =
        decode.plan({.width = in.width, .attn_metadata = &in.metadata, .kda_state = &state});
    ASSERT_TRUE(step.ok()) << step.status();
    EXPECT_TRUE(step->has_value()) << "a step keyed by the executor's names runs the kernels";
    AttnMetadata elsewhere{{attention_name(other, 1), in.metadata.begin()->second}};
    step = decode.plan({.width = in.width, .attn_metadata = &elsewhere, .kda_state = &state});
    ASSERT_TRUE(step.ok()) << step.status();
    EXPECT_FALSE(step->has_value())
        << "metadata under other names is not this model's: the host's layers";
  }
};

TEST_F(LayerNames, TheConfigsNamesByDefault) {
  EXPECT_EQ(config_.layers_prefix, "language_model.model.layers");
  check("", "language_model.model.layers", "model.layers");
}

TEST_F(LayerNames, TheBackbonesNamesOverTheConfigs) {
  check("model.layers", "model.layers", "language_model.model.layers");
}

}  // namespace
}  // namespace monotile::runtime::decode
