// quota_component fed built envelopes: QuotaRuntimeUpdated values against a quota_tree
// computed directly, change-only emission, used following bind/finish, determinism.
#include "actors/quota/actor/quota_component.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "tests/actors/quota_actor/quota_test_events.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"

namespace colony {
namespace {

using messages::to_resource_list;
using messages::to_string_view;
using testing::cpu_mem;
using testing::gib;

using rig = testing::quota_component_rig<quota::quota_component>;

// name -> the emitted status.
std::map<std::string, const wire::QuotaRuntimeUpdated*> by_name(
    const std::vector<messages::byte_buffer>& out) {
  std::map<std::string, const wire::QuotaRuntimeUpdated*> m;
  for (const auto& r : out) {
    const auto* u = testing::env_of(r).payload_as_QuotaRuntimeUpdated();
    EXPECT_NE(u, nullptr);
    if (u != nullptr) m[std::string(to_string_view(u->name()))] = u;
  }
  return m;
}

quota::quota_spec spec(const std::string& name, const resource_list& min,
                       const resource_list& max) {
  return quota::decode_quota(name, "default", {}, {}, {min, quota::nonzero_keys(min)},
                             {max, quota::nonzero_keys(max)});
}

quota::quota_pod qpod(const std::string& name, const std::string& quota, std::int64_t cpu,
                      std::int64_t mem, bool assigned = false) {
  quota::quota_pod p;
  p.name = name;
  p.namespace_name = name.substr(0, name.find('/'));
  p.quota = quota;
  p.request = cpu_mem(cpu, mem);
  p.assigned = assigned;
  return p;
}

// Two quotas under the root competing for a 10-core cluster: the emitted runtime, used and
// request are what a quota_tree fed the same specs and pods computes.
TEST(QuotaComponent, EmitsRuntimeEqualToTheTreeComputedDirectly) {
  rig r;
  auto out =
      r.batch({r.f.node(0, "n1", 6000, 24 * gib), r.f.node(0, "n2", 4000, 16 * gib),
               r.q.quota(1, "qa", cpu_mem(2000, 4 * gib), cpu_mem(8000, 32 * gib)),
               r.q.quota(1, "qb", cpu_mem(3000, 4 * gib), cpu_mem(8000, 32 * gib)),
               r.q.pod(2, "ns/a1", 4000, 2 * gib, "qa"), r.q.pod(2, "ns/a2", 3000, 2 * gib, "qa"),
               r.q.pod(2, "ns/b1", 5000, 8 * gib, "qb"), r.q.pod(2, "ns/x", 500, gib, "")});

  quota::quota_tree direct;
  ASSERT_TRUE(direct.upsert_quota(spec("qa", cpu_mem(2000, 4 * gib), cpu_mem(8000, 32 * gib))));
  ASSERT_TRUE(direct.upsert_quota(spec("qb", cpu_mem(3000, 4 * gib), cpu_mem(8000, 32 * gib))));
  ASSERT_TRUE(direct.upsert_pod(qpod("ns/a1", "qa", 4000, 2 * gib)));
  ASSERT_TRUE(direct.upsert_pod(qpod("ns/a2", "qa", 3000, 2 * gib)));
  ASSERT_TRUE(direct.upsert_pod(qpod("ns/b1", "qb", 5000, 8 * gib)));
  ASSERT_TRUE(direct.upsert_pod(qpod("ns/x", std::string(names::default_quota_name), 500, gib)));
  resource_list total = cpu_mem(10000, 40 * gib);
  total.pods = 220;
  direct.set_cluster_total(total);
  const auto changed = direct.refresh();

  // One event per quota the direct tree reports changed (all, on the first refresh), in name
  // order, each equal to the direct status.
  ASSERT_EQ(out.size(), changed.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& env = testing::env_of(out[i]);
    const auto* u = env.payload_as_QuotaRuntimeUpdated();
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(to_string_view(env.source()), "koord-scheduler/elastic-quota");
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::ElasticQuota);
    EXPECT_EQ(to_string_view(env.entity_key()), changed[i].name);
    EXPECT_EQ(env.causation(), 7);  // the batch's last event that changed the book (ns/x)
    EXPECT_EQ(env.event_time_ms(), 2);
    EXPECT_EQ(to_string_view(u->name()), changed[i].name);
    EXPECT_EQ(to_resource_list(u->runtime()),
              quota::masked(changed[i].runtime, changed[i].runtime_keys))
        << changed[i].name;
    EXPECT_EQ(u->runtime_keys(), changed[i].runtime_keys);
    EXPECT_EQ(to_resource_list(u->used()), changed[i].used);
    EXPECT_EQ(to_resource_list(u->request()), changed[i].request);
    EXPECT_EQ(to_resource_list(u->non_preemptible_used()), changed[i].non_preemptible_used);
  }
  auto m = by_name(out);
  ASSERT_TRUE(m.count("qa") && m.count("qb"));
  // The numbers themselves: requests 7000 and 5000 compete for 10 cores with mins 2000/3000
  // and equal weights (max): every core is divided, each quota gets at least its min and at
  // most its request.
  const auto ra = m["qa"]->runtime()->cpu_milli();
  const auto rb = m["qb"]->runtime()->cpu_milli();
  EXPECT_EQ(ra + rb, 10000);
  EXPECT_LE(ra, 7000);
  EXPECT_LE(rb, 5000);
  EXPECT_GE(ra, 2000);
  EXPECT_GE(rb, 3000);
  EXPECT_EQ(m["qa"]->request()->cpu_milli(), 7000);
  EXPECT_EQ(m["qa"]->used()->cpu_milli(), 0);  // nothing bound yet
  EXPECT_EQ(r.c.tree().pod("ns/x")->quota, names::default_quota_name);
}

TEST(QuotaComponent, NoEventWhenNothingChanged) {
  rig r;
  auto first = r.batch({r.f.node(0, "n1", 8000, 32 * gib),
                        r.q.quota(1, "qa", cpu_mem(1000, gib), cpu_mem(4000, 8 * gib)),
                        r.q.pod(2, "ns/a1", 1000, gib, "qa")});
  EXPECT_FALSE(first.empty());
  EXPECT_TRUE(r.batch({r.f.tick(10)}).empty());
  // A duplicate submission and a finish of an unknown pod change nothing.
  EXPECT_TRUE(
      r.batch({r.q.pod(11, "ns/a1", 1000, gib, "qa"), r.q.finished(12, "ns/none")}).empty());
  // Re-upserting a quota with the same spec recomputes, but nothing differs: no event.
  EXPECT_TRUE(r.batch({r.q.quota(13, "qa", cpu_mem(1000, gib), cpu_mem(4000, 8 * gib))}).empty());
  // A new pod in qa changes qa's request (and so its runtime): qa only, not the others.
  auto out = r.batch({r.q.pod(14, "ns/a2", 500, gib, "qa")});
  ASSERT_EQ(out.size(), 1u);
  auto m = by_name(out);
  ASSERT_TRUE(m.count("qa"));
  EXPECT_EQ(m["qa"]->request()->cpu_milli(), 1500);
  EXPECT_EQ(m["qa"]->runtime()->cpu_milli(), 1500);
}

TEST(QuotaComponent, UsedFollowsBindAndFinish) {
  rig r;
  (void)r.batch({r.f.node(0, "n1", 8000, 32 * gib),
                 r.q.quota(1, "qa", cpu_mem(1000, gib), cpu_mem(4000, 8 * gib)),
                 r.q.pod(2, "ns/a1", 1000, gib, "qa"), r.q.pod(2, "ns/a2", 2000, gib, "qa")});
  auto out = r.batch({r.f.scheduled(3, "ns/a1", "n1", 1000, gib, 5, "koord-scheduler/0")});
  ASSERT_EQ(out.size(), 1u);
  auto m = by_name(out);
  ASSERT_TRUE(m.count("qa"));
  EXPECT_EQ(to_resource_list(m["qa"]->used()), cpu_mem(1000, gib));
  EXPECT_EQ(m["qa"]->request()->cpu_milli(), 3000);  // request counts pending and bound pods

  out = r.batch({r.f.scheduled(4, "ns/a2", "n1", 2000, gib, 6, "koord-scheduler/0")});
  m = by_name(out);
  ASSERT_TRUE(m.count("qa"));
  EXPECT_EQ(to_resource_list(m["qa"]->used()), cpu_mem(3000, 2 * gib));

  out = r.batch({r.q.finished(5, "ns/a1")});
  m = by_name(out);
  ASSERT_TRUE(m.count("qa"));
  EXPECT_EQ(to_resource_list(m["qa"]->used()), cpu_mem(2000, gib));
  EXPECT_EQ(m["qa"]->request()->cpu_milli(), 2000);
  EXPECT_EQ(testing::env_of(out[0]).causation(), static_cast<std::int64_t>(r.stamp.next - 1));
  EXPECT_EQ(r.c.tree().status("qa")->used, cpu_mem(2000, gib));
}

// A pod submitted before its quota exists is booked to the default quota, then moves to the
// quota once it appears (and back when it is deleted).
TEST(QuotaComponent, PodsFollowTheirQuotaWhenItAppearsAndGoes) {
  rig r;
  (void)r.batch({r.f.node(0, "n1", 8000, 32 * gib), r.q.pod(1, "ns/a1", 1000, gib, "qa")});
  EXPECT_EQ(r.c.tree().pod("ns/a1")->quota, names::default_quota_name);
  auto out = r.batch({r.q.quota(2, "qa", cpu_mem(1000, gib), cpu_mem(4000, 8 * gib))});
  EXPECT_EQ(r.c.tree().pod("ns/a1")->quota, "qa");
  auto m = by_name(out);
  ASSERT_TRUE(m.count("qa"));
  EXPECT_EQ(m["qa"]->request()->cpu_milli(), 1000);
  ASSERT_TRUE(m.count(std::string(names::default_quota_name)));
  EXPECT_EQ(m[std::string(names::default_quota_name)]->request()->cpu_milli(), 0);
  (void)r.batch({r.q.quota_deleted(3, "qa")});
  EXPECT_EQ(r.c.tree().pod("ns/a1")->quota, names::default_quota_name);
  EXPECT_EQ(r.c.tree().status("qa"), nullptr);
}

// Property: over seeded random batches of quota, node and pod events, the last emitted status
// of every quota equals its current status (no change is missed, no stale value stays).
TEST(QuotaComponent, LastEmittedStatusEqualsTheTreeOverRandomBatches) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    rig r;
    std::mt19937_64 rng(seed);
    std::map<std::string, std::vector<std::uint8_t>> last;  // quota -> last emitted record
    const std::vector<std::string> quotas = {"qa", "qb", "qc", "qd"};
    std::vector<std::string> live;  // submitted pods not finished
    std::int64_t t = 0;
    for (int b = 0; b < 30; ++b) {
      std::vector<messages::byte_buffer> recs;
      const int n = static_cast<int>(rng() % 4);
      for (int k = 0; k < n; ++k) {
        ++t;
        switch (rng() % 6) {
          case 0: {
            const auto& q = quotas[rng() % quotas.size()];
            const auto mn = static_cast<std::int64_t>(rng() % 4000);
            recs.push_back(
                r.q.quota(t, q, cpu_mem(mn, gib),
                          cpu_mem(mn + static_cast<std::int64_t>(rng() % 8000), 64 * gib),
                          q == "qd" ? "qc" : "", q == "qc"));
            break;
          }
          case 1:
            recs.push_back(r.f.node(t, "n" + std::to_string(rng() % 3),
                                    4000 + static_cast<std::int64_t>(rng() % 8) * 1000, 32 * gib));
            break;
          case 2:
          case 3: {
            const std::string pod = "ns/p" + std::to_string(t);
            recs.push_back(r.q.pod(t, pod, 100 + static_cast<std::int64_t>(rng() % 3000), gib,
                                   rng() % 5 == 0 ? "" : quotas[rng() % quotas.size()]));
            live.push_back(pod);
            break;
          }
          case 4:
            if (!live.empty())
              recs.push_back(r.f.scheduled(t, live[rng() % live.size()], "n0", 0, 0, 0, "s"));
            break;
          default:
            if (!live.empty()) {
              const std::size_t i = rng() % live.size();
              recs.push_back(r.q.finished(t, live[i]));
              live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
            }
            break;
        }
      }
      auto out = r.batch(std::move(recs));
      std::string prev;
      for (auto& rec : out) {
        const auto* u = testing::env_of(rec).payload_as_QuotaRuntimeUpdated();
        ASSERT_NE(u, nullptr);
        const std::string name(to_string_view(u->name()));
        EXPECT_LT(prev, name) << "quota-name order, seed " << seed;
        prev = name;
        last[name] = rec;
      }
    }
    for (const auto& name : r.c.tree().quota_names()) {
      const auto* st = r.c.tree().status(name);
      ASSERT_NE(st, nullptr);
      ASSERT_TRUE(last.count(name)) << name << " never emitted, seed " << seed;
      const auto* u = testing::env_of(last[name]).payload_as_QuotaRuntimeUpdated();
      EXPECT_EQ(to_resource_list(u->runtime()), quota::masked(st->runtime, st->runtime_keys))
          << name << " seed " << seed;
      EXPECT_EQ(to_resource_list(u->used()), st->used) << name << " seed " << seed;
      EXPECT_EQ(to_resource_list(u->request()), st->request) << name << " seed " << seed;
    }
  }
}

TEST(QuotaComponent, SameEventsGiveSameBytes) {
  auto run = [] {
    rig r;
    std::vector<messages::byte_buffer> all;
    auto add = [&all](std::vector<messages::byte_buffer> v) {
      for (auto& x : v) all.push_back(std::move(x));
    };
    add(r.batch({r.f.node(0, "n1", 6000, 24 * gib), r.f.node(0, "n2", 4000, 16 * gib),
                 r.q.quota(1, "parent", cpu_mem(4000, 8 * gib), cpu_mem(10000, 40 * gib), "", true),
                 r.q.quota(1, "qa", cpu_mem(2000, 4 * gib), cpu_mem(8000, 32 * gib), "parent"),
                 r.q.quota(1, "qb", cpu_mem(1000, 4 * gib), cpu_mem(8000, 32 * gib), "parent"),
                 r.q.quota(1, "qc", cpu_mem(1000, 4 * gib), cpu_mem(8000, 32 * gib))}));
    for (int i = 0; i < 12; ++i) {
      const std::string q = i % 3 == 0 ? "qa" : i % 3 == 1 ? "qb" : "qc";
      const std::string pod = "ns/p" + std::to_string(i);
      add(r.batch({r.q.pod(10 + i, pod, 700 + 100 * i, gib, q)}));
      if (i % 2 == 0)
        add(r.batch({r.f.scheduled(11 + i, pod, i % 4 == 0 ? "n1" : "n2", 700 + 100 * i, gib, 0,
                                   "koord-scheduler/0")}));
      if (i % 5 == 4) add(r.batch({r.q.finished(12 + i, "ns/p" + std::to_string(i - 4))}));
    }
    return all;
  };
  const auto a = run();
  const auto b = run();
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace colony
