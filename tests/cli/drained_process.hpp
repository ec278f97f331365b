// A colony process (tests/cli/process.hpp's child, stdout and stderr together) whose output a
// thread drains into a string, so its pipe never fills while a test waits on something else;
// the test reads the output so far, waits for a line, signals, stops or kills it.
#pragma once

#include <signal.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/process.hpp"

namespace colony::testing {

class drained_process {
 public:
  explicit drained_process(const std::vector<std::string>& args) : proc_(args, true) {
    reader_ = std::thread([this] {
      std::string line;
      while (proc_.read_line(line)) {
        std::lock_guard lk(mu_);
        out_ += line + "\n";
      }
    });
  }
  ~drained_process() {
    if (!exited_) {
      proc_.kill9();
      (void)proc_.wait();
    }
    if (reader_.joinable()) reader_.join();
  }
  drained_process(const drained_process&) = delete;
  drained_process& operator=(const drained_process&) = delete;

  [[nodiscard]] bool started() const { return proc_.started(); }
  void signal(int sig) { ::kill(proc_.pid(), sig); }
  void kill9() { signal(SIGKILL); }

  // The output so far.
  std::string output() {
    std::lock_guard lk(mu_);
    return out_;
  }
  // After exit: the whole output.
  std::string finish() {
    if (reader_.joinable()) reader_.join();
    return output();
  }
  // Waits until the output holds `text` after position `from`; the position after it, or npos.
  std::size_t wait_output(const std::string& text, std::size_t from,
                          std::chrono::milliseconds limit) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit) {
      const auto out = output();
      if (const auto p = out.find(text, from); p != std::string::npos) return p + text.size();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return std::string::npos;
  }
  // The exit code (128 + signal), or -1 when it has not exited within `limit` (then killed).
  int wait_exit(std::chrono::milliseconds limit) {
    auto f = std::async(std::launch::async, [this] { return proc_.wait(); });
    exited_ = true;
    if (f.wait_for(limit) != std::future_status::ready) {
      proc_.kill9();
      (void)f.get();
      return -1;
    }
    const int rc = f.get();
    if (reader_.joinable()) reader_.join();
    return rc;
  }
  // SIGTERM, then wait_exit(limit).
  int stop(std::chrono::milliseconds limit) {
    signal(SIGTERM);
    return wait_exit(limit);
  }

 private:
  child proc_;
  bool exited_ = false;
  std::thread reader_;
  std::mutex mu_;
  std::string out_;
};

}  // namespace colony::testing
