// Reading and checking command-line values (see cli_args.hpp). std::from_chars, not std::stoll
// and friends: it neither throws nor skips spaces nor accepts "12abc", so every bad value can be
// reported for what it is.
#include "cli_args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <type_traits>

namespace cli {

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// from_chars takes no leading '+', which people write.
std::string_view without_plus(std::string_view s) {
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+') s.remove_prefix(1);
  return s;
}

// What is wrong with `s` as a whole number in [min, max]; "" when nothing is (out holds it).
template <class T>
std::string whole_number_problem(std::string_view s, T min, T max, T& out) {
  s = without_plus(s);
  // "-5" for an unsigned value is a number, just not one it can take.
  if constexpr (std::is_unsigned_v<T>)
    if (s.size() > 1 && s[0] == '-' && all_digits(s.substr(1))) return "is out of range";
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (s.empty() || end != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return "is not a whole number";
  if (ec == std::errc::result_out_of_range || out < min || out > max) return "is out of range";
  return "";
}

// The same for a finite real number.
std::string real_number_problem(std::string_view s, double min, double max, double& out) {
  s = without_plus(s);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::general);
  if (s.empty() || end != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return "is not a number";
  if (ec == std::errc() && !std::isfinite(out)) return "is not a finite number";
  if (ec == std::errc::result_out_of_range || out < min || out > max) return "is out of range";
  return "";
}

std::string format_real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

bool is_help_flag(const std::string& arg) { return arg == "--help" || arg == "-h"; }

Args::Args(std::string command, std::vector<std::string> args) : command_(std::move(command)), args_(std::move(args)) {}

bool Args::is_option(const std::string& arg) { return arg.size() > 1 && arg[0] == '-'; }

std::string Args::next() {
  // A "--switch=value" whose switch took no value: the value would otherwise be dropped.
  if (inline_value_) throw error(flag_ + " takes no value (got '" + flag_ + "=" + *inline_value_ + "')");
  std::string arg = args_[pos_++];
  if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
    inline_value_ = arg.substr(eq + 1);
    arg.resize(eq);
  }
  flag_ = arg;
  return arg;
}

UsageError Args::error(const std::string& message) const {
  return UsageError("meganeura " + command_ + ": " + message);
}

void Args::unknown_option(const std::string& option) const { throw error("unknown option '" + option + "'"); }

std::string Args::take_value(const std::string& flag, const std::string& expected) {
  if (inline_value_) {
    std::string v = std::move(*inline_value_);
    inline_value_.reset();
    return v;
  }
  if (pos_ >= args_.size()) throw error(flag + " needs a value (" + expected + ")");
  // "--max-tokens --seed 3": the value was forgotten, "--seed" is not meant as one.
  if (args_[pos_].rfind("--", 0) == 0)
    throw error(flag + " needs a value (" + expected + ") but is followed by '" + args_[pos_] + "'");
  return args_[pos_++];
}

UsageError Args::bad_value(const std::string& flag, const std::string& value, const std::string& problem,
                           const std::string& expected) const {
  return error(flag + ": '" + value + "' " + problem + " (expected " + expected + ")");
}

std::string Args::text(const std::string& flag, const std::string& expected) {
  std::string v = take_value(flag, expected);
  if (v.empty()) throw bad_value(flag, v, "is empty", expected);
  return v;
}

std::string Args::text_or_empty(const std::string& flag, const std::string& expected) {
  return take_value(flag, expected);
}

template <class T>
T Args::whole_number(const std::string& flag, T min, T max) {
  const std::string expected = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  const std::string v = take_value(flag, expected);
  T out = 0;
  if (const std::string problem = whole_number_problem(v, min, max, out); !problem.empty())
    throw bad_value(flag, v, problem, expected);
  return out;
}

int64_t Args::integer(const std::string& flag, int64_t min, int64_t max) { return whole_number(flag, min, max); }

uint64_t Args::unsigned_integer(const std::string& flag, uint64_t min, uint64_t max) {
  return whole_number(flag, min, max);
}

double Args::number(const std::string& flag, double min, double max) {
  const std::string expected = "a number from " + format_real(min) + " to " + format_real(max);
  const std::string v = take_value(flag, expected);
  double out = 0;
  if (const std::string problem = real_number_problem(v, min, max, out); !problem.empty())
    throw bad_value(flag, v, problem, expected);
  return out;
}

}  // namespace cli
