// Pre-tokenization: cutting text into the pieces ("words") that BPE encodes one by one, with
// the semantics of `tokenizers`' Split, Digits, ByteLevel and Sequence pre-tokenizers.
#pragma once
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokenizer/regex.hpp"

namespace meganeura::tokenizer {

// What Split does with the matches (SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct SplitStep {
  Regex pattern;
  SplitBehavior behavior;
  bool invert;  // the pieces between matches are the delimiters
};
// Digits: numbers apart from the rest, each digit alone or runs together.
struct DigitsStep {
  Regex pattern;  // \p{N} or \p{N}+, isolated
};
// ByteLevel: optional leading space, the GPT-2 regex split, then the byte-level alphabet.
struct ByteLevelStep {
  bool add_prefix_space;
  bool use_regex;
};
using PreTokenizerStep = std::variant<SplitStep, DigitsStep, ByteLevelStep>;

// A Sequence flattened into the order its steps run in (a single pre-tokenizer is a sequence of one).
class PreTokenizer {
 public:
  explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}
  // The pieces of `text` (valid UTF-8); empty pieces are dropped, as `tokenizers` drops them.
  std::vector<std::string> split(std::string_view text) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

// GPT-2's pattern, which ByteLevel uses when use_regex is true.
const Regex& gpt2_pattern();

}  // namespace meganeura::tokenizer
