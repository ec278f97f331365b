#include "actors/admission/colocation_profile.hpp"

#include <algorithm>

#include "actors/admission/extended_resource_spec.hpp"
#include "messages/names.hpp"

namespace colony::admission {

// ---- profile ----------------------------------------------------------------------------

bool cluster_colocation_profile::should_skip_update_resource() const {
  return find_value(metadata_annotations, annotation_skip_update_resource) != nullptr;
}

bool cluster_colocation_profile::should_reconcile() const {
  const std::string* v = find_value(metadata_labels, label_controller_managed);
  return v != nullptr && *v == "true";
}

namespace {

bool name_less(const cluster_colocation_profile& a, const cluster_colocation_profile& b) {
  return a.name < b.name;
}

constexpr std::uint8_t invalid_namespace_selector = 1;
constexpr std::uint8_t invalid_selector = 2;

std::uint8_t invalid_selector_flags(const cluster_colocation_profile& p) {
  std::uint8_t f = 0;
  if (p.namespace_selector &&
      !validate_label_selector(*p.namespace_selector, "spec.namespaceSelector"))
    f |= invalid_namespace_selector;
  if (p.selector && !validate_label_selector(*p.selector, "spec.selector")) f |= invalid_selector;
  return f;
}

}  // namespace

result<profile_set> profile_set::make(std::vector<cluster_colocation_profile> profiles) {
  std::sort(profiles.begin(), profiles.end(), name_less);
  for (std::size_t i = 1; i < profiles.size(); ++i)
    if (profiles[i].name == profiles[i - 1].name)
      return fail(errc::already_exists,
                  "ClusterColocationProfile \"" + profiles[i].name + "\" defined twice",
                  "metadata.name");
  profile_set s;
  s.profiles_ = std::move(profiles);
  for (const auto& p : s.profiles_) s.invalid_selectors_.push_back(invalid_selector_flags(p));
  return s;
}

void profile_set::upsert(cluster_colocation_profile p) {
  const std::uint8_t flags = invalid_selector_flags(p);
  auto it = std::lower_bound(profiles_.begin(), profiles_.end(), p, name_less);
  const auto i = static_cast<std::ptrdiff_t>(it - profiles_.begin());
  if (it != profiles_.end() && it->name == p.name) {
    *it = std::move(p);
    invalid_selectors_[static_cast<std::size_t>(i)] = flags;
  } else {
    profiles_.insert(it, std::move(p));
    invalid_selectors_.insert(invalid_selectors_.begin() + i, flags);
  }
}

bool profile_set::erase(std::string_view name) {
  auto it = std::lower_bound(
      profiles_.begin(), profiles_.end(), name,
      [](const cluster_colocation_profile& p, std::string_view n) { return p.name < n; });
  if (it == profiles_.end() || it->name != name) return false;
  invalid_selectors_.erase(invalid_selectors_.begin() + (it - profiles_.begin()));
  profiles_.erase(it);
  return true;
}

const cluster_colocation_profile* profile_set::find(std::string_view name) const {
  auto it = std::lower_bound(
      profiles_.begin(), profiles_.end(), name,
      [](const cluster_colocation_profile& p, std::string_view n) { return p.name < n; });
  return it != profiles_.end() && it->name == name ? &*it : nullptr;
}

bool profile_set::matches(std::size_t i, const pod_spec& pod,
                          const string_map* namespace_labels) const {
  const cluster_colocation_profile& p = profiles_[i];
  const std::uint8_t invalid = invalid_selectors_[i];
  // Same rules as profile_matches: an invalid selector or an unknown Namespace counts as matched.
  if (p.namespace_selector && !p.namespace_selector->empty() && namespace_labels != nullptr &&
      (invalid & invalid_namespace_selector) == 0 &&
      !label_selector_matches_valid(*p.namespace_selector, *namespace_labels))
    return false;
  if (p.selector && !p.selector->empty() && (invalid & invalid_selector) == 0 &&
      !label_selector_matches_valid(*p.selector, pod.labels))
    return false;
  return true;
}

// ---- matching and probability -----------------------------------------------------------

bool profile_matches(const cluster_colocation_profile& profile, const pod_spec& pod,
                     const string_map* namespace_labels) {
  // matchNamespaceSelector: an empty selector matches without looking the Namespace up.
  if (profile.namespace_selector && !profile.namespace_selector->empty() &&
      namespace_labels != nullptr) {
    auto m = label_selector_matches(*profile.namespace_selector, *namespace_labels);
    if (m && !*m)
      return false;  // an error counts as matched (Koordinator's `!matched && err == nil`)
  }
  if (profile.selector && !profile.selector->empty()) {
    auto m = label_selector_matches(*profile.selector, pod.labels);
    if (m && !*m) return false;
  }
  return true;
}

namespace {

constexpr std::uint64_t fnv_offset = 14695981039346656037ull;
constexpr std::uint64_t fnv_prime = 1099511628211ull;

std::uint64_t fnv_bytes(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= fnv_prime;
  }
  return h;
}

std::uint64_t fnv_u64(std::uint64_t h, std::uint64_t v) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
  return fnv_bytes(h, le, 8);
}

std::uint64_t fnv_str(std::uint64_t h, std::string_view s) {
  h = fnv_u64(h, s.size());
  return fnv_bytes(h, s.data(), s.size());
}

// splitmix64's finaliser: spreads FNV's weak low bits before the modulo.
std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::int32_t probability_draw(std::uint64_t seed, const pod_spec& pod,
                              std::string_view profile_name) {
  std::uint64_t h = fnv_u64(fnv_offset, seed);
  if (!pod.uid.empty()) {
    h = fnv_str(h, pod.uid);
  } else {
    // "namespace/name", hashed without building the string.
    h = fnv_u64(h, pod.pod_namespace.size() + 1 + pod.name.size());
    h = fnv_bytes(h, pod.pod_namespace.data(), pod.pod_namespace.size());
    h = fnv_bytes(h, "/", 1);
    h = fnv_bytes(h, pod.name.data(), pod.name.size());
  }
  h = fnv_str(h, profile_name);
  return static_cast<std::int32_t>(mix64(h) % 100);
}

bool needs_draw(std::optional<std::int64_t> percent) {
  const std::int64_t p = percent.value_or(100);
  return p != 0 && p != 100;
}

bool should_skip_profile(std::optional<std::int64_t> percent, std::int32_t draw) {
  const std::int64_t p = percent.value_or(100);
  return p == 0 || (p != 100 && draw > p);
}

// ---- one profile ------------------------------------------------------------------------

namespace {

// Koordinator ranges over a Go map (random order); Colony goes in ascending source key.
void apply_keys_mapping(string_map& m, const string_map& mapping) {
  for (const auto& [old_key, new_key] : mapping) {
    const std::string* v = find_value(m, old_key);
    std::string value = v != nullptr ? *v : std::string();  // a missing source reads as ""
    m.insert_or_assign(new_key, std::move(value));
  }
}

}  // namespace

result<void> do_mutate_by_colocation_profile(pod_spec& pod,
                                             const cluster_colocation_profile& profile,
                                             const priority_class_table& priority_classes) {
  for (const auto& [k, v] : profile.labels) pod.labels.insert_or_assign(k, v);
  for (const auto& [k, v] : profile.annotations) pod.annotations.insert_or_assign(k, v);
  apply_keys_mapping(pod.labels, profile.label_keys_mapping);
  apply_keys_mapping(pod.annotations, profile.annotation_keys_mapping);
  for (const auto& [k, suffix] : profile.label_suffixes) {
    auto it = pod.labels.find(k);
    if (it != pod.labels.end()) it->second += suffix;  // only labels already present
  }
  if (!profile.scheduler_name.empty()) pod.scheduler_name = profile.scheduler_name;
  if (profile.qos != qos_class::none)
    pod.labels.insert_or_assign(std::string(names::label_qos_class),
                                std::string(to_string(profile.qos)));
  if (!profile.priority_class_name.empty()) {
    auto it = priority_classes.find(profile.priority_class_name);
    if (it == priority_classes.end())
      return fail(
          errc::not_found,
          "priorityclasses.scheduling.k8s.io \"" + profile.priority_class_name + "\" not found",
          "ClusterColocationProfile " + profile.name + " spec.priorityClassName");
    pod.priority_class_name = profile.priority_class_name;
    pod.priority = it->second.value;
    pod.preemption_policy = it->second.preemption_policy;
  }
  if (profile.koordinator_priority)
    pod.labels.insert_or_assign(std::string(names::label_priority),
                                std::to_string(*profile.koordinator_priority));
  if (profile.patch) profile.patch->apply(pod);
  return {};
}

// ---- resource translation ---------------------------------------------------------------

namespace {

struct extended_fields {
  std::int64_t resource_list::*cpu;
  std::int64_t resource_list::*memory;
};

// ResourceNameMap (apis/extension/resource.go): only Batch and Mid have extended names.
std::optional<extended_fields> resource_name_map(priority_class p) {
  switch (p) {
    case priority_class::batch:
      return extended_fields{&resource_list::batch_cpu_milli, &resource_list::batch_memory_bytes};
    case priority_class::mid:
      return extended_fields{&resource_list::mid_cpu_milli, &resource_list::mid_memory_bytes};
    default:
      return std::nullopt;
  }
}

// replaceAndEraseResource: a present cpu/memory replaces the extended value and is erased.
// cpu keeps its milli value (resource.NewQuantity(q.MilliValue())): 500m -> 500, 1 -> 1000.
bool replace_and_erase(resource_list& r, const extended_fields& f) {
  bool changed = false;
  if (r.cpu_milli != 0) {
    r.*f.cpu = r.cpu_milli;
    r.cpu_milli = 0;
    changed = true;
  }
  if (r.memory_bytes != 0) {
    r.*f.memory = r.memory_bytes;
    r.memory_bytes = 0;
    changed = true;
  }
  return changed;
}

// restrictResourceRequestAndLimit: a missing extended request takes the extended limit.
bool restrict_request_and_limit(container_spec& c, std::int64_t resource_list::*field) {
  if (c.requests.*field == 0 && c.limits.*field != 0) {
    c.requests.*field = c.limits.*field;
    return true;
  }
  return false;
}

}  // namespace

bool mutate_pod_resource_spec(pod_spec& pod) {
  const priority_class pc = get_pod_priority_class_with_default(pod);
  if (pc == priority_class::none || pc == priority_class::prod) return false;
  const auto fields = resource_name_map(pc);
  if (!fields) return false;  // Free: no mapping
  bool changed = false;
  for (auto* list : {&pod.init_containers, &pod.containers}) {
    for (auto& c : *list) {
      changed = replace_and_erase(c.requests, *fields) || changed;
      changed = replace_and_erase(c.limits, *fields) || changed;
      changed = restrict_request_and_limit(c, fields->cpu) || changed;
      changed = restrict_request_and_limit(c, fields->memory) || changed;
    }
  }
  if (pod.overhead) changed = replace_and_erase(*pod.overhead, *fields) || changed;
  return changed;
}

// ---- the webhook --------------------------------------------------------------------------

namespace {

void fill_derived(pod_mutation& m) {
  m.koord_qos = get_pod_qos_class_with_default(m.pod);
  m.koord_priority_class = get_pod_priority_class_with_default(m.pod);
  m.priority = get_pod_priority_value_with_default(m.pod);
  m.requests = get_pod_request(m.pod);
  m.limits = get_pod_limits(m.pod);
}

}  // namespace

result<pod_mutation> cluster_colocation_profile_mutating_pod(
    const pod_spec& pod, const profile_set& profiles, const string_map* namespace_labels,
    const priority_class_table& priority_classes, const mutating_options& options) {
  pod_mutation out;
  out.pod = pod;
  // The set is sorted by name: matched profiles come out in application order.
  bool skip_update_resource = false;
  bool any_matched = false;
  for (std::size_t i = 0; i < profiles.profiles().size(); ++i) {
    if (!profiles.matches(i, pod, namespace_labels)) continue;
    const cluster_colocation_profile& profile = profiles.profiles()[i];
    any_matched = true;
    // Remembered even when the profile is then skipped by probability.
    if (profile.should_skip_update_resource()) skip_update_resource = true;
    profile_decision d;
    d.profile = profile.name;
    if (needs_draw(profile.probability)) d.draw = probability_draw(options.seed, pod, profile.name);
    d.applied = !should_skip_profile(profile.probability, d.draw);
    if (d.applied) {
      if (auto r = do_mutate_by_colocation_profile(out.pod, profile, priority_classes); !r)
        return tl::unexpected(r.error());
      out.applied_profiles.push_back(profile.name);
      out.mutated = true;
      if (profile.patch)
        for (const auto& path : profile.patch->unsupported_paths)
          out.ignored_patch_paths.push_back(profile.name + ": " + path);
    }
    out.matched.push_back(std::move(d));
  }
  // No profile (or none matched): no resource translation either.
  if (any_matched && !skip_update_resource && !options.skip_mutating_resources) {
    out.resources_translated = mutate_pod_resource_spec(out.pod);
    out.mutated = out.mutated || out.resources_translated;
  }
  fill_derived(out);
  return out;
}

result<pod_mutation> mutate_pod_on_create(const pod_spec& pod, const profile_set& profiles,
                                          const string_map* namespace_labels,
                                          const priority_class_table& priority_classes,
                                          const mutating_options& options) {
  auto m = cluster_colocation_profile_mutating_pod(pod, profiles, namespace_labels,
                                                   priority_classes, options);
  if (!m) return m;
  if (!options.disable_extended_resource_spec) {
    auto changed = mutate_by_extended_resources(m->pod);
    if (!changed) return tl::unexpected(changed.error());
    m->mutated = m->mutated || *changed;
  }
  return m;
}

}  // namespace colony::admission
