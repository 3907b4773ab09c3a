// The byte <-> character tables of GPT-2's encoder.py (bytes_to_unicode), built once.
#include "tokenizer/byte_level.hpp"

#include <array>

#include "tokenizer/utf8.hpp"

namespace meganeura::tokenizer {

namespace {

struct Tables {
  std::array<std::string, 256> char_of_byte;  // UTF-8 of the character standing for each byte
  std::array<int, 512> byte_of_char;          // code point (all < 512) -> byte, or -1
  Tables() {
    byte_of_char.fill(-1);
    // Printable bytes stand for themselves; the others take 256, 257, ... in byte order.
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t c = printable ? static_cast<char32_t>(b) : next++;
      append_utf8(char_of_byte[b], c);
      byte_of_char[c] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

void append_byte_level(std::string& out, std::string_view bytes) {
  const Tables& t = tables();
  for (unsigned char b : bytes) out += t.char_of_byte[b];
}

std::string byte_level_to_bytes(std::string_view token) {
  const Tables& t = tables();
  std::string out;
  for (size_t i = 0; i < token.size();) {
    char32_t c = next_code_point(token, i);
    if (c >= t.byte_of_char.size() || t.byte_of_char[c] < 0) return std::string(token);
    out += static_cast<char>(t.byte_of_char[c]);
  }
  return out;
}

}  // namespace meganeura::tokenizer
