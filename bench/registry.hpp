// colony bench: a registry of named benchmarks, each printing figures as JSON lines
// ({"name": ..., "value": ..., "unit": ...}). Benchmarks live under bench/<module>/ in an
// OBJECT library made by colony_benchmark() (bench/CMakeLists.txt) and register themselves
// with COLONY_BENCH; the `colony` binary links them all, so `colony bench NAME...` runs them.
//
// Thread-safety: registration happens during static initialisation; running is single-threaded.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace colony::bench {

struct figure {
  std::string name;
  double value = 0;
  std::string unit;
};

// What a benchmark gets: where to put figures, and whether to run a quick (CI-sized) variant.
class context {
 public:
  explicit context(bool quick) : quick_(quick) {}
  [[nodiscard]] bool quick() const { return quick_; }
  void report(std::string name, double value, std::string unit) {
    figures_.push_back({std::move(name), value, std::move(unit)});
  }
  [[nodiscard]] const std::vector<figure>& figures() const { return figures_; }

 private:
  bool quick_;
  std::vector<figure> figures_;
};

struct entry {
  std::string name;         // e.g. "log.append"
  std::string description;  // one line for `colony bench --list`
  std::function<void(context&)> run;
};

std::vector<entry>& registry();

struct registrar {
  registrar(std::string name, std::string description, std::function<void(context&)> fn) {
    registry().push_back({std::move(name), std::move(description), std::move(fn)});
  }
};

// Wall-clock seconds of one call of fn (benchmarks are the one place wall time is read).
template <class F>
double seconds_of(F&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The process's resident set now (/proc/self/statm), in bytes and in MiB.
[[nodiscard]] std::int64_t rss_bytes();
[[nodiscard]] inline double rss_mib() {
  return static_cast<double>(rss_bytes()) / (1024.0 * 1024.0);
}

// A "NAME:  N kB" field of /proc/self/status (RssAnon, RssFile, VmHWM, ...), in KiB; -1 if
// absent.
[[nodiscard]] std::int64_t status_kib(std::string_view field);

// Bytes of the regular files under a directory (a store's size on disk); 0 where unreadable.
[[nodiscard]] std::uintmax_t dir_bytes(const std::string& dir);

// Keeps the optimiser from deleting a computed value.
template <class T>
inline void do_not_optimize(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}

}  // namespace colony::bench

#define COLONY_BENCH_CAT2(a, b) a##b
#define COLONY_BENCH_CAT(a, b) COLONY_BENCH_CAT2(a, b)
// COLONY_BENCH("log.append", "embedded log append throughput") { ctx.report(...); }
#define COLONY_BENCH(NAME, DESC)                                                            \
  static void COLONY_BENCH_CAT(colony_bench_fn_, __LINE__)(::colony::bench::context & ctx); \
  static ::colony::bench::registrar COLONY_BENCH_CAT(colony_bench_reg_, __LINE__){          \
      NAME, DESC, &COLONY_BENCH_CAT(colony_bench_fn_, __LINE__)};                           \
  static void COLONY_BENCH_CAT(colony_bench_fn_, __LINE__)(::colony::bench::context & ctx)
