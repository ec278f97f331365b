#include "actors/quota/actor/quota_events.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "messages/codec.hpp"
#include "messages/names.hpp"

namespace colony::quota {

using messages::to_resource_list;
using messages::to_string_view;

namespace {

keyed_resources keyed(const wire::Resources* r, std::uint16_t keys) {
  keyed_resources k;
  k.values = to_resource_list(r);
  k.keys = keys == 0 ? nonzero_keys(k.values) : static_cast<resource_keys>(keys & all_keys);
  return k;
}

}  // namespace

string_map to_map(const key_value_list* kvs) {
  string_map m;
  if (kvs == nullptr) return m;
  for (const auto* kv : *kvs)
    if (kv != nullptr)
      m.insert_or_assign(std::string(to_string_view(kv->key())),
                         std::string(to_string_view(kv->value())));
  return m;
}

std::optional<std::string_view> find_key(const key_value_list* kvs, std::string_view key) {
  if (kvs == nullptr) return std::nullopt;
  for (const auto* kv : *kvs)
    if (kv != nullptr && to_string_view(kv->key()) == key) return to_string_view(kv->value());
  return std::nullopt;
}

bool non_preemptible_of(const key_value_list* labels) {
  auto v = find_key(labels, names::label_preemptible);
  return v && *v == "false";
}

quota_spec spec_of(const wire::QuotaUpserted& e) {
  auto labels = to_map(e.labels());
  // The typed fields are what a producer without Kubernetes labels fills; a label, when
  // present, is the object's own word.
  auto fill = [&labels](std::string_view key, std::string value) {
    if (!value.empty()) labels.try_emplace(std::string(key), std::move(value));
  };
  fill(names::label_quota_parent, std::string(to_string_view(e.parent())));
  fill(names::label_quota_tree_id, std::string(to_string_view(e.tree_id())));
  if (e.is_parent()) fill(names::label_quota_is_parent, "true");
  if (!e.allow_lent_resource())
    labels.insert_or_assign(std::string(names::label_quota_allow_lent_resource),
                            std::string("false"));
  auto annotations = to_map(e.annotations());
  const bool weight_annotated = annotations.count(names::annotation_shared_weight) != 0;
  auto spec = decode_quota(std::string(to_string_view(e.name())),
                           std::string(to_string_view(e.namespace_())), std::move(labels),
                           std::move(annotations), keyed(e.min(), e.min_keys()),
                           keyed(e.max(), e.max_keys()));
  if (!weight_annotated) {
    const resource_list w = to_resource_list(e.shared_weight());
    if (!w.is_zero()) {
      spec.shared_weight = w;
      spec.shared_weight_keys = nonzero_keys(w);
    }
  }
  return spec;
}

flatbuffers::Offset<wire::QuotaUpserted> quota_upserted(messages::event_builder& b,
                                                        const quota_spec& spec) {
  auto& f = b.fbb();
  auto kvs = [&b](const string_map& m) {
    // string_map is ordered: the record does not depend on insertion order.
    std::vector<std::pair<std::string, std::string>> v(m.begin(), m.end());
    return b.key_values(v);
  };
  auto mask = [](resource_keys k) -> std::uint16_t {
    return k == keys_from_values ? 0 : static_cast<std::uint16_t>(k);
  };
  const auto name = f.CreateString(spec.name);
  const auto ns = f.CreateString(spec.namespace_name);
  const auto parent = f.CreateString(spec.parent);
  const auto tree = f.CreateString(spec.tree_id);
  const auto min = b.resources(spec.min);
  const auto max = b.resources(spec.max);
  const auto labels = kvs(spec.labels);
  const auto annotations = kvs(spec.annotations);
  wire::QuotaUpsertedBuilder qb(f);
  qb.add_name(name);
  qb.add_namespace_(ns);
  qb.add_parent(parent);
  qb.add_tree_id(tree);
  qb.add_is_parent(spec.is_parent);
  qb.add_allow_lent_resource(spec.allow_lent_resource);
  qb.add_min(min);
  qb.add_max(max);
  qb.add_labels(labels);
  qb.add_annotations(annotations);
  qb.add_min_keys(mask(spec.min_keys));
  qb.add_max_keys(mask(spec.max_keys));
  return qb.Finish();
}

flatbuffers::Offset<wire::QuotaRuntimeUpdated> quota_runtime_updated(messages::event_builder& b,
                                                                     const quota_status& st) {
  auto& f = b.fbb();
  const auto n = f.CreateString(st.name);
  const auto rt = b.resources(masked(st.runtime, st.runtime_keys));
  const auto used = b.resources(st.used);
  const auto req = b.resources(st.request);
  const auto npu = b.resources(st.non_preemptible_used);
  return wire::CreateQuotaRuntimeUpdated(f, n, rt, used, req, npu, st.runtime_keys);
}

quota_book::quota_book(std::shared_ptr<quota_tree> tree) : tree_(std::move(tree)) {}

bool quota_book::wants(wire::Payload type) {
  using P = wire::Payload;
  switch (type) {
    case P::QuotaUpserted:
    case P::QuotaDeleted:
    case P::NodeRegistered:
    case P::NodeRemoved:
    case P::NodeBatchResourceUpdated:
    case P::PodSubmitted:
    case P::PodMutated:
    case P::PodScheduled:
    case P::PodFinished:
    case P::PodEvicted:
    case P::PodRejected:
      return true;
    default:
      return false;
  }
}

void quota_book::book(pod_entry& p) {
  p.pod.quota = tree_->get_quota_name(p.namespace_name, p.quota_label);
  // The tree's assignment wins: PodScheduled or the owner's Reserve set it.
  if (const auto* known = tree_->pod(p.pod.name); known != nullptr) {
    p.pod.assigned = known->assigned;
    p.pod.node = known->node;
  }
  if (auto r = tree_->upsert_pod(p.pod); !r) refused_.push_back(r.error().message);
}

bool quota_book::apply(const wire::Envelope& env) {
  using P = wire::Payload;
  switch (env.payload_type()) {
    case P::QuotaUpserted: {
      if (auto r = tree_->upsert_quota(spec_of(*env.payload_as_QuotaUpserted())); !r) {
        refused_.push_back(r.error().message);
        return false;
      }
      quotas_dirty_ = true;
      return true;
    }
    case P::QuotaDeleted: {
      if (auto r = tree_->delete_quota(to_string_view(env.payload_as_QuotaDeleted()->name())); !r) {
        refused_.push_back(r.error().message);
        return false;
      }
      quotas_dirty_ = true;
      return true;
    }
    case P::NodeRegistered: {
      const auto* e = env.payload_as_NodeRegistered();
      auto& n = nodes_[std::string(to_string_view(e->name()))];
      const resource_list colo = n;  // batch/mid come from NodeBatchResourceUpdated
      n = e->allocatable() ? to_resource_list(e->allocatable()) : to_resource_list(e->capacity());
      n.batch_cpu_milli = colo.batch_cpu_milli;
      n.batch_memory_bytes = colo.batch_memory_bytes;
      n.mid_cpu_milli = colo.mid_cpu_milli;
      n.mid_memory_bytes = colo.mid_memory_bytes;
      nodes_dirty_ = true;
      return true;
    }
    case P::NodeBatchResourceUpdated: {
      const auto* e = env.payload_as_NodeBatchResourceUpdated();
      auto it = nodes_.find(to_string_view(e->node()));
      if (it == nodes_.end()) return false;  // not registered (or removed): not in the total
      it->second.batch_cpu_milli = e->batch_cpu_milli();
      it->second.batch_memory_bytes = e->batch_memory_bytes();
      it->second.mid_cpu_milli = e->mid_cpu_milli();
      it->second.mid_memory_bytes = e->mid_memory_bytes();
      nodes_dirty_ = true;
      return true;
    }
    case P::NodeRemoved: {
      auto it = nodes_.find(to_string_view(env.payload_as_NodeRemoved()->name()));
      if (it == nodes_.end()) return false;
      nodes_.erase(it);
      nodes_dirty_ = true;
      return true;
    }
    case P::PodSubmitted: {
      const auto* e = env.payload_as_PodSubmitted();
      const std::string key(to_string_view(e->name()));
      if (pods_.count(key) != 0) return false;  // a duplicate submission changes nothing
      pod_entry p;
      p.pod.name = key;
      p.namespace_name = key.substr(0, std::min(key.find('/'), key.size()));
      if (key.find('/') == std::string::npos) p.namespace_name.clear();
      p.pod.namespace_name = p.namespace_name;
      p.quota_label = std::string(find_key(e->labels(), names::label_quota_name).value_or(""));
      p.pod.request = to_resource_list(e->requests());
      p.pod.request.pods = 0;
      if (e->overhead()) p.pod.overhead = to_resource_list(e->overhead());
      p.pod.non_preemptible = non_preemptible_of(e->labels());
      p.pod.priority = e->priority();
      auto& slot = pods_.emplace(key, std::move(p)).first->second;
      book(slot);
      return true;
    }
    case P::PodMutated: {
      const auto* e = env.payload_as_PodMutated();
      auto it = pods_.find(to_string_view(e->name()));
      if (it == pods_.end()) return false;
      auto& p = it->second;
      p.pod.priority = e->priority();
      if (e->requests()) {
        p.pod.request = to_resource_list(e->requests());
        p.pod.request.pods = 0;
      }
      p.pod.overhead = e->overhead() ? to_resource_list(e->overhead()) : resource_list{};
      if (e->labels()) {  // the full label set after mutation
        p.quota_label = std::string(find_key(e->labels(), names::label_quota_name).value_or(""));
        p.pod.non_preemptible = non_preemptible_of(e->labels());
      }
      book(p);
      return true;
    }
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      auto it = pods_.find(to_string_view(e->pod()));
      if (it == pods_.end()) return false;  // never submitted: no namespace, labels or request
      auto& p = it->second;
      p.pod.start_time_ms = env.event_time_ms();
      book(p);  // refreshes start time; keeps the tree's assignment
      tree_->update_pod_is_assigned(p.pod.name, true, to_string_view(e->node()));
      p.pod.assigned = true;
      p.pod.node = std::string(to_string_view(e->node()));
      return true;
    }
    case P::PodFinished:
    case P::PodEvicted:
    case P::PodRejected: {
      const std::string_view pod = env.payload_type() == P::PodEvicted
                                       ? to_string_view(env.payload_as_PodEvicted()->pod())
                                   : env.payload_type() == P::PodFinished
                                       ? to_string_view(env.payload_as_PodFinished()->pod())
                                       : to_string_view(env.payload_as_PodRejected()->name());
      auto it = pods_.find(pod);
      if (it == pods_.end()) return false;
      pods_.erase(it);
      tree_->remove_pod(pod);
      return true;
    }
    default:
      return false;
  }
}

void quota_book::flush() {
  if (nodes_dirty_) {
    resource_list total;
    for (const auto& [name, alloc] : nodes_) total += alloc;  // name order: deterministic
    tree_->set_cluster_total(total);
    nodes_dirty_ = false;
  }
  if (quotas_dirty_) {
    for (auto& [key, p] : pods_)
      if (tree_->get_quota_name(p.namespace_name, p.quota_label) != p.pod.quota) book(p);
    quotas_dirty_ = false;
  }
}

}  // namespace colony::quota
