#include "sim/sim_config.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "actors/admission/profile_loader.hpp"
#include "actors/quota/actor/quota_profile_component.hpp"
#include "actors/quota/webhook.hpp"
#include "messages/quantity.hpp"

namespace colony::sim {

// Generated from sim/configs/koordinator-defaults.yaml at configure time (sim/CMakeLists.txt).
extern const char* const koordinator_defaults_yaml;

std::string_view to_string(usage_model m) noexcept {
  switch (m) {
    case usage_model::none:
      return "none";
    case usage_model::v2018_curves:
      return "v2018-curves";
    case usage_model::trace:
      return "trace";
  }
  return "none";
}

result<usage_model> parse_usage_model(std::string_view s) {
  if (s == "none") return usage_model::none;
  if (s == "v2018-curves") return usage_model::v2018_curves;
  if (s == "trace") return usage_model::trace;
  return fail(errc::invalid_input,
              "expected one of none, v2018-curves, trace, got '" + std::string(s) + "'");
}

std::string_view to_string(pod_lifetime l) noexcept {
  return l == pod_lifetime::trace ? "trace" : "running-stays";
}

result<pod_lifetime> parse_pod_lifetime(std::string_view s) {
  if (s == "trace") return pod_lifetime::trace;
  if (s == "running-stays") return pod_lifetime::running_stays;
  return fail(errc::invalid_input,
              "expected one of trace, running-stays, got '" + std::string(s) + "'");
}

std::string_view to_string(workload_model m) noexcept {
  return m == workload_model::none ? "none" : "shape";
}

result<workload_model> parse_workload_model(std::string_view s) {
  if (s == "none") return workload_model::none;
  if (s == "shape") return workload_model::shape;
  return fail(errc::invalid_input, "expected one of none, shape, got '" + std::string(s) + "'");
}

admission::priority_class_table koordinator_priority_classes() {
  admission::priority_class_table t;
  for (auto [n, v] : {std::pair{"koord-prod", 9000}, std::pair{"koord-mid", 7000},
                      std::pair{"koord-batch", 5000}, std::pair{"koord-free", 3000}})
    t[n] = admission::priority_class_info{n, v, ""};
  return t;
}

flatbuffers::Offset<wire::ObjectObserved> quota_profile_observed(
    messages::event_builder& b, const sim_config::quota_profile_object& o) {
  auto& fbb = b.fbb();
  auto av = fbb.CreateString("quota.koordinator.sh/v1alpha1");
  auto kind = fbb.CreateString(quota::kind_elastic_quota_profile);
  auto ns = fbb.CreateString(o.namespace_name);
  auto name = fbb.CreateString(o.name);
  auto uid = fbb.CreateString("");
  auto rv = fbb.CreateString("");
  auto labels = b.key_values(o.labels);
  auto spec = fbb.CreateString(o.spec_json);
  auto status = fbb.CreateString("");
  return wire::CreateObjectObserved(fbb, av, kind, ns, name, uid, rv, labels, spec, status, false);
}

std::string quota_profile_key(const sim_config::quota_profile_object& o) {
  return std::string(quota::kind_elastic_quota_profile) + "/" + o.namespace_name + "/" + o.name;
}

std::string priority_class_spec(const admission::priority_class_info& pc) {
  nlohmann::json spec = {{"apiVersion", "scheduling.k8s.io/v1"},
                         {"kind", "PriorityClass"},
                         {"metadata", {{"name", pc.name}}},
                         {"value", pc.value}};
  if (!pc.preemption_policy.empty()) spec["preemptionPolicy"] = pc.preemption_policy;
  return spec.dump();
}

std::string_view default_config_text() { return koordinator_defaults_yaml; }

std::optional<scheduler::numa::machine_model> numa_machine_model(std::int64_t cpus,
                                                                 const numa_topology_config& c) {
  if (cpus < 1) return std::nullopt;
  const std::int64_t t = c.threads_per_core;
  for (const auto& [sockets, nodes, threads] :
       {std::tuple<std::int64_t, std::int64_t, std::int64_t>{c.sockets, c.numa_nodes_per_socket, t},
        {1, 1, t},
        {1, 1, 1}}) {
    const std::int64_t per_core = sockets * nodes * threads;
    if (cpus % per_core != 0) continue;
    scheduler::numa::machine_model m;
    m.sockets = static_cast<int>(sockets);
    m.numa_nodes_per_socket = static_cast<int>(nodes);
    m.threads_per_core = static_cast<int>(threads);
    m.cores_per_numa_node = static_cast<int>(cpus / per_core);
    return m;
  }
  return std::nullopt;
}

namespace {

std::string at(std::string_view source, const YAML::Node& n) {
  const auto m = n.Mark();
  if (m.line < 0) return std::string(source);
  return std::string(source) + ":" + std::to_string(m.line + 1) + ":" +
         std::to_string(m.column + 1);
}

tl::unexpected<error> bad(std::string_view source, const YAML::Node& n, std::string_view field,
                          std::string message) {
  return fail(errc::invalid_input, std::string(field) + ": " + message, at(source, n));
}

// YAML -> JSON (for ConfigMap values given as YAML maps rather than JSON strings).
nlohmann::json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& x : n) a.push_back(to_json(x));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "true") return true;
      if (s == "false") return false;
      if (s == "null" || s == "~") return nullptr;
      try {
        std::size_t pos = 0;
        long long v = std::stoll(s, &pos);
        if (pos == s.size()) return v;
        double d = std::stod(s, &pos);
        if (pos == s.size()) return d;
      } catch (...) {
      }
      return s;
    }
    default:
      return nullptr;
  }
}

// A text field that may be given as a block string or as YAML structure.
std::string text_of(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << n;
  return e.c_str();
}

result<double> ratio_of(std::string_view source, const YAML::Node& n, const std::string& field) {
  try {
    const double v = n.as<double>();
    if (!(v >= 0 && v <= 10)) return bad(source, n, field, "expected a ratio in [0, 10]");
    return v;
  } catch (const YAML::Exception&) {
    return bad(source, n, field, "expected a number, got '" + text_of(n) + "'");
  }
}

result<std::int64_t> positive_int(std::string_view source, const YAML::Node& n,
                                  const std::string& field) {
  try {
    const auto v = n.as<std::int64_t>();
    if (v <= 0)
      return bad(source, n, field, "expected a positive integer, got " + std::to_string(v));
    return v;
  } catch (const YAML::Exception&) {
    return bad(source, n, field, "expected a positive integer, got '" + text_of(n) + "'");
  }
}

}  // namespace

result<sim_config> parse_sim_config(std::string_view yaml, std::string_view source) {
  sim_config c;
  c.source = std::string(source);
  c.priority_classes = koordinator_priority_classes();
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::ParserException& e) {
    return fail(errc::invalid_input, "YAML syntax: " + e.msg,
                std::string(source) + ":" + std::to_string(e.mark.line + 1) + ":" +
                    std::to_string(e.mark.column + 1));
  }
  if (!root.IsMap())
    return fail(errc::invalid_input, "expected a YAML mapping at the top", std::string(source));
  static const std::set<std::string> known = {"name",
                                              "description",
                                              "usageModel",
                                              "nodeMetricReportIntervalSeconds",
                                              "idleNodeReportIntervalSeconds",
                                              "metricsIntervalSeconds",
                                              "colocation",
                                              "podLifetime",
                                              "workloadModel",
                                              "usageRatios",
                                              "sloControllerConfig",
                                              "koordletFeatureGates",
                                              "priorityClasses",
                                              "colocationProfiles",
                                              "elasticQuotas",
                                              "elasticQuotaProfiles",
                                              "schedulerTieBreak",
                                              "schedulerFeatureGates",
                                              "schedulerConfig",
                                              "deschedulerConfig",
                                              "numaTopology",
                                              "cpuModels",
                                              "deviceTopology"};
  try {
    for (const auto& kv : root) {
      const auto key = kv.first.as<std::string>();
      if (!known.count(key)) return bad(source, kv.first, key, "unknown field");
      c.given.insert(key);
    }
    if (auto n = root["name"]) {
      c.name = n.as<std::string>();
      const bool ok = !c.name.empty() &&
                      c.name.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
                          std::string::npos;
      if (!ok)
        return bad(source, n, "name",
                   "expected letters, digits, '-', '_' or '.' (it names a folder)");
    } else {
      return fail(errc::invalid_input, "name: required field missing", std::string(source));
    }
    if (auto n = root["description"]) c.description = n.as<std::string>();
    if (auto n = root["usageModel"]) {
      auto m = parse_usage_model(n.as<std::string>());
      if (!m) return bad(source, n, "usageModel", m.error().message);
      c.usage = *m;
    }
    if (auto n = root["podLifetime"]) {
      auto m = parse_pod_lifetime(n.as<std::string>());
      if (!m) return bad(source, n, "podLifetime", m.error().message);
      c.lifetime = *m;
    }
    if (auto n = root["workloadModel"]) {
      auto m = parse_workload_model(n.as<std::string>());
      if (!m) return bad(source, n, "workloadModel", m.error().message);
      c.workloads = *m;
    }
    if (auto n = root["nodeMetricReportIntervalSeconds"]) {
      auto v = positive_int(source, n, "nodeMetricReportIntervalSeconds");
      if (!v) return tl::unexpected(v.error());
      c.node_metric_report_interval_s = *v;
    }
    if (auto n = root["idleNodeReportIntervalSeconds"]) {
      auto v = positive_int(source, n, "idleNodeReportIntervalSeconds");
      if (!v) return tl::unexpected(v.error());
      c.idle_node_report_interval_s = *v;
      if (*v % c.node_metric_report_interval_s != 0)
        return bad(source, n, "idleNodeReportIntervalSeconds",
                   "expected a multiple of nodeMetricReportIntervalSeconds");
    }
    if (auto n = root["metricsIntervalSeconds"]) {
      auto v = positive_int(source, n, "metricsIntervalSeconds");
      if (!v) return tl::unexpected(v.error());
      c.metrics_interval_s = *v;
    }
    if (auto n = root["colocation"]) {
      try {
        c.colocation = n.as<bool>();
      } catch (const YAML::Exception&) {
        return bad(source, n, "colocation", "expected true or false, got '" + text_of(n) + "'");
      }
    }
    if (auto n = root["usageRatios"]) {
      if (!n.IsMap()) return bad(source, n, "usageRatios", "expected a mapping of prod/batch");
      for (const auto& kv : n) {
        const auto cls = kv.first.as<std::string>();
        usage_ratio* r = cls == "prod" ? &c.prod_ratio : cls == "batch" ? &c.batch_ratio : nullptr;
        if (r == nullptr)
          return bad(source, kv.first, "usageRatios." + cls,
                     "unknown class (expected prod or batch)");
        if (!kv.second.IsMap())
          return bad(source, kv.second, "usageRatios." + cls, "expected {cpu: x, memory: y}");
        for (const auto& f : kv.second) {
          const auto fk = f.first.as<std::string>();
          const std::string field = "usageRatios." + cls + "." + fk;
          if (fk != "cpu" && fk != "memory") return bad(source, f.first, field, "unknown field");
          auto v = ratio_of(source, f.second, field);
          if (!v) return tl::unexpected(v.error());
          (fk == "cpu" ? r->cpu : r->memory) = *v;
        }
      }
    }
    // slo-controller-config: data keys -> JSON text (or YAML structure converted to JSON).
    nlohmann::json data = nlohmann::json::object();
    if (auto n = root["sloControllerConfig"]) {
      if (!n.IsMap())
        return bad(source, n, "sloControllerConfig", "expected the ConfigMap data mapping");
      for (const auto& kv : n) {
        const auto key = kv.first.as<std::string>();
        data[key] = kv.second.IsScalar() ? nlohmann::json(kv.second.Scalar())
                                         : nlohmann::json(to_json(kv.second).dump());
      }
    }
    c.slo_configmap_json = data.dump();
    auto upd = slo_controller::update(std::nullopt, c.slo_configmap_json);
    if (upd.error) {
      return fail(errc::invalid_input, "sloControllerConfig: " + upd.error->describe(),
                  at(source, root["sloControllerConfig"]));
    }
    c.slo = std::move(upd.in_force);
    c.cpu_normalization_plugins =
        data.contains(std::string(slo_controller::cpu_normalization_config_key)) ||
        data.contains(std::string(slo_controller::resource_amplification_config_key));
    if (auto n = root["cpuModels"]) {
      if (!n.IsSequence()) return bad(source, n, "cpuModels", "expected a list of rules");
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string f = "cpuModels[" + std::to_string(i) + "]";
        if (!n[i].IsMap()) return bad(source, n[i], f, "expected {cpus, model, ...}");
        cpu_model_rule r;
        for (const auto& kv : n[i]) {
          const auto k = kv.first.as<std::string>();
          const std::string kf = f + "." + k;
          try {
            if (k == "cpus") {
              r.cpus = kv.second.as<std::int64_t>();
              if (r.cpus < 0) return bad(source, kv.second, kf, "expected 0 (any) or more");
            } else if (k == "model") {
              r.model = kv.second.as<std::string>();
            } else if (k == "hyperThreadEnabled") {
              r.hyper_thread_enabled = kv.second.as<bool>();
            } else if (k == "turboEnabled") {
              r.turbo_enabled = kv.second.as<bool>();
            } else {
              return bad(source, kv.first, kf, "unknown field");
            }
          } catch (const YAML::Exception&) {
            return bad(source, kv.second, kf, "invalid value '" + text_of(kv.second) + "'");
          }
        }
        if (r.model.empty()) return bad(source, n[i], f + ".model", "required");
        c.cpu_models.push_back(std::move(r));
      }
    }
    if (auto n = root["koordletFeatureGates"]) {
      if (!n.IsMap())
        return bad(source, n, "koordletFeatureGates", "expected a mapping Gate: true|false");
      for (const auto& kv : n) {
        const auto g = kv.first.as<std::string>();
        bool v = false;
        try {
          v = kv.second.as<bool>();
        } catch (const YAML::Exception&) {
          return bad(source, kv.second, "koordletFeatureGates." + g, "expected true or false");
        }
        auto& f = c.gates;
        if (g == "BECPUSuppress")
          f.be_cpu_suppress = v;
        else if (g == "BEMemoryEvict")
          f.be_memory_evict = v;
        else if (g == "MemoryEvict")
          f.memory_evict = v;
        else if (g == "BECPUEvict")
          f.be_cpu_evict = v;
        else if (g == "CPUBurst")
          f.cpu_burst = v;
        else
          return bad(source, kv.first, "koordletFeatureGates." + g,
                     "unknown or unsupported gate (BECPUSuppress, BEMemoryEvict, MemoryEvict, "
                     "BECPUEvict, CPUBurst)");
      }
    }
    if (auto n = root["priorityClasses"]) {
      const std::string where = at(source, n) + ": priorityClasses";
      auto t = admission::parse_priority_classes_yaml(text_of(n), where);
      if (!t) return tl::unexpected(t.error());
      for (auto& [name, pc] : *t) {
        if (c.priority_classes.count(name) != 0)
          return fail(errc::invalid_input,
                      "priorityClasses: " + name +
                          " is one of Koordinator's PriorityClasses (koord-prod, koord-mid, "
                          "koord-batch, koord-free), which a config may not redefine",
                      where);
        c.extra_priority_classes.push_back(pc);
        c.priority_classes.emplace(name, std::move(pc));
      }
    }
    if (auto n = root["colocationProfiles"]) {
      c.profiles_yaml = text_of(n);
      const std::string where = at(source, n) + ": colocationProfiles";
      auto ps = admission::parse_profiles_yaml(c.profiles_yaml, where);
      if (!ps) return tl::unexpected(ps.error());
      auto set = admission::profile_set::make(std::move(*ps));
      if (!set)
        return fail(set.error().code, "colocationProfiles: " + set.error().message, at(source, n));
      c.profiles = std::move(*set);
      // A profile naming a class the cluster lacks would fail every pod it matches.
      for (const auto& p : c.profiles.profiles())
        if (!p.priority_class_name.empty() && c.priority_classes.count(p.priority_class_name) == 0)
          return fail(errc::invalid_input,
                      "priorityclasses.scheduling.k8s.io \"" + p.priority_class_name +
                          "\" not found (Koordinator's four or the config's priorityClasses)",
                      where + ": ClusterColocationProfile " + p.name + " spec.priorityClassName");
    }
    if (auto n = root["elasticQuotas"]) {
      c.quotas_yaml = text_of(n);
      const std::string where = at(source, n) + ": elasticQuotas";
      auto qs = quota::load_elastic_quotas_yaml(c.quotas_yaml, where);
      if (!qs) return tl::unexpected(qs.error());
      // The loader skips resource names Colony has no field for; a quota silently missing a
      // key would admit differently than the file says, so the sim refuses it.
      if (!qs->ignored.empty())
        return fail(errc::invalid_input,
                    "a resource key Colony cannot book (remove it): " + qs->ignored.front(),
                    std::string(source));
      std::set<std::string> seen;
      for (const auto& q : qs->quotas)
        if (!seen.insert(q.name).second)
          return fail(errc::invalid_input, "elasticQuotas: quota '" + q.name + "' listed twice",
                      where);
      // The webhook's checks over the whole set (a children's min above its parent's, ...),
      // naming the quota and field.
      if (auto v = quota::validate_quota_tree(qs->quotas); !v)
        return fail(v.error().code, v.error().message, where + ": " + v.error().where);
      c.quotas = std::move(qs->quotas);
    }
    if (auto n = root["elasticQuotaProfiles"]) {
      const std::string where = at(source, n) + ": elasticQuotaProfiles";
      const std::string text = text_of(n);
      auto ps = quota::load_elastic_quota_profiles_yaml(text, where);
      if (!ps) return tl::unexpected(ps.error());
      // The objects as logged: metadata and spec of each document (or List item) in order.
      std::vector<YAML::Node> objects;
      for (const auto& doc : YAML::LoadAll(text)) {
        if (!doc.IsMap()) continue;
        const auto kind = doc["kind"] ? doc["kind"].as<std::string>() : std::string();
        if (kind == "List" || kind == "ElasticQuotaProfileList") {
          for (const auto& item : doc["items"]) objects.push_back(item);
        } else {
          objects.push_back(doc);
        }
      }
      if (objects.size() != ps->size())
        return fail(errc::invalid_input,
                    "elasticQuotaProfiles: expected only ElasticQuotaProfile objects", where);
      std::set<std::string> seen;
      for (std::size_t i = 0; i < ps->size(); ++i) {
        const auto& p = (*ps)[i];
        if (!seen.insert(p.namespace_name + "/" + p.name).second)
          return fail(errc::invalid_input,
                      "elasticQuotaProfiles: profile '" + p.name + "' listed twice", where);
        sim_config::quota_profile_object o;
        o.namespace_name = p.namespace_name;
        o.name = p.name;
        for (const auto& [k, v] : p.labels) o.labels.emplace_back(k, v);
        std::sort(o.labels.begin(), o.labels.end());
        const auto spec = objects[i]["spec"];
        o.spec_json = spec ? to_json(spec).dump() : std::string("{}");
        c.quota_profile_objects.push_back(std::move(o));
      }
      c.quota_profiles = std::move(*ps);
      // A profile's root is its controller's: no config quota may be it. A quota under one joins
      // its tree (the quota webhook copies the parent's tree-id label).
      for (auto& q : c.quotas)
        for (const auto& p : c.quota_profiles) {
          if (q.name == p.quota_name)
            return fail(errc::invalid_input,
                        "elasticQuotas: quota '" + q.name + "' is the tree root of profile '" +
                            p.name + "' (spec.quotaName), which the profile controller writes",
                        where);
          if (q.parent != p.quota_name || !q.tree_id.empty()) continue;
          const auto it = p.labels.find(names::label_quota_tree_id);
          q.tree_id = it != p.labels.end() && !it->second.empty()
                          ? it->second
                          : quota::profile_tree_id(p.namespace_name, p.name);
          q.labels[std::string(names::label_quota_tree_id)] = q.tree_id;
        }
    }
    if (auto n = root["deschedulerConfig"]) {
      c.descheduler_yaml = text_of(n);
      auto d = descheduler::parse_descheduler_config(c.descheduler_yaml);
      if (!d)
        return fail(d.error().code, "deschedulerConfig: " + d.error().message,
                    at(source, n) + ": deschedulerConfig." + d.error().where);
      c.descheduler = std::move(*d);
    }
    if (auto n = root["numaTopology"]) {
      if (!n.IsMap()) return bad(source, n, "numaTopology", "expected a mapping");
      numa_topology_config t;
      for (const auto& kv : n) {
        const auto k = kv.first.as<std::string>();
        const std::string field = "numaTopology." + k;
        if (k == "sockets" || k == "numaNodesPerSocket" || k == "threadsPerCore") {
          auto v = positive_int(source, kv.second, field);
          if (!v) return tl::unexpected(v.error());
          if (*v > 1024) return bad(source, kv.second, field, "expected at most 1024");
          (k == "sockets"              ? t.sockets
           : k == "numaNodesPerSocket" ? t.numa_nodes_per_socket
                                       : t.threads_per_core) = static_cast<int>(*v);
        } else if (k == "kubeletTopologyPolicy") {
          t.kubelet_topology_policy = kv.second.as<std::string>();
          static const std::set<std::string> policies = {"None", "BestEffort", "Restricted",
                                                         "SingleNUMANodePodLevel",
                                                         "SingleNUMANodeContainerLevel"};
          if (!policies.count(t.kubelet_topology_policy))
            return bad(source, kv.second, field,
                       "expected None, BestEffort, Restricted, SingleNUMANodePodLevel or "
                       "SingleNUMANodeContainerLevel, got '" +
                           t.kubelet_topology_policy + "'");
        } else if (k == "nodeCPUBindPolicy") {
          t.node_cpu_bind_policy = kv.second.as<std::string>();
          if (t.node_cpu_bind_policy != "FullPCPUsOnly" &&
              t.node_cpu_bind_policy != "SpreadByPCPUs" && t.node_cpu_bind_policy != "None")
            return bad(source, kv.second, field,
                       "expected FullPCPUsOnly, SpreadByPCPUs or None, got '" +
                           t.node_cpu_bind_policy + "'");
        } else {
          return bad(source, kv.first, field, "unknown field");
        }
      }
      c.numa_topology = std::move(t);
    }
    if (auto n = root["deviceTopology"]) {
      if (!n.IsMap()) return bad(source, n, "deviceTopology", "expected a mapping");
      device_topology_config t;
      auto small = [&](const YAML::Node& v, const std::string& field, int& dst,
                       bool zero_ok) -> result<void> {
        std::int64_t x = 0;
        try {
          x = v.as<std::int64_t>();
        } catch (const YAML::Exception&) {
          return bad(source, v, field, "expected an integer, got '" + text_of(v) + "'");
        }
        if (x < (zero_ok ? 0 : 1) || x > 64)
          return bad(source, v, field,
                     std::string(zero_ok ? "expected 0 to 64" : "expected 1 to 64") + ", got " +
                         std::to_string(x));
        dst = static_cast<int>(x);
        return {};
      };
      for (const auto& kv : n) {
        const auto k = kv.first.as<std::string>();
        const std::string field = "deviceTopology." + k;
        result<void> r;
        if (k == "numaNodes") {
          r = small(kv.second, field, t.numa_nodes, false);
        } else if (k == "pcieSwitchesPerNUMANode") {
          r = small(kv.second, field, t.pcie_switches_per_numa_node, false);
        } else if (k == "rdmaPerPCIeSwitch") {
          r = small(kv.second, field, t.rdma_per_pcie_switch, true);
        } else if (k == "vfsPerRDMA") {
          r = small(kv.second, field, t.vfs_per_rdma, true);
        } else if (k == "gpuMemory") {
          auto q = k8s::parse_quantity_value(kv.second.as<std::string>());
          if (!q || *q <= 0)
            return bad(source, kv.second, field, "expected a positive quantity such as 80Gi");
          t.gpu_memory_bytes = *q;
        } else if (k == "rdmaPods") {
          if (!kv.second.IsMap()) return bad(source, kv.second, field, "expected a mapping");
          for (const auto& p : kv.second) {
            const auto pk = p.first.as<std::string>();
            const std::string pf = field + "." + pk;
            if (pk == "minGPUs") {
              r = small(p.second, pf, t.rdma_pods_min_gpus, false);
            } else if (pk == "rdma") {
              auto v = positive_int(source, p.second, pf);
              if (!v) return tl::unexpected(v.error());
              if (*v > 100 && *v % 100 != 0)
                return bad(source, p.second, pf,
                           "expected at most 100 or a multiple of 100 (whole NICs)");
              t.rdma_per_pod = *v;
            } else if (pk == "vf") {
              t.rdma_pods_vf = p.second.as<bool>();
            } else if (pk == "jointScope") {
              t.joint_scope = p.second.as<std::string>();
              if (!t.joint_scope.empty() && t.joint_scope != "SamePCIe" && t.joint_scope != "None")
                return bad(source, p.second, pf,
                           "expected SamePCIe, \"\" (preferred) or None (no joint allocation), "
                           "got '" +
                               t.joint_scope + "'");
            } else {
              return bad(source, p.first, pf, "unknown field");
            }
            if (!r) return tl::unexpected(r.error());
          }
        } else {
          return bad(source, kv.first, field, "unknown field");
        }
        if (!r) return tl::unexpected(r.error());
      }
      if (t.rdma_pods_vf && t.rdma_per_pcie_switch > 0 && t.vfs_per_rdma == 0)
        return bad(source, n, "deviceTopology.vfsPerRDMA",
                   "rdmaPods.vf asks a VF per pod: NICs need VFs (or set rdmaPods.vf: false)");
      c.device_topology = std::move(t);
    }
    if (auto n = root["schedulerFeatureGates"]) {
      auto g = scheduler::parse_scheduler_feature_gates(n.as<std::string>());
      if (!g) return bad(source, n, "schedulerFeatureGates", g.error().message);
      c.scheduler_gates = *g;
    }
    if (auto n = root["schedulerTieBreak"]) {
      auto t = scheduler::parse_tie_break(n.as<std::string>());
      if (!t) return bad(source, n, "schedulerTieBreak", t.error().message);
      c.scheduler_tie_break = *t;
    }
    std::string sched_text = std::string(scheduler::koord_scheduler_shipped_config());
    std::string sched_where = std::string(source) + ": schedulerConfig (builtin:koord-scheduler)";
    if (auto n = root["schedulerConfig"]) {
      const std::string t = text_of(n);
      if (t != "builtin:koord-scheduler") {
        sched_text = t;
        sched_where = at(source, n) + ": schedulerConfig";
      }
    }
    c.scheduler_yaml = sched_text;
    auto sc = scheduler::parse_scheduler_config(sched_text, sched_where);
    if (!sc) return tl::unexpected(sc.error());
    if (sc->profiles.empty())
      return fail(errc::invalid_input, "schedulerConfig: no profile", sched_where);
    c.scheduler = std::move(*sc);
  } catch (const YAML::Exception& e) {
    return fail(errc::invalid_input, e.msg,
                std::string(source) + ":" + std::to_string(e.mark.line + 1) + ":" +
                    std::to_string(e.mark.column + 1));
  }
  return c;
}

result<sim_config> load_sim_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::not_found, "cannot open config file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_sim_config(ss.str(), path);
}

result<sim_config> default_sim_config() {
  return parse_sim_config(default_config_text(), "<built-in koordinator-defaults>");
}

}  // namespace colony::sim
