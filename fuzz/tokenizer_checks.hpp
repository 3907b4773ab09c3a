// What both tokenizer targets check on a loaded tokenizer: encode and decode keep their
// documented promises on any text and any ids.
#pragma once
#include <cstdint>
#include <string_view>

#include "meganeura/tokenizer.hpp"

namespace meganeura::fuzz {

// `text` (any bytes): encode gives ids of tokens (or an Error for invalid UTF-8), and
// with `lossless` (a byte-level BPE without a normalizer, stripping or a prefix space, as the
// real ones) decode of encode without special tokens is the text again.
// `id_bytes` read as ids (some outside the vocabulary): decode's text is valid UTF-8 (or an
// Error naming the bad id), and a DecodeStream's pieces join into the same text.
void check_tokenizer(const Tokenizer& tokenizer, std::string_view text, std::string_view id_bytes, bool lossless);

}  // namespace meganeura::fuzz
