// The pre-tokenizer steps, ported from `tokenizers` (pre_tokenizers/*.rs and NormalizedString::
// split), including its quirks: ByteLevel's add_prefix_space applies to every piece an earlier
// step made, and empty matches take part in the merging behaviours.
#include "tokenizer/pre_tokenizer.hpp"

#include <algorithm>

#include "tokenizer/byte_level.hpp"

namespace meganeura::tokenizer {

namespace {

struct Part {
  Span span;
  bool is_match;
};

// The whole of `text` as alternating gaps and matches, in order (Pattern::find_matches).
std::vector<Part> cover(std::string_view text, const Regex& pattern, bool invert) {
  std::vector<Part> parts;
  if (text.empty()) return {{{0, 0}, invert}};
  size_t prev = 0;
  for (Span m : pattern.find_all(text)) {
    if (prev != m.first) parts.push_back({{prev, m.first}, invert});
    parts.push_back({m, !invert});
    prev = m.second;
  }
  if (prev != text.size()) parts.push_back({{prev, text.size()}, invert});
  return parts;
}

// The spans to keep for one behaviour (NormalizedString::split).
std::vector<Span> apply_behavior(const std::vector<Part>& parts, SplitBehavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const Part& p : parts) out.push_back(p.span);
      break;
    case SplitBehavior::Removed:
      for (const Part& p : parts)
        if (!p.is_match) out.push_back(p.span);
      break;
    case SplitBehavior::Contiguous:
      for (const Part& p : parts) {
        if (p.is_match == previous_match && !out.empty())
          out.back().second = p.span.second;
        else
          out.push_back(p.span);
        previous_match = p.is_match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !out.empty())
          out.back().second = p.span.second;
        else
          out.push_back(p.span);
        previous_match = p.is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty())
          out.back().first = it->span.first;
        else
          out.push_back(it->span);
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  return out;
}

void split_into(std::string_view text, const Regex& pattern, bool invert, SplitBehavior behavior,
                std::vector<std::string>& out) {
  for (Span s : apply_behavior(cover(text, pattern, invert), behavior))
    if (s.second > s.first) out.emplace_back(text.substr(s.first, s.second - s.first));
}

void byte_level_into(std::string_view piece, const ByteLevelStep& step, std::vector<std::string>& out) {
  std::string prefixed;
  if (step.add_prefix_space && piece.front() != ' ') {
    prefixed = " ";
    prefixed += piece;
    piece = prefixed;
  }
  std::vector<std::string> words;
  if (step.use_regex)
    split_into(piece, gpt2_pattern(), false, SplitBehavior::Isolated, words);
  else
    words.emplace_back(piece);
  for (const std::string& w : words) {
    std::string mapped;
    mapped.reserve(w.size() * 2);
    append_byte_level(mapped, w);
    out.push_back(std::move(mapped));
  }
}

}  // namespace

const Regex& gpt2_pattern() {
  static const Regex re = Regex::compile(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "ByteLevel's GPT-2 pattern");
  return re;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.emplace_back(text);
  for (const PreTokenizerStep& step : steps_) {
    std::vector<std::string> next;
    next.reserve(pieces.size());
    for (const std::string& piece : pieces) {
      if (const auto* s = std::get_if<SplitStep>(&step))
        split_into(piece, s->pattern, s->invert, s->behavior, next);
      else if (const auto* d = std::get_if<DigitsStep>(&step))
        split_into(piece, d->pattern, false, SplitBehavior::Isolated, next);
      else
        byte_level_into(piece, std::get<ByteLevelStep>(step), next);
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace meganeura::tokenizer
