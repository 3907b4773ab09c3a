// UTF-8 helpers for the tokenizer: reading code points from text already known to be valid,
// validation with a precise error, and the lossy decoding `tokenizers` applies to decoded bytes.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace meganeura::tokenizer {

// Bytes in the character that starts with `lead` (1 for a byte that starts none).
inline size_t utf8_length(unsigned char lead) { return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// The code point at s[i] (s valid UTF-8); i moves past it. A character cut short by the end of s
// reads only as far as s goes (its value is then meaningless, but nothing past s is read).
char32_t next_code_point(std::string_view s, size_t& i);
// The code point that ends at s[end] (exclusive); end moves back to its first byte.
char32_t previous_code_point(std::string_view s, size_t& end);

void append_utf8(std::string& out, char32_t c);

// Offset of the first byte that is not part of valid UTF-8, or npos.
size_t find_invalid_utf8(std::string_view s);

// Appends `bytes` as text, each maximal invalid subsequence replaced by one U+FFFD (Rust's
// String::from_utf8_lossy, which `tokenizers` uses). With at_end false it stops before a tail that
// is an unfinished but still valid character, for the caller to complete later. Returns the
// number of bytes consumed.
size_t append_lossy_utf8(std::string& out, std::string_view bytes, bool at_end);

// Unicode White_Space: what `\s` means to Oniguruma and to Rust's regex crate.
bool is_white_space(char32_t c);

}  // namespace meganeura::tokenizer
