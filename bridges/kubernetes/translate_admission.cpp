// The Kubernetes side of the admission webhooks' questions and answers (admission_review.hpp):
// a review's pod or ElasticQuota as an observation event, a PodMutated as a JSONPatch.
#include <map>

#include "bridges/kubernetes/admission_review.hpp"
#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"

namespace colony::kube {

namespace {

using json = nlohmann::json;
using translate_internal::object_ref;
using kv_map = std::map<std::string, std::string, std::less<>>;

result<messages::byte_buffer> only_event(result<event_list> r, std::string_view what) {
  if (!r) return tl::unexpected(r.error());
  if (r->size() != 1)
    return fail(errc::invalid_input,
                std::string(what) + " gave " + std::to_string(r->size()) + " events, not one",
                "request.object");
  return std::move(r->front());
}

result<void> check_kind(const json& o, std::string_view kind) {
  if (!o.is_object())
    return fail(errc::invalid_input, "the object is not a " + std::string(kind), "request.object");
  const auto it = o.find("kind");
  if (it != o.end() && !(it->is_string() && *it == kind))
    return fail(errc::invalid_input,
                "the object is a " + (it->is_string() ? it->get<std::string>() : it->dump()) +
                    ", not a " + std::string(kind),
                "request.object.kind");
  return {};
}

kv_map to_map(const flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>* kvs) {
  kv_map m;
  if (kvs != nullptr)
    for (const auto* kv : *kvs)
      m.emplace(messages::to_string_view(kv->key()), messages::to_string_view(kv->value()));
  return m;
}

// RFC 6901: '~' is "~0" and '/' is "~1" in a reference token.
std::string token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

void diff_map(json& ops, const json& object, const char* parent, const char* member_name,
              const kv_map& before, const kv_map& after) {
  const json* md = translate_internal::member(object, parent);
  const json* raw = translate_internal::member(md, member_name);
  const std::string base = std::string("/") + parent + "/" + member_name;
  json added = json::object();
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    if (it == before.end() || it->second != v) added[k] = v;
  }
  if (raw == nullptr || !raw->is_object()) {
    if (!added.empty()) ops.push_back({{"op", "add"}, {"path", base}, {"value", added}});
    return;
  }
  for (const auto& [k, v] : added.items())
    ops.push_back({{"op", "add"}, {"path", base + "/" + token(k)}, {"value", v}});
  for (const auto& [k, v] : before)
    if (after.find(k) == after.end() && raw->contains(k))
      ops.push_back({{"op", "remove"}, {"path", base + "/" + token(k)}});
}

// resource.NewQuantity(v, BinarySI).String(): the largest power-of-1024 suffix that divides v.
std::string binary_si(std::int64_t v) {
  static constexpr const char* suffix[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (v == 0) return "0";
  int s = -1;
  while (s < 5 && v % 1024 == 0) {
    v /= 1024;
    ++s;
  }
  return std::to_string(v) + (s >= 0 ? suffix[s] : "");
}

std::int64_t batch_sum(const resource_list& r) { return r.batch_cpu_milli + r.batch_memory_bytes; }
std::int64_t mid_sum(const resource_list& r) { return r.mid_cpu_milli + r.mid_memory_bytes; }

// mutatePodResourceSpec for one container's resources; true when it changed.
result<bool> translate_resources(json& res, std::string_view ext_cpu, std::string_view ext_mem,
                                 const object_ref& ref, const std::string& field) {
  bool changed = false;
  for (const char* which : {"requests", "limits"}) {
    auto it = res.find(which);
    if (it == res.end() || !it->is_object()) continue;
    json& m = *it;
    for (auto [from, to] : {std::pair{names::cpu, ext_cpu}, std::pair{names::memory, ext_mem}}) {
      auto q = m.find(std::string(from));
      if (q == m.end()) continue;
      auto v = translate_internal::parse_amount(from, *q, ref,
                                                field + "." + which + "." + std::string(from));
      if (!v) return tl::unexpected(v.error());
      m.erase(q);
      m[std::string(to)] = from == names::cpu ? std::to_string(*v) : binary_si(*v);
      changed = true;
    }
  }
  // A missing extended request takes the extended limit (Koordinator's fill after the move).
  if (auto lim = res.find("limits"); lim != res.end() && lim->is_object()) {
    for (auto ext : {ext_cpu, ext_mem}) {
      const std::string key(ext);
      if (!lim->contains(key)) continue;
      json& req = res["requests"];
      if (!req.is_object()) req = json::object();
      if (!req.contains(key)) {
        req[key] = (*lim)[key];
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace

result<messages::byte_buffer> pod_submitted_of(const json& pod, const admission_request& req,
                                               event_time t) {
  if (auto k = check_kind(pod, "Pod"); !k) return tl::unexpected(k.error());
  json o = pod;
  json& md = o["metadata"];
  if (!md.is_object()) md = json::object();
  if (!md.contains("namespace") || md["namespace"] == "") md["namespace"] = req.name_space;
  if (!md.contains("name") || md["name"] == "") {
    // generateName: the apiserver names the pod after the mutating webhooks.
    const auto gn = md.find("generateName");
    md["name"] = (gn != md.end() && gn->is_string() ? gn->get<std::string>() : std::string()) +
                 "<generated>";
  }
  if (auto spec = o.find("spec"); spec != o.end() && spec->is_object()) spec->erase("nodeName");
  o.erase("status");
  translate_options opt;
  opt.scheduler_names.clear();  // every pod passes the webhooks, whatever its scheduler
  return only_event(translate_added(object_kind::pod, o, t, opt), "the pod");
}

result<messages::byte_buffer> quota_upserted_of(const json& quota, event_time t) {
  if (auto k = check_kind(quota, "ElasticQuota"); !k) return tl::unexpected(k.error());
  return only_event(translate_added(object_kind::elastic_quota, quota, t), "the ElasticQuota");
}

result<std::string> pod_json_patch(const json& pod, const wire::PodSubmitted& before,
                                   const wire::PodMutated& after) {
  using messages::to_string_view;
  json ops = json::array();
  diff_map(ops, pod, "metadata", "labels", to_map(before.labels()), to_map(after.labels()));
  diff_map(ops, pod, "metadata", "annotations", to_map(before.annotations()),
           to_map(after.annotations()));
  const auto sn = to_string_view(after.scheduler_name());
  if (!sn.empty() && sn != to_string_view(before.scheduler_name()))
    ops.push_back({{"op", "add"}, {"path", "/spec/schedulerName"}, {"value", sn}});
  const auto pcn = to_string_view(after.priority_class_name());
  const bool pcn_changed = !pcn.empty() && pcn != to_string_view(before.priority_class_name());
  if (pcn_changed)
    ops.push_back({{"op", "add"}, {"path", "/spec/priorityClassName"}, {"value", pcn}});
  // Koordinator sets spec.priority with the class (the apiserver's Priority plugin resolved
  // the old class before the webhooks ran). PodMutated's priority is otherwise the value with
  // Koordinator's default (GetPodPriorityValueWithDefault), not the pod's field: not patched.
  if (pcn_changed)
    ops.push_back({{"op", "add"}, {"path", "/spec/priority"}, {"value", after.priority()}});

  const auto bq = messages::to_resource_list(before.requests());
  const auto bl = messages::to_resource_list(before.limits());
  const auto aq = messages::to_resource_list(after.requests());
  const auto al = messages::to_resource_list(after.limits());
  std::string_view ext_cpu, ext_mem;
  if (batch_sum(aq) + batch_sum(al) > batch_sum(bq) + batch_sum(bl)) {
    ext_cpu = names::batch_cpu;
    ext_mem = names::batch_memory;
  } else if (mid_sum(aq) + mid_sum(al) > mid_sum(bq) + mid_sum(bl)) {
    ext_cpu = names::mid_cpu;
    ext_mem = names::mid_memory;
  }
  if (!ext_cpu.empty()) {
    object_ref ref;
    ref.kind = object_kind::pod;
    ref.name = std::string(to_string_view(before.name()));
    const json* spec = translate_internal::member(pod, "spec");
    for (const char* list : {"initContainers", "containers"}) {
      const json* cs = translate_internal::member(spec, list);
      if (cs == nullptr || !cs->is_array()) continue;
      for (std::size_t i = 0; i < cs->size(); ++i) {
        const json& c = (*cs)[i];
        const json* r0 = translate_internal::member(c, "resources");
        if (r0 == nullptr || !r0->is_object()) continue;
        json res = *r0;
        const std::string field = std::string("spec.") + list + "[" + std::to_string(i) + "]";
        auto changed = translate_resources(res, ext_cpu, ext_mem, ref, field + ".resources");
        if (!changed) return tl::unexpected(changed.error());
        if (*changed)
          ops.push_back(
              {{"op", "add"},
               {"path", std::string("/spec/") + list + "/" + std::to_string(i) + "/resources"},
               {"value", std::move(res)}});
      }
    }
  }
  return ops.dump();
}

}  // namespace colony::kube
