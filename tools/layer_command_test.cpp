// `monotile layer` end to end on the built binary: `inputs` then `run --check --device cpu` at
// k3-tiny (K1 then K2 on the interpreter against the float64 reference) over TP sizes, q, delta,
// padded requests, conv layouts and a block-write layer; an FFN (MLA) layer's K2 on the core given;
// K1 alone (--stage k1, layer 0's dense MLP included); seeded weights equal to `model tiny`'s
// folder; and every refusal of the command and of the input file, by its words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/safetensors.h"
#include "runtime/discovery.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using CommandResult = monotile::testing::CommandResult;

CommandResult run(const std::string& args) {
  const std::string command = absl::StrCat(MONOTILE_BINARY, " ", args, " 2>&1");
  return monotile::testing::run_command(command);
}

class LayerCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / absl::StrCat("monotile_layer_", getpid(), "_", info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // `layer inputs` with `options`, then `layer run --check --device cpu` with the same rank and
  // layer; the run's result.
  CommandResult inputs_then_check(const std::string& where, const std::string& options,
                                  const std::string& model = "--model k3-tiny", const std::string& run_options = "") {
    CommandResult made = run(absl::StrCat("layer inputs ", model, " ", where, " ", options, " --out ", path("in.safetensors")));
    EXPECT_EQ(made.status, 0) << made.output;
    return run(absl::StrCat("layer run ", model, " ", where, " --inputs ", path("in.safetensors"), " --out ",
                            path("out.safetensors"), " --device cpu --check ", run_options));
  }

  fs::path dir_;
};

void expect_passes(const CommandResult& result) {
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("every output passes"));
  EXPECT_THAT(result.output, HasSubstr("cpu"));
}

TEST_F(LayerCommand, Tp1Q4WithDeltaPasses) {
  const CommandResult result = inputs_then_check("--tp 1 --rank 0 --layer 1", "--requests 2 --q 4 --seed 3");
  expect_passes(result);
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("stood in"))) << "at TP 1 nothing is stood in";
}

TEST_F(LayerCommand, AWholeKdaLayerRunsK1ThenK2) {
  const CommandResult result = inputs_then_check("--tp 2 --rank 0 --layer 5", "--requests 2 --q 2 --seed 12");
  expect_passes(result);
  // K2's reductions take this rank's partials alone, and the run says so.
  EXPECT_THAT(result.output,
              HasSubstr("\nTP 2 rank 0 alone: the other ranks' partial sums are stood in by zero in every reduction\n"));
  EXPECT_THAT(result.output, HasSubstr("K1 ran on cpu"));
  EXPECT_THAT(result.output, HasSubstr("K2 ran on cpu"));
  for (const char* row : {"core  ", "recurrent_state  ", "a  ", "prefix  ", "y  ", "route  ", "out  "}) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("\n  ", row))) << row;
  }
}

TEST_F(LayerCommand, AnFfnLayerRunsK2OnTheCoreGiven) {
  const CommandResult result = inputs_then_check("--tp 1 --rank 0 --layer 7", "--requests 2 --q 3 --seed 13");
  expect_passes(result);
  EXPECT_THAT(result.output, HasSubstr("layer 7 of k3-tiny (MLA: the FFN), tp 1 rank 0, seeded weights"));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("K1 ran")));
  EXPECT_THAT(result.output, HasSubstr("K2 ran on cpu"));
  absl::StatusOr<std::unique_ptr<model::SafetensorsFile>> out = model::SafetensorsFile::open(path("out.safetensors"));
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"prefix", {6, 256}}, {"a", {6, 256}}, {"y", {6, 256}}, {"route_experts", {6, 4}}, {"route_weights", {6, 4}},
      {"out", {6, 256}}};
  ASSERT_EQ((*out)->tensors().size(), expected.size());
  for (const auto& [name, shape] : expected) {
    const model::TensorInfo* tensor = (*out)->find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->shape, shape) << name;
  }
}

TEST_F(LayerCommand, StageK1RunsK1AloneAlsoOnLayer0) {
  // Layer 0's dense MLP is not K2's; its attention half is K1's.
  const CommandResult result = inputs_then_check("--tp 1 --rank 0 --layer 0", "--requests 1 --q 3 --seed 14",
                                                 "--model k3-tiny", "--stage k1");
  expect_passes(result);
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("K2 ran")));
  EXPECT_THAT(result.output, HasSubstr("\n  prefix  "));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("\n  route  ")));
}

TEST_F(LayerCommand, Tp2Q2NoDeltaPaddedPasses) {
  const CommandResult result = inputs_then_check("--tp 2 --rank 1 --layer 2", "--requests 3 --q 2 --padded 1 --no-delta --seed 4");
  expect_passes(result);
  EXPECT_THAT(result.output, HasSubstr("3 requests x q 2 (1 without a conv slot)"));
  EXPECT_THAT(result.output, HasSubstr("delta no"));
}

TEST_F(LayerCommand, Tp2Q4DimFirstConvStatePasses) {
  const CommandResult result = inputs_then_check("--tp 2 --rank 0 --layer 4", "--requests 2 --q 4 --dim-first --seed 5");
  expect_passes(result);
  EXPECT_THAT(result.output, HasSubstr("conv dim-first"));
}

TEST_F(LayerCommand, BlockWriteLayerPasses) {
  expect_passes(inputs_then_check("--tp 1 --rank 0 --layer 12", "--requests 1 --q 4 --state-len 8 --slots 9 --seed 6"));
}

TEST_F(LayerCommand, K3Tp8RankShapesPassOnTheInterpreter) {
  // hidden 7168, 12 heads, 6288 in_proj rows; seeded weights of this rank's slices only.
  // K1 alone: K2 at k3's 896 experts is the GPU test's (layer_command_gpu_test.cpp).
  const CommandResult result =
      inputs_then_check("--tp 8 --rank 3 --layer 1", "--requests 1 --q 4 --seed 11", "--model k3", "--stage k1");
  expect_passes(result);
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("stood in"))) << "K1 reduces nothing across ranks";
  EXPECT_THAT(result.output, HasSubstr("core                   6144"));
}

TEST_F(LayerCommand, OutputsHoldEveryTensorAfterTheStep) {
  expect_passes(inputs_then_check("--tp 2 --rank 1 --layer 1", "--requests 1 --q 2 --seed 7"));
  absl::StatusOr<std::unique_ptr<model::SafetensorsFile>> out = model::SafetensorsFile::open(path("out.safetensors"));
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"prefix", {2, 256}}, {"blocks", {2, 2, 256}}, {"x", {2, 256}}, {"core", {2, 512}},
      {"conv_state", {5, 4, 1536}}, {"recurrent_state", {5, 4, 128, 128}}, {"a", {2, 256}}, {"y", {2, 256}},
      {"route_experts", {2, 4}}, {"route_weights", {2, 4}}, {"out", {2, 256}}};
  ASSERT_EQ((*out)->tensors().size(), expected.size());
  for (const auto& [name, shape] : expected) {
    const model::TensorInfo* tensor = (*out)->find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->shape, shape) << name;
  }
}

TEST_F(LayerCommand, SeededWeightsAreTheTinyCheckpointsWeights) {
  ASSERT_EQ(run(absl::StrCat("model tiny --seed 9 --out ", path("tiny"))).status, 0);
  const std::string where = "--tp 2 --rank 0 --layer 1";
  ASSERT_EQ(run(absl::StrCat("layer inputs --model k3-tiny ", where, " --requests 1 --q 3 --out ", path("in.safetensors"))).status, 0);
  const CommandResult seeded = run(absl::StrCat("layer run --model k3-tiny --seed 9 ", where, " --inputs ", path("in.safetensors"),
                                                " --out ", path("seeded.safetensors"), " --device cpu"));
  ASSERT_EQ(seeded.status, 0) << seeded.output;
  const CommandResult folder = run(absl::StrCat("layer run --model ", path("tiny"), " ", where, " --inputs ",
                                                path("in.safetensors"), " --out ", path("folder.safetensors"), " --device cpu"));
  ASSERT_EQ(folder.status, 0) << folder.output;
  auto bytes = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(path("seeded.safetensors")), bytes(path("folder.safetensors")));
}

// ---- refusals ----

// Writes a copy of `from` with `edit` applied to its tensors.
void rewrite(const std::string& from, const std::string& to,
             const std::function<void(std::vector<model::TensorToWrite>&)>& edit) {
  absl::StatusOr<std::unique_ptr<model::SafetensorsFile>> in = model::SafetensorsFile::open(from);
  ASSERT_TRUE(in.ok()) << in.status();
  std::vector<model::TensorToWrite> tensors;
  for (const model::TensorInfo& info : (*in)->tensors()) {
    std::span<const uint8_t> bytes = (*in)->bytes(info);
    tensors.push_back({info.name, info.dtype, info.shape, std::vector<uint8_t>(bytes.begin(), bytes.end())});
  }
  edit(tensors);
  ASSERT_TRUE(model::write_safetensors(to, tensors).ok());
}

model::TensorToWrite& tensor(std::vector<model::TensorToWrite>& tensors, const std::string& name) {
  for (model::TensorToWrite& t : tensors) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return tensors.front();
}

// `inputs --padded` writes vLLM 0.33.0's FULL-graph padding (slot 0 in every column, one accepted
// token, query_start_loc's last real end repeated), and the run serves the padded request like a
// real one; the same step padded with -1 (query_start_loc running on) passes as well.
TEST_F(LayerCommand, VllmsPaddingAndMinusOnePaddingPass) {
  const CommandResult result =
      inputs_then_check("--tp 1 --rank 0 --layer 1", "--requests 3 --q 2 --padded 1 --seed 7");
  expect_passes(result);
  absl::StatusOr<std::unique_ptr<model::SafetensorsFile>> in = model::SafetensorsFile::open(path("in.safetensors"));
  ASSERT_TRUE(in.ok()) << in.status();
  auto ints = [&](const std::string& name) {
    std::span<const uint8_t> bytes = (*in)->bytes(*(*in)->find(name));
    std::vector<int32_t> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  };
  EXPECT_EQ(ints("query_start_loc"), (std::vector<int32_t>{0, 2, 4, 4}));
  const std::vector<int32_t> indices = ints("state_indices");
  EXPECT_EQ(std::vector<int32_t>(indices.begin() + 4, indices.end()), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(ints("num_accepted")[2], 1);

  rewrite(path("in.safetensors"), path("minus_one.safetensors"), [](std::vector<model::TensorToWrite>& tensors) {
    const int32_t pad[2] = {-1, -1}, end = 6;
    std::memcpy(tensor(tensors, "state_indices").data.data() + 16, pad, 8);
    std::memcpy(tensor(tensors, "query_start_loc").data.data() + 12, &end, 4);
  });
  expect_passes(run(absl::StrCat("layer run --model k3-tiny --tp 1 --rank 0 --layer 1 --inputs ",
                                 path("minus_one.safetensors"), " --out ", path("out.safetensors"),
                                 " --device cpu --check")));
}

class LayerCommandRefuses : public LayerCommand {
 protected:
  void SetUp() override {
    LayerCommand::SetUp();
    const CommandResult made =
        run(absl::StrCat("layer inputs --model k3-tiny ", kWhere, " --requests 2 --q 4 --out ", path("in.safetensors")));
    ASSERT_EQ(made.status, 0) << made.output;
  }
  // `layer run` on a copy of the good inputs with `edit` applied.
  CommandResult run_edited(const std::function<void(std::vector<model::TensorToWrite>&)>& edit) {
    rewrite(path("in.safetensors"), path("bad.safetensors"), edit);
    return run(absl::StrCat("layer run --model k3-tiny ", kWhere, " --inputs ", path("bad.safetensors"), " --out ",
                            path("out.safetensors"), " --device cpu"));
  }
  static constexpr const char* kWhere = "--tp 2 --rank 1 --layer 1";
};

TEST_F(LayerCommandRefuses, AWrongDtype) {
  const CommandResult result = run_edited([](auto& tensors) {
    model::TensorToWrite& prefix = tensor(tensors, "prefix");
    prefix.dtype = model::Dtype::kF32;
    prefix.shape = {8, 128};
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("bad.safetensors: tensor \"prefix\": expected BF16 [8, 256] ([T, H], T = N x q = 8, "
                                       "H = hidden_size 256), got F32 [8, 128]; hint: the residual prefix"));
}

TEST_F(LayerCommandRefuses, AWrongShape) {
  const CommandResult result = run_edited([](auto& tensors) {
    model::TensorToWrite& state = tensor(tensors, "recurrent_state");
    state.shape = {11, 8, 128, 64};
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"recurrent_state\": expected F32 [11, 4, 128, 128] ([slots, NHl, 128, 128] "
                                       "with NHl = 4 heads of this rank, V-first), got F32 [11, 8, 128, 64]"));
}

TEST_F(LayerCommandRefuses, AMissingTensor) {
  const CommandResult result = run_edited([](auto& tensors) {
    std::erase_if(tensors, [](const model::TensorToWrite& t) { return t.name == "num_accepted"; });
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("bad.safetensors: no tensor \"num_accepted\" (expected I32 [2], [N], N = 2 requests "
                                       "from state_indices); hint: the names, dtypes and layouts are listed in docs/layer_run.md"));
}

TEST_F(LayerCommandRefuses, AnUnknownTensor) {
  const CommandResult result = run_edited([](auto& tensors) { tensor(tensors, "delta").name = "deltas"; });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("bad.safetensors: unknown tensor \"deltas\"; expected only blocks, conv_state, "));
}

TEST_F(LayerCommandRefuses, ANonUniformQueryStartLoc) {
  const CommandResult result = run_edited([](auto& tensors) {
    int32_t value = 3;
    std::memcpy(tensor(tensors, "query_start_loc").data.data() + 4, &value, 4);
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"query_start_loc\": query_start_loc[1] = 3, expected 4 (= 1 x q = 4); "
                                       "hint: K1 serves uniform spec-verify batches"));
}

TEST_F(LayerCommandRefuses, AQueryStartLocNeitherUniformNorPadded) {
  const CommandResult result = run_edited([](auto& tensors) {
    int32_t value = 5;
    std::memcpy(tensor(tensors, "query_start_loc").data.data() + 8, &value, 4);
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"query_start_loc\": query_start_loc[2] = 5, expected 8 (= 2 x q = 4) "
                                       "or, for a padded request, 4 (the last real request's end repeated); hint: "
                                       "K1 serves uniform spec-verify batches"));
}

TEST_F(LayerCommandRefuses, APaddedRequestWithASlot) {
  // query_start_loc [0, 4, 4] pads request 1, whose slots are real.
  const CommandResult result = run_edited([](auto& tensors) {
    int32_t value = 4;
    std::memcpy(tensor(tensors, "query_start_loc").data.data() + 8, &value, 4);
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"state_indices\": state_indices[1, 0] = "));
  EXPECT_THAT(result.output, HasSubstr(" in request 1, which query_start_loc pads (query_start_loc[2] = 4 repeats the "
                                       "last real end); expected NULL_BLOCK_ID 0 (or -1); hint: vLLM pads a FULL "
                                       "graph's replay with whole requests of slot 0 and one accepted token"));
}

TEST_F(LayerCommandRefuses, NumAcceptedOutsideOneToQ) {
  const CommandResult result = run_edited([](auto& tensors) {
    int32_t value = 5;
    std::memcpy(tensor(tensors, "num_accepted").data.data() + 4, &value, 4);
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"num_accepted\": num_accepted[1] = 5, expected 1..4"));
}

TEST_F(LayerCommandRefuses, ASlotPastTheCaches) {
  const CommandResult result = run_edited([](auto& tensors) {
    int32_t value = 11;
    std::memcpy(tensor(tensors, "state_indices").data.data() + 4 * 6, &value, 4);
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"state_indices\": state_indices[1, 2] = 11 is past the 11 cache slots"));
}

TEST_F(LayerCommandRefuses, BothConvLayouts) {
  const CommandResult result = run_edited([](auto& tensors) {
    model::TensorToWrite copy = tensor(tensors, "conv_state");
    copy.name = "conv_state_dim_first";
    tensors.push_back(copy);
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("both of \"conv_state\" [slots, SL, 3 Pl] and \"conv_state_dim_first\" [slots, 3 Pl, SL]; "
                                       "expected exactly one"));
}

TEST_F(LayerCommandRefuses, NeitherConvLayout) {
  const CommandResult result = run_edited([](auto& tensors) {
    std::erase_if(tensors, [](const model::TensorToWrite& t) { return t.name == "conv_state"; });
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("bad.safetensors: neither of \"conv_state\" [slots, SL, 3 Pl] and "
                                       "\"conv_state_dim_first\" [slots, 3 Pl, SL]; expected exactly one; hint: name the "
                                       "conv state by its layout"));
}

TEST_F(LayerCommandRefuses, NoTokens) {
  const CommandResult result = run_edited([](auto& tensors) {
    model::TensorToWrite& indices = tensor(tensors, "state_indices");
    indices.shape = {0, 4};
    indices.data.clear();
  });
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"state_indices\": shape [0, 4] has no token; hint: a step has at least "
                                       "one request of q >= 2 tokens"));
}

TEST_F(LayerCommandRefuses, AStridedTensor) {
  // A header whose num_accepted range is longer than its shape needs (how a padded dump looks).
  rewrite(path("in.safetensors"), path("bad.safetensors"), [](auto&) {});
  absl::StatusOr<std::unique_ptr<model::SafetensorsFile>> good = model::SafetensorsFile::open(path("bad.safetensors"));
  ASSERT_TRUE(good.ok());
  std::string header = "{";
  std::string data;
  for (const model::TensorInfo& info : (*good)->tensors()) {
    std::span<const uint8_t> bytes = (*good)->bytes(info);
    std::string stored(bytes.begin(), bytes.end());
    if (info.name == "num_accepted") stored += std::string(8, '\0');
    while (data.size() % 8 != 0) data += '\0';
    std::string shape;
    for (int64_t dim : info.shape) absl::StrAppend(&shape, shape.empty() ? "" : ",", dim);
    absl::StrAppend(&header, header.size() > 1 ? "," : "", "\"", info.name, "\":{\"dtype\":\"",
                    std::string(model::dtype_name(info.dtype)), "\",\"shape\":[", shape, "],\"data_offsets\":[",
                    data.size(), ",", data.size() + stored.size(), "]}");
    data += stored;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::ofstream out(path("strided.safetensors"), std::ios::binary);
  const uint64_t length = header.size();
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header << data;
  out.close();
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny ", kWhere, " --inputs ", path("strided.safetensors"),
                                                " --out ", path("out.safetensors"), " --device cpu"));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("strided.safetensors: tensor \"num_accepted\" is stored strided or padded (16 bytes "
                                       "for 8); hint: save a contiguous tensor"));
}

TEST_F(LayerCommandRefuses, ALayerPastTheModel) {
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 1 --rank 0 --layer 13 --inputs ",
                                                path("in.safetensors"), " --out ", path("out.safetensors")));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("--layer 13 is outside 0..12 (k3-tiny has 13 layers)"));
}

TEST_F(LayerCommandRefuses, AModelThatIsNeitherNameNorFolder) {
  const CommandResult result = run(absl::StrCat("layer run --model k4 --tp 1 --rank 0 --layer 1 --inputs ",
                                                path("in.safetensors"), " --out ", path("out.safetensors")));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("--model \"k4\" is neither an embedded config (k3, k3-tiny) nor a checkpoint folder"));
}

TEST_F(LayerCommandRefuses, ANanToCheckFails) {
  rewrite(path("in.safetensors"), path("bad.safetensors"), [](auto& tensors) {
    const uint16_t nan = 0x7fc0;
    std::memcpy(tensor(tensors, "prefix").data.data() + 2 * 300, &nan, 2);
  });
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny ", kWhere, " --inputs ", path("bad.safetensors"),
                                                " --out ", path("out.safetensors"), " --device cpu --check --stage k1"));
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("prefix[1, 44]: got nan, expected nan (not finite)"));
  EXPECT_THAT(result.output, HasSubstr("some outputs FAIL"));
}

TEST_F(LayerCommandRefuses, ARankOutsideTheTpSize) {
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 2 --rank 2 --layer 1 --inputs ",
                                                path("in.safetensors"), " --out ", path("out.safetensors")));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("--rank 2 with --tp 2: expected 0 <= rank < tp"));
}

TEST_F(LayerCommandRefuses, AnMlaLayerForStageK1) {
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 2 --rank 1 --layer 3 --inputs ",
                                                path("in.safetensors"), " --out ", path("out.safetensors"), " --stage k1"));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("--stage k1: layer 3 of k3-tiny is an MLA layer; expected a KDA layer; hint: the "
                                       "KDA layers (0-based) are 0, 1, 2, 4, 5, 6, 8, 9, 10, 12; --stage layer runs an "
                                       "MLA layer's FFN (K2) on the attention output given"));
}

TEST_F(LayerCommandRefuses, Layer0sDenseMlp) {
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 2 --rank 1 --layer 0 --inputs ",
                                                path("in.safetensors"), " --out ", path("out.safetensors")));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("layer 0 of k3-tiny has a dense MLP, which K2 does not serve; expected a layer "
                                       "with the latent MoE (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12); hint: --stage k1 "
                                       "runs the layer's attention half (K1) alone"));
}

TEST_F(LayerCommandRefuses, AWrongShapedCore) {
  // An FFN layer's file at TP 1 (2 MLA heads, 256 o_proj columns) with TP 2's core.
  const CommandResult made =
      run(absl::StrCat("layer inputs --model k3-tiny --tp 1 --rank 0 --layer 3 --requests 2 --q 2 --out ", path("ffn.safetensors")));
  ASSERT_EQ(made.status, 0) << made.output;
  rewrite(path("ffn.safetensors"), path("bad.safetensors"), [](auto& tensors) {
    model::TensorToWrite& core = tensor(tensors, "core");
    core.shape = {4, 128};
    core.data.resize(4 * 128 * 2);
  });
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 1 --rank 0 --layer 3 --inputs ",
                                                path("bad.safetensors"), " --out ", path("out.safetensors"), " --device cpu"));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("bad.safetensors: tensor \"core\": expected BF16 [4, 256] ([T, W], T = N x q = 4, "
                                       "W = 256 o_proj input columns of this rank), got BF16 [4, 128]; hint: the MLA "
                                       "attention output before o_proj (after the output gate), this rank's heads' columns"));
}

TEST_F(LayerCommandRefuses, KdaInputsInAnFfnLayersFile) {
  const CommandResult made =
      run(absl::StrCat("layer inputs --model k3-tiny --tp 1 --rank 0 --layer 3 --requests 2 --q 2 --out ", path("ffn.safetensors")));
  ASSERT_EQ(made.status, 0) << made.output;
  rewrite(path("ffn.safetensors"), path("bad.safetensors"), [](auto& tensors) {
    tensors.push_back({"delta", model::Dtype::kBF16, {4, 256}, std::vector<uint8_t>(4 * 256 * 2)});
  });
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 1 --rank 0 --layer 3 --inputs ",
                                                path("bad.safetensors"), " --out ", path("out.safetensors"), " --device cpu"));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("bad.safetensors: unknown tensor \"delta\"; expected only blocks, core, prefix, "
                                       "query_start_loc; hint: an FFN layer's step has no KDA caches, and its prefix has "
                                       "the delta folded in"));
}

TEST_F(LayerCommandRefuses, ANanInAnFfnLayersCoreFailsTheCheck) {
  const CommandResult made =
      run(absl::StrCat("layer inputs --model k3-tiny --tp 1 --rank 0 --layer 3 --requests 1 --q 2 --out ", path("ffn.safetensors")));
  ASSERT_EQ(made.status, 0) << made.output;
  rewrite(path("ffn.safetensors"), path("bad.safetensors"), [](auto& tensors) {
    const uint16_t nan = 0x7fc0;
    std::memcpy(tensor(tensors, "core").data.data() + 2 * 300, &nan, 2);
  });
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 1 --rank 0 --layer 3 --inputs ",
                                                path("bad.safetensors"), " --out ", path("out.safetensors"), " --device cpu --check"));
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("a: 256 failures; first: a[1, 0]: got nan, expected nan (not finite)"));
  EXPECT_THAT(result.output, HasSubstr("some outputs FAIL"));
}

TEST_F(LayerCommandRefuses, InputsOfAnotherRankShape) {
  // The file is TP 2's (4 heads); TP 1 has 8.
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny --tp 1 --rank 0 --layer 1 --inputs ",
                                                path("in.safetensors"), " --out ", path("out.safetensors"), " --device cpu"));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("tensor \"recurrent_state\": expected F32 [11, 8, 128, 128]"));
}

TEST_F(LayerCommandRefuses, MoreTokensThanK1Serves) {
  const CommandResult made = run(absl::StrCat("layer inputs --model k3-tiny ", kWhere, " --requests 5 --q 4 --out ",
                                              path("wide.safetensors")));
  ASSERT_EQ(made.status, 0) << made.output;
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny ", kWhere, " --inputs ", path("wide.safetensors"),
                                                " --out ", path("out.safetensors"), " --device cpu"));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("k1 build for layer 1: tokens = 20, expected a multiple of q = 4 up to 16"));
}

TEST_F(LayerCommandRefuses, ASeedWithAFolder) {
  const CommandResult result = run(absl::StrCat("layer run --model ", dir_.string(), " --seed 3 --tp 1 --rank 0 --layer 1 --inputs ",
                                                path("in.safetensors"), " --out ", path("out.safetensors")));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("--seed applies to an embedded config (k3, k3-tiny), not to the folder"));
}

TEST_F(LayerCommandRefuses, AMissingInputFile) {
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny ", kWhere, " --inputs ", path("none.safetensors"),
                                                " --out ", path("out.safetensors")));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("none.safetensors"));
}

TEST_F(LayerCommandRefuses, AGpuWhereThereIsNone) {
  runtime::DiscoveryOptions options;
  options.include_cpu = false;
  if (!runtime::discover_devices(options).devices.empty()) GTEST_SKIP() << "this machine has a GPU";
  const CommandResult result = run(absl::StrCat("layer run --model k3-tiny ", kWhere, " --inputs ", path("in.safetensors"),
                                                " --out ", path("out.safetensors"), " --device gpu"));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.output, HasSubstr("--device gpu: no GPU device found ("));
  EXPECT_THAT(result.output, HasSubstr("hint: --device cpu runs the kernels on the CPU interpreter"));
}

// --gpu-index as `monotile decode` takes it (device_choice.h): refused below 0 and with --device
// cpu before any work, and past this machine's GPUs (none found where there are none).
TEST_F(LayerCommandRefuses, AGpuIndexMisused) {
  const std::string where = absl::StrCat("layer run --model k3-tiny ", kWhere, " --inputs ", path("in.safetensors"),
                                         " --out ", path("out.safetensors"));
  CommandResult result = run(absl::StrCat(where, " --gpu-index=-1"));
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile layer: --gpu-index -1: expected a GPU's index, 0 or more; hint: "
                                       "`monotile devices` lists this machine's GPUs"));
  result = run(absl::StrCat(where, " --gpu-index 0 --device cpu"));
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile layer: --gpu-index 0 with --device cpu: expected --device gpu or no "
                                       "--device; hint: the CPU interpreter is one device, leave --gpu-index out"));
  result = run(absl::StrCat(where, " --gpu-index 99"));
  EXPECT_EQ(result.status, 1) << result.output;
  if (result.output.find("no GPU device found") != std::string::npos) {
    EXPECT_THAT(result.output, HasSubstr("monotile layer: --gpu-index 99: no GPU device found ("));
    EXPECT_THAT(result.output, HasSubstr("); hint: --device cpu runs the kernels on the CPU interpreter"));
  } else {
    EXPECT_THAT(result.output, HasSubstr("monotile layer: --gpu-index 99: expected 0 to "));
    EXPECT_THAT(result.output, HasSubstr("; hint: `monotile devices` lists them, and without --gpu-index each rank "
                                         "takes GPU (local rank % GPUs)"));
  }
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr(" ran on ")));
  const CommandResult inputs = run("layer inputs --model k3-tiny --gpu-index 0");
  EXPECT_EQ(inputs.status, 2) << inputs.output;
  EXPECT_THAT(inputs.output, HasSubstr("monotile layer inputs: unknown option --gpu-index; hint:"));
}

TEST_F(LayerCommandRefuses, Misuse) {
  EXPECT_EQ(run("layer").status, 2);
  EXPECT_EQ(run("layer run --model k3-tiny --tp 1 --rank 0 --layer 1").status, 2);
  const CommandResult device = run("layer run --model k3-tiny --tp 1 --rank 0 --layer 1 --inputs a --out b --device tpu");
  EXPECT_EQ(device.status, 2);
  EXPECT_THAT(device.output, HasSubstr("--device \"tpu\" is not cpu or gpu"));
  const CommandResult slots = run(absl::StrCat("layer inputs --model k3-tiny ", kWhere, " --requests 2 --q 4 --slots 8 --out x"));
  EXPECT_EQ(slots.status, 2);
  EXPECT_THAT(slots.output, HasSubstr("--slots 8 is too few"));
  const CommandResult stage = run("layer run --model k3-tiny --tp 1 --rank 0 --layer 1 --inputs a --out b --stage k2");
  EXPECT_EQ(stage.status, 2);
  EXPECT_THAT(stage.output, HasSubstr("--stage \"k2\" is not layer or k1"));
  const CommandResult mla = run("layer inputs --model k3-tiny --tp 1 --rank 0 --layer 3 --requests 1 --q 2 --slots 9 --out x");
  EXPECT_EQ(mla.status, 2);
  EXPECT_THAT(mla.output, HasSubstr("--slots applies to a KDA layer's caches; layer 3 of k3-tiny is an MLA layer, whose "
                                    "step has none"));
  const CommandResult no_delta =
      run("layer inputs --model k3-tiny --tp 1 --rank 0 --layer 3 --requests 1 --q 2 --no-delta --out x");
  EXPECT_EQ(no_delta.status, 2);
  EXPECT_THAT(no_delta.output, HasSubstr("--no-delta applies to a KDA layer's step; layer 3 of k3-tiny is an MLA layer"));
  const CommandResult required = run("layer run --model k3-tiny --tp 1 --rank 0 --layer 1 --out b");
  EXPECT_EQ(required.status, 2);
  EXPECT_THAT(required.output, HasSubstr("monotile layer: --inputs is required"));
  const CommandResult range = run("layer run --model k3-tiny --tp 0 --rank 0 --layer 1 --inputs a --out b");
  EXPECT_EQ(range.status, 2);
  EXPECT_THAT(range.output, HasSubstr("monotile layer: --tp \"0\" is not an integer >= 1"));
  const CommandResult positional = run("layer run k3-tiny");
  EXPECT_EQ(positional.status, 2);
  EXPECT_THAT(positional.output, HasSubstr("monotile layer: takes options only, got \"k3-tiny\""));
  EXPECT_THAT(run("layer frob").output, HasSubstr("monotile layer: unknown subcommand \"frob\""));
}

TEST_F(LayerCommandRefuses, AnOptionOfTheOtherSubcommandOrCommand) {
  const CommandResult inputs_option = run("layer run --model k3-tiny --tp 1 --rank 0 --layer 1 --requests 2");
  EXPECT_EQ(inputs_option.status, 2);
  EXPECT_THAT(inputs_option.output, HasSubstr("monotile layer run: unknown option --requests; hint: monotile layer "
                                              "run --help lists its options"));
  const CommandResult run_option = run("layer inputs --model k3-tiny --stage k1");
  EXPECT_EQ(run_option.status, 2);
  EXPECT_THAT(run_option.output, HasSubstr("monotile layer inputs: unknown option --stage; hint:"));
  const CommandResult decode_option = run("layer run --model k3-tiny --steps 2");
  EXPECT_EQ(decode_option.status, 2);
  EXPECT_THAT(decode_option.output, HasSubstr("monotile layer run: unknown option --steps; hint:"));
  const CommandResult help = run("layer run --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.output, HasSubstr("usage: monotile layer run --model DIR|NAME"));
}

}  // namespace
}  // namespace monotile::tools
