#include "actors/descheduler/arbitration.hpp"

#include <algorithm>
#include <map>

#include "actors/descheduler/job_index.hpp"
#include "actors/descheduler/pod_sorter.hpp"

namespace colony::descheduler {

namespace {

bool job_owned(const pod_info* p) { return p != nullptr && p->owner.kind == "Job"; }

}  // namespace

void sort_jobs_by_creation_time(std::vector<arbitration_job>& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const arbitration_job& a, const arbitration_job& b) {
                     return a.job->created_ms / 1000 > b.job->created_ms / 1000;
                   });
}

void sort_jobs_by_pod(std::vector<arbitration_job>& jobs) {
  // Each pod's keys computed once, not at each comparison.
  struct keyed {
    arbitration_job j;
    pod_class_key k;
  };
  std::vector<keyed> v;
  v.reserve(jobs.size());
  for (const auto& j : jobs) v.push_back({j, j.pod ? pod_class_key_of(*j.pod) : pod_class_key{}});
  std::stable_sort(v.begin(), v.end(), [](const keyed& a, const keyed& b) {
    if (a.j.pod == nullptr || b.j.pod == nullptr) return a.j.pod == nullptr && b.j.pod != nullptr;
    if (a.k != b.k) return a.k < b.k;
    return compare_pods_by_creation(*a.j.pod, *b.j.pod) < 0;
  });
  for (std::size_t i = 0; i < jobs.size(); ++i) jobs[i] = v[i].j;
}

void sort_jobs_by_controller(std::vector<arbitration_job>& jobs) {
  // Each Job owner's jobs, in order, placed where its first job is.
  std::map<std::pair<std::string, std::string>, std::vector<arbitration_job>> groups;
  for (const auto& j : jobs)
    if (job_owned(j.pod)) groups[{j.pod->ns, j.pod->owner.name}].push_back(j);
  std::vector<arbitration_job> out;
  out.reserve(jobs.size());
  for (const auto& j : jobs) {
    if (!job_owned(j.pod)) {
      out.push_back(j);
      continue;
    }
    auto it = groups.find({j.pod->ns, j.pod->owner.name});
    if (it == groups.end()) continue;  // already placed with its first job
    for (const auto& g : it->second) out.push_back(g);
    groups.erase(it);
  }
  jobs = std::move(out);
}

void sort_jobs_by_migrating_num(std::vector<arbitration_job>& jobs,
                                const std::function<std::int64_t(const pod_info&)>& migrating) {
  std::vector<std::pair<std::int64_t, arbitration_job>> ranked;
  ranked.reserve(jobs.size());
  for (const auto& j : jobs) ranked.emplace_back(job_owned(j.pod) ? migrating(*j.pod) : 0, j);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < jobs.size(); ++i) jobs[i] = ranked[i].second;
}

void sort_jobs(std::vector<arbitration_job>& jobs, const migration_view& view) {
  sort_jobs_by_creation_time(jobs);
  sort_jobs_by_pod(jobs);
  sort_jobs_by_controller(jobs);
  sort_jobs_by_migrating_num(jobs, [&view](const pod_info& pod) {
    if (view.index != nullptr) return view.index->migrating_in_workload(pod.ns, pod.owner);
    std::int64_t n = 0;
    if (view.jobs == nullptr) return n;
    for (const auto& j : *view.jobs) {
      if (!(j.passed_arbitration || j.phase == job_phase::running) || is_final(j.phase)) continue;
      // A pod's key starts with its namespace: other namespaces are skipped before the lookup.
      if (!j.pod.starts_with(pod.ns) || j.pod.size() <= pod.ns.size() ||
          j.pod[pod.ns.size()] != '/')
        continue;
      const pod_info* p = view.pod(j.pod);
      if (p != nullptr && p->ns == pod.ns && p->owner == pod.owner) ++n;
    }
    return n;
  });
}

arbitration_outcome arbitrate_once(
    const std::vector<arbitration_job>& sorted,
    const std::function<std::string(const arbitration_job&)>& non_retryable,
    const std::function<std::string(const arbitration_job&)>& retryable,
    const std::function<void(const job_info&)>& on_pass) {
  arbitration_outcome out;
  for (const auto& j : sorted) {
    if (j.pod != nullptr) {
      if (auto why = non_retryable(j); !why.empty()) {
        out.failed.emplace_back(j.job, std::move(why));
        continue;
      }
      if (auto why = retryable(j); !why.empty()) {
        out.waiting.push_back(j.job);
        continue;
      }
    }
    out.passed.push_back(j.job);
    if (on_pass) on_pass(*j.job);
  }
  return out;
}

}  // namespace colony::descheduler
