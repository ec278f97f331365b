#include "actors/entities/entities.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include <xxhash.h>
#include <nlohmann/json.hpp>

#include "messages/aligned.hpp"
#include "messages/codec.hpp"
#include "messages/quantity.hpp"
#include "state_generated.h"

namespace colony::entities {

using messages::to_resource_list;
using messages::to_string_view;

std::string_view to_string(pod_phase p) {
  switch (p) {
    case pod_phase::pending:
      return "Pending";
    case pod_phase::scheduled:
      return "Scheduled";
    case pod_phase::running:
      return "Running";
    case pod_phase::succeeded:
      return "Succeeded";
    case pod_phase::failed:
      return "Failed";
    case pod_phase::evicted:
      return "Evicted";
    case pod_phase::rejected:
      return "Rejected";
    case pod_phase::deleted:
      return "Deleted";
  }
  return "Unknown";
}

bool is_terminal(pod_phase p) {
  return p == pod_phase::succeeded || p == pod_phase::failed || p == pod_phase::evicted ||
         p == pod_phase::rejected || p == pod_phase::deleted;
}

resource_list node_reservation::held() const {
  resource_list r = allocatable;
  r.zip(allocated, [](std::int64_t& a, std::int64_t b) { a = std::max<std::int64_t>(0, a - b); });
  r.pods = 1;  // the reserve pod's slot
  return r;
}

resource_list node_state::effective_allocatable() const {
  resource_list r = allocatable;
  r.batch_cpu_milli = colocation.batch_cpu_milli;
  r.batch_memory_bytes = colocation.batch_memory_bytes;
  r.mid_cpu_milli = colocation.mid_cpu_milli;
  r.mid_memory_bytes = colocation.mid_memory_bytes;
  return r;
}

namespace {

std::string str(const flatbuffers::String* s) { return std::string(to_string_view(s)); }

std::vector<std::pair<std::int32_t, resource_list>> devices_of(
    const flatbuffers::Vector<flatbuffers::Offset<wire::DeviceAllocation>>* v) {
  std::vector<std::pair<std::int32_t, resource_list>> out;
  if (v == nullptr) return out;
  for (const auto* d : *v) {
    // Schema v11: an RDMA NIC or FPGA is DeviceShare's alone to account (the node's Device
    // object); the node arbitrates GPU shares only.
    if (d->type() != nullptr && d->type()->size() > 0) continue;
    resource_list r;
    r.gpu_core = d->core();
    r.gpu_memory_bytes = d->memory_bytes();
    r.gpu_memory_ratio = d->memory_ratio();
    out.emplace_back(d->minor(), r);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// The GPUs of a Device object's spec (scheduling.koordinator.sh/v1alpha1 DeviceSpec): minor,
// gpu-core and gpu-memory of each healthy type-gpu entry, sorted by minor; nullopt when the spec
// does not parse.
std::optional<std::vector<gpu_state>> gpus_of_device(std::string_view spec_json) {
  const auto spec = nlohmann::json::parse(spec_json, nullptr, false);
  if (!spec.is_object() || !spec.contains("devices") || !spec["devices"].is_array())
    return std::nullopt;
  auto amount = [](const nlohmann::json& res,
                   std::string_view name) -> std::optional<std::int64_t> {
    auto it = res.find(name);
    if (it == res.end()) return std::int64_t{0};
    if (it->is_number_integer()) return it->get<std::int64_t>();
    if (!it->is_string()) return std::nullopt;
    auto v = k8s::parse_quantity_value(it->get<std::string>());
    return v ? std::optional<std::int64_t>(*v) : std::nullopt;
  };
  std::vector<gpu_state> out;
  for (const auto& d : spec["devices"]) {
    if (!d.is_object() || d.value("type", std::string()) != "gpu") continue;
    if (!d.contains("minor") || !d["minor"].is_number_integer()) return std::nullopt;
    gpu_state g;
    g.minor = d["minor"].get<std::int32_t>();
    const nlohmann::json res = d.value("resources", nlohmann::json::object());
    if (!res.is_object()) return std::nullopt;
    auto core = amount(res, "koordinator.sh/gpu-core");
    auto memory = amount(res, "koordinator.sh/gpu-memory");
    if (!core || !memory) return std::nullopt;
    const bool healthy = d.value("health", false);
    g.core = healthy ? *core : 0;
    g.memory_bytes = healthy ? *memory : 0;
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(),
            [](const gpu_state& a, const gpu_state& b) { return a.minor < b.minor; });
  return out;
}

gpu_state* find_gpu(node_state& s, std::int32_t minor) {
  auto it = std::lower_bound(s.gpus.begin(), s.gpus.end(), minor,
                             [](const gpu_state& g, std::int32_t m) { return g.minor < m; });
  return it != s.gpus.end() && it->minor == minor ? &*it : nullptr;
}

// Where `name` is or would go in a node's reservations (sorted by name).
std::vector<node_reservation>::iterator reservation_slot(std::vector<node_reservation>& v,
                                                         std::string_view name) {
  return std::lower_bound(
      v.begin(), v.end(), name,
      [](const node_reservation& r, std::string_view k) { return std::string_view(r.name) < k; });
}

// The Available reservation `name` of a node, or nullptr.
const node_reservation* find_reservation(const std::vector<node_reservation>& v,
                                         std::string_view name) {
  auto it = std::lower_bound(
      v.begin(), v.end(), name,
      [](const node_reservation& r, std::string_view k) { return std::string_view(r.name) < k; });
  return !name.empty() && it != v.end() && it->name == name ? &*it : nullptr;
}
node_reservation* find_reservation(std::vector<node_reservation>& v, std::string_view name) {
  return const_cast<node_reservation*>(
      find_reservation(static_cast<const std::vector<node_reservation>&>(v), name));
}

// An owner's request moves into or out of a reservation: the node's allocated follows what the
// reservation holds (sign +1: the owner binds, -1: it leaves).
void owner_moves(node_state& s, node_reservation& r, const resource_list& req, int sign) {
  const resource_list before = r.held();
  resource_list q = req;
  q.pods = 0;
  if (sign > 0)
    r.allocated += q;
  else
    r.allocated -= q;
  s.allocated -= before;
  s.allocated += r.held();
}

void bind_on_node(node_state& s, std::string_view pod, const resource_list& req,
                  std::vector<std::pair<std::int32_t, resource_list>> devices,
                  std::string_view reservation = {}) {
  auto it = std::lower_bound(s.pods.begin(), s.pods.end(), pod,
                             [](const pod_on_node& p, std::string_view k) { return p.pod < k; });
  if (it != s.pods.end() && it->pod == pod) return;  // already bound: idempotent
  s.allocated += req;
  node_reservation* r = find_reservation(s.reservations, reservation);
  if (r != nullptr) owner_moves(s, *r, req, +1);
  for (const auto& [minor, r] : devices) {
    if (auto* g = find_gpu(s, minor)) {
      g->core_used += r.gpu_core;
      g->memory_used += r.gpu_memory_bytes;
    }
  }
  s.pods.insert(it, pod_on_node{std::string(pod), req, std::move(devices),
                                r != nullptr ? std::string(reservation) : std::string()});
}

void release_on_node(node_state& s, std::string_view pod) {
  auto it = std::lower_bound(s.pods.begin(), s.pods.end(), pod,
                             [](const pod_on_node& p, std::string_view k) { return p.pod < k; });
  if (it == s.pods.end() || it->pod != pod) return;
  s.allocated -= it->requests;
  // An owner leaving a reservation still Available gives its share back to the reservation.
  if (node_reservation* r = find_reservation(s.reservations, it->reservation))
    owner_moves(s, *r, it->requests, -1);
  for (const auto& [minor, r] : it->devices) {
    if (auto* g = find_gpu(s, minor)) {
      g->core_used -= r.gpu_core;
      g->memory_used -= r.gpu_memory_bytes;
    }
  }
  s.pods.erase(it);
}

}  // namespace

bind_decision arbitrate(const node_state& node, std::string_view pod, const resource_list& requests,
                        std::span<const std::pair<std::int32_t, resource_list>> devices) {
  return arbitrate(node, {}, pod, requests, devices);
}

bind_decision arbitrate(const node_state& node, std::span<const pod_on_node> reserved,
                        std::string_view pod, const resource_list& requests,
                        std::span<const std::pair<std::int32_t, resource_list>> devices,
                        std::string_view reservation) {
  if (node.removed) return {false, "node removed"};
  if (!node.ready) return {false, "node not ready"};
  if (node.unschedulable) return {false, "node unschedulable"};
  for (const auto& p : node.pods)
    if (p.pod == pod) return {false, "pod already bound to this node"};
  for (const auto& p : reserved)
    if (p.pod == pod) return {false, "pod already bound to this node"};
  const resource_list cap = node.effective_allocatable();
  resource_list allocated = node.allocated;
  for (const auto& p : reserved) allocated += p.requests;
  // The owner of an Available reservation here may use what it holds (the scheduler's
  // Reservation plugin fitted it so); in-flight owners of the same one already took their part.
  if (const auto* held = find_reservation(node.reservations, reservation)) {
    node_reservation r = *held;
    for (const auto& p : reserved)
      if (p.reservation == reservation) r.allocated += p.requests;
    allocated -= r.held();
  }
  struct field {
    const char* name;
    std::int64_t resource_list::*member;
  };
  static constexpr field fields[] = {
      {"cpu", &resource_list::cpu_milli},
      {"memory", &resource_list::memory_bytes},
      {"kubernetes.io/batch-cpu", &resource_list::batch_cpu_milli},
      {"kubernetes.io/batch-memory", &resource_list::batch_memory_bytes},
      {"kubernetes.io/mid-cpu", &resource_list::mid_cpu_milli},
      {"kubernetes.io/mid-memory", &resource_list::mid_memory_bytes},
      {"gpu", &resource_list::gpu},
      {"pods", &resource_list::pods},
  };
  for (const auto& f : fields) {
    const std::int64_t want = requests.*f.member;
    if (want <= 0) continue;
    const std::int64_t free = cap.*f.member - allocated.*f.member;
    if (want > free)
      return {false, "Insufficient " + std::string(f.name) + ": " + std::to_string(free) +
                         " free, " + std::to_string(want) + " asked"};
  }
  for (const auto& [minor, r] : devices) {
    const gpu_state* g = nullptr;
    for (const auto& x : node.gpus)
      if (x.minor == minor) g = &x;
    if (g == nullptr) return {false, "no GPU with minor " + std::to_string(minor)};
    std::int64_t core_used = g->core_used, memory_used = g->memory_used;
    for (const auto& p : reserved)
      for (const auto& [m, rr] : p.devices)
        if (m == minor) {
          core_used += rr.gpu_core;
          memory_used += rr.gpu_memory_bytes;
        }
    if (core_used + r.gpu_core > g->core ||
        (g->memory_bytes > 0 && memory_used + r.gpu_memory_bytes > g->memory_bytes))
      return {false, "GPU " + std::to_string(minor) + " has not enough free core or memory"};
  }
  return {true, {}};
}

void apply(node_state& s, const wire::Envelope& env) {
  using P = wire::Payload;
  switch (env.payload_type()) {
    case P::NodeRegistered: {
      const auto* e = env.payload_as_NodeRegistered();
      if (s.name.empty()) s.registered_ms = env.event_time_ms();
      s.name = str(e->name());
      s.capacity = to_resource_list(e->capacity());
      s.allocatable = e->allocatable() ? to_resource_list(e->allocatable()) : s.capacity;
      s.ready = true;
      s.removed = false;
      s.unschedulable = e->unschedulable();
      if (e->gpus()) {
        std::vector<gpu_state> gpus;
        for (const auto* g : *e->gpus()) {
          gpu_state n;
          n.minor = g->minor();
          n.model = str(g->model());
          n.core = g->core();
          n.memory_bytes = g->memory_bytes();
          if (const auto* old = find_gpu(s, n.minor)) {
            n.core_used = old->core_used;
            n.memory_used = old->memory_used;
          }
          gpus.push_back(std::move(n));
        }
        std::sort(gpus.begin(), gpus.end(),
                  [](const gpu_state& a, const gpu_state& b) { return a.minor < b.minor; });
        s.gpus = std::move(gpus);
      }
      break;
    }
    case P::NodeConditionChanged: {
      const auto* e = env.payload_as_NodeConditionChanged();
      s.ready = e->ready();
      s.unschedulable = e->unschedulable();
      break;
    }
    case P::NodeRemoved:
      s.removed = true;
      s.ready = false;
      break;
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      if (to_string_view(e->node()) == s.name)
        bind_on_node(s, to_string_view(e->pod()), to_resource_list(e->requests()),
                     devices_of(e->devices()), to_string_view(e->reservation()));
      break;
    }
    case P::ReservationPhaseChanged: {
      const auto* e = env.payload_as_ReservationPhaseChanged();
      if (to_string_view(e->node()) != s.name) break;
      const std::string_view name = to_string_view(e->name());
      auto it = reservation_slot(s.reservations, name);
      const bool held = it != s.reservations.end() && it->name == name;
      if (held) {  // any phase change ends the hold it had (Available again re-adds it)
        s.allocated -= it->held();
        for (auto& p : s.pods)
          if (p.reservation == name) p.reservation.clear();
        it = s.reservations.erase(it);
      }
      if (to_string_view(e->phase()) == "Available") {
        node_reservation r{std::string(name), to_resource_list(e->allocatable()), {}};
        r.allocatable.pods = 0;
        s.allocated += r.held();
        s.reservations.insert(it, std::move(r));
      }
      break;
    }
    case P::PodBindRejected:
      if (to_string_view(env.payload_as_PodBindRejected()->node()) == s.name) ++s.rejected_binds;
      break;
    case P::PodEvicted: {
      const auto* e = env.payload_as_PodEvicted();
      if (to_string_view(e->node()) == s.name) release_on_node(s, to_string_view(e->pod()));
      break;
    }
    case P::PodFinished: {
      const auto* e = env.payload_as_PodFinished();
      if (to_string_view(e->node()) == s.name) release_on_node(s, to_string_view(e->pod()));
      break;
    }
    case P::NodeMetricReported: {
      const auto* e = env.payload_as_NodeMetricReported();
      s.usage = to_resource_list(e->node_usage());
      s.metric_time_ms = e->update_time_ms();
      break;
    }
    case P::NodeBatchResourceUpdated: {
      const auto* e = env.payload_as_NodeBatchResourceUpdated();
      s.colocation = {};
      s.colocation.batch_cpu_milli = e->batch_cpu_milli();
      s.colocation.batch_memory_bytes = e->batch_memory_bytes();
      s.colocation.mid_cpu_milli = e->mid_cpu_milli();
      s.colocation.mid_memory_bytes = e->mid_memory_bytes();
      break;
    }
    case P::BeSuppressed:
      s.be_cpu_milli = env.payload_as_BeSuppressed()->be_cpu_milli();
      break;
    case P::ObjectObserved: {
      // The node's Device object (routed here by name): its GPUs are the node's, as Koordinator's
      // device cache reads them (an unhealthy GPU offers nothing). One that does not parse
      // changes nothing here; the scheduler names its error.
      const auto* e = env.payload_as_ObjectObserved();
      if (str(e->kind()) != "Device") break;
      if (e->deleted()) {
        s.gpus.clear();
        break;
      }
      if (auto gpus = gpus_of_device(str(e->spec_json()))) {
        for (auto& g : *gpus)
          if (const auto* old = find_gpu(s, g.minor)) {
            g.model = old->model;
            g.core_used = old->core_used;
            g.memory_used = old->memory_used;
          }
        s.gpus = std::move(*gpus);
      }
      break;
    }
    default:
      break;
  }
}

void apply(pod_state& s, const wire::Envelope& env) {
  using P = wire::Payload;
  const std::int64_t t = env.event_time_ms();
  switch (env.payload_type()) {
    case P::PodSubmitted: {
      const auto* e = env.payload_as_PodSubmitted();
      s.name = str(e->name());
      s.requests = to_resource_list(e->requests());
      s.priority = e->priority();
      s.submitted_ms = t;
      s.phase = pod_phase::pending;
      break;
    }
    case P::PodMutated: {
      const auto* e = env.payload_as_PodMutated();
      s.qos = e->qos_class();
      s.priority_class = e->priority_class();
      s.priority = e->priority();
      if (e->requests()) s.requests = to_resource_list(e->requests());
      break;
    }
    case P::PodRejected:
      s.phase = pod_phase::rejected;
      s.finished_ms = t;
      s.last_reason = str(env.payload_as_PodRejected()->reason());
      break;
    case P::PodBindProposed: {
      const auto* e = env.payload_as_PodBindProposed();
      ++s.attempts;
      if (e->quota()) s.quota = str(e->quota());
      break;
    }
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      if (to_string_view(e->pod()) != s.name) break;
      s.node = str(e->node());
      s.scheduled_ms = t;
      if (e->requests()) s.requests = to_resource_list(e->requests());
      if (s.phase == pod_phase::pending) s.phase = pod_phase::scheduled;
      break;
    }
    case P::PodBindRejected: {
      const auto* e = env.payload_as_PodBindRejected();
      if (to_string_view(e->pod()) != s.name) break;
      ++s.bind_rejections;
      s.last_reason = str(e->reason());
      break;
    }
    case P::PodUnschedulable: {
      const auto* e = env.payload_as_PodUnschedulable();
      ++s.attempts;
      s.last_reason.clear();
      if (e->reasons() && e->reasons()->size() > 0) {
        const auto* r = e->reasons()->Get(0);
        s.last_reason = str(r->plugin()) + ": " + str(r->reason());
      }
      break;
    }
    case P::PodStarted:
      if (s.phase == pod_phase::scheduled || s.phase == pod_phase::pending) {
        s.phase = pod_phase::running;
        s.started_ms = t;
      }
      break;
    case P::PodUsageSampled: {
      auto u = to_resource_list(env.payload_as_PodUsageSampled()->usage());
      s.usage_cpu_milli = u.cpu_milli;
      s.usage_memory_bytes = u.memory_bytes;
      break;
    }
    case P::PodEvicted: {
      const auto* e = env.payload_as_PodEvicted();
      s.phase = pod_phase::evicted;
      s.eviction_reason = e->reason();
      s.last_reason = str(e->message());
      s.finished_ms = t;
      break;
    }
    case P::PodFinished: {
      const auto* e = env.payload_as_PodFinished();
      if (is_terminal(s.phase)) break;
      switch (e->phase()) {
        case wire::PodPhase::Succeeded:
          s.phase = pod_phase::succeeded;
          break;
        case wire::PodPhase::Failed:
          s.phase = pod_phase::failed;
          break;
        default:
          s.phase = pod_phase::deleted;
          break;
      }
      s.finished_ms = t;
      break;
    }
    default:
      break;
  }
}

void apply(quota_state& s, const wire::Envelope& env) {
  using P = wire::Payload;
  switch (env.payload_type()) {
    case P::QuotaUpserted: {
      const auto* e = env.payload_as_QuotaUpserted();
      s.name = str(e->name());
      s.parent = str(e->parent());
      s.tree_id = str(e->tree_id());
      s.is_parent = e->is_parent();
      s.allow_lent_resource = e->allow_lent_resource();
      s.min = to_resource_list(e->min());
      s.max = to_resource_list(e->max());
      s.shared_weight = to_resource_list(e->shared_weight());
      s.deleted = false;
      break;
    }
    case P::QuotaDeleted:
      s.deleted = true;
      break;
    case P::QuotaRuntimeUpdated: {
      const auto* e = env.payload_as_QuotaRuntimeUpdated();
      s.runtime = to_resource_list(e->runtime());
      s.used = to_resource_list(e->used());
      s.request = to_resource_list(e->request());
      break;
    }
    default:
      break;
  }
}

void apply(reservation_state& s, const wire::Envelope& env) {
  using P = wire::Payload;
  const std::int64_t t = env.event_time_ms();
  switch (env.payload_type()) {
    case P::ReservationUpserted: {
      const auto* e = env.payload_as_ReservationUpserted();
      if (s.name.empty()) {
        s.created_ms = t;
        s.phase = "Pending";
      }
      s.name = str(e->name());
      s.uid = str(e->uid());
      s.requests = to_resource_list(e->requests());
      s.ttl_ms = e->ttl_ms();
      s.expires_ms = e->expires_ms();
      s.allocate_once = e->allocate_once();
      s.deleted = e->deleted();
      s.updated_ms = t;
      break;
    }
    case P::ReservationPhaseChanged: {
      const auto* e = env.payload_as_ReservationPhaseChanged();
      if (s.name.empty()) s.name = str(e->name());
      s.phase = str(e->phase());
      s.reason = str(e->reason());
      if (e->node() && e->node()->size() > 0) s.node = str(e->node());
      if (e->owner() && e->owner()->size() > 0) s.owner = str(e->owner());
      s.updated_ms = t;
      break;
    }
    default:
      break;
  }
}

void apply(job_state& s, const wire::Envelope& env) {
  using P = wire::Payload;
  switch (env.payload_type()) {
    case P::MigrationJobCreated: {
      const auto* e = env.payload_as_MigrationJobCreated();
      s.name = str(e->name());
      s.pod = str(e->pod());
      s.mode = str(e->mode());
      s.reason = str(e->reason());
      s.phase = "Pending";
      s.created_ms = s.updated_ms = env.event_time_ms();
      break;
    }
    case P::MigrationJobPhaseChanged: {
      const auto* e = env.payload_as_MigrationJobPhaseChanged();
      s.phase = str(e->phase());
      s.reason = str(e->reason());
      s.updated_ms = env.event_time_ms();
      break;
    }
    default:
      break;
  }
}

void apply(object_state& s, const wire::Envelope& env) {
  if (env.payload_type() != wire::Payload::ObjectObserved) return;
  // Each record is the whole object (or its deletion): the state is the latest one.
  const auto* e = env.payload_as_ObjectObserved();
  s.api_version = str(e->api_version());
  s.kind = str(e->kind());
  s.ns = str(e->namespace_());
  s.name = str(e->name());
  s.uid = str(e->uid());
  s.resource_version = str(e->resource_version());
  s.labels.clear();
  if (e->labels() != nullptr)
    for (const auto* kv : *e->labels()) s.labels.emplace_back(str(kv->key()), str(kv->value()));
  s.spec_json = str(e->spec_json());
  s.status_json = str(e->status_json());
  s.deleted = e->deleted();
  s.updated_ms = env.event_time_ms();
}

// ---- canonical encoding ----------------------------------------------------------

namespace {

using fbb_t = flatbuffers::FlatBufferBuilder;

flatbuffers::Offset<wire::Resources> res(fbb_t& b, const resource_list& r) {
  wire::ResourcesBuilder rb(b);
  rb.add_cpu_milli(r.cpu_milli);
  rb.add_memory_bytes(r.memory_bytes);
  rb.add_batch_cpu_milli(r.batch_cpu_milli);
  rb.add_batch_memory_bytes(r.batch_memory_bytes);
  rb.add_mid_cpu_milli(r.mid_cpu_milli);
  rb.add_mid_memory_bytes(r.mid_memory_bytes);
  rb.add_gpu(r.gpu);
  rb.add_gpu_core(r.gpu_core);
  rb.add_gpu_memory_bytes(r.gpu_memory_bytes);
  rb.add_gpu_memory_ratio(r.gpu_memory_ratio);
  rb.add_pods(r.pods);
  return rb.Finish();
}

std::string finish(fbb_t& b) {
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

fbb_t& builder() {
  thread_local fbb_t b(512);
  b.Clear();
  return b;
}

// Snapshot bytes come straight from RocksDB at any address: realigned into scratch (which
// must outlive the returned table) before FlatBuffers reads them in place.
template <class T>
result<const T*> verified(std::string_view bytes, const char* what,
                          messages::aligned_byte_buffer& scratch) {
  const auto view = messages::realign(
      {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, scratch);
  flatbuffers::Verifier v(view.data(), view.size());
  if (!v.VerifyBuffer<T>(nullptr))
    return fail(errc::corrupt, std::string("snapshot state of a ") + what + " failed verification");
  return flatbuffers::GetRoot<T>(view.data());
}

}  // namespace

std::string encode(const node_state& s) {
  auto& b = builder();
  std::vector<flatbuffers::Offset<state::PodOnNode>> pods;
  pods.reserve(s.pods.size());
  for (const auto& p : s.pods) {
    std::vector<flatbuffers::Offset<wire::DeviceAllocation>> devs;
    for (const auto& [minor, r] : p.devices)
      devs.push_back(wire::CreateDeviceAllocation(b, minor, r.gpu_core, r.gpu_memory_bytes, 0, 0, 0,
                                                  0, r.gpu_memory_ratio));
    auto name = b.CreateString(p.pod);
    auto req = res(b, p.requests);
    auto dv = b.CreateVector(devs);
    // Left out when empty, so a node without reservations keeps the bytes (and digest) it had.
    auto rv = p.reservation.empty() ? flatbuffers::Offset<flatbuffers::String>{}
                                    : b.CreateString(p.reservation);
    pods.push_back(state::CreatePodOnNode(b, name, req, dv, rv));
  }
  std::vector<flatbuffers::Offset<state::NodeReservation>> rsv;
  for (const auto& r : s.reservations) {
    auto n = b.CreateString(r.name);
    auto a = res(b, r.allocatable);
    auto u = res(b, r.allocated);
    rsv.push_back(state::CreateNodeReservation(b, n, a, u));
  }
  std::vector<flatbuffers::Offset<state::GpuState>> gpus;
  for (const auto& g : s.gpus)
    gpus.push_back(state::CreateGpuStateDirect(b, g.minor, g.model.c_str(), g.core, g.memory_bytes,
                                               g.core_used, g.memory_used));
  auto name = b.CreateString(s.name);
  auto cap = res(b, s.capacity);
  auto alloc = res(b, s.allocatable);
  auto used = res(b, s.allocated);
  auto colo = res(b, s.colocation);
  auto usage = res(b, s.usage);
  auto pv = b.CreateVector(pods);
  auto gv = b.CreateVector(gpus);
  auto rvv =
      rsv.empty()
          ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<state::NodeReservation>>>{}
          : b.CreateVector(rsv);
  b.Finish(state::CreateNodeState(b, name, cap, alloc, used, s.ready, s.unschedulable, s.removed,
                                  colo, usage, s.metric_time_ms, s.be_cpu_milli, pv, gv,
                                  s.registered_ms, s.rejected_binds, rvv));
  return finish(b);
}

std::string encode(const pod_state& s) {
  auto& b = builder();
  auto name = b.CreateString(s.name);
  auto node = b.CreateString(s.node);
  auto req = res(b, s.requests);
  auto reason = b.CreateString(s.last_reason);
  auto quota = b.CreateString(s.quota);
  b.Finish(state::CreatePodState(b, name, static_cast<std::uint8_t>(s.phase), node, req, s.priority,
                                 static_cast<std::uint8_t>(s.qos),
                                 static_cast<std::uint8_t>(s.priority_class), s.submitted_ms,
                                 s.scheduled_ms, s.started_ms, s.finished_ms, s.attempts, reason,
                                 static_cast<std::uint8_t>(s.eviction_reason), quota,
                                 s.usage_cpu_milli, s.usage_memory_bytes, s.bind_rejections));
  return finish(b);
}

std::string encode(const quota_state& s) {
  auto& b = builder();
  auto name = b.CreateString(s.name);
  auto parent = b.CreateString(s.parent);
  auto tree = b.CreateString(s.tree_id);
  auto mn = res(b, s.min), mx = res(b, s.max), sw = res(b, s.shared_weight);
  auto rt = res(b, s.runtime), us = res(b, s.used), rq = res(b, s.request);
  b.Finish(state::CreateQuotaState(b, name, parent, tree, s.is_parent, s.allow_lent_resource, mn,
                                   mx, sw, rt, us, rq, s.deleted));
  return finish(b);
}

std::string encode(const job_state& s) {
  auto& b = builder();
  b.Finish(state::CreateJobStateDirect(b, s.name.c_str(), s.pod.c_str(), s.mode.c_str(),
                                       s.phase.c_str(), s.reason.c_str(), s.created_ms,
                                       s.updated_ms));
  return finish(b);
}

std::string encode(const reservation_state& s) {
  auto& b = builder();
  auto name = b.CreateString(s.name);
  auto uid = b.CreateString(s.uid);
  auto req = res(b, s.requests);
  auto node = b.CreateString(s.node);
  auto phase = b.CreateString(s.phase);
  auto reason = b.CreateString(s.reason);
  auto owner = b.CreateString(s.owner);
  b.Finish(state::CreateReservationState(b, name, uid, req, node, phase, reason, owner,
                                         s.created_ms, s.updated_ms, s.ttl_ms, s.expires_ms,
                                         s.allocate_once, s.deleted));
  return finish(b);
}

std::string encode(const object_state& s) {
  auto& b = builder();
  std::vector<flatbuffers::Offset<wire::KeyValue>> labels;
  labels.reserve(s.labels.size());
  for (const auto& [k, v] : s.labels)
    labels.push_back(wire::CreateKeyValueDirect(b, k.c_str(), v.c_str()));
  auto av = b.CreateString(s.api_version);
  auto kind = b.CreateString(s.kind);
  auto ns = b.CreateString(s.ns);
  auto name = b.CreateString(s.name);
  auto uid = b.CreateString(s.uid);
  auto rv = b.CreateString(s.resource_version);
  auto lv = b.CreateVector(labels);
  auto spec = b.CreateString(s.spec_json);
  auto status = b.CreateString(s.status_json);
  b.Finish(state::CreateObjectState(b, av, kind, ns, name, uid, rv, lv, spec, status, s.deleted,
                                    s.updated_ms));
  return finish(b);
}

result<node_state> decode_node(std::string_view bytes) {
  messages::aligned_byte_buffer scratch;
  auto r = verified<state::NodeState>(bytes, "node", scratch);
  if (!r) return tl::unexpected(r.error());
  const auto* x = *r;
  node_state s;
  s.name = str(x->name());
  s.capacity = to_resource_list(x->capacity());
  s.allocatable = to_resource_list(x->allocatable());
  s.allocated = to_resource_list(x->allocated());
  s.colocation = to_resource_list(x->colocation());
  s.usage = to_resource_list(x->usage());
  s.ready = x->ready();
  s.unschedulable = x->unschedulable();
  s.removed = x->removed();
  s.metric_time_ms = x->metric_time_ms();
  s.be_cpu_milli = x->be_cpu_milli();
  s.registered_ms = x->registered_ms();
  s.rejected_binds = x->rejected_binds();
  if (x->pods())
    for (const auto* p : *x->pods())
      s.pods.push_back(pod_on_node{str(p->pod()), to_resource_list(p->requests()),
                                   devices_of(p->devices()), str(p->reservation())});
  if (x->reservations())
    for (const auto* r : *x->reservations())
      s.reservations.push_back(node_reservation{str(r->name()), to_resource_list(r->allocatable()),
                                                to_resource_list(r->allocated())});
  if (x->gpus())
    for (const auto* g : *x->gpus())
      s.gpus.push_back(gpu_state{g->minor(), str(g->model()), g->core(), g->memory_bytes(),
                                 g->core_used(), g->memory_used()});
  return s;
}

result<pod_state> decode_pod(std::string_view bytes) {
  messages::aligned_byte_buffer scratch;
  auto r = verified<state::PodState>(bytes, "pod", scratch);
  if (!r) return tl::unexpected(r.error());
  const auto* x = *r;
  pod_state s;
  s.name = str(x->name());
  s.node = str(x->node());
  s.quota = str(x->quota());
  s.last_reason = str(x->last_reason());
  s.requests = to_resource_list(x->requests());
  s.submitted_ms = x->submitted_ms();
  s.scheduled_ms = x->scheduled_ms();
  s.started_ms = x->started_ms();
  s.finished_ms = x->finished_ms();
  s.usage_cpu_milli = x->usage_cpu_milli();
  s.usage_memory_bytes = x->usage_memory_bytes();
  s.priority = x->priority();
  s.attempts = x->attempts();
  s.bind_rejections = x->bind_rejections();
  s.phase = static_cast<pod_phase>(x->phase());
  s.qos = static_cast<wire::QoSClass>(x->qos());
  s.priority_class = static_cast<wire::PriorityClass>(x->priority_class());
  s.eviction_reason = static_cast<wire::EvictionReason>(x->eviction_reason());
  return s;
}

result<quota_state> decode_quota(std::string_view bytes) {
  messages::aligned_byte_buffer scratch;
  auto r = verified<state::QuotaState>(bytes, "quota", scratch);
  if (!r) return tl::unexpected(r.error());
  const auto* x = *r;
  quota_state s;
  s.name = str(x->name());
  s.parent = str(x->parent());
  s.tree_id = str(x->tree_id());
  s.is_parent = x->is_parent();
  s.allow_lent_resource = x->allow_lent_resource();
  s.min = to_resource_list(x->min());
  s.max = to_resource_list(x->max());
  s.shared_weight = to_resource_list(x->shared_weight());
  s.runtime = to_resource_list(x->runtime());
  s.used = to_resource_list(x->used());
  s.request = to_resource_list(x->request());
  s.deleted = x->deleted();
  return s;
}

result<job_state> decode_job(std::string_view bytes) {
  messages::aligned_byte_buffer scratch;
  auto r = verified<state::JobState>(bytes, "job", scratch);
  if (!r) return tl::unexpected(r.error());
  const auto* x = *r;
  return job_state{str(x->name()),   str(x->pod()),   str(x->mode()), str(x->phase()),
                   str(x->reason()), x->created_ms(), x->updated_ms()};
}

result<reservation_state> decode_reservation(std::string_view bytes) {
  messages::aligned_byte_buffer scratch;
  auto r = verified<state::ReservationState>(bytes, "reservation", scratch);
  if (!r) return tl::unexpected(r.error());
  const auto* x = *r;
  reservation_state s;
  s.name = str(x->name());
  s.uid = str(x->uid());
  s.requests = to_resource_list(x->requests());
  s.node = str(x->node());
  s.phase = str(x->phase());
  s.reason = str(x->reason());
  s.owner = str(x->owner());
  s.created_ms = x->created_ms();
  s.updated_ms = x->updated_ms();
  s.ttl_ms = x->ttl_ms();
  s.expires_ms = x->expires_ms();
  s.allocate_once = x->allocate_once();
  s.deleted = x->deleted();
  return s;
}

result<object_state> decode_object(std::string_view bytes) {
  messages::aligned_byte_buffer scratch;
  auto r = verified<state::ObjectState>(bytes, "recorded object", scratch);
  if (!r) return tl::unexpected(r.error());
  const auto* x = *r;
  object_state s;
  s.api_version = str(x->api_version());
  s.kind = str(x->kind());
  s.ns = str(x->namespace_());
  s.name = str(x->name());
  s.uid = str(x->uid());
  s.resource_version = str(x->resource_version());
  if (x->labels() != nullptr)
    for (const auto* kv : *x->labels()) s.labels.emplace_back(str(kv->key()), str(kv->value()));
  s.spec_json = str(x->spec_json());
  s.status_json = str(x->status_json());
  s.deleted = x->deleted();
  s.updated_ms = x->updated_ms();
  return s;
}

digest_builder::digest_builder() : xxh_(XXH3_createState()) {
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(xxh_));
}
digest_builder::~digest_builder() { XXH3_freeState(static_cast<XXH3_state_t*>(xxh_)); }

void digest_builder::add(wire::EntityKind kind, std::string_view key, std::string_view state) {
  auto* st = static_cast<XXH3_state_t*>(xxh_);
  auto put_len = [&](std::uint64_t n) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(n >> (8 * i));
    XXH3_64bits_update(st, b, 8);
  };
  auto k = static_cast<unsigned char>(kind);
  XXH3_64bits_update(st, &k, 1);
  put_len(key.size());
  XXH3_64bits_update(st, key.data(), key.size());
  put_len(state.size());
  XXH3_64bits_update(st, state.data(), state.size());
}

std::uint64_t digest_builder::finish() {
  return XXH3_64bits_digest(static_cast<XXH3_state_t*>(xxh_));
}

}  // namespace colony::entities
