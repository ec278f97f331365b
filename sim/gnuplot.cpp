#include "sim/gnuplot.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

extern char** environ;

namespace colony::sim {

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Writes all of `text` to a pipe whose reader may have died: SIGPIPE is blocked on this thread
// for the write and a pending one consumed, so a dead gnuplot is an error, not a killed Colony.
bool write_all(int fd, const std::string& text) {
  sigset_t pipe_set;
  sigset_t old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool ok = true;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (!ok) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

std::string first_line_of(int fd) {
  std::string text;
  if (::lseek(fd, 0, SEEK_SET) < 0) return text;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  // gnuplot indents its messages and puts an empty line after each.
  const auto b = text.find_first_not_of(" \t\n");
  if (b == std::string::npos) return {};
  const auto e = text.find('\n', b);
  return text.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// gnuplot reads a script on stdin one byte per read(2) (120 KB: 120,000 system calls), but a
// file it loads through stdio's buffer. So a script goes to a temporary file and stdin carries
// only `load` naming it; "" when the file cannot be written or its path cannot be quoted (then
// the script goes on stdin as before).
std::string script_file(const std::string& script) {
  std::error_code ec;
  std::string path = (std::filesystem::temp_directory_path(ec) / "colony-plot-XXXXXX").string();
  if (ec || path.find_first_of("'\n") != std::string::npos) return {};
  const int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return {};
  bool ok = true;
  for (std::size_t done = 0; ok && done < script.size();) {
    const ssize_t n = ::write(fd, script.data() + done, script.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return {};
  }
  return path;
}

}  // namespace

gnuplot_pool::gnuplot_pool(std::size_t prestart) {
  for (std::size_t i = 0; i < prestart && available_; ++i) {
    auto p = spawn();
    if (p) idle_.push_back(*p);
  }
}

gnuplot_pool::~gnuplot_pool() {
  // A waiting gnuplot given no script exits at end of input; a started one when it is done.
  for (auto& p : running_) idle_.push_back(p);
  for (auto& p : idle_) {
    close_fd(p.stdin_fd);
    int status = 0;
    while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
    }
    close_fd(p.stderr_fd);
    if (!p.script.empty()) ::unlink(p.script.c_str());
  }
}

result<gnuplot_pool::process> gnuplot_pool::spawn() {
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return fail(errc::unavailable, std::strerror(errno), "pipe");
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / "colony-gnuplot-XXXXXX").string();
  const int err = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (err < 0) {
    ::close(in[0]);
    ::close(in[1]);
    return fail(errc::unavailable, std::strerror(errno), tmpl);
  }
  ::unlink(tmpl.c_str());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err, 2);
  char arg0[] = "gnuplot";
  char* argv[] = {arg0, nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, "gnuplot", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(err);
    available_ = false;
    return fail(errc::not_found, std::strerror(rc), "gnuplot");
  }
  return process{pid, in[1], err};
}

result<void> gnuplot_pool::finish(process& p, const std::string& where) {
  close_fd(p.stdin_fd);
  int status = 0;
  while (::waitpid(p.pid, &status, 0) < 0) {
    if (errno != EINTR) {
      close_fd(p.stderr_fd);
      return fail(errc::internal, std::strerror(errno), where);
    }
  }
  if (!p.script.empty()) ::unlink(p.script.c_str());
  p.script.clear();
  result<void> r;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // Exit status 127: the shell-less spawn found gnuplot but could not run it.
    std::string msg = first_line_of(p.stderr_fd);
    if (msg.empty())
      msg = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                              : "killed by signal " + std::to_string(WTERMSIG(status));
    r = fail(errc::internal, "gnuplot failed: " + msg, where);
  }
  close_fd(p.stderr_fd);
  return r;
}

result<void> gnuplot_pool::render(const std::vector<std::string>& scripts,
                                  const std::string& where) {
  start(scripts);
  return wait(where);
}

void gnuplot_pool::start(const std::vector<std::string>& scripts) {
  start_error_.reset();
  if (!available_) return;
  for (const auto& s : scripts) {
    process p;
    if (!idle_.empty()) {
      p = idle_.back();
      idle_.pop_back();
    } else {
      auto q = spawn();
      if (!q) {
        start_error_ = q.error();
        break;
      }
      p = *q;
    }
    p.script = script_file(s);
    running_.push_back(p);
    // A gnuplot that died before reading says why in finish().
    write_all(p.stdin_fd, p.script.empty() ? s : "load '" + p.script + "'\n");
    close_fd(running_.back().stdin_fd);
  }
}

result<void> gnuplot_pool::wait(const std::string& where) {
  if (!available_ && running_.empty()) return fail(errc::not_found, "gnuplot not found", where);
  result<void> r;
  if (start_error_) r = tl::unexpected(*start_error_);
  for (auto& p : running_)
    if (auto f = finish(p, where); !f && r) r = f;
  running_.clear();
  start_error_.reset();
  return r;
}

}  // namespace colony::sim
