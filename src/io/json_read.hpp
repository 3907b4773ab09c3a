// Reading JSON from untrusted files (safetensors headers, sharded indexes): nesting is capped
// before it can exhaust the stack, every nlohmann exception becomes an Error naming the file and
// the key being read, and values are described in messages without dump() (which recurses and
// can print megabytes).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "meganeura/error.hpp"

namespace meganeura::io {

// A value for an error message: scalars as JSON (-1, "F32", null), strings over 40 bytes,
// arrays and objects by their size ("an array of 3 elements").
inline std::string describe_json(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::boolean:
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return v.dump();  // scalars: no recursion
    case nlohmann::json::value_t::string:
      if (v.get_ref<const std::string&>().size() <= 40) return v.dump();
      return "a string of " + std::to_string(v.get_ref<const std::string&>().size()) + " bytes";
    case nlohmann::json::value_t::array: return "an array of " + std::to_string(v.size()) + " elements";
    case nlohmann::json::value_t::object: return "an object of " + std::to_string(v.size()) + " keys";
    default: return std::string("a JSON ") + v.type_name();
  }
}

// Parses `text` from `path` (what: "the safetensors header"). Deeper nesting than `max_depth`
// is an Error before it is built; a parse error or a number out of range (1e400) is an Error
// naming the key path being read ("at \"t\".\"shape\"").
inline nlohmann::json parse_json(const std::string& path, const std::string& what, std::string_view text,
                                 int max_depth) {
  std::vector<std::string> keys;  // per open container: the key being read ("" for arrays)
  auto where = [&] {
    std::string s;
    for (const std::string& k : keys)
      if (!k.empty()) s += (s.empty() ? "" : ".") + ("\"" + (k.size() > 80 ? k.substr(0, 80) + "..." : k) + "\"");
    return s.empty() ? std::string() : " (at " + s + ")";
  };
  using Event = nlohmann::json::parse_event_t;
  auto cb = [&](int /*depth*/, Event event, nlohmann::json& parsed) {
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (static_cast<int>(keys.size()) >= max_depth)
          throw Error(path + ": " + what + " nests arrays and objects more than " + std::to_string(max_depth) +
                      " levels deep" + where());
        keys.emplace_back();
        break;
      case Event::object_end:
      case Event::array_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Event::key:
        if (!keys.empty() && parsed.is_string()) keys.back() = parsed.get<std::string>();
        break;
      case Event::value: break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), cb);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": " + what + " is not valid JSON" + where() + ": " + e.what());
  }
}

}  // namespace meganeura::io
