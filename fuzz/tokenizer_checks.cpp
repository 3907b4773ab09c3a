#include "tokenizer_checks.hpp"

#include <vector>

#include "input_file.hpp"
#include "tokenizer/utf8.hpp"

namespace meganeura::fuzz {

namespace {

void check_encode(const Tokenizer& tok, std::string_view text, bool lossless) {
  std::vector<int32_t> ids;
  if (!reads([&] { ids = tok.encode(text, false); })) return;
  // Not `id < vocab_size()`: a vocabulary may leave ids out (vocab_size() counts tokens, as
  // transformers' len(tokenizer) does), so the promise is that every id is a token.
  for (int32_t id : ids)
    if (!tok.id_to_token(id)) fail("encode gave id " + std::to_string(id) + ", which is no token");
  if (lossless && tok.decode(ids) != text) fail("decode(encode(text)) is not the text");
  std::string back;  // any other tokenizer: valid UTF-8, or an Error (no decoder)
  if (!lossless && reads([&] { back = tok.decode(ids); }) && tokenizer::find_invalid_utf8(back) != std::string::npos)
    fail("decode(encode(text)) is not valid UTF-8");
  reads([&] { (void)tok.encode(text, true); });  // the post-processor's special tokens
}

// Two bytes per id, spread a little past both ends of the vocabulary.
std::vector<int32_t> ids_of(const Tokenizer& tok, std::string_view bytes) {
  std::vector<int32_t> ids;
  const int32_t span = static_cast<int32_t>(tok.vocab_size()) + 4;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const int32_t raw = static_cast<unsigned char>(bytes[i]) | static_cast<unsigned char>(bytes[i + 1]) << 8;
    ids.push_back(raw % span - 2);
  }
  return ids;
}

void check_decode(const Tokenizer& tok, std::string_view id_bytes, bool skip_special) {
  const std::vector<int32_t> ids = ids_of(tok, id_bytes);
  std::string text;
  if (!reads([&] { text = tok.decode(ids, skip_special); })) return;
  if (tokenizer::find_invalid_utf8(text) != std::string::npos) fail("decode gave text that is not valid UTF-8");
  DecodeStream stream = tok.decode_stream(skip_special);
  std::string pieces;
  for (int32_t id : ids) pieces += stream.step(id);
  pieces += stream.finish();
  if (pieces != text) fail("a DecodeStream's pieces differ from decode()");
}

}  // namespace

void check_tokenizer(const Tokenizer& tokenizer, std::string_view text, std::string_view id_bytes, bool lossless) {
  check_encode(tokenizer, text, lossless);
  check_decode(tokenizer, id_bytes, false);
  check_decode(tokenizer, id_bytes, true);
}

}  // namespace meganeura::fuzz
