// colony replay: rebuild every entity actor from a log (optionally from a snapshot) and print
// the state digest or the states.
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "actors/entities/entity_actors.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "stores/event_log.hpp"
#include "stores/snapshot_store.hpp"

namespace colony::cli {

namespace {

nlohmann::ordered_json res_json(const resource_list& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  auto put = [&](const char* k, std::int64_t v) {
    if (v != 0) j[k] = v;
  };
  put("cpu_milli", r.cpu_milli);
  put("memory_bytes", r.memory_bytes);
  put("batch_cpu_milli", r.batch_cpu_milli);
  put("batch_memory_bytes", r.batch_memory_bytes);
  put("mid_cpu_milli", r.mid_cpu_milli);
  put("mid_memory_bytes", r.mid_memory_bytes);
  put("gpu", r.gpu);
  put("gpu_core", r.gpu_core);
  put("gpu_memory_bytes", r.gpu_memory_bytes);
  put("gpu_memory_ratio", r.gpu_memory_ratio);
  put("pods", r.pods);
  return j;
}

result<nlohmann::ordered_json> state_json(const entities::encoded_entity& e) {
  nlohmann::ordered_json j;
  j["entity"] = std::string(messages::entity_kind_name(e.kind)) + "/" + e.key;
  switch (e.kind) {
    case wire::EntityKind::Node: {
      auto s = entities::decode_node(e.state);
      if (!s) return tl::unexpected(s.error());
      j["ready"] = s->ready;
      j["unschedulable"] = s->unschedulable;
      j["removed"] = s->removed;
      j["allocatable"] = res_json(s->effective_allocatable());
      j["allocated"] = res_json(s->allocated);
      j["usage"] = res_json(s->usage);
      j["metric_time_ms"] = s->metric_time_ms;
      j["pods"] = s->pods.size();
      j["rejected_binds"] = s->rejected_binds;
      break;
    }
    case wire::EntityKind::Pod: {
      auto s = entities::decode_pod(e.state);
      if (!s) return tl::unexpected(s.error());
      j["phase"] = std::string(entities::to_string(s->phase));
      j["node"] = s->node;
      j["requests"] = res_json(s->requests);
      j["priority"] = s->priority;
      j["qos"] = std::string(wire::EnumNameQoSClass(s->qos));
      j["priority_class"] = std::string(wire::EnumNamePriorityClass(s->priority_class));
      j["submitted_ms"] = s->submitted_ms;
      j["scheduled_ms"] = s->scheduled_ms;
      j["finished_ms"] = s->finished_ms;
      j["attempts"] = s->attempts;
      if (!s->last_reason.empty()) j["last_reason"] = s->last_reason;
      break;
    }
    case wire::EntityKind::ElasticQuota: {
      auto s = entities::decode_quota(e.state);
      if (!s) return tl::unexpected(s.error());
      j["parent"] = s->parent;
      j["min"] = res_json(s->min);
      j["max"] = res_json(s->max);
      j["runtime"] = res_json(s->runtime);
      j["used"] = res_json(s->used);
      j["deleted"] = s->deleted;
      break;
    }
    case wire::EntityKind::PodMigrationJob: {
      auto s = entities::decode_job(e.state);
      if (!s) return tl::unexpected(s.error());
      j["pod"] = s->pod;
      j["mode"] = s->mode;
      j["phase"] = s->phase;
      j["reason"] = s->reason;
      break;
    }
    case wire::EntityKind::Reservation: {
      auto s = entities::decode_reservation(e.state);
      if (!s) return tl::unexpected(s.error());
      j["phase"] = s->phase;
      j["reason"] = s->reason;
      j["node"] = s->node;
      j["owner"] = s->owner;
      j["deleted"] = s->deleted;
      break;
    }
    case wire::EntityKind::Object: {
      auto s = entities::decode_object(e.state);
      if (!s) return tl::unexpected(s.error());
      j["api_version"] = s->api_version;
      j["uid"] = s->uid;
      j["resource_version"] = s->resource_version;
      j["deleted"] = s->deleted;
      // The recorded JSON as JSON again (the state keeps it compact); text that does not parse
      // (not written by a bridge) is shown as text.
      for (const auto& [field, text] :
           {std::pair{"spec", &s->spec_json}, std::pair{"status", &s->status_json}}) {
        if (text->empty()) continue;
        auto v = nlohmann::ordered_json::parse(*text, nullptr, false);
        j[field] = v.is_discarded() ? nlohmann::ordered_json(*text) : std::move(v);
      }
      break;
    }
    default:
      break;
  }
  return j;
}

struct replay_args {
  std::string log;
  std::string snapshots;
  std::uint64_t until = no_offset;
  bool digest = false;
  bool json = false;
  bool write_snapshot = false;
  std::size_t threads = 0;
};

int report(const error& e) {
  std::fprintf(stderr, "colony: %s\n", e.describe().c_str());
  return exit_code_for(e);
}

int run_replay(const replay_args& a) {
  stores::log_options o;
  o.create_if_missing = false;
  o.read_only = true;
  auto log = stores::open_log(a.log, o);
  if (!log) return report(log.error());
  entities::actor_host host(a.threads);
  log_offset from = 0;
  std::unique_ptr<stores::snapshot_store> snaps;
  if (!a.snapshots.empty()) {
    auto s = stores::snapshot_store::open(a.snapshots, a.write_snapshot);
    if (!s) return report(s.error());
    snaps = std::move(*s);
    auto latest = snaps->latest();
    if (!latest) return report(latest.error());
    // Only a snapshot at or before the requested point can be used.
    if (*latest && (a.until == no_offset || (*latest)->at <= a.until + 1)) {
      auto r = snaps->read(
          (*latest)->at, [&](std::uint8_t k, std::string_view key, std::string_view st) {
            host.load(static_cast<wire::EntityKind>(k), std::string(key), std::string(st));
          });
      if (!r) return report(r.error());
      from = (*latest)->at;
    }
  }
  auto batch = std::make_shared<entities::record_batch>();
  log_offset end = from;
  auto n = (*log)->read(from, a.until == no_offset ? no_offset : a.until + 1,
                        [&](log_offset off, messages::bytes_view b) {
                          batch->add(b);
                          end = off + 1;
                          if (batch->size() >= 4096) {
                            host.deliver(std::move(batch));
                            batch = std::make_shared<entities::record_batch>();
                          }
                          return true;
                        });
  if (batch->size() > 0) host.deliver(std::move(batch));
  if (!n) return report(n.error());
  auto states = host.collect();
  if (!states) return report(states.error());
  const auto digest = entities::digest_of(*states);
  if (snaps && a.write_snapshot) {
    auto wr = snaps->begin(end);
    if (!wr) return report(wr.error());
    for (const auto& e : *states)
      if (auto p = (*wr)->put(static_cast<std::uint8_t>(e.kind), e.key, e.state); !p)
        return report(p.error());
    if (auto c = (*wr)->commit(digest); !c) return report(c.error());
  }
  if (a.json) {
    for (const auto& e : *states) {
      auto j = state_json(e);
      if (!j) return report(j.error());
      std::cout << j->dump() << "\n";
    }
    return exit_ok;
  }
  nlohmann::ordered_json j;
  j["log"] = (*log)->describe();
  j["from_offset"] = from;
  j["end_offset"] = end;
  j["events_replayed"] = *n;
  j["entities"] = states->size();
  j["digest"] = fmt::format("{:016x}", digest);
  if (a.digest)
    std::cout << fmt::format("{:016x}", digest) << "\n";
  else
    std::cout << j.dump() << "\n";
  return exit_ok;
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay", "Rebuild every entity actor from a log and print the state digest or the states");
  auto a = std::make_shared<replay_args>();
  cmd->add_option("--log", a->log, "Log directory")->required();
  cmd->add_option("--until", a->until, "Last offset to apply, inclusive (default: the end)");
  cmd->add_option("--snapshots", a->snapshots,
                  "Snapshot store: start from its latest snapshot at or before --until");
  cmd->add_flag("--write-snapshot", a->write_snapshot,
                "After replaying, write a snapshot to --snapshots");
  cmd->add_option("--threads", a->threads, "Actor scheduler threads (default: CAF's)");
  auto* d = cmd->add_flag("--digest", a->digest, "Print only the state digest (16 hex digits)");
  auto* js = cmd->add_flag("--json", a->json, "Print every entity state as a JSON line");
  d->excludes(js);
  cmd->callback([a] {
    if (a->write_snapshot && a->snapshots.empty()) {
      std::fprintf(stderr, "colony: --write-snapshot needs --snapshots DIR\n");
      exit_status() = exit_usage;
      return;
    }
    exit_status() = run_replay(*a);
  });
}

}  // namespace colony::cli
