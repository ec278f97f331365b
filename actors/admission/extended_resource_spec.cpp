#include "actors/admission/extended_resource_spec.hpp"

#include <nlohmann/json.hpp>

#include "actors/admission/quantity.hpp"
#include "messages/names.hpp"

namespace colony::admission {

using nlohmann::json;

namespace {

// The batch part of one ResourceList; empty object when neither is set.
json batch_list(const resource_list& r) {
  json out = json::object();
  if (r.batch_cpu_milli != 0) out[std::string(names::batch_cpu)] = format_decimal_si(r.batch_cpu_milli);
  if (r.batch_memory_bytes != 0) out[std::string(names::batch_memory)] = format_memory(r.batch_memory_bytes);
  return out;
}

}  // namespace

std::string extended_resource_spec_json(const pod_spec& pod) {
  json containers = json::object();
  for (const auto& c : pod.containers) {
    json req = batch_list(c.requests);
    json lim = batch_list(c.limits);
    if (req.empty() && lim.empty()) continue;
    json spec = json::object();
    if (!lim.empty()) spec["limits"] = std::move(lim);
    if (!req.empty()) spec["requests"] = std::move(req);
    // Go's map: a later container with the same name overwrites an earlier one.
    containers[c.name] = std::move(spec);
  }
  json root = json::object();
  if (!containers.empty()) root["containers"] = std::move(containers);
  // nlohmann's object is a std::map: keys come out sorted, as encoding/json sorts map keys.
  return root.dump(-1, ' ', false, json::error_handler_t::replace);
}

result<bool> mutate_by_extended_resources(pod_spec& pod) {
  std::string next = extended_resource_spec_json(pod);
  auto it = pod.annotations.find(annotation_extended_resource_spec);
  if (it == pod.annotations.end()) {
    if (next == "{}") return false;  // absent annotation parses as the empty spec
    pod.annotations.emplace(std::string(annotation_extended_resource_spec), std::move(next));
    return true;
  }
  const json old = json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (old.is_discarded() || !(old.is_object() || old.is_null()))
    return fail(errc::invalid_input, "failed to get current extended resource spec: not a JSON object",
                "annotations." + std::string(annotation_extended_resource_spec));
  if (it->second == next) return false;
  it->second = std::move(next);
  return true;
}

}  // namespace colony::admission
