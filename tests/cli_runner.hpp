// Runs a program as child processes, many at once, capturing each one's exit status and output:
// the CLI test feeds the built `meganeura` thousands of command lines and needs to see a crash
// (death by a signal) or a hang as such, not as a failed assertion inside the test process.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace mntest {

struct ChildResult {
  std::string program;            // the path run
  std::vector<std::string> args;  // argv[1..]
  int exit_code = -1;             // -1 when it did not exit normally
  int signal = 0;                 // the signal that ended it, 0 if none
  bool timed_out = false;         // killed for running past the limit
  bool started = false;           // false when the time budget ran out before its turn
  std::string out, err;           // stdout and stderr (the first 64 KiB of each)
  std::string describe() const;   // "meganeura 'a' 'b': exit 2" and stderr, for failure messages
};

struct ChildOptions {
  std::string program;
  std::vector<std::string> env;  // the whole environment, "NAME=value"
  std::string cwd;               // working directory ("" = the test's)
  int parallel = 4;
  std::chrono::milliseconds per_child{30'000};
  // Lines not started by then are left with started == false (0 = no budget).
  std::chrono::milliseconds budget{0};
};

// Runs `program` once per argument list; results in the same order.
std::vector<ChildResult> run_children(const std::vector<std::vector<std::string>>& lines, const ChildOptions& options);

// The test's own environment without the variables named, plus `extra` ("NAME=value").
std::vector<std::string> environment_without(const std::vector<std::string>& names,
                                             const std::vector<std::string>& extra);

}  // namespace mntest
