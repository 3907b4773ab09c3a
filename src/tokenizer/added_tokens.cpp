// Cutting added tokens out of the text: AddedVocabulary::find_matches of `tokenizers`, with its
// two passes (tokens with normalized=false over the raw text, then tokens with normalized=true over
// the text pieces left between them) and its whitespace and word-boundary flags.
#include "tokenizer/added_tokens.hpp"

#include <algorithm>

#include "tokenizer/utf8.hpp"

namespace meganeura::tokenizer {

void AddedTokens::Trie::add(std::string_view content, int32_t token) {
  int32_t node = 0;
  for (unsigned char b : content) {
    uint64_t key = (static_cast<uint64_t>(node) << 8) | b;
    auto it = edges.find(key);
    if (it == edges.end()) {
      it = edges.emplace(key, static_cast<int32_t>(token_at.size())).first;
      token_at.push_back(-1);
    }
    node = it->second;
  }
  token_at[node] = token;
  first_byte[static_cast<unsigned char>(content[0])] = true;
}

int32_t AddedTokens::Trie::longest_at(std::string_view text, size_t pos, size_t& len) const {
  int32_t node = 0, found = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]));
    if (it == edges.end()) break;
    node = it->second;
    if (token_at[node] >= 0) {
      found = token_at[node];
      len = i + 1 - pos;
    }
  }
  return found;
}

AddedTokens::AddedTokens(std::vector<AddedToken> tokens)
    : tokens_(std::move(tokens)),
      word_char_(
          Regex::compile(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])", "the single_word boundary test")) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    (tokens_[i].normalized ? normalized_ : raw_).add(tokens_[i].content, static_cast<int32_t>(i));
}

namespace {

// Start of the whitespace run that ends at `end` (Rust's `\s*$` on text[..end]).
size_t whitespace_run_start(std::string_view text, size_t end) {
  while (end > 0) {
    size_t before = end;
    if (!is_white_space(previous_code_point(text, before))) break;
    end = before;
  }
  return end;
}

// End of the whitespace run that starts at `start` (Rust's `^\s*` on text[start..]).
size_t whitespace_run_end(std::string_view text, size_t start) {
  while (start < text.size()) {
    size_t after = start;
    if (!is_white_space(next_code_point(text, after))) break;
    start = after;
  }
  return start;
}

}  // namespace

void AddedTokens::split_pass(std::string_view full, Span within, const Trie& trie, std::vector<Segment>& out) const {
  std::string_view text = full.substr(within.first, within.second - within.first);
  const size_t base = within.first;
  auto word_before = [&](size_t pos) {
    size_t start = pos;
    previous_code_point(text, start);
    return word_char_.matches_at_start(text.substr(start, pos - start));
  };
  auto word_after = [&](size_t pos) { return word_char_.matches_at_start(text.substr(pos, utf8_length(text[pos]))); };

  size_t start_offset = 0, pos = 0;
  while (pos < text.size()) {
    // The leftmost match, and the longest of those that start there.
    size_t start = pos, len = 0;
    int32_t index = -1;
    while (start < text.size()) {
      if (trie.first_byte[static_cast<unsigned char>(text[start])] && (index = trie.longest_at(text, start, len)) >= 0)
        break;
      ++start;
    }
    if (index < 0) break;
    size_t stop = start + len;
    pos = stop;  // the next search starts after the match, whatever the flags do with it
    const AddedToken& token = tokens_[index];
    if (token.single_word && ((start > 0 && word_before(start)) || (stop < text.size() && word_after(stop)))) continue;
    if (token.lstrip) start = std::max(whitespace_run_start(text, start), start_offset);
    if (token.rstrip) stop = whitespace_run_end(text, stop);
    if (start_offset < start) out.push_back({{base + start_offset, base + start}, -1});
    out.push_back({{base + start, base + stop}, token.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({{base + start_offset, base + text.size()}, -1});
}

std::vector<Segment> AddedTokens::split(std::string_view text) const {
  std::vector<Segment> raw, out;
  split_pass(text, {0, text.size()}, raw_, raw);
  for (const Segment& s : raw) {
    if (s.id >= 0)
      out.push_back(s);
    else
      split_pass(text, s.span, normalized_, out);
  }
  return out;
}

}  // namespace meganeura::tokenizer
