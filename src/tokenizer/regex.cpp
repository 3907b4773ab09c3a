// PCRE2 behind the Regex of regex.hpp: compilation (JIT where the platform has it), the
// Oniguruma-compatible rewriting of \s and \w, and match iteration.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.hpp"

#include <pcre2.h>

#include "meganeura/error.hpp"
#include "tokenizer/utf8.hpp"

namespace meganeura::tokenizer {

namespace {

// Oniguruma's Unicode classes, as class bodies PCRE2 reads the same way. Its \w also takes the
// Latin-1 superscript digits and fractions (its table for code points below 256 says so).
constexpr std::string_view kSpaceBody = "\\t-\\r\\x{85}\\p{Z}";  // White_Space
constexpr std::string_view kWordBody = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code)
               : std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// One JIT stack and match context per thread: JIT stacks must not be shared by concurrent matches,
// and the 32 KiB default is too small for long runs of one character class.
struct ThreadMatchContext {
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
  ThreadMatchContext() {
    if (!context || !stack) throw Error("tokenizer: out of memory creating a PCRE2 match context");
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchContext() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
  }
};

pcre2_match_context* match_context() {
  thread_local ThreadMatchContext tls;
  return tls.context;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  std::string where;  // for errors
  ~Code() { pcre2_code_free(code); }
};

std::string translate_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 32);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      std::string_view body = e == 's' || e == 'S' ? kSpaceBody : e == 'w' || e == 'W' ? kWordBody : "";
      bool negated = e == 'S' || e == 'W';
      if (!body.empty() && !in_class) {
        out += negated ? "[^" : "[";
        out += body;
        out += ']';
      } else if (!body.empty() && !negated) {
        out += body;
      } else {  // any other escape, or \S \W inside a class (PCRE2's meaning, which differs only at U+180E and in \W)
        out += '\\';
        out += e;
      }
      continue;
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a leading ] is literal
    } else if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      size_t end = p.find(":]", i + 2);  // POSIX class [:alpha:]
      if (end != std::string_view::npos) {
        out.append(p.substr(i + 1, end + 1 - i));
        i = end + 1;
      }
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

namespace {

pcre2_code* compile_source(std::string_view source, uint32_t options, const std::string& where,
                           std::string_view shown) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                    options | PCRE2_UTF | (options & PCRE2_LITERAL ? 0 : PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C), &err,
                    &offset, nullptr);
  // \C (one byte, even inside a character) is refused (a literal has none): a piece cut inside a
  // character would be invalid UTF-8, which the BPE and the matches below (PCRE2_NO_UTF_CHECK)
  // rely on never seeing.
  if (!code)
    throw Error(
        where + " \"" + std::string(shown) + "\" is not a regular expression PCRE2 accepts: " + pcre2_message(err) +
        (err == PCRE2_ERROR_BACKSLASH_C_CALLER_DISABLED ? " (\\C matches one byte and can cut a UTF-8 character)"
                                                        : "") +
        " (at offset " + std::to_string(offset) + " of \"" + std::string(source) + "\")");
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // failure (no JIT on this CPU) leaves the interpreter
  return code;
}

}  // namespace

Regex Regex::compile(std::string_view pattern, const std::string& where) {
  auto code = std::make_shared<Code>();
  code->where = where;
  code->code = compile_source(translate_pattern(pattern), 0, where, pattern);
  return Regex(std::move(code));
}

Regex Regex::literal(std::string_view text, const std::string& where) {
  auto code = std::make_shared<Code>();
  code->where = where;
  code->code = compile_source(text, PCRE2_LITERAL, where, text);  // (PCRE2_LITERAL refuses UCP; nothing to classify)
  return Regex(std::move(code));
}

namespace {

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (!data) throw Error("tokenizer: out of memory creating PCRE2 match data");
  }
  ~MatchData() { pcre2_match_data_free(data); }
};

// Runs one search; false when there is no match. Errors (resource limits) throw.
bool search(const pcre2_code* code, const std::string& where, std::string_view subject, size_t start, uint32_t options,
            pcre2_match_data* md, Span& found) {
  int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), start,
                       options | PCRE2_NO_UTF_CHECK, md, match_context());
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0)
    throw Error(where + ": matching a " + std::to_string(subject.size()) + "-byte text failed: " + pcre2_message(rc));
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  found = {ov[0], ov[1]};
  return true;
}

}  // namespace

std::vector<Span> Regex::find_all(std::string_view subject) const {
  std::vector<Span> out;
  MatchData md(code_->code);
  size_t pos = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (pos <= subject.size()) {
    Span m;
    if (!search(code_->code, code_->where, subject, pos, 0, md.data, m)) break;
    if (m.first == m.second && have_last && last_end == m.second) {
      if (pos == subject.size()) break;
      pos += utf8_length(static_cast<unsigned char>(subject[pos]));
      continue;
    }
    out.push_back(m);
    pos = last_end = m.second;
    have_last = true;
  }
  return out;
}

bool Regex::matches_at_start(std::string_view subject) const {
  MatchData md(code_->code);
  Span m;
  return search(code_->code, code_->where, subject, 0, PCRE2_ANCHORED, md.data, m);
}

}  // namespace meganeura::tokenizer
