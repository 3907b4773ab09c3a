// Regular expressions for the pre-tokenizers, on PCRE2 (UTF + Unicode properties, JIT-compiled):
// the patterns in tokenizer.json use \p{L}, \p{N} and lookahead, which std::regex lacks.
// `tokenizers` runs them on Oniguruma; the few escapes whose Unicode meaning differs between the
// two engines are rewritten so that PCRE2 matches what Oniguruma does (see translate_pattern).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace meganeura::tokenizer {

using Span = std::pair<size_t, size_t>;  // [begin, end) in bytes

class Regex {
 public:
  // `where` names the pattern in errors ("tokenizer.json: pre_tokenizer.pattern.Regex").
  static Regex compile(std::string_view pattern, const std::string& where);
  // A pattern matching `text` literally (Split's {"String": ...} form).
  static Regex literal(std::string_view text, const std::string& where);

  // The non-overlapping matches in order, as Oniguruma's find_iter in `tokenizers` yields them:
  // an empty match right where the previous match ended is skipped. `subject` must be valid UTF-8.
  std::vector<Span> find_all(std::string_view subject) const;
  // Whether the pattern matches at the very start of subject.
  bool matches_at_start(std::string_view subject) const;

 private:
  struct Code;
  explicit Regex(std::shared_ptr<const Code> code) : code_(std::move(code)) {}
  std::shared_ptr<const Code> code_;
};

// The PCRE2 source for an Oniguruma pattern: \s, \S, \w, \W outside character classes and \s,
// \w inside them become explicit classes. PCRE2's \s adds U+180E to White_Space, and its \w is
// \p{L}\p{N}_, where Oniguruma's is Alphabetic, marks, decimal digits and connectors.
std::string translate_pattern(std::string_view pattern);

}  // namespace meganeura::tokenizer
