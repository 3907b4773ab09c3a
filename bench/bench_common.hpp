// What the benchmark programs share: medians of timed runs and their JSON lines.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

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
