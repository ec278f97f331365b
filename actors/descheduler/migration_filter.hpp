// The migration controller's filters (pkg/descheduler/controllers/migration/arbitrator/filter.go,
// pkg/descheduler/evictions/evictions.go NewEvictorFilter): the non-retryable one (a pod that
// fails it can never migrate: the job fails with ForbiddenMigratePod) and the retryable ones (a
// pod that fails them waits for the next arbitration pass). Each answers "" when the pod passes,
// else why it does not. A pod annotated descheduler.alpha.kubernetes.io/evict passes every one.
//
// Counting (retryable filters): a job counts while Running or Pending. Inside an arbitration pass
// (arbitrating = true) a Pending job counts only once it has passed arbitration; outside (the
// Filter LowNodeLoad calls) every Pending job counts. The judged pod's own jobs never count. A
// limit is reached when count >= limit.
#pragma once

#include <string>
#include <string_view>

#include "actors/descheduler/descheduler_types.hpp"
#include "actors/descheduler/migration_controller_args.hpp"
#include "actors/descheduler/migration_job.hpp"

namespace colony::descheduler {

inline constexpr std::string_view annotation_evict = "descheduler.alpha.kubernetes.io/evict";
inline constexpr std::int32_t system_critical_priority = 2'000'000'000;

// The evictor's constraints, then max eviction cost and ExpectedReplicas.
[[nodiscard]] std::string non_retryable_refusal(const pod_info& pod,
                                                const migration_controller_args& args,
                                                const migration_view& view);
// MaxMigratingGlobally, MaxMigratingPerNode, MaxMigratingPerNamespace, then the per-workload
// MaxMigrating / MaxUnavailable.
[[nodiscard]] std::string retryable_refusal(const pod_info& pod,
                                            const migration_controller_args& args,
                                            const migration_view& view, bool arbitrating);
// Both, as the evictor's Filter asks them of a pod before a job exists (arbitrating = false):
// true when non_retryable_refusal and retryable_refusal are both "", with the evict annotation,
// the pod's key and its workload looked up once for the two (LowNodeLoad asks it of every pod on
// every source). REQUIRES: key == pod.key().
[[nodiscard]] bool passes_migration_filters(const pod_info& pod, std::string_view key,
                                            const migration_controller_args& args,
                                            const migration_view& view);

// The single filters (exposed for the golden cases).
[[nodiscard]] bool filter_max_migrating_globally(const pod_info& pod,
                                                 std::optional<std::int64_t> limit,
                                                 const migration_view& view, bool arbitrating);
[[nodiscard]] bool filter_max_migrating_per_node(const pod_info& pod,
                                                 std::optional<std::int64_t> limit,
                                                 const migration_view& view, bool arbitrating);
[[nodiscard]] bool filter_max_migrating_per_namespace(const pod_info& pod,
                                                      std::optional<std::int64_t> limit,
                                                      const migration_view& view, bool arbitrating);
[[nodiscard]] std::string filter_workload(const pod_info& pod,
                                          const migration_controller_args& args,
                                          const migration_view& view, bool arbitrating);
[[nodiscard]] bool filter_expected_replicas(const pod_info& pod,
                                            const migration_controller_args& args,
                                            const migration_view& view);
[[nodiscard]] bool filter_max_eviction_cost(const pod_info& pod);

// The state the workload filters derive from a workload: its replicas and its pods that are not
// available in `view` (for owners that keep migration_view::workload_state_of).
[[nodiscard]] workload_state workload_state_of(const workload_info& w, const migration_view& view);

// Whether a job counts toward the limits (see above).
[[nodiscard]] bool job_counts(const job_info& j, bool arbitrating);

}  // namespace colony::descheduler
