// Arbitrary text through two real tokenizers (tests/data/tokenizer: SmolLM2's Digits + ByteLevel
// pre-tokenizer and Llama 3's Split regex, each with a 2,000-token vocabulary and added tokens),
// loaded once: the first byte picks one, the rest is the text and, two bytes each, the ids
// to decode (fuzz/tokenizer_checks.hpp).
#include <array>

#include "input_file.hpp"
#include "tokenizer_checks.hpp"

namespace mn = meganeura;

namespace {

const std::array<mn::Tokenizer, 2>& tokenizers() {
  static const std::array<mn::Tokenizer, 2> loaded = {
      mn::Tokenizer::from_file(MEGANEURA_FUZZ_TOKENIZERS "/smollm2_like.tokenizer.json"),
      mn::Tokenizer::from_file(MEGANEURA_FUZZ_TOKENIZERS "/llama3_like.tokenizer.json")};
  return loaded;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizers();  // a missing fixture fails here, before the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  mn::fuzz::check_tokenizer(tokenizers()[data[0] & 1], text, text, true);
  return 0;
}
