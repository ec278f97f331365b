#include "actors/descheduler/actor/descheduler_component.hpp"

#include <algorithm>

#include "actors/descheduler/migration_filter.hpp"
#include "messages/terms.hpp"

namespace colony::descheduler_actor {

namespace fb = flatbuffers;

descheduler_component::descheduler_component(descheduler_component_options opt)
    : opt_(std::move(opt)), limiter_(opt_.config.limits) {
  if (opt_.config.low_node_load_enabled) {
    auto args = opt_.config.low_node_load;
    if (opt_.config.dry_run) args.dry_run = true;
    lnl_.emplace(std::move(args));
  }
}

void descheduler_component::on_event(const wire::Envelope& env,
                                     std::vector<messages::byte_buffer>& /*out*/) {
  now_ = std::max(now_, env.event_time_ms());
  if (env.payload_type() == wire::Payload::PodEvicted) {
    const auto* e = env.payload_as_PodEvicted();
    if (e->reason() == wire::EvictionReason::Descheduled)
      if (const auto* p = view_.pod(messages::to_string_view(e->pod())); p != nullptr) {
        const auto w = view_.workload(*p);
        limits_.track(*p, w ? w->replicas : 0, env.event_time_ms());
      }
  }
  view_.on_event(env);
}

void descheduler_component::on_batch_end(std::vector<messages::byte_buffer>& out) {
  if (now_ >= next_round_) round(out);
}

void descheduler_component::on_wakeup(std::int64_t now_ms,
                                      std::vector<messages::byte_buffer>& out) {
  now_ = std::max(now_, now_ms);
  if (now_ >= next_round_) round(out);
}

bool descheduler_component::filter(const descheduler::pod_info& p) const {
  const auto& mc = opt_.config.migration;
  const std::string key = p.key();
  if (view_.active_job_of(key) != nullptr) return false;
  if (mc.default_job_mode == descheduler::job_mode_reservation_first &&
      std::find(mc.scheduler_names.begin(), mc.scheduler_names.end(), p.scheduler_name) ==
          mc.scheduler_names.end())
    return false;
  return descheduler::passes_migration_filters(p, key, mc, view_.migration());
}

bool descheduler_component::evict(const descheduler::eviction_request& r,
                                  std::vector<messages::byte_buffer>& out) {
  const auto& p = *r.pod;
  if (!limiter_.allow(p)) {
    ++stats_.limited;
    return false;
  }
  if (!filter(p)) return false;
  if (limits_.limited(p, now_) && p.annotations.count(descheduler::annotation_evict) == 0) {
    ++stats_.object_limited;
    return false;
  }
  const auto& mc = opt_.config.migration;
  const std::string key = p.key();
  const std::string job = p.ns + "." + p.name + "." + std::to_string(now_);
  auto& fbb = b_.fbb();
  // Strings and sub-tables first, in field order (docs/events.md "Writing events").
  auto name = fbb.CreateString(job);
  auto pod = fbb.CreateString(key);
  auto mode = fbb.CreateString(mc.default_job_mode);
  auto reason = fbb.CreateString(r.reason);
  auto creator = fbb.CreateString(opt_.name);
  auto inputs = messages::text_terms(fbb, {{"trigger", descheduler::low_node_load_plugin_name},
                                           {"node", r.node},
                                           {"pool", r.pool},
                                           {"scope", r.prod ? "prod" : "node"}});
  auto payload = wire::CreateMigrationJobCreated(fbb, name, pod, mode, reason,
                                                 mc.default_job_ttl_ms, creator, inputs);
  const messages::header h{event_time{now_}, wire::EntityKind::PodMigrationJob, job,
                           view_.metric_offset(r.node), opt_.name};
  out.push_back(b_.finish(h, payload));
  view_job j;
  j.info.name = job;
  j.info.pod = key;
  j.info.mode = mc.default_job_mode;
  j.info.created_ms = now_;
  j.reason = r.reason;
  j.trigger = std::string(descheduler::low_node_load_plugin_name);
  j.ttl_ms = mc.default_job_ttl_ms;
  j.info.ttl_ms = j.ttl_ms;
  view_.add_job(std::move(j));
  limiter_.done(p);
  ++stats_.jobs_created;
  return true;
}

void descheduler_component::round(std::vector<messages::byte_buffer>& out) {
  const std::int64_t interval = std::max<std::int64_t>(1, opt_.config.descheduling_interval_ms);
  next_round_ = (now_ / interval + 1) * interval;
  std::vector<descheduler::node_info> nodes;
  for (const auto& [name, n] : view_.nodes()) {
    if (!n.ready) continue;
    if (opt_.config.node_selector &&
        !admission::label_selector_matches(*opt_.config.node_selector, n.labels).value_or(false))
      continue;
    nodes.push_back(n);
  }
  if (nodes.size() <= 1 || !lnl_) {
    ++stats_.rounds_skipped;
    return;
  }
  ++stats_.rounds;
  limiter_.reset();
  descheduler::low_node_load_input in;
  in.nodes = nodes;
  in.now_ms = now_;
  in.pods_on_node = [this](const descheduler::node_info& n) { return view_.pods_on(n.name); };
  in.node_metric = [this](std::string_view n) { return view_.metric(n); };
  descheduler::evictor ev;
  ev.filter = [this](const descheduler::pod_info& p) { return filter(p); };
  ev.evict = [this, &out](const descheduler::eviction_request& r) { return evict(r, out); };
  (void)lnl_->balance(in, ev);
}

}  // namespace colony::descheduler_actor
