#include "sim/usage_model.hpp"

#include <algorithm>

namespace colony::sim {

namespace fb = flatbuffers;

namespace {

std::int64_t all_cpu(const resource_list& r) {
  return r.cpu_milli + r.batch_cpu_milli + r.mid_cpu_milli;
}
std::int64_t all_memory(const resource_list& r) {
  return r.memory_bytes + r.batch_memory_bytes + r.mid_memory_bytes;
}

}  // namespace

result<usage_source> usage_source::create(const trace::trace_set& t, const sim_config& cfg,
                                          usage_model model, std::uint64_t seed) {
  usage_source u(cfg, model);
  if (model == usage_model::trace)
    // openb and synthetic traces carry requests only; per-pod usage would come from v2018
    // container_usage keyed by container, which no openb pod maps to.
    return fail(
        errc::invalid_input,
        "usage model 'trace' needs per-pod usage, which this trace does not have (openb lists "
        "requests only); use v2018-curves or none",
        t.dir);
  const auto& rows = t.openb_pods->rows;
  u.trace_be_.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    u.trace_be_[i] = rows[i].qos == trace::openb_qos::be ? 1 : 0;
  if (model != usage_model::v2018_curves) return u;
  if (!t.machine_usage || t.machine_usage->rows.empty())
    return fail(errc::invalid_input,
                "usage model v2018-curves needs a v2018 machine_usage table in the trace (or use "
                "--usage-model none)",
                t.dir);
  u.curves_ = trace::extract_usage_curves(t.machine_usage->rows);
  if (u.curves_.empty())
    return fail(errc::invalid_input, "no usage curve could be extracted from machine_usage", t.dir);
  for (const auto& c : u.curves_) {
    double sc = 0, sm = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      sc += c.cpu[i];
      sm += c.memory[i];
    }
    const double n = static_cast<double>(std::max<std::size_t>(1, c.size()));
    u.mean_cpu_.push_back(std::max(sc / n, 1e-3));
    u.mean_mem_.push_back(std::max(sm / n, 1e-3));
  }
  u.curve_of_.resize(rows.size());
  u.shift_of_.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& name = rows[i].name;
    u.curve_of_[i] = static_cast<std::uint32_t>(trace::pick_curve(u.curves_.size(), seed, name));
    const auto& c = u.curves_[u.curve_of_[i]];
    u.shift_of_[i] =
        static_cast<std::int64_t>(trace::pick_curve(c.size(), seed ^ 0x9e3779b97f4a7c15ULL, name)) *
        c.step_ms;
  }
  return u;
}

resource_list usage_source::measure(std::span<pod_on_node_usage> pods, std::int64_t t,
                                    std::int64_t be_cpu_limit_milli) const {
  std::int64_t be_cpu = 0;
  for (auto& p : pods) {
    const std::int64_t creq = all_cpu(p.requests), mreq = all_memory(p.requests);
    if (model_ != usage_model::v2018_curves) {
      p.cpu = creq;
      p.memory = mreq;
    } else {
      const auto c = curve_of_[p.pod];
      const auto pt = trace::sample(curves_[c], t - p.bind_ms + shift_of_[p.pod]);
      // The workload's own class (the trace's qos column), not the config's classification:
      // the same pod uses the same resources under every config.
      const usage_ratio& ratio = trace_be_[p.pod] != 0 ? cfg_->batch_ratio : cfg_->prod_ratio;
      const double fc = std::clamp(ratio.cpu * pt.cpu / mean_cpu_[c], 0.0, 1.0);
      const double fm = std::clamp(ratio.memory * pt.memory / mean_mem_[c], 0.0, 1.0);
      p.cpu = static_cast<std::int64_t>(static_cast<double>(creq) * fc);
      p.memory = static_cast<std::int64_t>(static_cast<double>(mreq) * fm);
    }
    if (p.qos == wire::QoSClass::BE) be_cpu += p.cpu;
  }
  if (be_cpu_limit_milli >= 0 && be_cpu > be_cpu_limit_milli && be_cpu > 0) {
    const double f = static_cast<double>(be_cpu_limit_milli) / static_cast<double>(be_cpu);
    for (auto& p : pods)
      if (p.qos == wire::QoSClass::BE)
        p.cpu = static_cast<std::int64_t>(static_cast<double>(p.cpu) * f);
  }
  resource_list total;
  for (const auto& p : pods) {
    total.cpu_milli += p.cpu;
    total.memory_bytes += p.memory;
  }
  return total;
}

messages::byte_buffer usage_source::node_metric(messages::event_builder& b, std::int64_t t,
                                                std::string_view node,
                                                std::span<const pod_on_node_usage> pods,
                                                const resource_list& node_usage) const {
  auto& fbb = b.fbb();
  auto name = b.key_string(node);
  auto nu = b.resources(node_usage);
  // Modelled usage has no system part: the table is left out (a reader takes absent as zero).
  const fb::Offset<wire::Resources> su;
  std::vector<fb::Offset<wire::PodMetric>> pms;
  pms.reserve(pods.size());
  for (const auto& p : pods) {
    auto key = fbb.CreateString(*p.key);
    resource_list r;
    r.cpu_milli = p.cpu;
    r.memory_bytes = p.memory;
    auto ru = b.resources(r);
    pms.push_back(wire::CreatePodMetric(fbb, key, ru, p.priority_class, p.qos));
  }
  // An idle node's report lists no pods: the vector is left out (readers take absent as empty).
  const auto pv =
      pms.empty() ? fb::Offset<fb::Vector<fb::Offset<wire::PodMetric>>>{} : fbb.CreateVector(pms);
  const std::int64_t interval_ms = cfg_->node_metric_report_interval_s * 1000;
  auto payload =
      wire::CreateNodeMetricReported(fbb, name, t, 300000, interval_ms, nu, su, 0, 0, pv, 0);
  messages::header h;
  h.time = event_time{t};
  h.kind = wire::EntityKind::Node;
  h.key = node;
  h.causation = -1;
  h.source = "koordlet";
  return b.finish(h, payload);
}

}  // namespace colony::sim
