// Prometheus metrics of `colony run`: the text exposition format 0.0.4 and the few metric
// primitives the run needs (docs/operating.md "Metrics").
//
// Debian ships no prometheus-cpp, and the format is small: families of samples, each family with
// one "# HELP" and one "# TYPE" line
// (https://prometheus.io/docs/instrumenting/exposition_formats/, "Text-based format").
//
//   std::vector<metric_family> fs;
//   fs.push_back(counter_family("colony_log_records_total", "Records appended.", {{{}, 42}}));
//   std::string text = write_exposition(fs);
//
// Values here are wall-clock observations of the host process (durations) and counts of what it
// did; nothing in them is read by a component or written to the log.
//
// Thread-safety: write_exposition and the escape helpers are pure. counter and histogram may be
// updated and read from any thread at once (atomics; a histogram's snapshot may be a moment
// behind a concurrent observe, never torn below its own count).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colony::run {

enum class metric_type { counter, gauge, histogram };

using metric_labels = std::vector<std::pair<std::string, std::string>>;

struct metric_sample {
  metric_labels labels;
  double value = 0;
};

// One labelled histogram: `buckets` holds the per-bucket counts (NOT cumulative), one per upper
// bound and a last one for +Inf; write_exposition makes them cumulative.
struct histogram_sample {
  metric_labels labels;
  std::vector<double> bounds;
  std::vector<std::uint64_t> buckets;  // bounds.size() + 1
  double sum = 0;
};

struct metric_family {
  std::string name;
  std::string help;
  metric_type type = metric_type::counter;
  std::vector<metric_sample> samples;        // counter, gauge
  std::vector<histogram_sample> histograms;  // histogram
};

// The families in the given order, each sample on its line; ends with a newline. Counters and
// gauges print "name{labels} value"; histograms name_bucket{...,le="B"} (cumulative, the last
// le="+Inf"), name_sum and name_count (= the +Inf bucket).
[[nodiscard]] std::string write_exposition(const std::vector<metric_family>& families);

// A label value with \ " and newline escaped as \\ \" \n.
[[nodiscard]] std::string escape_label_value(std::string_view v);
// HELP text with \ and newline escaped as \\ \n (quotes stay).
[[nodiscard]] std::string escape_help(std::string_view v);
// A sample value: integers without exponent or fraction, +Inf, -Inf, NaN, else the shortest
// round-tripping decimal.
[[nodiscard]] std::string format_value(double v);

// Bounds start, start*factor, ... (count of them), as prometheus' ExponentialBuckets
// (client_golang prometheus/histogram.go).
[[nodiscard]] std::vector<double> exponential_buckets(double start, double factor, int count);

// A histogram with fixed bounds, updated lock-free.
class histogram {
 public:
  explicit histogram(std::vector<double> bounds);
  void observe(double v) noexcept;
  [[nodiscard]] histogram_sample snapshot(metric_labels labels) const;
  [[nodiscard]] std::uint64_t count() const noexcept;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

}  // namespace colony::run
