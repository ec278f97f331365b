#include "sim/log_source.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "actors/admission/actor/colocation_profile_component.hpp"
#include "actors/quota/actor/quota_events.hpp"
#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "stores/event_log.hpp"

namespace colony::sim {

namespace {

using messages::to_string_view;

// A record of the input log that fails verification is bad input to this command (exit 3), not
// damage to a store the command owns: the error keeps the log's "PATH offset N".
error as_input(error e) {
  if (e.code == errc::corrupt) e.code = errc::invalid_input;
  e.message = "--from-log: " + e.message;
  return e;
}

messages::header observation_header(const wire::Envelope& env) {
  messages::header h;
  h.time = event_time{env.event_time_ms()};
  h.kind = env.entity_kind();
  h.key = to_string_view(env.entity_key());
  h.causation = -1;
  h.source = to_string_view(env.source());
  return h;
}

}  // namespace

config_replacement replacement_of(const sim_config& c) {
  config_replacement r;
  r.slo_controller_config = c.gives("sloControllerConfig");
  r.colocation_profiles = c.gives("colocationProfiles");
  r.elastic_quotas = c.gives("elasticQuotas");
  return r;
}

std::vector<messages::byte_buffer> given_configuration(const sim_config& c, std::int64_t t) {
  std::vector<messages::byte_buffer> out;
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto header = [&](wire::EntityKind k, std::string_view key) {
    messages::header h;
    h.time = event_time{t};
    h.kind = k;
    h.key = key;
    h.causation = -1;
    h.source = "sim";
    return h;
  };
  auto config = [&](std::string_view key, std::string_view kind, std::string_view name,
                    const std::string& spec) {
    auto k = fbb.CreateString(kind);
    auto n = fbb.CreateString(name);
    auto s = fbb.CreateString(spec);
    auto payload = wire::CreateConfigUpdated(fbb, k, n, s, false);
    out.push_back(b.finish(header(wire::EntityKind::Cluster, key), payload));
  };
  if (c.gives("sloControllerConfig"))
    config("slo-controller", slo_controller_actor::config_kind_slo_controller,
           "koordinator-system/slo-controller-config", c.slo_configmap_json);
  if (c.gives("colocationProfiles"))
    config("admission", admission_actor::config_kind_profile, c.name, c.profiles_yaml);
  if (c.gives("schedulerConfig"))
    config("scheduler", "KubeSchedulerConfiguration", c.name, c.scheduler_yaml);
  if (c.gives("elasticQuotas")) {
    std::vector<const quota::quota_spec*> qs;
    for (const auto& q : c.quotas) qs.push_back(&q);
    std::sort(qs.begin(), qs.end(), [](auto* a, auto* b) { return a->name < b->name; });
    for (const auto* q : qs) {
      auto payload = quota::quota_upserted(b, *q);
      out.push_back(b.finish(header(wire::EntityKind::ElasticQuota, q->name), payload));
    }
  }
  return out;
}

log_source::log_source(std::unique_ptr<stores::event_log> log) : log_(std::move(log)) {}

log_source::~log_source() = default;

result<std::unique_ptr<log_source>> log_source::open(const std::string& path) {
  stores::log_options lo;
  lo.create_if_missing = false;
  lo.read_only = true;
  auto log = stores::open_log(path, lo);
  if (!log) {
    auto e = log.error();
    e.message = "--from-log: " + e.message;
    return tl::unexpected(std::move(e));
  }
  std::unique_ptr<log_source> s(new log_source(std::move(*log)));
  if (auto v = s->verify_and_count(path); !v) return tl::unexpected(v.error());
  return s;
}

result<void> log_source::verify_and_count(const std::string& path) {
  scan_ = {};
  scan_.path = path;
  scan_.first_ms = std::numeric_limits<std::int64_t>::max();
  scan_.last_ms = std::numeric_limits<std::int64_t>::min();
  std::set<std::string, std::less<>> nodes, pods;
  auto count = [](std::map<std::string, std::uint64_t>& m, std::string_view k) {
    if (auto it = m.find(std::string(k)); it != m.end())
      ++it->second;
    else
      m.emplace(std::string(k), 1);
  };
  auto r = log_->read(0, no_offset, [&](log_offset, messages::bytes_view bytes) {
    const auto& env = *wire::GetEnvelope(bytes.data());
    ++scan_.records;
    if (env.causation() >= 0) {
      ++scan_.decisions;
      count(scan_.decisions_by_source, to_string_view(env.source()));
      return true;
    }
    ++scan_.observations;
    count(scan_.observations_by_source, to_string_view(env.source()));
    scan_.first_ms = std::min(scan_.first_ms, env.event_time_ms());
    scan_.last_ms = std::max(scan_.last_ms, env.event_time_ms());
    const auto key = to_string_view(env.entity_key());
    if (env.payload_type() == wire::Payload::NodeRegistered && !nodes.contains(key))
      nodes.emplace(key);
    if (env.payload_type() == wire::Payload::PodSubmitted && !pods.contains(key)) pods.emplace(key);
    return true;
  });
  if (!r) return tl::unexpected(as_input(r.error()));
  if (scan_.observations == 0)
    return fail(errc::invalid_input,
                "--from-log: the log holds no observation (no record with causation -1), so there "
                "is nothing to re-simulate",
                path);
  scan_.nodes = nodes.size();
  scan_.pods = pods.size();
  end_ = scan_.records;
  return {};
}

result<bool> log_source::advance() {
  constexpr log_offset chunk = 4096;
  for (;;) {
    if (at_ == chunk_.size()) {
      chunk_from_ += chunk_.size();
      chunk_.clear();
      at_ = 0;
      if (chunk_from_ >= end_) return false;
      const log_offset to = std::min<log_offset>(end_, chunk_from_ + chunk);
      auto r = log_->read(chunk_from_, to, [&](log_offset, messages::bytes_view b) {
        chunk_.emplace_back(b.begin(), b.end());
        return true;
      });
      if (!r) return tl::unexpected(as_input(r.error()));
      if (chunk_.empty())
        return fail(errc::invalid_input, "--from-log: the log ended early", scan_.path);
    }
    const auto& env = *wire::GetEnvelope(chunk_[at_].data());
    bool drop = false;
    if (env.causation() >= 0) {
      ++counts_.decisions_dropped;
      ++decisions_;
      drop = true;
    } else if (env.payload_type() == wire::Payload::ConfigUpdated) {
      const auto kind = to_string_view(env.payload_as_ConfigUpdated()->kind());
      drop = (replace_.slo_controller_config &&
              kind == slo_controller_actor::config_kind_slo_controller) ||
             (replace_.colocation_profiles && kind == admission_actor::config_kind_profile);
      counts_.configuration_replaced += drop ? 1 : 0;
    } else if (env.payload_type() == wire::Payload::QuotaUpserted ||
               env.payload_type() == wire::Payload::QuotaDeleted) {
      drop = replace_.elastic_quotas;
      counts_.configuration_replaced += drop ? 1 : 0;
    }
    if (!drop) return true;
    ++at_;
  }
}

result<std::optional<std::uint64_t>> log_source::next_decisions_before() {
  auto a = advance();
  if (!a) return tl::unexpected(a.error());
  if (!*a) return std::optional<std::uint64_t>{};
  return std::optional<std::uint64_t>{decisions_};
}

result<std::optional<log_observation>> log_source::next() {
  for (;;) {
    auto a = advance();
    if (!a) return tl::unexpected(a.error());
    if (!*a) return std::optional<log_observation>{};
    const auto& rec = chunk_[at_++];
    const auto& env = *wire::GetEnvelope(rec.data());
    log_observation o;
    o.record = rec;
    o.time_ms = env.event_time_ms();
    o.decisions_before = decisions_;
    // Placements are the run's: rebuild a PodFinished / PodStarted naming another node.
    std::optional<std::string_view> at;
    std::string_view pod, node;
    if (placement_ && env.payload_type() == wire::Payload::PodFinished) {
      pod = to_string_view(env.payload_as_PodFinished()->pod());
      node = to_string_view(env.payload_as_PodFinished()->node());
      at = placement_(pod);
    } else if (placement_ && env.payload_type() == wire::Payload::PodStarted) {
      pod = to_string_view(env.payload_as_PodStarted()->pod());
      node = to_string_view(env.payload_as_PodStarted()->node());
      at = placement_(pod);
      if (at && at->empty()) {
        ++counts_.pod_started_dropped;
        continue;
      }
    }
    if (at && *at != node) {
      auto& fbb = b_.fbb();
      auto p = fbb.CreateString(pod);
      auto n = fbb.CreateString(*at);
      if (env.payload_type() == wire::Payload::PodFinished) {
        auto payload = wire::CreatePodFinished(fbb, p, n, env.payload_as_PodFinished()->phase());
        rewritten_ = b_.finish(observation_header(env), payload);
      } else {
        auto payload = wire::CreatePodStarted(fbb, p, n);
        rewritten_ = b_.finish(observation_header(env), payload);
      }
      o.record = rewritten_;
      ++counts_.placements_rewritten;
    }
    ++counts_.fed;
    return std::optional<log_observation>{o};
  }
}

}  // namespace colony::sim
