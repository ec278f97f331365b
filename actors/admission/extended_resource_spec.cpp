#include "actors/admission/extended_resource_spec.hpp"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::admission {

using nlohmann::json;

namespace {

// Go's encoding/json string escaping, HTML-safe as json.Marshal writes it.
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  const bool plain = std::all_of(s.begin(), s.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return u >= 0x20 && u < 0x80 && ch != '"' && ch != '\\' && ch != '<' && ch != '>' && ch != '&';
  });
  if (plain) {  // the usual case: DNS-label container names, resource names, quantities
    out.append(s);
    out += '"';
    return;
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xF];
    } else if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

// The batch part of one ResourceList as a JSON object; false when neither is set.
bool append_batch_list(std::string& out, const resource_list& r) {
  if (r.batch_cpu_milli == 0 && r.batch_memory_bytes == 0) return false;
  out += '{';
  // Keys in byte order: batch-cpu < batch-memory.
  if (r.batch_cpu_milli != 0) {
    out += '"';
    out += names::batch_cpu;  // constant names need no escaping
    out += "\":\"";
    k8s::append_decimal_si(out, r.batch_cpu_milli);  // quantity strings need no escaping
    out += '"';
  }
  if (r.batch_memory_bytes != 0) {
    if (r.batch_cpu_milli != 0) out += ',';
    out += '"';
    out += names::batch_memory;
    out += "\":\"";
    k8s::append_memory(out, r.batch_memory_bytes);
    out += '"';
  }
  out += '}';
  return true;
}

bool has_batch(const resource_list& r) {
  return r.batch_cpu_milli != 0 || r.batch_memory_bytes != 0;
}

}  // namespace

std::string extended_resource_spec_json(const pod_spec& pod) {
  // Go marshals a map: keys sorted, and a later container of the same name wins.
  std::vector<const container_spec*> with_batch;
  for (const auto& c : pod.containers)
    if (has_batch(c.requests) || has_batch(c.limits)) with_batch.push_back(&c);
  std::stable_sort(
      with_batch.begin(), with_batch.end(),
      [](const container_spec* a, const container_spec* b) { return a->name < b->name; });
  if (with_batch.empty()) return "{}";
  std::string out;
  out.reserve(64 + 160 * with_batch.size());
  out += "{\"containers\":{";
  bool first = true;
  for (std::size_t i = 0; i < with_batch.size(); ++i) {
    if (i + 1 < with_batch.size() && with_batch[i + 1]->name == with_batch[i]->name) continue;
    const container_spec& c = *with_batch[i];
    if (!first) out += ',';
    first = false;
    append_json_string(out, c.name);
    out += ":{";
    // Field order of ExtendedResourceContainerSpec: limits, then requests; empty ones omitted.
    bool wrote = false;
    if (has_batch(c.limits)) {
      out += "\"limits\":";
      append_batch_list(out, c.limits);
      wrote = true;
    }
    if (has_batch(c.requests)) {
      if (wrote) out += ',';
      out += "\"requests\":";
      append_batch_list(out, c.requests);
    }
    out += '}';
  }
  out += "}}";
  return out;
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
    return fail(errc::invalid_input,
                "failed to get current extended resource spec: not a JSON object",
                "annotations." + std::string(annotation_extended_resource_spec));
  if (it->second == next) return false;
  it->second = std::move(next);
  return true;
}

}  // namespace colony::admission
