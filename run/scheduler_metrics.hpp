// scheduler_metrics: the framework_recorder of `colony run`'s scheduler
// (actors/scheduler/framework.hpp), kept as kube-scheduler's
// scheduler_framework_extension_point_duration_seconds{extension_point,status,profile} and
// scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}
// (pkg/scheduler/metrics/metrics.go, with its buckets).
//
// Sampling: plugin calls are timed in sample_percent of the cycles, spread evenly (cycle c is
// sampled when floor(c * pct / 100) moves), where kube draws rand.Intn(100) < 10 per cycle
// (pluginMetricsSamplePercent, pkg/scheduler/schedule_one.go). Extension points are timed every
// cycle. The times are wall time on this host; no component reads them.
//
// Thread-safety: plugin() and extension_point() may run on any threads at once (cells are
// created once with a compare-and-swap, histograms are lock-free); families() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/scheduler/framework.hpp"
#include "run/metrics.hpp"

namespace colony::run {

class scheduler_metrics final : public scheduler::framework_recorder {
 public:
  // profile: the profile label (kube-scheduler's schedulerName). sample_percent: 0..100.
  explicit scheduler_metrics(std::string profile = "koord-scheduler", unsigned sample_percent = 10);
  ~scheduler_metrics() override;
  scheduler_metrics(const scheduler_metrics&) = delete;
  scheduler_metrics& operator=(const scheduler_metrics&) = delete;

  [[nodiscard]] std::int64_t now_ns() noexcept override;
  [[nodiscard]] bool sample_cycle() noexcept override;
  void extension_point(std::uint32_t ep, scheduler::status_code code,
                       std::int64_t ns) noexcept override;
  void plugin(std::size_t index, std::string_view name, std::uint32_t ep,
              scheduler::status_code code, std::int64_t ns) noexcept override;

  // The two families; a family with no observation yet is present and empty.
  [[nodiscard]] std::vector<metric_family> families() const;

  // Nothing is counted until set_live(true): colony run turns it on after the replay of its
  // log, whose cycles re-decide history (kube-scheduler's metrics also start at 0).
  void set_live(bool on) noexcept { live_ = on; }

  [[nodiscard]] std::uint64_t cycles() const noexcept { return cycles_.load(); }
  [[nodiscard]] std::uint64_t sampled_cycles() const noexcept { return sampled_.load(); }

  // Plugins beyond this index are not timed (kube's profiles have about 20).
  static constexpr std::size_t max_plugins = 32;
  static constexpr std::size_t points = 8;  // extension_point bits 0..7
  static constexpr std::size_t codes = 6;   // status_code values

 private:
  struct cell {
    std::string plugin;  // "" for an extension point's cell
    std::uint32_t ep = 0;
    scheduler::status_code code{};
    histogram seconds;
  };
  static void observe(std::atomic<cell*>& slot, std::string_view plugin, std::uint32_t ep,
                      scheduler::status_code code, const std::vector<double>& bounds,
                      std::int64_t ns) noexcept;

  std::string profile_;
  unsigned pct_;
  std::atomic<bool> live_{true};
  std::atomic<std::uint64_t> cycles_{0}, sampled_{0};
  std::vector<double> point_bounds_, plugin_bounds_;
  std::array<std::atomic<cell*>, points * codes> point_cells_{};
  std::array<std::atomic<cell*>, max_plugins * points * codes> plugin_cells_{};
};

}  // namespace colony::run
