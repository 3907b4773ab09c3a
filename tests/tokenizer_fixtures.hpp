// The tokenizer test vectors of tests/data/tokenizer/ (made by the Hugging Face `tokenizers`
// library through tools/fixtures/make_tokenizer_fixtures.py): loading them, and small helpers.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "meganeura/tokenizer.hpp"

namespace mntest {

// The fixture folder (set by tests/CMakeLists.txt).
inline std::string tokenizer_data(const std::string& name) {
  return std::string(MEGANEURA_TOKENIZER_DATA) + "/" + name;
}

// The file's text, or "" with `missing` set when it does not exist.
std::string read_text_file(const std::string& path, bool& missing);
// A gzip'd file's text.
std::string read_gzip_file(const std::string& path, bool& missing);

// Everything the fixture script wrote: the strings, and vectors.json.gz parsed.
struct TokenizerVectors {
  std::vector<std::string> strings;
  nlohmann::json vectors;
  std::string missing;  // the first fixture file that is absent, if any
  static const TokenizerVectors& get();
  // One tokenizer's section ("smollm2_like", "llama3_like", "added_flags").
  const nlohmann::json& of(const std::string& name) const { return vectors.at("tokenizers").at(name); }
  // The tokenizer.json text of that tokenizer (added_flags: smollm2_like with its added tokens).
  std::string tokenizer_json(const std::string& name) const;
  meganeura::Tokenizer load(const std::string& name) const;
};

// Skips the test when a fixture file is absent, naming it and how to make it.
#define SKIP_WITHOUT_TOKENIZER_FIXTURES(v)                                                              \
  if (!(v).missing.empty())                                                                             \
  GTEST_SKIP() << "missing tokenizer fixture " << (v).missing                                           \
               << ": run python3 tools/fixtures/make_tokenizer_fixtures.py --out tests/data/tokenizer " \
                  "where the `tokenizers` package is installed"

// A string as a C-style escaped literal, for failure messages.
std::string escaped(const std::string& s);
// Whether s is valid UTF-8 (an independent check, not the library's).
bool valid_utf8(const std::string& s);

}  // namespace mntest
