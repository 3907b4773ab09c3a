// Child processes through posix_spawn (safe in a test process that may hold threads, unlike
// fork + setenv), stdout and stderr through pipes drained with poll, a deadline per child.
#include "cli_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace mntest {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kKeepBytes = 64 * 1024;

struct Running {
  size_t index;
  pid_t pid;
  int fds[2];  // read ends of stdout and stderr; -1 once at end of file
  Clock::time_point deadline;
};

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

Running start(size_t index, const std::vector<std::string>& args, const ChildOptions& o) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!o.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, o.cwd.c_str());
  std::vector<std::string> argv_strings{o.program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env = o.env;
  std::vector<char*> argv = c_strings(argv_strings), envp = c_strings(env);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, o.program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error("posix_spawn " + o.program + ": " + std::strerror(rc));
  return {index, pid, {out_pipe[0], err_pipe[0]}, Clock::now() + o.per_child};
}

void drain(int& fd, std::string& into) {
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    const size_t room = kKeepBytes - std::min(kKeepBytes, into.size());
    into.append(buf, std::min(static_cast<size_t>(n), room));
  } else if (n == 0 || errno != EINTR) {
    ::close(fd);
    fd = -1;
  }
}

// Reads whatever the running children wrote, waiting at most 20 ms.
void read_some(std::vector<Running>& running, std::vector<ChildResult>& results) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Running*, int>> owner;
  for (Running& r : running)
    for (int k = 0; k < 2; ++k)
      if (r.fds[k] >= 0) {
        fds.push_back({r.fds[k], POLLIN, 0});
        owner.emplace_back(&r, k);
      }
  if (fds.empty() || ::poll(fds.data(), fds.size(), 20) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i)
    if (fds[i].revents) {
      auto [r, k] = owner[i];
      ChildResult& res = results[r->index];
      drain(r->fds[k], k == 0 ? res.out : res.err);
    }
}

// True once the child has ended (killed first if past its deadline) and its status is recorded.
bool reap(Running& r, ChildResult& res) {
  if (Clock::now() > r.deadline && !res.timed_out) {
    res.timed_out = true;
    ::kill(r.pid, SIGKILL);
  }
  int status = 0;
  const pid_t done = ::waitpid(r.pid, &status, r.fds[0] < 0 && r.fds[1] < 0 ? 0 : WNOHANG);
  if (done != r.pid) return false;
  for (int k = 0; k < 2; ++k)  // what is left in the pipes: the writer has exited
    while (r.fds[k] >= 0) drain(r.fds[k], k == 0 ? res.out : res.err);
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.signal = WTERMSIG(status);
  return true;
}

}  // namespace

std::string ChildResult::describe() const {
  std::string s = program.substr(program.rfind('/') + 1);  // the file name alone
  for (const std::string& a : args) s += " '" + a.substr(0, 80) + (a.size() > 80 ? "...'" : "'");
  if (!started) return s + ": not run";
  s += timed_out ? ": timed out"
       : signal  ? ": killed by signal " + std::to_string(signal)
                 : ": exit " + std::to_string(exit_code);
  return s + "\nstderr: " + err.substr(0, 2000);
}

std::vector<ChildResult> run_children(const std::vector<std::vector<std::string>>& lines, const ChildOptions& o) {
  std::vector<ChildResult> results(lines.size());
  std::vector<Running> running;
  const auto stop_starting = Clock::now() + o.budget;
  size_t next = 0;
  while (next < lines.size() || !running.empty()) {
    const bool in_budget = o.budget.count() == 0 || Clock::now() < stop_starting;
    while (in_budget && next < lines.size() && static_cast<int>(running.size()) < o.parallel) {
      results[next].args = lines[next];
      results[next].started = true;
      running.push_back(start(next, lines[next], o));
      ++next;
    }
    if (!in_budget) next = lines.size();
    read_some(running, results);
    std::erase_if(running, [&](Running& r) { return reap(r, results[r.index]); });
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    results[i].program = o.program;
    results[i].args = lines[i];
  }
  return results;
}

std::vector<std::string> environment_without(const std::vector<std::string>& names,
                                             const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    const std::string name = var.substr(0, var.find('='));
    if (std::find(names.begin(), names.end(), name) == names.end()) env.push_back(var);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace mntest
