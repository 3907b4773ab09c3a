// The one command-line reader every `meganeura` command uses, so that every flag's value is
// checked the same way and every mistake reads the same: the command, the flag, the value and
// what the flag takes. A mistake is a UsageError, which main() turns into exit code 2.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cli {

// A mistake on the command line (not a failure of the work itself): exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// True for "--help" and "-h": main() answers them before a command parses its arguments.
bool is_help_flag(const std::string& arg);

// The arguments after the command's name, read left to right. A flag's value is the next
// argument, or follows '=' ("--seed=3"); "--prompt=--x" is how a value may start with "--".
class Args {
 public:
  Args(std::string command, std::vector<std::string> args);
  const std::string& command() const { return command_; }

  bool done() const { return pos_ >= args_.size() && !inline_value_; }
  // The next argument; for "--flag=value", "--flag" (the value is kept for the flag's reader).
  std::string next();
  // Whether an argument is spelled as an option ("-x", "--x") rather than a positional one.
  static bool is_option(const std::string& arg);

  // The value of `flag` (the name next() just returned), checked; `expected` says in words
  // what the flag takes, for the error. A switch reads no value: "--train=yes" is a mistake.
  std::string text(const std::string& flag, const std::string& expected);  // not empty
  std::string text_or_empty(const std::string& flag, const std::string& expected);
  int64_t integer(const std::string& flag, int64_t min, int64_t max);
  uint64_t unsigned_integer(const std::string& flag, uint64_t min, uint64_t max);
  double number(const std::string& flag, double min, double max);

  // "meganeura <command>: <message>", as a UsageError.
  UsageError error(const std::string& message) const;
  [[noreturn]] void unknown_option(const std::string& option) const;

 private:
  // The value text after `flag`; a missing one is an error saying what `flag` takes.
  std::string take_value(const std::string& flag, const std::string& expected);
  template <class T>
  T whole_number(const std::string& flag, T min, T max);  // integer() and unsigned_integer()
  UsageError bad_value(const std::string& flag, const std::string& value, const std::string& problem,
                       const std::string& expected) const;

  std::string command_;
  std::vector<std::string> args_;
  size_t pos_ = 0;
  std::string flag_;                         // the argument next() returned last
  std::optional<std::string> inline_value_;  // the "value" of a "--flag=value" just read
};

}  // namespace cli
