#include "actors/quota/actor/quota_profile_component.hpp"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "actors/quota/actor/quota_events.hpp"
#include "messages/codec.hpp"

namespace colony::quota {

using messages::to_string_view;

bool same_root_quota(const quota_spec& a, const quota_spec& b) {
  return a.name == b.name && a.namespace_name == b.namespace_name && a.labels == b.labels &&
         a.annotations == b.annotations && a.min == b.min && a.max == b.max &&
         resolve_keys(a.min_keys, a.min) == resolve_keys(b.min_keys, b.min) &&
         resolve_keys(a.max_keys, a.max) == resolve_keys(b.max_keys, b.max);
}

quota_profile_component::quota_profile_component(quota_profile_component_options opts)
    : opts_(std::move(opts)) {}

bool quota_profile_component::wants(wire::Payload type) const {
  switch (type) {
    case wire::Payload::ObjectObserved:
    case wire::Payload::NodeRegistered:
    case wire::Payload::NodeConditionChanged:
    case wire::Payload::NodeRemoved:
    case wire::Payload::QuotaUpserted:
    case wire::Payload::QuotaDeleted:
      return true;
    default:
      return false;
  }
}

void quota_profile_component::observe_profile(const wire::ObjectObserved& o) {
  std::string key(to_string_view(o.namespace_()));
  key += '/';
  key += to_string_view(o.name());
  if (o.deleted()) {
    if (auto it = profiles_.find(key); it != profiles_.end()) profiles_.erase(it);
    return;
  }
  // The object as the CRD loader reads it: metadata from the record, spec as recorded.
  nlohmann::json obj = {{"apiVersion", std::string(to_string_view(o.api_version()))},
                        {"kind", std::string(kind_elastic_quota_profile)}};
  obj["metadata"] = {{"name", std::string(to_string_view(o.name()))},
                     {"namespace", std::string(to_string_view(o.namespace_()))}};
  if (o.labels() != nullptr && o.labels()->size() != 0) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : to_map(o.labels())) labels[k] = v;
    obj["metadata"]["labels"] = std::move(labels);
  }
  obj["spec"] = nlohmann::json::parse(to_string_view(o.spec_json()), nullptr, false);
  if (obj["spec"].is_discarded()) obj["spec"] = nullptr;
  auto loaded = load_elastic_quota_profiles_yaml(obj.dump(), "ElasticQuotaProfile " + key);
  if (!loaded || loaded->size() != 1) {
    if (auto it = profiles_.find(key); it != profiles_.end()) profiles_.erase(it);
    errors_.push_back(loaded ? error{errc::invalid_input, "not one ElasticQuotaProfile", key}
                             : loaded.error());
    return;
  }
  profiles_.insert_or_assign(key, std::move(loaded->front()));
}

void quota_profile_component::on_event(const wire::Envelope& env,
                                       std::vector<messages::byte_buffer>& /*out*/) {
  now_ = event_time{std::max(now_.value, env.event_time_ms())};
  bool changed = true;
  switch (env.payload_type()) {
    case wire::Payload::ObjectObserved: {
      const auto& o = *env.payload_as_ObjectObserved();
      if (to_string_view(o.kind()) != kind_elastic_quota_profile) return;
      observe_profile(o);
      break;
    }
    case wire::Payload::NodeRegistered: {
      const auto& e = *env.payload_as_NodeRegistered();
      const std::string node(to_string_view(e.name()));
      auto& n = nodes_[node];
      n.name = node;
      n.labels = to_map(e.labels());
      n.allocatable = messages::to_resource_list(e.allocatable());
      n.allocatable.pods = 0;  // GetNodeAllocatable's pods never reach a resource-keys quota
      n.unschedulable = e.unschedulable();
      break;
    }
    case wire::Payload::NodeConditionChanged: {
      const auto& e = *env.payload_as_NodeConditionChanged();
      auto it = nodes_.find(to_string_view(e.name()));
      if (it == nodes_.end()) return;
      changed = it->second.ready != e.ready() || it->second.unschedulable != e.unschedulable();
      it->second.ready = e.ready();
      it->second.unschedulable = e.unschedulable();
      break;
    }
    case wire::Payload::NodeRemoved: {
      auto it = nodes_.find(to_string_view(env.payload_as_NodeRemoved()->name()));
      if (it == nodes_.end()) return;
      nodes_.erase(it);
      break;
    }
    case wire::Payload::QuotaUpserted: {
      auto spec = spec_of(*env.payload_as_QuotaUpserted());
      const std::string name = spec.name;
      // Another writer's record (the API server's object as the Kubernetes source observed it):
      // a root of ours that failed to be written, or has not landed yet, is no longer taken as
      // done, so the next reconcile compares what it wants with this (Koordinator's reconciler
      // reads the live object) and writes again where they differ.
      if (to_string_view(env.source()) != opts_.name) emitted_.erase(name);
      quotas_.insert_or_assign(name, std::move(spec));
      // Only a quota some profile owns can change a reconcile.
      changed = std::any_of(profiles_.begin(), profiles_.end(),
                            [&](const auto& p) { return p.second.quota_name == name; });
      break;
    }
    case wire::Payload::QuotaDeleted: {
      const auto name = to_string_view(env.payload_as_QuotaDeleted()->name());
      if (auto e = emitted_.find(name); e != emitted_.end()) emitted_.erase(e);  // written again
      auto it = quotas_.find(name);
      if (it == quotas_.end()) return;
      quotas_.erase(it);
      break;
    }
    default:
      return;
  }
  if (!changed) return;
  dirty_ = true;
  cause_ = static_cast<std::int64_t>(env.offset());
}

void quota_profile_component::on_batch_end(std::vector<messages::byte_buffer>& out) {
  if (!dirty_ || profiles_.empty()) return;
  dirty_ = false;
  errors_.clear();
  std::vector<profile_node> nodes;
  nodes.reserve(nodes_.size());
  for (const auto& [name, n] : nodes_) nodes.push_back(n);
  for (const auto& [key, profile] : profiles_) {
    const auto seen = quotas_.find(profile.quota_name);
    const quota_spec* existing = seen == quotas_.end() ? nullptr : &seen->second;
    auto want = reconcile_quota_profile(profile, nodes, existing);
    if (!want) {
      errors_.push_back(error{want.error().code, want.error().message,
                              "ElasticQuotaProfile " + key +
                                  (want.error().where.empty() ? "" : ": ") + want.error().where});
      continue;
    }
    if (want->namespace_name.empty()) want->namespace_name = profile.namespace_name;
    if (existing != nullptr && same_root_quota(*want, *existing)) continue;
    if (auto e = emitted_.find(profile.quota_name);
        e != emitted_.end() && same_root_quota(*want, e->second))
      continue;
    const auto payload = quota_upserted(b_, *want);
    out.push_back(b_.finish(
        messages::header{now_, wire::EntityKind::ElasticQuota, want->name, cause_, opts_.name},
        payload));
    emitted_.insert_or_assign(profile.quota_name, std::move(*want));
  }
}

}  // namespace colony::quota
