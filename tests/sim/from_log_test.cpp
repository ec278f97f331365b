// colony sim --from-log: a cluster's log re-simulated (sim/log_source.hpp, sim/log_driver.cpp).
//
// The log is recorded the way `colony run` records it, without an apiserver: Kubernetes objects
// (Nodes, Pods, PriorityClasses, ClusterColocationProfiles, the slo-controller ConfigMap,
// NodeMetrics) go through the bridge's translation (bridges/kubernetes/translate.hpp) into
// observations appended to a RocksDB log; colony run's components (run/control_plane.hpp) run
// in the live actor_host, each record delivered as a batch of its own, and append their
// decisions to the same log; a ClockTicked (source colony-run) is appended when a component's
// wake-up is due, as colony run's loop does. Some observations arrive while the components are
// still deciding (bursts of NodeMetrics, pods submitted back to back) and land between their
// decisions, as in a busy colony run; one arrives between a backoff's end and the tick. The
// recorder appends one record's reaction in the host's merge order (colony run appends whichever
// component answers first), so the log is one colony run could have written and the same every
// run. (tests/run/run_kube_test.cpp does the same over a real colony run's log.)
//
// Then: the re-simulation with the cluster's own configuration writes the same log (decision
// for decision, and byte for byte); a config that changes the slo-controller thresholds or the
// scheduler's scoring changes the decisions measurably; the output is byte-identical at 1 and 4
// threads; several configs give the side-by-side report; a missing log, a corrupt record and
// an output log naming the input are clear errors with the documented exit codes.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>
#include <nlohmann/json.hpp>

#include "actors/entities/audit.hpp"
#include "actors/entities/entity_actors.hpp"
#include "actors/scheduler/scheduler_config.hpp"
#include "bridges/kubernetes/translate.hpp"
#include "messages/codec.hpp"
#include "run/control_plane.hpp"
#include "sim/driver.hpp"
#include "sim/sim_config.hpp"
#include "stores/event_log.hpp"
#include "stores/rocksdb_log.hpp"
#include "tests/support/log_records.hpp"

namespace colony::sim {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using messages::to_string_view;

constexpr std::int64_t t0 = 1767225600000;  // 2026-01-01T00:00:00Z
constexpr std::int64_t sec = 1000;

std::string rfc3339(std::int64_t ms) {
  const std::time_t s = ms / 1000;
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---- the cluster's objects, as a 1.34 apiserver returns them ------------------------------

json node_object(const std::string& name) {
  const json res = {{"cpu", "16"}, {"memory", "64Gi"}, {"pods", "110"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "1"}}},
          {"status",
           {{"capacity", res},
            {"allocatable", res},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json pod_object(const std::string& name, const json& labels, const std::string& cpu,
                const std::string& memory, std::int64_t created) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", "uid-" + name},
            {"resourceVersion", "1"},
            {"creationTimestamp", rfc3339(created)},
            {"labels", labels}}},
          {"spec",
           {{"schedulerName", "koord-scheduler"},
            {"containers",
             json::array({{{"name", "c"},
                           {"image", "registry.invalid/app:1"},
                           {"resources", {{"requests", {{"cpu", cpu}, {"memory", memory}}}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

json priority_class_object(const std::string& name, int value) {
  return {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "1"}}},
          {"value", value}};
}

json profile_object(const std::string& name, const std::string& label, const std::string& value,
                    const std::string& qos, const std::string& priority_class) {
  return {{"apiVersion", "config.koordinator.sh/v1alpha1"},
          {"kind", "ClusterColocationProfile"},
          {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "1"}}},
          {"spec",
           {{"selector", {{"matchLabels", {{label, value}}}}},
            {"qosClass", qos},
            {"priorityClassName", priority_class},
            {"schedulerName", "koord-scheduler"}}}};
}

json slo_configmap(int cpu_reclaim_percent, const std::string& version) {
  const json colocation = {{"enable", true},
                           {"metricAggregateDurationSeconds", 300},
                           {"metricReportIntervalSeconds", 60},
                           {"cpuReclaimThresholdPercent", cpu_reclaim_percent},
                           {"memoryReclaimThresholdPercent", 65},
                           {"memoryCalculatePolicy", "usage"}};
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", "slo-controller-config"},
            {"namespace", "koordinator-system"},
            {"uid", "uid-slo-config"},
            {"resourceVersion", version}}},
          {"data", {{"colocation-config", colocation.dump()}}}};
}

// ---- colony run, recorded -----------------------------------------------------------------

// colony run's components in the live actor_host over a RocksDB log (see the top of the file).
class recorder {
 public:
  explicit recorder(const std::string& path) {
    stores::log_options lo;
    auto l = stores::open_log(path, lo);
    EXPECT_TRUE(l) << l.error().describe();
    log_ = std::move(*l);
    host_ =
        std::make_unique<entities::actor_host>(2, [this](std::vector<std::vector<std::uint8_t>> v) {
          std::lock_guard lk(mu_);
          for (auto& r : v) got_.push_back(std::move(r));
        });
    auto cs = run::control_plane({});
    EXPECT_TRUE(cs) << cs.error().describe();
    for (auto& c : *cs) {
      rank_.emplace(std::string(c->name()), rank_.size());
      host_->add_component(std::move(c));
    }
  }

  // The bridge appends a callback's records; the loop delivers everything new (quiet), or only
  // the first `deliver` unread records (busy: the next observation arrives while the components
  // are still deciding, and lands between their decisions).
  void append(const kube::event_list& records, std::optional<std::size_t> deliver = {}) {
    std::vector<messages::bytes_view> views;
    for (const auto& r : records) views.emplace_back(r.data(), r.size());
    if (views.empty()) return;
    auto a = log_->append(views);
    ASSERT_TRUE(a) << a.error().describe();
    settle(deliver.value_or(std::numeric_limits<std::size_t>::max()));
    busy += deliver ? 1 : 0;
  }
  void observe(const result<kube::event_list>& r, std::optional<std::size_t> deliver = {}) {
    ASSERT_TRUE(r) << r.error().describe();
    ASSERT_FALSE(r->empty());
    append(*r, deliver);
  }
  // colony run's clock: before time t, a ClockTicked for each wake-up that comes due (its poll
  // finds it within 200 ms). `meanwhile`, if set, is appended between the wake-up's time and the
  // tick (once): an observation no waiting component reads, which colony run's loop delivers
  // without waking anyone.
  void advance_to(std::int64_t t,
                  const std::function<kube::event_list(std::int64_t)>& meanwhile = {}) {
    for (int i = 0; i < 1000; ++i) {
      const auto w = host_->next_wakeup_ms();
      if (!w) return;
      const std::int64_t at = std::max(*w + 150, last_tick_ + 200);
      if (at >= t) return;
      if (meanwhile && !interposed) {
        interposed = true;
        const auto records = meanwhile(*w + 50);
        ASSERT_FALSE(records.empty());
        append(records);
      }
      last_tick_ = at;
      ++ticks;
      append({run::clock_tick_record(at)});
    }
  }
  // Where the log has placed a pod ("" = nowhere).
  [[nodiscard]] std::string node_of(const std::string& pod) const {
    const auto it = placed_.find(pod);
    return it == placed_.end() ? std::string{} : it->second;
  }
  [[nodiscard]] std::vector<std::string> pods_on(const std::string& node) const {
    std::vector<std::string> v;
    for (const auto& [p, n] : placed_)
      if (n == node) v.push_back(p);
    return v;
  }

  std::uint64_t ticks = 0, busy = 0;
  bool interposed = false;

 private:
  // Up to `n` unread records to the host, one batch each, in log order; a record's reaction is
  // appended before the next is delivered.
  void settle(std::size_t n) {
    while (n > 0) {
      std::vector<messages::byte_buffer> unread;
      auto r = log_->read(next_, no_offset, [&](log_offset, messages::bytes_view b) {
        unread.emplace_back(b.begin(), b.end());
        return true;
      });
      ASSERT_TRUE(r) << r.error().describe();
      if (unread.empty()) return;
      for (const auto& rec : unread) {
        if (n == 0) return;
        --n;
        auto one = std::make_shared<entities::record_batch>();
        one->add(rec);
        host_->deliver(std::move(one));
        auto s = host_->sync();
        ASSERT_TRUE(s) << s.error().describe();
        std::vector<std::vector<std::uint8_t>> out;
        {
          std::lock_guard lk(mu_);
          out.swap(got_);
        }
        order(out);
        track(out);
        std::vector<messages::bytes_view> views;
        for (const auto& d : out) views.emplace_back(d.data(), d.size());
        if (!views.empty()) {
          auto a = log_->append(views);
          ASSERT_TRUE(a) << a.error().describe();
        }
        ++next_;
      }
    }
  }
  // The host's merge order: arbitration answers by proposal, then components as added.
  void order(std::vector<std::vector<std::uint8_t>>& out) const {
    auto key = [&](const std::vector<std::uint8_t>& b) {
      const auto& env = *wire::GetEnvelope(b.data());
      const auto src = to_string_view(env.source());
      if (src == "node" || src == "pod")
        return std::pair<std::size_t, std::int64_t>(0, env.causation());
      const auto it = rank_.find(std::string(src));
      return std::pair<std::size_t, std::int64_t>(
          1 + (it == rank_.end() ? rank_.size() : it->second), 0);
    };
    std::stable_sort(out.begin(), out.end(),
                     [&](const auto& a, const auto& b) { return key(a) < key(b); });
  }
  void track(const std::vector<std::vector<std::uint8_t>>& out) {
    for (const auto& d : out) {
      const auto& env = *wire::GetEnvelope(d.data());
      if (env.payload_type() == wire::Payload::PodScheduled) {
        const auto* e = env.payload_as_PodScheduled();
        placed_[std::string(to_string_view(e->pod()))] = std::string(to_string_view(e->node()));
      }
    }
  }

  std::unique_ptr<stores::event_log> log_;
  std::mutex mu_;
  std::vector<std::vector<std::uint8_t>> got_;
  std::unique_ptr<entities::actor_host> host_;
  std::map<std::string, std::size_t> rank_;
  std::map<std::string, std::string> placed_;
  log_offset next_ = 0;
  std::int64_t last_tick_ = 0;
};

// The scenario: 4 nodes of 16 cores; Koordinator's PriorityClasses; a profile turning pods
// labelled for co-location into BE koord-batch pods (batch resources) and one turning app-tier
// online pods into LS koord-prod; the slo-controller ConfigMap (reclaim 60 %, raised to 75 % at
// 6 min); NodeMetrics every minute with usage from what the log has placed; 16 LS and 14 BE pods,
// 3 BE pods before any batch resource exists (unschedulable, then retried after a backoff: the
// ClockTicked path), one pod too large for any node (deleted while pending), pods that start
// and finish.
struct cluster_log {
  fs::path dir;
  std::string log;
  std::uint64_t ticks = 0, busy = 0;
  bool interposed = false;
  explicit cluster_log(fs::path d) : dir(std::move(d)), log((dir / "cluster-log").string()) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    record();
  }
  ~cluster_log() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  void record() {
    recorder rec(log);
    using kube::object_kind;
    auto added = [](object_kind k, const json& o, std::int64_t t) {
      return kube::translate_added(k, o, event_time{t});
    };
    // Pods by name: the object last seen, and its class.
    std::map<std::string, json> pods;
    std::map<std::string, json> metrics;
    std::int64_t t = t0;
    // A PriorityClass edited (koord-free's value; no pod uses it): the admission webhook reads
    // it, the scheduler does not. Put once between a backoff's end and colony run's tick.
    auto edit_priority_class = [&](std::int64_t when) {
      json old = priority_class_object("koord-free", 3000);
      json now = priority_class_object("koord-free", 3001);
      now["metadata"]["resourceVersion"] = "2";
      auto r = kube::translate_modified(object_kind::priority_class, old, now, event_time{when});
      EXPECT_TRUE(r) << r.error().describe();
      return r ? *r : kube::event_list{};
    };
    auto at = [&](std::int64_t when) {
      rec.advance_to(when, edit_priority_class);
      t = when;
    };
    at(t0);
    for (const auto& [n, v] : std::vector<std::pair<std::string, int>>{{"koord-prod", 9000},
                                                                       {"koord-mid", 7000},
                                                                       {"koord-batch", 5000},
                                                                       {"koord-free", 3000}})
      rec.observe(added(object_kind::priority_class, priority_class_object(n, v), t));
    at(t0 + 1 * sec);
    rec.observe(added(object_kind::cluster_colocation_profile,
                      profile_object("colocation", "koordinator.sh/enable-colocation", "true", "BE",
                                     "koord-batch"),
                      t));
    rec.observe(added(object_kind::cluster_colocation_profile,
                      profile_object("online", "app-tier", "online", "LS", "koord-prod"), t));
    at(t0 + 2 * sec);
    json cm = slo_configmap(60, "10");
    rec.observe(added(object_kind::config_map, cm, t));
    for (int i = 0; i < 4; ++i) {
      at(t0 + 5 * sec + i * 100);
      rec.observe(added(object_kind::node, node_object("n" + std::to_string(i)), t));
    }
    auto submit = [&](const std::string& name, bool be, const std::string& cpu,
                      const std::string& memory, std::optional<std::size_t> deliver = {}) {
      const json labels =
          be ? json{{"koordinator.sh/enable-colocation", "true"}} : json{{"app-tier", "online"}};
      pods[name] = pod_object(name, labels, cpu, memory, t);
      rec.observe(added(object_kind::pod, pods[name], t), deliver);
    };
    // Three BE pods before any batch resource: unschedulable until the slo-controller writes it.
    for (int i = 0; i < 3; ++i) {
      at(t0 + 6 * sec + i * 200);
      submit("be-early-" + std::to_string(i), true, "2", "4Gi");
    }
    at(t0 + 7 * sec);
    submit("too-big", false, "64", "8Gi");

    // The timeline after that: metrics every minute, pods arriving, some starting and finishing.
    std::vector<std::pair<std::int64_t, std::string>> plan;  // (time, what)
    for (int m = 0; m < 15; ++m) plan.emplace_back(t0 + 10 * sec + m * 60 * sec, "metrics");
    for (int i = 0; i < 16; ++i)
      plan.emplace_back(t0 + 20 * sec + i * 7 * sec, "ls:ls-" + std::to_string(i));
    for (int i = 0; i < 11; ++i)
      plan.emplace_back(t0 + 75 * sec + i * 19 * sec, "be:be-" + std::to_string(i));
    for (int i = 0; i < 6; ++i)
      plan.emplace_back(t0 + 150 * sec + i * 10 * sec, "start:ls-" + std::to_string(i));
    for (int i = 0; i < 4; ++i)
      plan.emplace_back(t0 + 300 * sec + i * 13 * sec, "finish:ls-" + std::to_string(i));
    for (int i = 0; i < 3; ++i)
      plan.emplace_back(t0 + 420 * sec + i * 17 * sec, "finish:be-" + std::to_string(i));
    plan.emplace_back(t0 + 360 * sec + 500, "configmap");
    plan.emplace_back(t0 + 480 * sec + 300, "delete:too-big");
    std::stable_sort(plan.begin(), plan.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    int rv = 100;
    for (const auto& [when, what] : plan) {
      at(when);
      const auto colon = what.find(':');
      const std::string verb = what.substr(0, colon);
      const std::string name = colon == std::string::npos ? "" : what.substr(colon + 1);
      if (verb == "metrics") {
        // The four NodeMetrics arrive in a burst: each lands while the loop handles the one
        // before (the first record of it delivered).
        for (int i = 0; i < 4; ++i) {
          const std::string node = "n" + std::to_string(i);
          std::int64_t cpu = 1000, mem = std::int64_t{4} << 30;
          json pm = json::array();
          for (const auto& p : rec.pods_on(node)) {
            const auto key = p.substr(p.find('/') + 1);
            if (pods.count(key) == 0 || pods[key]["status"]["phase"] == "Succeeded") continue;
            const bool be = key.rfind("be", 0) == 0;
            const std::int64_t pc = be ? 1600 : 900, pmem = std::int64_t{2} << 30;
            cpu += pc;
            mem += pmem;
            pm.push_back(
                {{"namespace", "default"},
                 {"name", key},
                 {"podUsage",
                  {{"resources",
                    {{"cpu", std::to_string(pc) + "m"}, {"memory", std::to_string(pmem)}}}}},
                 {"priority", be ? "koord-batch" : "koord-prod"},
                 {"qos", be ? "BE" : "LS"}});
          }
          json nm = {
              {"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeMetric"},
              {"metadata",
               {{"name", node},
                {"uid", "uid-nm-" + node},
                {"resourceVersion", std::to_string(++rv)}}},
              {"status",
               {{"updateTime", rfc3339(t)},
                {"nodeMetric",
                 {{"nodeUsage",
                   {{"resources",
                     {{"cpu", std::to_string(cpu) + "m"}, {"memory", std::to_string(mem)}}}}}}},
                {"podsMetric", pm}}}};
          const std::optional<std::size_t> deliver =
              i < 3 ? std::optional<std::size_t>(1) : std::nullopt;
          if (metrics.count(node) == 0)
            rec.observe(added(object_kind::node_metric, nm, t), deliver);
          else
            rec.observe(kube::translate_modified(object_kind::node_metric, metrics[node], nm,
                                                 event_time{t}),
                        deliver);
          metrics[node] = nm;
        }
      } else if (verb == "ls" || verb == "be") {
        // Every other LS pod arrives while the one before is being admitted and proposed.
        const int n = std::stoi(name.substr(name.find('-') + 1));
        const bool busy = verb == "ls" && n % 2 == 0;
        submit(name, verb == "be", verb == "be" ? "2" : "3", verb == "be" ? "4Gi" : "6Gi",
               busy ? std::optional<std::size_t>(2) : std::nullopt);
      } else if (verb == "start" || verb == "finish") {
        const std::string node = rec.node_of("default/" + name);
        if (node.empty()) continue;  // not placed: nothing starts
        json old = pods[name];
        old["spec"]["nodeName"] = node;
        json now = old;
        now["metadata"]["resourceVersion"] = std::to_string(++rv);
        now["status"]["phase"] = verb == "start" ? "Running" : "Succeeded";
        rec.observe(kube::translate_modified(object_kind::pod, old, now, event_time{t}));
        pods[name] = now;
      } else if (verb == "configmap") {
        json now = slo_configmap(75, std::to_string(++rv));
        rec.observe(kube::translate_modified(object_kind::config_map, cm, now, event_time{t}));
        cm = now;
      } else if (verb == "delete") {
        rec.observe(kube::translate_deleted(object_kind::pod, pods[name], event_time{t}));
      }
    }
    at(t0 + 16 * 60 * sec);
    ticks = rec.ticks;
    busy = rec.busy;
    interposed = rec.interposed;
  }
};

const cluster_log& recorded() {
  static cluster_log c(fs::temp_directory_path() /
                       ("colony-from-log-test-" + std::to_string(::getpid())));
  return c;
}

// ---- reading logs ---------------------------------------------------------------------------

std::vector<messages::byte_buffer> records_of(const std::string& path) {
  return colony::testing::read_log_records(path);
}

std::string res(const wire::Resources* r) {
  const auto l = messages::to_resource_list(r);
  return "cpu=" + std::to_string(l.cpu_milli) + " mem=" + std::to_string(l.memory_bytes) +
         " bcpu=" + std::to_string(l.batch_cpu_milli) +
         " bmem=" + std::to_string(l.batch_memory_bytes);
}

// A decision as the comparison sees it: type, entity, source and the payload's main fields.
std::string describe(const wire::Envelope& env) {
  std::string s = std::string(messages::payload_name(env.payload_type())) + " " +
                  std::string(to_string_view(env.entity_key())) + " by " +
                  std::string(to_string_view(env.source())) + ":";
  switch (env.payload_type()) {
    case wire::Payload::PodMutated: {
      const auto* e = env.payload_as_PodMutated();
      s += " qos=" + std::to_string(static_cast<int>(e->qos_class())) +
           " class=" + std::to_string(static_cast<int>(e->priority_class())) + " " +
           res(e->requests());
      break;
    }
    case wire::Payload::PodBindProposed: {
      const auto* e = env.payload_as_PodBindProposed();
      s += " node=" + std::string(to_string_view(e->node())) +
           " score=" + std::to_string(e->total_score());
      break;
    }
    case wire::Payload::PodScheduled:
      s += " node=" + std::string(to_string_view(env.payload_as_PodScheduled()->node()));
      break;
    case wire::Payload::PodBindRejected:
      s += " " + std::string(to_string_view(env.payload_as_PodBindRejected()->reason()));
      break;
    case wire::Payload::PodUnschedulable: {
      const auto* e = env.payload_as_PodUnschedulable();
      if (e->reasons() != nullptr)
        for (const auto* r : *e->reasons())
          s += " [" + std::string(to_string_view(r->plugin())) + ": " +
               std::string(to_string_view(r->reason())) + " x" + std::to_string(r->nodes()) + "]";
      break;
    }
    case wire::Payload::NodeBatchResourceUpdated: {
      const auto* e = env.payload_as_NodeBatchResourceUpdated();
      s += " batch_cpu=" + std::to_string(e->batch_cpu_milli()) +
           " batch_mem=" + std::to_string(e->batch_memory_bytes());
      break;
    }
    default:
      break;
  }
  return s;
}

std::vector<std::string> decisions_of(const std::vector<messages::byte_buffer>& log) {
  std::vector<std::string> v;
  for (const auto& r : log) {
    const auto& env = *wire::GetEnvelope(r.data());
    if (env.causation() >= 0) v.push_back(describe(env));
  }
  return v;
}

std::map<std::string, int> count_types(const std::vector<messages::byte_buffer>& log,
                                       bool decisions) {
  std::map<std::string, int> m;
  for (const auto& r : log) {
    const auto& env = *wire::GetEnvelope(r.data());
    if ((env.causation() >= 0) == decisions)
      ++m[std::string(messages::payload_name(env.payload_type()))];
  }
  return m;
}

// pod -> node of every PodScheduled.
std::map<std::string, std::string> placements_of(const std::vector<messages::byte_buffer>& log) {
  std::map<std::string, std::string> m;
  for (const auto& r : log) {
    const auto& env = *wire::GetEnvelope(r.data());
    if (env.payload_type() == wire::Payload::PodScheduled)
      m[std::string(to_string_view(env.payload_as_PodScheduled()->pod()))] =
          std::string(to_string_view(env.payload_as_PodScheduled()->node()));
  }
  return m;
}

result<run_result> resimulate(const sim_config& cfg, const std::string& out_log,
                              std::size_t threads = 2) {
  run_options o;
  o.log_path = out_log;
  o.threads = threads;
  return run_log_simulation(recorded().log, cfg, o);
}

std::string block(std::string_view text) {
  std::string out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) out += "  " + line + "\n";
  return out;
}

int run_cli(const std::string& args, std::string* err = nullptr) {
  const char* bin = std::getenv("COLONY_BINARY");
#ifdef COLONY_BINARY_PATH
  if (bin == nullptr) bin = COLONY_BINARY_PATH;
#endif
  if (bin == nullptr) return -1;
  const std::string errf = (recorded().dir / "stderr.txt").string();
  const std::string cmd = std::string(bin) + " " + args + " >/dev/null 2>" + errf;
  const int st = std::system(cmd.c_str());
  if (err != nullptr) {
    std::ifstream in(errf);
    std::stringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// ---- tests ----------------------------------------------------------------------------------

TEST(SimFromLog, RecordedLogExercisesTheControlPlane) {
  const auto log = records_of(recorded().log);
  const auto obs = count_types(log, false);
  const auto dec = count_types(log, true);
  // What the scenario must have made the components do, or the comparisons below prove little.
  EXPECT_GE(obs.at("NodeRegistered"), 4);
  EXPECT_GE(obs.at("PodSubmitted"), 30);
  EXPECT_GE(obs.at("NodeMetricReported"), 40);
  EXPECT_GE(obs.at("ConfigUpdated"), 8);  // 4 PriorityClasses, 2 profiles, the ConfigMap twice
  EXPECT_GE(obs.at("PodStarted"), 3);
  EXPECT_GE(obs.at("PodFinished"), 5);
  EXPECT_GE(obs.at("ClockTicked"), 1);
  EXPECT_GE(recorded().ticks, 1u);
  EXPECT_GE(recorded().busy, 40u);  // observations that landed between decisions
  EXPECT_TRUE(recorded().interposed);
  EXPECT_GE(dec.at("PodMutated"), 30);
  EXPECT_GE(dec.at("PodBindProposed"), 25);
  EXPECT_GE(dec.at("PodScheduled"), 25);
  EXPECT_GE(dec.at("PodUnschedulable"), 4);  // the early BE pods and the one too big
  EXPECT_GE(dec.at("NodeBatchResourceUpdated"), 8);
  // The log is a valid control-plane log.
  entities::audit_options ao;
  ao.at_rest = false;  // the too-big pod's last attempt may be in its backoff
  const auto audit = entities::audit_log(log, ao);
  EXPECT_TRUE(audit.clean()) << audit.describe();
  EXPECT_GE(audit.pods_bound, 25u);
}

TEST(SimFromLog, RecordedConfigurationWritesTheLoggedDecisions) {
  const auto out = recorded().dir / "recorded-out";
  auto r = resimulate(recorded_configuration(), out.string());
  ASSERT_TRUE(r) << r.error().describe();
  const auto in = records_of(recorded().log);
  const auto got = records_of(out.string());
  const auto want_d = decisions_of(in);
  const auto got_d = decisions_of(got);
  ASSERT_GE(want_d.size(), 100u);
  EXPECT_EQ(got_d.size(), want_d.size());
  for (std::size_t i = 0; i < std::min(got_d.size(), want_d.size()); ++i)
    ASSERT_EQ(got_d[i], want_d[i]) << "decision " << i;
  // Stronger: the same records in the same order, byte for byte (offsets, times, causations).
  ASSERT_EQ(got.size(), in.size());
  std::size_t same = 0;
  for (std::size_t i = 0; i < in.size(); ++i) same += got[i] == in[i] ? 1 : 0;
  EXPECT_EQ(same, in.size());
  const auto& s = r->summary;
  EXPECT_EQ(s["trace"]["decisions_not_in_log"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(s["trace"]["decisions_also_in_log"].get<std::uint64_t>(), want_d.size());
  EXPECT_EQ(s["trace"]["configuration_replaced"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(s["trace"]["placements_rewritten"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(s["trace"]["decisions"].get<std::uint64_t>(), want_d.size());
  EXPECT_EQ(s["invariants"]["over_capacity_binds"].get<std::uint64_t>(), 0u);
}

TEST(SimFromLog, SloThresholdsOfAConfigChangeBatchResources) {
  // Reclaim up to 90 % instead of the cluster's 60 / 75 %: more batch-cpu on every node.
  auto cfg = parse_sim_config(R"(name: reclaim-90
sloControllerConfig:
  colocation-config: '{"enable": true, "cpuReclaimThresholdPercent": 90, "memoryReclaimThresholdPercent": 90}'
)",
                              "reclaim-90.yaml");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  const auto out = recorded().dir / "reclaim-out";
  auto r = resimulate(*cfg, out.string());
  ASSERT_TRUE(r) << r.error().describe();
  auto last_batch = [](const std::vector<messages::byte_buffer>& log) {
    std::map<std::string, std::int64_t> m;
    for (const auto& rec : log) {
      const auto& env = *wire::GetEnvelope(rec.data());
      if (env.payload_type() == wire::Payload::NodeBatchResourceUpdated)
        m[std::string(to_string_view(env.entity_key()))] =
            env.payload_as_NodeBatchResourceUpdated()->batch_cpu_milli();
    }
    return m;
  };
  const auto in = records_of(recorded().log);
  const auto got = records_of(out.string());
  const auto before = last_batch(in);
  const auto after = last_batch(got);
  ASSERT_EQ(before.size(), 4u);
  ASSERT_EQ(after.size(), 4u);
  for (const auto& [node, cpu] : before) EXPECT_GT(after.at(node), cpu + 2000) << node;
  // The cluster's two ConfigMap records were replaced by the config's.
  EXPECT_EQ(r->summary["trace"]["configuration_replaced"].get<std::uint64_t>(), 2u);
  EXPECT_EQ(r->summary["config"]["configuration"]["slo-controller-config"], "config");
  EXPECT_NE(decisions_of(got), decisions_of(in));
  EXPECT_GT(r->summary["trace"]["decisions_not_in_log"].get<std::uint64_t>(), 0u);
}

TEST(SimFromLog, SchedulerScoringOfAConfigChangesPlacements) {
  std::string sched(scheduler::koord_scheduler_shipped_config());
  const auto at = sched.find("type: LeastAllocated");
  ASSERT_NE(at, std::string::npos);
  sched.replace(at, std::string("type: LeastAllocated").size(), "type: MostAllocated");
  auto cfg = parse_sim_config("name: most-allocated\nschedulerConfig: |\n" + block(sched),
                              "most-allocated.yaml");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  const auto out = recorded().dir / "most-out";
  auto r = resimulate(*cfg, out.string());
  ASSERT_TRUE(r) << r.error().describe();
  const auto before = placements_of(records_of(recorded().log));
  const auto after = placements_of(records_of(out.string()));
  ASSERT_GE(before.size(), 25u);
  int moved = 0;
  for (const auto& [pod, node] : before)
    if (after.count(pod) != 0 && after.at(pod) != node) ++moved;
  // Bin packing instead of spreading: many pods land elsewhere, and on fewer nodes.
  EXPECT_GE(moved, 8);
  std::set<std::string> nodes_before, nodes_after;
  for (const auto& [p, n] : before) nodes_before.insert(n);
  for (const auto& [p, n] : after) nodes_after.insert(n);
  EXPECT_LE(nodes_after.size(), nodes_before.size());
  // The cluster's PodFinished records follow the pods to where this run placed them.
  EXPECT_GT(r->summary["trace"]["placements_rewritten"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r->summary["invariants"]["over_capacity_binds"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r->summary["config"]["configuration"]["KubeSchedulerConfiguration"], "config");
}

TEST(SimFromLog, OutputIsByteIdenticalAtOneAndFourThreads) {
  // With koordlets (node-scoped components, run in parallel) that act: BE CPU suppressed above
  // 40 % of a node, BE pods evicted above 25 % of its memory.
  auto cfg = parse_sim_config(R"(name: with-koordlets
sloControllerConfig:
  colocation-config: '{"enable": true}'
  resource-threshold-config: '{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 40, "memoryEvictThresholdPercent": 25}}'
koordletFeatureGates:
  BECPUSuppress: true
  BEMemoryEvict: true
)",
                              "with-koordlets.yaml");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  auto r1 = resimulate(*cfg, (recorded().dir / "t1").string(), 1);
  auto r4 = resimulate(*cfg, (recorded().dir / "t4").string(), 4);
  ASSERT_TRUE(r1) << r1.error().describe();
  ASSERT_TRUE(r4) << r4.error().describe();
  EXPECT_EQ(r1->summary.dump(), r4->summary.dump());
  const auto a = records_of((recorded().dir / "t1").string());
  const auto b = records_of((recorded().dir / "t4").string());
  ASSERT_GT(a.size(), 300u);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(r1->summary["config"]["koordlet_qos"], true);
  // colony run's control plane (admission, koord-scheduler, the quota and quota-profile
  // controllers, the slo-controller) plus a koordlet per node of the recorded cluster.
  EXPECT_EQ(r1->timing["components"].get<std::size_t>(), 9u);
  const auto types = count_types(a, true);
  EXPECT_GE(types.count("BeSuppressed") ? types.at("BeSuppressed") : 0, 4);
  EXPECT_GE(types.count("PodEvicted") ? types.at("PodEvicted") : 0, 1);
}

TEST(SimFromLog, CliComparesConfigsSideBySide) {
  const auto dir = recorded().dir / "cli";
  fs::create_directories(dir);
  {
    std::ofstream c(dir / "reclaim-90.yaml");
    c << "name: reclaim-90\nsloControllerConfig:\n  colocation-config: '{\"enable\": true, "
         "\"cpuReclaimThresholdPercent\": 90}'\n";
  }
  const auto out = dir / "out";
  std::string err;
  const int rc =
      run_cli("sim --from-log " + recorded().log + " --config builtin:recorded --config " +
                  (dir / "reclaim-90.yaml").string() + " --quiet --out " + out.string(),
              &err);
  if (rc == -1) GTEST_SKIP() << "COLONY_BINARY not set";
  ASSERT_EQ(rc, 0) << err;
  ASSERT_TRUE(fs::exists(out / "compare.txt"));
  std::ifstream in(out / "compare.json");
  const auto j = json::parse(in);
  ASSERT_TRUE(j["rows"]["pods scheduled"].contains("recorded"));
  ASSERT_TRUE(j["rows"]["pods scheduled"].contains("reclaim-90"));
  EXPECT_TRUE(fs::exists(out / "recorded" / "summary.json"));
  EXPECT_TRUE(fs::exists(out / "reclaim-90" / "metrics.csv"));
  // The recorded run's output log holds the input's decisions.
  EXPECT_EQ(decisions_of(records_of((out / "recorded" / "log").string())),
            decisions_of(records_of(recorded().log)));
  // --from-log with a trace flag is a usage error.
  EXPECT_EQ(run_cli("sim --from-log " + recorded().log + " --usage-model none --quiet --out " +
                        out.string(),
                    &err),
            2)
      << err;
}

TEST(SimFromLog, MissingLogIsNotFound) {
  const auto missing = (recorded().dir / "no-such-log").string();
  auto r = run_log_simulation(missing, recorded_configuration(), {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::not_found);
  EXPECT_EQ(r.error().where, missing);
  EXPECT_NE(r.error().message.find("--from-log"), std::string::npos) << r.error().describe();
  // A Kafka log whose broker does not answer: unavailable, naming the log.
  auto k = run_log_simulation("kafka://127.0.0.1:1/colony?connect_timeout_ms=300",
                              recorded_configuration(), {});
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().code, errc::unavailable) << k.error().describe();
  std::string err;
  const int rc = run_cli(
      "sim --from-log " + missing + " --quiet --out " + (recorded().dir / "missing-out").string(),
      &err);
  if (rc == -1) GTEST_SKIP() << "COLONY_BINARY not set";
  EXPECT_EQ(rc, 5) << err;
  EXPECT_NE(err.find(missing), std::string::npos) << err;
}

TEST(SimFromLog, CorruptRecordNamesTheLogAndOffset) {
  // Two damaged copies of the recorded log: one record's bytes changed under a valid checksum
  // (the FlatBuffers verifier catches it), one record's bytes changed under its old checksum.
  const auto in = records_of(recorded().log);
  ASSERT_GT(in.size(), 50u);
  for (const bool keep_checksum : {true, false}) {
    const auto copy = recorded().dir / (keep_checksum ? "bad-flatbuffer" : "bad-checksum");
    fs::remove_all(copy);
    {
      stores::log_options lo;
      auto l = stores::rocksdb_log::open(copy.string(), lo);
      ASSERT_TRUE(l) << l.error().describe();
      std::vector<messages::bytes_view> v;
      for (const auto& r : in) v.emplace_back(r.data(), r.size());
      ASSERT_TRUE((*l)->append(v));
      // keep_checksum: a stored value with a correct XXH3 over a body that is no envelope;
      // else the record's own bytes under a checksum that does not match them.
      const std::string body =
          keep_checksum ? std::string(48, '\x7f') : std::string(in[37].begin(), in[37].end());
      const std::uint64_t sum = keep_checksum ? XXH3_64bits(body.data(), body.size()) : 42;
      std::string value;
      for (int i = 0; i < 8; ++i) value.push_back(static_cast<char>(sum >> (8 * i)));
      ASSERT_TRUE((*l)->debug_put_raw(37, value + body));
    }
    auto r = run_log_simulation(copy.string(), recorded_configuration(), {});
    ASSERT_FALSE(r) << copy;
    EXPECT_EQ(r.error().code, errc::invalid_input) << r.error().describe();
    EXPECT_NE(r.error().where.find(copy.string()), std::string::npos) << r.error().describe();
    EXPECT_NE(r.error().where.find("offset 37"), std::string::npos) << r.error().describe();
    std::string err;
    const int rc = run_cli("sim --from-log " + copy.string() + " --quiet --out " +
                               (recorded().dir / "corrupt-out").string(),
                           &err);
    if (rc == -1) continue;
    EXPECT_EQ(rc, 3) << err;
    EXPECT_NE(err.find("offset 37"), std::string::npos) << err;
  }
}

TEST(SimFromLog, OutputLogMayNotBeTheInput) {
  run_options o;
  o.log_path = recorded().log;
  auto r = run_log_simulation(recorded().log, recorded_configuration(), o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::invalid_input);
  // The input is untouched.
  EXPECT_GT(records_of(recorded().log).size(), 100u);
}

}  // namespace
}  // namespace colony::sim
