#include "actors/entities/binding.hpp"

#include <algorithm>
#include <string>

#include "actors/entities/component.hpp"
#include "messages/codec.hpp"

namespace colony::entities::binding {

using messages::to_string_view;

namespace {

messages::event_builder& tl_builder() {
  thread_local messages::event_builder b;
  return b;
}

std::vector<std::pair<std::int32_t, resource_list>> proposal_devices(
    const wire::PodBindProposed* p) {
  std::vector<std::pair<std::int32_t, resource_list>> out;
  if (p->devices() == nullptr) return out;
  for (const auto* d : *p->devices()) {
    if (d->type() != nullptr && d->type()->size() > 0) continue;  // not a GPU (schema v11)
    resource_list r;
    r.gpu_core = d->core();
    r.gpu_memory_bytes = d->memory_bytes();
    r.gpu_memory_ratio = d->memory_ratio();
    out.emplace_back(d->minor(), r);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// PodBindRejected answering the proposal `env`, written by `kind/key` as `source`.
buffer rejection(const wire::Envelope& env, std::string_view reason, wire::EntityKind kind,
                 std::string_view key, std::string_view source) {
  const auto* p = env.payload_as_PodBindProposed();
  auto& b = tl_builder();
  auto& fbb = b.fbb();
  const auto off = static_cast<std::int64_t>(env.offset());
  auto pod = fbb.CreateString(to_string_view(p->pod()));
  auto node = fbb.CreateString(to_string_view(p->node()));
  auto why = fbb.CreateString(reason);
  auto sched = fbb.CreateString(to_string_view(p->scheduler()));
  auto payload = wire::CreatePodBindRejected(fbb, pod, node, off, why, sched);
  return b.finish(messages::header{event_time{env.event_time_ms()}, kind, key, off, source},
                  payload);
}

buffer acceptance(const wire::Envelope& env, const resource_list& req,
                  std::span<const std::pair<std::int32_t, resource_list>> devs) {
  const auto* p = env.payload_as_PodBindProposed();
  auto& b = tl_builder();
  auto& fbb = b.fbb();
  const auto off = static_cast<std::int64_t>(env.offset());
  const auto node = to_string_view(p->node());
  auto pod = fbb.CreateString(to_string_view(p->pod()));
  auto nd = b.key_string(node);
  auto rq = b.resources(req);
  std::vector<flatbuffers::Offset<wire::DeviceAllocation>> dv;
  dv.reserve(devs.size());
  for (const auto& [minor, r] : devs)
    dv.push_back(wire::CreateDeviceAllocation(fbb, minor, r.gpu_core, r.gpu_memory_bytes, 0, 0, 0,
                                              0, r.gpu_memory_ratio));
  // Schema v11: the RDMA NICs / FPGAs (and VFs) DeviceShare proposed, as proposed.
  if (p->devices() != nullptr)
    for (const auto* d : *p->devices()) {
      if (d->type() == nullptr || d->type()->size() == 0) continue;
      auto type = fbb.CreateString(to_string_view(d->type()));
      auto vf = d->vf_bus_id() && d->vf_bus_id()->size() > 0
                    ? fbb.CreateString(to_string_view(d->vf_bus_id()))
                    : flatbuffers::Offset<flatbuffers::String>{};
      dv.push_back(wire::CreateDeviceAllocation(fbb, d->minor(), 0, 0, type, d->amount(), vf,
                                                d->vf_minor()));
    }
  auto dvv = fbb.CreateVector(dv);
  auto sched = fbb.CreateString(to_string_view(p->scheduler()));
  // Schema v7: only an owner of a Reservation carries it (other records keep their bytes).
  auto rsv = p->reservation() && p->reservation()->size() > 0
                 ? fbb.CreateString(to_string_view(p->reservation()))
                 : flatbuffers::Offset<flatbuffers::String>{};
  // Schema v10: the cpuset the scheduler proposed, as proposed.
  auto cpus = p->cpuset() && p->cpuset()->size() > 0 ? fbb.CreateString(to_string_view(p->cpuset()))
                                                     : flatbuffers::Offset<flatbuffers::String>{};
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::NumaNodeResource>>> numa;
  if (p->numa_resources() && p->numa_resources()->size() > 0) {
    std::vector<flatbuffers::Offset<wire::NumaNodeResource>> v;
    for (const auto* a : *p->numa_resources())
      v.push_back(wire::CreateNumaNodeResource(fbb, a->node(), a->cpu_milli(), a->memory_bytes()));
    numa = fbb.CreateVector(v);
  }
  auto payload = wire::CreatePodScheduled(fbb, pod, nd, off, rq, dvv, sched, rsv, cpus, numa);
  return b.finish(
      messages::header{event_time{env.event_time_ms()}, wire::EntityKind::Node, node, off, "node"},
      payload);
}

}  // namespace

bool pod_after_apply(const pod_state& s, pod_live& x, const wire::Envelope& env, bool arbitrate,
                     std::vector<buffer>* out) {
  using P = wire::Payload;
  switch (env.payload_type()) {
    case P::PodBindProposed: {
      if (!arbitrate) return false;
      std::string reason;
      if (s.name.empty())
        reason = "pod not submitted";
      else if (is_terminal(s.phase))
        reason = "pod is " + std::string(to_string(s.phase));
      else if (!s.node.empty() || s.phase != pod_phase::pending)
        reason = "pod already bound to " + s.node;
      else if (x.claim >= 0)
        reason = "pod has a proposal in flight (offset " + std::to_string(x.claim) + ")";
      if (!reason.empty()) {
        out->push_back(
            rejection(env, reason, wire::EntityKind::Pod, to_string_view(env.entity_key()), "pod"));
        return false;
      }
      x.claim = static_cast<std::int64_t>(env.offset());
      return true;
    }
    case P::PodScheduled:
      if (to_string_view(env.payload_as_PodScheduled()->pod()) == s.name) x.claim = -1;
      return false;
    case P::PodBindRejected:
      if (env.payload_as_PodBindRejected()->proposal_offset() == x.claim) x.claim = -1;
      return false;
    default:
      return false;
  }
}

void node_after_apply(node_live& x, const wire::Envelope& env) {
  if (env.payload_type() != wire::Payload::PodScheduled || x.reserved.empty()) return;
  const auto pod = to_string_view(env.payload_as_PodScheduled()->pod());
  auto& r = x.reserved;
  r.erase(std::remove_if(r.begin(), r.end(), [&](const pod_on_node& p) { return p.pod == pod; }),
          r.end());
}

buffer node_arbitrate(const node_state& s, node_live& x, const wire::Envelope& env) {
  const auto* p = env.payload_as_PodBindProposed();
  const auto pod = to_string_view(p->pod());
  const resource_list req = messages::to_resource_list(p->requests());
  auto devs = proposal_devices(p);
  const auto reservation = to_string_view(p->reservation());
  const auto verdict = arbitrate(s, x.reserved, pod, req, devs, reservation);
  if (!verdict.accepted)
    return rejection(env, verdict.reason, wire::EntityKind::Node, to_string_view(p->node()),
                     "node");
  auto answer = acceptance(env, req, devs);
  x.reserved.push_back(
      pod_on_node{std::string(pod), req, std::move(devs), std::string(reservation)});
  return answer;
}

std::string_view proposed_node(const wire::Envelope& env) {
  return to_string_view(env.payload_as_PodBindProposed()->node());
}

void run_component(component& c, const record_batch& b, std::vector<buffer>& out) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto& env = b.envelope(i);
    if (c.wants(env.payload_type())) c.on_event(env, out);
  }
  c.on_batch_end(out);
}

std::optional<std::int64_t> component_wakeup(const component& c) { return c.next_wakeup_ms(); }

void wake_component(component& c, std::int64_t t, std::vector<buffer>& out) {
  const auto w = c.next_wakeup_ms();
  if (w && *w <= t) c.on_wakeup(t, out);
}

std::optional<std::string> component_node(const component& c) {
  if (c.scope() != component_scope::node) return std::nullopt;
  return std::string(c.scope_node());
}

void delete_component(component* c) { delete c; }

}  // namespace colony::entities::binding
