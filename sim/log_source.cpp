#include "sim/log_source.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include <xxhash.h>

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

// A decision's identity for finding it in the log: its cause, decider, type and entity.
std::uint64_t identity(std::int64_t cause, const wire::Envelope& d) {
  const auto src = to_string_view(d.source());
  const auto key = to_string_view(d.entity_key());
  std::string id;
  id.reserve(sizeof cause + src.size() + key.size() + 2);
  id.append(reinterpret_cast<const char*>(&cause), sizeof cause);
  id.append(src);
  id.push_back('\0');
  id.push_back(static_cast<char>(d.payload_type()));
  id.append(key);
  return XXH3_64bits(id.data(), id.size());
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
  for (const auto& pc : c.extra_priority_classes)
    config("admission", admission_actor::config_kind_priority_class, pc.name,
           priority_class_spec(pc));
  if (c.gives("colocationProfiles"))
    config("admission", admission_actor::config_kind_profile, c.name, c.profiles_yaml);
  if (c.gives("schedulerConfig"))
    config("scheduler", "KubeSchedulerConfiguration", c.name, c.scheduler_yaml);
  for (const auto& o : c.quota_profile_objects)
    out.push_back(b.finish(header(wire::EntityKind::Object, quota_profile_key(o)),
                           quota_profile_observed(b, o)));
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

log_source::log_source(std::unique_ptr<stores::event_log> log, log_offset window)
    : log_(std::move(log)), window_(window) {}

log_source::~log_source() = default;

result<std::unique_ptr<log_source>> log_source::open(const std::string& path, log_offset window) {
  stores::log_options lo;
  lo.create_if_missing = false;
  lo.read_only = true;
  auto log = stores::open_log(path, lo);
  if (!log) {
    auto e = log.error();
    e.message = "--from-log: " + e.message;
    return tl::unexpected(std::move(e));
  }
  std::unique_ptr<log_source> s(new log_source(std::move(*log), std::max<log_offset>(1, window)));
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

result<void> log_source::read_to(log_offset to) {
  to = std::min(to, end_);
  if (read_ >= to) return {};
  auto r = log_->read(read_, to, [&](log_offset off, messages::bytes_view bytes) {
    const auto& env = *wire::GetEnvelope(bytes.data());
    if (env.causation() >= 0) {
      const auto h = identity(env.causation(), env);
      decisions_.emplace(h, off);
      decision_order_.emplace_back(off, h);
      return true;
    }
    bool drop = false;
    if (env.payload_type() == wire::Payload::ConfigUpdated) {
      const auto kind = to_string_view(env.payload_as_ConfigUpdated()->kind());
      drop = (replace_.slo_controller_config &&
              kind == slo_controller_actor::config_kind_slo_controller) ||
             (replace_.colocation_profiles && kind == admission_actor::config_kind_profile);
    } else if (env.payload_type() == wire::Payload::QuotaUpserted ||
               env.payload_type() == wire::Payload::QuotaDeleted) {
      drop = replace_.elastic_quotas;
    }
    if (drop)
      ++counts_.configuration_replaced;
    else
      observations_.push_back({off, messages::byte_buffer(bytes.begin(), bytes.end())});
    return true;
  });
  if (!r) return tl::unexpected(as_input(r.error()));
  if (*r != to - read_)
    return fail(errc::invalid_input, "--from-log: the log ended early", scan_.path);
  read_ = to;
  return {};
}

void log_source::forget_before(log_offset position) {
  while (!decision_order_.empty() && decision_order_.front().first < position) {
    const auto [off, h] = decision_order_.front();
    decision_order_.pop_front();
    const auto range = decisions_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == off) {
        decisions_.erase(it);
        break;
      }
    }
  }
}

result<std::optional<log_offset>> log_source::peek() {
  constexpr log_offset chunk = 4096;
  while (observations_.empty() && read_ < end_) {
    if (auto r = read_to(read_ + chunk); !r) return tl::unexpected(r.error());
  }
  if (observations_.empty()) return std::optional<log_offset>{};
  return std::optional<log_offset>{observations_.front().position};
}

result<std::optional<log_observation>> log_source::next() {
  for (;;) {
    auto p = peek();
    if (!p) return tl::unexpected(p.error());
    if (!*p) return std::optional<log_observation>{};
    current_ = std::move(observations_.front().record);
    const log_offset position = observations_.front().position;
    observations_.pop_front();
    const auto& env = *wire::GetEnvelope(current_.data());
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
      messages::byte_buffer rebuilt;
      if (env.payload_type() == wire::Payload::PodFinished) {
        auto payload = wire::CreatePodFinished(fbb, p, n, env.payload_as_PodFinished()->phase());
        rebuilt = b_.finish(observation_header(env), payload);
      } else {
        auto payload = wire::CreatePodStarted(fbb, p, n);
        rebuilt = b_.finish(observation_header(env), payload);
      }
      current_ = std::move(rebuilt);
      ++counts_.placements_rewritten;
    }
    ++counts_.fed;
    log_observation o;
    o.record = current_;
    o.time_ms = wire::GetEnvelope(current_.data())->event_time_ms();
    o.position = position;
    return std::optional<log_observation>{o};
  }
}

result<std::optional<log_offset>> log_source::logged_position(log_offset cause,
                                                              const wire::Envelope& d) {
  if (auto r = read_to(cause + window_); !r) return tl::unexpected(r.error());
  forget_before(cause);
  const auto range = decisions_.equal_range(identity(static_cast<std::int64_t>(cause), d));
  auto best = range.second;
  for (auto it = range.first; it != range.second; ++it)
    if (it->second > cause && (best == range.second || it->second < best->second)) best = it;
  if (best == range.second) return std::optional<log_offset>{};
  const log_offset at = best->second;
  decisions_.erase(best);
  return std::optional<log_offset>{at};
}

}  // namespace colony::sim
