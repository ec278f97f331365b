// gnuplot processes for the report's plots, started before the simulation so that gnuplot's own
// start (fonts, cairo: about 45 ms each on the dev box) overlaps the run instead of following it,
// and so that several plots render side by side. Each process loads its script from a temporary
// file named on stdin and exits at end of input; its stderr goes to an unnamed temporary file
// read back when it fails.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "messages/result.hpp"

namespace colony::sim {

class gnuplot_pool {
 public:
  // Starts `prestart` gnuplot processes that wait for their scripts. Without gnuplot on PATH the
  // pool is unavailable and starts nothing.
  explicit gnuplot_pool(std::size_t prestart);
  ~gnuplot_pool();
  gnuplot_pool(const gnuplot_pool&) = delete;
  gnuplot_pool& operator=(const gnuplot_pool&) = delete;

  [[nodiscard]] bool available() const { return available_; }

  // Runs each script in its own process (a waiting one first, else a new one), all at once, and
  // waits for every one. A failure is reported at `where` with gnuplot's first message.
  [[nodiscard]] result<void> render(const std::vector<std::string>& scripts,
                                    const std::string& where);
  // render() in two halves, so the caller writes its other files while the plots draw: start()
  // hands every script to its process, wait() waits for them and reports as render() does. A
  // start() is followed by one wait() before the next start() or render().
  void start(const std::vector<std::string>& scripts);
  [[nodiscard]] result<void> wait(const std::string& where);

 private:
  struct process {
    pid_t pid = -1;
    int stdin_fd = -1;
    int stderr_fd = -1;  // unnamed temporary file
    std::string script;  // the temporary file its script is loaded from ("" on stdin)
  };
  [[nodiscard]] result<process> spawn();
  static result<void> finish(process& p, const std::string& where);

  bool available_ = true;
  std::vector<process> idle_;
  std::vector<process> running_;  // between start() and wait()
  std::optional<error> start_error_;
};

}  // namespace colony::sim
