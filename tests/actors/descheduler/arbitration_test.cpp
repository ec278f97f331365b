// The migration controller's arbitration against Koordinator's golden cases
// (pkg/descheduler/controllers/migration/arbitrator/sort_test.go, filter_test.go,
// arbitrator_test.go; pkg/descheduler/controllers/migration/util/util_test.go).
#include <gtest/gtest.h>

#include <algorithm>

#include "actors/descheduler/arbitration.hpp"
#include "actors/descheduler/migration_filter.hpp"

namespace colony::descheduler {
namespace {

pod_info make_pod(const std::string& name, const std::string& node = "node-1",
                  const std::string& ns = "default") {
  pod_info p;
  p.ns = ns;
  p.name = name;
  p.uid = name;
  p.node = node;
  p.kube_qos = kube_qos_class::best_effort;
  p.owner = {"ReplicaSet", "rs"};
  return p;
}

struct fixture {
  std::map<std::string, pod_info, std::less<>> pods;
  std::vector<job_info> jobs;
  std::map<std::string, workload_info> workloads;  // by owner name

  migration_view view() const {
    return migration_view{&pods, &jobs, [this](const pod_info& p) -> std::optional<workload_info> {
                            const auto it = workloads.find(p.owner.name);
                            if (it == workloads.end()) return std::nullopt;
                            return it->second;
                          }};
  }
  void add_pod(const pod_info& p) { pods[p.key()] = p; }
  // A job that passed arbitration (the fixtures' annotation), phase Pending.
  void add_job(const std::string& pod_key, job_phase phase = job_phase::pending) {
    job_info j;
    j.name = "job-" + std::to_string(jobs.size());
    j.pod = pod_key;
    j.phase = phase;
    j.passed_arbitration = true;
    jobs.push_back(j);
  }
};

std::vector<std::string> order(const std::vector<arbitration_job>& v) {
  std::vector<std::string> out;
  for (const auto& j : v) out.push_back(j.job->name);
  return out;
}

TEST(Arbitration, A1SortJobsByCreationTime) {
  std::vector<job_info> jobs(5);
  const std::int64_t secs[] = {222222, 222222222, 111111111, 11111, 11111};
  for (int i = 0; i < 5; ++i) {
    jobs[i].name = "job-" + std::to_string(i + 1);
    jobs[i].created_ms = secs[i] * 1000 + (i == 4 ? 999 : 0);  // whole seconds compare equal
  }
  std::vector<arbitration_job> v;
  for (const auto& j : jobs) v.push_back({&j, nullptr});
  sort_jobs_by_creation_time(v);
  EXPECT_EQ(order(v), (std::vector<std::string>{"job-2", "job-3", "job-1", "job-4", "job-5"}));
}

struct controller_row {
  const char* name;
  std::vector<std::pair<int, std::string>> owners;  // job index -> Job owner
  std::vector<int> expected;
};

TEST(Arbitration, A2A3A4SortJobsByController) {
  const std::vector<controller_row> rows{
      {"A2 test-1", {{4, "Job0"}, {8, "Job0"}}, {0, 1, 2, 3, 4, 8, 5, 6, 7, 9}},
      {"A3 test-3",
       {{3, "Job0"}, {8, "Job0"}, {1, "Job1"}, {9, "Job1"}},
       {0, 1, 9, 2, 3, 8, 4, 5, 6, 7}},
      {"A4 test-5", {{0, "Job0"}, {4, "Job1"}, {2, "Job2"}}, {0, 1, 2, 3, 4, 5}},
  };
  for (const auto& r : rows) {
    const std::size_t n = r.expected.size();
    std::vector<job_info> jobs(n);
    std::vector<pod_info> pods(n);
    for (std::size_t i = 0; i < n; ++i) {
      jobs[i].name = std::to_string(i);
      pods[i] = make_pod("pod-" + std::to_string(i));
    }
    for (const auto& [i, owner] : r.owners) pods[i].owner = {"Job", owner};
    std::vector<arbitration_job> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back({&jobs[i], &pods[i]});
    sort_jobs_by_controller(v);
    std::vector<std::string> want;
    for (int i : r.expected) want.push_back(std::to_string(i));
    EXPECT_EQ(order(v), want) << r.name;
  }
}

struct migrating_row {
  const char* name;
  std::vector<std::pair<int, std::string>> owners;
  std::vector<std::string> running_owners;  // one extra Running job per entry
  std::vector<int> expected;
};

TEST(Arbitration, A5A6SortJobsByMigratingNum) {
  const std::vector<migrating_row> rows{
      {"A5 test-1", {{4, "Job0"}, {8, "Job0"}}, {"Job0", "Job1"}, {4, 8, 0, 1, 2, 3, 5, 6, 7, 9}},
      {"A6 test-6",
       {{4, "Job0"}, {8, "Job0"}, {7, "Job1"}},
       {"Job0", "Job1", "Job1"},
       {7, 4, 8, 0, 1, 2, 3, 5, 6, 9}},
  };
  for (const auto& r : rows) {
    fixture f;
    std::vector<job_info> jobs(10);
    for (int i = 0; i < 10; ++i) {
      jobs[i].name = std::to_string(i);
      auto p = make_pod("pod-" + std::to_string(i));
      for (const auto& [k, owner] : r.owners)
        if (k == i) p.owner = {"Job", owner};
      jobs[i].pod = p.key();
      f.add_pod(p);
    }
    for (std::size_t k = 0; k < r.running_owners.size(); ++k) {
      auto p = make_pod("running-" + std::to_string(k));
      p.owner = {"Job", r.running_owners[k]};
      f.add_pod(p);
      f.add_job(p.key(), job_phase::running);
      f.jobs.back().passed_arbitration = false;
    }
    std::vector<arbitration_job> v;
    for (const auto& j : jobs) v.push_back({&j, f.view().pod(j.pod)});
    sort_jobs(v, f.view());  // creation, pod and controller sorts keep this order here
    std::vector<std::string> want;
    for (int i : r.expected) want.push_back(std::to_string(i));
    EXPECT_EQ(order(v), want) << r.name;
  }
}

TEST(Arbitration, A7SortJobsByPod) {
  const int ranks[] = {8, 7, 5, 4, 9, 2, 3, 11};
  std::vector<job_info> jobs(8);
  std::vector<pod_info> pods(8);
  for (int i = 0; i < 8; ++i) {
    jobs[i].name = "job" + std::to_string(i);
    pods[i] = make_pod("pod" + std::to_string(i));
    pods[i].priority = ranks[i];
  }
  std::vector<arbitration_job> v;
  for (int i = 0; i < 8; ++i) v.push_back({&jobs[i], &pods[i]});
  sort_jobs_by_pod(v);
  EXPECT_EQ(order(v), (std::vector<std::string>{"job5", "job6", "job3", "job2", "job1", "job0",
                                                "job4", "job7"}));
  // A job whose pod is missing comes first.
  job_info orphan;
  orphan.name = "orphan";
  v.push_back({&orphan, nullptr});
  sort_jobs_by_pod(v);
  EXPECT_EQ(v[0].job->name, "orphan");
}

TEST(Arbitration, A8LastStableSortIsThePrimaryKey) {
  std::vector<std::string> v;
  for (int i = 1; i <= 20; ++i) v.push_back("test-job-" + std::to_string(i));
  std::stable_sort(v.begin(), v.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const std::string& a, const std::string& b) { return a.back() < b.back(); });
  std::vector<std::string> want;
  for (int i : {10, 20, 1, 11, 12, 2, 13, 3, 14, 4, 15, 5, 16, 6, 17, 7, 18, 8, 19, 9})
    want.push_back("test-job-" + std::to_string(i));
  EXPECT_EQ(v, want);
}

// F1 / F2 / F3: one row per case of filter_test.go, (limit, jobs as (pod, node, namespace)).
struct limit_row {
  std::optional<std::int64_t> limit;
  std::vector<std::array<const char*, 3>> jobs;  // pod, node, namespace
  bool pass;
};

template <class F>
void run_limit_rows(const char* what, const std::vector<limit_row>& rows, F filter) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    fixture f;
    const auto judged = make_pod("test-pod", "node-1", "default");
    f.add_pod(judged);
    for (const auto& [pod, node, ns] : rows[i].jobs) {
      auto p = make_pod(pod, node, ns);
      f.add_pod(p);
      f.add_job(p.key());
    }
    EXPECT_EQ(filter(judged, rows[i].limit, f.view(), false), rows[i].pass) << what << " row " << i;
  }
}

TEST(Arbitration, F1F2F3MaxMigratingLimits) {
  run_limit_rows("F1 globally",
                 {{0, {}, true},
                  {1, {}, true},
                  {1, {{"test-pod", "node-1", "default"}}, true},
                  {1, {{"other", "node-1", "default"}}, false}},
                 filter_max_migrating_globally);
  const std::vector<limit_row> node_rows{
      {0, {}, true},
      {1, {}, true},
      {1, {{"test-pod", "node-1", "default"}}, true},
      {1, {{"other", "node-1", "default"}}, false},
      {1, {{"other", "node-2", "default"}}, true},
      {2, {{"test-pod", "node-1", "default"}, {"other", "node-1", "default"}}, true},
      {2, {{"other-1", "node-2", "default"}, {"other-2", "node-2", "default"}}, true},
      {2, {{"other-1", "node-1", "default"}, {"other-2", "node-1", "default"}}, false}};
  run_limit_rows("F2 per node", node_rows, filter_max_migrating_per_node);
  const std::vector<limit_row> ns_rows{
      {0, {}, true},
      {1, {}, true},
      {1, {{"test-pod", "node-1", "default"}}, true},
      {1, {{"other", "node-1", "default"}}, false},
      {1, {{"other", "node-1", "other-ns"}}, true},
      {2, {{"test-pod", "node-1", "default"}, {"other", "node-1", "default"}}, true},
      {2, {{"other-1", "node-1", "other-ns"}, {"other-2", "node-1", "other-ns"}}, true},
      {2, {{"other-1", "node-1", "default"}, {"other-2", "node-1", "default"}}, false}};
  run_limit_rows("F3 per namespace", ns_rows, filter_max_migrating_per_namespace);
}

TEST(Arbitration, CountingInsideAPassOnlyCountsPassedPendingJobs) {
  fixture f;
  const auto judged = make_pod("test-pod");
  f.add_pod(judged);
  auto other = make_pod("other");
  f.add_pod(other);
  f.add_job(other.key());
  f.jobs.back().passed_arbitration = false;
  EXPECT_FALSE(filter_max_migrating_globally(judged, 1, f.view(), false));  // outside: counts
  EXPECT_TRUE(filter_max_migrating_globally(judged, 1, f.view(), true));    // inside: not passed
  f.jobs.back().phase = job_phase::running;
  EXPECT_FALSE(filter_max_migrating_globally(judged, 1, f.view(), true));
  f.jobs.back().phase = job_phase::succeeded;
  EXPECT_TRUE(filter_max_migrating_globally(judged, 1, f.view(), false));
}

struct workload_row {
  const char* name;
  std::int64_t max_unavailable;
  int pending;          // pods of the workload not Ready
  int migrating;        // Ready pods of the workload with a job
  bool other_workload;  // the migrating pod belongs to another workload
  bool pass;
};

TEST(Arbitration, F4MaxUnavailablePerWorkload) {
  const std::vector<workload_row> rows{
      {"1: none", 1, 0, 0, false, true},
      {"1: one pending", 1, 1, 0, false, false},
      {"1: one migrating", 1, 0, 1, false, false},
      {"2: none", 2, 0, 0, false, true},
      {"2: one pending", 2, 1, 0, false, true},
      {"2: one migrating", 2, 0, 1, false, true},
      {"2: one pending, one migrating", 2, 1, 1, false, false},
      {"2: one pending, one migrating elsewhere", 2, 1, 1, true, true}};
  for (const auto& r : rows) {
    fixture f;
    migration_controller_args a;
    a.max_migrating_per_workload = int_or_percent{9, false};
    a.max_unavailable_per_workload = int_or_percent{r.max_unavailable, false};
    workload_info w{10, {}};
    for (int i = 0; i < 10; ++i) {
      auto p = make_pod("pod-" + std::to_string(i));
      if (i < r.pending) p.ready = false;
      f.add_pod(p);
      w.pods.push_back(p.key());
    }
    f.workloads["rs"] = w;
    f.workloads["other-rs"] = workload_info{10, {}};
    for (int i = 0; i < r.migrating; ++i) {
      auto p = make_pod("migrating-" + std::to_string(i));
      if (r.other_workload) p.owner.name = "other-rs";
      f.add_pod(p);
      if (!r.other_workload) f.workloads["rs"].pods.push_back(p.key());
      f.add_job(p.key());
    }
    const auto judged = f.pods.at("default/pod-9");
    EXPECT_EQ(filter_workload(judged, a, f.view(), false).empty(), r.pass) << r.name;
  }
}

TEST(Arbitration, F5ExpectedReplicas) {
  struct row {
    std::int64_t replicas, max_unavailable;
    bool pass;
  };
  for (const auto& r : {row{1, 1, false}, row{100, 100, false}, row{100, 10, true}}) {
    fixture f;
    migration_controller_args a;
    a.max_migrating_per_workload = int_or_percent{r.replicas - 1, false};
    a.max_unavailable_per_workload = int_or_percent{r.max_unavailable, false};
    f.workloads["rs"] = workload_info{r.replicas, {}};
    const auto p = make_pod("p");
    EXPECT_EQ(filter_expected_replicas(p, a, f.view()), r.pass) << r.replicas;
  }
}

TEST(Arbitration, F6GetMaxUnavailable) {
  struct row {
    std::int64_t replicas;
    std::optional<int_or_percent> v;
    std::int64_t want;
  };
  const std::vector<row> rows{{6, int_or_percent{80, true}, 4},
                              {6, int_or_percent{150, true}, 6},
                              {6, int_or_percent{5, false}, 5},
                              {6, int_or_percent{7, false}, 6},
                              {6, std::nullopt, 2},
                              {50, int_or_percent{0, true}, 1},
                              {6, int_or_percent{0, false}, 1}};
  for (const auto& r : rows) EXPECT_EQ(get_max_unavailable(r.replicas, r.v), r.want) << r.replicas;
  EXPECT_EQ(get_max_unavailable(20, std::nullopt), 2);  // > 10 replicas: 10 %
}

TEST(Arbitration, F7Filtering) {
  struct row {
    bool has_pod, non_retryable, retryable;
    bool failed, passed;
  };
  const std::vector<row> rows{{false, false, false, false, true},
                              {true, false, true, true, false},
                              {true, true, false, false, false},
                              {true, true, true, false, true},
                              {true, false, false, true, false}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    job_info j;
    j.name = "job";
    pod_info p = make_pod("p");
    const std::vector<arbitration_job> v{{&j, r.has_pod ? &p : nullptr}};
    const auto out = arbitrate_once(
        v, [&](const arbitration_job&) { return r.non_retryable ? "" : std::string("no"); },
        [&](const arbitration_job&) { return r.retryable ? "" : std::string("later"); }, {});
    EXPECT_EQ(!out.failed.empty(), r.failed) << "row " << i;
    EXPECT_EQ(!out.passed.empty(), r.passed) << "row " << i;
  }
}

TEST(Arbitration, F8DoOnceArbitrate) {
  std::vector<job_info> jobs(10);
  std::vector<pod_info> pods(10);
  std::vector<arbitration_job> v;
  for (int i = 0; i < 10; ++i) {
    jobs[i].name = std::to_string(i);
    pods[i] = make_pod("pod-" + std::to_string(i));
    v.push_back({&jobs[i], &pods[i]});
  }
  std::vector<std::string> on_pass;
  const auto out = arbitrate_once(
      v, [](const arbitration_job& j) { return j.job->name == "2" ? std::string("no") : ""; },
      [](const arbitration_job& j) {
        return j.job->name == "3" || j.job->name == "7" ? std::string("later") : "";
      },
      [&](const job_info& j) { on_pass.push_back(j.name); });
  auto names = [](const std::vector<const job_info*>& js) {
    std::vector<std::string> s;
    for (const auto* j : js) s.push_back(j->name);
    return s;
  };
  ASSERT_EQ(out.failed.size(), 1u);
  EXPECT_EQ(out.failed[0].first->name, "2");
  EXPECT_EQ(names(out.waiting), (std::vector<std::string>{"3", "7"}));
  EXPECT_EQ(names(out.passed), (std::vector<std::string>{"0", "1", "4", "5", "6", "8", "9"}));
  EXPECT_EQ(on_pass, names(out.passed));
}

TEST(Arbitration, F9FilterPodWithMaxEvictionCost) {
  for (const auto& [cost, pass] : std::vector<std::pair<std::string, bool>>{
           {"0", true}, {"-100", true}, {"100", true}, {"2147483647", false}}) {
    auto p = make_pod("p");
    p.annotations["scheduling.koordinator.sh/eviction-cost"] = cost;
    EXPECT_EQ(filter_max_eviction_cost(p), pass) << cost;
  }
}

TEST(Arbitration, NonRetryableEvictorConstraints) {
  migration_controller_args a;
  a.skip_eviction_gates = {"ExpectedReplicas"};
  fixture f;
  auto p = make_pod("p");
  EXPECT_EQ(non_retryable_refusal(p, a, f.view()), "");
  auto ds = p;
  ds.owner = {"DaemonSet", "d"};
  EXPECT_EQ(non_retryable_refusal(ds, a, f.view()), "pod is a DaemonSet pod");
  auto bare = p;
  bare.owner = {};
  EXPECT_EQ(non_retryable_refusal(bare, a, f.view()), "pod has no owner");
  a.filter.evict_all_bare_pods = true;
  EXPECT_EQ(non_retryable_refusal(bare, a, f.view()), "");
  auto crit = p;
  crit.priority = system_critical_priority;
  EXPECT_EQ(non_retryable_refusal(crit, a, f.view()), "pod has system critical priority");
  auto local = p;
  local.local_storage = true;
  EXPECT_EQ(non_retryable_refusal(local, a, f.view()), "pod has local storage");
  local.annotations[std::string(annotation_evict)] = "true";
  EXPECT_EQ(non_retryable_refusal(local, a, f.view()), "");
  // ExpectedReplicas: a workload that is not found refuses, as the controller finder's error.
  a.skip_eviction_gates.clear();
  EXPECT_NE(non_retryable_refusal(p, a, f.view()), "");
}

}  // namespace
}  // namespace colony::descheduler
