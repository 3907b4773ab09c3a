// Loading the tokenizer fixtures (see tokenizer_fixtures.hpp).
#include "tokenizer_fixtures.hpp"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace mntest {

std::string read_text_file(const std::string& path, bool& missing) {
  std::ifstream in(path, std::ios::binary);
  missing = !in;
  if (!in) return "";
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string read_gzip_file(const std::string& path, bool& missing) {
  missing = !std::filesystem::exists(path);
  if (missing) return "";
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  if (n < 0) throw std::runtime_error("corrupt gzip data in " + path);
  return out;
}

const TokenizerVectors& TokenizerVectors::get() {
  static const TokenizerVectors v = [] {
    TokenizerVectors v;
    bool missing = false;
    std::string strings = read_text_file(tokenizer_data("strings.json"), missing);
    if (missing) v.missing = tokenizer_data("strings.json");
    std::string vectors = read_gzip_file(tokenizer_data("vectors.json.gz"), missing);
    if (missing && v.missing.empty()) v.missing = tokenizer_data("vectors.json.gz");
    for (const char* name : {"smollm2_like.tokenizer.json", "llama3_like.tokenizer.json"})
      if (v.missing.empty() && !std::filesystem::exists(tokenizer_data(name))) v.missing = tokenizer_data(name);
    if (!v.missing.empty()) return v;
    v.strings = nlohmann::json::parse(strings).get<std::vector<std::string>>();
    v.vectors = nlohmann::json::parse(vectors);
    return v;
  }();
  return v;
}

std::string TokenizerVectors::tokenizer_json(const std::string& name) const {
  const nlohmann::json& t = of(name);
  bool missing = false;
  std::string text = read_text_file(tokenizer_data(t.at("file").get<std::string>()), missing);
  if (!t.contains("added_tokens")) return text;
  nlohmann::json spec = nlohmann::json::parse(text);
  spec["added_tokens"] = t.at("added_tokens");
  return spec.dump();
}

meganeura::Tokenizer TokenizerVectors::load(const std::string& name) const {
  return meganeura::Tokenizer::from_json(tokenizer_json(name), name + ".tokenizer.json");
}

std::string escaped(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = b(i);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
      if ((b(i + k) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    static const uint32_t min_of_length[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_of_length[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace mntest
