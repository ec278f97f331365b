// job_index against brute force: randomized job sets changed step by step (jobs created, passing
// arbitration, changing phase, ending; pods appearing, moving, going away), and after every step
// each count the index answers, each filter and the arbitration sort with the index equal what
// walking every job answers.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "actors/descheduler/arbitration.hpp"
#include "actors/descheduler/job_index.hpp"
#include "actors/descheduler/migration_filter.hpp"

namespace colony::descheduler {
namespace {

std::string_view ns_of(std::string_view key) {
  const auto s = key.find('/');
  return s == std::string_view::npos ? std::string_view{} : key.substr(0, s);
}

bool counts(const job_info& j, bool arbitrating) {
  if (j.phase == job_phase::running) return true;
  return j.phase == job_phase::pending && (!arbitrating || j.passed_arbitration);
}

struct world {
  std::mt19937_64 rng;
  std::map<std::string, pod_info, std::less<>> pods;
  std::map<std::string, pod_info, std::less<>> gone;  // removed, may come back
  std::vector<std::string> keys;                      // every key a job may name
  std::vector<job_info> jobs;
  job_index index;

  explicit world(std::uint64_t seed) : rng(seed) {
    const char* nss[] = {"a", "b", "c"};
    const owner_ref owners[] = {{}, {"ReplicaSet", "rs-1"}, {"ReplicaSet", "rs-2"}, {"Job", "j"}};
    const int n = 8 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) {
      pod_info p;
      p.ns = nss[rng() % 3];
      p.name = "p" + std::to_string(i);
      p.owner = owners[rng() % 4];
      p.node = rng() % 6 == 0 ? "" : "node-" + std::to_string(rng() % 4);
      p.ready = rng() % 5 != 0;
      keys.push_back(p.key());
      pods.emplace(p.key(), std::move(p));
    }
    keys.push_back("a/missing");
    keys.push_back("no-slash");
  }

  [[nodiscard]] const pod_info* pod(std::string_view k) const {
    const auto it = pods.find(k);
    return it == pods.end() ? nullptr : &it->second;
  }
  [[nodiscard]] migration_view view(bool indexed) const {
    return migration_view{&pods, &jobs,
                          [this](const pod_info& p) -> std::optional<workload_info> {
                            if (p.owner.empty()) return std::nullopt;
                            workload_info w;
                            for (const auto& [k, q] : pods)
                              if (q.ns == p.ns && q.owner == p.owner) w.pods.push_back(k);
                            w.replicas = static_cast<std::int64_t>(w.pods.size());
                            return w;
                          },
                          indexed ? &index : nullptr};
  }

  // One random change, applied to the jobs or pods and to the index as their owner would.
  void step() {
    const auto r = rng() % 10;
    if (r < 4 || jobs.empty()) {
      job_info j;
      j.name = "job-" + std::to_string(jobs.size());
      j.pod = keys[rng() % keys.size()];
      j.phase = rng() % 3 == 0 ? job_phase::running : job_phase::pending;
      j.passed_arbitration = rng() % 2 == 0;
      j.created_ms = static_cast<std::int64_t>(rng() % 5000);
      index.add(j, pod(j.pod));
      jobs.push_back(std::move(j));
    } else if (r < 7) {
      auto& j = jobs[rng() % jobs.size()];
      const auto t = rng() % 4;
      // Passing arbitration through mark_passed where it applies, else a remove and an add.
      if (t == 0 && index.mark_passed(j)) {
        j.passed_arbitration = true;
      } else {
        index.remove(j);
        if (t == 0)
          j.passed_arbitration = true;
        else if (t == 1)
          j.phase = job_phase::running;
        else if (t == 2)
          j.phase = rng() % 2 ? job_phase::succeeded : job_phase::failed;
        else
          j.passed_arbitration = false;
        index.add(j, pod(j.pod));
      }
    } else if (r < 8 && !pods.empty()) {
      auto it = std::next(pods.begin(), static_cast<long>(rng() % pods.size()));
      it->second.node = "node-" + std::to_string(rng() % 4);
      index.pod_changed(it->first, &it->second);
    } else if (r < 9 && !pods.empty()) {
      auto it = std::next(pods.begin(), static_cast<long>(rng() % pods.size()));
      const std::string k = it->first;
      gone.insert(pods.extract(it));
      index.pod_changed(k, nullptr);
    } else if (!gone.empty()) {
      auto node = gone.extract(gone.begin());
      const std::string k = node.key();
      const auto at = pods.insert(std::move(node)).position;
      index.pod_changed(k, &at->second);
    }
  }
};

TEST(JobIndex, AgreesWithBruteForceOverRandomizedJobSets) {
  std::size_t cases = 0, nonzero_node = 0, nonzero_workload = 0, nonzero_sort = 0, refusals = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    world w(seed);
    for (int s = 0; s < 60; ++s) {
      w.step();
      const auto brute = w.view(false);
      const auto indexed = w.view(true);
      // The index with the owner-kept workload states and a hash lookup of pods.
      pod_lookup lookup;
      for (const auto& [k, p] : w.pods) lookup.emplace(k, &p);
      workload_state state;
      auto kept = w.view(true);
      kept.pod_index = &lookup;
      kept.workload_state_of = [&](const pod_info& p) -> const workload_state* {
        const auto wl = brute.workload(p);
        if (!wl) return nullptr;
        state = workload_state_of(*wl, brute);
        return &state;
      };
      for (const auto& [key, pod] : w.pods) {
        for (const bool arb : {false, true}) {
          // The counts, by the definitions in migration_filter.hpp.
          std::int64_t global = 0, in_ns = 0, sort_n = 0;
          std::set<std::string> on_node, workload;
          for (const auto& j : w.jobs) {
            if (counts(j, true) && ns_of(j.pod) == pod.ns && j.pod.find('/') != std::string::npos)
              if (const auto* p = w.pod(j.pod); p && p->ns == pod.ns && p->owner == pod.owner)
                ++sort_n;
            if (j.pod == key || !counts(j, arb)) continue;
            ++global;
            if (ns_of(j.pod) == pod.ns) ++in_ns;
            const auto* p = w.pod(j.pod);
            if (p == nullptr) continue;
            if (!pod.node.empty() && p->node == pod.node) on_node.insert(j.pod);
            if (ns_of(j.pod) == pod.ns && p->ns == pod.ns && p->owner == pod.owner)
              workload.insert(j.pod);
          }
          const auto own = w.index.counting_of_pod(key, arb);
          EXPECT_EQ(w.index.counting(arb) - own, global);
          EXPECT_EQ(w.index.counting_in_namespace(pod.ns, arb) - own, in_ns);
          if (!pod.node.empty()) {
            const auto n = w.index.pods_counting_on_node(pod.node, arb) -
                           (own > 0 && w.index.node_of(key) == pod.node ? 1 : 0);
            EXPECT_EQ(n, static_cast<std::int64_t>(on_node.size()));
          }
          std::set<std::string> from_index;
          w.index.for_each_workload_pod(pod.ns, pod.owner, arb, [&](std::string_view k) {
            if (k != key) from_index.emplace(k);
          });
          if (!pod.owner.empty()) {
            EXPECT_EQ(from_index, workload);
            EXPECT_EQ(w.index.migrating_in_workload(pod.ns, pod.owner), sort_n);
          }
          nonzero_node += on_node.size() > 1;
          nonzero_workload += workload.size() > 1;
          nonzero_sort += sort_n > 1;

          // The filters, with limits around the counts.
          for (std::int64_t limit = 1; limit <= 4; ++limit) {
            migration_controller_args args;
            args.max_migrating_globally = limit + static_cast<std::int64_t>(w.rng() % 8);
            args.max_migrating_per_node = limit;
            args.max_migrating_per_namespace = limit + static_cast<std::int64_t>(w.rng() % 3);
            args.max_migrating_per_workload = int_or_percent{limit, false};
            args.max_unavailable_per_workload = int_or_percent{limit + 1, false};
            const auto want = retryable_refusal(pod, args, brute, arb);
            EXPECT_EQ(retryable_refusal(pod, args, indexed, arb), want);
            EXPECT_EQ(retryable_refusal(pod, args, kept, arb), want);
            EXPECT_EQ(non_retryable_refusal(pod, args, kept),
                      non_retryable_refusal(pod, args, brute));
            EXPECT_EQ(filter_max_migrating_per_node(pod, limit, indexed, arb),
                      filter_max_migrating_per_node(pod, limit, brute, arb));
            EXPECT_EQ(filter_max_migrating_per_namespace(pod, limit, indexed, arb),
                      filter_max_migrating_per_namespace(pod, limit, brute, arb));
            EXPECT_EQ(filter_workload(pod, args, indexed, arb),
                      filter_workload(pod, args, brute, arb));
            refusals += !want.empty();
            ++cases;
          }
        }
      }
      // The arbitration sort over the pending jobs.
      std::vector<arbitration_job> a, b;
      for (const auto& j : w.jobs)
        if (j.phase == job_phase::pending) a.push_back({&j, w.pod(j.pod)});
      b = a;
      sort_jobs(a, brute);
      sort_jobs(b, indexed);
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].job, b[i].job) << i;
    }
  }
  EXPECT_GT(cases, 50'000u);
  EXPECT_GT(refusals, 5'000u);
  EXPECT_GT(nonzero_node, 1'000u);
  EXPECT_GT(nonzero_workload, 1'000u);
  EXPECT_GT(nonzero_sort, 100u);
}

TEST(JobIndex, RemoveUndoesAddAndFinalJobsAreIgnored) {
  pod_info p;
  p.ns = "a";
  p.name = "x";
  p.node = "n";
  p.owner = {"Job", "j"};
  job_index idx;
  job_info j;
  j.name = "job";
  j.pod = p.key();
  j.passed_arbitration = true;
  idx.add(j, &p);
  EXPECT_EQ(idx.counting(false), 1);
  EXPECT_EQ(idx.counting(true), 1);
  EXPECT_EQ(idx.pods_counting_on_node("n", true), 1);
  EXPECT_EQ(idx.migrating_in_workload("a", p.owner), 1);
  idx.remove(j);
  EXPECT_EQ(idx.counting(false), 0);
  EXPECT_EQ(idx.pods_counting_on_node("n", false), 0);
  EXPECT_EQ(idx.migrating_in_workload("a", p.owner), 0);
  j.phase = job_phase::succeeded;
  idx.add(j, &p);
  EXPECT_EQ(idx.counting(false), 0);
}

}  // namespace
}  // namespace colony::descheduler
