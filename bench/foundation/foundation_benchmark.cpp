// Foundation benchmarks: embedded log append/read, codec, actor memory, snapshot + restore.
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "actors/entities/entity_actors.hpp"
#include "actors/entities/world.hpp"
#include "bench/bind_events.hpp"
#include "bench/registry.hpp"
#include "stores/event_log.hpp"
#include "stores/snapshot_store.hpp"

namespace colony::bench {
namespace {

namespace fs = std::filesystem;

struct scratch_dir {
  fs::path path;
  scratch_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("colony-bench-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// ~200-byte event: a pod scheduled with requests, every pod a new one (bench/bind_events.hpp).
messages::byte_buffer event_200(messages::event_builder& b, std::uint64_t i) {
  return pod_scheduled_200(b, i, std::numeric_limits<std::uint64_t>::max());
}

COLONY_BENCH("log.append", "embedded RocksDB log: append ~200-byte events, WAL synced per batch") {
  messages::event_builder b;
  const std::uint64_t total = ctx.quick() ? 20000 : 400000;
  std::vector<messages::byte_buffer> events;
  for (std::uint64_t i = 0; i < total; ++i) events.push_back(event_200(b, i));
  ctx.report("log.event_bytes", static_cast<double>(events[0].size()), "bytes");
  for (std::size_t batch : {1u, 64u, 1024u}) {
    scratch_dir d;
    auto log = stores::open_log((d.path / "log").string(), stores::log_options{});
    if (!log) return;
    // Batch 1 syncs per event: bound its run by count, not by the big total.
    const std::uint64_t n = batch == 1 ? std::min<std::uint64_t>(total, 2000) : total;
    std::vector<messages::bytes_view> views;
    double s = seconds_of([&] {
      for (std::uint64_t i = 0; i < n; i += batch) {
        views.assign(events.begin() + static_cast<std::ptrdiff_t>(i),
                     events.begin() + static_cast<std::ptrdiff_t>(std::min(n, i + batch)));
        auto r = (*log)->append(views);
        do_not_optimize(r);
      }
    });
    ctx.report("log.append.batch" + std::to_string(batch), static_cast<double>(n) / s, "events/s");
  }
}

COLONY_BENCH("log.read",
             "embedded RocksDB log: sequential verified read, and replay into the world") {
  messages::event_builder b;
  const std::uint64_t total = ctx.quick() ? 50000 : 1000000;
  scratch_dir d;
  auto log = stores::open_log((d.path / "log").string(), stores::log_options{});
  if (!log) return;
  std::vector<messages::byte_buffer> events;
  std::vector<messages::bytes_view> views;
  for (std::uint64_t i = 0; i < total; i += 4096) {
    events.clear();
    for (std::uint64_t j = i; j < std::min(total, i + 4096); ++j) events.push_back(event_200(b, j));
    views.assign(events.begin(), events.end());
    (void)(*log)->append(views);
  }
  std::uint64_t bytes = 0;
  double s = seconds_of([&] {
    auto n = (*log)->read(0, no_offset, [&](log_offset, messages::bytes_view v) {
      bytes += v.size();
      return true;
    });
    do_not_optimize(n);
  });
  ctx.report("log.read", static_cast<double>(total) / s, "events/s");
  entities::world w;
  s = seconds_of([&] {
    auto n = (*log)->read(0, no_offset, [&](log_offset, messages::bytes_view v) {
      w.apply(*wire::GetEnvelope(v.data()));
      return true;
    });
    do_not_optimize(n);
  });
  ctx.report("log.replay_world", static_cast<double>(total) / s, "events/s");
  entities::actor_host host;
  s = seconds_of([&] {
    auto batch = std::make_shared<entities::record_batch>();
    auto n = (*log)->read(0, no_offset, [&](log_offset, messages::bytes_view v) {
      batch->add(v);
      if (batch->size() == 4096) {
        host.deliver(std::move(batch));
        batch = std::make_shared<entities::record_batch>();
      }
      return true;
    });
    if (batch->size()) host.deliver(batch);
    auto c = host.actor_count();  // waits until the router has routed everything
    do_not_optimize(c);
    auto st = host.collect();  // waits until every actor has applied its events
    do_not_optimize(st);
  });
  ctx.report("log.replay_actors", static_cast<double>(total) / s, "events/s");
}

COLONY_BENCH("codec", "FlatBuffers envelope encode and verify-then-decode") {
  messages::event_builder b;
  const int n = ctx.quick() ? 100000 : 2000000;
  messages::byte_buffer last;
  double s = seconds_of([&] {
    for (int i = 0; i < n; ++i) {
      last = event_200(b, static_cast<std::uint64_t>(i));
      do_not_optimize(last);
    }
  });
  ctx.report("codec.encode", s / n * 1e9, "ns/event");
  s = seconds_of([&] {
    for (int i = 0; i < n; ++i) {
      auto d = messages::decode(last, "bench");
      do_not_optimize(d);
    }
  });
  ctx.report("codec.decode", s / n * 1e9, "ns/event");
}

// One actor per pod with its state: RSS growth per actor.
void actor_memory(context& ctx, std::uint64_t pods) {
  messages::event_builder b;
  entities::actor_host host(2);
  const auto before = bench::rss_bytes();
  for (std::uint64_t i = 0; i < pods; i += 4096) {
    auto batch = std::make_shared<entities::record_batch>();
    for (std::uint64_t j = i; j < std::min(pods, i + 4096); ++j) {
      resource_list req;
      req.cpu_milli = 500;
      req.memory_bytes = gib;
      auto name = "default/pod-" + std::to_string(j);
      auto& f = b.fbb();
      auto n = f.CreateString(name);
      auto r = b.resources(req);
      wire::PodSubmittedBuilder pb(f);
      pb.add_name(n);
      pb.add_requests(r);
      batch->add(b.finish({event_time{0}, wire::EntityKind::Pod, name, -1, "bench"}, pb.Finish()));
    }
    host.deliver(batch);
  }
  auto c = host.actor_count();
  // After the barrier every mailbox is drained: what is left is actors and their state.
  auto synced = host.sync();
  do_not_optimize(synced);
  const auto after = bench::rss_bytes();
  ctx.report("actors.memory_per_pod." + std::to_string(pods),
             static_cast<double>(after - before) / static_cast<double>(c ? *c : 1), "bytes");
}

COLONY_BENCH("actors.memory", "memory per entity actor with state, at 100k and 1M pods") {
  actor_memory(ctx, 100000);
  if (!ctx.quick()) actor_memory(ctx, 1000000);
}

COLONY_BENCH("snapshot", "snapshot write and restore + replay of 1M pods") {
  const std::uint64_t pods = ctx.quick() ? 100000 : 1000000;
  messages::event_builder b;
  entities::world w;
  for (std::uint64_t j = 0; j < pods; ++j) {
    resource_list req;
    req.cpu_milli = 500;
    auto name = "default/pod-" + std::to_string(j);
    auto& f = b.fbb();
    auto n = f.CreateString(name);
    auto r = b.resources(req);
    wire::PodSubmittedBuilder pb(f);
    pb.add_name(n);
    pb.add_requests(r);
    auto e = b.finish({event_time{0}, wire::EntityKind::Pod, name, -1, "bench"}, pb.Finish());
    w.apply(*wire::GetEnvelope(e.data()));
  }
  scratch_dir d;
  auto store = stores::snapshot_store::open((d.path / "snap").string(), true);
  if (!store) return;
  const auto digest = w.digest();
  double s = seconds_of([&] {
    auto wr = (*store)->begin(pods);
    w.for_each_encoded([&](wire::EntityKind k, std::string_view key, const std::string& st) {
      (void)(*wr)->put(static_cast<std::uint8_t>(k), key, st);
    });
    (void)(*wr)->commit(digest);
  });
  ctx.report("snapshot.write." + std::to_string(pods), s, "s");
  entities::world r;
  s = seconds_of([&] {
    auto latest = (*store)->latest();
    (void)(*store)->read((*latest)->at,
                         [&](std::uint8_t k, std::string_view key, std::string_view st) {
                           (void)r.load(static_cast<wire::EntityKind>(k), key, st);
                         });
  });
  ctx.report("snapshot.restore." + std::to_string(pods), s, "s");
  ctx.report("snapshot.restored_digest_matches", r.digest() == digest ? 1 : 0, "bool");
}

}  // namespace
}  // namespace colony::bench
