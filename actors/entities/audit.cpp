#include "actors/entities/audit.hpp"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "messages/string_map.hpp"

namespace colony::entities {

namespace {

using messages::to_resource_list;
using messages::to_string_view;

constexpr std::uint32_t no_pod = ~0u;

}  // namespace

std::string_view to_string(audit_check c) {
  switch (c) {
    case audit_check::undecodable:
      return "undecodable";
    case audit_check::offset_order:
      return "offset_order";
    case audit_check::over_allocatable:
      return "over_allocatable";
    case audit_check::gpu_over_device:
      return "gpu_over_device";
    case audit_check::over_batch_at_bind:
      return "over_batch_at_bind";
    case audit_check::bound_twice:
      return "bound_twice";
    case audit_check::bound_not_pending:
      return "bound_not_pending";
    case audit_check::answered_twice:
      return "answered_twice";
    case audit_check::answer_without_proposal:
      return "answer_without_proposal";
    case audit_check::unanswered_proposal:
      return "unanswered_proposal";
    case audit_check::eviction_without_reason:
      return "eviction_without_reason";
    case audit_check::evicted_not_bound:
      return "evicted_not_bound";
    case audit_check::causation_not_earlier:
      return "causation_not_earlier";
    case audit_check::decision_without_causation:
      return "decision_without_causation";
    case audit_check::negative_colocation:
      return "negative_colocation";
    case audit_check::admitted_after_end:
      return "admitted_after_end";
    case audit_check::pending_unexplained:
      return "pending_unexplained";
    case audit_check::failure_without_decision:
      return "failure_without_decision";
  }
  return "unknown";
}

bool is_decision(wire::Payload type) {
  using P = wire::Payload;
  switch (type) {
    case P::PodMutated:
    case P::PodRejected:
    case P::PodBindProposed:
    case P::PodScheduled:
    case P::PodBindRejected:
    case P::PodUnschedulable:
    case P::PodEvicted:
    case P::NodeBatchResourceUpdated:
    case P::BeSuppressed:
    case P::CgroupUpdated:
    case P::QuotaRuntimeUpdated:
    case P::MigrationJobCreated:
    case P::MigrationJobPhaseChanged:
      return true;
    default:
      return false;
  }
}

std::string audit_report::describe() const {
  std::string out;
  for (const auto& v : violations) {
    out += "offset " + std::to_string(v.offset) + " " + std::string(to_string(v.check)) + " " +
           std::string(messages::entity_kind_name(v.kind)) + "/" + v.key + ": " + v.message + "\n";
  }
  for (std::size_t i = 0; i < by_check.size(); ++i)
    if (by_check[i] != 0)
      out += std::string(to_string(static_cast<audit_check>(i))) + ": " +
             std::to_string(by_check[i]) + "\n";
  return out;
}

struct log_audit::impl {
  // A pod's life as the log tells it, and its last scheduling outcome.
  enum class life : std::uint8_t { unknown, pending, bound, terminal };
  enum class outcome : std::uint8_t { none, in_flight, unschedulable, bind_rejected, scheduled };
  struct pod_rec {
    std::string name;
    std::string node;  // while bound
    std::uint64_t last_offset = 0;
    std::int64_t last_proposal = -1;  // offset of its latest PodBindProposed
    life state = life::unknown;
    outcome last = outcome::none;
    bool ever_bound = false;
    bool evicted = false;
  };

  audit_options opt;
  audit_report rep;
  string_map<node_state> nodes;
  string_map<std::uint32_t> pod_index;
  std::vector<pod_rec> pods;
  // Proposals in offset order (offsets only grow): their offset, pod and answers so far.
  std::vector<std::uint64_t> proposal_offsets;
  std::vector<std::uint32_t> proposal_pods;
  std::vector<std::uint8_t> proposal_answers;
  // Offsets of the decisions a sink carries out (offsets only grow), for WriteFailed causes.
  std::vector<std::uint64_t> effect_offsets;
  bool any = false;
  std::uint64_t last_offset = 0;

  explicit impl(audit_options o) : opt(o) {}

  void violate(audit_check c, std::uint64_t off, wire::EntityKind kind, std::string_view key,
               std::string msg) {
    ++rep.violation_count;
    ++rep.by_check[static_cast<std::size_t>(c)];
    if (rep.violations.size() < opt.max_violations)
      rep.violations.push_back({c, off, kind, std::string(key), std::move(msg)});
  }

  std::uint32_t pod_id(std::string_view name) {
    auto it = pod_index.find(name);
    if (it != pod_index.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(pods.size());
    pods.push_back(pod_rec{std::string(name)});
    pod_index.emplace(std::string(name), id);
    return id;
  }
  node_state& node(std::string_view name) {
    auto it = nodes.find(name);
    if (it == nodes.end()) it = nodes.emplace(std::string(name), node_state{}).first;
    return it->second;
  }
  // The index of the proposal at offset off, or -1.
  std::ptrdiff_t proposal_at(std::int64_t off) const {
    if (off < 0) return -1;
    auto it = std::lower_bound(proposal_offsets.begin(), proposal_offsets.end(),
                               static_cast<std::uint64_t>(off));
    if (it == proposal_offsets.end() || *it != static_cast<std::uint64_t>(off)) return -1;
    return it - proposal_offsets.begin();
  }

  void check_node(const node_state& n, const wire::Envelope& env, const resource_list* bound) {
    const auto off = env.offset();
    const auto& a = n.allocatable;
    const auto& u = n.allocated;
    if (u.cpu_milli > a.cpu_milli || u.memory_bytes > a.memory_bytes || u.pods > a.pods ||
        u.gpu > a.gpu)
      violate(audit_check::over_allocatable, off, wire::EntityKind::Node, n.name,
              "allocated cpu " + std::to_string(u.cpu_milli) + "/" + std::to_string(a.cpu_milli) +
                  ", memory " + std::to_string(u.memory_bytes) + "/" +
                  std::to_string(a.memory_bytes) + ", pods " + std::to_string(u.pods) + "/" +
                  std::to_string(a.pods) + ", gpu " + std::to_string(u.gpu) + "/" +
                  std::to_string(a.gpu) + " after " +
                  std::string(wire::EnumNamePayload(env.payload_type())));
    for (const auto& g : n.gpus)
      if (g.core_used > g.core)
        violate(audit_check::gpu_over_device, off, wire::EntityKind::Node, n.name,
                "GPU " + std::to_string(g.minor) + " core " + std::to_string(g.core_used) + "/" +
                    std::to_string(g.core));
    const auto& c = n.colocation;
    if (bound != nullptr) {
      // Only the resources this binding asked for: arbitration checks those (a binding that asks
      // no batch-cpu is not to blame for batch-cpu the slo-controller took away earlier).
      struct field {
        const char* name;
        std::int64_t resource_list::*member;
      };
      static constexpr field fields[] = {
          {"batch-cpu", &resource_list::batch_cpu_milli},
          {"batch-memory", &resource_list::batch_memory_bytes},
          {"mid-cpu", &resource_list::mid_cpu_milli},
          {"mid-memory", &resource_list::mid_memory_bytes},
      };
      for (const auto& f : fields)
        if ((*bound).*f.member > 0 && u.*f.member > c.*f.member)
          violate(audit_check::over_batch_at_bind, off, wire::EntityKind::Node, n.name,
                  std::string(f.name) + " allocated " + std::to_string(u.*f.member) + "/" +
                      std::to_string(c.*f.member) + " by the binding");
    } else if (env.payload_type() == wire::Payload::NodeBatchResourceUpdated &&
               (u.batch_cpu_milli > c.batch_cpu_milli ||
                u.batch_memory_bytes > c.batch_memory_bytes || u.mid_cpu_milli > c.mid_cpu_milli ||
                u.mid_memory_bytes > c.mid_memory_bytes)) {
      ++rep.batch_below_allocated;
    }
  }

  void on_event(const wire::Envelope& env) {
    using P = wire::Payload;
    const auto off = env.offset();
    const auto type = env.payload_type();
    ++rep.events;
    if (any && off <= last_offset)
      violate(audit_check::offset_order, off, env.entity_kind(), to_string_view(env.entity_key()),
              "offset after " + std::to_string(last_offset));
    any = true;
    last_offset = off;

    // Causation.
    const std::int64_t cause = env.causation();
    if (cause >= 0 && static_cast<std::uint64_t>(cause) >= off)
      violate(audit_check::causation_not_earlier, off, env.entity_kind(),
              to_string_view(env.entity_key()),
              std::string(wire::EnumNamePayload(type)) + " has causation " + std::to_string(cause));
    // A PodMigrationJob a user created, or aborted, is observed by a bridge (causation -1,
    // docs/kubernetes-bridge.md): the user's decision, not one of Colony's owing a cause.
    const bool users_job =
        cause < 0 && (type == P::MigrationJobCreated || type == P::MigrationJobPhaseChanged);
    if (is_decision(type) && !users_job) {
      ++rep.decisions;
      if (cause < 0) {
        ++rep.decisions_without_causation;
        if (opt.decisions_need_causation)
          violate(audit_check::decision_without_causation, off, env.entity_kind(),
                  to_string_view(env.entity_key()),
                  std::string(wire::EnumNamePayload(type)) + " from " +
                      std::string(to_string_view(env.source())) + " names no cause");
      }
    }

    // Pods and proposals, before the node fold (which already reflects this event after it).
    const resource_list* bound = nullptr;
    resource_list bound_req;
    switch (type) {
      case P::PodSubmitted: {
        auto& p = pods[pod_id(to_string_view(env.payload_as_PodSubmitted()->name()))];
        if (p.state == life::unknown) {
          ++rep.pods;
          p.state = life::pending;
        }
        p.last_offset = off;
        break;
      }
      case P::PodRejected: {
        auto& p = pods[pod_id(to_string_view(env.payload_as_PodRejected()->name()))];
        if (p.state == life::terminal)
          violate(audit_check::admitted_after_end, off, wire::EntityKind::Pod,
                  to_string_view(env.payload_as_PodRejected()->name()), "rejected after its end");
        p.state = life::terminal;
        p.last_offset = off;
        break;
      }
      case P::PodMutated: {
        auto& p = pods[pod_id(to_string_view(env.payload_as_PodMutated()->name()))];
        if (p.state == life::terminal)
          violate(audit_check::admitted_after_end, off, wire::EntityKind::Pod,
                  to_string_view(env.payload_as_PodMutated()->name()), "mutated after its end");
        break;
      }
      case P::PodBindProposed: {
        const auto id = pod_id(to_string_view(env.payload_as_PodBindProposed()->pod()));
        ++rep.proposals;
        proposal_offsets.push_back(off);
        proposal_pods.push_back(id);
        proposal_answers.push_back(0);
        pods[id].last = outcome::in_flight;
        pods[id].last_proposal = static_cast<std::int64_t>(off);
        pods[id].last_offset = off;
        break;
      }
      case P::PodUnschedulable: {
        ++rep.unschedulable;
        auto& p = pods[pod_id(to_string_view(env.payload_as_PodUnschedulable()->pod()))];
        p.last = outcome::unschedulable;
        p.last_offset = off;
        break;
      }
      case P::PodScheduled: {
        const auto* e = env.payload_as_PodScheduled();
        ++rep.scheduled;
        const auto pod = to_string_view(e->pod());
        const auto id = pod_id(pod);
        answer(env, id, e->proposal_offset());
        auto& p = pods[id];
        if (p.ever_bound)
          violate(audit_check::bound_twice, off, wire::EntityKind::Pod, pod,
                  "bound to " + std::string(to_string_view(e->node())) + ", already bound to " +
                      (p.node.empty() ? std::string("a node it left") : p.node));
        else if (p.state != life::pending)
          violate(audit_check::bound_not_pending, off, wire::EntityKind::Pod, pod,
                  p.state == life::unknown ? "bound but never submitted" : "bound after it ended");
        if (!p.ever_bound) ++rep.pods_bound;
        p.ever_bound = true;
        if (p.state == life::pending) p.state = life::bound;
        p.node = std::string(to_string_view(e->node()));
        p.last = outcome::scheduled;
        p.last_offset = off;
        // A binding observed in the cluster (no proposal: a koordlet's log, a pod another
        // scheduler bound) is a fact, not an arbitration: batch/mid at bind is checked only for
        // Colony's own decisions. The node's batch allocatable may even reach such a log after
        // the binding (informers deliver in their own order).
        if (e->proposal_offset() >= 0) {
          bound_req = to_resource_list(e->requests());
          bound = &bound_req;
        }
        break;
      }
      case P::PodBindRejected: {
        const auto* e = env.payload_as_PodBindRejected();
        ++rep.bind_rejections;
        if (to_string_view(env.source()) == "pod") ++rep.pod_stage_rejections;
        if (to_string_view(e->reason()).starts_with("Insufficient")) ++rep.capacity_rejections;
        const auto id = pod_id(to_string_view(e->pod()));
        answer(env, id, e->proposal_offset());
        auto& p = pods[id];
        // The pod's latest attempt failed (an older proposal's rejection changes nothing).
        if (p.last == outcome::in_flight && e->proposal_offset() == p.last_proposal)
          p.last = outcome::bind_rejected;
        p.last_offset = off;
        break;
      }
      case P::PodEvicted: {
        const auto* e = env.payload_as_PodEvicted();
        ++rep.evictions;
        const auto pod = to_string_view(e->pod());
        const auto node_name = to_string_view(e->node());
        if (e->reason() == wire::EvictionReason::Unknown || to_string_view(e->message()).empty())
          violate(audit_check::eviction_without_reason, off, wire::EntityKind::Pod, pod,
                  "reason " + std::string(wire::EnumNameEvictionReason(e->reason())) +
                      ", message '" + std::string(to_string_view(e->message())) + "'");
        auto& p = pods[pod_id(pod)];
        if (p.evicted)
          violate(audit_check::evicted_not_bound, off, wire::EntityKind::Pod, pod, "evicted twice");
        else if (p.state != life::bound || p.node != node_name)
          violate(audit_check::evicted_not_bound, off, wire::EntityKind::Pod, pod,
                  "evicted from " + std::string(node_name) + ", bound to " +
                      (p.state == life::bound ? p.node : std::string("no node")));
        p.evicted = true;
        p.state = life::terminal;
        p.node.clear();
        p.last_offset = off;
        break;
      }
      case P::PodFinished: {
        auto& p = pods[pod_id(to_string_view(env.payload_as_PodFinished()->pod()))];
        p.state = life::terminal;
        p.node.clear();
        p.last_offset = off;
        break;
      }
      case P::NodeBatchResourceUpdated: {
        const auto* e = env.payload_as_NodeBatchResourceUpdated();
        ++rep.batch_updates;
        if (e->batch_cpu_milli() < 0 || e->batch_memory_bytes() < 0 || e->mid_cpu_milli() < 0 ||
            e->mid_memory_bytes() < 0)
          violate(audit_check::negative_colocation, off, wire::EntityKind::Node,
                  to_string_view(e->node()),
                  "batch cpu " + std::to_string(e->batch_cpu_milli()) + ", memory " +
                      std::to_string(e->batch_memory_bytes()) + "; mid cpu " +
                      std::to_string(e->mid_cpu_milli()) + ", memory " +
                      std::to_string(e->mid_memory_bytes()));
        break;
      }
      case P::ObjectRefused:
        ++rep.objects_refused;
        break;
      case P::ObjectObserved:
        ++rep.objects_observed;
        break;
      case P::WriteFailed:
        ++rep.writes_failed;
        if (cause < 0 || !std::binary_search(effect_offsets.begin(), effect_offsets.end(),
                                             static_cast<std::uint64_t>(cause)))
          violate(audit_check::failure_without_decision, off, env.entity_kind(),
                  to_string_view(env.entity_key()),
                  "causation " + std::to_string(cause) +
                      " is no earlier PodScheduled, PodUnschedulable, NodeBatchResourceUpdated, "
                      "PodEvicted, QuotaRuntimeUpdated, NodeSLOUpdated, BeSuppressed, "
                      "CgroupUpdated or koordlet NodeMetricReported or "
                      "NodeResourceTopologyUpdated");
        break;
      default:
        break;
    }
    if (type == P::PodScheduled || type == P::PodUnschedulable ||
        type == P::NodeBatchResourceUpdated || type == P::PodEvicted ||
        type == P::QuotaRuntimeUpdated || type == P::NodeSLOUpdated || type == P::BeSuppressed ||
        type == P::CgroupUpdated ||  // cgroup writes (colony koordlet)
        // a koordlet's own reports, written: its NodeMetric and its NodeResourceTopology
        ((type == P::NodeMetricReported || type == P::NodeResourceTopologyUpdated) && cause >= 0))
      effect_offsets.push_back(off);

    // Nodes: the fold, then capacity after the event.
    const auto rl = routes(env);
    for (std::uint8_t i = 0; i < rl.size; ++i) {
      if (rl.refs[i].kind != wire::EntityKind::Node) continue;
      auto& n = node(rl.refs[i].key);
      apply(n, env);
      check_node(n, env, bound);
    }
  }

  // An answer (PodScheduled or PodBindRejected) to the proposal at proposal_offset.
  void answer(const wire::Envelope& env, std::uint32_t pod, std::int64_t proposal_offset) {
    const auto off = env.offset();
    const auto& name = pods[pod].name;
    if (proposal_offset < 0) {
      // A binding observed from outside (no proposal in this log): nothing to answer.
      if (env.payload_type() == wire::Payload::PodScheduled) ++rep.unproposed_bindings;
      return;
    }
    const auto i = proposal_at(proposal_offset);
    if (i < 0 || static_cast<std::uint64_t>(proposal_offset) >= off) {
      violate(audit_check::answer_without_proposal, off, wire::EntityKind::Pod, name,
              "offset " + std::to_string(proposal_offset) + " holds no earlier PodBindProposed");
      return;
    }
    const auto k = static_cast<std::size_t>(i);
    if (proposal_pods[k] != pod) {
      violate(audit_check::answer_without_proposal, off, wire::EntityKind::Pod, name,
              "answers proposal " + std::to_string(proposal_offset) + " of " +
                  pods[proposal_pods[k]].name);
      return;
    }
    if (proposal_answers[k] >= 1)
      violate(audit_check::answered_twice, off, wire::EntityKind::Pod, name,
              "proposal " + std::to_string(proposal_offset) + " answered again");
    if (proposal_answers[k] < 255) ++proposal_answers[k];
  }

  audit_report finish() {
    for (std::size_t k = 0; k < proposal_offsets.size(); ++k) {
      if (proposal_answers[k] != 0) continue;
      ++rep.unanswered_proposals;
      if (opt.at_rest)
        violate(audit_check::unanswered_proposal, proposal_offsets[k], wire::EntityKind::Pod,
                pods[proposal_pods[k]].name, "no PodScheduled or PodBindRejected answers it");
    }
    // Pending pods in name order, so the report does not depend on hashing.
    std::vector<const pod_rec*> pending;
    for (const auto& p : pods)
      if (p.state == life::pending) pending.push_back(&p);
    std::sort(pending.begin(), pending.end(),
              [](const pod_rec* a, const pod_rec* b) { return a->name < b->name; });
    for (const auto* p : pending) {
      ++rep.pending_at_end;
      switch (p->last) {
        case outcome::unschedulable:
          ++rep.pending_unschedulable;
          break;
        case outcome::bind_rejected:
          ++rep.pending_bind_rejected;
          break;
        case outcome::none:
          ++rep.pending_not_attempted;
          break;
        case outcome::in_flight:
        case outcome::scheduled:  // not reachable: a bound pod is not pending
          ++rep.pending_in_flight;
          if (opt.at_rest)
            violate(audit_check::pending_unexplained, p->last_offset, wire::EntityKind::Pod,
                    p->name, "pending at the end with its last proposal unanswered");
          break;
      }
    }
    return std::move(rep);
  }
};

log_audit::log_audit(audit_options opt) : d_(std::make_unique<impl>(opt)) {}
log_audit::~log_audit() = default;
log_audit::log_audit(log_audit&&) noexcept = default;
log_audit& log_audit::operator=(log_audit&&) noexcept = default;

void log_audit::on_event(const wire::Envelope& env) { d_->on_event(env); }

void log_audit::flag(audit_check c, std::uint64_t offset, std::string message) {
  d_->violate(c, offset, wire::EntityKind::Unknown, {}, std::move(message));
}

audit_report log_audit::finish() { return d_->finish(); }

const node_state* log_audit::node(std::string_view name) const {
  auto it = d_->nodes.find(name);
  return it == d_->nodes.end() ? nullptr : &it->second;
}

audit_report audit_log(std::span<const messages::byte_buffer> records, const audit_options& opt) {
  log_audit a(opt);
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto d = messages::decode(records[i], "audited log");
    if (!d) {
      a.flag(audit_check::undecodable, i, d.error().describe());
      continue;
    }
    a.on_event(*d->envelope);
  }
  return a.finish();
}

}  // namespace colony::entities
