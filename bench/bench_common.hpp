// What the benchmark programs share: medians of timed runs, GPU time by dispatch kind, option
// lists and JSON lines.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "meganeura/session.hpp"

namespace bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs f `warmup` times, then `runs` times; returns the wall-clock ms of each timed run.
inline std::vector<double> wall_ms(int warmup, int runs, const std::function<void()>& f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(seconds_since(t0) * 1e3);
  }
  return ms;
}

// Runs f `warmup` times, then `runs` times; returns the GPU ms of each timed run: the sum of the
// dispatch times `profile` gives after it.
using Profile = std::vector<std::pair<std::string, double>>;
inline std::vector<double> gpu_ms(int warmup, int runs, const std::function<void()>& f,
                                  const std::function<Profile()>& profile) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    f();
    double ns = 0;
    for (const auto& [label, t] : profile()) ns += t;
    ms.push_back(ns / 1e6);
  }
  return ms;
}
// The same for a profiled session's steps.
inline std::vector<double> gpu_ms(int warmup, int runs, const meganeura::Session& s, const std::function<void()>& f) {
  return gpu_ms(warmup, runs, f, [&] { return s.profile(); });
}

// Where a step's GPU time goes: dispatches grouped by their label's first word (the op or kernel,
// "matmul", "attention", "fused"), the `top` largest groups, on stderr.
inline void print_breakdown(const std::vector<std::pair<std::string, double>>& profile, int top) {
  std::map<std::string, std::pair<int, double>> by_kind;
  double total = 0;
  for (const auto& [label, ns] : profile) {
    auto& [count, sum] = by_kind[label.substr(0, label.find(' '))];
    ++count;
    sum += ns;
    total += ns;
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by_kind.begin(), by_kind.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::fprintf(stderr, "  %-28s %6s %10s %6s\n", "dispatch kind", "count", "GPU ms", "share");
  for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(top); ++i)
    std::fprintf(stderr, "  %-28s %6d %10.3f %5.1f%%\n", rows[i].first.c_str(), rows[i].second.first,
                 rows[i].second.second / 1e6, 100 * rows[i].second.second / total);
}

// The comma-separated items of an option's value ("inference,train"), empty ones dropped.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Stats {
  double median = NAN, min = NAN;
};
inline Stats stats(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front()};
}

// One JSON object, its fields in insertion order; NaN and infinities print as null.
class Json {
 public:
  Json& num(const std::string& key, double v) { return raw(key, number(v)); }
  Json& str(const std::string& key, const std::string& v) { return raw(key, quote(v)); }
  Json& flag(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  Json& nums(const std::string& key, const std::vector<float>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s.append(i ? "," : "").append(number(v[i]));
    return raw(key, s + "]");
  }
  Json& times(const std::string& key, const Stats& s) {  // key_ms (median) and key_min_ms
    return num(key + "_ms", s.median).num(key + "_min_ms", s.min);
  }
  std::string text() const { return "{" + body_ + "}"; }

 private:
  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", v);
    return buf;
  }
  static std::string quote(const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q += '\\';
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
      q += c;
    }
    return q + "\"";
  }
  Json& raw(const std::string& key, const std::string& value) {
    body_.append(body_.empty() ? "" : ",").append(quote(key)).append(":").append(value);
    return *this;
  }
  std::string body_;
};

}  // namespace bench
