#include "util/progress.hpp"

#include <unistd.h>

#include <algorithm>

namespace meganeura {

namespace {

constexpr int kBarWidth = 20;
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

// 0:03, 12:45, 1:02:03
std::string clock_text(double seconds) {
  auto s = static_cast<int64_t>(std::max(0.0, seconds) + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
                  (long long)(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

// Decimal units as tqdm and huggingface_hub print them: 512 B, 12.3 kB, 269.1 MB, 1.2 GB.
struct ByteScale {
  double divisor;
  const char* name;
};
ByteScale byte_scale(double bytes) {
  if (bytes >= 1e9) return {1e9, "GB"};
  if (bytes >= 1e6) return {1e6, "MB"};
  if (bytes >= 1e3) return {1e3, "kB"};
  return {1, "B"};
}

// "234/468", or "61.2/269.1 MB" in the total's unit.
std::string count_text(ProgressUnit unit, int64_t done, int64_t total) {
  if (unit == ProgressUnit::steps) return std::to_string(done) + "/" + std::to_string(total);
  const ByteScale s = byte_scale(static_cast<double>(total));
  char buf[64];
  std::snprintf(buf, sizeof buf, s.divisor == 1 ? "%.0f/%.0f %s" : "%.1f/%.1f %s",
                static_cast<double>(done) / s.divisor, static_cast<double>(total) / s.divisor, s.name);
  return buf;
}

// "312.4 steps/s", "41.3 MB/s"
std::string rate_text(ProgressUnit unit, double per_second) {
  char buf[64];
  if (unit == ProgressUnit::steps) {
    std::snprintf(buf, sizeof buf, "%.1f steps/s", per_second);
  } else {
    const ByteScale s = byte_scale(per_second);
    std::snprintf(buf, sizeof buf, "%.1f %s/s", per_second / s.divisor, s.name);
  }
  return buf;
}

}  // namespace

Progress::Progress(std::string title, int64_t total, ProgressUnit unit, int64_t initial)
    : Progress(std::move(title), total, stderr, ::isatty(STDERR_FILENO) == 1, unit, initial) {}

Progress::Progress(std::string title, int64_t total, std::FILE* out, bool terminal, ProgressUnit unit, int64_t initial)
    : title_(std::move(title)),
      total_(std::max<int64_t>(total, 0)),
      unit_(unit),
      initial_(std::max<int64_t>(initial, 0)),
      out_(out),
      terminal_(terminal),
      start_(Clock::now()),
      last_draw_(start_) {
  update(initial_);  // the title shows at once, before a slow first step
}

Progress::~Progress() {
  if (terminal_ && drawn_ && !finished_) std::fputc('\n', out_);  // leave the cursor on a fresh line
}

std::string Progress::line(int64_t done, const std::string& extra, bool final) const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(std::max<int64_t>(done - initial_, 0)) / elapsed : 0.0;
  const double frac = total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 1.0;
  std::string s = title_;
  if (terminal_) {
    const int filled = static_cast<int>(frac * kBarWidth);
    s += " [" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "]";
  } else {
    s.append(" ").append(std::to_string(static_cast<int>(frac * 100 + 1e-9))).append("%");
  }
  s.append(" ").append(count_text(unit_, done, total_));
  if (!extra.empty()) s += " " + extra;
  s += " | " + rate_text(unit_, rate);
  if (final)
    s += " | " + clock_text(elapsed);
  else if (rate > 0)
    s += " | ETA " + clock_text(static_cast<double>(total_ - done) / rate);
  return s;
}

void Progress::update(int64_t done, const std::string& extra) {
  if (finished_) return;
  done_ = done;
  if (terminal_) {
    const auto now = Clock::now();
    if (drawn_ && now - last_draw_ < kRedrawEvery) return;
    last_draw_ = now;
    drawn_ = true;
    // \r back to the start of the line, \x1b[K erases what a longer previous line left behind.
    std::fprintf(out_, "\r%s\x1b[K", line(done, extra, false).c_str());
    std::fflush(out_);
    return;
  }
  // Plain mode: one line at each of the 0%, 25%, 50% and 75% marks crossed (100% is finish()'s).
  bool crossed = false;
  for (; next_quarter_ < 4 && done * 4 >= total_ * next_quarter_; ++next_quarter_) crossed = true;
  if (crossed) {
    std::fprintf(out_, "%s\n", line(done, extra, false).c_str());
    std::fflush(out_);
  }
}

void Progress::finish(const std::string& summary) {
  if (finished_) return;
  finished_ = true;
  const std::string text = line(done_, summary, true);
  std::fprintf(out_, terminal_ ? "\r%s\x1b[K\n" : "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace meganeura
