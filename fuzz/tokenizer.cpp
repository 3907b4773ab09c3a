// tokenizer.json and the text it encodes, in one input: the JSON up to the first NUL byte (which
// JSON text cannot hold), the text after it. Tokenizer::from_json loads the JSON; a tokenizer it
// accepts then encodes the text and decodes ids read from it (fuzz/tokenizer_checks.hpp).
#include <optional>

#include "input_file.hpp"
#include "tokenizer_checks.hpp"

namespace mn = meganeura;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  std::optional<mn::Tokenizer> tokenizer;
  if (mn::fuzz::reads([&] { tokenizer.emplace(mn::Tokenizer::from_json(json)); }))
    mn::fuzz::check_tokenizer(*tokenizer, text, text, false);
  return 0;
}
