// Kafka benchmarks against a real broker named by COLONY_KAFKA_BOOTSTRAP (host:port); each
// uses fresh topics. Without the variable they print a note to stderr and report nothing.
//   kafka.produce      ~200-byte events, idempotent acks=all, 1000-event atomic appends
//   kafka.e2e_latency  append -> follow latency at a paced 10k events/s
//   kafka.read         topic -> verified records (fetch + decode), 1M events, best of 3
//   kafka.replay       topic -> verified read, -> world fold, -> entity actors (deliver, collect);
//                      1M events over 5000 nodes and 50 000 pods (steady population)
// Figures measured here: docs/subscribing.md.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>
#include <vector>

#include "actors/entities/entity_actors.hpp"
#include "actors/entities/world.hpp"
#include "bench/bind_events.hpp"
#include "bench/registry.hpp"
#include "stores/kafka_log.hpp"

namespace colony::bench {
namespace {

using clock_type = std::chrono::steady_clock;

std::string bootstrap() {
  const char* b = std::getenv("COLONY_KAFKA_BOOTSTRAP");
  if (!b || !*b) {
    std::fprintf(stderr,
                 "bench: COLONY_KAFKA_BOOTSTRAP is not set; Kafka benchmarks skipped "
                 "(start a broker: tools/peers/kafka.sh start --dir DIR)\n");
    return {};
  }
  return b;
}

std::string topic_name(const char* what) {
  std::random_device rd;
  return std::string("bench-") + what + "-" + std::to_string(rd() % 100000000);
}

// Deletes the benchmark's topic when it goes out of scope (declared before the logs that use
// it): a broker that kept every run's topics ran the same replay ~30% slower after ~50 of them.
struct dropped_topic {
  std::string name;
  explicit dropped_topic(std::string n) : name(std::move(n)) {}
  dropped_topic(const dropped_topic&) = delete;
  dropped_topic& operator=(const dropped_topic&) = delete;
  ~dropped_topic() {
    if (auto r = stores::delete_kafka_topic(name); !r)
      std::fprintf(stderr, "bench: %s\n", r.error().describe().c_str());
  }
};

std::unique_ptr<stores::kafka_log> open(const std::string& name, bool sync,
                                        bool read_only = false) {
  stores::log_options o;
  o.sync = sync;
  o.read_only = read_only;
  o.create_if_missing = !read_only;
  auto l = stores::kafka_log::open(name, o);
  if (!l) {
    std::fprintf(stderr, "bench: %s\n", l.error().describe().c_str());
    return nullptr;
  }
  return std::move(*l);
}

// ~200-byte events (bench/bind_events.hpp).
messages::byte_buffer event_200(messages::event_builder& b, std::uint64_t i) {
  return colony::bench::pod_scheduled_200(b, i);
}

// Appends events [0, n) in batches; returns seconds, or a negative value on error.
double produce(stores::kafka_log& log, std::uint64_t n, std::uint64_t batch, std::size_t* bytes) {
  messages::event_builder b;
  std::vector<messages::byte_buffer> bufs;
  std::vector<messages::bytes_view> views;
  std::size_t total = 0;
  double secs = 0;
  for (std::uint64_t at = 0; at < n; at += batch) {
    bufs.clear();
    views.clear();
    for (std::uint64_t i = at; i < std::min(n, at + batch); ++i) bufs.push_back(event_200(b, i));
    for (const auto& x : bufs) {
      views.emplace_back(x);
      total += x.size();
    }
    bool ok = true;
    secs += seconds_of([&] {
      auto r = log.append(views);
      if (!r) {
        std::fprintf(stderr, "bench: append: %s\n", r.error().describe().c_str());
        ok = false;
      }
    });
    if (!ok) return -1;
  }
  if (bytes) *bytes = total;
  return secs;
}

COLONY_BENCH("kafka.produce", "Kafka append of ~200-byte events, idempotent acks=all, 1000/batch") {
  const auto b = bootstrap();
  if (b.empty()) return;
  const std::uint64_t n = ctx.quick() ? 20000 : 300000;
  for (bool sync : {true, false}) {
    const dropped_topic topic("kafka://" + b + "/" + topic_name("produce"));
    auto log = open(topic.name, sync);
    if (!log) return;
    std::size_t bytes = 0;
    const double s = produce(*log, n, 1000, &bytes);
    if (s <= 0) return;
    const std::string name = sync ? "kafka.produce" : "kafka.produce_nosync";
    ctx.report(name + ".events_per_s", static_cast<double>(n) / s, "events/s");
    ctx.report(name + ".mb_per_s", static_cast<double>(bytes) / s / 1e6, "MB/s");
    if (sync) ctx.report("kafka.produce.event_bytes", static_cast<double>(bytes) / n, "bytes");
  }
}

// Latency of one paced run on a fresh topic (fsync per append when sync).
void e2e_latency(context& ctx, const std::string& b, bool sync) {
  const std::string name = "kafka://" + b + "/" + topic_name("latency");
  const dropped_topic topic(name);
  auto writer = open(name, sync);
  auto reader = open(name, sync, true);
  if (!writer || !reader) return;
  const double rate = 10000;  // events/s
  const std::uint64_t n = ctx.quick() ? 10000 : 50000;
  const auto t0 = clock_type::now() + std::chrono::milliseconds(500);  // reader is assigned
  auto due = [&](std::uint64_t i) {
    return t0 +
           std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 * static_cast<double>(i) / rate));
  };
  std::vector<double> latency_ms(n, -1);
  // Scheduled time -> append acknowledged: separates the producer's share of the tail from
  // the consumer's.
  std::vector<double> acked_ms(n, -1);
  std::atomic<std::uint64_t> received{0};
  std::thread follower([&] {
    auto r = reader->follow(
        0,
        [&](log_offset off, messages::bytes_view) {
          const auto now = clock_type::now();
          if (off < n)
            latency_ms[off] = std::chrono::duration<double, std::milli>(now - due(off)).count();
          return ++received < n;
        },
        [&] { return received < n; });
    if (!r) std::fprintf(stderr, "bench: follow: %s\n", r.error().describe().c_str());
  });
  // Each event is due at t0 + i/rate; every append carries the events due by then, so a slow
  // append delays later events and that delay is part of their latency.
  messages::event_builder eb;
  std::vector<messages::byte_buffer> bufs;
  std::vector<messages::bytes_view> views;
  std::uint64_t next = 0;
  while (next < n) {
    std::this_thread::sleep_until(due(next));
    const auto now = clock_type::now();
    bufs.clear();
    views.clear();
    while (next < n && due(next) <= now) bufs.push_back(event_200(eb, next++));
    for (const auto& x : bufs) views.emplace_back(x);
    const std::uint64_t first = next - bufs.size();
    if (auto r = writer->append(views); !r) {
      std::fprintf(stderr, "bench: append: %s\n", r.error().describe().c_str());
      received = n;
      break;
    }
    const auto acked = clock_type::now();
    for (auto i = first; i < next; ++i)
      acked_ms[i] = std::chrono::duration<double, std::milli>(acked - due(i)).count();
  }
  follower.join();
  std::vector<double> got;
  for (double v : latency_ms)
    if (v >= 0) got.push_back(v);
  if (got.size() != n) {
    std::fprintf(stderr, "bench: only %zu of %llu events received\n", got.size(),
                 static_cast<unsigned long long>(n));
    return;
  }
  std::sort(got.begin(), got.end());
  std::sort(acked_ms.begin(), acked_ms.end());
  auto pct = [](const std::vector<double>& v, double p) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
  };
  const std::string prefix = sync ? "kafka.e2e_latency_sync" : "kafka.e2e_latency";
  ctx.report(prefix + ".p50_ms", pct(got, 0.50), "ms");
  ctx.report(prefix + ".p99_ms", pct(got, 0.99), "ms");
  ctx.report(prefix + ".max_ms", got.back(), "ms");
  ctx.report(prefix + ".acked_p99_ms", pct(acked_ms, 0.99), "ms");
  ctx.report(prefix + ".rate", rate, "events/s");
}

COLONY_BENCH("kafka.e2e_latency", "Kafka append -> follow latency at a paced 10k events/s") {
  const auto b = bootstrap();
  if (b.empty()) return;
  e2e_latency(ctx, b, false);
  e2e_latency(ctx, b, true);  // flush.messages=1: the broker fsyncs every append
}

// The broker's ~250 MB of a freshly written topic sit in the page cache as dirty pages, and the
// kernel writes them back in bursts of ~260 MB that land inside the timed read (vmstat showed
// them with 5-7 % steal). Writing them back first measures the read, not the disk.
void settle_writeback() { ::sync(); }

// Writes n events to the topic `name` in appends of 5000, writes the broker's dirty pages back,
// and opens the topic for reading; null (the failure printed) if any step fails.
std::unique_ptr<stores::kafka_log> filled_topic(const std::string& name, std::uint64_t n) {
  {
    auto w = open(name, false);
    if (!w || produce(*w, n, 5000, nullptr) <= 0) return nullptr;
  }
  settle_writeback();
  return open(name, false, true);
}

// The consumer alone: topic -> verified records (fetch + decode), no state. Best of three
// reads of the same topic, so a stall of the shared machine in one read does not decide it.
COLONY_BENCH("kafka.read", "Kafka topic -> verified records (fetch + decode), one consumer") {
  const auto b = bootstrap();
  if (b.empty()) return;
  const std::string name = "kafka://" + b + "/" + topic_name("read");
  const dropped_topic topic(name);
  const std::uint64_t n = ctx.quick() ? 100000 : 1000000;
  auto log = filled_topic(name, n);
  if (!log) return;
  double best = 0;
  std::uint64_t bytes = 0;
  for (int run = 0; run < 3; ++run) {
    bytes = 0;
    bool ok = false;
    const double s = seconds_of([&] {
      auto r = log->read(0, no_offset, [&](log_offset, messages::bytes_view v) {
        bytes += v.size();
        return true;
      });
      ok = r && *r == n;
      if (!r) std::fprintf(stderr, "bench: read: %s\n", r.error().describe().c_str());
    });
    if (!ok) return;
    best = std::max(best, static_cast<double>(n) / s);
  }
  ctx.report("kafka.read.events_per_s", best, "events/s");
  ctx.report("kafka.read.mb_per_s", best * static_cast<double>(bytes) / n / 1e6, "MB/s");
}

COLONY_BENCH("kafka.replay", "Kafka topic -> entity actors (read, verify, deliver, collect)") {
  const auto b = bootstrap();
  if (b.empty()) return;
  const std::string name = "kafka://" + b + "/" + topic_name("replay");
  const dropped_topic topic(name);
  const std::uint64_t n = ctx.quick() ? 100000 : 1000000;
  auto log = filled_topic(name, n);
  if (!log) return;
  std::uint64_t states = 0;
  bool ok = true;
  // Wall and process CPU seconds of each pass (CPU: this thread, librdkafka's threads, the
  // actors): CPU well below wall means the pass waited (it did, on the fetcher, until the
  // reader woke it: docs/subscribing.md).
  auto report_times = [&](const std::string& what, double wall, std::clock_t cpu0) {
    ctx.report(what + ".wall_s", wall, "s");
    ctx.report(what + ".cpu_s", static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC, "s");
  };
  // The consumer alone (fetch + verify), without state.
  std::uint64_t bytes = 0;
  auto cpu0 = std::clock();
  const double rs = seconds_of([&] {
    auto r = log->read(0, no_offset, [&](log_offset, messages::bytes_view v) {
      bytes += v.size();
      return true;
    });
    ok = r && *r == n;
  });
  if (!ok) return;
  ctx.report("kafka.read.events_per_s", static_cast<double>(n) / rs, "events/s");
  report_times("kafka.read", rs, cpu0);
  // Into the world fold (one thread, no actors).
  cpu0 = std::clock();
  const double ws = seconds_of([&] {
    entities::world w;
    auto r = log->read(0, no_offset, [&](log_offset, messages::bytes_view v) {
      w.apply(*wire::GetEnvelope(v.data()));
      return true;
    });
    ok = r && *r == n;
    do_not_optimize(w.entity_count());
  });
  if (!ok) return;
  ctx.report("kafka.replay_world.events_per_s", static_cast<double>(n) / ws, "events/s");
  report_times("kafka.replay_world", ws, cpu0);
  // Into the entity actors: from the first read to every entity's state in hand (collect).
  // Starting the actor system before and stopping it after (destroying ~55k actors) are not
  // replay; they are reported on their own. Three passes over the same topic, each into a new
  // actor system: the median is the figure, with the slowest and fastest beside it (on the
  // shared 2-core box the broker and the machine move single passes by +-20%).
  struct pass {
    double s, cpu, delivered, shutdown;
  };
  std::vector<pass> passes;
  for (int k = 0; k < (ctx.quick() ? 1 : 3); ++k) {
    auto host = std::make_unique<entities::actor_host>(
        std::getenv("TMP_T") ? std::atoi(std::getenv("TMP_T")) : 0);
    pass p{};
    const auto c0 = std::clock();
    const auto t0 = std::chrono::steady_clock::now();
    p.s = seconds_of([&] {
      auto batch = std::make_shared<entities::record_batch>();
      auto r = log->read(0, no_offset, [&](log_offset, messages::bytes_view v) {
        batch->add(v);
        if (batch->size() >= 4096) {
          host->deliver(std::move(batch));
          batch = std::make_shared<entities::record_batch>();
        }
        return true;
      });
      if (batch->size() > 0) host->deliver(std::move(batch));
      p.delivered = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      auto c = host->collect();
      ok = r && *r == n && c;
      if (c) states = c->size();
    });
    p.cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    if (!ok) {
      std::fprintf(stderr, "bench: replay failed\n");
      return;
    }
    p.shutdown = seconds_of([&] { host.reset(); });
    passes.push_back(p);
  }
  do_not_optimize(states);
  std::sort(passes.begin(), passes.end(), [](const pass& a, const pass& b) { return a.s < b.s; });
  const pass& med = passes[passes.size() / 2];
  const double nd = static_cast<double>(n);
  ctx.report("kafka.replay_actors.events_per_s", nd / med.s, "events/s");
  ctx.report("kafka.replay_actors.slowest_events_per_s", nd / passes.back().s, "events/s");
  ctx.report("kafka.replay_actors.fastest_events_per_s", nd / passes.front().s, "events/s");
  ctx.report("kafka.replay_actors.wall_s", med.s, "s");
  ctx.report("kafka.replay_actors.cpu_s", med.cpu, "s");
  // When the reader had handed its last batch over; the rest of the wall is the actors
  // catching up and the state round.
  ctx.report("kafka.replay_actors.delivered_s", med.delivered, "s");
  ctx.report("kafka.replay_actors.shutdown_s", med.shutdown, "s");
  ctx.report("kafka.replay_actors.entities", static_cast<double>(states), "actors");
}

}  // namespace
}  // namespace colony::bench

namespace colony::bench {
namespace {

// kafka.group_consume: one consumer-group member (kafka_log::consume_group, what `colony
// consume --group` runs) reads a 6-partition topic of 1M events (plus the mirrors the
// partitioned append writes) into a handler that only counts and checks order: the records/s
// from the first record to the last (the group join before it is reported on its own). Best
// of two members, each in a fresh group. Then one member whose handler spends 2 us a record
// (a slow sink: the local queue fills, and librdkafka's fetcher stops and sleeps): its
// records/s and its longest wait between two records.
COLONY_BENCH("kafka.group_consume", "Kafka consumer group: one member, 6 partitions, 1M events") {
  const auto b = bootstrap();
  if (b.empty()) return;
  const std::string name = "kafka://" + b + "/" + topic_name("group") + "?partitions=6";
  const dropped_topic topic(name);
  const std::uint64_t n = ctx.quick() ? 100000 : 1000000;
  auto log = filled_topic(name, n);
  if (!log) return;
  auto ends = log->partition_ends();
  if (!ends) {
    std::fprintf(stderr, "bench: %s\n", ends.error().describe().c_str());
    return;
  }
  std::uint64_t total = 0;
  for (auto e : *ends) total += e;
  struct member final : stores::group_handler {
    std::vector<log_offset> next = std::vector<log_offset>(6, 0);
    std::uint64_t total = 0;
    std::chrono::nanoseconds spin{0};
    std::uint64_t seen = 0;
    bool in_order = true;
    clock_type::time_point first{}, last{};
    clock_type::duration longest{};
    result<log_offset> assigned(std::int32_t p) override {
      next.at(static_cast<std::size_t>(p)) = 0;
      return log_offset{0};
    }
    result<void> revoked(std::int32_t, bool) override { return {}; }
    result<void> record(std::int32_t p, log_offset off, messages::bytes_view v) override {
      const auto now = clock_type::now();
      auto& x = next[static_cast<std::size_t>(p)];
      in_order = in_order && off == x && !v.empty();
      x = off + 1;
      if (seen++ == 0)
        first = now;
      else
        longest = std::max(longest, now - last);
      if (spin.count() > 0)
        while (clock_type::now() - now < spin) {
        }
      last = spin.count() > 0 ? clock_type::now() : now;
      return {};
    }
    result<void> tick() override { return {}; }
  };
  struct outcome {
    double rate = -1;  // records/s; < 0: failed
    double join_s = 0;
    double longest_s = 0;
  };
  auto run = [&](std::chrono::nanoseconds spin) -> outcome {
    member m;
    m.total = total;
    m.spin = spin;
    const auto t0 = clock_type::now();
    const auto deadline = t0 + std::chrono::seconds(300);
    auto r = log->consume_group(topic_name("group-g"), m,
                                [&] { return m.seen < total && clock_type::now() < deadline; });
    if (!r || m.seen != total || !m.in_order) {
      std::fprintf(stderr, "bench: group consume: %s (%llu of %llu records%s)\n",
                   r ? "stopped" : r.error().describe().c_str(),
                   static_cast<unsigned long long>(m.seen), static_cast<unsigned long long>(total),
                   m.in_order ? "" : ", out of order");
      return {};
    }
    return outcome{
        static_cast<double>(total) / std::chrono::duration<double>(m.last - m.first).count(),
        std::chrono::duration<double>(m.first - t0).count(),
        std::chrono::duration<double>(m.longest).count()};
  };
  double best = 0, join_s = 0;
  for (int i = 0; i < 2; ++i) {
    const auto o = run(std::chrono::nanoseconds(0));
    if (o.rate < 0) return;
    if (o.rate > best) {
      best = o.rate;
      join_s = o.join_s;
    }
  }
  ctx.report("kafka.group_consume.records_per_s", best, "records/s");
  ctx.report("kafka.group_consume.records", static_cast<double>(total), "records");
  ctx.report("kafka.group_consume.join_s", join_s, "s");
  const auto slow = run(std::chrono::nanoseconds(2000));
  if (slow.rate < 0) return;
  ctx.report("kafka.group_consume_slow.records_per_s", slow.rate, "records/s");
  ctx.report("kafka.group_consume_slow.longest_wait_ms", slow.longest_s * 1000, "ms");
}

}  // namespace
}  // namespace colony::bench
