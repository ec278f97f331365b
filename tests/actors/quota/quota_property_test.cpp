// Property tests of the runtime fixed point over seeded random quota trees: runtime <= max,
// min guarantee when the parent covers the children's mins, conservation (Σ children's
// runtime <= parent runtime), and determinism across insertion orders.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/quota/quota_tree.hpp"
#include "tests/actors/quota/test_helpers.hpp"

namespace colony::quota {
namespace {

using namespace colony::quota::testing;

// Raw mt19937_64 output only (no std::*_distribution, whose output differs across libraries).
struct rng {
  std::mt19937_64 engine;
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : engine() % n; }
  bool chance(std::uint64_t one_in) { return below(one_in) == 0; }
};

template <class T>
void shuffle(std::vector<T>& v, rng& r) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[r.below(i)]);
}

struct random_world {
  std::vector<quota_spec> quotas;  // creation order: parents before children
  std::vector<quota_pod> pods;
  resource_list total;
};

random_world make_world(std::uint64_t seed) {
  rng r{std::mt19937_64{seed}};
  random_world w;
  const int n = 10 + static_cast<int>(r.below(50));
  std::vector<int> parents;  // indices usable as parents
  for (int i = 0; i < n; ++i) {
    quota_spec q;
    // Names unrelated to creation order, so name order differs from insertion order.
    q.name = "q" + std::to_string(r.below(1'000'000)) + "-" + std::to_string(i);
    if (!parents.empty() && !r.chance(3)) {
      q.parent = w.quotas[static_cast<std::size_t>(parents[r.below(parents.size())])].name;
    }
    q.max_keys = q.min_keys = key::cpu | key::memory;
    q.max = res2(1'000 + static_cast<std::int64_t>(r.below(200'000)),
                 (1 + static_cast<std::int64_t>(r.below(64))) * colony::gib);
    q.min = res2(r.chance(4) ? 0
                             : static_cast<std::int64_t>(
                                   r.below(static_cast<std::uint64_t>(q.max.cpu_milli) / 2 + 1)),
                 r.chance(4) ? 0
                             : static_cast<std::int64_t>(r.below(
                                   static_cast<std::uint64_t>(q.max.memory_bytes) / 2 + 1)));
    if (r.chance(3)) {  // explicit, uneven shared weights
      q.shared_weight =
          res2(static_cast<std::int64_t>(r.below(100)), static_cast<std::int64_t>(r.below(100)));
      q.shared_weight_keys = key::cpu | key::memory;
    }
    q.allow_lent_resource = !r.chance(5);
    q.is_parent = r.chance(2);
    if (q.is_parent) parents.push_back(i);
    w.quotas.push_back(q);
  }
  int pod_serial = 0;
  for (const auto& q : w.quotas) {
    const int count = static_cast<int>(r.below(4));
    for (int p = 0; p < count; ++p) {
      quota_pod pod;
      pod.name = "ns/pod-" + std::to_string(pod_serial++);
      pod.quota = q.name;
      pod.request =
          res2(static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(q.max.cpu_milli))),
               static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(q.max.memory_bytes))));
      pod.assigned = r.chance(2);
      pod.non_preemptible = r.chance(6);
      w.pods.push_back(pod);
    }
  }
  w.total = res2(50'000 + static_cast<std::int64_t>(r.below(2'000'000)),
                 (16 + static_cast<std::int64_t>(r.below(1024))) * colony::gib);
  return w;
}

void load(quota_tree& t, const random_world& w) {
  t.set_cluster_total(w.total);
  for (const auto& q : w.quotas) ASSERT_TRUE(t.upsert_quota(q));
  for (const auto& p : w.pods) ASSERT_TRUE(t.upsert_pod(p));
}

constexpr int kSeeds = 300;

TEST(QuotaTreeProperty, RuntimeNeverExceedsMax) {
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    auto w = make_world(seed);
    quota_tree t;
    load(t, w);
    t.refresh();
    for (const auto& q : w.quotas) {
      const auto* s = t.status(q.name);
      ASSERT_NE(s, nullptr);
      EXPECT_TRUE(s->runtime.fits_in(q.max)) << "seed " << seed << " quota " << q.name;
      EXPECT_GE(s->runtime.cpu_milli, 0);
      EXPECT_GE(s->runtime.memory_bytes, 0);
    }
  }
}

// For every parent (and every tree root): Σ children's runtime <= the parent's total; and a
// child whose (limited) request reaches its min gets at least its min when the total covers
// the sum of the children's mins.
TEST(QuotaTreeProperty, ConservationAndMinGuarantee) {
  int guarantees_checked = 0;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    auto w = make_world(seed);
    quota_tree t;
    load(t, w);
    t.refresh();
    // parent name ("" = root) → children
    std::map<std::string, std::vector<const quota_spec*>> children;
    for (const auto& q : w.quotas) children[q.parent].push_back(&q);
    for (const auto& [parent, kids] : children) {
      const resource_list total = parent.empty() ? t.tree_total("") : t.status(parent)->runtime;
      resource_list sum_runtime, sum_min;
      for (const auto* k : kids) {
        sum_runtime += t.status(k->name)->runtime;
        sum_min += k->min;
      }
      EXPECT_TRUE(sum_runtime.fits_in(total)) << "seed " << seed << " parent '" << parent << "'";
      for (int key_index : {0, 1}) {
        if (field(total, key_index) < field(sum_min, key_index)) continue;
        for (const auto* k : kids) {
          const auto* s = t.status(k->name);
          if (field(s->limited_request, key_index) >= field(k->min, key_index)) {
            ++guarantees_checked;
            EXPECT_GE(field(s->runtime, key_index), field(k->min, key_index))
                << "seed " << seed << " quota " << k->name << " key " << key_index;
          }
        }
      }
    }
  }
  EXPECT_GT(guarantees_checked, 1000);  // the property was actually exercised
}

TEST(QuotaTreeProperty, DeterministicAcrossInsertionOrders) {
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    auto w = make_world(seed);
    quota_tree a;
    load(a, w);
    auto first = a.refresh();

    // Children before parents, pods shuffled, cluster total set last.
    auto shuffled = w;
    rng r{std::mt19937_64{seed ^ 0x9e3779b97f4a7c15ull}};
    shuffle(shuffled.quotas, r);
    shuffle(shuffled.pods, r);
    quota_tree b;
    for (const auto& p : shuffled.pods) ASSERT_TRUE(b.upsert_pod(p));
    for (const auto& q : shuffled.quotas) ASSERT_TRUE(b.upsert_quota(q));
    b.set_cluster_total(w.total);
    auto second = b.refresh();

    ASSERT_EQ(first.size(), second.size()) << "seed " << seed;
    for (std::size_t i = 0; i < first.size(); ++i) {
      EXPECT_EQ(first[i], second[i]) << "seed " << seed << " quota " << first[i].name;
    }
    EXPECT_TRUE(a.refresh().empty());  // a fixed point: nothing changes on a second pass
  }
}

// Removing every pod and adding them back returns to the same state.
TEST(QuotaTreeProperty, PodChurnIsReversible) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    auto w = make_world(seed);
    quota_tree t;
    load(t, w);
    auto before = t.refresh();
    for (const auto& p : w.pods) EXPECT_TRUE(t.remove_pod(p.name));
    t.refresh();
    for (const auto& p : w.pods) ASSERT_TRUE(t.upsert_pod(p));
    t.refresh();
    for (const auto& s : before) EXPECT_EQ(*t.status(s.name), s) << "seed " << seed;
  }
}

}  // namespace
}  // namespace colony::quota
