// Pod -> PodSubmitted / PodStarted / PodFinished.
#include <algorithm>
#include <limits>
#include <optional>

#include "actors/scheduler/numa/numa_aware.hpp"
#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"

namespace colony::kube::translate_internal {

namespace {

// ---- Kubernetes' pod resource arithmetic ------------------------------------------------
// staging/src/k8s.io/component-helpers/resource/helpers.go (PodRequests, PodLimits,
// aggregateContainerResourcesByFn, addResourceList, maxResourceList), spec side only: a pod
// Colony translates is not running yet, so status resources (in-place resize) play no part.

result<void> add_list(amounts& to, const amounts& from, const object_ref& ref,
                      std::string_view field) {
  for (const auto& [name, v] : from)
    if (!add_to(to[name], v))
      return invalid(ref, std::string(field) + "." + name, "sum overflows int64");
  return {};
}

void max_list(amounts& to, const amounts& from) {
  for (const auto& [name, v] : from) {
    auto it = to.find(name);
    if (it == to.end() || v > it->second) to[name] = v;
  }
}

// pod-level resources (KEP-2837): cpu, memory and hugepages-* (IsSupportedPodLevelResource).
bool pod_level(std::string_view name) {
  return name == names::cpu || name == names::memory || name.substr(0, 10) == "hugepages-";
}

// aggregateContainerResourcesByFn over spec.containers and spec.initContainers: containers
// add up; restartable init containers (sidecars, restartPolicy Always) add to the sum and to
// every later init container's use; the sum is at least the largest init container's use.
result<amounts> aggregate(const json& spec, const object_ref& ref, std::string_view at,
                          std::string_view which) {
  amounts total;
  const std::string path(at);
  const json* containers = member(spec, "containers");
  if (containers == nullptr || !containers->is_array() || containers->empty())
    return invalid(ref, path + ".containers", "at least one container is required");
  for (std::size_t i = 0; i < containers->size(); ++i) {
    const std::string f = path + ".containers" + index(i);
    const json& c = (*containers)[i];
    if (!c.is_object()) return invalid(ref, f, "must be an object");
    const std::string rf = f + ".resources." + std::string(which);
    auto r = parse_resources(member(member(c, "resources"), which), ref, rf);
    if (!r) return tl::unexpected(r.error());
    if (auto ok = add_list(total, *r, ref, rf); !ok) return tl::unexpected(ok.error());
  }
  const json* inits = member(spec, "initContainers");
  if (inits == nullptr) return total;
  if (!inits->is_array()) return invalid(ref, path + ".initContainers", "must be a list");
  amounts restartable, init_use;
  for (std::size_t i = 0; i < inits->size(); ++i) {
    const std::string f = path + ".initContainers" + index(i);
    const json& c = (*inits)[i];
    if (!c.is_object()) return invalid(ref, f, "must be an object");
    const std::string rf = f + ".resources." + std::string(which);
    auto r = parse_resources(member(member(c, "resources"), which), ref, rf);
    if (!r) return tl::unexpected(r.error());
    auto policy = string_member(&c, "restartPolicy", ref, f + ".restartPolicy");
    if (!policy) return tl::unexpected(policy.error());
    if (*policy == "Always") {
      if (auto ok = add_list(total, *r, ref, rf); !ok) return tl::unexpected(ok.error());
      if (auto ok = add_list(restartable, *r, ref, rf); !ok) return tl::unexpected(ok.error());
      max_list(init_use, restartable);
    } else {
      amounts use = *r;
      if (auto ok = add_list(use, restartable, ref, rf); !ok) return tl::unexpected(ok.error());
      max_list(init_use, use);
    }
  }
  max_list(total, init_use);
  return total;
}

// PodRequests: the aggregate, pod-level requests in place of it where set, plus overhead.
// PodLimits: the same with limits, overhead added only to limits present and non-zero.
result<amounts> pod_resources(const json& spec, const object_ref& ref, std::string_view at,
                              bool limits) {
  const std::string_view which = limits ? "limits" : "requests";
  const std::string path(at);
  auto total = aggregate(spec, ref, at, which);
  if (!total) return total;
  auto pod_req = parse_resources(member(member(spec, "resources"), "requests"), ref,
                                 path + ".resources.requests");
  if (!pod_req) return tl::unexpected(pod_req.error());
  auto pod_lim =
      parse_resources(member(member(spec, "resources"), "limits"), ref, path + ".resources.limits");
  if (!pod_lim) return tl::unexpected(pod_lim.error());
  auto any_supported = [](const amounts& a) {
    return std::any_of(a.begin(), a.end(), [](const auto& kv) { return pod_level(kv.first); });
  };
  // IsPodLevelRequestsSet for requests; IsPodLevelResourcesSet (either map) for limits.
  const bool apply =
      limits ? any_supported(*pod_req) || any_supported(*pod_lim) : any_supported(*pod_req);
  if (apply)
    for (const auto& [name, v] : limits ? *pod_lim : *pod_req)
      if (pod_level(name)) (*total)[name] = v;
  auto overhead = parse_resources(member(spec, "overhead"), ref, path + ".overhead");
  if (!overhead) return tl::unexpected(overhead.error());
  const std::string overhead_at = path + ".overhead.";
  for (const auto& [name, v] : *overhead) {
    auto it = total->find(name);
    if (limits && (it == total->end() || it->second == 0)) continue;
    if (!add_to((*total)[name], v)) return invalid(ref, overhead_at + name, "sum overflows int64");
  }
  return total;
}

// ---- the pod as PodSubmitted carries it ---------------------------------------------------

struct pod_view {
  object_ref ref;
  std::string uid;
  kv_list labels;
  kv_list annotations;
  std::string node_name;
  std::string scheduler_name;
  std::string priority_class_name;
  std::optional<std::int32_t> priority;
  std::string phase;
  wire::KubeQoSClass kube_qos = wire::KubeQoSClass::Unset;
  std::vector<std::string> gpu_models;
  std::string owner;
  split_resources requests;
  split_resources limits;
  std::optional<split_resources> overhead;  // spec.overhead (already in requests); none unset
};

std::optional<std::string_view> find_kv(const kv_list& kvs, std::string_view key) {
  for (const auto& [k, v] : kvs)
    if (k == key) return v;
  return std::nullopt;
}

// Koordinator's pod validating webhook refuses a pod whose koordinator.sh/qosClass or
// koordinator.sh/priority-class label is not a known value (pkg/webhook/pod/validating), so
// such a pod cannot exist in a Koordinator cluster: refused here rather than read as none.
result<void> check_koordinator_labels(const pod_view& p) {
  if (auto q = find_kv(p.labels, names::label_qos_class);
      q && get_pod_qos_class_by_name(*q) == qos_class::none)
    return invalid(p.ref, "metadata.labels[" + std::string(names::label_qos_class) + "]",
                   quote_text(*q) + " is not SYSTEM, LSE, LSR, LS, BE");
  if (auto c = find_kv(p.labels, names::label_priority_class);
      c && get_pod_priority_class_by_name(*c) == priority_class::none)
    return invalid(p.ref, "metadata.labels[" + std::string(names::label_priority_class) + "]",
                   quote_text(*c) + " is not koord-prod, koord-mid, koord-batch, koord-free");
  return {};
}

// The GPU models a pod accepts: spec.nodeSelector[node.koordinator.sh/gpu-model], else the
// union of the required node-affinity terms when every term pins that label with In (terms
// are ORed). Anything else: any model (empty).
result<std::vector<std::string>> gpu_models_of(const json& spec, const object_ref& ref) {
  const std::string label(names::label_gpu_model);
  auto selector = string_map(member(spec, "nodeSelector"), ref, "spec.nodeSelector");
  if (!selector) return tl::unexpected(selector.error());
  if (auto v = find_kv(*selector, label)) return std::vector<std::string>{std::string(*v)};
  const json* terms = member(member(member(member(spec, "affinity"), "nodeAffinity"),
                                    "requiredDuringSchedulingIgnoredDuringExecution"),
                             "nodeSelectorTerms");
  std::vector<std::string> models;
  if (terms == nullptr || !terms->is_array() || terms->empty()) return models;
  for (const auto& term : *terms) {
    bool pinned = false;
    const json* exprs = member(term, "matchExpressions");
    if (exprs != nullptr && exprs->is_array()) {
      for (const auto& e : *exprs) {
        const json* key = member(e, "key");
        const json* op = member(e, "operator");
        const json* values = member(e, "values");
        if (key == nullptr || *key != label || op == nullptr || *op != "In" || values == nullptr ||
            !values->is_array())
          continue;
        pinned = true;
        for (const auto& v : *values)
          if (v.is_string()) models.push_back(v.get<std::string>());
      }
    }
    if (!pinned) return std::vector<std::string>{};
  }
  std::sort(models.begin(), models.end());
  models.erase(std::unique(models.begin(), models.end()), models.end());
  return models;
}

result<pod_view> read_pod(const json& o) {
  auto ref = read_ref(object_kind::pod, o, true);
  if (!ref) return tl::unexpected(ref.error());
  pod_view p;
  p.ref = *ref;
  const json* md = member(o, "metadata");
  auto uid = string_member(md, "uid", p.ref, "metadata.uid");
  if (!uid) return tl::unexpected(uid.error());
  p.uid = *uid;
  auto labels = string_map(member(md, "labels"), p.ref, "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  p.labels = std::move(*labels);
  auto annotations = string_map(member(md, "annotations"), p.ref, "metadata.annotations");
  if (!annotations) return tl::unexpected(annotations.error());
  p.annotations = std::move(*annotations);
  if (auto ok = check_koordinator_labels(p); !ok) return tl::unexpected(ok.error());
  if (const json* owners = member(md, "ownerReferences"); owners != nullptr) {
    if (!owners->is_array()) return invalid(p.ref, "metadata.ownerReferences", "must be a list");
    for (std::size_t i = 0; i < owners->size(); ++i) {
      const json& ow = (*owners)[i];
      const std::string f = "metadata.ownerReferences" + index(i);
      auto controller = bool_member(&ow, "controller", p.ref, f + ".controller");
      if (!controller) return tl::unexpected(controller.error());
      if (!*controller) continue;
      auto kind = string_member(&ow, "kind", p.ref, f + ".kind");
      if (!kind) return tl::unexpected(kind.error());
      auto name = string_member(&ow, "name", p.ref, f + ".name");
      if (!name) return tl::unexpected(name.error());
      p.owner = *kind + "/" + *name;  // the workload, in the pod's namespace
      break;
    }
  }
  const json* spec = member(o, "spec");
  if (spec == nullptr || !spec->is_object()) return invalid(p.ref, "spec", "is required");
  for (auto [key, out] :
       {std::pair{"nodeName", &p.node_name}, std::pair{"schedulerName", &p.scheduler_name},
        std::pair{"priorityClassName", &p.priority_class_name}}) {
    auto s = string_member(spec, key, p.ref, std::string("spec.") + key);
    if (!s) return tl::unexpected(s.error());
    *out = std::move(*s);
  }
  if (const json* prio = member(spec, "priority"); prio != nullptr) {
    if (!prio->is_number_integer() ||
        prio->get<std::int64_t>() < std::numeric_limits<std::int32_t>::min() ||
        prio->get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
      return invalid(p.ref, "spec.priority", prio->dump() + " is not an int32");
    p.priority = static_cast<std::int32_t>(prio->get<std::int64_t>());
  }
  auto models = gpu_models_of(*spec, p.ref);
  if (!models) return tl::unexpected(models.error());
  p.gpu_models = std::move(*models);
  auto requests = pod_resources(*spec, p.ref, "spec", false);
  if (!requests) return tl::unexpected(requests.error());
  p.requests = split(*requests);
  auto limits = pod_resources(*spec, p.ref, "spec", true);
  if (!limits) return tl::unexpected(limits.error());
  p.limits = split(*limits);
  if (const json* oh = member(*spec, "overhead"); oh != nullptr && !oh->is_null()) {
    auto o = parse_resources(oh, p.ref, "spec.overhead");  // checked by pod_resources already
    if (!o) return tl::unexpected(o.error());
    if (!o->empty()) p.overhead = split(*o);
  }
  const json* status = member(o, "status");
  auto phase = string_member(status, "phase", p.ref, "status.phase");
  if (!phase) return tl::unexpected(phase.error());
  p.phase = std::move(*phase);
  // The apiserver sets status.qosClass at creation (GetPodQOS); kept as given.
  auto qos = string_member(status, "qosClass", p.ref, "status.qosClass");
  if (!qos) return tl::unexpected(qos.error());
  if (*qos == to_string(kube_qos_class::guaranteed)) {
    p.kube_qos = wire::KubeQoSClass::Guaranteed;
  } else if (*qos == to_string(kube_qos_class::burstable)) {
    p.kube_qos = wire::KubeQoSClass::Burstable;
  } else if (*qos == to_string(kube_qos_class::best_effort)) {
    p.kube_qos = wire::KubeQoSClass::BestEffort;
  } else if (!qos->empty()) {
    return invalid(p.ref, "status.qosClass",
                   quote_text(*qos) + " is not Guaranteed, Burstable, BestEffort");
  }
  return p;
}

bool terminal(std::string_view phase) { return phase == "Succeeded" || phase == "Failed"; }

bool ours(const pod_view& p, const translate_options& o) {
  return o.scheduler_names.empty() || std::find(o.scheduler_names.begin(), o.scheduler_names.end(),
                                                p.scheduler_name) != o.scheduler_names.end();
}

// Phase and node of the old object of a MODIFIED, read leniently: it was translated (or
// refused) when it arrived.
std::pair<std::string, std::string> phase_and_node(const json& o) {
  auto str = [](const json* v) {
    return v != nullptr && v->is_string() ? v->get<std::string>() : "";
  };
  return {str(member(member(o, "status"), "phase")), str(member(member(o, "spec"), "nodeName"))};
}

messages::byte_buffer pod_submitted(messages::event_builder& b, const pod_view& p, event_time t,
                                    const translate_options& opt) {
  auto& fbb = b.fbb();
  const std::string key = p.ref.key();
  // Schema field order, one creating call per statement (docs/events.md).
  const auto name = fbb.CreateString(key);
  const auto uid = fbb.CreateString(p.uid);
  const auto requests = build_resources(b, p.requests);
  const auto limits = build_resources(b, p.limits);
  flatbuffers::Offset<flatbuffers::String> pcn;
  if (!p.priority_class_name.empty()) pcn = fbb.CreateString(p.priority_class_name);
  const auto labels = b.key_values(p.labels);
  const auto annotations = b.key_values(p.annotations);
  const auto scheduler = fbb.CreateString(p.scheduler_name);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> models;
  if (!p.gpu_models.empty()) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> m;
    m.reserve(p.gpu_models.size());
    for (const auto& s : p.gpu_models) m.push_back(fbb.CreateString(s));
    models = fbb.CreateVector(m);
  }
  flatbuffers::Offset<flatbuffers::String> owner;
  if (!p.owner.empty()) owner = fbb.CreateString(p.owner);
  flatbuffers::Offset<wire::Resources> overhead;
  if (p.overhead) overhead = build_resources(b, *p.overhead);
  const auto payload = wire::CreatePodSubmitted(
      fbb, name, uid, requests, limits, p.priority.value_or(0), p.priority.has_value(), pcn, labels,
      annotations, scheduler, p.kube_qos, models, owner, -1, overhead);
  return b.finish(header(t, wire::EntityKind::Pod, key, opt), payload);
}

messages::byte_buffer pod_finished(messages::event_builder& b, const pod_view& p,
                                   wire::PodPhase phase, event_time t,
                                   const translate_options& opt) {
  auto& fbb = b.fbb();
  const std::string key = p.ref.key();
  const auto pod = fbb.CreateString(key);
  const auto node = fbb.CreateString(p.node_name);
  const auto payload = wire::CreatePodFinished(fbb, pod, node, phase);
  return b.finish(header(t, wire::EntityKind::Pod, key, opt), payload);
}

messages::byte_buffer pod_started(messages::event_builder& b, const pod_view& p, event_time t,
                                  const translate_options& opt) {
  auto& fbb = b.fbb();
  const std::string key = p.ref.key();
  const auto pod = fbb.CreateString(key);
  const auto node = fbb.CreateString(p.node_name);
  const auto payload = wire::CreatePodStarted(fbb, pod, node);
  return b.finish(header(t, wire::EntityKind::Pod, key, opt), payload);
}

// resource-status's cpuset (parse_resource_status); "" when absent or the annotation does not
// parse.
std::string cpuset_of_resource_status(const kv_list& annotations) {
  const auto v = find_kv(annotations, names::annotation_resource_status);
  if (!v) return {};
  auto rs = scheduler::numa::parse_resource_status(*v);
  return rs ? rs->cpuset.to_string() : std::string();
}

// The binding as a node's koordlet observes it (spec.nodeName set by whoever bound the pod):
// a PodScheduled with no proposal in the log (proposal_offset -1; the audit counts it as an
// unproposed binding) and the pod's requests, so the node's components place the pod.
messages::byte_buffer pod_bound(messages::event_builder& b, const pod_view& p, event_time t,
                                const translate_options& opt) {
  auto& fbb = b.fbb();
  const std::string key = p.ref.key();
  const auto pod = fbb.CreateString(key);
  const auto node = fbb.CreateString(p.node_name);
  const auto requests = build_resources(b, p.requests);
  const auto scheduler = fbb.CreateString(p.scheduler_name);
  // The CPUs the pod's resource-status names (NodeNUMAResource's, whoever scheduled it), so the
  // node's components hold them; an annotation without a valid cpuset binds none.
  flatbuffers::Offset<flatbuffers::String> cpus;
  if (auto cs = cpuset_of_resource_status(p.annotations); !cs.empty()) cpus = fbb.CreateString(cs);
  const auto payload =
      wire::CreatePodScheduled(fbb, pod, node, -1, requests, 0, scheduler, 0, cpus);
  return b.finish(header(t, wire::EntityKind::Pod, key, opt), payload);
}

// A koordlet's pods (translate_options::koordlet_node): those bound to its node, whoever bound
// them, as Koordinator's statesinformer lists them. A pod's spec goes first, then its binding:
// node_routing hands the spec to the node's components right before the binding.
result<event_list> translate_node_pod(const request& r, const pod_view& p) {
  const translate_options& opt = *r.options;
  const bool mine = p.node_name == opt.koordlet_node;
  messages::event_builder b;
  event_list out;
  switch (r.what) {
    case op::added:
      if (!mine || terminal(p.phase)) return out;
      out.push_back(pod_submitted(b, p, r.time, opt));
      out.push_back(pod_bound(b, p, r.time, opt));
      return out;
    case op::modified: {
      const auto [old_phase, old_node] = phase_and_node(*r.old_object);
      const bool was_mine = old_node == opt.koordlet_node && !terminal(old_phase);
      if (!mine) {
        // Moved off the node (a pod's nodeName cannot change; a replaced object can).
        if (was_mine) out.push_back(pod_finished(b, p, wire::PodPhase::Deleted, r.time, opt));
        return out;
      }
      if (terminal(p.phase)) {
        if (was_mine)
          out.push_back(pod_finished(
              b, p, p.phase == "Succeeded" ? wire::PodPhase::Succeeded : wire::PodPhase::Failed,
              r.time, opt));
        return out;
      }
      if (!was_mine) {
        out.push_back(pod_submitted(b, p, r.time, opt));
        out.push_back(pod_bound(b, p, r.time, opt));
        return out;
      }
      // Still here: a new spec only when something PodSubmitted carries changed (not the phase).
      json before = pod_projection(*r.old_object);
      json after = pod_projection(*r.object);
      before.erase("phase");
      after.erase("phase");
      if (before != after) out.push_back(pod_submitted(b, p, r.time, opt));
      return out;
    }
    case op::deleted:
      if (!mine || terminal(p.phase)) return out;
      out.push_back(pod_finished(b, p, wire::PodPhase::Deleted, r.time, opt));
      return out;
  }
  return out;
}

tl::unexpected<error> bound_elsewhere(const pod_view& p, std::string_view how) {
  return not_translated(p.ref, std::string(how) + " to node " + quote_text(p.node_name) +
                                   " (schedulerName " + quote_text(p.scheduler_name) +
                                   "): the schema has no observation of a binding Colony did "
                                   "not decide (PodScheduled is the node actor's decision)");
}

}  // namespace

result<amounts> pod_requests(const json& spec, const object_ref& ref, std::string_view at) {
  return pod_resources(spec, ref, at, false);
}

json pod_projection(const json& o) {
  json p = json::object();
  const json* md = member(o, "metadata");
  for (const char* k : {"uid", "labels", "ownerReferences"}) {
    const json* v = member(md, k);
    p[k] = v != nullptr ? *v : json();
  }
  p["annotations"] = kept_annotations(o);
  const json* spec = member(o, "spec");
  p["spec"] = spec != nullptr ? *spec : json();
  const json* status = member(o, "status");
  for (const char* k : {"phase", "qosClass"}) {
    const json* v = member(status, k);
    p[k] = v != nullptr ? *v : json();
  }
  return p;
}

result<event_list> translate_pod(const request& r) {
  auto p = read_pod(*r.object);
  if (!p) return tl::unexpected(p.error());
  const translate_options& opt = *r.options;
  if (!opt.koordlet_node.empty()) return translate_node_pod(r, *p);
  const bool bound = !p->node_name.empty();
  messages::event_builder b;
  event_list out;
  switch (r.what) {
    case op::added:
      // A pod Colony never saw live is not Colony's to finish.
      if (terminal(p->phase)) return out;
      if (bound) return bound_elsewhere(*p, "first seen already bound");
      if (ours(*p, opt)) out.push_back(pod_submitted(b, *p, r.time, opt));
      return out;
    case op::modified: {
      const auto [old_phase, old_node] = phase_and_node(*r.old_object);
      if (terminal(p->phase)) {
        if (!terminal(old_phase) && ours(*p, opt))
          out.push_back(pod_finished(
              b, *p, p->phase == "Succeeded" ? wire::PodPhase::Succeeded : wire::PodPhase::Failed,
              r.time, opt));
        return out;
      }
      if (!ours(*p, opt)) {
        if (old_node.empty() && bound) return bound_elsewhere(*p, "bound by another scheduler");
        return out;
      }
      // Still pending: the pod's labels or spec changed; submitted again with them.
      if (!bound) {
        out.push_back(pod_submitted(b, *p, r.time, opt));
        return out;
      }
      // Bound since the last object: Colony's own binding (its PodScheduled is in the log)
      // coming back. Running: the kubelet started it.
      const bool started = p->phase == "Running" && (old_phase != "Running" || old_node.empty());
      if (started) out.push_back(pod_started(b, *p, r.time, opt));
      return out;
    }
    case op::deleted:
      // A terminal pod had its PodFinished when it became terminal.
      if (!ours(*p, opt) || terminal(p->phase)) return out;
      out.push_back(pod_finished(b, *p, wire::PodPhase::Deleted, r.time, opt));
      return out;
  }
  return out;
}

}  // namespace colony::kube::translate_internal
