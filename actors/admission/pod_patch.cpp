#include "actors/admission/pod_patch.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

namespace colony::admission {

using nlohmann::json;

namespace {

std::string type_name(const json& j) { return j.type_name(); }

result<map_patch> parse_map_patch(const json& j, const std::string& field) {
  map_patch out;
  if (j.is_null()) {
    out.clear = true;
    return out;
  }
  if (!j.is_object())
    return fail(errc::invalid_input,
                field + ": Invalid value: must be an object of strings, got " + type_name(j));
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "$patch") {
      if (!it->is_string() ||
          (it->get<std::string>() != "replace" && it->get<std::string>() != "delete"))
        return fail(errc::invalid_input,
                    field + ".$patch: Unsupported value: only \"replace\" and \"delete\"");
      out.clear = true;
      if (it->get<std::string>() == "delete") {
        out.set.clear();
        out.remove.clear();
        return out;
      }
      continue;
    }
    if (it->is_null()) {
      out.remove.push_back(k);
    } else if (it->is_string()) {
      out.set[k] = it->get<std::string>();
    } else {
      return fail(
          errc::invalid_input,
          field + "." + k + ": Invalid value: must be a string or null, got " + type_name(*it));
    }
  }
  std::sort(out.remove.begin(), out.remove.end());
  return out;
}

result<field_patch<std::string>> parse_string_field(const json& j, const std::string& field) {
  field_patch<std::string> out;
  out.present = true;
  if (j.is_null()) return out;
  if (!j.is_string())
    return fail(errc::invalid_input,
                field + ": Invalid value: must be a string or null, got " + type_name(j));
  out.value = j.get<std::string>();
  return out;
}

result<field_patch<std::int32_t>> parse_int32_field(const json& j, const std::string& field) {
  field_patch<std::int32_t> out;
  out.present = true;
  if (j.is_null()) return out;
  if (!j.is_number_integer())
    return fail(errc::invalid_input,
                field + ": Invalid value: must be an int32 or null, got " + type_name(j));
  const std::int64_t v = j.is_number_unsigned()
                             ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                   j.get<std::uint64_t>(), std::uint64_t{1} << 40))
                             : j.get<std::int64_t>();
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    return fail(errc::invalid_input,
                field + ": Invalid value: " + std::to_string(v) + ": out of int32 range");
  out.value = static_cast<std::int32_t>(v);
  return out;
}

}  // namespace

void map_patch::apply(string_map& m) const {
  if (clear) m.clear();
  for (const auto& k : remove) m.erase(k);
  for (const auto& [k, v] : set) m[k] = v;
}

void pod_patch::apply(pod_spec& pod) const {
  labels.apply(pod.labels);
  annotations.apply(pod.annotations);
  if (scheduler_name.present) pod.scheduler_name = scheduler_name.value.value_or("");
  if (priority_class_name.present) pod.priority_class_name = priority_class_name.value.value_or("");
  if (preemption_policy.present) pod.preemption_policy = preemption_policy.value.value_or("");
  if (priority.present) pod.priority = priority.value;
}

result<pod_patch> parse_pod_patch(const json& patch, std::string_view field_sv) {
  const std::string field(field_sv);
  if (!patch.is_object())
    return fail(errc::invalid_input,
                field + ": Invalid value: a patch must be a JSON object, got " + type_name(patch));
  pod_patch out;
  out.raw_json = patch.dump(-1, ' ', false, json::error_handler_t::replace);
  for (auto top = patch.begin(); top != patch.end(); ++top) {
    const std::string& tk = top.key();
    const std::string tpath = field + "." + tk;
    if (tk == "metadata" || tk == "spec") {
      if (top->is_null()) {
        out.unsupported_paths.push_back(tpath);  // deleting all metadata/spec is not modelled
        continue;
      }
      if (!top->is_object())
        return fail(errc::invalid_input,
                    tpath + ": Invalid value: must be an object, got " + type_name(*top));
      for (auto it = top->begin(); it != top->end(); ++it) {
        const std::string& k = it.key();
        const std::string path = tpath + "." + k;
        if (tk == "metadata" && k == "labels") {
          auto m = parse_map_patch(*it, path);
          if (!m) return tl::unexpected(m.error());
          out.labels = std::move(*m);
        } else if (tk == "metadata" && k == "annotations") {
          auto m = parse_map_patch(*it, path);
          if (!m) return tl::unexpected(m.error());
          out.annotations = std::move(*m);
        } else if (tk == "spec" &&
                   (k == "schedulerName" || k == "priorityClassName" || k == "preemptionPolicy")) {
          auto f = parse_string_field(*it, path);
          if (!f) return tl::unexpected(f.error());
          (k == "schedulerName"       ? out.scheduler_name
           : k == "priorityClassName" ? out.priority_class_name
                                      : out.preemption_policy) = *f;
        } else if (tk == "spec" && k == "priority") {
          auto f = parse_int32_field(*it, path);
          if (!f) return tl::unexpected(f.error());
          out.priority = *f;
        } else {
          out.unsupported_paths.push_back(path);
        }
      }
    } else {
      out.unsupported_paths.push_back(tpath);
    }
  }
  return out;
}

result<pod_patch> parse_pod_patch(std::string_view json_text, std::string_view field) {
  json j = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return fail(errc::invalid_input, std::string(field) + ": Invalid value: not valid JSON");
  return parse_pod_patch(j, field);
}

}  // namespace colony::admission
