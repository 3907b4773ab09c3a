// Hugging Face config.json -> LlamaConfig. Fields as transformers' LlamaConfig names them;
// transformers 5 moved rope_theta into "rope_parameters", so both places are read.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "meganeura/error.hpp"
#include "meganeura/llama.hpp"

namespace meganeura::models {

namespace {

using nlohmann::json;

struct Reader {
  const json& j;
  const std::string& source;
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw Error(source + ": \"" + field + "\" " + msg);
  }
  int64_t integer(const char* field, std::optional<int64_t> fallback = std::nullopt) const {
    if (!j.contains(field) || j[field].is_null()) {
      if (fallback) return *fallback;
      fail(field, "is missing (a Llama config needs it)");
    }
    if (!j[field].is_number_integer()) fail(field, "is not an integer: " + j[field].dump());
    return j[field].get<int64_t>();
  }
  double number(const json& from, const char* field, double fallback) const {
    if (!from.contains(field) || from[field].is_null()) return fallback;
    if (!from[field].is_number()) fail(field, "is not a number: " + from[field].dump());
    return from[field].get<double>();
  }
  bool flag(const char* field, bool fallback) const {
    if (!j.contains(field) || j[field].is_null()) return fallback;
    if (!j[field].is_boolean()) fail(field, "is not true or false: " + j[field].dump());
    return j[field].get<bool>();
  }
};

}  // namespace

LlamaConfig LlamaConfig::parse(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(source + ": not a JSON object");
  const Reader r{j, source};
  LlamaConfig c;
  if (j.contains("model_type") && j["model_type"].is_string()) c.model_type = j["model_type"].get<std::string>();
  if (c.model_type != "llama" && c.model_type != "mistral")
    r.fail("model_type", "is \"" + c.model_type + "\"; Llama-family models (llama, mistral) are supported");
  c.vocab_size = r.integer("vocab_size");
  c.hidden_size = r.integer("hidden_size");
  c.intermediate_size = r.integer("intermediate_size");
  c.num_hidden_layers = r.integer("num_hidden_layers");
  c.num_attention_heads = r.integer("num_attention_heads");
  c.num_key_value_heads = r.integer("num_key_value_heads", c.num_attention_heads);
  c.head_dim = r.integer("head_dim", c.hidden_size / std::max<int64_t>(c.num_attention_heads, 1));
  c.max_position_embeddings = r.integer("max_position_embeddings", 2048);
  c.rms_norm_eps = r.number(j, "rms_norm_eps", 1e-6);
  c.rope_theta = r.number(j, "rope_theta", 10000.0);
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object())
    c.rope_theta = r.number(j["rope_parameters"], "rope_theta", c.rope_theta);
  for (const char* field : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(field) || !j[field].is_object()) continue;
    const json& rs = j[field];
    const std::string type = rs.contains("rope_type") ? rs["rope_type"].get<std::string>()
                                                      : (rs.contains("type") ? rs["type"].get<std::string>() : "default");
    if (type != "default") r.fail(field, "has rope type \"" + type + "\"; only the default rotary embedding is supported");
  }
  if (j.contains("hidden_act") && j["hidden_act"] != "silu") r.fail("hidden_act", "is " + j["hidden_act"].dump() + "; only silu is supported");
  c.tie_word_embeddings = r.flag("tie_word_embeddings", false);
  c.attention_bias = r.flag("attention_bias", false);
  c.mlp_bias = r.flag("mlp_bias", false);
  c.sliding_window = r.integer("sliding_window", 0);
  c.bos_token_id = r.integer("bos_token_id", -1);
  if (j.contains("eos_token_id")) {
    const json& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int64_t>());
    else if (e.is_array())
      for (const json& v : e) c.eos_token_ids.push_back(v.get<int64_t>());
  }
  for (auto [field, v] : {std::pair{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
                          {"intermediate_size", c.intermediate_size}, {"num_hidden_layers", c.num_hidden_layers},
                          {"num_attention_heads", c.num_attention_heads}, {"num_key_value_heads", c.num_key_value_heads},
                          {"head_dim", c.head_dim}})
    if (v <= 0) r.fail(field, "must be positive, got " + std::to_string(v));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.fail("num_key_value_heads", std::to_string(c.num_key_value_heads) + " does not divide num_attention_heads " +
                                      std::to_string(c.num_attention_heads));
  return c;
}

LlamaConfig LlamaConfig::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be opened");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

}  // namespace meganeura::models
