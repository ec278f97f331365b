// colony explain pod NAME | node NAME: why a pod went where it went (or why not), and why a
// node's batch/mid resources are what they are, told from the decision events' own inputs.
#include <cstdio>
#include <deque>
#include <set>
#include <string>

#include <fmt/format.h>

#include "actors/entities/entities.hpp"
#include "actors/koordlet/cpu_suppress.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "messages/terms.hpp"
#include "stores/event_log.hpp"

namespace colony::cli {

namespace {

using messages::to_string_view;

std::string cpu(std::int64_t milli) { return fmt::format("{}m", milli); }
std::string mem(std::int64_t bytes) {
  if (bytes % gib == 0) return fmt::format("{}Gi", bytes / gib);
  return fmt::format("{:.2f}Gi", static_cast<double>(bytes) / static_cast<double>(gib));
}

std::string resources(const wire::Resources* r) {
  auto x = messages::to_resource_list(r);
  std::string s;
  auto add = [&](const char* name, std::int64_t v, bool is_mem) {
    if (v == 0) return;
    if (!s.empty()) s += " ";
    s += fmt::format(
        "{}={}", name,
        is_mem ? mem(v)
               : (std::string(name).find("cpu") != std::string::npos ? cpu(v) : std::to_string(v)));
  };
  add("cpu", x.cpu_milli, false);
  add("memory", x.memory_bytes, true);
  add("batch-cpu", x.batch_cpu_milli, false);
  add("batch-memory", x.batch_memory_bytes, true);
  add("mid-cpu", x.mid_cpu_milli, false);
  add("mid-memory", x.mid_memory_bytes, true);
  add("gpu", x.gpu, false);
  add("gpu-core", x.gpu_core, false);
  add("gpu-memory", x.gpu_memory_bytes, true);
  add("gpu-memory-ratio", x.gpu_memory_ratio, false);
  return s.empty() ? "none" : s;
}

std::string terms(const flatbuffers::Vector<flatbuffers::Offset<wire::Term>>* ts,
                  const char* indent) {
  std::string s;
  if (ts == nullptr) return s;
  for (const auto* t : *ts) {
    s += indent;
    const auto name = messages::term_name(*t);
    s += name;
    if (t->text() && t->text()->size()) {
      s += " = " + std::string(to_string_view(t->text()));
      if (t->value() != 0) s += fmt::format(" ({})", t->value());
    } else {
      s += fmt::format(" = {}", t->value());
    }
    if (t->unit() && t->unit()->size()) s += " " + std::string(to_string_view(t->unit()));
    // A koordlet term named by the vocabulary alone (schema v6): its unit and what it is come
    // from the policy's definitions.
    if (t->name() == nullptr && t->unit() == nullptr && t->text() == nullptr)
      if (const auto* d = koordlet::find_suppress_term(name); d != nullptr)
        s += fmt::format(" {} ({})", d->unit, d->text);
    s += "\n";
  }
  return s;
}

std::string at(const wire::Envelope& e) {
  return fmt::format("t={:.3f}s offset {}", static_cast<double>(e.event_time_ms()) / 1000.0,
                     e.offset());
}

int report(const error& e) {
  std::fprintf(stderr, "colony: %s\n", e.describe().c_str());
  return exit_code_for(e);
}

struct explain_args {
  std::string log;
  std::string name;
  std::uint64_t at = no_offset;
};

result<std::unique_ptr<stores::event_log>> open_reader(const std::string& name) {
  stores::log_options o;
  o.create_if_missing = false;
  o.read_only = true;
  return stores::open_log(name, o);
}

bool touches(const wire::Envelope& e, wire::EntityKind kind, std::string_view key) {
  auto rl = entities::routes(e);
  for (std::uint8_t i = 0; i < rl.size; ++i)
    if (rl.refs[i] == entities::entity_ref{kind, key}) return true;
  // ObjectRefused and WriteFailed route to no entity; they are about the one they are keyed to.
  if (e.entity_kind() == kind && to_string_view(e.entity_key()) == key) return true;
  if (e.payload_type() == wire::Payload::PodBindProposed && kind == wire::EntityKind::Pod)
    return to_string_view(e.payload_as_PodBindProposed()->pod()) == key;
  return false;
}

int explain_pod(const explain_args& a) {
  auto log = open_reader(a.log);
  if (!log) return report(log.error());
  std::string out;
  std::int64_t submitted = -1;
  bool found = false;
  std::set<std::string, std::less<>> jobs;  // this pod's PodMigrationJobs
  auto n = (*log)->read(
      0, a.at == no_offset ? no_offset : a.at + 1, [&](log_offset, messages::bytes_view b) {
        const auto& e = *wire::GetEnvelope(b.data());
        using P = wire::Payload;
        // The PodMigrationJobs of this pod (keyed by the job, so routed to the job only).
        if (e.payload_type() == P::MigrationJobCreated &&
            to_string_view(e.payload_as_MigrationJobCreated()->pod()) == a.name) {
          const auto* p = e.payload_as_MigrationJobCreated();
          jobs.emplace(to_string_view(p->name()));
          out += fmt::format("PodMigrationJob {} created by {} ({}): mode {}, ttl {} s: {}\n",
                             to_string_view(p->name()), to_string_view(p->creator()), at(e),
                             to_string_view(p->mode()), p->ttl_ms() / 1000,
                             to_string_view(p->reason()));
          out += terms(p->inputs(), "    ");
          return true;
        }
        if (e.payload_type() == P::MigrationJobPhaseChanged &&
            jobs.count(to_string_view(e.payload_as_MigrationJobPhaseChanged()->name())) != 0) {
          const auto* p = e.payload_as_MigrationJobPhaseChanged();
          out += fmt::format("PodMigrationJob {} {} ({}){}{}\n", to_string_view(p->name()),
                             to_string_view(p->phase()), at(e),
                             p->reason() && p->reason()->size()
                                 ? ": " + std::string(to_string_view(p->reason()))
                                 : std::string(),
                             p->message() && p->message()->size()
                                 ? " - " + std::string(to_string_view(p->message()))
                                 : std::string());
          return true;
        }
        if (!touches(e, wire::EntityKind::Pod, a.name)) return true;
        found = true;
        switch (e.payload_type()) {
          case P::PodSubmitted: {
            const auto* p = e.payload_as_PodSubmitted();
            submitted = e.event_time_ms();
            out +=
                fmt::format("submitted ({}): requests {}; priority {}{}\n", at(e),
                            resources(p->requests()), p->priority(),
                            p->priority_class_name() && p->priority_class_name()->size()
                                ? ", class " + std::string(to_string_view(p->priority_class_name()))
                                : "");
            break;
          }
          case P::PodMutated: {
            const auto* p = e.payload_as_PodMutated();
            std::string profiles;
            if (p->profiles())
              for (const auto* s : *p->profiles())
                profiles += (profiles.empty() ? "" : ", ") + s->str();
            out += fmt::format(
                "admitted ({}): profiles [{}] -> QoS {}, priority class {}, priority {}; requests "
                "{}\n",
                at(e), profiles, wire::EnumNameQoSClass(p->qos_class()),
                wire::EnumNamePriorityClass(p->priority_class()), p->priority(),
                resources(p->requests()));
            break;
          }
          case P::PodRejected: {
            const auto* p = e.payload_as_PodRejected();
            out += fmt::format("rejected by admission ({}): {} [{}]\n", at(e),
                               to_string_view(p->reason()), to_string_view(p->field()));
            break;
          }
          case P::PodUnschedulable: {
            const auto* p = e.payload_as_PodUnschedulable();
            out += fmt::format("attempt {} unschedulable ({}):\n", p->attempt(), at(e));
            if (p->reasons())
              for (const auto* r : *p->reasons())
                out += fmt::format("    {}: {} ({} nodes)\n", to_string_view(r->plugin()),
                                   to_string_view(r->reason()), r->nodes());
            break;
          }
          case P::PodBindProposed: {
            const auto* p = e.payload_as_PodBindProposed();
            out += fmt::format(
                "attempt {}: {} proposed node {} ({}), total score {}; {} feasible of {} "
                "evaluated\n",
                p->attempt(), to_string_view(p->scheduler()), to_string_view(p->node()), at(e),
                p->total_score(), p->feasible_nodes(), p->evaluated_nodes());
            if (p->scores())
              for (const auto* s : *p->scores())
                out += fmt::format("    {:<28} score {:>3} x weight {}\n",
                                   to_string_view(s->plugin()), s->score(), s->weight());
            if (p->alternatives() && p->alternatives()->size()) {
              out += "    next best:";
              for (const auto* alt : *p->alternatives())
                out += fmt::format(" {} ({})", to_string_view(alt->node()), alt->total());
              out += "\n";
            }
            break;
          }
          case P::PodScheduled: {
            const auto* p = e.payload_as_PodScheduled();
            out += fmt::format(
                "bound to {} by the node actor ({}){}\n", to_string_view(p->node()), at(e),
                submitted >= 0
                    ? fmt::format(", {:.3f}s after submission",
                                  static_cast<double>(e.event_time_ms() - submitted) / 1000.0)
                    : "");
            if (p->reservation() && p->reservation()->size() > 0)
              out += fmt::format("  into Reservation {}\n", to_string_view(p->reservation()));
            break;
          }
          case P::PodBindRejected: {
            const auto* p = e.payload_as_PodBindRejected();
            out += fmt::format("node {} rejected the binding ({}): {}\n", to_string_view(p->node()),
                               at(e), to_string_view(p->reason()));
            break;
          }
          case P::PodStarted:
            out += fmt::format("started ({})\n", at(e));
            break;
          case P::PodEvicted: {
            const auto* p = e.payload_as_PodEvicted();
            out += fmt::format("evicted from {} ({}): {} - {}\n", to_string_view(p->node()), at(e),
                               wire::EnumNameEvictionReason(p->reason()),
                               to_string_view(p->message()));
            out += terms(p->inputs(), "    ");
            break;
          }
          case P::PodFinished: {
            const auto* p = e.payload_as_PodFinished();
            out += fmt::format("finished ({}): {}\n", at(e), wire::EnumNamePodPhase(p->phase()));
            break;
          }
          case P::ObjectRefused: {
            const auto* p = e.payload_as_ObjectRefused();
            out +=
                fmt::format("refused by {} ({}): version {}: {}: {}\n", to_string_view(e.source()),
                            at(e), to_string_view(p->resource_version()),
                            to_string_view(p->field()), to_string_view(p->reason()));
            break;
          }
          case P::WriteFailed: {
            const auto* p = e.payload_as_WriteFailed();
            out +=
                fmt::format("{} write failed ({}), for offset {}: HTTP {} after {} attempts: {}\n",
                            wire::EnumNameWriteKind(p->write()), at(e), e.causation(),
                            p->http_status(), p->attempts(), to_string_view(p->message()));
            break;
          }
          default:
            break;
        }
        return true;
      });
  if (!n) return report(n.error());
  if (!found)
    return report(error{errc::not_found, "no event touches pod " + a.name, (*log)->describe()});
  std::printf("pod %s\n%s", a.name.c_str(), out.c_str());
  return exit_ok;
}

int explain_node(const explain_args& a) {
  auto log = open_reader(a.log);
  if (!log) return report(log.error());
  std::string registered, batch, suppress, metric;
  std::string full_terms;           // the terms of the node's last complete batch/mid record
  std::int64_t full_terms_ms = -1;  // and its event time
  std::deque<std::string> history, evictions;
  bool found = false;
  log_offset last = 0;
  auto n = (*log)->read(
      0, a.at == no_offset ? no_offset : a.at + 1, [&](log_offset off, messages::bytes_view b) {
        last = off;
        const auto& e = *wire::GetEnvelope(b.data());
        if (!touches(e, wire::EntityKind::Node, a.name)) return true;
        found = true;
        using P = wire::Payload;
        switch (e.payload_type()) {
          case P::NodeRegistered: {
            const auto* p = e.payload_as_NodeRegistered();
            registered = fmt::format("registered ({}): capacity {}; allocatable {}; {} GPUs\n",
                                     at(e), resources(p->capacity()), resources(p->allocatable()),
                                     p->gpus() ? p->gpus()->size() : 0);
            break;
          }
          case P::NodeMetricReported: {
            const auto* p = e.payload_as_NodeMetricReported();
            metric = fmt::format("last NodeMetric ({}): node usage {}; system usage {}; {} pods\n",
                                 at(e), resources(p->node_usage()), resources(p->system_usage()),
                                 p->pods() ? p->pods()->size() : 0);
            break;
          }
          case P::NodeBatchResourceUpdated: {
            const auto* p = e.payload_as_NodeBatchResourceUpdated();
            std::string ts = terms(p->terms(), "    ");
            if (p->terms_as_of_ms() < 0) {
              full_terms = ts;
              full_terms_ms = e.event_time_ms();
            } else {
              // A repeat (schema v6): the formula's terms are those of an earlier record.
              const std::string when =
                  fmt::format("t={:.3f}s", static_cast<double>(p->terms_as_of_ms()) / 1000.0);
              ts = full_terms_ms == p->terms_as_of_ms()
                       ? fmt::format(
                             "    (the decision of {}, rewritten: its last write is older "
                             "than updateTimeThresholdSeconds)\n{}{}",
                             when, full_terms, ts)
                       : fmt::format(
                             "    (the decision of {}, which the log read does not "
                             "hold)\n{}",
                             when, ts);
            }
            batch = fmt::format(
                "batch/mid resources ({}): batch-cpu={} batch-memory={} mid-cpu={} mid-memory={}\n"
                "  cpu policy {}, memory policy {}{}\n  terms (a formula term not listed is "
                "0):\n{}",
                at(e), cpu(p->batch_cpu_milli()), mem(p->batch_memory_bytes()),
                cpu(p->mid_cpu_milli()), mem(p->mid_memory_bytes()),
                to_string_view(p->cpu_policy()), to_string_view(p->memory_policy()),
                p->degraded() ? ", DEGRADED (stale NodeMetric)" : "", ts);
            history.push_back(fmt::format("    {}: batch-cpu={} batch-memory={}", at(e),
                                          cpu(p->batch_cpu_milli()), mem(p->batch_memory_bytes())));
            if (history.size() > 8) history.pop_front();
            break;
          }
          case P::BeSuppressed: {
            const auto* p = e.payload_as_BeSuppressed();
            suppress = fmt::format(
                "BE suppression ({}): policy {}, BE cpu {}{}\n  terms (a defined term not listed "
                "is 0):\n{}",
                at(e), to_string_view(p->policy()), cpu(p->be_cpu_milli()),
                p->cpuset() && p->cpuset()->size()
                    ? ", cpuset " + std::string(to_string_view(p->cpuset()))
                    : "",
                terms(p->inputs(), "    "));
            break;
          }
          case P::PodEvicted: {
            const auto* p = e.payload_as_PodEvicted();
            evictions.push_back(fmt::format("    {} {} ({}): {}", at(e), to_string_view(p->pod()),
                                            wire::EnumNameEvictionReason(p->reason()),
                                            to_string_view(p->message())));
            if (evictions.size() > 8) evictions.pop_front();
            break;
          }
          default:
            break;
        }
        return true;
      });
  if (!n) return report(n.error());
  if (!found)
    return report(error{errc::not_found, "no event touches node " + a.name, (*log)->describe()});
  std::printf("node %s as of offset %llu\n%s%s%s%s", a.name.c_str(),
              static_cast<unsigned long long>(last), registered.c_str(), metric.c_str(),
              batch.empty() ? "no batch/mid update yet\n" : batch.c_str(), suppress.c_str());
  if (history.size() > 1) {
    std::printf("recent batch updates:\n");
    for (const auto& h : history) std::printf("%s\n", h.c_str());
  }
  if (!evictions.empty()) {
    std::printf("recent evictions on this node:\n");
    for (const auto& h : evictions) std::printf("%s\n", h.c_str());
  }
  return exit_ok;
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("explain", "Explain a pod's placement or a node's batch resources");
  cmd->require_subcommand(1);
  for (const char* what : {"pod", "node"}) {
    auto* sub = cmd->add_subcommand(what, std::string("Explain a ") + what + " from the log");
    auto a = std::make_shared<explain_args>();
    sub->add_option(
           "name", a->name,
           std::string(what) == std::string("pod") ? "Pod key: namespace/name" : "Node name")
        ->required();
    sub->add_option("--log", a->log, "Log directory")->required();
    sub->add_option("--at", a->at, "Explain as of this offset (default: the end)");
    const bool is_pod = std::string(what) == "pod";
    sub->callback([a, is_pod] { exit_status() = is_pod ? explain_pod(*a) : explain_node(*a); });
  }
}

}  // namespace colony::cli
