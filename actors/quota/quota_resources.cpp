// Resource-key helpers, Kubernetes quantities and JSON ResourceLists for ElasticQuota.
#include "actors/quota/quota_resources.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include <nlohmann/json.hpp>

#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::quota {

namespace {

// Field i's Kubernetes name (nvidia.com/gpu is how Koordinator's quota names the gpu field).
constexpr std::array<std::string_view, resource_count> kNames = {
    names::cpu,               // 0
    names::memory,            // 1
    names::batch_cpu,         // 2
    names::batch_memory,      // 3
    names::mid_cpu,           // 4
    names::mid_memory,        // 5
    names::nvidia_gpu,        // 6
    names::gpu_core,          // 7
    names::gpu_memory,        // 8
    names::gpu_memory_ratio,  // 9
    names::pods,              // 10
};

// Field indices sorted by Kubernetes name, computed once.
const std::array<int, resource_count>& name_order() {
  static const std::array<int, resource_count> order = [] {
    std::array<int, resource_count> o{};
    for (int i = 0; i < resource_count; ++i) o[i] = i;
    std::sort(o.begin(), o.end(), [](int a, int b) { return kNames[a] < kNames[b]; });
    return o;
  }();
  return order;
}

}  // namespace

namespace {
// resource_list is 11 int64 fields without padding: view it as an array so the per-field loops
// below vectorize (the pointer-to-member loop did not).
using field_array = std::array<std::int64_t, resource_count>;
static_assert(sizeof(resource_list) == sizeof(field_array));
inline field_array as_array(const resource_list& r) { return std::bit_cast<field_array>(r); }
inline resource_list from_array(const field_array& a) { return std::bit_cast<resource_list>(a); }
}  // namespace

resource_keys nonzero_keys(const resource_list& r) {
  const field_array a = as_array(r);
  resource_keys k = 0;
  for (int i = 0; i < resource_count; ++i)
    k |= static_cast<resource_keys>((a[i] != 0 ? 1u : 0u) << i);
  return k;
}

resource_list masked(const resource_list& r, resource_keys keys) {
  if ((keys & all_keys) == all_keys) return r;
  field_array a = as_array(r);
  for (int i = 0; i < resource_count; ++i) a[i] = ((keys >> i) & 1u) ? a[i] : 0;
  return from_array(a);
}

resource_list max_of(const resource_list& a, const resource_list& b) {
  field_array x = as_array(a);
  const field_array y = as_array(b);
  for (int i = 0; i < resource_count; ++i) x[i] = std::max(x[i], y[i]);
  return from_array(x);
}

std::string_view resource_name(int i) { return kNames[static_cast<std::size_t>(i)]; }

std::vector<int> indices_by_name(resource_keys keys) {
  std::vector<int> out;
  for (int i : name_order()) {
    if (has_key(keys, i)) out.push_back(i);
  }
  return out;
}

std::optional<resource_name_info> lookup_resource(std::string_view name) {
  if (name == names::cpu) return resource_name_info{0, 1, true};
  if (name == names::memory) return resource_name_info{1, 1, false};
  if (name == names::batch_cpu) return resource_name_info{2, 1, false};
  if (name == names::batch_memory) return resource_name_info{3, 1, false};
  if (name == names::mid_cpu) return resource_name_info{4, 1, false};
  if (name == names::mid_memory) return resource_name_info{5, 1, false};
  if (name == names::nvidia_gpu) return resource_name_info{6, 100, false};
  if (name == names::koord_gpu) return resource_name_info{6, 1, false};
  if (name == names::gpu_core) return resource_name_info{7, 1, false};
  if (name == names::gpu_memory) return resource_name_info{8, 1, false};
  if (name == names::gpu_memory_ratio) return resource_name_info{9, 1, false};
  if (name == names::pods) return resource_name_info{10, 1, false};
  return std::nullopt;
}

result<std::int64_t> parse_quantity(std::string_view text, bool milli) {
  return milli ? k8s::parse_quantity_milli(text) : k8s::parse_quantity_value(text);
}

result<std::int64_t> parse_named_quantity(const resource_name_info& info, std::string_view text) {
  auto v = parse_quantity(text, info.milli);
  if (!v) return v;
  if (info.scale != 1) {
    __int128 s = static_cast<__int128>(*v) * info.scale;
    if (s > std::numeric_limits<std::int64_t>::max() ||
        s < std::numeric_limits<std::int64_t>::min()) {
      return fail(errc::out_of_range, "quantity too large", std::string(text));
    }
    return static_cast<std::int64_t>(s);
  }
  return v;
}

std::string format_quantity(int i, std::int64_t v) {
  if (i == 0) return k8s::format_milli(v);  // cpu, milli-cores
  if (i == 6)
    return k8s::format_decimal_si(v, -2);  // gpu: koordinator.sh/gpu units, 100 = one device
  return k8s::format_decimal_si(v);
}

std::string print_resource_list(const resource_list& r, resource_keys keys) {
  if (keys == 0) return "<empty>";
  std::string out;
  for (int i : indices_by_name(keys)) {
    if (!out.empty()) out += ',';
    out += resource_name(i);
    out += ':';
    out += format_quantity(i, field(r, i));
  }
  return out;
}

std::string print_names(resource_keys keys) {
  std::string out = "[";
  bool first = true;
  for (int i : indices_by_name(keys)) {
    if (!first) out += ' ';
    first = false;
    out += resource_name(i);
  }
  return out + "]";
}

std::string print_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ' ';
    out += v[i];
  }
  return out + "]";
}

result<parsed_resource_list> parse_resource_list_json(std::string_view json,
                                                      std::string_view where) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return fail(errc::invalid_input, std::string("invalid JSON ResourceList: ") + e.what(),
                std::string(where));
  }
  if (!doc.is_object()) {
    return fail(errc::invalid_input, "JSON ResourceList must be an object", std::string(where));
  }
  parsed_resource_list out;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    auto info = lookup_resource(it.key());
    if (!info) {
      out.ignored.push_back(it.key());
      continue;
    }
    std::string text;
    if (it->is_string()) {
      text = it->get<std::string>();
    } else if (it->is_number_integer()) {
      text = std::to_string(it->get<std::int64_t>());
    } else if (it->is_number()) {
      text = it->dump();
    } else {
      return fail(errc::invalid_input, "resource value must be a quantity",
                  std::string(where) + "[" + it.key() + "]");
    }
    auto v = parse_named_quantity(*info, text);
    if (!v) {
      return fail(v.error().code, v.error().message, std::string(where) + "[" + it.key() + "]");
    }
    field(out.resources.values, info->index) += *v;
    out.resources.keys |= static_cast<resource_keys>(1u << info->index);
  }
  return out;
}

std::string resource_list_to_json(const resource_list& r, resource_keys keys) {
  std::string out = "{";
  bool first = true;
  for (int i : indices_by_name(keys)) {
    if (!first) out += ',';
    first = false;
    out += '"';
    out += resource_name(i);
    out += "\":\"";
    out += format_quantity(i, field(r, i));
    out += '"';
  }
  return out + "}";
}

result<std::vector<std::string>> parse_string_list_json(std::string_view json,
                                                        std::string_view where) {
  try {
    auto doc = nlohmann::json::parse(json);
    if (!doc.is_array()) {
      return fail(errc::invalid_input, "expected a JSON list of strings", std::string(where));
    }
    std::vector<std::string> out;
    for (const auto& v : doc) {
      if (!v.is_string()) {
        return fail(errc::invalid_input, "expected a JSON list of strings", std::string(where));
      }
      out.push_back(v.get<std::string>());
    }
    return out;
  } catch (const nlohmann::json::exception& e) {
    return fail(errc::invalid_input, std::string("invalid JSON: ") + e.what(), std::string(where));
  }
}

}  // namespace colony::quota
