// Reading tokenizer.json with errors that name the file and the JSON path of the culprit:
// `tokenizer.json: model.merges[12] names "xy", which is not in model.vocab`.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace meganeura::tokenizer {

class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string path, const std::string& file)
      : value_(value), path_(std::move(path)), file_(file) {}

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }

  bool has(const char* key) const { return value_.is_object() && value_.contains(key); }
  // A member that must be there (and the node must be an object).
  JsonNode at(const char* key) const;
  // A member, or null when absent (`tokenizers` takes absent and null alike for optional fields).
  JsonNode get(const char* key) const;
  JsonNode at(size_t index) const;  // an array element (bounds checked)
  size_t size() const;              // of an array (it must be one)
  bool is_null() const { return value_.is_null(); }

  std::string string() const;
  bool boolean() const;
  bool boolean_or(const char* key, bool fallback) const;  // an optional boolean member
  int64_t integer() const;
  const nlohmann::json& object() const;  // the value, which must be an object
  const nlohmann::json& array() const;   // the value, which must be an array
  // The "type" member of an object, as a string.
  std::string type() const { return at("type").string(); }

  [[noreturn]] void fail(const std::string& what) const;  // "<file>: <path> <what>"
  [[noreturn]] void unsupported(const std::string& value, const std::string& supported) const;

 private:
  const nlohmann::json& value_;
  std::string path_;
  const std::string& file_;
};

// A value as an error message shows it: a number, boolean or null as written, a string quoted and
// cut at 40 bytes, an object or array by its kind only (dump() of a deeply nested value recurses).
std::string shown(const nlohmann::json& v);

// "model.vocab[\"Ġthe\"]": a key shown in a path, quoted unless it is a plain identifier.
std::string path_key(const std::string& parent, const std::string& key);

}  // namespace meganeura::tokenizer
