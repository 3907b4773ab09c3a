// GPT-2's byte-level alphabet: every byte is shown as a printable character (space as 'Ġ',
// newline as 'Ċ', ...) so that BPE runs on text with no whitespace or control bytes, and the
// decoder maps those characters back to bytes.
#pragma once
#include <string>
#include <string_view>

namespace meganeura::tokenizer {

// Appends the byte-level characters of `bytes` (each byte becomes one character, 1 or 2 bytes of UTF-8).
void append_byte_level(std::string& out, std::string_view bytes);

// The bytes a token stands for, as the ByteLevel decoder reads it: when every character of the
// token is in the byte-level alphabet, the bytes they stand for; otherwise (an added token
// containing a space, say) the token's own UTF-8.
std::string byte_level_to_bytes(std::string_view token);

}  // namespace meganeura::tokenizer
