// Hugging Face config.json -> LlamaConfig. Fields as transformers' LlamaConfig names them;
// transformers 5 moved rope_theta into "rope_parameters", so both places are read.
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "meganeura/error.hpp"
#include "meganeura/llama.hpp"
#include "meganeura/ops.hpp"

namespace meganeura::models {

namespace {

using nlohmann::json;

// Bounds on the sizes a config may ask for: well above every Llama-family model released (the
// largest: hidden 16384, intermediate 53248, 128 heads, 126 layers, 128K to 1M positions), low
// enough that every product of them the model builds fits 64 bits and what is allocated from the
// config alone (the rotary tables, max_position_embeddings x head_dim floats each) stays small.
constexpr int64_t kMaxVocab = int64_t{1} << 31;  // token ids are int32
constexpr int64_t kMaxWidth = int64_t{1} << 20;  // hidden_size, intermediate_size
constexpr int64_t kMaxLayers = int64_t{1} << 14;
constexpr int64_t kMaxHeads = int64_t{1} << 14;
constexpr int64_t kMaxPositions = int64_t{1} << 24;
constexpr int64_t kMaxRotaryElements = int64_t{1} << 28;  // max_position_embeddings x head_dim: 1 GiB per table
constexpr int kMaxDepth = 64;                             // nesting; configs use 3 or 4 levels

// A value as an error message shows it: scalars as written, a string cut short, containers by
// their JSON type only (a deeply nested value would overflow the stack if dump()ed).
std::string shown(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const std::string q =
        json(s.substr(0, 40)).dump(-1, ' ', false, json::error_handler_t::replace);  // a cut character: U+FFFD
    return s.size() <= 40 ? q : q + "... (" + std::to_string(s.size()) + " bytes)";
  }
  if (v.is_primitive()) return v.dump();
  return std::string("an ") + v.type_name();  // "an object", "an array"
}

// config.json read by nlohmann's DOM builder (no recursion) behind a SAX handler that knows the
// top-level field being read, so that a number overflowing a double names it, and that refuses
// nesting deeper than kMaxDepth.
class ConfigSax {
 public:
  ConfigSax(json& out, const std::string& source) : dom_(out, true), source_(source) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return dom_.number_float(v, s); }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    enter();
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    if (depth_ == 1) field_ = k;
    return dom_.key(k);
  }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    enter();
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t, const std::string&, const json::exception& e) {
    throw Error(source_ + ": " + (field_.empty() ? "not valid JSON: " : where() + "is not valid JSON: ") + e.what());
  }

 private:
  void enter() {
    if (++depth_ > kMaxDepth)
      throw Error(source_ + ": " + (field_.empty() ? "the JSON " : where()) + "nests arrays and objects deeper than " +
                  std::to_string(kMaxDepth) + " levels");
  }
  std::string where() const { return "\"" + field_.substr(0, 64) + "\" "; }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& source_;
  int depth_ = 0;
  std::string field_;
};

struct Reader {
  const json& j;
  const std::string& source;
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw Error(source + ": \"" + field + "\" " + msg);
  }
  // An integer in [lo, hi]; JSON integers beyond int64 (read as unsigned) are out of range too.
  int64_t integer_of(const json& v, const std::string& field, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) fail(field, "is not an integer: " + shown(v));
    std::string range = "[";  // appended: GCC 12's -O3 misreads "literal" + std::string (-Wrestrict)
    range += std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))  // (also past int64)
      fail(field, "is " + std::to_string(v.get<uint64_t>()) + ", not in " + range);
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(field, "is " + std::to_string(x) + ", not in " + range);
    return x;
  }
  int64_t integer(const char* field, int64_t lo, int64_t hi, std::optional<int64_t> fallback = std::nullopt) const {
    if (!j.contains(field) || j[field].is_null()) {
      if (fallback) return *fallback;
      fail(field, "is missing (a Llama config needs it)");
    }
    return integer_of(j[field], field, lo, hi);
  }
  // A positive size, at most `hi` (the fallback, when the field is absent, is checked too).
  int64_t size(const char* field, int64_t hi, std::optional<int64_t> fallback = std::nullopt) const {
    if (!j.contains(field) || j[field].is_null()) {
      if (!fallback) fail(field, "is missing (a Llama config needs it)");
      if (*fallback < 1 || *fallback > hi)
        fail(field,
             "is missing, and its default " + std::to_string(*fallback) + " is not in [1, " + std::to_string(hi) + "]");
      return *fallback;
    }
    const json& v = j[field];
    if (v.is_number_integer() && (v.is_number_unsigned() ? v.get<uint64_t>() == 0 : v.get<int64_t>() <= 0))
      fail(field, "must be positive, got " + std::to_string(v.get<int64_t>()));
    return integer_of(v, field, 1, hi);
  }
  double number(const json& from, const char* field, double fallback) const {
    if (!from.contains(field) || from[field].is_null()) return fallback;
    if (!from[field].is_number()) fail(field, "is not a number: " + shown(from[field]));
    return from[field].get<double>();
  }
  bool flag(const char* field, bool fallback) const {
    if (!j.contains(field) || j[field].is_null()) return fallback;
    if (!j[field].is_boolean()) fail(field, "is not true or false: " + shown(j[field]));
    return j[field].get<bool>();
  }
  std::string text(const json& from, const std::string& field, const char* key, const std::string& fallback) const {
    if (!from.contains(key) || from[key].is_null()) return fallback;
    if (!from[key].is_string()) fail(field + "." + key, "is not a string: " + shown(from[key]));
    return from[key].get<std::string>();
  }
};

LlamaConfig parse_config(const std::string& text, const std::string& source) {
  json j;
  ConfigSax sax(j, source);
  json::sax_parse(text, &sax);
  if (!j.is_object()) throw Error(source + ": not a JSON object");
  const Reader r{j, source};
  LlamaConfig c;
  if (j.contains("model_type") && j["model_type"].is_string()) c.model_type = j["model_type"].get<std::string>();
  if (c.model_type != "llama" && c.model_type != "mistral")
    r.fail("model_type", "is " + shown(json(c.model_type)) + "; Llama-family models (llama, mistral) are supported");
  c.vocab_size = r.size("vocab_size", kMaxVocab - 1);
  c.hidden_size = r.size("hidden_size", kMaxWidth);
  c.intermediate_size = r.size("intermediate_size", kMaxWidth);
  c.num_hidden_layers = r.size("num_hidden_layers", kMaxLayers);
  c.num_attention_heads = r.size("num_attention_heads", kMaxHeads);
  c.num_key_value_heads = r.size("num_key_value_heads", kMaxHeads, c.num_attention_heads);
  c.head_dim = r.size("head_dim", kMaxAttentionHeadDim, c.hidden_size / c.num_attention_heads);
  if (c.head_dim % 2 != 0) r.fail("head_dim", "is " + std::to_string(c.head_dim) + "; rotary embeddings need it even");
  c.max_position_embeddings = r.size("max_position_embeddings", kMaxPositions, 2048);
  if (c.max_position_embeddings * c.head_dim > kMaxRotaryElements)
    r.fail("max_position_embeddings", "is " + std::to_string(c.max_position_embeddings) + ": its rotary tables of " +
                                          std::to_string(c.max_position_embeddings) + " x head_dim " +
                                          std::to_string(c.head_dim) + " exceed the limit of 2^28 values");
  c.rms_norm_eps = r.number(j, "rms_norm_eps", 1e-6);
  c.rope_theta = r.number(j, "rope_theta", 10000.0);
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object())
    c.rope_theta = r.number(j["rope_parameters"], "rope_theta", c.rope_theta);
  for (const char* field : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(field) || !j[field].is_object()) continue;
    const json& rs = j[field];
    const std::string type = r.text(rs, field, "rope_type", r.text(rs, field, "type", "default"));
    if (type != "default")
      r.fail(field, "has rope type " + shown(json(type)) + "; only the default rotary embedding is supported");
  }
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    r.fail("hidden_act", "is " + shown(j["hidden_act"]) + "; only silu is supported");
  c.tie_word_embeddings = r.flag("tie_word_embeddings", false);
  c.attention_bias = r.flag("attention_bias", false);
  c.mlp_bias = r.flag("mlp_bias", false);
  c.sliding_window = r.integer("sliding_window", 0, kMaxVocab - 1, 0);
  c.bos_token_id = r.integer("bos_token_id", -1, kMaxVocab - 1, -1);
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    const json& e = j["eos_token_id"];
    if (e.is_array()) {
      for (size_t i = 0; i < e.size(); ++i)
        c.eos_token_ids.push_back(r.integer_of(e[i], "eos_token_id[" + std::to_string(i) + "]", 0, kMaxVocab - 1));
    } else {
      c.eos_token_ids.push_back(r.integer_of(e, "eos_token_id", 0, kMaxVocab - 1));
    }
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.fail("num_key_value_heads", std::to_string(c.num_key_value_heads) + " does not divide num_attention_heads " +
                                      std::to_string(c.num_attention_heads));
  return c;
}

}  // namespace

LlamaConfig LlamaConfig::parse(const std::string& text, const std::string& source) {
  try {
    return parse_config(text, source);
  } catch (const nlohmann::json::exception& e) {  // a backstop: every read above checks its type first
    throw Error(source + ": " + e.what());
  }
}

LlamaConfig LlamaConfig::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be opened");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

}  // namespace meganeura::models
