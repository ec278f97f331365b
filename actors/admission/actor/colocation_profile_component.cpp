#include "actors/admission/actor/colocation_profile_component.hpp"

#include <cstdio>
#include <optional>
#include <utility>

#include "actors/admission/profile_loader.hpp"

namespace colony::admission_actor {

namespace {

using messages::to_string_view;
namespace fb = flatbuffers;

std::string offset_where(const wire::Envelope& env) {
  return "log offset " + std::to_string(env.offset());
}

admission::kube_qos_class from_wire(wire::KubeQoSClass k) {
  switch (k) {
    case wire::KubeQoSClass::Guaranteed:
      return admission::kube_qos_class::guaranteed;
    case wire::KubeQoSClass::Burstable:
      return admission::kube_qos_class::burstable;
    case wire::KubeQoSClass::BestEffort:
      return admission::kube_qos_class::best_effort;
    default:
      return admission::kube_qos_class::unset;
  }
}

void read_map(const fb::Vector<fb::Offset<wire::KeyValue>>* kvs, admission::string_map& m) {
  if (kvs == nullptr) return;
  for (const auto* kv : *kvs)
    m.insert_or_assign(std::string(to_string_view(kv->key())),
                       std::string(to_string_view(kv->value())));
}

}  // namespace

colocation_profile_component::colocation_profile_component(admission::profile_set profiles,
                                                           colocation_profile_options opt)
    : profiles_(std::move(profiles)), opt_(std::move(opt)) {}

result<colocation_profile_component> colocation_profile_component::from_files(
    const std::vector<std::string>& profile_files,
    const std::vector<std::string>& priority_class_files, colocation_profile_options opt) {
  std::vector<admission::cluster_colocation_profile> all;
  for (const auto& f : profile_files) {
    auto ps = admission::load_profiles_yaml_file(f);
    if (!ps) return tl::unexpected(ps.error());
    for (auto& p : *ps) all.push_back(std::move(p));
  }
  auto set = admission::profile_set::make(std::move(all));
  if (!set) return tl::unexpected(set.error());
  for (const auto& f : priority_class_files) {
    std::string text;
    {
      // A tiny read so the loader's YAML parser names the file in its errors.
      std::FILE* fp = std::fopen(f.c_str(), "rb");
      if (fp == nullptr) return fail(errc::not_found, "cannot open PriorityClass file", f);
      char buf[4096];
      std::size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof buf, fp)) > 0) text.append(buf, n);
      std::fclose(fp);
    }
    auto t = admission::parse_priority_classes_yaml(text, f);
    if (!t) return tl::unexpected(t.error());
    for (auto& [k, v] : *t) opt.priority_classes.insert_or_assign(k, v);
  }
  return colocation_profile_component(std::move(*set), std::move(opt));
}

bool colocation_profile_component::wants(wire::Payload type) const {
  return type == wire::Payload::PodSubmitted || type == wire::Payload::ConfigUpdated;
}

void colocation_profile_component::on_event(const wire::Envelope& env,
                                            std::vector<messages::byte_buffer>& out) {
  switch (env.payload_type()) {
    case wire::Payload::ConfigUpdated:
      on_config(env, *env.payload_as_ConfigUpdated());
      break;
    case wire::Payload::PodSubmitted:
      on_submitted(env, *env.payload_as_PodSubmitted(), out);
      break;
    default:
      break;
  }
}

void colocation_profile_component::on_config(const wire::Envelope& env,
                                             const wire::ConfigUpdated& c) {
  const std::string_view kind = to_string_view(c.kind());
  const std::string where = offset_where(env);
  if (kind == config_kind_profile) {
    if (c.deleted()) {
      profiles_.erase(to_string_view(c.name()));
      return;
    }
    // YAML accepts JSON, so one parser serves both spellings. All or nothing: a bad
    // document changes no profile.
    auto ps = admission::parse_profiles_yaml(to_string_view(c.spec_json()), where);
    if (!ps) {
      config_errors_.push_back(ps.error());
      return;
    }
    for (auto& p : *ps) profiles_.upsert(std::move(p));
  } else if (kind == config_kind_priority_class) {
    if (c.deleted()) {
      auto it = opt_.priority_classes.find(to_string_view(c.name()));
      if (it != opt_.priority_classes.end()) opt_.priority_classes.erase(it);
      return;
    }
    auto t = admission::parse_priority_classes_yaml(to_string_view(c.spec_json()), where);
    if (!t) {
      config_errors_.push_back(t.error());
      return;
    }
    for (auto& [k, v] : *t) opt_.priority_classes.insert_or_assign(k, v);
  }
}

void colocation_profile_component::review(review_mode mode, const wire::Envelope& submitted,
                                          const wire::PodSubmitted* old,
                                          std::vector<messages::byte_buffer>& out) {
  if (submitted.payload_type() != wire::Payload::PodSubmitted) return;
  const auto& e = *submitted.payload_as_PodSubmitted();
  if (mode == review_mode::mutate_create) {
    on_submitted(submitted, e, out);
    return;
  }
  if (mode == review_mode::validate_update && old == nullptr) return;
  std::optional<admission::pod_spec> old_spec;
  if (mode == review_mode::validate_update) old_spec = pod_from_event(*old);
  const auto v = admission::validate_cluster_colocation_profile_pod(
      old_spec ? admission::admission_operation::update : admission::admission_operation::create,
      pod_from_event(e), old_spec ? &*old_spec : nullptr, opt_.validating);
  if (v.allowed()) return;
  messages::header h;
  h.time = event_time{submitted.event_time_ms()};
  h.kind = wire::EntityKind::Pod;
  const std::string_view key = to_string_view(e.name());
  h.key = key;
  h.causation = static_cast<std::int64_t>(submitted.offset());
  h.source = opt_.name;
  auto& fbb = b_.fbb();
  const auto n = fbb.CreateString(key);
  const auto r = fbb.CreateString(v.reason());
  const auto f = fbb.CreateString(v.errors.front().field);
  out.push_back(b_.finish(h, wire::CreatePodRejected(fbb, n, r, f)));
}

namespace {
std::vector<std::pair<std::string, std::int64_t>> extended_of(const wire::Resources* r) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  if (r != nullptr && r->extended() != nullptr)
    for (const auto* q : *r->extended())
      out.emplace_back(std::string(to_string_view(q->name())), q->value());
  return out;
}
}  // namespace

admission::pod_spec colocation_profile_component::pod_from_event(const wire::PodSubmitted& e) {
  admission::pod_spec spec;
  const std::string_view key = to_string_view(e.name());
  if (const auto slash = key.find('/'); slash != std::string_view::npos) {
    spec.pod_namespace = std::string(key.substr(0, slash));
    spec.name = std::string(key.substr(slash + 1));
  } else {
    spec.name = std::string(key);
  }
  spec.uid = std::string(to_string_view(e.uid()));
  read_map(e.labels(), spec.labels);
  read_map(e.annotations(), spec.annotations);
  if (e.has_priority()) spec.priority = e.priority();
  spec.priority_class_name = std::string(to_string_view(e.priority_class_name()));
  spec.scheduler_name = std::string(to_string_view(e.scheduler_name()));
  admission::container_spec c;
  c.name = "main";
  c.requests = messages::to_resource_list(e.requests());
  c.limits = messages::to_resource_list(e.limits());
  // The record's requests and limits hold spec.overhead (PodRequests, PodLimits): the container
  // gets them without it and the pod its overhead, so the profile translates each as Koordinator
  // does and get_pod_request adds it back once.
  if (e.overhead() != nullptr) {
    const resource_list oh = messages::to_resource_list(e.overhead());
    c.requests.zip(oh, [](std::int64_t& a, std::int64_t b) { a -= b; });
    c.limits.zip(oh, [](std::int64_t& a, std::int64_t b) {
      if (a != 0) a -= b;
    });
    spec.overhead = oh;
  }
  spec.containers.push_back(std::move(c));
  spec.status_qos_class = from_wire(e.kube_qos());
  return spec;
}

void colocation_profile_component::on_submitted(const wire::Envelope& env,
                                                const wire::PodSubmitted& e,
                                                std::vector<messages::byte_buffer>& out) {
  const admission::pod_spec spec = pod_from_event(e);
  const std::string_view key = to_string_view(e.name());
  messages::header h;
  h.time = event_time{env.event_time_ms()};
  h.kind = wire::EntityKind::Pod;
  h.key = key;
  h.causation = static_cast<std::int64_t>(env.offset());
  h.source = opt_.name;
  auto& fbb = b_.fbb();

  auto m = admission::mutate_pod_on_create(spec, profiles_, nullptr, opt_.priority_classes,
                                           opt_.mutating);
  last_decisions_.clear();
  std::string reason, field;
  if (!m) {
    reason = m.error().message;
    field = m.error().where;
  } else {
    last_decisions_ = m->matched;
    if (opt_.validate) {
      const auto v = admission::validate_cluster_colocation_profile_pod(
          admission::admission_operation::create, m->pod, nullptr, opt_.validating);
      if (!v.allowed()) {
        reason = v.reason();
        field = v.errors.front().field;
      }
    }
  }
  if (!m || !reason.empty()) {
    // Strings first, in a fixed order: argument evaluation order is unspecified in C++.
    const auto n = fbb.CreateString(key);
    const auto r = fbb.CreateString(reason);
    const auto f = fbb.CreateString(field);
    out.push_back(b_.finish(h, wire::CreatePodRejected(fbb, n, r, f)));
    return;
  }
  const std::vector<std::pair<std::string, std::string>> labels(m->pod.labels.begin(),
                                                                m->pod.labels.end());
  const std::vector<std::pair<std::string, std::string>> annos(m->pod.annotations.begin(),
                                                               m->pod.annotations.end());
  // The profile never touches extended resources the pod asks for (koordinator.sh/rdma, ...):
  // they pass through as submitted.
  const auto req = b_.resources(m->requests, extended_of(e.requests()));
  const auto lim = b_.resources(m->limits, extended_of(e.limits()));
  const auto lab = b_.key_values(labels);
  const auto ann = b_.key_values(annos);
  std::vector<fb::Offset<fb::String>> profs;
  profs.reserve(m->applied_profiles.size());
  for (const auto& s : m->applied_profiles) profs.push_back(fbb.CreateString(s));
  const auto prof_vec = fbb.CreateVector(profs);
  const auto n = b_.key_string(key);
  const auto pcn = fbb.CreateString(m->pod.priority_class_name);
  const auto sn = fbb.CreateString(m->pod.scheduler_name);
  fb::Offset<wire::Resources> oh;
  if (m->pod.overhead) oh = b_.resources(*m->pod.overhead);
  const auto payload =
      wire::CreatePodMutated(fbb, n, prof_vec, static_cast<wire::QoSClass>(m->koord_qos),
                             static_cast<wire::PriorityClass>(m->koord_priority_class), m->priority,
                             pcn, sn, req, lim, lab, ann, oh);
  out.push_back(b_.finish(h, payload));
}

}  // namespace colony::admission_actor
