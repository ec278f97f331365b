// The live actor_host run over a real log until nothing more happens, as `colony run` drives
// it: each round delivers what the log holds past the last delivery and appends what the
// host's components and entity actors wrote back. Shared by the host tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "actors/entities/entity_actors.hpp"
#include "stores/event_log.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"

namespace colony::testing {

// What the host writes, collected by its output callback.
struct host_output {
  std::mutex m;
  std::vector<messages::byte_buffer> got;
  [[nodiscard]] entities::decision_sink sink() {
    return [this](std::vector<messages::byte_buffer> v) {
      std::lock_guard lk(m);
      for (auto& r : v) got.push_back(std::move(r));
    };
  }
  std::vector<messages::byte_buffer> take() {
    std::lock_guard lk(m);
    std::vector<messages::byte_buffer> out;
    out.swap(got);
    return out;
  }
};

struct host_run {
  int rounds = 0;
  bool quiescent = false;
};

// Rounds until `idle_rounds` rounds in a row wrote nothing (quiescent) or `max_rounds`. After a
// round that wrote nothing, `on_idle(clock)` may append observations (returns true if it did);
// otherwise the clock ticks 1 s (ClockTicked), so backoffs and wake-ups come due.
inline host_run run_host(stores::event_log& log, entities::actor_host& host, host_output& out,
                         event_factory& f, std::int64_t clock, int max_rounds, int idle_rounds,
                         const std::function<bool(std::int64_t)>& on_idle = {}) {
  host_run res;
  auto append = [&](const std::vector<messages::byte_buffer>& recs) {
    std::vector<messages::bytes_view> views(recs.begin(), recs.end());
    auto r = log.append(views);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  };
  log_offset next = 0;
  int idle = 0;
  for (res.rounds = 0; res.rounds < max_rounds; ++res.rounds) {
    auto batch = std::make_shared<entities::record_batch>();
    auto rd = log.read(next, no_offset, [&](log_offset, messages::bytes_view b) {
      batch->add(b);
      return true;
    });
    EXPECT_TRUE(rd.has_value());
    next += batch->size();
    if (batch->size() > 0) host.deliver(batch);
    EXPECT_TRUE(host.sync().has_value());
    auto wrote = out.take();
    if (!wrote.empty()) {
      idle = 0;
      append(wrote);
      continue;
    }
    if (on_idle && on_idle(clock)) continue;
    if (++idle > idle_rounds) {
      res.quiescent = true;
      break;
    }
    clock += 1000;
    append({f.tick(clock)});
  }
  return res;
}

}  // namespace colony::testing
