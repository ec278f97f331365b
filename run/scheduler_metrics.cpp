#include "run/scheduler_metrics.hpp"

#include <algorithm>
#include <bit>
#include <chrono>

namespace colony::run {

namespace {

std::size_t point_index(std::uint32_t ep) noexcept {
  return ep == 0 ? scheduler_metrics::points : static_cast<std::size_t>(std::countr_zero(ep));
}

}  // namespace

// kube-scheduler's buckets: FrameworkExtensionPointDuration ExponentialBuckets(0.0001, 2, 12),
// PluginExecutionDuration ExponentialBuckets(0.00001, 1.5, 20).
scheduler_metrics::scheduler_metrics(std::string profile, unsigned sample_percent)
    : profile_(std::move(profile)),
      pct_(std::min(sample_percent, 100u)),
      point_bounds_(exponential_buckets(0.0001, 2, 12)),
      plugin_bounds_(exponential_buckets(0.00001, 1.5, 20)) {}

scheduler_metrics::~scheduler_metrics() {
  for (auto& c : point_cells_) delete c.load();
  for (auto& c : plugin_cells_) delete c.load();
}

std::int64_t scheduler_metrics::now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool scheduler_metrics::sample_cycle() noexcept {
  if (!live_) return false;
  const std::uint64_t c = cycles_.fetch_add(1) + 1;
  const bool s = (c * pct_) / 100 != ((c - 1) * pct_) / 100;
  if (s) ++sampled_;
  return s;
}

void scheduler_metrics::observe(std::atomic<cell*>& slot, std::string_view plugin, std::uint32_t ep,
                                scheduler::status_code code, const std::vector<double>& bounds,
                                std::int64_t ns) noexcept {
  cell* c = slot.load(std::memory_order_acquire);
  if (c == nullptr) {
    try {
      std::unique_ptr<cell> fresh(new cell{std::string(plugin), ep, code, histogram(bounds)});
      cell* expected = nullptr;
      if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel))
        c = fresh.release();
      else
        c = expected;  // another thread made it first
    } catch (...) {
      return;  // out of memory: the observation is lost, never the run
    }
  }
  c->seconds.observe(static_cast<double>(std::max<std::int64_t>(ns, 0)) * 1e-9);
}

void scheduler_metrics::extension_point(std::uint32_t ep, scheduler::status_code code,
                                        std::int64_t ns) noexcept {
  const std::size_t p = point_index(ep), k = static_cast<std::size_t>(code);
  if (!live_ || p >= points || k >= codes) return;
  observe(point_cells_[p * codes + k], {}, ep, code, point_bounds_, ns);
}

void scheduler_metrics::plugin(std::size_t index, std::string_view name, std::uint32_t ep,
                               scheduler::status_code code, std::int64_t ns) noexcept {
  const std::size_t p = point_index(ep), k = static_cast<std::size_t>(code);
  if (!live_ || index >= max_plugins || p >= points || k >= codes) return;
  observe(plugin_cells_[(index * points + p) * codes + k], name, ep, code, plugin_bounds_, ns);
}

std::vector<metric_family> scheduler_metrics::families() const {
  std::vector<metric_family> fs(2);
  fs[0].name = "scheduler_framework_extension_point_duration_seconds";
  fs[0].help =
      "Latency for running all plugins of a specific extension point (Score: every score and "
      "normalize call of the cycle), wall time on the colony run host.";
  fs[0].type = metric_type::histogram;
  for (const auto& slot : point_cells_)
    if (const cell* c = slot.load(std::memory_order_acquire))
      fs[0].histograms.push_back(c->seconds.snapshot(
          {{"extension_point", std::string(scheduler::extension_point_label(c->ep))},
           {"status", std::string(scheduler::to_string(c->code))},
           {"profile", profile_}}));
  fs[1].name = "scheduler_plugin_execution_duration_seconds";
  fs[1].help =
      "Duration for running a plugin at a specific extension point, in the sampled cycles "
      "(Filter: one node; Score: one chunk of nodes).";
  fs[1].type = metric_type::histogram;
  for (const auto& slot : plugin_cells_)
    if (const cell* c = slot.load(std::memory_order_acquire))
      fs[1].histograms.push_back(c->seconds.snapshot(
          {{"plugin", c->plugin},
           {"extension_point", std::string(scheduler::extension_point_label(c->ep))},
           {"status", std::string(scheduler::to_string(c->code))}}));
  return fs;
}

}  // namespace colony::run
