#include "actors/scheduler/resource_amplification.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace colony::scheduler {

result<amplification_ratios> parse_amplification_ratios(std::string_view annotation) {
  const std::string where(annotation_resource_amplification_ratio);
  auto doc = nlohmann::json::parse(annotation, nullptr, false);
  if (doc.is_discarded()) return fail(errc::invalid_input, "malformed JSON", where);
  amplification_ratios r;
  if (doc.is_null()) return r;
  if (!doc.is_object()) return fail(errc::invalid_input, "want a JSON object", where);
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it->is_null()) continue;
    if (!it->is_number())
      return fail(errc::invalid_input, "want a number, got " + it->dump(), where + "." + it.key());
    if (it.key() == "cpu") r.cpu = it->get<double>();
    if (it.key() == "memory") r.memory = it->get<double>();
  }
  return r;
}

std::optional<amplification_ratios> amplification_from_patch(std::string_view patch) {
  const auto doc = nlohmann::json::parse(patch, nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  const auto it = doc.find(std::string(annotation_resource_amplification_ratio));
  if (it == doc.end()) return std::nullopt;
  amplification_ratios r;
  if (it->is_string()) r = parse_amplification_ratios(it->get<std::string>()).value_or(r);
  return r;
}

std::int64_t amplify(std::int64_t origin, double ratio) noexcept {
  if (!(ratio > 1)) return origin;
  const double v = std::ceil(static_cast<double>(origin) * ratio);
  if (!(v < 9223372036854775808.0)) return origin;
  return static_cast<std::int64_t>(v);
}

namespace {

// int64(float64(milli) * factor), Go's conversion on amd64 for out-of-range values.
std::int64_t multiply_milli(std::int64_t milli, double factor) noexcept {
  const double v = static_cast<double>(milli) * factor;
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

}  // namespace

resource_list amplified_allocatable(const resource_list& raw,
                                    const amplification_ratios& r) noexcept {
  resource_list a = raw;
  if (r.cpu > 1) a.cpu_milli = multiply_milli(raw.cpu_milli, r.cpu);
  if (r.memory > 1 && raw.memory_bytes < std::numeric_limits<std::int64_t>::max() / 1000) {
    // MultiplyMilliQuant on bytes: a milli quantity; Value() rounds up.
    const std::int64_t milli = multiply_milli(raw.memory_bytes * 1000, r.memory);
    a.memory_bytes = milli / 1000 + (milli % 1000 > 0 ? 1 : 0);
  }
  return a;
}

bool fits_amplified_cpus(std::int64_t pod_request_milli, bool request_cpu_bind, double cpu_ratio,
                         std::int64_t node_allocatable_milli, std::int64_t node_requested_milli,
                         std::int64_t allocated_cpuset_milli) noexcept {
  if (pod_request_milli == 0) return true;
  if (!(cpu_ratio > 1)) return true;
  if (request_cpu_bind) pod_request_milli = amplify(pod_request_milli, cpu_ratio);
  std::int64_t requested = node_requested_milli;
  if (requested >= allocated_cpuset_milli && allocated_cpuset_milli > 0)
    requested = requested - allocated_cpuset_milli + amplify(allocated_cpuset_milli, cpu_ratio);
  return pod_request_milli <= node_allocatable_milli - requested;
}

}  // namespace colony::scheduler
