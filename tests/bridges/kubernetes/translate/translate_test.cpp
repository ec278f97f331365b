// Kubernetes objects -> Colony observation events (bridges/kubernetes/translate.hpp), table
// driven over the objects in tests/data/kubernetes/. Every table asserts its own size, so a
// case dropped by accident fails the test. docs/kubernetes-bridge.md "Translation to
// observation events" is the mapping these tables check.
#include <functional>
#include <utility>

#include "messages/names.hpp"
#include "tests/bridges/kubernetes/translate/translate_fixtures.hpp"

namespace colony::kube::testing {
namespace {

using P = wire::Payload;
using messages::to_resource_list;

constexpr std::int64_t Ki = 1024, Mi = Ki * 1024, Gi = Mi * 1024;

resource_list cpu_mem(std::int64_t cpu, std::int64_t mem) {
  resource_list r;
  r.cpu_milli = cpu;
  r.memory_bytes = mem;
  return r;
}

void expect_header(const wire::Envelope* e, wire::EntityKind kind, std::string_view key) {
  EXPECT_EQ(e->entity_kind(), kind);
  EXPECT_EQ(str(e->entity_key()), key);
  EXPECT_EQ(e->event_time_ms(), t0.value);
  EXPECT_EQ(e->causation(), -1);  // an observation from outside
  EXPECT_EQ(str(e->source()), "bridge/k8s");
}

// ---- ADDED: one table of valid objects -------------------------------------------------

struct added_case {
  const char* name;
  const char* file;
  object_kind kind;
  std::vector<P> types;
  std::function<void(const std::vector<const wire::Envelope*>&)> check;
};

std::vector<added_case> added_cases() {
  std::vector<added_case> c;
  c.push_back(
      {"NodeWithBatchAndGpuResources",
       "node-gpu-batch.json",
       object_kind::node,
       {P::NodeRegistered},
       [](const auto& e) {
         expect_header(e[0], wire::EntityKind::Node, "gpu-node-1");
         const auto* n = e[0]->payload_as_NodeRegistered();
         EXPECT_EQ(str(n->name()), "gpu-node-1");
         resource_list cap = cpu_mem(96000, 792478912 * Ki);
         cap.batch_cpu_milli = 50000;  // "50k": batch-cpu counts milli-cores
         cap.batch_memory_bytes = 200 * Gi;
         cap.mid_cpu_milli = 8000;
         cap.mid_memory_bytes = 32 * Gi;
         cap.gpu = 800;  // nvidia.com/gpu "8", x100
         cap.gpu_core = 800;
         cap.gpu_memory_bytes = 640 * Gi;
         cap.gpu_memory_ratio = 800;
         cap.pods = 110;
         EXPECT_EQ(to_resource_list(n->capacity()), cap);
         resource_list alloc = cap;
         alloc.cpu_milli = 95500;
         alloc.memory_bytes = 791430336 * Ki;
         EXPECT_EQ(to_resource_list(n->allocatable()), alloc);
         const std::vector<std::pair<std::string, std::int64_t>> cap_ext = {
             {"ephemeral-storage", 1843860432 * Ki}, {"hugepages-1Gi", 0}, {"hugepages-2Mi", 0}};
         EXPECT_EQ(extended(n->capacity()), cap_ext);
         EXPECT_EQ(extended(n->allocatable())[0],
                   std::make_pair(std::string("ephemeral-storage"), std::int64_t{1699289577386}));
         const auto labels = kvs(n->labels());
         ASSERT_EQ(labels.size(), 6u);
         EXPECT_TRUE(std::is_sorted(labels.begin(), labels.end()));
         EXPECT_EQ(labels[4],
                   std::make_pair(std::string(names::label_gpu_model), std::string("A100")));
         EXPECT_EQ(kvs(n->annotations()).size(), 3u);
         EXPECT_FALSE(n->unschedulable());
         EXPECT_EQ(n->gpus(), nullptr);  // the Device CRD's, not translated
       }});
  c.push_back({"NodeNotReadyAndCordoned",
               "node-not-ready.json",
               object_kind::node,
               {P::NodeRegistered, P::NodeConditionChanged},
               [](const auto& e) {
                 EXPECT_TRUE(e[0]->payload_as_NodeRegistered()->unschedulable());
                 EXPECT_EQ(to_resource_list(e[0]->payload_as_NodeRegistered()->capacity()).pods,
                           110);
                 expect_header(e[1], wire::EntityKind::Node, "cpu-node-7");
                 const auto* c = e[1]->payload_as_NodeConditionChanged();
                 EXPECT_EQ(str(c->name()), "cpu-node-7");
                 EXPECT_FALSE(c->ready());
                 EXPECT_TRUE(c->unschedulable());
                 EXPECT_EQ(str(c->reason()), "KubeletNotReady");
               }});
  c.push_back({"PodWithInitContainersSidecarAndOverhead",
               "pod-web-init-overhead.json",
               object_kind::pod,
               {P::PodSubmitted},
               [](const auto& e) {
                 expect_header(e[0], wire::EntityKind::Pod, "default/web-1");
                 const auto* p = e[0]->payload_as_PodSubmitted();
                 EXPECT_EQ(str(p->name()), "default/web-1");
                 EXPECT_EQ(str(p->uid()), "8f14e45f-ceea-467a-9575-1b2f3c4d5e6f");
                 // PodRequests: containers 600m/1152Mi; +sidecar 800m/1408Mi; init use
                 // max(init-db 2/512Mi, migrate+sidecar 1200m/3328Mi) = 2/3328Mi wins; +overhead
                 // 250m/120Mi.
                 EXPECT_EQ(to_resource_list(p->requests()), cpu_mem(2250, 3448 * Mi));
                 const std::vector<std::pair<std::string, std::int64_t>> eph = {
                     {"ephemeral-storage", 1 * Gi}};
                 EXPECT_EQ(extended(p->requests()), eph);
                 // PodLimits: containers 1/2304Mi; +sidecar 1500m/2816Mi; init use 2/3584Mi;
                 // overhead onto the non-zero limits.
                 EXPECT_EQ(to_resource_list(p->limits()), cpu_mem(2250, 3704 * Mi));
                 EXPECT_TRUE(p->has_priority());
                 EXPECT_EQ(p->priority(), 9100);
                 EXPECT_EQ(str(p->priority_class_name()), "koord-prod");
                 const auto labels = kvs(p->labels());
                 ASSERT_EQ(labels.size(), 5u);
                 EXPECT_EQ(labels[0].first, "app");
                 EXPECT_EQ(labels[2],
                           std::make_pair(std::string(names::label_qos_class), std::string("LS")));
                 EXPECT_EQ(labels[4].first, names::label_quota_name);
                 const auto ann = kvs(p->annotations());  // kubectl's copy dropped
                 ASSERT_EQ(ann.size(), 1u);
                 EXPECT_EQ(ann[0].first, names::annotation_cpu_burst);
                 EXPECT_EQ(str(p->scheduler_name()), "koord-scheduler");
                 EXPECT_EQ(p->kube_qos(), wire::KubeQoSClass::Burstable);
                 EXPECT_EQ(str(p->owner()), "ReplicaSet/web-7d9f8c6b5");
                 EXPECT_EQ(p->gpu_models(), nullptr);
                 EXPECT_EQ(p->expected_duration_ms(), -1);
                 // spec.overhead on its own too (ElasticQuotaIgnorePodOverhead), v12.
                 ASSERT_NE(p->overhead(), nullptr);
                 EXPECT_EQ(to_resource_list(p->overhead()), cpu_mem(250, 120 * Mi));
               }});
  c.push_back({"BestEffortPodWithBatchResources",
               "pod-be-batch.json",
               object_kind::pod,
               {P::PodSubmitted},
               [](const auto& e) {
                 expect_header(e[0], wire::EntityKind::Pod, "team-a/be-batch-1");
                 const auto* p = e[0]->payload_as_PodSubmitted();
                 EXPECT_EQ(p->overhead(), nullptr);  // no spec.overhead
                 resource_list r;
                 r.batch_cpu_milli = 1000;  // "1k"
                 r.batch_memory_bytes = 2 * Gi;
                 EXPECT_EQ(to_resource_list(p->requests()), r);
                 EXPECT_EQ(to_resource_list(p->limits()), r);
                 EXPECT_EQ(p->kube_qos(), wire::KubeQoSClass::BestEffort);
                 EXPECT_EQ(p->priority(), 5500);
                 EXPECT_EQ(str(p->owner()), "Job/etl-20260101");
                 EXPECT_EQ(p->annotations()->size(), 0u);
               }});
  c.push_back({"GpuPodPinnedToModels",
               "pod-gpu-affinity.json",
               object_kind::pod,
               {P::PodSubmitted},
               [](const auto& e) {
                 const auto* p = e[0]->payload_as_PodSubmitted();
                 resource_list r = cpu_mem(4000, 16 * Gi);
                 r.gpu = 100;
                 EXPECT_EQ(to_resource_list(p->requests()), r);
                 EXPECT_EQ(p->kube_qos(), wire::KubeQoSClass::Guaranteed);
                 EXPECT_TRUE(p->has_priority());
                 EXPECT_EQ(p->priority(), 0);
                 EXPECT_EQ(p->priority_class_name(), nullptr);
                 ASSERT_NE(p->gpu_models(), nullptr);
                 ASSERT_EQ(p->gpu_models()->size(), 2u);
                 EXPECT_EQ(str(p->gpu_models()->Get(0)), "A100");
                 EXPECT_EQ(str(p->gpu_models()->Get(1)), "H100");
                 EXPECT_EQ(p->owner(), nullptr);
               }});
  c.push_back({"PodLevelResourcesReplaceTheContainersSum",
               "pod-level-resources.json",
               object_kind::pod,
               {P::PodSubmitted},
               [](const auto& e) {
                 const auto* p = e[0]->payload_as_PodSubmitted();
                 EXPECT_EQ(to_resource_list(p->requests()), cpu_mem(2000, 4 * Gi));
                 EXPECT_EQ(to_resource_list(p->limits()), cpu_mem(4000, 8 * Gi));
               }});
  c.push_back({"PriorityClass",
               "priorityclass-koord-batch.json",
               object_kind::priority_class,
               {P::ConfigUpdated},
               [](const auto& e) {
                 expect_header(e[0], wire::EntityKind::Cluster, "admission");
                 const auto* u = e[0]->payload_as_ConfigUpdated();
                 EXPECT_EQ(str(u->kind()), "PriorityClass");
                 EXPECT_EQ(str(u->name()), "koord-batch");
                 EXPECT_FALSE(u->deleted());
                 EXPECT_EQ(str(u->spec_json()),
                           R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",)"
                           R"("metadata":{"name":"koord-batch"},)"
                           R"("preemptionPolicy":"PreemptLowerPriority","value":5000})");
               }});
  c.push_back({"SloControllerConfigMap",
               "configmap-slo-controller-config.json",
               object_kind::config_map,
               {P::ConfigUpdated},
               [](const auto& e) {
                 expect_header(e[0], wire::EntityKind::Cluster, "slo-controller");
                 const auto* u = e[0]->payload_as_ConfigUpdated();
                 EXPECT_EQ(str(u->kind()), "slo-controller-config");
                 EXPECT_EQ(str(u->name()), "koordinator-system/slo-controller-config");
                 // The data map as the sim writes its sloControllerConfig: {key: text}.
                 const json data = load("configmap-slo-controller-config.json")["data"];
                 EXPECT_EQ(str(u->spec_json()), data.dump());
               }});
  c.push_back({"ClusterColocationProfile",
               "clustercolocationprofile-batch-jobs.json",
               object_kind::cluster_colocation_profile,
               {P::ConfigUpdated},
               [](const auto& e) {
                 expect_header(e[0], wire::EntityKind::Cluster, "admission");
                 const auto* u = e[0]->payload_as_ConfigUpdated();
                 EXPECT_EQ(str(u->kind()), "ClusterColocationProfile");
                 EXPECT_EQ(str(u->name()), "batch-jobs");
                 const json doc = json::parse(str(u->spec_json()));
                 const json obj = load("clustercolocationprofile-batch-jobs.json");
                 EXPECT_EQ(doc["spec"], obj["spec"]);
                 EXPECT_EQ(doc["metadata"], json({{"name", "batch-jobs"}}));  // no rv, no kubectl
                 EXPECT_EQ(doc["kind"], "ClusterColocationProfile");
                 EXPECT_EQ(doc["apiVersion"], "config.koordinator.sh/v1alpha1");
                 EXPECT_FALSE(doc.contains("status"));
               }});
  c.push_back({"ElasticQuota",
               "elasticquota-team-a.json",
               object_kind::elastic_quota,
               {P::QuotaUpserted},
               [](const auto& e) {
                 expect_header(e[0], wire::EntityKind::ElasticQuota, "team-a");
                 const auto* q = e[0]->payload_as_QuotaUpserted();
                 EXPECT_EQ(str(q->name()), "team-a");
                 EXPECT_EQ(str(q->namespace_()), "team-a");
                 EXPECT_EQ(str(q->parent()), names::root_quota_name);
                 EXPECT_FALSE(q->is_parent());
                 EXPECT_TRUE(q->allow_lent_resource());
                 resource_list min = cpu_mem(10000, 20 * Gi), max = cpu_mem(40000, 80 * Gi);
                 min.gpu = 200;
                 max.gpu = 400;
                 EXPECT_EQ(to_resource_list(q->min()), min);
                 EXPECT_EQ(to_resource_list(q->max()), max);
                 EXPECT_EQ(q->min_keys(), 0b1000011);  // cpu, memory, gpu (field ids 0, 1, 6)
                 EXPECT_EQ(q->max_keys(), 0b1000011);
                 EXPECT_EQ(to_resource_list(q->shared_weight()), cpu_mem(40000, 80 * Gi));
                 // The scheduler's status write-back (runtime, request) is not carried.
                 const auto ann = kvs(q->annotations());
                 ASSERT_EQ(ann.size(), 1u);
                 EXPECT_EQ(ann[0].first, names::annotation_shared_weight);
                 EXPECT_EQ(kvs(q->labels()).size(), 3u);
               }});
  c.push_back({"NodeMetric",
               "nodemetric-gpu-node-1.json",
               object_kind::node_metric,
               {P::NodeMetricReported},
               [](const auto& e) {
                 expect_header(e[0], wire::EntityKind::Node, "gpu-node-1");
                 const auto* m = e[0]->payload_as_NodeMetricReported();
                 EXPECT_EQ(str(m->node()), "gpu-node-1");
                 EXPECT_EQ(m->update_time_ms(), 1767225840000);  // 2026-01-01T00:04:00Z
                 EXPECT_EQ(m->aggregate_duration_ms(), 300000);
                 EXPECT_EQ(m->report_interval_ms(), 60000);
                 EXPECT_EQ(to_resource_list(m->node_usage()), cpu_mem(12500, 180 * Gi));
                 EXPECT_EQ(to_resource_list(m->system_usage()), cpu_mem(1200, 8 * Gi));
                 ASSERT_EQ(m->aggregated_node_usages()->size(), 2u);
                 const auto* a5 = m->aggregated_node_usages()->Get(0);
                 EXPECT_EQ(a5->duration_ms(), 300000);  // "5m0s"
                 EXPECT_EQ(to_resource_list(a5->avg()), cpu_mem(11000, 170 * Gi));
                 EXPECT_EQ(to_resource_list(a5->p50()), cpu_mem(10500, 168 * Gi));
                 EXPECT_EQ(to_resource_list(a5->p95()), cpu_mem(15000, 178 * Gi));
                 EXPECT_EQ(to_resource_list(a5->p99()), cpu_mem(17000, 181 * Gi));
                 EXPECT_EQ(m->aggregated_node_usages()->Get(1)->duration_ms(), 1800000);
                 ASSERT_EQ(m->aggregated_system_usages()->size(), 1u);
                 EXPECT_EQ(to_resource_list(m->aggregated_system_usages()->Get(0)->p99()),
                           cpu_mem(1500, 9 * Gi));
                 ASSERT_EQ(m->pods()->size(), 2u);  // sorted by pod key
                 const auto* web = m->pods()->Get(0);
                 EXPECT_EQ(str(web->pod()), "default/web-1");
                 EXPECT_EQ(to_resource_list(web->usage()), cpu_mem(1100, 2 * Gi));
                 EXPECT_EQ(web->priority_class(), wire::PriorityClass::Prod);
                 EXPECT_EQ(web->qos_class(), wire::QoSClass::LS);
                 const auto* be = m->pods()->Get(1);
                 EXPECT_EQ(str(be->pod()), "team-a/be-batch-1");
                 EXPECT_EQ(to_resource_list(be->usage()), cpu_mem(800, 1536 * Mi));
                 EXPECT_EQ(be->priority_class(), wire::PriorityClass::Batch);
                 EXPECT_EQ(be->qos_class(), wire::QoSClass::BE);
                 EXPECT_EQ(to_resource_list(m->prod_reclaimable()), cpu_mem(3000, 10 * Gi));
               }});
  return c;
}

TEST(KubeTranslate, AddedObjectsBecomeTheirObservationEvents) {
  const auto cases = added_cases();
  ASSERT_EQ(cases.size(), 11u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const json obj = load(c.file);
    auto r = translate_added(c.kind, obj, t0);
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    const auto envs = decode_all(*r);
    ASSERT_EQ(envs.size(), c.types.size());
    for (std::size_t i = 0; i < envs.size(); ++i) EXPECT_EQ(envs[i]->payload_type(), c.types[i]);
    c.check(envs);
  }
}

TEST(KubeTranslate, SameObjectGivesTheSameBytes) {
  const auto cases = added_cases();
  ASSERT_EQ(cases.size(), 11u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const json obj = load(c.file);
    auto a = translate_added(c.kind, obj, t0);
    auto b = translate_added(c.kind, obj, t0);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b);
    // The same object written with its maps in another key order (as another apiserver or a
    // relist may) and a new resourceVersion: the same bytes.
    json shuffled = json::parse(obj.dump());
    shuffled["metadata"]["resourceVersion"] = "999999";
    if (shuffled["metadata"].contains("labels")) {
      json rev = json::object();
      auto& l = shuffled["metadata"]["labels"];
      for (auto it = l.rbegin(); it != l.rend(); ++it) rev[it.key()] = it.value();
      l = rev;
    }
    auto s = translate_added(c.kind, shuffled, t0);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(*a, *s);
  }
}

// ---- DELETED -----------------------------------------------------------------------------

struct deleted_case {
  const char* name;
  const char* file;
  object_kind kind;
  P type;
  std::function<void(const wire::Envelope*)> check;
};

TEST(KubeTranslate, DeletedObjectsBecomeRemovalEvents) {
  const std::vector<deleted_case> cases = {
      {"Node", "node-gpu-batch.json", object_kind::node, P::NodeRemoved,
       [](const wire::Envelope* e) {
         expect_header(e, wire::EntityKind::Node, "gpu-node-1");
         EXPECT_EQ(str(e->payload_as_NodeRemoved()->name()), "gpu-node-1");
         EXPECT_EQ(str(e->payload_as_NodeRemoved()->reason()), "Node deleted");
       }},
      {"PendingPod", "pod-web-init-overhead.json", object_kind::pod, P::PodFinished,
       [](const wire::Envelope* e) {
         expect_header(e, wire::EntityKind::Pod, "default/web-1");
         const auto* f = e->payload_as_PodFinished();
         EXPECT_EQ(str(f->pod()), "default/web-1");
         EXPECT_EQ(str(f->node()), "");
         EXPECT_EQ(f->phase(), wire::PodPhase::Deleted);
       }},
      {"PriorityClass", "priorityclass-koord-batch.json", object_kind::priority_class,
       P::ConfigUpdated,
       [](const wire::Envelope* e) {
         const auto* u = e->payload_as_ConfigUpdated();
         EXPECT_EQ(str(u->kind()), "PriorityClass");
         EXPECT_EQ(str(u->name()), "koord-batch");
         EXPECT_TRUE(u->deleted());
         EXPECT_EQ(u->spec_json(), nullptr);
       }},
      {"SloControllerConfigMap", "configmap-slo-controller-config.json", object_kind::config_map,
       P::ConfigUpdated,
       [](const wire::Envelope* e) {
         EXPECT_EQ(str(e->payload_as_ConfigUpdated()->kind()), "slo-controller-config");
         EXPECT_TRUE(e->payload_as_ConfigUpdated()->deleted());
       }},
      {"ClusterColocationProfile", "clustercolocationprofile-batch-jobs.json",
       object_kind::cluster_colocation_profile, P::ConfigUpdated,
       [](const wire::Envelope* e) {
         EXPECT_EQ(str(e->payload_as_ConfigUpdated()->name()), "batch-jobs");
         EXPECT_TRUE(e->payload_as_ConfigUpdated()->deleted());
       }},
      {"ElasticQuota", "elasticquota-team-a.json", object_kind::elastic_quota, P::QuotaDeleted,
       [](const wire::Envelope* e) {
         expect_header(e, wire::EntityKind::ElasticQuota, "team-a");
         EXPECT_EQ(str(e->payload_as_QuotaDeleted()->name()), "team-a");
       }},
  };
  ASSERT_EQ(cases.size(), 6u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = translate_deleted(c.kind, load(c.file), t0);
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    const auto envs = decode_all(*r);
    ASSERT_EQ(envs.size(), 1u);
    EXPECT_EQ(envs[0]->payload_type(), c.type);
    c.check(envs[0]);
  }
}

// ---- invalid objects: nothing emitted, the error names object and field -------------------

struct error_case {
  const char* name;
  const char* file;
  object_kind kind;
  std::function<void(json&)> edit;  // applied to the loaded object; may be empty
  std::string where;
  std::string message;
};

std::vector<error_case> error_cases() {
  const std::string pod = "Pod default/web-1: ";
  const std::string node = "Node gpu-node-1: ";
  const std::string nm = "NodeMetric gpu-node-1: ";
  const std::string ccp = "ClusterColocationProfile batch-jobs: ";
  return {
      // The four bad objects of tests/data/kubernetes/.
      {"BadPodQuantity",
       "bad-pod-quantity.json",
       object_kind::pod,
       {},
       pod + "spec.containers[0].resources.requests.cpu",
       R"("12x" is not a quantity)"},
      {"QuotaMinOverMax",
       "bad-elasticquota-min-over-max.json",
       object_kind::elastic_quota,
       {},
       "ElasticQuota team-a: spec.min.cpu",
       R"(exceeds spec.max.cpu ("50" > "40"))"},
      {"ProfileOperator",
       "bad-clustercolocationprofile-operator.json",
       object_kind::cluster_colocation_profile,
       {},
       "ClusterColocationProfile p: spec.selector.matchExpressions[0].operator",
       R"("Foo" is not In, NotIn, Exists, DoesNotExist)"},
      {"NegativeNodeUsage",
       "bad-nodemetric-negative.json",
       object_kind::node_metric,
       {},
       "NodeMetric n1: status.nodeMetric.nodeUsage.resources.cpu",
       R"("-1" is negative)"},
      // Edits of good objects, one field each.
      {"InitContainerQuantity", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["spec"]["initContainers"][1]["resources"]["limits"]["memory"] = "1Gx"; },
       pod + "spec.initContainers[1].resources.limits.memory", R"("1Gx" is not a quantity)"},
      {"NegativeOverhead", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["spec"]["overhead"]["cpu"] = "-250m"; }, pod + "spec.overhead.cpu",
       R"("-250m" is negative)"},
      {"NoContainers", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["spec"]["containers"] = json::array(); }, pod + "spec.containers",
       "at least one container is required"},
      {"UnknownQoSLabel", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["metadata"]["labels"]["koordinator.sh/qosClass"] = "Gold"; },
       pod + "metadata.labels[koordinator.sh/qosClass]",
       R"("Gold" is not SYSTEM, LSE, LSR, LS, BE)"},
      {"UnknownPriorityClassLabel", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["metadata"]["labels"]["koordinator.sh/priority-class"] = "koord-gold"; },
       pod + "metadata.labels[koordinator.sh/priority-class]",
       R"("koord-gold" is not koord-prod, koord-mid, koord-batch, koord-free)"},
      {"PriorityNotInt32", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["spec"]["priority"] = 3000000000LL; }, pod + "spec.priority",
       "3000000000 is not an int32"},
      {"PodWithoutName", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["metadata"].erase("name"); }, "Pod default/<unnamed>: metadata.name",
       "is required"},
      {"KubeQoSUnknown", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["status"]["qosClass"] = "Platinum"; }, pod + "status.qosClass",
       R"("Platinum" is not Guaranteed, Burstable, BestEffort)"},
      {"NodeCapacityQuantity", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o["status"]["capacity"]["memory"] = "lots"; }, node + "status.capacity.memory",
       R"("lots" is not a quantity)"},
      {"NodeLabelNotString", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o["metadata"]["labels"]["kubernetes.io/os"] = 1; },
       node + "metadata.labels[kubernetes.io/os]", "must be a string, got 1"},
      {"NodeNotAnObject", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o = json::array(); }, "Node <unnamed>", "the object is not a JSON object"},
      {"QuotaMinKeyNotInMax", "elasticquota-team-a.json", object_kind::elastic_quota,
       [](json& o) { o["spec"]["max"].erase("nvidia.com/gpu"); },
       "ElasticQuota team-a: spec.min.nvidia.com/gpu", "has no spec.max.nvidia.com/gpu"},
      {"QuotaSharedWeightNotJson", "elasticquota-team-a.json", object_kind::elastic_quota,
       [](json& o) {
         o["metadata"]["annotations"]["quota.scheduling.koordinator.sh/shared-weight"] = "cpu=4";
       },
       "ElasticQuota team-a: metadata.annotations[quota.scheduling.koordinator.sh/shared-weight]",
       R"("cpu=4" is not a JSON ResourceList)"},
      {"ProfileInWithoutValues", "clustercolocationprofile-batch-jobs.json",
       object_kind::cluster_colocation_profile,
       [](json& o) { o["spec"]["namespaceSelector"]["matchExpressions"][0].erase("values"); },
       ccp + "spec.namespaceSelector.matchExpressions[0].values",
       "must be non-empty for operator NotIn"},
      {"ProfileQoS", "clustercolocationprofile-batch-jobs.json",
       object_kind::cluster_colocation_profile, [](json& o) { o["spec"]["qosClass"] = "XX"; },
       ccp + "spec.qosClass", R"("XX" is not LSE, LSR, LS, BE, SYSTEM)"},
      {"PriorityClassWithoutValue", "priorityclass-koord-batch.json", object_kind::priority_class,
       [](json& o) { o.erase("value"); }, "PriorityClass koord-batch: value", "is required"},
      {"ConfigMapDataNotString", "configmap-slo-controller-config.json", object_kind::config_map,
       [](json& o) { o["data"]["colocation-config"] = json::object(); },
       "ConfigMap koordinator-system/slo-controller-config: data[colocation-config]",
       "must be a string, got {}"},
      {"NodeMetricUpdateTime", "nodemetric-gpu-node-1.json", object_kind::node_metric,
       [](json& o) { o["status"]["updateTime"] = "yesterday"; }, nm + "status.updateTime",
       R"("yesterday" is not an RFC 3339 time)"},
      {"NodeMetricDuration", "nodemetric-gpu-node-1.json", object_kind::node_metric,
       [](json& o) { o["status"]["nodeMetric"]["aggregatedNodeUsages"][1]["duration"] = "30 min"; },
       nm + "status.nodeMetric.aggregatedNodeUsages[1].duration", R"("30 min" is not a duration)"},
      {"NodeMetricPodQoS", "nodemetric-gpu-node-1.json", object_kind::node_metric,
       [](json& o) { o["status"]["podsMetric"][0]["qos"] = "Gold"; },
       nm + "status.podsMetric[0].qos", R"("Gold" is not SYSTEM, LSE, LSR, LS, BE)"},
      {"NodeMetricHostAppQoS", "nodemetric-gpu-node-1.json", object_kind::node_metric,
       [](json& o) {
         o["status"]["hostApplicationMetric"] =
             json::array({{{"name", "nginx"}, {"qos", "LS"}}, {{"name", "logd"}, {"qos", "Gold"}}});
       },
       nm + "status.hostApplicationMetric[1].qos", R"("Gold" is not SYSTEM, LSE, LSR, LS, BE)"},
      // Recorded kinds (ObjectObserved): only what the record and its key rely on is checked.
      {"DeviceWithoutUid", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["metadata"].erase("uid"); }, "Device gpu-node-1: metadata.uid",
       "is required"},
      {"DeviceUidNotString", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["metadata"]["uid"] = 7; }, "Device gpu-node-1: metadata.uid",
       "must be a string, got 7"},
      {"DeviceWithoutResourceVersion", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["metadata"].erase("resourceVersion"); },
       "Device gpu-node-1: metadata.resourceVersion", "is required"},
      {"DeviceLabelNotString", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["metadata"]["labels"]["app.kubernetes.io/created-by"] = 1; },
       "Device gpu-node-1: metadata.labels[app.kubernetes.io/created-by]",
       "must be a string, got 1"},
      // A Device DeviceShare cannot read.
      {"DeviceNumaNodeNotANumber", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["spec"]["devices"][0]["topology"]["nodeID"] = "zero"; },
       "Device gpu-node-1: spec.devices[0].topology.nodeID", "must be an integer"},
      {"DeviceRepeatedMinor", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["spec"]["devices"].push_back(o["spec"]["devices"][0]); },
       "Device gpu-node-1: spec.devices[1].minor", "duplicate minor 0 of type gpu"},
      {"PodMigrationJobWithoutName", "podmigrationjob-0b6f.json", object_kind::pod_migration_job,
       [](json& o) { o["metadata"].erase("name"); }, "PodMigrationJob <unnamed>: metadata.name",
       "is required"},
      {"PodGroupWithoutNamespace", "podgroup-train-1.json", object_kind::pod_group,
       [](json& o) { o["metadata"].erase("namespace"); }, "PodGroup train-1: metadata.namespace",
       "is required"},
      {"DeviceWithANamespace", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["metadata"]["namespace"] = "default"; },
       "Device default/gpu-node-1: metadata.namespace", "must be empty: Device is cluster-scoped"},
      {"ProfileOfAnotherKind", "elasticquotaprofile-pool-a.json",
       object_kind::elastic_quota_profile, [](json& o) { o["kind"] = "ElasticQuota"; },
       "ElasticQuotaProfile kube-system/pool-a: kind",
       R"("ElasticQuota" is not ElasticQuotaProfile)"},
  };
}

TEST(KubeTranslate, InvalidObjectsAreRefusedNamingObjectAndField) {
  const auto cases = error_cases();
  ASSERT_EQ(cases.size(), 35u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json obj = load(c.file);
    if (c.edit) c.edit(obj);
    auto r = translate_added(c.kind, obj, t0);
    ASSERT_FALSE(r.has_value()) << "emitted " << r->size() << " events";
    EXPECT_EQ(r.error().code, errc::invalid_input);
    EXPECT_EQ(r.error().where, c.where);
    EXPECT_EQ(r.error().message, c.message);
    // A MODIFIED to the bad object is refused the same way (when it changes what the kind
    // reads; a renamed object is another key, never a MODIFIED).
    if (c.edit && change_kind(c.kind, load(c.file), obj) != change::none) {
      auto m = translate_modified(c.kind, load(c.file), obj, t0);
      ASSERT_FALSE(m.has_value());
      EXPECT_EQ(m.error().where, c.where);
    }
  }
  // The example of the error form: where, then the message.
  auto r = translate_added(object_kind::pod, load("bad-pod-quantity.json"), t0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().describe(),
            R"(Pod default/web-1: spec.containers[0].resources.requests.cpu: "12x" is not a )"
            R"(quantity (invalid_input))");
}

// ---- a refusal as the record a bridge appends (translate_refused) -------------------------

struct refused_case {
  const char* file;
  object_kind kind;
  wire::EntityKind entity_kind;
  std::string entity_key, api_kind, ns, name, uid, resource_version, field;
};

// The four bad objects of tests/data/kubernetes/: one ObjectRefused each, naming the object, the
// version refused and the field, keyed to the entity the object's own events are keyed to.
TEST(KubeTranslate, RefusalsBecomeOneObjectRefusedNamingObjectAndField) {
  const std::vector<refused_case> cases = {
      {"bad-pod-quantity.json", object_kind::pod, wire::EntityKind::Pod, "default/web-1", "Pod",
       "default", "web-1", "8f14e45f-ceea-467a-9575-1b2f3c4d5e6f", "200311",
       "spec.containers[0].resources.requests.cpu"},
      {"bad-elasticquota-min-over-max.json", object_kind::elastic_quota,
       wire::EntityKind::ElasticQuota, "team-a", "ElasticQuota", "team-a", "team-a", "", "9002",
       "spec.min.cpu"},
      {"bad-clustercolocationprofile-operator.json", object_kind::cluster_colocation_profile,
       wire::EntityKind::Cluster, "admission", "ClusterColocationProfile", "", "p", "", "7790",
       "spec.selector.matchExpressions[0].operator"},
      {"bad-nodemetric-negative.json", object_kind::node_metric, wire::EntityKind::Node, "n1",
       "NodeMetric", "", "n1", "", "312010", "status.nodeMetric.nodeUsage.resources.cpu"},
  };
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const json obj = load(c.file);
    auto r = translate_added(c.kind, obj, t0);
    ASSERT_FALSE(r.has_value());
    const event_list recs{translate_refused(c.kind, obj, r.error(), t0)};
    EXPECT_EQ(recs[0], translate_refused(c.kind, obj, r.error(), t0)) << "same bytes";
    const auto envs = decode_all(recs);
    ASSERT_EQ(envs.size(), 1u);
    const wire::Envelope* e = envs[0];
    expect_header(e, c.entity_kind, c.entity_key);
    ASSERT_EQ(e->payload_type(), P::ObjectRefused);
    const auto* o = e->payload_as_ObjectRefused();
    EXPECT_EQ(str(o->api_kind()), c.api_kind);
    EXPECT_EQ(str(o->namespace_()), c.ns);
    EXPECT_EQ(str(o->name()), c.name);
    EXPECT_EQ(str(o->uid()), c.uid);
    EXPECT_EQ(str(o->resource_version()), c.resource_version);
    EXPECT_EQ(str(o->field()), c.field);
    EXPECT_EQ(str(o->reason()), r.error().message);
    EXPECT_EQ(str(o->code()), "invalid_input");
  }
  // An error naming no field (the object is not even a JSON object): the object as a whole.
  const json not_object = json::array();
  auto r = translate_added(object_kind::node, not_object, t0);
  ASSERT_FALSE(r.has_value());
  const event_list recs{translate_refused(object_kind::node, not_object, r.error(), t0)};
  const auto envs = decode_all(recs);
  ASSERT_EQ(envs.size(), 1u);
  EXPECT_EQ(str(envs[0]->payload_as_ObjectRefused()->field()), "");
  EXPECT_EQ(str(envs[0]->payload_as_ObjectRefused()->reason()), "the object is not a JSON object");
}

// ---- recorded kinds: ObjectObserved (schema v4) ----------------------------------------------

struct recorded_case {
  const char* name;
  const char* file;
  object_kind kind;
  std::string entity_key, api_version, ns, object_name, uid, resource_version;
  std::vector<std::pair<std::string, std::string>> labels;
  // The compact JSON expected; nullptr: the object's .spec / .status, compared as JSON.
  const char* spec;
  const char* status;
};

std::vector<recorded_case> recorded_cases() {
  return {
      {"PodGroup",
       "podgroup-train-1.json",
       object_kind::pod_group,
       "PodGroup/ml/train-1",
       "scheduling.sigs.k8s.io/v1alpha1",
       "ml",
       "train-1",
       "3c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f",
       "4200",
       {{"app", "train"}, {"team", "ml"}},
       R"({"minMember":4,"scheduleTimeoutSeconds":600})",
       R"({"phase":"Scheduled","running":4,"scheduled":4})"},
      {"Device",
       "device-gpu-node-1.json",
       object_kind::device,
       "Device/gpu-node-1",
       "scheduling.koordinator.sh/v1alpha1",
       "",
       "gpu-node-1",
       "d301c3aa-0000-4000-8000-000000000001",
       "4300",
       {},
       nullptr,
       ""},  // no status
      {"ElasticQuotaProfile",
       "elasticquotaprofile-pool-a.json",
       object_kind::elastic_quota_profile,
       "ElasticQuotaProfile/kube-system/pool-a",
       "quota.koordinator.sh/v1alpha1",
       "kube-system",
       "pool-a",
       "e9a1b2c3-d4e5-4f60-8a7b-9c0d1e2f3a4b",
       "4400",
       {},
       R"({"nodeSelector":{"matchLabels":{"pool":"a"}},"quotaName":"pool-a-root",)"
       R"("resourceRatio":"0.9"})",
       ""},
  };
}

void expect_recorded(const wire::Envelope* e, const recorded_case& c, const json& obj,
                     bool deleted) {
  expect_header(e, wire::EntityKind::Object, c.entity_key);
  ASSERT_EQ(e->payload_type(), P::ObjectObserved);
  EXPECT_EQ(e->compat_version(), 4);  // a v3 reader says "upgrade colony"
  const auto* o = e->payload_as_ObjectObserved();
  EXPECT_EQ(str(o->api_version()), c.api_version);
  EXPECT_EQ(str(o->kind()), to_string(c.kind));
  EXPECT_EQ(str(o->namespace_()), c.ns);
  EXPECT_EQ(str(o->name()), c.object_name);
  EXPECT_EQ(str(o->uid()), c.uid);
  EXPECT_EQ(str(o->resource_version()), c.resource_version);
  EXPECT_EQ(kvs(o->labels()), c.labels);
  EXPECT_EQ(o->deleted(), deleted);
  if (deleted) {
    EXPECT_EQ(str(o->spec_json()), "");
    EXPECT_EQ(str(o->status_json()), "");
    return;
  }
  const std::string spec = str(o->spec_json());
  if (c.spec != nullptr) {
    EXPECT_EQ(spec, c.spec);
  } else {
    EXPECT_EQ(json::parse(spec), obj.at("spec"));
    EXPECT_EQ(spec.find_first_of(" \n"), std::string::npos) << "compact: " << spec;
  }
  EXPECT_EQ(str(o->status_json()), c.status);
}

// Each recorded kind: ADDED, a MODIFIED of its status (or spec), a MODIFIED of metadata the record
// does not carry (nothing), and DELETED, all keyed <Kind>/[<namespace>/]<name> under Object.
TEST(KubeTranslate, RecordedKindsBecomeObjectObserved) {
  const auto cases = recorded_cases();
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const json obj = load(c.file);
    const auto info = recorded_kind(c.kind);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->api_version, c.api_version) << "the fixture's apiVersion is the CRD's";
    EXPECT_EQ(info->namespaced, !c.ns.empty());
    EXPECT_EQ(recorded_key(c.kind, c.ns, c.object_name), c.entity_key);

    auto added = translate_added(c.kind, obj, t0);
    ASSERT_TRUE(added.has_value()) << added.error().describe();
    const auto a = decode_all(*added);
    ASSERT_EQ(a.size(), 1u);
    expect_recorded(a[0], c, obj, false);

    // A LIST item may come without apiVersion and kind: the CRD's are recorded.
    json bare = obj;
    bare.erase("apiVersion");
    bare.erase("kind");
    auto from_list = translate_added(c.kind, bare, t0);
    ASSERT_TRUE(from_list.has_value()) << from_list.error().describe();
    EXPECT_EQ(*from_list, *added);

    // A status written (a new resourceVersion): the new object, recorded whole.
    json next = obj;
    next["metadata"]["resourceVersion"] = "9999";
    next["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
    auto modified = translate_modified(c.kind, obj, next, t0);
    ASSERT_TRUE(modified.has_value()) << modified.error().describe();
    const auto m = decode_all(*modified);
    ASSERT_EQ(m.size(), 1u);
    const auto* mo = m[0]->payload_as_ObjectObserved();
    EXPECT_EQ(str(mo->resource_version()), "9999");
    EXPECT_EQ(json::parse(str(mo->status_json())), next.at("status"));
    EXPECT_FALSE(mo->deleted());

    // Only metadata the record does not carry: no event.
    json noise = obj;
    noise["metadata"]["resourceVersion"] = "10000";
    noise["metadata"]["annotations"]["colony.test/touched"] = "1";
    noise["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
    auto quiet = translate_modified(c.kind, obj, noise, t0);
    ASSERT_TRUE(quiet.has_value()) << quiet.error().describe();
    EXPECT_TRUE(quiet->empty());

    auto deleted = translate_deleted(c.kind, obj, t0);
    ASSERT_TRUE(deleted.has_value()) << deleted.error().describe();
    const auto d = decode_all(*deleted);
    ASSERT_EQ(d.size(), 1u);
    expect_recorded(d[0], c, obj, true);
  }
  // The kinds with a translation of their own are not recorded ones.
  for (auto k : {object_kind::node, object_kind::pod, object_kind::priority_class,
                 object_kind::config_map, object_kind::cluster_colocation_profile,
                 object_kind::elastic_quota, object_kind::node_metric, object_kind::node_slo})
    EXPECT_FALSE(recorded_kind(k).has_value()) << to_string(k);
}

// A refused recorded object's ObjectRefused is keyed to the Object entity its observations have
// (so `colony log dump --entity object/KEY` shows it beside them), by the CRD's scope.
TEST(KubeTranslate, RecordedKindRefusalsAreKeyedToTheirObject) {
  struct keyed_case {
    const char* file;
    object_kind kind;
    std::function<void(json&)> edit;
    std::string entity_key, field;
  };
  const std::vector<keyed_case> cases = {
      {"podgroup-train-1.json", object_kind::pod_group, [](json& o) { o["metadata"].erase("uid"); },
       "PodGroup/ml/train-1", "metadata.uid"},
      {"device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["metadata"]["namespace"] = "default"; }, "Device/gpu-node-1",
       "metadata.namespace"},
  };
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    json obj = load(c.file);
    c.edit(obj);
    auto r = translate_added(c.kind, obj, t0);
    ASSERT_FALSE(r.has_value());
    const event_list recs{translate_refused(c.kind, obj, r.error(), t0)};
    const auto envs = decode_all(recs);
    ASSERT_EQ(envs.size(), 1u);
    expect_header(envs[0], wire::EntityKind::Object, c.entity_key);
    EXPECT_EQ(str(envs[0]->payload_as_ObjectRefused()->field()), c.field);
    EXPECT_EQ(str(envs[0]->payload_as_ObjectRefused()->api_kind()), to_string(c.kind));
  }
}

// ---- kinds and cases the schema has no event for -----------------------------------------

struct gap_case {
  const char* name;
  const char* file;
  object_kind kind;
  bool deleted;
  std::string where;
  std::string message_start;
};

TEST(KubeTranslate, UntranslatedKindsAreRefusedAsNotYetTranslated) {
  const std::vector<gap_case> cases = {
      {"NodeSLO", "nodeslo-gpu-node-1.json", object_kind::node_slo, false, "NodeSLO gpu-node-1",
       "NodeSLO is not yet translated: "},
      {"PodFirstSeenBound", "pod-bound-default-scheduler.json", object_kind::pod, false,
       "Pod kube-system/dns-abc12",
       R"(Pod is not yet translated: first seen already bound to node "cpu-node-7")"},
      {"NodeMetricDeleted", "nodemetric-gpu-node-1.json", object_kind::node_metric, true,
       "NodeMetric gpu-node-1", "NodeMetric is not yet translated: DELETED"},
  };
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const json obj = load(c.file);
    auto r = c.deleted ? translate_deleted(c.kind, obj, t0) : translate_added(c.kind, obj, t0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, errc::failed_precondition);
    EXPECT_EQ(r.error().where, c.where);
    EXPECT_EQ(r.error().message.rfind(c.message_start, 0), 0u) << r.error().message;
  }
}

TEST(KubeTranslate, KindNamesRoundTrip) {
  const std::vector<object_kind> all = {object_kind::node,
                                        object_kind::pod,
                                        object_kind::priority_class,
                                        object_kind::config_map,
                                        object_kind::cluster_colocation_profile,
                                        object_kind::elastic_quota,
                                        object_kind::node_metric,
                                        object_kind::elastic_quota_profile,
                                        object_kind::reservation,
                                        object_kind::pod_migration_job,
                                        object_kind::pod_group,
                                        object_kind::device,
                                        object_kind::node_resource_topology,
                                        object_kind::node_slo};
  ASSERT_EQ(all.size(), 14u);
  for (auto k : all) {
    auto p = parse_object_kind(to_string(k));
    ASSERT_TRUE(p.has_value()) << to_string(k);
    EXPECT_EQ(*p, k);
  }
  auto bad = parse_object_kind("Deployment");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, errc::invalid_input);
}

// ---- change_kind: which MODIFIEDs are worth an event ---------------------------------------

struct change_case {
  const char* name;
  const char* file;
  object_kind kind;
  std::function<void(json&)> edit;
  change expected;
  translate_options options = {};
};

TEST(KubeTranslate, ChangeKindIgnoresVersionAndHeartbeatOnlyChanges) {
  auto rv = [](json& o) { o["metadata"]["resourceVersion"] = "424242"; };
  translate_options other_config;  // the file's ConfigMap is then not the slo-controller's
  other_config.slo_config_name = "another-config";
  const std::vector<change_case> cases = {
      {"NodeResourceVersion", "node-gpu-batch.json", object_kind::node, rv, change::none},
      {"NodeHeartbeat", "node-gpu-batch.json", object_kind::node,
       [](json& o) {
         for (auto& c : o["status"]["conditions"]) c["lastHeartbeatTime"] = "2026-01-01T00:09:10Z";
         o["metadata"]["managedFields"][0]["time"] = "2026-01-01T00:09:10Z";
       },
       change::none},
      {"NodeImages", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o["status"]["images"] = json::array(); }, change::none},
      {"NodeNotReady", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o["status"]["conditions"][3]["status"] = "Unknown"; }, change::condition},
      {"NodeCordoned", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o["spec"]["unschedulable"] = true; }, change::condition},
      {"NodeLabel", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o["metadata"]["labels"]["pool"] = "a"; }, change::relevant},
      {"NodeAllocatable", "node-gpu-batch.json", object_kind::node,
       [](json& o) { o["status"]["allocatable"]["cpu"] = "95"; }, change::relevant},
      {"NodeBatchWrittenBack", "node-gpu-batch.json", object_kind::node,
       [](json& o) {
         o["status"]["allocatable"]["kubernetes.io/batch-cpu"] = "42k";
         o["status"]["capacity"]["kubernetes.io/batch-cpu"] = "42k";
       },
       change::none},
      {"PodResourceVersion", "pod-web-init-overhead.json", object_kind::pod, rv, change::none},
      {"PodConditions", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["status"]["conditions"][0]["message"] = "0/5 nodes are available"; },
       change::none},
      {"PodLastApplied", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) {
         o["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}";
       },
       change::none},
      {"PodLabel", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["metadata"]["labels"]["tier"] = "front"; }, change::relevant},
      {"PodBound", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["spec"]["nodeName"] = "gpu-node-1"; }, change::relevant},
      {"PodPhase", "pod-web-init-overhead.json", object_kind::pod,
       [](json& o) { o["status"]["phase"] = "Running"; }, change::relevant},
      {"PriorityClassDescription", "priorityclass-koord-batch.json", object_kind::priority_class,
       [](json& o) { o["description"] = "batch"; }, change::none},
      {"PriorityClassValue", "priorityclass-koord-batch.json", object_kind::priority_class,
       [](json& o) { o["value"] = 5100; }, change::relevant},
      {"ConfigMapLabels", "configmap-slo-controller-config.json", object_kind::config_map,
       [](json& o) { o["metadata"]["labels"]["x"] = "y"; }, change::none},
      {"ConfigMapData", "configmap-slo-controller-config.json", object_kind::config_map,
       [](json& o) { o["data"]["cpu-burst-config"] = "{}"; }, change::relevant},
      {"OtherConfigMapData", "configmap-slo-controller-config.json", object_kind::config_map,
       [](json& o) { o["data"]["cpu-burst-config"] = "{}"; }, change::none, other_config},
      {"ProfileStatus", "clustercolocationprofile-batch-jobs.json",
       object_kind::cluster_colocation_profile,
       [](json& o) {
         o["status"]["x"] = 1;
         o["metadata"]["generation"] = 3;
       },
       change::none},
      {"ProfileSpec", "clustercolocationprofile-batch-jobs.json",
       object_kind::cluster_colocation_profile,
       [](json& o) { o["spec"]["koordinatorPriority"] = 1001; }, change::relevant},
      {"QuotaRuntimeWriteBack", "elasticquota-team-a.json", object_kind::elastic_quota,
       [](json& o) {
         o["metadata"]["annotations"]["quota.scheduling.koordinator.sh/runtime"] =
             R"({"cpu":"20"})";
         o["status"]["used"]["cpu"] = "20";
       },
       change::none},
      {"QuotaMax", "elasticquota-team-a.json", object_kind::elastic_quota,
       [](json& o) { o["spec"]["max"]["cpu"] = "48"; }, change::relevant},
      {"QuotaSharedWeight", "elasticquota-team-a.json", object_kind::elastic_quota,
       [](json& o) {
         o["metadata"]["annotations"]["quota.scheduling.koordinator.sh/shared-weight"] =
             R"({"cpu":"20"})";
       },
       change::relevant},
      {"NodeMetricResourceVersion", "nodemetric-gpu-node-1.json", object_kind::node_metric, rv,
       change::none},
      {"NodeMetricReport", "nodemetric-gpu-node-1.json", object_kind::node_metric,
       [](json& o) { o["status"]["updateTime"] = "2026-01-01T00:05:00Z"; }, change::relevant},
      {"DeviceResourceVersion", "device-gpu-node-1.json", object_kind::device, rv, change::none},
      {"DeviceSpec", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["spec"]["devices"][0]["health"] = false; }, change::relevant},
      // Recorded kinds: what ObjectObserved carries (labels, spec, status, uid) is news;
      // metadata it does not carry is not.
      {"DeviceStatus", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["status"]["allocations"] = json::array(); }, change::relevant},
      {"DeviceAnnotationAndManagedFields", "device-gpu-node-1.json", object_kind::device,
       [](json& o) {
         o["metadata"]["annotations"]["note"] = "x";
         o["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
         o["metadata"]["resourceVersion"] = "4302";
       },
       change::none},
      // A Reservation's status is the scheduler's write coming back (translate_reservation_test).
      {"ReservationStatus", "reservation-pmj-1.json", object_kind::reservation,
       [](json& o) { o["status"]["phase"] = "Succeeded"; }, change::none},
      {"ReservationSpec", "reservation-pmj-1.json", object_kind::reservation,
       [](json& o) { o["spec"]["ttl"] = "10m"; }, change::relevant},
      {"PodGroupLabel", "podgroup-train-1.json", object_kind::pod_group,
       [](json& o) { o["metadata"]["labels"]["team"] = "vision"; }, change::relevant},
      {"PodMigrationJobDeletionPending", "podmigrationjob-0b6f.json",
       object_kind::pod_migration_job,
       [](json& o) {
         o["metadata"]["deletionTimestamp"] = "2026-01-01T00:06:00Z";
         o["metadata"]["finalizers"] = json::array({"koordinator.sh/pmj"});
         o["metadata"]["generation"] = 2;
       },
       change::none},
      {"DeviceRecreated", "device-gpu-node-1.json", object_kind::device,
       [](json& o) { o["metadata"]["uid"] = "another-uid"; }, change::relevant},
  };
  ASSERT_EQ(cases.size(), 35u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const json before = load(c.file);
    json after = before;
    c.edit(after);
    EXPECT_EQ(to_string(change_kind(c.kind, before, after, c.options)), to_string(c.expected));
  }
  // Another slo-controller writes the batch resources: then they are news.
  translate_options foreign;
  foreign.colocation_written_by_colony = false;
  json before = load("node-gpu-batch.json"), after = before;
  after["status"]["allocatable"]["kubernetes.io/batch-cpu"] = "42k";
  EXPECT_EQ(change_kind(object_kind::node, before, after, foreign), change::relevant);
}

// ---- MODIFIED and DELETED over a pod's and a node's life --------------------------------

struct step_case {
  const char* name;
  const char* file;
  object_kind kind;
  std::function<void(json&)> before;  // the old object (from the file)
  std::function<void(json&)> after;   // the new object (from the old one)
  bool deleted;                       // translate_deleted(after) instead of modified
  std::vector<P> types;
  std::function<void(const std::vector<const wire::Envelope*>&)> check;
  translate_options options;
};

void bind(json& o) { o["spec"]["nodeName"] = "gpu-node-1"; }
void run(json& o) {
  bind(o);
  o["status"]["phase"] = "Running";
}
void nothing(json&) {}
void foreign(json& o) { o["spec"]["schedulerName"] = "default-scheduler"; }

TEST(KubeTranslate, ModifiedAndDeletedFollowThePodAndNodeLifecycle) {
  translate_options everyone;
  everyone.scheduler_names.clear();
  const std::vector<step_case> cases = {
      {"ColonyBindingComesBack",
       "pod-web-init-overhead.json",
       object_kind::pod,
       nothing,
       bind,
       false,
       {},
       {},
       {}},
      {"KubeletStartsIt",
       "pod-web-init-overhead.json",
       object_kind::pod,
       bind,
       run,
       false,
       {P::PodStarted},
       [](const auto& e) {
         expect_header(e[0], wire::EntityKind::Pod, "default/web-1");
         EXPECT_EQ(str(e[0]->payload_as_PodStarted()->pod()), "default/web-1");
         EXPECT_EQ(str(e[0]->payload_as_PodStarted()->node()), "gpu-node-1");
       },
       {}},
      {"RunningAgainIsNotNews",
       "pod-web-init-overhead.json",
       object_kind::pod,
       run,
       [](json& o) { o["metadata"]["labels"]["x"] = "y"; },
       false,
       {},
       {},
       {}},
      {"Succeeded",
       "pod-web-init-overhead.json",
       object_kind::pod,
       run,
       [](json& o) { o["status"]["phase"] = "Succeeded"; },
       false,
       {P::PodFinished},
       [](const auto& e) {
         const auto* f = e[0]->payload_as_PodFinished();
         EXPECT_EQ(f->phase(), wire::PodPhase::Succeeded);
         EXPECT_EQ(str(f->node()), "gpu-node-1");
       },
       {}},
      {"Failed",
       "pod-web-init-overhead.json",
       object_kind::pod,
       run,
       [](json& o) { o["status"]["phase"] = "Failed"; },
       false,
       {P::PodFinished},
       [](const auto& e) {
         EXPECT_EQ(e[0]->payload_as_PodFinished()->phase(), wire::PodPhase::Failed);
       },
       {}},
      {"DeletedAfterSucceeding",
       "pod-web-init-overhead.json",
       object_kind::pod,
       nothing,
       [](json& o) {
         run(o);
         o["status"]["phase"] = "Succeeded";
       },
       true,
       {},
       {},
       {}},
      {"DeletedWhileRunning",
       "pod-web-init-overhead.json",
       object_kind::pod,
       nothing,
       run,
       true,
       {P::PodFinished},
       [](const auto& e) {
         EXPECT_EQ(e[0]->payload_as_PodFinished()->phase(), wire::PodPhase::Deleted);
         EXPECT_EQ(str(e[0]->payload_as_PodFinished()->node()), "gpu-node-1");
       },
       {}},
      {"PendingPodRelabelled",
       "pod-web-init-overhead.json",
       object_kind::pod,
       nothing,
       [](json& o) { o["metadata"]["labels"]["tier"] = "front"; },
       false,
       {P::PodSubmitted},
       [](const auto& e) { EXPECT_EQ(kvs(e[0]->payload_as_PodSubmitted()->labels()).size(), 6u); },
       {}},
      {"PendingPodStatusOnly",
       "pod-web-init-overhead.json",
       object_kind::pod,
       nothing,
       [](json& o) { o["status"]["conditions"][0]["message"] = "0/9 nodes are available"; },
       false,
       {},
       {},
       {}},
      {"ForeignPodBoundElsewhere",
       "pod-web-init-overhead.json",
       object_kind::pod,
       foreign,
       bind,
       false,
       {},
       {},
       {}},  // checked below: an error
      {"ForeignPodDeleted",
       "pod-web-init-overhead.json",
       object_kind::pod,
       nothing,
       foreign,
       true,
       {},
       {},
       {}},
      {"EveryPodWhenNoSchedulerNamed",
       "pod-web-init-overhead.json",
       object_kind::pod,
       nothing,
       [](json& o) {
         foreign(o);
         o["metadata"]["labels"]["x"] = "y";
       },
       false,
       {P::PodSubmitted},
       [](const auto& e) {
         EXPECT_EQ(str(e[0]->payload_as_PodSubmitted()->scheduler_name()), "default-scheduler");
       },
       everyone},
      {"NodeGoesNotReady",
       "node-gpu-batch.json",
       object_kind::node,
       nothing,
       [](json& o) {
         o["status"]["conditions"][3]["status"] = "Unknown";
         o["status"]["conditions"][3]["reason"] = "NodeStatusUnknown";
       },
       false,
       {P::NodeConditionChanged},
       [](const auto& e) {
         const auto* c = e[0]->payload_as_NodeConditionChanged();
         EXPECT_FALSE(c->ready());
         EXPECT_FALSE(c->unschedulable());
         EXPECT_EQ(str(c->reason()), "NodeStatusUnknown");
       },
       {}},
      {"NotReadyNodeRelabelled",
       "node-not-ready.json",
       object_kind::node,
       nothing,
       [](json& o) { o["metadata"]["labels"]["pool"] = "b"; },
       false,
       {P::NodeRegistered, P::NodeConditionChanged},
       [](const auto& e) {
         EXPECT_EQ(kvs(e[0]->payload_as_NodeRegistered()->labels()).size(), 3u);
         EXPECT_FALSE(e[1]->payload_as_NodeConditionChanged()->ready());
       },
       {}},
      {"NodeHeartbeatOnly",
       "node-gpu-batch.json",
       object_kind::node,
       nothing,
       [](json& o) { o["status"]["conditions"][3]["lastHeartbeatTime"] = "2026-01-01T00:09:00Z"; },
       false,
       {},
       {},
       {}},
  };
  ASSERT_EQ(cases.size(), 15u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json old_object = load(c.file);
    c.before(old_object);
    json new_object = old_object;
    c.after(new_object);
    auto r = c.deleted ? translate_deleted(c.kind, new_object, t0, c.options)
                       : translate_modified(c.kind, old_object, new_object, t0, c.options);
    if (std::string_view(c.name) == "ForeignPodBoundElsewhere") {
      ASSERT_FALSE(r.has_value());
      EXPECT_EQ(r.error().code, errc::failed_precondition);
      EXPECT_EQ(r.error().where, "Pod default/web-1");
      EXPECT_NE(r.error().message.find("bound by another scheduler"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    const auto envs = decode_all(*r);
    ASSERT_EQ(envs.size(), c.types.size());
    for (std::size_t i = 0; i < envs.size(); ++i) EXPECT_EQ(envs[i]->payload_type(), c.types[i]);
    if (c.check) c.check(envs);
  }
}

TEST(KubeTranslate, AddedPodsOnlyWhenColonySchedulesThemAndTheyAreLive) {
  json foreign_pending = load("pod-web-init-overhead.json");
  foreign(foreign_pending);
  json finished = load("pod-web-init-overhead.json");
  finished["status"]["phase"] = "Succeeded";
  json metric_unreported = load("nodemetric-gpu-node-1.json");
  metric_unreported.erase("status");
  json other_config_map = load("configmap-slo-controller-config.json");
  other_config_map["metadata"]["namespace"] = "default";
  const std::vector<std::pair<object_kind, json>> quiet = {
      {object_kind::pod, foreign_pending},
      {object_kind::pod, finished},
      {object_kind::node_metric, metric_unreported},
      {object_kind::config_map, other_config_map}};
  ASSERT_EQ(quiet.size(), 4u);
  for (const auto& [kind, obj] : quiet) {
    auto r = translate_added(kind, obj, t0);
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    EXPECT_TRUE(r->empty()) << to_string(kind);
  }
}

// ---- robustness: any field of any type gives an event list or an error value ---------------

void pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) pointers(v, at / k, out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) pointers(j[i], at / i, out);
  }
}

TEST(KubeTranslate, EveryFieldOfEveryTypeIsAValueNeverAnException) {
  const std::vector<std::pair<const char*, object_kind>> files = {
      {"node-gpu-batch.json", object_kind::node},
      {"pod-web-init-overhead.json", object_kind::pod},
      {"pod-gpu-affinity.json", object_kind::pod},
      {"pod-level-resources.json", object_kind::pod},
      {"priorityclass-koord-batch.json", object_kind::priority_class},
      {"configmap-slo-controller-config.json", object_kind::config_map},
      {"clustercolocationprofile-batch-jobs.json", object_kind::cluster_colocation_profile},
      {"elasticquota-team-a.json", object_kind::elastic_quota},
      {"nodemetric-gpu-node-1.json", object_kind::node_metric},
      {"reservation-pmj-1.json", object_kind::reservation},
      {"podmigrationjob-0b6f.json", object_kind::pod_migration_job},
      {"podgroup-train-1.json", object_kind::pod_group},
      {"device-gpu-node-1.json", object_kind::device},
      {"elasticquotaprofile-pool-a.json", object_kind::elastic_quota_profile},
      {"noderesourcetopology-numa-node-1.json", object_kind::node_resource_topology}};
  ASSERT_EQ(files.size(), 15u);
  const std::vector<json> replacements = {json(),         json(7),     json(-1),
                                          json("x"),      json(true),  json::array(),
                                          json::object(), json(1e300), json("-5")};
  std::size_t tried = 0;
  for (const auto& [file, kind] : files) {
    const json base = load(file);
    std::vector<json::json_pointer> at;
    pointers(base, json::json_pointer(), at);
    for (const auto& ptr : at) {
      for (const auto& rep : replacements) {
        json obj = base;
        obj[ptr] = rep;
        SCOPED_TRACE(std::string(file) + " " + ptr.to_string() + " = " + rep.dump());
        ++tried;
        result<event_list> results[3] = {translate_added(kind, obj, t0),
                                         translate_modified(kind, base, obj, t0),
                                         translate_deleted(kind, obj, t0)};
        for (const auto& r : results) {
          if (r) continue;
          // Refused by a check of ours, not by an exception caught at the boundary.
          EXPECT_TRUE(r.error().code == errc::invalid_input ||
                      r.error().code == errc::failed_precondition)
              << r.error().describe();
          EXPECT_EQ(r.error().message.rfind("[json.exception", 0), std::string::npos)
              << r.error().describe();
        }
        (void)change_kind(kind, base, obj);
      }
    }
  }
  EXPECT_GT(tried, 5000u);
}

// ---- a koordlet's view (translate_options::koordlet_node) ----------------------------------

// A koordlet observes the pods bound to its node, whoever bound them (Koordinator's
// statesinformer, pkg/koordlet/statesinformer/impl/states_pods.go): the pod's spec, then the
// binding as an observation (no proposal); pods of other nodes are nothing; its end a PodFinished.
TEST(KubeTranslate, AKoordletObservesThePodsBoundToItsNode) {
  translate_options mine;
  mine.koordlet_node = "cpu-node-7";
  translate_options other;
  other.koordlet_node = "cpu-node-8";
  const json pod = load("pod-bound-default-scheduler.json");

  auto added = translate_added(object_kind::pod, pod, t0, mine);
  ASSERT_TRUE(added.has_value()) << added.error().describe();
  const auto e = decode_all(*added);
  ASSERT_EQ(e.size(), 2u);
  expect_header(e[0], wire::EntityKind::Pod, "kube-system/dns-abc12");
  ASSERT_EQ(e[0]->payload_type(), P::PodSubmitted);
  EXPECT_EQ(str(e[0]->payload_as_PodSubmitted()->uid()), "8f14e45f-ceea-467a-9575-1b2f3c4d5e6f");
  EXPECT_EQ(e[0]->payload_as_PodSubmitted()->kube_qos(), wire::KubeQoSClass::Burstable);
  expect_header(e[1], wire::EntityKind::Pod, "kube-system/dns-abc12");
  ASSERT_EQ(e[1]->payload_type(), P::PodScheduled);
  const auto* s = e[1]->payload_as_PodScheduled();
  EXPECT_EQ(str(s->pod()), "kube-system/dns-abc12");
  EXPECT_EQ(str(s->node()), "cpu-node-7");
  EXPECT_EQ(s->proposal_offset(), -1);
  EXPECT_EQ(e[1]->causation(), -1);
  EXPECT_EQ(str(s->scheduler()), "default-scheduler");
  EXPECT_EQ(to_resource_list(s->requests()),
            to_resource_list(e[0]->payload_as_PodSubmitted()->requests()));

  // Another node's koordlet: nothing (no refusal either).
  auto elsewhere = translate_added(object_kind::pod, pod, t0, other);
  ASSERT_TRUE(elsewhere.has_value()) << elsewhere.error().describe();
  EXPECT_TRUE(elsewhere->empty());

  // A phase change alone carries nothing PodSubmitted has; a label change is a new spec.
  json pending = pod;
  pending["status"]["phase"] = "Pending";
  auto phase_only = translate_modified(object_kind::pod, pending, pod, t0, mine);
  ASSERT_TRUE(phase_only.has_value()) << phase_only.error().describe();
  EXPECT_TRUE(phase_only->empty());
  json relabelled = pod;
  relabelled["metadata"]["labels"]["koordinator.sh/qosClass"] = "LS";
  auto respec = translate_modified(object_kind::pod, pod, relabelled, t0, mine);
  ASSERT_TRUE(respec.has_value()) << respec.error().describe();
  const auto r = decode_all(*respec);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]->payload_type(), P::PodSubmitted);

  // Bound here since the last version: spec and binding.
  json unbound = pod;
  unbound["spec"].erase("nodeName");
  auto bound_now = translate_modified(object_kind::pod, unbound, pod, t0, mine);
  ASSERT_TRUE(bound_now.has_value()) << bound_now.error().describe();
  ASSERT_EQ(bound_now->size(), 2u);

  // Its end: Succeeded, or deleted.
  json done = pod;
  done["status"]["phase"] = "Succeeded";
  auto finished = translate_modified(object_kind::pod, pod, done, t0, mine);
  ASSERT_TRUE(finished.has_value()) << finished.error().describe();
  const auto f = decode_all(*finished);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0]->payload_type(), P::PodFinished);
  EXPECT_EQ(f[0]->payload_as_PodFinished()->phase(), wire::PodPhase::Succeeded);
  auto deleted = translate_deleted(object_kind::pod, pod, t0, mine);
  ASSERT_TRUE(deleted.has_value()) << deleted.error().describe();
  const auto d = decode_all(*deleted);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0]->payload_as_PodFinished()->phase(), wire::PodPhase::Deleted);
  EXPECT_EQ(str(d[0]->payload_as_PodFinished()->node()), "cpu-node-7");
  auto deleted_elsewhere = translate_deleted(object_kind::pod, pod, t0, other);
  ASSERT_TRUE(deleted_elsewhere.has_value());
  EXPECT_TRUE(deleted_elsewhere->empty());
}

// A koordlet reads its NodeSLO back as the slo-controller's NodeSLOUpdated, keyed to the node;
// colony run (no koordlet_node) still refuses it as not translated.
TEST(KubeTranslate, AKoordletReadsItsNodeSloAsNodeSloUpdated) {
  translate_options mine;
  mine.koordlet_node = "gpu-node-1";
  const json slo = load("nodeslo-gpu-node-1.json");
  auto added = translate_added(object_kind::node_slo, slo, t0, mine);
  ASSERT_TRUE(added.has_value()) << added.error().describe();
  const auto e = decode_all(*added);
  ASSERT_EQ(e.size(), 1u);
  expect_header(e[0], wire::EntityKind::Node, "gpu-node-1");
  ASSERT_EQ(e[0]->payload_type(), P::NodeSLOUpdated);
  EXPECT_EQ(json::parse(str(e[0]->payload_as_NodeSLOUpdated()->spec_json())), slo["spec"]);
  // Only a spec change is news; a deletion leaves the strategies in force.
  json same = slo;
  same["metadata"]["resourceVersion"] = "4501";
  auto unchanged = translate_modified(object_kind::node_slo, slo, same, t0, mine);
  ASSERT_TRUE(unchanged.has_value());
  EXPECT_TRUE(unchanged->empty());
  json changed = slo;
  changed["spec"]["resourceUsedThresholdWithBE"]["memoryEvictThresholdPercent"] = 60;
  auto modified = translate_modified(object_kind::node_slo, slo, changed, t0, mine);
  ASSERT_TRUE(modified.has_value());
  EXPECT_EQ(modified->size(), 1u);
  auto deleted = translate_deleted(object_kind::node_slo, slo, t0, mine);
  ASSERT_TRUE(deleted.has_value());
  EXPECT_TRUE(deleted->empty());
  auto run = translate_added(object_kind::node_slo, slo, t0);
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.error().code, errc::failed_precondition);
}

}  // namespace
}  // namespace colony::kube::testing
