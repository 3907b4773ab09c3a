// JsonNode: typed access to tokenizer.json with errors naming the file and the JSON path.
#include "tokenizer/json_node.hpp"

#include "meganeura/error.hpp"

namespace meganeura::tokenizer {

namespace {

const char* kind(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "something else";
  }
}

bool is_identifier(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

const nlohmann::json& null_json() {
  static const nlohmann::json null;
  return null;
}

}  // namespace

std::string shown(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    constexpr size_t kMax = 40;
    std::string q = nlohmann::json(s.substr(0, kMax)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return s.size() <= kMax ? q : q + "... (" + std::to_string(s.size()) + " bytes)";
  }
  if (v.is_primitive()) return v.dump();
  return kind(v);
}

std::string path_key(const std::string& parent, const std::string& key) {
  if (is_identifier(key)) return parent.empty() ? key : parent + "." + key;
  return parent + "[" + nlohmann::json(key).dump() + "]";
}

void JsonNode::fail(const std::string& what) const {
  throw Error(file_ + ": " + (path_.empty() ? "the top level" : path_) + " " + what);
}

void JsonNode::unsupported(const std::string& value, const std::string& supported) const {
  fail("\"" + value + "\" is not supported (supported: " + supported + ")");
}

const nlohmann::json& JsonNode::object() const {
  if (!value_.is_object()) fail(std::string("should be an object, not ") + kind(value_));
  return value_;
}

const nlohmann::json& JsonNode::array() const {
  if (!value_.is_array()) fail(std::string("should be an array, not ") + kind(value_));
  return value_;
}

JsonNode JsonNode::at(const char* key) const {
  const nlohmann::json& o = object();
  auto it = o.find(key);
  if (it == o.end()) JsonNode(null_json(), path_key(path_, key), file_).fail("is missing");
  return JsonNode(*it, path_key(path_, key), file_);
}

JsonNode JsonNode::get(const char* key) const {
  const nlohmann::json& o = object();
  auto it = o.find(key);
  return JsonNode(it == o.end() ? null_json() : *it, path_key(path_, key), file_);
}

JsonNode JsonNode::at(size_t index) const {
  const nlohmann::json& a = array();
  std::string p = path_ + "[" + std::to_string(index) + "]";
  if (index >= a.size()) JsonNode(null_json(), p, file_).fail("is missing");
  return JsonNode(a[index], p, file_);
}

size_t JsonNode::size() const { return array().size(); }

std::string JsonNode::string() const {
  if (!value_.is_string()) fail(std::string("should be a string, not ") + kind(value_));
  return value_.get<std::string>();
}

bool JsonNode::boolean() const {
  if (!value_.is_boolean()) fail(std::string("should be true or false, not ") + kind(value_));
  return value_.get<bool>();
}

bool JsonNode::boolean_or(const char* key, bool fallback) const {
  JsonNode v = get(key);
  return v.is_null() ? fallback : v.boolean();
}

int64_t JsonNode::integer() const {
  if (!value_.is_number_integer()) fail(std::string("should be an integer, not ") + kind(value_));
  return value_.get<int64_t>();
}

}  // namespace meganeura::tokenizer
