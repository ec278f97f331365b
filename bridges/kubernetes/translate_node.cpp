// Node -> NodeRegistered / NodeConditionChanged / NodeRemoved.
#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"

namespace colony::kube::translate_internal {

namespace {

struct readiness {
  bool ready = false;
  std::string reason;
};

// nodeutil.IsNodeReady (pkg/controller/util/node): the Ready condition's status is "True". A
// node without the condition is not ready.
result<readiness> read_readiness(const json& o, const object_ref& ref) {
  readiness r;
  r.reason = "no Ready condition";
  const json* conds = member(member(o, "status"), "conditions");
  if (conds == nullptr) return r;
  if (!conds->is_array()) return invalid(ref, "status.conditions", "must be a list");
  for (std::size_t i = 0; i < conds->size(); ++i) {
    const json& c = (*conds)[i];
    const std::string f = "status.conditions" + index(i);
    if (!c.is_object()) return invalid(ref, f, "must be an object");
    auto type = string_member(&c, "type", ref, f + ".type");
    if (!type) return tl::unexpected(type.error());
    if (*type != "Ready") continue;
    auto status = string_member(&c, "status", ref, f + ".status");
    if (!status) return tl::unexpected(status.error());
    auto reason = string_member(&c, "reason", ref, f + ".reason");
    if (!reason) return tl::unexpected(reason.error());
    r.ready = *status == "True";
    r.reason = *reason;
  }
  return r;
}

struct node_view {
  object_ref ref;
  split_resources capacity;
  split_resources allocatable;
  bool has_allocatable = false;
  kv_list labels;
  kv_list annotations;
  bool unschedulable = false;
  readiness ready;
};

result<node_view> read_node(const json& o) {
  auto ref = read_ref(object_kind::node, o, false);
  if (!ref) return tl::unexpected(ref.error());
  node_view n;
  n.ref = *ref;
  const json* md = member(o, "metadata");
  auto labels = string_map(member(md, "labels"), n.ref, "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  n.labels = std::move(*labels);
  auto annotations = string_map(member(md, "annotations"), n.ref, "metadata.annotations");
  if (!annotations) return tl::unexpected(annotations.error());
  n.annotations = std::move(*annotations);
  const json* spec = member(o, "spec");
  auto unsched = bool_member(spec, "unschedulable", n.ref, "spec.unschedulable");
  if (!unsched) return tl::unexpected(unsched.error());
  n.unschedulable = *unsched;
  const json* status = member(o, "status");
  auto cap = parse_resources(member(status, "capacity"), n.ref, "status.capacity");
  if (!cap) return tl::unexpected(cap.error());
  n.capacity = split(*cap);
  // kubelet always reports allocatable; when absent, NodeRegistered leaves it out and readers
  // take the capacity (entities.cpp apply(node_state)).
  n.has_allocatable = member(status, "allocatable") != nullptr;
  auto alloc = parse_resources(member(status, "allocatable"), n.ref, "status.allocatable");
  if (!alloc) return tl::unexpected(alloc.error());
  n.allocatable = split(*alloc);
  auto ready = read_readiness(o, n.ref);
  if (!ready) return tl::unexpected(ready.error());
  n.ready = std::move(*ready);
  return n;
}

messages::byte_buffer node_registered(messages::event_builder& b, const node_view& n, event_time t,
                                      const translate_options& opt) {
  auto& fbb = b.fbb();
  const auto name = fbb.CreateString(n.ref.name);
  const auto cap = build_resources(b, n.capacity);
  const auto alloc = n.has_allocatable ? build_resources(b, n.allocatable)
                                       : flatbuffers::Offset<wire::Resources>();
  const auto labels = b.key_values(n.labels);
  const auto annotations = b.key_values(n.annotations);
  // gpus (id 5) stay absent: per-device data is the Device CRD's, not translated yet.
  const auto payload =
      wire::CreateNodeRegistered(fbb, name, cap, alloc, labels, annotations, 0, n.unschedulable);
  return b.finish(header(t, wire::EntityKind::Node, n.ref.name, opt), payload);
}

messages::byte_buffer node_condition(messages::event_builder& b, const node_view& n, event_time t,
                                     const translate_options& opt) {
  auto& fbb = b.fbb();
  const auto name = fbb.CreateString(n.ref.name);
  const auto reason = fbb.CreateString(n.ready.reason);
  const auto payload =
      wire::CreateNodeConditionChanged(fbb, name, n.ready.ready, n.unschedulable, reason);
  return b.finish(header(t, wire::EntityKind::Node, n.ref.name, opt), payload);
}

// The resources of a projection, without those Colony's own slo-controller writes.
json resources_projection(const json* list, const translate_options& opt) {
  if (list == nullptr || !list->is_object()) return list == nullptr ? json() : *list;
  json p = *list;
  if (opt.colocation_written_by_colony)
    for (auto n : {names::batch_cpu, names::batch_memory, names::mid_cpu, names::mid_memory})
      p.erase(std::string(n));
  return p;
}

}  // namespace

json node_projection(const json& o, const translate_options& opt) {
  const json* status = member(o, "status");
  json p = json::object();
  const json* labels = member(member(o, "metadata"), "labels");
  p["labels"] = labels != nullptr ? *labels : json();
  p["annotations"] = kept_annotations(o);
  p["capacity"] = resources_projection(member(status, "capacity"), opt);
  p["allocatable"] = resources_projection(member(status, "allocatable"), opt);
  return p;
}

json node_condition_projection(const json& o) {
  json p = json::object();
  const json* u = member(member(o, "spec"), "unschedulable");
  p["unschedulable"] = u != nullptr ? *u : json(false);
  object_ref ref;
  ref.kind = object_kind::node;
  auto r = read_readiness(o, ref);
  if (!r) return json(r.error().message);  // unreadable: differs from any readable one
  p["ready"] = r->ready;
  p["reason"] = r->reason;  // not the heartbeat or transition times
  return p;
}

result<event_list> translate_node(const request& r) {
  auto n = read_node(*r.object);
  if (!n) return tl::unexpected(n.error());
  messages::event_builder b;
  event_list out;
  if (r.what == op::deleted) {
    auto& fbb = b.fbb();
    const auto name = fbb.CreateString(n->ref.name);
    const auto reason = fbb.CreateString("Node deleted");
    const auto payload = wire::CreateNodeRemoved(fbb, name, reason);
    out.push_back(
        b.finish(header(r.time, wire::EntityKind::Node, n->ref.name, *r.options), payload));
    return out;
  }
  if (r.what == op::modified && r.changed == change::condition) {
    out.push_back(node_condition(b, *n, r.time, *r.options));
    return out;
  }
  out.push_back(node_registered(b, *n, r.time, *r.options));
  // NodeRegistered folds as ready (entities.cpp); a node that is not says so right after.
  if (!n->ready.ready) out.push_back(node_condition(b, *n, r.time, *r.options));
  return out;
}

}  // namespace colony::kube::translate_internal
