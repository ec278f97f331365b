// Properties of the deterministic probability draw that replaces Koordinator's rand.Intn(100)
// (colocation_profile.hpp header comment): 0 never applies, 100 always applies, the draw is a
// pure function of (seed, pod, profile), and 0<p<100 applies with chance (p+1)/100.
#include <random>

#include <gtest/gtest.h>

#include "actors/admission/colocation_profile.hpp"
#include "messages/units.hpp"
#include "tests/actors/admission/test_pods.hpp"

namespace colony::admission {
namespace {

using testing::container;
using testing::cpu_mem;

pod_spec random_pod(std::mt19937_64& rng, int i) {
  pod_spec p;
  p.pod_namespace = "ns-" + std::to_string(rng() % 7);
  p.name = "pod-" + std::to_string(i);
  if (rng() % 2) p.uid = std::to_string(rng());
  p.labels = {{"app", "x"}};
  p.priority = 5500;
  p.containers = {container("c", cpu_mem(static_cast<std::int64_t>(rng() % 4000) + 1, gib), {})};
  return p;
}

profile_set one_profile(std::optional<std::int64_t> percent) {
  cluster_colocation_profile c;
  c.name = "prob";
  c.probability = percent;
  c.labels = {{"applied", "yes"}};
  auto s = profile_set::make({c});
  EXPECT_TRUE(s.has_value());
  return *s;
}

bool applied(const pod_mutation& m) { return m.pod.labels.count("applied") == 1; }

TEST(ProbabilityProperty, ZeroNeverAppliesHundredAlwaysApplies) {
  std::mt19937_64 rng(20260724);
  const string_map ns;
  const priority_class_table pcs;
  const profile_set zero = one_profile(0), hundred = one_profile(100),
                    absent = one_profile(std::nullopt), above = one_profile(250),
                    negative = one_profile(-5);
  for (int i = 0; i < 2000; ++i) {
    const pod_spec p = random_pod(rng, i);
    mutating_options opts;
    opts.seed = rng();
    EXPECT_FALSE(applied(*cluster_colocation_profile_mutating_pod(p, zero, &ns, pcs, opts)));
    EXPECT_TRUE(applied(*cluster_colocation_profile_mutating_pod(p, hundred, &ns, pcs, opts)));
    EXPECT_TRUE(applied(*cluster_colocation_profile_mutating_pod(p, absent, &ns, pcs, opts)));
    EXPECT_TRUE(applied(*cluster_colocation_profile_mutating_pod(p, above, &ns, pcs, opts)));
    EXPECT_FALSE(applied(*cluster_colocation_profile_mutating_pod(p, negative, &ns, pcs, opts)));
  }
}

TEST(ProbabilityProperty, DrawIsDeterministicForASeed) {
  std::mt19937_64 rng(7);
  const string_map ns;
  const priority_class_table pcs;
  const profile_set half = one_profile(50);
  for (int i = 0; i < 500; ++i) {
    const pod_spec p = random_pod(rng, i);
    const std::uint64_t seed = rng();
    const std::int32_t d = probability_draw(seed, p, "prob");
    ASSERT_GE(d, 0);
    ASSERT_LT(d, 100);
    EXPECT_EQ(probability_draw(seed, p, "prob"), d);
    mutating_options opts;
    opts.seed = seed;
    auto a = cluster_colocation_profile_mutating_pod(p, half, &ns, pcs, opts);
    auto b = cluster_colocation_profile_mutating_pod(p, half, &ns, pcs, opts);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->pod, b->pod);
    EXPECT_EQ(a->matched, b->matched);
    EXPECT_EQ(a->matched.at(0).draw, d);
    EXPECT_EQ(applied(*a), d <= 50);  // Koordinator skips when draw > percent
  }
}

TEST(ProbabilityProperty, DrawDependsOnSeedPodAndProfile) {
  pod_spec p;
  p.pod_namespace = "default";
  p.name = "a";
  // Over 200 seeds the draw takes many values: the seed is really mixed in.
  std::vector<bool> seen(100, false);
  int distinct = 0;
  for (std::uint64_t s = 0; s < 200; ++s) {
    const auto d = static_cast<std::size_t>(probability_draw(s, p, "x"));
    if (!seen[d]) ++distinct, seen[d] = true;
  }
  EXPECT_GT(distinct, 70);
  // The uid, when set, keys the draw instead of namespace/name.
  pod_spec q = p;
  q.uid = "uid-1";
  pod_spec r = q;
  r.name = "renamed";
  int same = 0;
  for (std::uint64_t s = 0; s < 200; ++s)
    same += probability_draw(s, q, "x") == probability_draw(s, r, "x");
  EXPECT_EQ(same, 200);
  int differs_by_profile = 0;
  for (std::uint64_t s = 0; s < 200; ++s)
    differs_by_profile += probability_draw(s, q, "x") != probability_draw(s, q, "y");
  EXPECT_GT(differs_by_profile, 150);
  // "ns/a" with empty uid must not collide with namespace "ns/" + name "a" framing tricks.
  pod_spec u1, u2;
  u1.pod_namespace = "ab";
  u1.name = "c";
  u2.pod_namespace = "a";
  u2.name = "bc";
  int equal = 0;
  for (std::uint64_t s = 0; s < 200; ++s)
    equal += probability_draw(s, u1, "x") == probability_draw(s, u2, "x");
  EXPECT_LT(equal, 20);
}

TEST(ProbabilityProperty, ApplyRateIsPercentPlusOne) {
  // Over many pods, percent p applies for draws 0..p: rate (p+1)/100.
  for (std::int64_t percent : {10, 30, 50, 90}) {
    int hits = 0;
    const int n = 20000;
    pod_spec p;
    p.pod_namespace = "default";
    for (int i = 0; i < n; ++i) {
      p.name = "pod-" + std::to_string(i);
      hits += !should_skip_profile(percent, probability_draw(42, p, "prof"));
    }
    const double rate = static_cast<double>(hits) / n;
    const double want = static_cast<double>(percent + 1) / 100.0;
    EXPECT_NEAR(rate, want, 0.015) << percent;
  }
}

TEST(ShouldSkipProfile, KoordinatorComparison) {
  EXPECT_TRUE(should_skip_profile(0, 0));
  EXPECT_FALSE(should_skip_profile(100, 99));
  EXPECT_FALSE(should_skip_profile(std::nullopt, 99));
  EXPECT_FALSE(should_skip_profile(50, 50)) << "draw == percent applies";
  EXPECT_TRUE(should_skip_profile(50, 51));
  EXPECT_FALSE(should_skip_profile(50, 30)) << "rand=30 applies";
  EXPECT_TRUE(should_skip_profile(50, 70)) << "rand=70 skips";
  EXPECT_FALSE(needs_draw(0));
  EXPECT_FALSE(needs_draw(100));
  EXPECT_FALSE(needs_draw(std::nullopt));
  EXPECT_TRUE(needs_draw(1));
}

}  // namespace
}  // namespace colony::admission
