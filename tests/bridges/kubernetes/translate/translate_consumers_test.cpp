// The events the translation writes, read by the code that consumes them in a log: the
// admission component (ClusterColocationProfile, PriorityClass, PodSubmitted -> PodMutated),
// the slo-controller's config reader, the quota book's spec_of and the entity folds. A
// translation the components cannot read would pass translate_test.cpp and still be useless.
#include "actors/admission/actor/colocation_profile_component.hpp"
#include "actors/entities/entities.hpp"
#include "actors/quota/actor/quota_events.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "messages/names.hpp"
#include "tests/bridges/kubernetes/translate/translate_fixtures.hpp"

namespace colony::kube::testing {
namespace {

constexpr std::int64_t Gi = std::int64_t{1} << 30;

event_list added(object_kind kind, const json& obj) {
  auto r = translate_added(kind, obj, t0);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
  return r ? *r : event_list{};
}

TEST(KubeTranslateConsumers, AdmissionReadsProfilesPriorityClassesAndPods) {
  admission_actor::colocation_profile_component webhook({}, {});
  std::vector<messages::byte_buffer> out;
  // The profile without its namespaceSelector: the component has no namespace labels to match.
  json profile = load("clustercolocationprofile-batch-jobs.json");
  profile["spec"].erase("namespaceSelector");
  const auto pe = added(object_kind::cluster_colocation_profile, profile);
  const auto pc = added(object_kind::priority_class, load("priorityclass-koord-batch.json"));
  for (const auto* env : decode_all(pe)) webhook.on_event(*env, out);
  for (const auto* env : decode_all(pc)) webhook.on_event(*env, out);
  EXPECT_TRUE(webhook.config_errors().empty()) << webhook.config_errors().front().describe();
  ASSERT_NE(webhook.profiles().find("batch-jobs"), nullptr);
  EXPECT_EQ(webhook.profiles().find("batch-jobs")->qos, qos_class::be);
  ASSERT_EQ(webhook.priority_classes().count("koord-batch"), 1u);
  EXPECT_EQ(webhook.priority_classes().find("koord-batch")->second.value, 5000);
  EXPECT_TRUE(out.empty());

  // A pod the profile selects: submitted by the bridge, mutated by the webhook into a BE
  // koord-batch pod with batch resources.
  json pod = load("pod-gpu-affinity.json");
  pod["metadata"]["labels"]["koordinator.sh/enable-colocation"] = "true";
  pod["spec"]["containers"][0]["resources"]["requests"].erase("nvidia.com/gpu");
  pod["spec"]["containers"][0]["resources"]["limits"].erase("nvidia.com/gpu");
  const auto ps = added(object_kind::pod, pod);
  for (const auto* env : decode_all(ps)) webhook.on_event(*env, out);
  ASSERT_EQ(out.size(), 1u);
  auto m = messages::decode(out[0], "webhook");
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->type(), wire::Payload::PodMutated)
      << str(m->envelope->payload_as_PodRejected()->reason());
  const auto* mut = m->envelope->payload_as_PodMutated();
  EXPECT_EQ(mut->qos_class(), wire::QoSClass::BE);
  EXPECT_EQ(mut->priority_class(), wire::PriorityClass::Batch);
  const resource_list req = messages::to_resource_list(mut->requests());
  EXPECT_EQ(req.cpu_milli, 0);
  EXPECT_EQ(req.batch_cpu_milli, 4000);
  EXPECT_EQ(req.batch_memory_bytes, 16 * Gi);

  // A deleted profile is erased.
  const auto gone = translate_deleted(object_kind::cluster_colocation_profile, profile, t0);
  ASSERT_TRUE(gone.has_value());
  for (const auto* env : decode_all(*gone)) webhook.on_event(*env, out);
  EXPECT_EQ(webhook.profiles().find("batch-jobs"), nullptr);
}

TEST(KubeTranslateConsumers, SloControllerReadsTheConfigMap) {
  const auto ev = added(object_kind::config_map, load("configmap-slo-controller-config.json"));
  const auto envs = decode_all(ev);
  ASSERT_EQ(envs.size(), 1u);
  const auto u = slo_controller::update(
      std::nullopt, messages::to_string_view(envs[0]->payload_as_ConfigUpdated()->spec_json()));
  EXPECT_FALSE(u.error.has_value()) << u.error->describe();
  EXPECT_TRUE(u.rejected_keys.empty());
  ASSERT_TRUE(u.in_force.colocation.has_value());
  ASSERT_TRUE(u.in_force.resource_threshold.has_value());
}

TEST(KubeTranslateConsumers, QuotaBookReadsTheElasticQuota) {
  const auto ev = added(object_kind::elastic_quota, load("elasticquota-team-a.json"));
  const auto envs = decode_all(ev);
  ASSERT_EQ(envs.size(), 1u);
  const quota::quota_spec s = quota::spec_of(*envs[0]->payload_as_QuotaUpserted());
  EXPECT_EQ(s.name, "team-a");
  EXPECT_EQ(s.namespace_name, "team-a");
  EXPECT_EQ(s.parent, names::root_quota_name);
  EXPECT_FALSE(s.is_parent);
  EXPECT_TRUE(s.allow_lent_resource);
  EXPECT_EQ(s.min.cpu_milli, 10000);
  EXPECT_EQ(s.max.memory_bytes, 80 * Gi);
  EXPECT_EQ(s.min.gpu, 200);
  EXPECT_EQ(s.min_keys, 0b1000011);
  EXPECT_EQ(s.shared_weight.cpu_milli, 40000);
  EXPECT_EQ(s.annotations.count(std::string(names::annotation_runtime)), 0u);
}

TEST(KubeTranslateConsumers, EntityFoldsReadNodesPodsAndMetrics) {
  // Each event list is kept in a local: the envelopes point into its bytes.
  const auto node = added(object_kind::node, load("node-gpu-batch.json"));
  const auto not_ready = added(object_kind::node, load("node-not-ready.json"));
  const auto metric = added(object_kind::node_metric, load("nodemetric-gpu-node-1.json"));
  const auto pod = added(object_kind::pod, load("pod-web-init-overhead.json"));

  entities::node_state ready_node, cordoned;
  for (const auto* env : decode_all(node)) entities::apply(ready_node, *env);
  EXPECT_TRUE(ready_node.ready);
  EXPECT_EQ(ready_node.allocatable.cpu_milli, 95500);
  EXPECT_EQ(ready_node.allocatable.gpu, 800);
  for (const auto* env : decode_all(not_ready)) entities::apply(cordoned, *env);
  EXPECT_FALSE(cordoned.ready);
  EXPECT_TRUE(cordoned.unschedulable);

  for (const auto* env : decode_all(metric)) entities::apply(ready_node, *env);
  EXPECT_EQ(ready_node.usage.cpu_milli, 12500);
  EXPECT_EQ(ready_node.metric_time_ms, 1767225840000);

  entities::pod_state p;
  for (const auto* env : decode_all(pod)) entities::apply(p, *env);
  EXPECT_EQ(p.name, "default/web-1");
  EXPECT_EQ(p.requests.cpu_milli, 2250);
  EXPECT_EQ(p.priority, 9100);
}

}  // namespace
}  // namespace colony::kube::testing
