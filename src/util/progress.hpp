// A progress line for long loops (training epochs, evaluation) and downloads. On a terminal it
// redraws one line in place, at most ~10 times a second:
//   epoch 2/5 [#########.........] 234/468 loss 0.4213 | 312.4 steps/s | ETA 0:03
//   model.safetensors [####..............] 61.2/269.1 MB | 41.3 MB/s | ETA 0:05
// Elsewhere (CI logs, files) it prints a plain line at 0%, 25%, 50%, 75% and at the end, so
// logs stay short. The rate is over the whole run so far; the ETA follows from it.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace meganeura {

// What the counts are: steps ("234/468", "steps/s") or bytes ("61.2/269.1 MB", "MB/s").
enum class ProgressUnit { steps, bytes };

class Progress {
 public:
  // To stderr; a terminal if isatty(stderr). `initial`: work done before this run (a resumed
  // download), counted in the line but not in the rate.
  Progress(std::string title, int64_t total, ProgressUnit unit = ProgressUnit::steps, int64_t initial = 0);
  Progress(std::string title, int64_t total, std::FILE* out, bool terminal, ProgressUnit unit = ProgressUnit::steps,
           int64_t initial = 0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(int64_t done, const std::string& extra = "");  // extra: "loss 0.4213"
  void finish(const std::string& summary = "");              // final line, then a newline

 private:
  using Clock = std::chrono::steady_clock;
  std::string line(int64_t done, const std::string& extra, bool final) const;

  std::string title_;
  int64_t total_;
  ProgressUnit unit_;
  int64_t initial_;
  std::FILE* out_;
  bool terminal_;
  Clock::time_point start_, last_draw_;
  bool drawn_ = false, finished_ = false;
  int next_quarter_ = 0;  // plain mode: the next 25% mark to print (0..3; 4: all printed)
  int64_t done_ = 0;
};

}  // namespace meganeura
