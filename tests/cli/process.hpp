// Runs the real colony binary as a child process: spawn, read its stdout line by line,
// SIGKILL it, wait. POSIX only.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace colony::testing {

inline std::string colony_binary() {
  const char* p = std::getenv("COLONY_BINARY");
  return p ? p : "colony";
}

class child {
 public:
  explicit child(const std::vector<std::string>& args, bool capture_stderr = false) {
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (capture_stderr) posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    fd_ = out[0];
  }
  ~child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (fd_ >= 0) close(fd_);
  }
  child(const child&) = delete;
  child& operator=(const child&) = delete;

  [[nodiscard]] bool started() const { return pid_ > 0; }
  [[nodiscard]] pid_t pid() const { return pid_; }

  // Next line of output without the newline; false at end of stream.
  bool read_line(std::string& line) {
    line.clear();
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      char tmp[4096];
      ssize_t n = ::read(fd_, tmp, sizeof(tmp));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (buf_.empty()) return false;
        line = std::move(buf_);
        buf_.clear();
        return true;
      }
      buf_.append(tmp, static_cast<std::size_t>(n));
    }
  }

  std::string read_all() {
    std::string all, line;
    while (read_line(line)) all += line + "\n";
    return all;
  }

  void kill9() { ::kill(pid_, SIGKILL); }

  // Exit code, or 128+signal.
  int wait() {
    if (reaped_) return status_;
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  int status_ = -1;
  std::string buf_;
};

// Runs colony with args to completion; returns (exit code, stdout+stderr).
inline std::pair<int, std::string> run_colony(std::vector<std::string> args) {
  args.insert(args.begin(), colony_binary());
  child c(args, true);
  if (!c.started()) return {-1, "could not start " + args[0] + " (set COLONY_BINARY)"};
  auto out = c.read_all();
  return {c.wait(), out};
}

// Runs colony-koordlet (built beside colony: the directory of COLONY_BINARY) to completion.
inline std::pair<int, std::string> run_colony_koordlet(std::vector<std::string> args) {
  const auto colony = colony_binary();
  const auto slash = colony.rfind('/');
  args.insert(args.begin(),
              (slash == std::string::npos ? std::string() : colony.substr(0, slash + 1)) +
                  "colony-koordlet");
  child c(args, true);
  if (!c.started()) return {-1, "could not start " + args[0]};
  auto out = c.read_all();
  return {c.wait(), out};
}

}  // namespace colony::testing
