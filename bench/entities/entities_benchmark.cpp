// Entity fold benchmarks over ~1M in-memory events (no broker, no log): what replay costs once
// the records are read.
//   entities.replay   the same stream folded into entities::world (one thread, no actors) and
//                     into entity actors (actor_host replay mode, deliver + collect) at 1 and 2
//                     CAF threads; the actor digest is checked against the world's.
//   entities.replay_binds  the same with kafka.replay's stream (1M PodScheduled, 50 000 pods).
// The stream: 5000 nodes register, then each pod is submitted, scheduled on node (i % 5000),
// started, and finished 50 000 pods later (a steady ~50k running pods, ~10 per node), with a
// NodeMetricReported every 4 pods. 250 000 pods, ~1.02M events (quick: 500 nodes, 25 000 pods).
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "actors/entities/entity_actors.hpp"
#include "actors/entities/world.hpp"
#include "bench/bind_events.hpp"
#include "bench/registry.hpp"
#include "messages/codec.hpp"

namespace colony::bench {
namespace {

struct stream_shape {
  std::uint64_t nodes = 5000;
  std::uint64_t pods = 250000;
  std::uint64_t live = 50000;  // a pod finishes this many pods after it was submitted
};

std::string pod_name(std::uint64_t i) { return "default/replay-pod-" + std::to_string(i); }
std::string node_name(std::uint64_t i) { return "node-" + std::to_string(i); }

std::vector<messages::byte_buffer> make_stream(const stream_shape& sh) {
  messages::event_builder b;
  std::vector<messages::byte_buffer> v;
  v.reserve(sh.nodes + sh.pods * 4 + sh.pods / 4);
  std::int64_t t = 0;
  for (std::uint64_t n = 0; n < sh.nodes; ++n) {
    resource_list cap;
    cap.cpu_milli = 64000;
    cap.memory_bytes = 256 * gib;
    cap.pods = 110;
    const auto name = node_name(n);
    auto& f = b.fbb();
    auto nm = f.CreateString(name);
    auto c = b.resources(cap);
    auto a = b.resources(cap);
    wire::NodeRegisteredBuilder nb(f);
    nb.add_name(nm);
    nb.add_capacity(c);
    nb.add_allocatable(a);
    v.push_back(
        b.finish({event_time{t++}, wire::EntityKind::Node, name, -1, "bench"}, nb.Finish()));
  }
  auto finished = [&](std::uint64_t i) {
    const auto pod = pod_name(i);
    const auto node = node_name(i % sh.nodes);
    auto off = wire::CreatePodFinishedDirect(b.fbb(), pod.c_str(), node.c_str(),
                                             wire::PodPhase::Succeeded);
    v.push_back(b.finish({event_time{t++}, wire::EntityKind::Pod, pod, -1, "bench"}, off));
  };
  for (std::uint64_t i = 0; i < sh.pods; ++i) {
    const auto pod = pod_name(i);
    const auto node = node_name(i % sh.nodes);
    resource_list req;
    req.cpu_milli = 100 + static_cast<std::int64_t>(i % 2000);
    req.memory_bytes = 256 * mib;
    req.pods = 1;
    {
      auto& f = b.fbb();
      auto n = f.CreateString(pod);
      auto r = b.resources(req);
      wire::PodSubmittedBuilder pb(f);
      pb.add_name(n);
      pb.add_requests(r);
      v.push_back(
          b.finish({event_time{t++}, wire::EntityKind::Pod, pod, -1, "bench"}, pb.Finish()));
    }
    {
      auto& f = b.fbb();
      auto p = f.CreateString(pod);
      auto n = f.CreateString(node);
      auto r = b.resources(req);
      auto s = f.CreateString("koord-scheduler");
      wire::PodScheduledBuilder sb(f);
      sb.add_pod(p);
      sb.add_node(n);
      sb.add_requests(r);
      sb.add_scheduler(s);
      v.push_back(
          b.finish({event_time{t++}, wire::EntityKind::Node, node, -1, "node"}, sb.Finish()));
    }
    {
      auto off = wire::CreatePodStartedDirect(b.fbb(), pod.c_str(), node.c_str());
      v.push_back(b.finish({event_time{t++}, wire::EntityKind::Pod, pod, -1, "bench"}, off));
    }
    if (i >= sh.live) finished(i - sh.live);
    if (i % 4 == 0) {
      resource_list use;
      use.cpu_milli = static_cast<std::int64_t>(i % 30000);
      use.memory_bytes = 64 * gib;
      const auto nn = node_name((i / 4) % sh.nodes);
      auto& f = b.fbb();
      auto n = f.CreateString(nn);
      auto u = b.resources(use);
      wire::NodeMetricReportedBuilder mb(f);
      mb.add_node(n);
      mb.add_update_time_ms(t);
      mb.add_node_usage(u);
      v.push_back(
          b.finish({event_time{t++}, wire::EntityKind::Node, nn, -1, "koordlet"}, mb.Finish()));
    }
  }
  return v;
}

// kafka.replay's stream (bench/kafka): every event a ~200-byte PodScheduled keyed by its node,
// pod (i % pods) on node (i % 5000), so rebinding a bound pod is the common case.
std::vector<messages::byte_buffer> make_bind_stream(std::uint64_t n, std::uint64_t pods) {
  messages::event_builder b;
  std::vector<messages::byte_buffer> v;
  v.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(colony::bench::pod_scheduled_200(b, i, pods));
  return v;
}

// Folds `events` into the world and into actors at 1 and 2 threads; figures named `name`.*.
void replay(context& ctx, const std::string& name,
            const std::vector<messages::byte_buffer>& events) {
  const auto n = static_cast<double>(events.size());
  ctx.report(name + ".events", n, "events");
  // The records as a reader hands them over: batches of 4096, built before timing.
  std::vector<std::shared_ptr<const entities::record_batch>> batches;
  for (std::size_t i = 0; i < events.size(); i += 4096) {
    auto b = std::make_shared<entities::record_batch>();
    for (std::size_t j = i; j < std::min(events.size(), i + 4096); ++j) b->add(events[j]);
    batches.push_back(std::move(b));
  }
  std::uint64_t world_digest = 0;
  std::uint64_t entities = 0;
  const double ws = seconds_of([&] {
    entities::world w;
    for (const auto& b : batches)
      for (std::size_t i = 0; i < b->size(); ++i) w.apply(b->envelope(i));
    entities = w.entity_count();
    world_digest = w.digest();
  });
  ctx.report(name + ".entities", static_cast<double>(entities), "entities");
  // The fold alone (the digest encodes every state: that run is reported separately).
  const auto wcpu0 = std::clock();
  const double fs = seconds_of([&] {
    entities::world w;
    for (const auto& b : batches)
      for (std::size_t i = 0; i < b->size(); ++i) w.apply(b->envelope(i));
    do_not_optimize(w.entity_count());
  });
  const double wcpu = static_cast<double>(std::clock() - wcpu0) / CLOCKS_PER_SEC;
  ctx.report(name + "_world.events_per_s", n / fs, "events/s");
  ctx.report(name + "_world.events_per_cpu_s", n / wcpu, "events/s");
  ctx.report(name + "_world_digest.events_per_s", n / ws, "events/s");
  for (std::size_t threads : {1u, 2u}) {
    bool ok = false;
    double collect_s = 0, shutdown_s = 0;
    const auto cpu0 = std::clock();
    const double s = seconds_of([&] {
      auto host = std::make_unique<entities::actor_host>(threads);
      for (const auto& b : batches) host->deliver(b);
      collect_s = seconds_of([&] {
        auto c = host->collect();
        ok = c && entities::digest_of(*c) == world_digest;
      });
      shutdown_s = seconds_of([&] { host.reset(); });
    });
    const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
    if (!ok) {
      std::fprintf(stderr, "bench: %s: actors at %zu threads: digest differs from the world\n",
                   name.c_str(), threads);
      return;
    }
    // events/s over the whole run (spawn, deliver, apply, collect, shutdown), and per CPU
    // second too, as the dev box is shared; collect_s: from collect() to its answer (the
    // apply phase still running, then one state round); shutdown_s: stopping every actor.
    const std::string t = name + "_actors_t" + std::to_string(threads);
    ctx.report(t + ".events_per_s", n / s, "events/s");
    ctx.report(t + ".events_per_cpu_s", n / cpu, "events/s");
    ctx.report(t + ".collect_s", collect_s, "s");
    ctx.report(t + ".shutdown_s", shutdown_s, "s");
  }
}

COLONY_BENCH("entities.replay",
             "~1M in-memory pod lifecycle events -> world, -> entity actors at 1 and 2 threads") {
  stream_shape sh;
  if (ctx.quick()) sh = {500, 25000, 5000};
  replay(ctx, "entities.replay", make_stream(sh));
}

COLONY_BENCH("entities.replay_binds",
             "kafka.replay's 1M PodScheduled in memory -> world, -> entity actors (1, 2 threads)") {
  replay(ctx, "entities.replay_binds", make_bind_stream(ctx.quick() ? 100000 : 1000000, 50000));
}

}  // namespace
}  // namespace colony::bench
