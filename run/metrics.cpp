#include "run/metrics.hpp"

#include <charconv>
#include <cmath>

namespace colony::run {

namespace {

std::string_view type_name(metric_type t) {
  switch (t) {
    case metric_type::counter:
      return "counter";
    case metric_type::gauge:
      return "gauge";
    case metric_type::histogram:
      return "histogram";
  }
  return "untyped";
}

void write_labels(std::string& out, const metric_labels& labels, std::string_view le = {}) {
  if (labels.empty() && le.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    out += escape_label_value(v);
    out += '"';
  }
  if (!le.empty()) {
    if (!first) out += ',';
    out += "le=\"";
    out += le;
    out += '"';
  }
  out += '}';
}

}  // namespace

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Counts print as integers (2^53 and below are exact in a double).
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0)
    return std::to_string(static_cast<long long>(v));
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  std::vector<double> b;
  b.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i, start *= factor) b.push_back(start);
  return b;
}

std::string write_exposition(const std::vector<metric_family>& families) {
  std::string out;
  for (const auto& f : families) {
    out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + f.name + " " + std::string(type_name(f.type)) + "\n";
    if (f.type != metric_type::histogram) {
      for (const auto& s : f.samples) {
        out += f.name;
        write_labels(out, s.labels);
        out += ' ';
        out += format_value(s.value);
        out += '\n';
      }
      continue;
    }
    for (const auto& h : f.histograms) {
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < h.buckets.size(); ++i) {
        cumulative += h.buckets[i];
        const std::string le =
            i < h.bounds.size() ? format_value(h.bounds[i]) : std::string("+Inf");
        out += f.name + "_bucket";
        write_labels(out, h.labels, le);
        out += ' ' + std::to_string(cumulative) + '\n';
      }
      out += f.name + "_sum";
      write_labels(out, h.labels);
      out += ' ' + format_value(h.sum) + '\n';
      out += f.name + "_count";
      write_labels(out, h.labels);
      out += ' ' + std::to_string(cumulative) + '\n';
    }
  }
  return out;
}

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

void histogram::observe(double v) noexcept {
  // Prometheus buckets are upper-inclusive: v lands in the first bound >= v.
  std::size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  double s = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(s, s + v, std::memory_order_relaxed)) {
  }
  count_.fetch_add(1, std::memory_order_release);
}

histogram_sample histogram::snapshot(metric_labels labels) const {
  histogram_sample h;
  h.labels = std::move(labels);
  h.bounds = bounds_;
  h.buckets.resize(bounds_.size() + 1);
  for (std::size_t i = 0; i <= bounds_.size(); ++i)
    h.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  h.sum = sum_.load(std::memory_order_relaxed);
  return h;
}

std::uint64_t histogram::count() const noexcept { return count_.load(std::memory_order_acquire); }

}  // namespace colony::run
