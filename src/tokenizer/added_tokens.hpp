// Added tokens (special tokens such as <|im_start|>, and tokens added after training) are cut out
// of the text before pre-tokenization, longest match first, with `tokenizers`' flags:
// single_word, lstrip, rstrip, and normalized (matched in a second pass over what the first left).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/regex.hpp"

namespace meganeura::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id;
  bool special = false;
  bool single_word = false;  // only where no word character touches it
  bool lstrip = false;       // takes the whitespace on its left
  bool rstrip = false;       // ... on its right
  bool normalized = true;    // matched in the second pass (after a normalizer, which we never have)
};

// A piece of the input: an added token's id, or text (id -1) for the pre-tokenizer.
struct Segment {
  Span span;
  int32_t id;
};

class AddedTokens {
 public:
  explicit AddedTokens(std::vector<AddedToken> tokens);
  // The input cut into text and added tokens, in order. Spans may overlap where an rstrip'ed
  // token is followed by a token that starts inside the whitespace it took, as in `tokenizers`.
  std::vector<Segment> split(std::string_view text) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // A byte trie over the contents of one pass's tokens, for leftmost-longest matching.
  struct Trie {
    std::unordered_map<uint64_t, int32_t> edges;  // (node << 8 | byte) -> child node
    std::vector<int32_t> token_at;                // node -> index into tokens_, or -1
    bool first_byte[256] = {};
    Trie() : token_at{-1} {}
    void add(std::string_view content, int32_t token);
    // The longest token starting at `pos`: its index, and its length through `len`; -1 if none.
    int32_t longest_at(std::string_view text, size_t pos, size_t& len) const;
  };
  void split_pass(std::string_view text, Span within, const Trie& trie, std::vector<Segment>& out) const;

  std::vector<AddedToken> tokens_;
  Trie raw_, normalized_;
  Regex word_char_;  // Rust regex's \w, which single_word's boundary test uses
};

}  // namespace meganeura::tokenizer
