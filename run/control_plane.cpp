#include "run/control_plane.hpp"

#include "actors/admission/actor/colocation_profile_component.hpp"
#include "actors/descheduler/actor/descheduler_component.hpp"
#include "actors/descheduler/actor/migration_controller_component.hpp"
#include "actors/quota/actor/quota_component.hpp"
#include "actors/quota/actor/quota_profile_component.hpp"
#include "actors/scheduler/actor/scheduler_component.hpp"
#include "actors/slo_controller/actor/slo_controller_component.hpp"

namespace colony::run {

result<std::vector<std::unique_ptr<entities::component>>> control_plane(
    const control_plane_options& o) {
  std::vector<std::unique_ptr<entities::component>> v;
  v.push_back(std::make_unique<admission_actor::colocation_profile_component>(
      admission::profile_set{}, admission_actor::colocation_profile_options{}));
  scheduler::scheduler_component_options so;
  so.config = o.scheduler;
  // The webhook writes to the same log: a pod is queued once admitted, as in Kubernetes.
  so.await_admission = true;
  so.elastic_quota = o.elastic_quota;
  so.elastic_quota_ignore_pod_overhead = o.scheduler_gates.elastic_quota_ignore_pod_overhead;
  so.parallelizer = o.parallelizer;
  so.recorder = o.scheduler_recorder;
  auto sched = scheduler::scheduler_component::create(std::move(so));
  if (!sched) return tl::unexpected(sched.error());
  quota::quota_component_options qo;
  qo.args = (*sched)->quota_args();
  v.push_back(std::move(*sched));
  if (o.elastic_quota) {
    v.push_back(std::make_unique<quota::quota_component>(std::move(qo)));
    // koord-manager's ElasticQuotaProfile controller: the tree roots of the cluster's profiles.
    v.push_back(std::make_unique<quota::quota_profile_component>());
  }
  if (o.slo_controller) {
    slo_controller_actor::slo_controller_options sl;
    sl.cpu_normalization = o.cpu_normalization;
    v.push_back(std::make_unique<slo_controller_actor::slo_controller_component>(std::move(sl)));
  }
  if (o.descheduler) {
    descheduler_actor::descheduler_component_options d;
    d.config = *o.descheduler;
    v.push_back(std::make_unique<descheduler_actor::descheduler_component>(std::move(d)));
    descheduler_actor::migration_controller_options m;
    m.args = o.descheduler->migration;
    v.push_back(std::make_unique<descheduler_actor::migration_controller_component>(std::move(m)));
  }
  return v;
}

messages::byte_buffer clock_tick_record(std::int64_t t_ms) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto why = fbb.CreateString("wake-up due");
  const auto payload = wire::CreateClockTicked(fbb, why);
  messages::header h;
  h.time = event_time{t_ms};
  h.kind = wire::EntityKind::Cluster;
  h.key = "clock";
  h.source = "colony-run";
  return b.finish(h, payload);
}

}  // namespace colony::run
