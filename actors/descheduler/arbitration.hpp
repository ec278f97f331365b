// The migration controller's arbitration (pkg/descheduler/controllers/migration/arbitrator/
// arbitrator.go, sort.go): the order pending jobs are judged in, and one pass over them.
//
// Sort = four stable sorts in sequence, so the last is the primary key:
//   1. by creation time, newer first, compared in whole seconds;
//   2. by pod: the pod order without usage (pod_sorter.hpp, keys 1..6, then newer first); jobs
//      without a pod first;
//   3. by controller: for pods whose controller is a Job, every job of that Job moves right after
//      the first job of it; other jobs keep their place;
//   4. by migrating count: for Job-owned pods, the number of jobs of that Job's pods that are
//      migrating (passed arbitration, or Running), higher first; others 0.
// One pass judges the jobs in that order: the non-retryable filter failing fails the job
// (ForbiddenMigratePod); else the retryable filter failing leaves it queued for the next pass;
// else it passes (and counts for the jobs judged after it). A job without a pod passes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actors/descheduler/migration_job.hpp"

namespace colony::descheduler {

struct arbitration_job {
  const job_info* job = nullptr;
  const pod_info* pod = nullptr;  // nullptr: the pod is not found
};

void sort_jobs_by_creation_time(std::vector<arbitration_job>& jobs);
void sort_jobs_by_pod(std::vector<arbitration_job>& jobs);
void sort_jobs_by_controller(std::vector<arbitration_job>& jobs);
// migrating(pod): the migrating count of the pod's Job owner.
void sort_jobs_by_migrating_num(std::vector<arbitration_job>& jobs,
                                const std::function<std::int64_t(const pod_info&)>& migrating);
// The four in sequence; the migrating counts from `view` (every job of the same Job owner
// that passed arbitration or is Running).
void sort_jobs(std::vector<arbitration_job>& jobs, const migration_view& view);

struct arbitration_outcome {
  std::vector<const job_info*> passed;
  std::vector<std::pair<const job_info*, std::string>> failed;  // with the refusal
  std::vector<const job_info*> waiting;                         // retry next pass
};

// One pass in the given order. non_retryable / retryable answer "" to pass; on_pass is called
// as a job passes, before the next job is judged (the caller marks it passed in its view).
[[nodiscard]] arbitration_outcome arbitrate_once(
    const std::vector<arbitration_job>& sorted,
    const std::function<std::string(const arbitration_job&)>& non_retryable,
    const std::function<std::string(const arbitration_job&)>& retryable,
    const std::function<void(const job_info&)>& on_pass);

}  // namespace colony::descheduler
