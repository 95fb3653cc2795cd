// Reading the model config: every field by name with its type checked, then the contradictions
// refused, so that the layers never meet a value the config could not have meant.
#include "model/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "model/kernel_limits.h"
#include "model/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace monotile::model {
namespace {

using Json = nlohmann::json;

std::string type_name(const Json& value) { return value.type_name(); }

// Reads fields of one JSON object, naming each in its messages as `<where>: field "<prefix><name>"`.
class FieldReader {
 public:
  FieldReader(const Json& object, std::string where, std::string prefix)
      : object_(object), where_(std::move(where)), prefix_(std::move(prefix)) {}

  absl::Status error(std::string_view field, std::string_view what) const {
    return absl::InvalidArgumentError(str_cat(where_, ": field \"", prefix_, field, "\" ", what));
  }

  const Json* find(std::string_view field) const {
    auto it = object_.find(std::string(field));
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  absl::StatusOr<int64_t> integer(std::string_view field, int64_t min, std::optional<int64_t> fallback = {}) const {
    const Json* value = find(field);
    if (!value) {
      if (fallback) return *fallback;
      return error(field, str_cat("is missing; expected an integer >= ", min));
    }
    if (!value->is_number_integer()) {
      return error(field, str_cat("is ", type_name(*value), " ", value->dump(), "; expected an integer >= ", min));
    }
    int64_t result = value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT64_MAX}
                         ? INT64_MAX
                         : value->get<int64_t>();
    if (result < min || result > (int64_t{1} << 40)) {
      return error(field, str_cat("is ", result, "; expected an integer in [", min, ", 2^40]"));
    }
    return result;
  }

  absl::StatusOr<double> number(std::string_view field, std::optional<double> fallback = {}) const {
    const Json* value = find(field);
    if (!value) {
      if (fallback) return *fallback;
      return error(field, "is missing; expected a number");
    }
    if (!value->is_number()) return error(field, str_cat("is ", type_name(*value), "; expected a number"));
    double result = value->get<double>();
    if (!std::isfinite(result)) return error(field, "is not finite");
    return result;
  }

  absl::StatusOr<bool> boolean(std::string_view field, std::optional<bool> fallback = {}) const {
    const Json* value = find(field);
    if (!value) {
      if (fallback) return *fallback;
      return error(field, "is missing; expected true or false");
    }
    if (!value->is_boolean()) return error(field, str_cat("is ", type_name(*value), "; expected true or false"));
    return value->get<bool>();
  }

  absl::StatusOr<std::string> string(std::string_view field, std::optional<std::string> fallback = {}) const {
    const Json* value = find(field);
    if (!value) {
      if (fallback) return *fallback;
      return error(field, "is missing; expected a string");
    }
    if (!value->is_string()) return error(field, str_cat("is ", type_name(*value), "; expected a string"));
    return value->get<std::string>();
  }

  absl::StatusOr<std::vector<int>> int_list(std::string_view field) const {
    const Json* value = find(field);
    if (!value) return error(field, "is missing; expected a list of layer numbers");
    if (!value->is_array()) return error(field, str_cat("is ", type_name(*value), "; expected a list"));
    std::vector<int> result;
    for (const Json& item : *value) {
      if (!item.is_number_integer()) {
        return error(field, str_cat("holds ", type_name(item), " ", item.dump(), "; expected integers"));
      }
      int64_t number = item.get<int64_t>();
      if (number < INT32_MIN || number > INT32_MAX) return error(field, str_cat("holds ", number, ", out of range"));
      result.push_back(static_cast<int>(number));
    }
    return result;
  }

 private:
  const Json& object_;
  std::string where_;
  std::string prefix_;
};

#define MT_FIELD(lhs, expr) MT_ASSIGN_OR_RETURN(lhs, expr)

absl::Status read_quantization(const Json& quant, const std::string& where, ModelConfig& config) {
  FieldReader reader(quant, where, "quantization_config.");
  MT_ASSIGN_OR_RETURN(std::string method, reader.string("quant_method"));
  if (method != "compressed-tensors") {
    return reader.error("quant_method", str_cat("is \"", method, "\"; expected \"compressed-tensors\""));
  }
  const Json* groups = reader.find("config_groups");
  if (!groups || !groups->is_object() || groups->empty()) {
    return reader.error("config_groups", "is missing or empty; expected the MXFP4 expert weights' group");
  }
  for (auto it = groups->begin(); it != groups->end(); ++it) {
    if (!it->is_object() || !it->contains("weights") || !(*it)["weights"].is_object()) {
      return reader.error(str_cat("config_groups.", it.key(), ".weights"), "is missing; expected an object");
    }
    FieldReader weights((*it)["weights"], where, str_cat("quantization_config.config_groups.", it.key(), ".weights."));
    MT_ASSIGN_OR_RETURN(int64_t bits, weights.integer("num_bits", 1));
    MT_ASSIGN_OR_RETURN(std::string type, weights.string("type"));
    MT_ASSIGN_OR_RETURN(int64_t group, weights.integer("group_size", 1));
    if (bits != 4 || type != "float") {
      return weights.error("num_bits", str_cat("and type are ", bits, " \"", type, "\"; expected 4 \"float\" (MXFP4)"));
    }
    if (group != 32) return weights.error("group_size", str_cat("is ", group, "; expected 32 (MXFP4)"));
    config.mxfp4_group_size = static_cast<int>(group);
  }
  return absl::OkStatus();
}

absl::Status check_consistent(const ModelConfig& c, const std::string& where) {
  auto refuse = [&](std::string_view field, std::string_view what) {
    return absl::InvalidArgumentError(str_cat(where, ": field \"", field, "\" ", what));
  };
  for (int layer : c.kda_layers) {
    if (layer < 1 || layer > c.num_hidden_layers) {
      return refuse("linear_attn_config.kda_layers",
                    str_cat("holds ", layer, "; expected 1-based layers in 1..", c.num_hidden_layers));
    }
  }
  if (c.hidden_act != "situ" && c.hidden_act != "silu") {
    return refuse("hidden_act", str_cat("is \"", c.hidden_act, "\"; expected \"situ\" or \"silu\""));
  }
  if (c.router_activation != "sigmoid" && c.router_activation != "softmax") {
    return refuse("moe_router_activation_func",
                  str_cat("is \"", c.router_activation, "\"; expected \"sigmoid\" or \"softmax\""));
  }
  if (c.gate_lower_bound < -5.0 || c.gate_lower_bound >= 0) {
    return refuse("linear_attn_config.gate_lower_bound", str_cat("is ", c.gate_lower_bound, "; expected -5 <= lb < 0"));
  }
  if (c.num_experts_per_token > c.num_experts) {
    return refuse("num_experts_per_token",
                  str_cat("is ", c.num_experts_per_token, "; expected at most num_experts ", c.num_experts));
  }
  if (!c.mla_use_nope) return refuse("mla_use_nope", "is false; expected true (vLLM asserts it)");
  if (c.routed_expert_hidden_size % 32 != 0) {
    return refuse("routed_expert_hidden_size",
                  str_cat("is ", c.routed_expert_hidden_size, "; expected a multiple of 32 (MXFP4 groups)"));
  }
  if (c.moe_intermediate_size % 32 != 0) {
    return refuse("moe_intermediate_size", str_cat("is ", c.moe_intermediate_size, "; expected a multiple of 32"));
  }
  return absl::OkStatus();
}

}  // namespace

bool ModelConfig::is_kda_layer(int layer) const {
  return std::find(kda_layers.begin(), kda_layers.end(), layer + 1) != kda_layers.end();
}

bool ModelConfig::is_moe_layer(int layer) const {
  return num_experts > 0 && layer >= first_k_dense_replace && layer % moe_layer_freq == 0;
}

ServedKind ModelConfig::served_kind(int layer) const {
  if (layer < 1 || layer >= num_hidden_layers || !is_moe_layer(layer)) return ServedKind::kNone;
  if (is_kda_layer(layer)) return ServedKind::kWhole;
  return is_block_write_layer(layer) ? ServedKind::kNone : ServedKind::kFfn;
}

std::string_view served_kind_name(ServedKind kind) {
  switch (kind) {
    case ServedKind::kWhole: return "whole";
    case ServedKind::kFfn: return "ffn";
    case ServedKind::kNone: break;
  }
  return "-";
}

absl::StatusOr<ModelConfig> parse_config(std::string_view json_text, std::string_view where_view) {
  std::string where(where_view);
  Json root = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(str_cat(where, ": not a JSON object; hint: is this a config.json?"));
  }
  const Json* text = &root;
  std::string prefix;
  if (root.contains("text_config")) {
    if (!root["text_config"].is_object()) {
      return absl::InvalidArgumentError(str_cat(where, ": field \"text_config\" is ", root["text_config"].type_name(),
                                                     "; expected an object"));
    }
    text = &root["text_config"];
    prefix = "text_config.";
  }
  FieldReader f(*text, where, prefix);
  ModelConfig c;
  c.name = where;
  c.layers_prefix = prefix.empty() ? "model.layers" : "language_model.model.layers";
  MT_FIELD(c.vocab_size, f.integer("vocab_size", 1));
  MT_FIELD(c.hidden_size, f.integer("hidden_size", 1));
  MT_FIELD(int64_t layers, f.integer("num_hidden_layers", 1, {}));
  if (layers > 4096) return f.error("num_hidden_layers", str_cat("is ", layers, "; expected at most 4096"));
  c.num_hidden_layers = static_cast<int>(layers);
  MT_FIELD(c.intermediate_size, f.integer("intermediate_size", 1));
  MT_FIELD(c.rms_norm_eps, f.number("rms_norm_eps", 1e-6));
  MT_FIELD(c.hidden_act, f.string("hidden_act", "silu"));
  MT_FIELD(c.situ_beta, f.number("activation_situ_beta", 1.0));
  MT_FIELD(c.situ_linear_beta, f.number("activation_situ_linear_beta", 0.0));
  MT_FIELD(int64_t block, f.integer("attn_res_block_size", 1));
  c.attn_res_block_size = static_cast<int>(std::min<int64_t>(block, 1 << 20));

  const Json* linear = f.find("linear_attn_config");
  if (!linear || !linear->is_object()) {
    return f.error("linear_attn_config", "is missing; expected an object with kda_layers, num_heads, head_dim");
  }
  FieldReader l(*linear, where, prefix + "linear_attn_config.");
  MT_FIELD(c.kda_layers, l.int_list("kda_layers"));
  MT_FIELD(std::vector<int> full_layers, l.int_list("full_attn_layers"));
  MT_FIELD(int64_t kda_heads, l.integer("num_heads", 1));
  MT_FIELD(int64_t head_dim, l.integer("head_dim", 1));
  MT_FIELD(int64_t conv, l.integer("short_conv_kernel_size", 1));
  if (kda_heads > 65536 || head_dim > 65536 || conv > 64) {
    return l.error("num_heads", str_cat("/head_dim/short_conv_kernel_size are ", kda_heads, "/", head_dim, "/", conv,
                                             "; expected at most 65536/65536/64"));
  }
  c.kda_num_heads = static_cast<int>(kda_heads);
  c.kda_head_dim = static_cast<int>(head_dim);
  c.conv_size = static_cast<int>(conv);
  MT_FIELD(c.gate_lower_bound, l.number("gate_lower_bound"));
  MT_FIELD(c.use_full_rank_gate, l.boolean("use_full_rank_gate", false));

  MT_FIELD(int64_t mla_heads, f.integer("num_attention_heads", 1));
  c.num_attention_heads = static_cast<int>(std::min<int64_t>(mla_heads, 1 << 20));
  MT_FIELD(c.q_lora_rank, f.integer("q_lora_rank", 1));
  MT_FIELD(c.kv_lora_rank, f.integer("kv_lora_rank", 1));
  MT_FIELD(c.qk_nope_head_dim, f.integer("qk_nope_head_dim", 1));
  MT_FIELD(c.qk_rope_head_dim, f.integer("qk_rope_head_dim", 0));
  MT_FIELD(c.v_head_dim, f.integer("v_head_dim", 1));
  MT_FIELD(c.mla_use_nope, f.boolean("mla_use_nope", false));
  MT_FIELD(c.mla_use_output_gate, f.boolean("mla_use_output_gate", false));

  MT_FIELD(int64_t experts, f.integer("num_experts", 1));
  MT_FIELD(int64_t top_k, f.integer("num_experts_per_token", 1));
  if (experts > 65536) return f.error("num_experts", str_cat("is ", experts, "; expected at most 65536"));
  c.num_experts = static_cast<int>(experts);
  c.num_experts_per_token = static_cast<int>(std::min<int64_t>(top_k, 1 << 20));
  MT_FIELD(c.moe_intermediate_size, f.integer("moe_intermediate_size", 1));
  MT_FIELD(int64_t shared, f.integer("num_shared_experts", 0, 0));
  c.num_shared_experts = static_cast<int>(std::min<int64_t>(shared, 1024));
  MT_FIELD(c.routed_expert_hidden_size, f.integer("routed_expert_hidden_size", 1));
  MT_FIELD(c.latent_moe_use_norm, f.boolean("latent_moe_use_norm", false));
  MT_FIELD(c.router_activation, f.string("moe_router_activation_func", "sigmoid"));
  MT_FIELD(c.moe_renormalize, f.boolean("moe_renormalize", true));
  MT_FIELD(c.routed_scaling_factor, f.number("routed_scaling_factor", 1.0));
  MT_FIELD(int64_t dense, f.integer("first_k_dense_replace", 0, 0));
  MT_FIELD(int64_t freq, f.integer("moe_layer_freq", 1, 1));
  c.first_k_dense_replace = static_cast<int>(std::min<int64_t>(dense, 1 << 20));
  c.moe_layer_freq = static_cast<int>(std::min<int64_t>(freq, 1 << 20));
  MT_FIELD(c.min_moe_intermediate_per_partition, f.integer("min_moe_intermediate_per_partition", 1, 256));

  const Json* quant = f.find("quantization_config");
  if (!quant) quant = root.contains("quantization_config") && !root["quantization_config"].is_null()
                          ? &root["quantization_config"] : nullptr;
  if (quant) {
    if (!quant->is_object()) return f.error("quantization_config", "is not an object");
    MT_RETURN_IF_ERROR(read_quantization(*quant, where, c));
  }
  MT_RETURN_IF_ERROR(check_consistent(c, where));
  return c;
}

absl::StatusOr<ModelConfig> load_config(std::string_view name_or_dir) {
  std::string_view embedded = embedded_config_json(name_or_dir);
  if (!embedded.empty()) {
    absl::StatusOr<ModelConfig> config = parse_config(embedded, str_cat("config \"", name_or_dir, "\""));
    if (config.ok()) config->name = std::string(name_or_dir);
    return config;
  }
  std::filesystem::path path = std::filesystem::path(std::string(name_or_dir)) / "config.json";
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(str_cat("no config \"", name_or_dir, "\": ", path.string(),
                                            " cannot be read; hint: give a checkpoint folder or one of: ",
                                            "k3, k3-tiny"));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ModelConfig> config = parse_config(text.str(), path.string());
  if (config.ok()) config->name = std::string(name_or_dir);
  return config;
}

absl::StatusOr<RankDims> rank_dims(const ModelConfig& c, int tp, int rank) {
  auto refuse = [&](std::string_view field, int64_t value) {
    return absl::InvalidArgumentError(str_cat("config \"", c.name, "\" at tp ", tp, ": \"", field, "\" is ", value,
                                                   "; expected a multiple of the TP size ", tp));
  };
  if (tp < 1 || rank < 0 || rank >= tp) {
    return absl::InvalidArgumentError(str_cat("rank ", rank, " of tp ", tp, ": expected tp >= 1 and 0 <= rank < tp"));
  }
  if (c.kda_num_heads % tp) return refuse("linear_attn_config.num_heads", c.kda_num_heads);
  if (c.num_attention_heads % tp) return refuse("num_attention_heads", c.num_attention_heads);
  if (c.moe_intermediate_size % tp) return refuse("moe_intermediate_size", c.moe_intermediate_size);
  if (c.shared_intermediate() % tp) return refuse("moe_intermediate_size * num_shared_experts", c.shared_intermediate());
  if (c.intermediate_size % tp) return refuse("intermediate_size", c.intermediate_size);
  if (c.hidden_size % tp) return refuse("hidden_size", c.hidden_size);
  RankDims d;
  d.tp = tp;
  d.rank = rank;
  d.kda_heads = c.kda_num_heads / tp;
  d.kda_projection = c.kda_projection() / tp;
  int64_t rows = 4 * d.kda_projection + c.kda_head_dim + d.kda_heads;
  d.in_proj_pad = (16 - rows % 16) % 16;
  d.in_proj_rows = rows + d.in_proj_pad;
  d.mla_heads = c.num_attention_heads / tp;
  d.expert_intermediate = c.moe_intermediate_size / tp;
  d.shared_intermediate = c.shared_intermediate() / tp;
  d.dense_intermediate = c.intermediate_size / tp;
  d.up_proj_rows = tp > 1 ? c.hidden_size / tp : c.hidden_size;
  if (tp > 1 && d.expert_intermediate < c.min_moe_intermediate_per_partition) {
    return absl::InvalidArgumentError(str_cat(
        "config \"", c.name, "\" at tp ", tp, ": moe_intermediate_size / tp is ", d.expert_intermediate,
        ", below min_moe_intermediate_per_partition ", c.min_moe_intermediate_per_partition,
        "; vLLM would zero-pad the experts, which is not supported; hint: use a smaller TP size"));
  }
  if (c.mxfp4_group_size > 0 && d.expert_intermediate % c.mxfp4_group_size != 0) {
    return absl::InvalidArgumentError(str_cat("config \"", c.name, "\" at tp ", tp, ": moe_intermediate_size / tp is ",
                                                   d.expert_intermediate, "; expected a multiple of the MXFP4 group ",
                                                   c.mxfp4_group_size));
  }
  // The kernels' GEMVs step through K at least 32 wide: the shared experts' down-projection and an
  // MLA layer's o_proj read these as K.
  if (d.shared_intermediate % kKernelWidthMultiple != 0) {
    return absl::InvalidArgumentError(str_cat("config \"", c.name, "\" at tp ", tp,
                                              ": moe_intermediate_size * num_shared_experts / tp is ",
                                              d.shared_intermediate, "; expected a multiple of ", kKernelWidthMultiple));
  }
  if (int64_t{d.mla_heads} * c.v_head_dim % kKernelWidthMultiple != 0) {
    return absl::InvalidArgumentError(str_cat("config \"", c.name, "\" at tp ", tp, ": num_attention_heads / tp * v_head_dim is ",
                                              int64_t{d.mla_heads} * c.v_head_dim, "; expected a multiple of ",
                                              kKernelWidthMultiple));
  }
  return d;
}

}  // namespace monotile::model
