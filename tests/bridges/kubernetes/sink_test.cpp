// decision_sink without a server: the JSON bodies, the FitError text, the skip checks, and the
// retry and outcome path against a refused connection.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/kube_time.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "bridges/kubernetes/write_failed.hpp"
#include "messages/codec.hpp"
#include "tests/bridges/kubernetes/sink_records.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

TEST(SinkBodies, Binding) {
  EXPECT_EQ(binding_body("ns", "p", "n1"), json::parse(R"({"apiVersion":"v1","kind":"Binding",
              "metadata":{"name":"p","namespace":"ns"},
              "target":{"apiVersion":"v1","kind":"Node","name":"n1"}})"));
  EXPECT_EQ(split_pod_key("a/b"), (std::pair<std::string, std::string>{"a", "b"}));
  EXPECT_EQ(split_pod_key("b"), (std::pair<std::string, std::string>{"default", "b"}));
}

// NodeNUMAResource's allocation rides on the Binding as resource-status, as Koordinator's PreBind
// writes it (extension.ResourceStatus, omitempty; quantities as resource.Quantity prints them).
TEST(SinkBodies, BindingCarriesResourceStatus) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto pod = fbb.CreateString("ns/lsr");
  auto node = fbb.CreateString("n1");
  auto rq = b.resources({});
  auto sched = fbb.CreateString("koord-scheduler");
  auto cpus = fbb.CreateString("0-1,96-97");
  std::vector<flatbuffers::Offset<wire::NumaNodeResource>> v = {
      wire::CreateNumaNodeResource(fbb, 0, 4000, std::int64_t{40} << 30),
      wire::CreateNumaNodeResource(fbb, 1, 1500, 0)};
  auto numa = fbb.CreateVector(v);
  auto ps = wire::CreatePodScheduled(fbb, pod, node, -1, rq, 0, sched, 0, cpus, numa);
  const auto rec =
      b.finish(messages::header{event_time{1}, wire::EntityKind::Node, "n1", -1, "node"}, ps);
  auto d = messages::decode(rec, "test");
  ASSERT_TRUE(d.has_value());
  const std::string rs = resource_status_annotation(*d->envelope->payload_as_PodScheduled());
  EXPECT_EQ(json::parse(rs), json::parse(R"({"cpuset":"0-1,96-97","numaNodeResources":[
              {"node":0,"resources":{"cpu":"4","memory":"40Gi"}},
              {"node":1,"resources":{"cpu":"1500m"}}]})"));
  const json body = binding_body("ns", "lsr", "n1", rs);
  EXPECT_EQ(body["metadata"]["annotations"]["scheduling.koordinator.sh/resource-status"], rs);
  // A pod without an allocation: no annotation at all (offsets of the finished buffer are gone).
  auto pod2 = fbb.CreateString("ns/ls");
  auto node2 = fbb.CreateString("n1");
  auto rq2 = b.resources({});
  auto sched2 = fbb.CreateString("koord-scheduler");
  auto plain = wire::CreatePodScheduled(fbb, pod2, node2, -1, rq2, 0, sched2);
  const auto rec2 =
      b.finish(messages::header{event_time{1}, wire::EntityKind::Node, "n1", -1, "node"}, plain);
  auto d2 = messages::decode(rec2, "test");
  ASSERT_TRUE(d2.has_value());
  EXPECT_EQ(resource_status_annotation(*d2->envelope->payload_as_PodScheduled()), "");
  EXPECT_FALSE(binding_body("ns", "p", "n1", "")["metadata"].contains("annotations"));
}

// DeviceShare's allocation rides on the Binding as device-allocated (apiext.DeviceAllocations:
// per type, minor and resources; an RDMA NIC's VF under extension.vfs).
TEST(SinkBodies, BindingCarriesDeviceAllocated) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto pod = fbb.CreateString("ns/train");
  auto node = fbb.CreateString("n1");
  auto rq = b.resources({});
  auto sched = fbb.CreateString("koord-scheduler");
  auto rdma = fbb.CreateString("rdma");
  auto vf = fbb.CreateString("0000:1f:00.2");
  std::vector<flatbuffers::Offset<wire::DeviceAllocation>> v = {
      wire::CreateDeviceAllocation(fbb, 0, 100, std::int64_t{80} << 30, 0, 0, 0, 0, 100),
      wire::CreateDeviceAllocation(fbb, 1, 50, std::int64_t{40} << 30),
      wire::CreateDeviceAllocation(fbb, 3, 0, 0, rdma, 1, vf, 2)};
  auto dv = fbb.CreateVector(v);
  auto ps = wire::CreatePodScheduled(fbb, pod, node, -1, rq, dv, sched);
  const auto rec =
      b.finish(messages::header{event_time{1}, wire::EntityKind::Node, "n1", -1, "node"}, ps);
  auto d = messages::decode(rec, "test");
  ASSERT_TRUE(d.has_value());
  const std::string da = device_allocated_annotation(*d->envelope->payload_as_PodScheduled());
  EXPECT_EQ(json::parse(da), json::parse(R"({
      "gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"100",
                                     "koordinator.sh/gpu-memory":"80Gi",
                                     "koordinator.sh/gpu-memory-ratio":"100"}},
             {"minor":1,"resources":{"koordinator.sh/gpu-core":"50",
                                     "koordinator.sh/gpu-memory":"40Gi"}}],
      "rdma":[{"minor":3,"resources":{"koordinator.sh/rdma":"1"},
               "extension":{"vfs":[{"minor":2,"busID":"0000:1f:00.2"}]}}]})"))
      << da;
  const json body = binding_body("ns", "train", "n1", "", da);
  EXPECT_EQ(body["metadata"]["annotations"]["scheduling.koordinator.sh/device-allocated"], da);
  EXPECT_FALSE(
      body["metadata"]["annotations"].contains("scheduling.koordinator.sh/resource-status"));
}

TEST(SinkBodies, FitErrorMessageAsKubeScheduler) {
  // Sorted as strings, counts summed into N (sortReasonsHistogram).
  const std::vector<unschedulable_reason> r = {
      {"NodeResourcesFit", "Insufficient cpu", 3},
      {"NodeAffinity", "node(s) didn't match Pod's node affinity/selector", 2},
      {"NodeResourcesFit", "Insufficient kubernetes.io/batch-cpu", 10}};
  EXPECT_EQ(fit_error_message(r),
            "0/15 nodes are available: 10 Insufficient kubernetes.io/batch-cpu, 2 node(s) didn't "
            "match Pod's node affinity/selector, 3 Insufficient cpu.");
  const std::vector<unschedulable_reason> none = {{"", "no nodes available to schedule pods", 0}};
  EXPECT_EQ(fit_error_message(none), "no nodes available to schedule pods");
  const std::vector<unschedulable_reason> long_reason = {{"X", std::string(2000, 'x'), 1}};
  const auto m = fit_error_message(long_reason);
  EXPECT_EQ(m.size(), 1024u);
  EXPECT_EQ(m.substr(1020), " ...");
}

TEST(SinkBodies, UnschedulableConditionPatchAndSkip) {
  const json patch = unschedulable_condition_patch("0/2 nodes are available: 2 Insufficient cpu.",
                                                   "2026-11-26T10:00:00Z");
  EXPECT_EQ(patch, json::parse(R"({"status":{"conditions":[{"type":"PodScheduled",
      "status":"False","reason":"Unschedulable",
      "message":"0/2 nodes are available: 2 Insufficient cpu.",
      "lastProbeTime":null,"lastTransitionTime":"2026-11-26T10:00:00Z"}]}})"));
  EXPECT_FALSE(unschedulable_condition_patch("m", "")["status"]["conditions"][0].contains(
      "lastTransitionTime"));

  json pod = {{"status", {{"phase", "Pending"}}}};
  EXPECT_FALSE(has_unschedulable_condition(pod, "m"));
  pod["status"]["conditions"] = json::array({{{"type", "PodScheduled"},
                                              {"status", "False"},
                                              {"reason", "Unschedulable"},
                                              {"message", "m"},
                                              {"lastTransitionTime", "2026-01-01T00:00:00Z"}}});
  EXPECT_TRUE(has_unschedulable_condition(pod, "m"));
  EXPECT_FALSE(has_unschedulable_condition(pod, "other"));
}

TEST(SinkBodies, FailedSchedulingEvent) {
  const json ev =
      failed_scheduling_event({.ns = "ns",
                               .pod = "p",
                               .uid = "u-1",
                               .message = "0/1 nodes are available: 1 Insufficient cpu.",
                               .component = "koord-scheduler",
                               .instance = "colony",
                               .offset = 42,
                               .time_ms = 1'700'000'000'123});
  EXPECT_EQ(ev["metadata"]["name"], "p.000000000000002a");
  EXPECT_EQ(ev["metadata"]["namespace"], "ns");
  EXPECT_EQ(ev["involvedObject"], json::parse(R"({"apiVersion":"v1","kind":"Pod",
      "namespace":"ns","name":"p","uid":"u-1"})"));
  EXPECT_EQ(ev["reason"], "FailedScheduling");
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["action"], "Scheduling");
  EXPECT_EQ(ev["source"]["component"], "koord-scheduler");
  EXPECT_EQ(ev["reportingComponent"], "koord-scheduler");
  EXPECT_EQ(ev["firstTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(ev["lastTimestamp"], ev["firstTimestamp"]);
  EXPECT_EQ(ev["count"], 1);
}

TEST(SinkBodies, NodeStatusPatchAndSkip) {
  node_batch_values v{.batch_cpu_milli = 8000, .batch_memory_bytes = 17'179'869'184};
  EXPECT_EQ(node_resources_patch(v), json::parse(R"({"status":{
      "capacity":{"kubernetes.io/batch-cpu":"8000","kubernetes.io/batch-memory":"17179869184"},
      "allocatable":{"kubernetes.io/batch-cpu":"8000","kubernetes.io/batch-memory":"17179869184"}}})"));
  v.include_mid = true;
  v.mid_cpu_milli = 1500;
  EXPECT_EQ(node_resources_patch(v)["status"]["allocatable"]["kubernetes.io/mid-cpu"], "1500");
  EXPECT_EQ(node_resources_patch(v)["status"]["capacity"]["kubernetes.io/mid-memory"], "0");

  // The server's canonical forms read back as the same values.
  json node = json::parse(R"({"status":{
      "capacity":{"cpu":"32","kubernetes.io/batch-cpu":"8k","kubernetes.io/batch-memory":"16Gi"},
      "allocatable":{"cpu":"31","kubernetes.io/batch-cpu":"8k","kubernetes.io/batch-memory":"16Gi"}}})");
  node_batch_values w{.batch_cpu_milli = 8000, .batch_memory_bytes = 16ll << 30};
  EXPECT_TRUE(node_has_resources(node, w));
  w.batch_cpu_milli = 8001;
  EXPECT_FALSE(node_has_resources(node, w));
  w.batch_cpu_milli = 8000;
  w.include_mid = true;
  EXPECT_FALSE(node_has_resources(node, w)) << "mid absent";
  node["status"]["allocatable"].erase("kubernetes.io/batch-memory");
  w.include_mid = false;
  EXPECT_FALSE(node_has_resources(node, w)) << "allocatable lacks batch-memory";
}

// A tree root as the ElasticQuota object: metadata from the record, min/max with the record's
// keys (a zero cpu stays a key), quantities as Go prints them.
TEST(SinkBodies, ElasticQuotaObjectOfATreeRoot) {
  resource_list min, max;
  min.cpu_milli = 535'100;
  min.memory_bytes = 0;
  max.cpu_milli = 4'000'000;
  max.memory_bytes = 8ll << 30;
  const auto rec = testing::quota_root(
      9, "gpu-root", "team", {{"quota.scheduling.koordinator.sh/is-root", "true"}},
      {{"quota.scheduling.koordinator.sh/total-resource", R"({"cpu":"107018"})"}}, min, max);
  const auto o = elastic_quota_object(*wire::GetEnvelope(rec.data())->payload_as_QuotaUpserted());
  EXPECT_EQ(o["apiVersion"], "scheduling.sigs.k8s.io/v1alpha1");
  EXPECT_EQ(o["kind"], "ElasticQuota");
  EXPECT_EQ(o["metadata"]["name"], "gpu-root");
  EXPECT_EQ(o["metadata"]["namespace"], "team");
  EXPECT_EQ(o["metadata"]["labels"]["quota.scheduling.koordinator.sh/is-root"], "true");
  EXPECT_EQ(o["metadata"]["annotations"]["quota.scheduling.koordinator.sh/total-resource"],
            R"({"cpu":"107018"})");
  EXPECT_EQ(o["spec"]["min"], json::parse(R"({"cpu":"535100m","memory":"0"})")) << o.dump();
  // Memory in bytes, as Colony writes every quota ResourceList (actors/quota/README.md).
  EXPECT_EQ(o["spec"]["max"], json::parse(R"({"cpu":"4k","memory":"8589934592"})")) << o.dump();
}

TEST(SinkBodies, Eviction) {
  EXPECT_EQ(eviction_body("ns", "p"), json::parse(R"({"apiVersion":"policy/v1",
      "kind":"Eviction","metadata":{"name":"p","namespace":"ns"}})"));
  EXPECT_EQ(rfc3339(0), "1970-01-01T00:00:00Z");
}

// Koordinator's koordlet evictor: metav1.NewUIDPreconditions, no grace period override
// (pkg/koordlet/qosmanager/plugins/util/evictor.go).
TEST(SinkBodies, EvictionWithTheUidPrecondition) {
  EXPECT_EQ(eviction_body("ns", "p", "u-1"), json::parse(R"({"apiVersion":"policy/v1",
      "kind":"Eviction","metadata":{"name":"p","namespace":"ns"},
      "deleteOptions":{"preconditions":{"uid":"u-1"}}})"));
}

// A report whose memory follows usageWithHotPageCache (v9 memory_collect_policy) creates its
// NodeMetric with that nodeMemoryCollectPolicy.
TEST(SinkBodies, NodeMetricObjectCarriesTheReportsMemoryCollectPolicy) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto node = fbb.CreateString("n1");
  const auto policy = fbb.CreateString("usageWithHotPageCache");
  const auto payload =
      wire::CreateNodeMetricReported(fbb, node, 0, 300000, 60000, 0, 0, 0, 0, 0, 0, 0, policy);
  messages::header h;
  h.kind = wire::EntityKind::Node;
  h.key = "n1";
  h.source = "koordlet/n1";
  const auto rec = b.finish(h, payload);
  const auto& m = *wire::GetEnvelope(rec.data())->payload_as_NodeMetricReported();
  EXPECT_EQ(node_metric_object(m)["spec"]["metricCollectPolicy"]["nodeMemoryCollectPolicy"],
            "usageWithHotPageCache");
}

// The NodeResourceTopology a koordlet creates (newNodeTopo + calcNodeTopo): Koordinator's required
// fields (topologyPolicies, zones with name and type, resources with capacity, allocatable and
// available), quantities in canonical form.
TEST(SinkBodies, NodeTopologyObjectHasKoordinatorsRequiredFields) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto node = fbb.CreateString("n1");
  const auto ann = b.key_values({{"node.koordinator.sh/cpu-topology", R"({"detail":[]})"}});
  const auto none = fbb.CreateString("None");
  std::vector<flatbuffers::Offset<flatbuffers::String>> pv{none};
  const auto policies = fbb.CreateVector(pv);
  const auto zn = fbb.CreateString("node-0");
  const auto zt = fbb.CreateString("Node");
  std::vector<flatbuffers::Offset<wire::TopologyZone>> zv{
      wire::CreateTopologyZone(fbb, zn, zt, 4000, 269755191296)};
  const auto zones = fbb.CreateVector(zv);
  const auto payload =
      wire::CreateNodeResourceTopologyUpdated(fbb, node, ann, policies, zones, false);
  messages::header h;
  h.kind = wire::EntityKind::Node;
  h.key = "n1";
  h.causation = 2;
  h.source = "koordlet/n1";
  const auto rec = b.finish(h, payload);
  const auto& t = *wire::GetEnvelope(rec.data())->payload_as_NodeResourceTopologyUpdated();
  EXPECT_EQ(node_topology_object(t), json::parse(R"({"apiVersion":"topology.node.k8s.io/v1alpha1",
      "kind":"NodeResourceTopology",
      "metadata":{"name":"n1","labels":{"app.kubernetes.io/managed-by":"Koordinator"},
        "annotations":{"node.koordinator.sh/cpu-topology":"{\"detail\":[]}"}},
      "topologyPolicies":["None"],
      "zones":[{"name":"node-0","type":"Node","resources":[
        {"name":"cpu","capacity":"4","allocatable":"4","available":"4"},
        {"name":"memory","capacity":"263432804Ki","allocatable":"263432804Ki",
         "available":"263432804Ki"}]}]})"));
}

// The NodeMetric a koordlet creates and the status it writes (apis/slo/v1alpha1
// nodemetric_types.go), from its NodeMetricReported.
TEST(SinkBodies, NodeMetricObjectAndStatus) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  resource_list nu;
  nu.cpu_milli = 1500;
  nu.memory_bytes = 2LL << 30;
  resource_list pu;
  pu.memory_bytes = 512LL << 20;
  const auto node = fbb.CreateString("n1");
  const auto nur = b.resources(nu);
  const auto avg = b.resources(nu);
  std::vector<flatbuffers::Offset<wire::AggregatedUsage>> agg{
      wire::CreateAggregatedUsage(fbb, 300000, avg, 0, 0, 0, 0)};
  const auto aggv = fbb.CreateVector(agg);
  const auto pod = fbb.CreateString("apps/be-1");
  const auto pur = b.resources(pu);
  std::vector<flatbuffers::Offset<wire::PodMetric>> pods{
      wire::CreatePodMetric(fbb, pod, pur, wire::PriorityClass::Batch, wire::QoSClass::BE)};
  const auto podv = fbb.CreateVector(pods);
  const auto payload =
      wire::CreateNodeMetricReported(fbb, node, 0, 300000, 60000, nur, 0, aggv, 0, podv, 0);
  messages::header h;
  h.kind = wire::EntityKind::Node;
  h.key = "n1";
  h.causation = 3;
  h.source = "koordlet/n1";
  const auto rec = b.finish(h, payload);
  const auto& m = *wire::GetEnvelope(rec.data())->payload_as_NodeMetricReported();
  EXPECT_EQ(node_metric_object(m), json::parse(R"({"apiVersion":"slo.koordinator.sh/v1alpha1",
      "kind":"NodeMetric","metadata":{"name":"n1"},
      "spec":{"metricCollectPolicy":{"aggregateDurationSeconds":300,"reportIntervalSeconds":60,
        "nodeAggregatePolicy":{"durations":["5m0s"]},
        "nodeMemoryCollectPolicy":"usageWithoutPageCache"}}})"));
  EXPECT_EQ(node_metric_status(m), json::parse(R"({"updateTime":"1970-01-01T00:00:00Z",
      "nodeMetric":{"nodeUsage":{"resources":{"cpu":"1500m","memory":"2Gi"}},
        "aggregatedNodeUsages":[{"duration":"5m0s",
          "usage":{"avg":{"resources":{"cpu":"1500m","memory":"2Gi"}}}}],
        "aggregatedSystemUsages":[]},
      "podsMetric":[{"namespace":"apps","name":"be-1","priority":"koord-batch","qos":"BE",
        "podUsage":{"resources":{"cpu":"0","memory":"512Mi"}}}],
      "hostApplicationMetric":[]})"));
  EXPECT_EQ(to_string(write_kind::node_metric), "node-metric");
  EXPECT_EQ(to_wire(write_kind::node_metric), wire::WriteKind::node_metric);
}

// status.hostApplicationMetric[] (apis/slo/v1alpha1/nodemetric_types.go HostApplicationMetricInfo:
// name, usage, priority, qos) from the report's host_apps.
TEST(SinkBodies, NodeMetricStatusListsHostApplications) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto node = fbb.CreateString("n1");
  resource_list u;
  u.cpu_milli = 1000;
  u.memory_bytes = 256LL << 20;
  const auto name = fbb.CreateString("nginx");
  const auto ur = b.resources(u);
  std::vector<flatbuffers::Offset<wire::HostAppMetric>> apps{
      wire::CreateHostAppMetric(fbb, name, ur, wire::PriorityClass::Prod, wire::QoSClass::LS)};
  const auto av = fbb.CreateVector(apps);
  const auto payload =
      wire::CreateNodeMetricReported(fbb, node, 0, 300000, 60000, 0, 0, 0, 0, 0, 0, av);
  messages::header h;
  h.kind = wire::EntityKind::Node;
  h.key = "n1";
  h.source = "koordlet/n1";
  const auto rec = b.finish(h, payload);
  const auto& m = *wire::GetEnvelope(rec.data())->payload_as_NodeMetricReported();
  EXPECT_EQ(node_metric_status(m)["hostApplicationMetric"],
            json::parse(R"([{"name":"nginx","priority":"koord-prod","qos":"LS",
                "usage":{"resources":{"cpu":"1","memory":"256Mi"}}}])"));
}

TEST(SinkBodies, NodeSlo) {
  // nodeslo_controller.go initNodeSLO: named after the node, cluster-scoped, the spec as is.
  const json spec = json::parse(R"({"resourceUsedThresholdWithBE":{"enable":true}})");
  EXPECT_EQ(node_slo_object("n1", spec), json::parse(R"({"apiVersion":"slo.koordinator.sh/v1alpha1",
      "kind":"NodeSLO","metadata":{"name":"n1"},
      "spec":{"resourceUsedThresholdWithBE":{"enable":true}}})"));
  EXPECT_EQ(to_string(write_kind::node_slo), "node-slo");
}

// A sink whose server refuses connections: every write is unavailable.
decision_sink refused_sink(std::vector<milliseconds>& slept) {
  connection c;
  c.server = "https://127.0.0.1:1";
  c.token = "t";
  sink_options o;
  o.max_attempts = 4;
  o.eviction_max_attempts = 3;
  o.backoff_initial = milliseconds(100);
  o.backoff_cap = milliseconds(250);
  o.jitter = 0;
  o.sleep = [&slept](milliseconds d) { slept.push_back(d); };
  o.client.connect_timeout = milliseconds(1000);
  auto s = decision_sink::open(c, o);
  EXPECT_TRUE(s) << s.error().describe();
  return std::move(*s);
}

TEST(Sink, RetriesUnavailableThenReportsAFailedOutcome) {
  std::vector<milliseconds> slept;
  auto sink = refused_sink(slept);
  auto out = sink.apply(testing::pod_scheduled(7, "ns/p", "n1"));
  ASSERT_TRUE(out) << out.error().describe();
  ASSERT_EQ(out->size(), 1u);
  const auto& o = (*out)[0];
  EXPECT_EQ(o.offset, 7u);
  EXPECT_EQ(o.kind, write_kind::binding);
  EXPECT_FALSE(o.ok);
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(o.http_status, 0);
  EXPECT_EQ(o.attempts, 4u);
  EXPECT_EQ(o.object, "ns/p");
  EXPECT_NE(o.message.find("binding pod ns/p to node n1 failed"), std::string::npos) << o.message;
  // 100, 200, then capped at 250.
  EXPECT_EQ(slept,
            (std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(250)}));
  EXPECT_EQ(sink.waits(), slept);

  auto ev = sink.apply(testing::pod_evicted(8, "ns/p", "n1"));
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->size(), 1u);
  EXPECT_FALSE((*ev)[0].ok);
  EXPECT_EQ((*ev)[0].attempts, 3u);
  EXPECT_EQ(sink.counters().failed, 2u);
  EXPECT_EQ(sink.counters().retries, 5u);
}

// A NodeSLO that cannot be read (no server): a failed outcome keyed to the node, which the log
// records as a WriteFailed of kind node_slo on the Node entity. A spec that is not JSON is a
// failure without any request.
TEST(Sink, NodeSloWriteThatKeepsFailingIsAFailedOutcome) {
  std::vector<milliseconds> slept;
  auto sink = refused_sink(slept);
  auto out = sink.apply(testing::node_slo_updated(12, "n1", R"({"cpuBurstStrategy":{}})"));
  ASSERT_TRUE(out) << out.error().describe();
  ASSERT_EQ(out->size(), 1u);
  const auto& o = (*out)[0];
  EXPECT_EQ(o.offset, 12u);
  EXPECT_EQ(o.kind, write_kind::node_slo);
  EXPECT_EQ(o.object, "n1");
  EXPECT_FALSE(o.ok);
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(o.attempts, 4u);  // the read, tried max_attempts times
  EXPECT_NE(o.message.find("NodeSLO n1"), std::string::npos) << o.message;
  const auto rec = write_failed_record(o, event_time{7000});
  auto d = messages::decode(rec, "write_failed_record");
  ASSERT_TRUE(d) << d.error().describe();
  EXPECT_EQ(d->envelope->entity_kind(), wire::EntityKind::Node);
  EXPECT_EQ(messages::to_string_view(d->envelope->entity_key()), "n1");
  EXPECT_EQ(d->envelope->causation(), 12);
  EXPECT_EQ(d->envelope->payload_as_WriteFailed()->write(), wire::WriteKind::node_slo);

  const auto requests = sink.counters().requests;
  auto bad = sink.apply(testing::node_slo_updated(13, "n1", "not json"));
  ASSERT_TRUE(bad) << bad.error().describe();
  ASSERT_EQ(bad->size(), 1u);
  EXPECT_FALSE((*bad)[0].ok);
  EXPECT_EQ(sink.counters().requests, requests);
}

TEST(Sink, IgnoresOtherRecordsAndRefusesGarbage) {
  std::vector<milliseconds> slept;
  auto sink = refused_sink(slept);
  auto out = sink.apply(testing::pod_started(3, "ns/p", "n1"));
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_TRUE(out->empty());
  EXPECT_EQ(sink.counters().ignored, 1u);
  EXPECT_EQ(sink.counters().requests, 0u);
  const std::vector<std::uint8_t> junk(64, 0xab);
  auto bad = sink.apply(junk);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().describe().find("decision_sink record"), std::string::npos);
  EXPECT_EQ(sink.counters().records, 1u);
}

// A failed outcome as the log records it (write_failed.hpp): WriteFailed caused by the decision,
// keyed to the object written. The sink itself has nothing to write for such a record.
TEST(Sink, FailedOutcomeBecomesAWriteFailedRecordTheSinkIgnores) {
  std::vector<milliseconds> slept;
  auto sink = refused_sink(slept);
  auto out = sink.apply(testing::pod_scheduled(7, "ns/p", "n1"));
  ASSERT_TRUE(out) << out.error().describe();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_FALSE((*out)[0].ok);
  const auto rec = write_failed_record((*out)[0], event_time{5000});
  EXPECT_EQ(rec, write_failed_record((*out)[0], event_time{5000})) << "same bytes";
  auto d = messages::decode(rec, "write_failed_record");
  ASSERT_TRUE(d) << d.error().describe();
  ASSERT_EQ(d->type(), wire::Payload::WriteFailed);
  const wire::Envelope& env = *d->envelope;
  EXPECT_EQ(env.causation(), 7);
  EXPECT_EQ(env.event_time_ms(), 5000);
  EXPECT_EQ(env.entity_kind(), wire::EntityKind::Pod);
  EXPECT_EQ(messages::to_string_view(env.entity_key()), "ns/p");
  EXPECT_EQ(messages::to_string_view(env.source()), "kube-sink");
  const auto* w = env.payload_as_WriteFailed();
  EXPECT_EQ(w->write(), wire::WriteKind::binding);
  EXPECT_EQ(messages::to_string_view(w->object()), "ns/p");
  EXPECT_EQ(w->http_status(), 0);  // no answer: the connection was refused
  EXPECT_EQ(w->attempts(), 4);
  EXPECT_EQ(messages::to_string_view(w->message()), (*out)[0].message);

  write_outcome node{.offset = 9,
                     .kind = write_kind::node_resources,
                     .http_status = 404,
                     .attempts = 1,
                     .object = "n1",
                     .message = "nodes \"n1\" not found"};
  const auto nrec = write_failed_record(node, event_time{6000});
  auto nd = messages::decode(nrec, "write_failed_record");
  ASSERT_TRUE(nd) << nd.error().describe();
  EXPECT_EQ(nd->envelope->entity_kind(), wire::EntityKind::Node);
  EXPECT_EQ(messages::to_string_view(nd->envelope->entity_key()), "n1");
  EXPECT_EQ(nd->envelope->payload_as_WriteFailed()->write(), wire::WriteKind::node_resources);
  EXPECT_EQ(nd->envelope->payload_as_WriteFailed()->http_status(), 404);

  const auto requests = sink.counters().requests;
  auto again = sink.apply(rec);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(sink.counters().requests, requests);
}

}  // namespace
}  // namespace colony::kube
