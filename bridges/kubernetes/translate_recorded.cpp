// The recorded kinds (ElasticQuotaProfile, PodMigrationJob, PodGroup, Device) ->
// ObjectObserved (schema v4): no component reads them yet, so the object is kept as the
// apiserver holds it, for the components later issues add, `colony sim --from-log` and tools.
// Only what the record and its entity key need is checked, and a Device's spec as DeviceShare
// reads it; the rest is carried as is.
#include "actors/scheduler/device/device_topology.hpp"
#include "bridges/kubernetes/translate_internal.hpp"

namespace colony::kube::translate_internal {

namespace {

// Compact JSON of a member, "" when absent or null. nlohmann objects iterate sorted by key, so
// the same object gives the same text; bytes that are not UTF-8 (nlohmann's parser refuses
// them, a caller-built json may hold them) become U+FFFD instead of an exception.
std::string compact(const json* v) {
  if (v == nullptr) return {};
  return v->dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

json recorded_projection(const json& o) {
  // What ObjectObserved carries besides the name and resourceVersion: a MODIFIED that changes
  // none of it (managedFields, annotations, finalizers, generation, a deletionTimestamp) is no
  // news (docs/kubernetes-bridge.md "Which MODIFIEDs are news").
  json p = json::object();
  const json* md = member(o, "metadata");
  for (const char* k : {"uid", "labels"}) {
    const json* v = member(md, k);
    p[k] = v != nullptr ? *v : json();
  }
  for (const char* k : {"apiVersion", "spec", "status"}) {
    const json* v = member(o, k);
    p[k] = v != nullptr ? *v : json();
  }
  return p;
}

result<event_list> translate_recorded(object_kind kind, const request& r) {
  const auto info = recorded_kind(kind);
  if (!info) return fail(errc::internal, std::string(to_string(kind)) + " is not a recorded kind");
  const json& o = *r.object;
  auto ref = read_ref(kind, o, info->namespaced);
  if (!ref) return tl::unexpected(ref.error());
  const json* md = member(o, "metadata");
  // The entity key follows the CRD's scope; a cluster-scoped object the apiserver returns has
  // no namespace, so one that has is not what its CRD says.
  if (!info->namespaced && !ref->ns.empty())
    return invalid(*ref, "metadata.namespace",
                   "must be empty: " + std::string(to_string(kind)) + " is cluster-scoped");
  // The uid tells a re-created object from the one deleted under the same name; the
  // resourceVersion orders the versions of one object a reader finds in the log.
  auto uid = string_member(md, "uid", *ref, "metadata.uid");
  if (!uid) return tl::unexpected(uid.error());
  if (uid->empty()) return invalid(*ref, "metadata.uid", "is required");
  auto rv = string_member(md, "resourceVersion", *ref, "metadata.resourceVersion");
  if (!rv) return tl::unexpected(rv.error());
  if (rv->empty()) return invalid(*ref, "metadata.resourceVersion", "is required");
  // LIST items of a custom resource carry apiVersion and kind (watch events always do); the
  // kind must be the one the informer lists, the apiVersion is carried as the apiserver gave it.
  auto api_version = string_member(&o, "apiVersion", *ref, "apiVersion");
  if (!api_version) return tl::unexpected(api_version.error());
  if (api_version->empty()) *api_version = std::string(info->api_version);
  auto object_kind_name = string_member(&o, "kind", *ref, "kind");
  if (!object_kind_name) return tl::unexpected(object_kind_name.error());
  if (!object_kind_name->empty() && *object_kind_name != to_string(kind))
    return invalid(*ref, "kind",
                   quote_text(*object_kind_name) + " is not " + std::string(to_string(kind)));
  auto labels = string_map(member(md, "labels"), *ref, "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  const bool deleted = r.what == op::deleted;
  // A Device DeviceShare cannot read (pkg/scheduler/plugins/deviceshare: its topology, minors,
  // resources) is refused naming the field, not recorded: the scheduler reads recorded Devices.
  if (kind == object_kind::device && !deleted)
    if (auto d = scheduler::device::parse_device(o); !d)
      return invalid(*ref, d.error().where, d.error().message);
  const std::string spec = deleted ? std::string() : compact(member(o, "spec"));
  const std::string status = deleted ? std::string() : compact(member(o, "status"));
  const std::string key = recorded_key(kind, ref->ns, ref->name);

  messages::event_builder b;
  auto& fbb = b.fbb();
  // Schema field order, one creating call per statement (docs/events.md).
  const auto av = fbb.CreateString(*api_version);
  const auto k = fbb.CreateString(to_string(kind));
  const auto nsp = fbb.CreateString(ref->ns);
  const auto nm = fbb.CreateString(ref->name);
  const auto u = fbb.CreateString(*uid);
  const auto v = fbb.CreateString(*rv);
  const auto lab = b.key_values(*labels);
  const auto sp = fbb.CreateString(spec);
  const auto st = fbb.CreateString(status);
  const auto payload = wire::CreateObjectObserved(fbb, av, k, nsp, nm, u, v, lab, sp, st, deleted);
  event_list out;
  out.push_back(b.finish(header(r.time, wire::EntityKind::Object, key, *r.options), payload));
  return out;
}

}  // namespace colony::kube::translate_internal
