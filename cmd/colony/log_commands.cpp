// colony log dump | stats | generate
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "actors/entities/world.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "cmd/colony/synthetic.hpp"
#include "stores/event_log.hpp"
#include "stores/snapshot_store.hpp"

namespace colony::cli {

namespace {

int report(const error& e) {
  std::fprintf(stderr, "colony: %s\n", e.describe().c_str());
  return exit_code_for(e);
}

result<std::unique_ptr<stores::event_log>> open_reader(const std::string& name) {
  stores::log_options o;
  o.create_if_missing = false;
  o.read_only = true;
  return stores::open_log(name, o);
}

struct dump_args {
  std::string log;
  std::uint64_t from = 0;
  std::optional<std::uint64_t> to;
  std::string entity;
};

int run_dump(const dump_args& a) {
  auto log = open_reader(a.log);
  if (!log) return report(log.error());
  std::optional<entities::entity_ref> filter;
  std::string filter_key;
  if (!a.entity.empty()) {
    auto slash = a.entity.find('/');
    if (slash == std::string::npos)
      return report(error{errc::invalid_input, "expected KIND/KEY, e.g. pod/default/web-1",
                          "--entity " + a.entity});
    auto kind = messages::parse_entity_kind(a.entity.substr(0, slash));
    if (!kind) return report(kind.error());
    filter_key = a.entity.substr(slash + 1);
    filter = entities::entity_ref{*kind, filter_key};
  }
  std::string line;
  auto n = (*log)->read(a.from, a.to ? *a.to + 1 : no_offset,
                        [&](log_offset, messages::bytes_view bytes) {
                          if (filter) {
                            const auto& env = *wire::GetEnvelope(bytes.data());
                            auto rl = entities::routes(env);
                            // Its own key too: ObjectRefused, WriteFailed route nowhere.
                            bool hit = env.entity_kind() == filter->kind &&
                                       messages::to_string_view(env.entity_key()) == filter->key;
                            for (std::uint8_t i = 0; i < rl.size; ++i)
                              hit = hit || rl.refs[i] == *filter;
                            if (!hit) return true;
                          }
                          auto j = messages::to_json(bytes);
                          if (!j) return true;
                          line = std::move(*j);
                          line.push_back('\n');
                          std::fwrite(line.data(), 1, line.size(), stdout);
                          return true;
                        });
  std::fflush(stdout);
  if (!n) return report(n.error());
  return exit_ok;
}

int run_stats(const std::string& name) {
  auto log = open_reader(name);
  if (!log) return report(log.error());
  std::map<std::string, std::uint64_t> per_type, per_type_bytes;
  std::uint64_t count = 0, bytes_total = 0;
  std::optional<log_offset> first, last;
  std::int64_t t_min = 0, t_max = 0;
  auto n = (*log)->read(0, no_offset, [&](log_offset off, messages::bytes_view b) {
    const auto* env = wire::GetEnvelope(b.data());
    if (!first) {
      first = off;
      t_min = t_max = env->event_time_ms();
    }
    last = off;
    ++count;
    bytes_total += b.size();
    t_min = std::min(t_min, env->event_time_ms());
    t_max = std::max(t_max, env->event_time_ms());
    const std::string type(messages::payload_name(env->payload_type()));
    ++per_type[type];
    per_type_bytes[type] += b.size();
    return true;
  });
  if (!n) return report(n.error());
  nlohmann::ordered_json j;
  j["log"] = (*log)->describe();
  j["count"] = count;
  j["first_offset"] = first ? nlohmann::ordered_json(*first) : nlohmann::ordered_json(nullptr);
  j["last_offset"] = last ? nlohmann::ordered_json(*last) : nlohmann::ordered_json(nullptr);
  j["bytes"] = bytes_total;
  j["first_time_ms"] = t_min;
  j["last_time_ms"] = t_max;
  j["types"] = per_type;
  j["type_bytes"] = per_type_bytes;
  std::cout << j.dump() << "\n";
  return exit_ok;
}

struct generate_args {
  std::string log;
  std::string snapshots;
  std::uint64_t count = 10000;
  std::uint64_t seed = 1;
  std::uint64_t batch = 64;
  std::uint64_t snapshot_every = 0;
  bool no_sync = false;
};

// Appends the synthetic stream up to `count` events, resuming at the log's end: the
// recovery test kills it at random moments and restarts it.
int run_generate(const generate_args& a) {
  stores::log_options o;
  o.sync = !a.no_sync;
  auto log = stores::open_log(a.log, o);
  if (!log) return report(log.error());
  std::unique_ptr<stores::snapshot_store> snaps;
  entities::world w;
  log_offset replay_from = 0;
  if (!a.snapshots.empty()) {
    auto s = stores::snapshot_store::open(a.snapshots, true);
    if (!s) return report(s.error());
    snaps = std::move(*s);
    auto latest = snaps->latest();
    if (!latest) return report(latest.error());
    if (*latest) {
      error load_err;
      auto r = snaps->read((*latest)->at,
                           [&](std::uint8_t k, std::string_view key, std::string_view st) {
                             if (auto l = w.load(static_cast<wire::EntityKind>(k), key, st); !l)
                               load_err = l.error();
                           });
      if (!r) return report(r.error());
      if (!load_err.message.empty()) return report(load_err);
      if (w.digest() != (*latest)->digest)
        return report(error{errc::corrupt, "snapshot digest mismatch", snaps->path()});
      replay_from = (*latest)->at;
    }
  }
  // Rebuild the in-memory state: snapshot + replay of the suffix.
  auto replayed = (*log)->read(replay_from, no_offset, [&](log_offset, messages::bytes_view b) {
    w.apply(*wire::GetEnvelope(b.data()));
    return true;
  });
  if (!replayed) return report(replayed.error());
  auto end = (*log)->end_offset();
  if (!end) return report(end.error());
  log_offset next = *end;
  std::fprintf(stderr, "generate: resuming at offset %llu (snapshot at %llu, replayed %llu)\n",
               static_cast<unsigned long long>(next), static_cast<unsigned long long>(replay_from),
               static_cast<unsigned long long>(*replayed));
  messages::event_builder b;
  std::vector<messages::byte_buffer> bufs;
  std::vector<messages::bytes_view> views;
  log_offset last_snapshot = replay_from;
  while (next < a.count) {
    const std::uint64_t n = std::min<std::uint64_t>(a.batch, a.count - next);
    bufs.clear();
    views.clear();
    for (std::uint64_t i = 0; i < n; ++i) bufs.push_back(synthetic_event(b, a.seed, next + i));
    for (const auto& x : bufs) views.emplace_back(x);
    auto first = (*log)->append(views);
    if (!first) return report(first.error());
    if (*first != next)
      return report(error{errc::failed_precondition, "another writer appended to this log",
                          (*log)->describe()});
    for (const auto& x : bufs) w.apply(*wire::GetEnvelope(x.data()));
    next += n;
    std::printf("acked %llu\n", static_cast<unsigned long long>(next - 1));
    std::fflush(stdout);
    if (snaps && a.snapshot_every > 0 && next - last_snapshot >= a.snapshot_every) {
      auto wr = snaps->begin(next);
      if (!wr) return report(wr.error());
      error put_err;
      w.for_each_encoded([&](wire::EntityKind k, std::string_view key, const std::string& st) {
        if (auto p = (*wr)->put(static_cast<std::uint8_t>(k), key, st); !p) put_err = p.error();
      });
      if (!put_err.message.empty()) return report(put_err);
      if (auto c = (*wr)->commit(w.digest()); !c) return report(c.error());
      if (auto p = snaps->prune(2); !p) return report(p.error());
      last_snapshot = next;
    }
  }
  nlohmann::ordered_json j;
  j["events"] = next;
  j["entities"] = w.entity_count();
  j["digest"] = fmt::format("{:016x}", w.digest());
  std::cout << j.dump() << "\n";
  return exit_ok;
}

}  // namespace

void add_log_commands(CLI::App& app) {
  auto* log = app.add_subcommand("log", "Read and write event logs");
  log->require_subcommand(1);

  auto* dump = log->add_subcommand("dump", "Print events as JSON lines, one per event");
  auto da = std::make_shared<dump_args>();
  auto to = std::make_shared<std::uint64_t>(0);
  dump->add_option("--log", da->log, "Log: a directory (embedded RocksDB log)")->required();
  dump->add_option("--from", da->from, "First offset (default 0)");
  auto* to_opt = dump->add_option("--to", *to, "Last offset, inclusive (default: the end)");
  dump->add_option(
      "--entity", da->entity,
      "Only events that touch KIND/KEY (node, pod, quota, job), e.g. pod/default/web-1");
  dump->callback([da, to, to_opt] {
    if (to_opt->count() > 0) da->to = *to;
    exit_status() = run_dump(*da);
  });

  auto* stats = log->add_subcommand(
      "stats", "Print a JSON summary: count, offsets, per-type counts and bytes");
  auto sl = std::make_shared<std::string>();
  stats->add_option("--log", *sl, "Log directory")->required();
  stats->callback([sl] { exit_status() = run_stats(*sl); });

  auto* gen = log->add_subcommand(
      "generate",
      "Append a deterministic synthetic event stream (recovery tests, soak, benches); "
      "resumes at the log's end");
  auto ga = std::make_shared<generate_args>();
  gen->add_option("--log", ga->log, "Log directory (created if missing)")->required();
  gen->add_option("--count", ga->count, "Total events the log should hold")->capture_default_str();
  gen->add_option("--seed", ga->seed, "Seed of the stream")->capture_default_str();
  gen->add_option("--batch", ga->batch, "Events per atomic append")->capture_default_str();
  gen->add_option("--snapshots", ga->snapshots, "Snapshot store directory (optional)");
  gen->add_option("--snapshot-every", ga->snapshot_every, "Write a snapshot every N events");
  gen->add_flag("--no-sync", ga->no_sync, "Do not fsync per batch (faster, not crash-safe)");
  gen->callback([ga] { exit_status() = run_generate(*ga); });
}

}  // namespace colony::cli
