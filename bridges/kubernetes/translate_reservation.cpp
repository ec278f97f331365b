// Reservation (scheduling.koordinator.sh/v1alpha1, cluster-scoped) -> ReservationUpserted: the
// spec koord-scheduler's Reservation plugin and controller read, checked as far as Colony's
// scheduler relies on it. Koordinator: apis/scheduling/v1alpha1/reservation_types.go,
// pkg/util/reservation/reservation.go (NewReservePod, ValidateReservation, ReservationRequests,
// ParseReservationOwnerMatchers, GetReservationSchedulerName).
#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <set>

#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"

namespace colony::kube::translate_internal {

namespace {

// The CRD's default ttl (config/crd/bases: `default: 24h`), for an object that has neither ttl
// nor expires (one written before the CRD defaulted it).
constexpr std::int64_t default_ttl_ms = 24LL * 3600 * 1000;
// GetReservationSchedulerName: a template without schedulerName is corev1.DefaultSchedulerName's.
constexpr std::string_view default_scheduler_name = "default-scheduler";

struct owner_view {
  bool has_object = false;
  std::string object_uid, object_name, object_namespace;
  bool has_controller = false;
  std::string api_version, kind, name, uid, ns;
  std::int8_t controller_flag = -1;
  bool has_selector = false;
  kv_list match_labels;
};

struct reservation_view {
  object_ref ref;
  std::string uid;
  kv_list labels;
  split_resources requests;
  std::string node_name;
  std::int32_t priority = std::numeric_limits<std::int32_t>::max();
  std::vector<owner_view> owners;
  std::int64_t ttl_ms = default_ttl_ms;
  std::int64_t expires_ms = -1;
  bool allocate_once = true;
  std::string allocate_policy;
  bool unschedulable = false;
  std::string scheduler_name;
  std::vector<std::string> not_in_nodes;
};

std::optional<std::string_view> find_kv(const kv_list& kvs, std::string_view key) {
  for (const auto& [k, v] : kvs)
    if (k == key) return v;
  return std::nullopt;
}

// One string field of an owner part; "" when absent.
result<std::string> owner_string(const json& part, const char* key, const object_ref& ref,
                                 const std::string& at) {
  return string_member(&part, key, ref, at + "." + key);
}

// spec.owners[i]: the AND of object, controller and labelSelector (ParseReservationOwnerMatchers).
result<owner_view> read_owner(const json& o, const object_ref& ref, const std::string& at) {
  if (!o.is_object()) return invalid(ref, at, "must be an object");
  owner_view v;
  const std::string part_at = at + ".";
  for (const auto& [k, part] : o.items()) {
    if (part.is_null()) continue;
    if (k != "object" && k != "controller" && k != "labelSelector")
      return invalid(ref, part_at + k, "is not an owner part (object, controller, labelSelector)");
  }
  if (const json* obj = member(o, "object")) {
    const std::string f = at + ".object";
    if (!obj->is_object()) return invalid(ref, f, "must be an object");
    v.has_object = true;
    for (auto [key, out] : {std::pair{"uid", &v.object_uid}, std::pair{"name", &v.object_name},
                            std::pair{"namespace", &v.object_namespace}}) {
      auto s = owner_string(*obj, key, ref, f);
      if (!s) return tl::unexpected(s.error());
      *out = std::move(*s);
    }
    // MatchObjectRef compares apiVersion with the pod's ("v1"); the record has no field for it,
    // so an object owner naming another apiVersion (which no pod has) is refused, not widened.
    auto av = owner_string(*obj, "apiVersion", ref, f);
    if (!av) return tl::unexpected(av.error());
    if (!av->empty() && *av != "v1")
      return invalid(ref, f + ".apiVersion", quote_text(*av) + " is not a pod's apiVersion (v1)");
    // kind, resourceVersion and fieldPath: ignored, as MatchObjectRef ignores them.
  }
  if (const json* c = member(o, "controller")) {
    const std::string f = at + ".controller";
    if (!c->is_object()) return invalid(ref, f, "must be an object");
    v.has_controller = true;
    for (auto [key, out] :
         {std::pair{"apiVersion", &v.api_version}, std::pair{"kind", &v.kind},
          std::pair{"name", &v.name}, std::pair{"uid", &v.uid}, std::pair{"namespace", &v.ns}}) {
      auto s = owner_string(*c, key, ref, f);
      if (!s) return tl::unexpected(s.error());
      *out = std::move(*s);
    }
    if (const json* flag = member(*c, "controller")) {
      if (!flag->is_boolean())
        return invalid(ref, f + ".controller", "must be a boolean, got " + flag->dump());
      v.controller_flag = flag->get<bool>() ? 1 : 0;
    }
    // blockOwnerDeletion: ignored, as MatchReservationControllerReference ignores it.
  }
  if (const json* sel = member(o, "labelSelector")) {
    const std::string f = at + ".labelSelector";
    if (!sel->is_object()) return invalid(ref, f, "must be an object");
    v.has_selector = true;
    // The record carries matchLabels only (colony.fbs ReservationOwner).
    if (const json* ex = member(*sel, "matchExpressions"); ex != nullptr) {
      if (!ex->is_array()) return invalid(ref, f + ".matchExpressions", "must be a list");
      if (!ex->empty())
        return invalid(ref, f + ".matchExpressions",
                       "not supported: Colony's reservation owners match labels only "
                       "(matchLabels)");
    }
    auto labels = string_map(member(*sel, "matchLabels"), ref, f + ".matchLabels");
    if (!labels) return tl::unexpected(labels.error());
    v.match_labels = std::move(*labels);
  }
  return v;
}

// The template's scheduling constraints Colony can honour: required node affinity made of
// `metadata.name NotIn [...]` fields only, as koord-descheduler writes it to keep a migration's
// reservation off the pod's node (pkg/descheduler/controllers/migration/reservation/util.go).
// Terms are ORed, so a node is excluded only when every term excludes it: the intersection.
// Anything that restricts placement further is refused: Colony would place the reservation
// where Koordinator could not.
result<std::vector<std::string>> read_not_in_nodes(const json& spec, const object_ref& ref) {
  const std::string at = "spec.template.spec";
  std::vector<std::string> out;
  if (const json* ns = member(spec, "nodeSelector"); ns != nullptr) {
    if (!ns->is_object()) return invalid(ref, at + ".nodeSelector", "must be a map of strings");
    if (!ns->empty())
      return invalid(ref, at + ".nodeSelector",
                     "not supported: Colony places a reservation by its resources and "
                     "template.spec.nodeName only");
  }
  const json* affinity = member(spec, "affinity");
  if (affinity == nullptr) return out;
  if (!affinity->is_object()) return invalid(ref, at + ".affinity", "must be an object");
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    const json* required =
        member(member(*affinity, kind), "requiredDuringSchedulingIgnoredDuringExecution");
    if (required != nullptr && (!required->is_array() || !required->empty()))
      return invalid(ref,
                     at + ".affinity." + kind + ".requiredDuringSchedulingIgnoredDuringExecution",
                     "not supported: Colony does not enforce inter-pod affinity for reservations");
  }
  const std::string rf =
      at + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  const json* required =
      member(member(*affinity, "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
  if (required == nullptr) return out;
  const json* terms = member(*required, "nodeSelectorTerms");
  if (terms == nullptr) return out;
  if (!terms->is_array()) return invalid(ref, rf + ".nodeSelectorTerms", "must be a list");
  std::optional<std::set<std::string>> excluded;
  for (std::size_t i = 0; i < terms->size(); ++i) {
    const std::string tf = rf + ".nodeSelectorTerms" + index(i);
    const json& term = (*terms)[i];
    if (!term.is_object()) return invalid(ref, tf, "must be an object");
    if (const json* ex = member(term, "matchExpressions");
        ex != nullptr && (!ex->is_array() || !ex->empty()))
      return invalid(ref, tf + ".matchExpressions",
                     "not supported: Colony enforces only matchFields metadata.name NotIn for a "
                     "reservation");
    const json* fields = member(term, "matchFields");
    if (fields == nullptr || !fields->is_array() || fields->empty())
      return invalid(ref, tf + ".matchFields",
                     "is required: Colony enforces only matchFields metadata.name NotIn for a "
                     "reservation");
    std::set<std::string> names;
    for (std::size_t j = 0; j < fields->size(); ++j) {
      const std::string ff = tf + ".matchFields" + index(j);
      const json& req = (*fields)[j];
      if (!req.is_object()) return invalid(ref, ff, "must be an object");
      auto key = string_member(&req, "key", ref, ff + ".key");
      if (!key) return tl::unexpected(key.error());
      auto op = string_member(&req, "operator", ref, ff + ".operator");
      if (!op) return tl::unexpected(op.error());
      if (*key != "metadata.name" || *op != "NotIn")
        return invalid(ref, ff,
                       "not supported: Colony enforces only matchFields metadata.name NotIn for "
                       "a reservation, not " +
                           quote_text(*key + " " + *op));
      const json* values = member(req, "values");
      if (values == nullptr || !values->is_array() || values->empty())
        return invalid(ref, ff + ".values", "must be a non-empty list for operator NotIn");
      for (std::size_t k = 0; k < values->size(); ++k) {
        if (!(*values)[k].is_string())
          return invalid(ref, ff + ".values" + index(k), "must be a string");
        names.insert((*values)[k].get<std::string>());  // requirements of a term are ANDed
      }
    }
    if (!excluded) {
      excluded = std::move(names);
    } else {
      std::set<std::string> both;
      std::set_intersection(excluded->begin(), excluded->end(), names.begin(), names.end(),
                            std::inserter(both, both.end()));
      excluded = std::move(both);
    }
  }
  if (excluded) out.assign(excluded->begin(), excluded->end());
  return out;
}

result<reservation_view> read_reservation(const json& o) {
  auto ref = read_ref(object_kind::reservation, o, false);
  if (!ref) return tl::unexpected(ref.error());
  reservation_view v;
  v.ref = *ref;
  if (!v.ref.ns.empty())
    return invalid(v.ref, "metadata.namespace", "must be empty: Reservation is cluster-scoped");
  const json* md = member(o, "metadata");
  auto uid = string_member(md, "uid", v.ref, "metadata.uid");
  if (!uid) return tl::unexpected(uid.error());
  if (uid->empty()) return invalid(v.ref, "metadata.uid", "is required");
  v.uid = std::move(*uid);
  auto labels = string_map(member(md, "labels"), v.ref, "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  v.labels = std::move(*labels);

  const json* spec = member(o, "spec");
  if (spec == nullptr || !spec->is_object()) return invalid(v.ref, "spec", "is required");
  // ValidateReservation: a template, owners, and an expiry.
  const json* tmpl = member(*spec, "template");
  if (tmpl == nullptr || !tmpl->is_object())
    return invalid(v.ref, "spec.template", "is required (the reservation misses the template)");
  const json* pod_spec = member(*tmpl, "spec");
  if (pod_spec == nullptr || !pod_spec->is_object())
    return invalid(v.ref, "spec.template.spec", "is required");
  // ReservationRequests: PodRequests of the template's spec.
  auto requests = pod_requests(*pod_spec, v.ref, "spec.template.spec");
  if (!requests) return tl::unexpected(requests.error());
  v.requests = split(*requests);
  for (auto [key, out] :
       {std::pair{"nodeName", &v.node_name}, std::pair{"schedulerName", &v.scheduler_name}}) {
    auto s = string_member(pod_spec, key, v.ref, std::string("spec.template.spec.") + key);
    if (!s) return tl::unexpected(s.error());
    *out = std::move(*s);
  }
  if (v.scheduler_name.empty()) v.scheduler_name = default_scheduler_name;
  // NewReservePod: the template's priority, else the reservation's koordinator.sh/priority label
  // (ParseInt base 10, 32 bits; a label that does not parse is ignored), else MaxInt32 so that
  // nothing preempts the reserve pod.
  if (const json* prio = member(*pod_spec, "priority"); prio != nullptr) {
    if (!prio->is_number_integer() ||
        prio->get<std::int64_t>() < std::numeric_limits<std::int32_t>::min() ||
        prio->get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
      return invalid(v.ref, "spec.template.spec.priority", prio->dump() + " is not an int32");
    v.priority = static_cast<std::int32_t>(prio->get<std::int64_t>());
  } else if (auto l = find_kv(v.labels, names::label_priority)) {
    // strconv.ParseInt accepts a leading '+', std::from_chars does not.
    std::string_view text = *l;
    if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
    std::int32_t p = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), p);
    if (!text.empty() && ec == std::errc{} && end == text.data() + text.size()) v.priority = p;
  }
  auto not_in = read_not_in_nodes(*pod_spec, v.ref);
  if (!not_in) return tl::unexpected(not_in.error());
  v.not_in_nodes = std::move(*not_in);

  const json* owners = member(*spec, "owners");
  if (owners != nullptr && !owners->is_array())
    return invalid(v.ref, "spec.owners", "must be a list");
  // No owners match no pod (MatchReservationOwners): Koordinator refuses such a reservation.
  if (owners == nullptr || owners->empty())
    return invalid(v.ref, "spec.owners", "is required (the reservation misses the owner spec)");
  for (std::size_t i = 0; i < owners->size(); ++i) {
    auto ow = read_owner((*owners)[i], v.ref, "spec.owners" + index(i));
    if (!ow) return tl::unexpected(ow.error());
    v.owners.push_back(std::move(*ow));
  }

  const json* ttl = member(*spec, "ttl");
  const json* expires = member(*spec, "expires");
  if (ttl != nullptr) {
    auto ms = parse_duration_ms(*ttl, v.ref, "spec.ttl");
    if (!ms) return tl::unexpected(ms.error());
    if (*ms < 0) return invalid(v.ref, "spec.ttl", ttl->dump() + " is negative");
    v.ttl_ms = *ms;
  } else if (expires != nullptr) {
    v.ttl_ms = 0;  // expires alone
  }
  if (expires != nullptr) {
    if (!expires->is_string())
      return invalid(v.ref, "spec.expires", "must be a string, got " + expires->dump());
    auto ms = parse_time_ms(expires->get<std::string>(), v.ref, "spec.expires");
    if (!ms) return tl::unexpected(ms.error());
    // isReservationNeedExpiration: a ttl of 0 disables expiration, expires included.
    v.expires_ms = ttl != nullptr && v.ttl_ms == 0 ? -1 : *ms;
  }
  if (const json* once = member(*spec, "allocateOnce"); once != nullptr) {
    if (!once->is_boolean())
      return invalid(v.ref, "spec.allocateOnce", "must be a boolean, got " + once->dump());
    v.allocate_once = once->get<bool>();
  }
  auto policy = string_member(spec, "allocatePolicy", v.ref, "spec.allocatePolicy");
  if (!policy) return tl::unexpected(policy.error());
  if (!policy->empty() && *policy != "Aligned" && *policy != "Restricted")
    return invalid(v.ref, "spec.allocatePolicy",
                   quote_text(*policy) + " is not Aligned, Restricted");
  v.allocate_policy = std::move(*policy);
  auto unschedulable = bool_member(spec, "unschedulable", v.ref, "spec.unschedulable");
  if (!unschedulable) return tl::unexpected(unschedulable.error());
  v.unschedulable = *unschedulable;
  // Not modelled by Colony's scheduler (docs/reservation.md "Not built yet"): refused rather
  // than placed as if they were absent.
  auto pre = bool_member(spec, "preAllocation", v.ref, "spec.preAllocation");
  if (!pre) return tl::unexpected(pre.error());
  if (*pre)
    return invalid(v.ref, "spec.preAllocation", "not supported: pre-allocation is not modelled");
  if (const json* taints = member(*spec, "taints");
      taints != nullptr && (!taints->is_array() || !taints->empty()))
    return invalid(v.ref, "spec.taints",
                   "not supported: reservation taints and tolerations are not modelled");
  return v;
}

// Colony's own Reservation coming back (the sink created it for a component's decision): the
// label says so, whatever else the object holds.
bool colony_created(const json& o) {
  const json* v = member(member(member(o, "metadata"), "labels"), managed_by_label);
  return v != nullptr && v->is_string() && v->get<std::string>() == managed_by_colony;
}

messages::byte_buffer reservation_upserted(const reservation_view& v, bool deleted, event_time t,
                                           const translate_options& opt) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  // Schema field order, one creating call per statement (docs/events.md).
  const auto name = b.key_string(v.ref.name);
  const auto uid = fbb.CreateString(v.uid);
  const auto requests = build_resources(b, v.requests);
  const auto node = fbb.CreateString(v.node_name);
  std::vector<flatbuffers::Offset<wire::ReservationOwner>> owners;
  owners.reserve(v.owners.size());
  for (const auto& o : v.owners) {
    const auto ouid = fbb.CreateString(o.object_uid);
    const auto oname = fbb.CreateString(o.object_name);
    const auto ons = fbb.CreateString(o.object_namespace);
    const auto cav = fbb.CreateString(o.api_version);
    const auto ckind = fbb.CreateString(o.kind);
    const auto cname = fbb.CreateString(o.name);
    const auto cuid = fbb.CreateString(o.uid);
    const auto cns = fbb.CreateString(o.ns);
    const auto ml = b.key_values(o.match_labels);
    owners.push_back(wire::CreateReservationOwner(fbb, o.has_object, ouid, oname, ons,
                                                  o.has_controller, cav, ckind, cname, cuid, cns,
                                                  o.controller_flag, o.has_selector, ml));
  }
  const auto owner_vec = fbb.CreateVector(owners);
  const auto policy = fbb.CreateString(v.allocate_policy);
  const auto labels = b.key_values(v.labels);
  const auto scheduler = fbb.CreateString(v.scheduler_name);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> not_in;
  if (!v.not_in_nodes.empty()) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> n;
    n.reserve(v.not_in_nodes.size());
    for (const auto& s : v.not_in_nodes) n.push_back(fbb.CreateString(s));
    not_in = fbb.CreateVector(n);
  }
  const auto payload = wire::CreateReservationUpserted(
      fbb, name, uid, requests, node, v.priority, owner_vec, v.ttl_ms, v.expires_ms,
      v.allocate_once, policy, v.unschedulable, labels, scheduler, deleted, not_in);
  return b.finish(header(t, wire::EntityKind::Reservation, v.ref.name, opt), payload);
}

}  // namespace

json reservation_projection(const json& o) {
  // What ReservationUpserted is made of: the uid, the labels (priority and order) and the spec.
  // The status is the scheduler's own write coming back (ReservationPhaseChanged is in the log).
  json p = json::object();
  const json* md = member(o, "metadata");
  for (const char* k : {"uid", "labels"}) {
    const json* v = member(md, k);
    p[k] = v != nullptr ? *v : json();
  }
  const json* spec = member(o, "spec");
  p["spec"] = spec != nullptr ? *spec : json();
  return p;
}

result<event_list> translate_reservation(const request& r) {
  const json& o = *r.object;
  event_list out;
  if (colony_created(o)) return out;
  auto v = read_reservation(o);
  if (r.what == op::deleted) {
    // The object is gone whatever its last version held, and the scheduler may hold an earlier
    // accepted one: the deletion is recorded with what can still be read of it.
    if (!v) {
      auto ref = read_ref(object_kind::reservation, o, false);
      const json* uid = member(member(o, "metadata"), "uid");
      if (!ref || uid == nullptr || !uid->is_string()) return tl::unexpected(v.error());
      reservation_view bare;
      bare.ref = *ref;
      bare.ref.ns.clear();
      bare.uid = uid->get<std::string>();
      out.push_back(reservation_upserted(bare, true, r.time, *r.options));
      return out;
    }
    out.push_back(reservation_upserted(*v, true, r.time, *r.options));
    return out;
  }
  if (!v) return tl::unexpected(v.error());
  out.push_back(reservation_upserted(*v, false, r.time, *r.options));
  return out;
}

}  // namespace colony::kube::translate_internal
