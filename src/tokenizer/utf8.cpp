// UTF-8 decoding, validation and the lossy decoder (see utf8.hpp).
#include "tokenizer/utf8.hpp"

#include <algorithm>

namespace meganeura::tokenizer {

char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char lead = b(i);
  // Text here is meant to be valid, but a character cut short (a piece ending inside one) must
  // not be read past: it ends with the string.
  const size_t len = utf8_length(lead), n = std::min(len, s.size() - i);
  char32_t c = len == 1 ? lead : len == 2 ? lead & 0x1F : len == 3 ? lead & 0x0F : lead & 0x07;
  for (size_t k = 1; k < n; ++k) c = (c << 6) | (b(i + k) & 0x3F);
  i += n;
  return c;
}

char32_t previous_code_point(std::string_view s, size_t& end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t i = start;
  char32_t c = next_code_point(s, i);
  end = start;
  return c;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

namespace {

// Length of the valid prefix of the character starting at s[i] (the Unicode "maximal subpart"):
// equal to `expected` for a whole character, less when it is cut short or broken.
struct CharCheck {
  size_t valid;     // bytes that can belong to one character
  size_t expected;  // bytes the lead byte announces (0: not a lead byte)
};

CharCheck check_char(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char lead = b(i);
  if (lead < 0x80) return {1, 1};
  size_t expected = lead >= 0xC2 && lead <= 0xDF   ? 2
                    : lead >= 0xE0 && lead <= 0xEF ? 3
                    : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                   : 0;
  if (expected == 0) return {0, 0};
  // The second byte's range depends on the lead (no overlongs, surrogates or values past U+10FFFF).
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead == 0xE0) lo = 0xA0;
  if (lead == 0xED) hi = 0x9F;
  if (lead == 0xF0) lo = 0x90;
  if (lead == 0xF4) hi = 0x8F;
  size_t valid = 1;
  for (size_t k = 1; k < expected && i + k < s.size(); ++k) {
    unsigned char c = b(i + k);
    bool ok = k == 1 ? c >= lo && c <= hi : (c & 0xC0) == 0x80;
    if (!ok) break;
    ++valid;
  }
  return {valid, expected};
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    CharCheck c = check_char(s, i);
    if (c.expected == 0 || c.valid < c.expected) return i;
    i += c.valid;
  }
  return std::string_view::npos;
}

size_t append_lossy_utf8(std::string& out, std::string_view bytes, bool at_end) {
  size_t i = 0;
  while (i < bytes.size()) {
    CharCheck c = check_char(bytes, i);
    if (c.expected != 0 && c.valid == c.expected) {
      out.append(bytes.substr(i, c.valid));
      i += c.valid;
      continue;
    }
    bool cut_short = c.expected != 0 && i + c.valid == bytes.size();
    if (cut_short && !at_end) break;  // the next bytes may complete it
    out += "\xEF\xBF\xBD";            // U+FFFD for the maximal subpart (at least one byte)
    i += c.valid == 0 ? 1 : c.valid;
  }
  return i;
}

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace meganeura::tokenizer
