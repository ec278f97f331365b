// quota_upserted (quota_spec -> QuotaUpserted) against spec_of (QuotaUpserted -> quota_spec):
// an ElasticQuota loaded from CRD YAML survives the trip through the event unchanged, so a
// producer that publishes its YAML quotas as events (colony sim) books what the YAML says.
#include <gtest/gtest.h>

#include "actors/quota/actor/quota_events.hpp"
#include "actors/quota/webhook.hpp"
#include "messages/codec.hpp"

namespace colony {
namespace {

constexpr std::string_view quotas_yaml = R"(apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata:
  name: team-a
  namespace: team-a
  labels:
    quota.scheduling.koordinator.sh/parent: org
    quota.scheduling.koordinator.sh/allow-lent-resource: "false"
  annotations:
    quota.scheduling.koordinator.sh/shared-weight: '{"cpu":"2","memory":"4Gi"}'
    quota.scheduling.koordinator.sh/namespaces: '["ns-1","ns-2"]'
spec:
  min: {cpu: 500m, memory: 1Gi}
  max: {cpu: 4, memory: 8Gi, nvidia.com/gpu: 2}
---
apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata:
  name: org
  labels:
    quota.scheduling.koordinator.sh/is-parent: "true"
spec:
  min: {cpu: "0"}
  max: {cpu: "10", memory: 16Gi}
)";

TEST(QuotaUpserted, SpecSurvivesTheEvent) {
  auto loaded = quota::load_elastic_quotas_yaml(quotas_yaml, "q.yaml");
  ASSERT_TRUE(loaded) << loaded.error().describe();
  ASSERT_EQ(loaded->quotas.size(), 2u);
  for (const auto& spec : loaded->quotas) {
    messages::event_builder b;
    auto payload = quota::quota_upserted(b, spec);
    auto bytes = b.finish(
        messages::header{event_time{0}, wire::EntityKind::ElasticQuota, spec.name, -1, "test"},
        payload);
    auto d = messages::decode(bytes, "test");
    ASSERT_TRUE(d) << d.error().describe();
    const auto* e = d->envelope->payload_as_QuotaUpserted();
    ASSERT_NE(e, nullptr);
    const quota::quota_spec back = quota::spec_of(*e);
    EXPECT_EQ(back.name, spec.name);
    EXPECT_EQ(back.namespace_name, spec.namespace_name);
    EXPECT_EQ(back.parent, spec.parent);
    EXPECT_EQ(back.is_parent, spec.is_parent);
    EXPECT_EQ(back.allow_lent_resource, spec.allow_lent_resource);
    EXPECT_EQ(back.min, spec.min);
    EXPECT_EQ(back.max, spec.max);
    EXPECT_EQ(back.min_keys, spec.min_keys) << spec.name;
    EXPECT_EQ(back.max_keys, spec.max_keys) << spec.name;
    EXPECT_EQ(back.shared_weight, spec.shared_weight);
    EXPECT_EQ(back.namespaces, spec.namespaces);
    EXPECT_EQ(back.labels, spec.labels);
    EXPECT_EQ(back.annotations, spec.annotations);
  }
  // The two quotas differ, so the comparison above compares something.
  EXPECT_NE(loaded->quotas[0].max, loaded->quotas[1].max);
  EXPECT_FALSE(loaded->quotas[0].allow_lent_resource);
  EXPECT_TRUE(loaded->quotas[1].is_parent);
}

}  // namespace
}  // namespace colony
