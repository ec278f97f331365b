// colocation_profile_component: envelopes in, PodMutated / PodRejected out. Every emitted value
// is checked against what the pure policy (mutate_pod_on_create + the validating webhook)
// returns for the same pod, plus causation, determinism and configuration handling.
#include "actors/admission/actor/colocation_profile_component.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "actors/admission/profile_loader.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/priority_classes.hpp"
#include "tests/support/resources.hpp"

namespace colony::admission_actor {
namespace {

using colony::testing::cpu_mem;
using colony::testing::feed;
using messages::byte_buffer;
using messages::to_string_view;

constexpr std::string_view profiles_yaml = R"(apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata:
  name: batch
spec:
  selector:
    matchLabels:
      colony.sim/trace-qos: BE
  qosClass: BE
  priorityClassName: koord-batch
  schedulerName: koord-scheduler
  labels:
    colony.test/mutated: "batch"
---
apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata:
  name: online
spec:
  selector:
    matchExpressions:
      - {key: colony.sim/trace-qos, operator: In, values: [LS, Guaranteed]}
  qosClass: LS
  priorityClassName: koord-prod
  schedulerName: koord-scheduler
)";

// koord-batch and koord-prod, then koord-mid.
const std::string priority_classes_yaml =
    std::string(colony::testing::koord_batch_prod_priority_classes_yaml) + R"(---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: koord-mid
value: 7500
)";

// A log in a vector: each event gets the next offset, as the log assigns it.
struct test_log {
  std::vector<byte_buffer> records;
  messages::event_builder b;

  template <class T>
  std::uint64_t append(std::int64_t t, wire::EntityKind kind, std::string_view key,
                       flatbuffers::Offset<T> payload) {
    messages::header h;
    h.time = event_time{t};
    h.kind = kind;
    h.key = key;
    h.source = "test";
    auto bytes = b.finish(h, payload);
    const auto off = records.size();
    EXPECT_TRUE(messages::patch_offset(bytes, log_offset{off}));
    records.push_back(std::move(bytes));
    return off;
  }
  [[nodiscard]] const wire::Envelope& at(std::uint64_t off) const {
    auto d = messages::decode(records[off], "test");
    EXPECT_TRUE(d.has_value()) << d.error().describe();
    return *d->envelope;
  }

  std::uint64_t pod(std::int64_t t, const std::string& key, const std::string& trace_qos,
                    resource_list req, resource_list lim = {},
                    wire::KubeQoSClass kq = wire::KubeQoSClass::Burstable,
                    const std::string& priority_class_name = "") {
    auto& fbb = b.fbb();
    const auto rq = b.resources(req);
    const auto li = b.resources(lim);
    const auto lab = b.key_values({{"colony.sim/trace-qos", trace_qos}});
    const auto n = fbb.CreateString(key);
    const auto uid = fbb.CreateString("uid-" + key);
    const auto pcn = fbb.CreateString(priority_class_name);
    const auto sn = fbb.CreateString("default-scheduler");
    return append(t, wire::EntityKind::Pod, key,
                  wire::CreatePodSubmitted(fbb, n, uid, rq, li, 0, false, pcn, lab, 0, sn, kq));
  }
  // A pod whose requests hold `overhead` (spec.overhead, as PodRequests adds it).
  std::uint64_t pod_with_overhead(std::int64_t t, const std::string& key,
                                  const std::string& trace_qos, resource_list req,
                                  resource_list overhead) {
    auto& fbb = b.fbb();
    const auto rq = b.resources(req);
    const auto li = b.resources({});
    const auto lab = b.key_values({{"colony.sim/trace-qos", trace_qos}});
    const auto n = fbb.CreateString(key);
    const auto uid = fbb.CreateString("uid-" + key);
    const auto pcn = fbb.CreateString("");
    const auto sn = fbb.CreateString("default-scheduler");
    const auto oh = b.resources(overhead);
    return append(t, wire::EntityKind::Pod, key,
                  wire::CreatePodSubmitted(fbb, n, uid, rq, li, 0, false, pcn, lab, 0, sn,
                                           wire::KubeQoSClass::Burstable, 0, 0, -1, oh));
  }
  std::uint64_t config(std::int64_t t, std::string_view kind, std::string_view name,
                       std::string_view spec, bool deleted = false) {
    auto& fbb = b.fbb();
    const auto k = fbb.CreateString(kind);
    const auto n = fbb.CreateString(name);
    const auto s = fbb.CreateString(spec);
    return append(t, wire::EntityKind::Cluster, "admission",
                  wire::CreateConfigUpdated(fbb, k, n, s, deleted));
  }
};

colocation_profile_component make_component(std::uint64_t seed = 7) {
  auto ps = admission::parse_profiles_yaml(profiles_yaml, "profiles.yaml");
  EXPECT_TRUE(ps.has_value()) << ps.error().describe();
  auto set = admission::profile_set::make(*ps);
  EXPECT_TRUE(set.has_value());
  colocation_profile_options opt;
  opt.mutating.seed = seed;
  auto pcs = admission::parse_priority_classes_yaml(priority_classes_yaml, "pc.yaml");
  EXPECT_TRUE(pcs.has_value()) << pcs.error().describe();
  opt.priority_classes = *pcs;
  return colocation_profile_component(std::move(*set), std::move(opt));
}

const wire::Envelope& decoded(const byte_buffer& b) {
  auto d = messages::decode(b, "emitted");
  EXPECT_TRUE(d.has_value()) << d.error().describe();
  return *d->envelope;
}

std::vector<std::pair<std::string, std::string>> kvs(
    const flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>* v) {
  std::vector<std::pair<std::string, std::string>> r;
  if (v != nullptr)
    for (const auto* kv : *v)
      r.emplace_back(std::string(to_string_view(kv->key())),
                     std::string(to_string_view(kv->value())));
  return r;
}

// The PodMutated equals mutate_pod_on_create's result for the same pod, field by field.
void expect_mutation_matches(const colocation_profile_component& c, const test_log& log,
                             std::uint64_t submitted, const byte_buffer& emitted,
                             std::uint64_t seed) {
  const auto& in = *log.at(submitted).payload_as_PodSubmitted();
  const auto spec = colocation_profile_component::pod_from_event(in);
  admission::mutating_options mo;
  mo.seed = seed;
  auto m = admission::mutate_pod_on_create(spec, c.profiles(), nullptr, c.priority_classes(), mo);
  ASSERT_TRUE(m.has_value());
  const auto& env = decoded(emitted);
  ASSERT_EQ(env.payload_type(), wire::Payload::PodMutated);
  EXPECT_EQ(env.causation(), static_cast<std::int64_t>(submitted));
  EXPECT_EQ(env.entity_kind(), wire::EntityKind::Pod);
  EXPECT_EQ(to_string_view(env.entity_key()), to_string_view(in.name()));
  EXPECT_EQ(to_string_view(env.source()), "admission");
  EXPECT_EQ(env.event_time_ms(), log.at(submitted).event_time_ms());
  const auto& p = *env.payload_as_PodMutated();
  EXPECT_EQ(to_string_view(p.name()), to_string_view(in.name()));
  std::vector<std::string> profiles;
  for (const auto* s : *p.profiles()) profiles.emplace_back(to_string_view(s));
  EXPECT_EQ(profiles, m->applied_profiles);
  EXPECT_EQ(static_cast<int>(p.qos_class()), static_cast<int>(m->koord_qos));
  EXPECT_EQ(static_cast<int>(p.priority_class()), static_cast<int>(m->koord_priority_class));
  EXPECT_EQ(p.priority(), m->priority);
  EXPECT_EQ(to_string_view(p.priority_class_name()), m->pod.priority_class_name);
  EXPECT_EQ(to_string_view(p.scheduler_name()), m->pod.scheduler_name);
  EXPECT_EQ(messages::to_resource_list(p.requests()), m->requests);
  EXPECT_EQ(messages::to_resource_list(p.limits()), m->limits);
  EXPECT_EQ(kvs(p.labels()), (std::vector<std::pair<std::string, std::string>>(
                                 m->pod.labels.begin(), m->pod.labels.end())));
  EXPECT_EQ(kvs(p.annotations()), (std::vector<std::pair<std::string, std::string>>(
                                      m->pod.annotations.begin(), m->pod.annotations.end())));
}

TEST(ColocationProfileComponent, BatchPodIsMutatedAsThePolicySays) {
  auto c = make_component();
  test_log log;
  const auto off = log.pod(1000, "default/be-1", "BE", cpu_mem(2000, 4 * gib));
  const auto out = feed(c, log);
  ASSERT_EQ(out.size(), 1u);
  expect_mutation_matches(c, log, off, out[0], 7);
  const auto& p = *decoded(out[0]).payload_as_PodMutated();
  // The translation itself, spelled out: cpu/memory moved into batch-*.
  EXPECT_EQ(p.requests()->cpu_milli(), 0);
  EXPECT_EQ(p.requests()->batch_cpu_milli(), 2000);
  EXPECT_EQ(p.requests()->batch_memory_bytes(), 4 * gib);
  EXPECT_EQ(p.qos_class(), wire::QoSClass::BE);
  EXPECT_EQ(p.priority_class(), wire::PriorityClass::Batch);
  EXPECT_EQ(p.priority(), 5500);
  ASSERT_EQ(c.last_decisions().size(), 1u);
  EXPECT_EQ(c.last_decisions()[0].profile, "batch");
  EXPECT_TRUE(c.last_decisions()[0].applied);
}

// spec.overhead rides along: an LS pod's requests stay as submitted (the overhead counted once)
// and PodMutated names the overhead; a BE pod's overhead moves into batch-* with its requests.
TEST(ColocationProfileComponent, OverheadIsCountedOnceAndTranslatedWithTheRequests) {
  auto c = make_component();
  test_log log;
  (void)log.pod_with_overhead(1, "default/ls-oh", "LS", cpu_mem(2250, 3 * gib),
                              cpu_mem(250, 1 * gib));
  (void)log.pod_with_overhead(2, "default/be-oh", "BE", cpu_mem(2250, 3 * gib),
                              cpu_mem(250, 1 * gib));
  const auto out = feed(c, log);
  ASSERT_EQ(out.size(), 2u);
  const auto& ls = *decoded(out[0]).payload_as_PodMutated();
  EXPECT_EQ(ls.requests()->cpu_milli(), 2250);
  EXPECT_EQ(ls.requests()->memory_bytes(), 3 * gib);
  ASSERT_NE(ls.overhead(), nullptr);
  EXPECT_EQ(ls.overhead()->cpu_milli(), 250);
  EXPECT_EQ(ls.overhead()->memory_bytes(), 1 * gib);
  const auto& be = *decoded(out[1]).payload_as_PodMutated();
  EXPECT_EQ(be.requests()->cpu_milli(), 0);
  EXPECT_EQ(be.requests()->batch_cpu_milli(), 2250);
  EXPECT_EQ(be.requests()->batch_memory_bytes(), 3 * gib);
  ASSERT_NE(be.overhead(), nullptr);
  EXPECT_EQ(be.overhead()->cpu_milli(), 0);
  EXPECT_EQ(be.overhead()->batch_cpu_milli(), 250);
  EXPECT_EQ(be.overhead()->batch_memory_bytes(), 1 * gib);
}

TEST(ColocationProfileComponent, UnmatchedPodStillGetsPodMutated) {
  auto c = make_component();
  test_log log;
  const auto off = log.pod(1, "default/plain", "None", cpu_mem(100, gib));
  const auto out = feed(c, log);
  ASSERT_EQ(out.size(), 1u);
  expect_mutation_matches(c, log, off, out[0], 7);
  EXPECT_EQ(decoded(out[0]).payload_as_PodMutated()->profiles()->size(), 0u);
}

TEST(ColocationProfileComponent, MissingPriorityClassRejectsWithThePolicyError) {
  auto ps = admission::parse_profiles_yaml(profiles_yaml, "profiles.yaml");
  ASSERT_TRUE(ps.has_value());
  auto set = admission::profile_set::make(*ps);
  ASSERT_TRUE(set.has_value());
  colocation_profile_component c(std::move(*set), {});  // no PriorityClasses known
  test_log log;
  const auto off = log.pod(5, "default/be-2", "BE", cpu_mem(1000, gib));
  const auto out = feed(c, log);
  ASSERT_EQ(out.size(), 1u);
  const auto& env = decoded(out[0]);
  ASSERT_EQ(env.payload_type(), wire::Payload::PodRejected);
  EXPECT_EQ(env.causation(), static_cast<std::int64_t>(off));
  const auto spec =
      colocation_profile_component::pod_from_event(*log.at(off).payload_as_PodSubmitted());
  auto m = admission::mutate_pod_on_create(spec, c.profiles(), nullptr, {}, {});
  ASSERT_FALSE(m.has_value());
  const auto& r = *env.payload_as_PodRejected();
  EXPECT_EQ(to_string_view(r.reason()), m.error().message);
  EXPECT_EQ(to_string_view(r.field()), m.error().where);
  EXPECT_NE(to_string_view(r.reason()).find("koord-batch"), std::string_view::npos);
}

TEST(ColocationProfileComponent, ValidatingWebhookRejectsBatchResourcesOnNonBEPod) {
  // A profile making pods koord-batch with QoS LS: the mutation moves cpu into batch-cpu, and
  // the validating webhook refuses a non-BE pod that requests batch resources.
  auto c = make_component();
  test_log log;
  log.config(0, config_kind_profile, "bad-batch", R"({"apiVersion":"config.koordinator.sh/v1alpha1",
    "kind":"ClusterColocationProfile","metadata":{"name":"bad-batch"},
    "spec":{"selector":{"matchLabels":{"colony.sim/trace-qos":"X"}},"qosClass":"LS",
    "priorityClassName":"koord-batch"}})");
  const auto off = log.pod(9, "default/x-1", "X", cpu_mem(1000, gib));
  const auto out = feed(c, log);
  ASSERT_TRUE(c.config_errors().empty()) << c.config_errors()[0].describe();
  ASSERT_EQ(out.size(), 1u);
  const auto& env = decoded(out[0]);
  ASSERT_EQ(env.payload_type(), wire::Payload::PodRejected);
  EXPECT_EQ(env.causation(), static_cast<std::int64_t>(off));
  const auto spec =
      colocation_profile_component::pod_from_event(*log.at(off).payload_as_PodSubmitted());
  auto m = admission::mutate_pod_on_create(spec, c.profiles(), nullptr, c.priority_classes(),
                                           {.seed = 7});
  ASSERT_TRUE(m.has_value());
  const auto v = admission::validate_cluster_colocation_profile_pod(
      admission::admission_operation::create, m->pod, nullptr);
  ASSERT_FALSE(v.allowed());
  EXPECT_EQ(to_string_view(env.payload_as_PodRejected()->reason()), v.reason());
  EXPECT_EQ(to_string_view(env.payload_as_PodRejected()->field()), v.errors.front().field);
}

TEST(ColocationProfileComponent, InvalidProfileEventKeepsProfilesAndNamesTheField) {
  auto c = make_component();
  const auto before = c.profiles().profiles();
  test_log log;
  log.config(0, config_kind_profile, "typo",
             R"({"metadata":{"name":"typo"},"spec":{"qosClass":"XX"}})");
  const auto out = feed(c, log);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(c.profiles().profiles(), before);
  ASSERT_EQ(c.config_errors().size(), 1u);
  EXPECT_NE(c.config_errors()[0].message.find("spec.qosClass"), std::string::npos);
  EXPECT_NE(c.config_errors()[0].where.find("log offset 0"), std::string::npos);
}

TEST(ColocationProfileComponent, ProfileEventsUpsertAndDelete) {
  auto c = make_component();
  test_log log;
  log.config(0, config_kind_profile, "batch", "", /*deleted=*/true);
  const auto off1 = log.pod(1, "default/be-3", "BE", cpu_mem(1000, gib));
  auto out = feed(c, log);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(decoded(out[0]).payload_as_PodMutated()->profiles()->size(), 0u);
  expect_mutation_matches(c, log, off1, out[0], 7);
  const auto from = log.records.size();
  log.config(2, config_kind_profile, "x", profiles_yaml);  // a multi-document YAML spec
  const auto off2 = log.pod(3, "default/be-4", "BE", cpu_mem(1000, gib));
  out = feed(c, log, from);
  ASSERT_EQ(out.size(), 1u);
  expect_mutation_matches(c, log, off2, out[0], 7);
  EXPECT_EQ(decoded(out[0]).payload_as_PodMutated()->qos_class(), wire::QoSClass::BE);
}

TEST(ColocationProfileComponent, ProbabilityDrawsAreSeededAndMatchThePolicy) {
  // Property: over many pods with a 50 % profile, each pod's outcome is the policy's draw for
  // (seed, uid, profile); the same seed repeats the choices, another seed changes some.
  auto run = [](std::uint64_t seed) {
    auto c = make_component(seed);
    test_log log;
    log.config(0, config_kind_profile, "half", R"({"metadata":{"name":"half"},
      "spec":{"selector":{"matchLabels":{"colony.sim/trace-qos":"H"}},"probability":"50%",
      "labels":{"colony.test/half":"yes"}}})");
    for (int i = 0; i < 200; ++i) log.pod(i, "default/h-" + std::to_string(i), "H", cpu_mem(10, 1));
    auto out = feed(c, log);
    EXPECT_EQ(out.size(), 200u);
    std::vector<bool> applied;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto& p = *decoded(out[i]).payload_as_PodMutated();
      const bool a = p.profiles()->size() == 1;
      const auto spec =
          colocation_profile_component::pod_from_event(*log.at(i + 1).payload_as_PodSubmitted());
      const auto draw = admission::probability_draw(seed, spec, "half");
      EXPECT_EQ(a, !admission::should_skip_profile(50, draw)) << i;
      applied.push_back(a);
    }
    return applied;
  };
  const auto a = run(1), b = run(1), c = run(2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const auto n = std::count(a.begin(), a.end(), true);
  EXPECT_GT(n, 70);  // (50 + 1) % of 200 expected; far from 0 and 200
  EXPECT_LT(n, 135);
}

TEST(ColocationProfileComponent, SameEventsGiveSameBytes) {
  test_log log;
  log.config(0, config_kind_priority_class, "koord-free",
             "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: "
             "koord-free\nvalue: 3500\n");
  for (int i = 0; i < 20; ++i)
    log.pod(i, "default/p-" + std::to_string(i), i % 3 == 0 ? "BE" : (i % 3 == 1 ? "LS" : "Z"),
            cpu_mem(100 * i + 100, gib), cpu_mem(100 * i + 100, gib),
            wire::KubeQoSClass::Guaranteed);
  auto c1 = make_component(3), c2 = make_component(3);
  EXPECT_EQ(feed(c1, log), feed(c2, log));
}

TEST(ColocationProfileComponent, MultiEventScenarioBatchOnlineAndRejected) {
  // Profiles arrive as events; pods of three kinds follow; a later profile change affects only
  // pods submitted after it.
  admission::profile_set empty;
  colocation_profile_options opt;
  opt.mutating.seed = 11;
  auto pcs = admission::parse_priority_classes_yaml(priority_classes_yaml, "pc.yaml");
  ASSERT_TRUE(pcs.has_value());
  opt.priority_classes = *pcs;
  colocation_profile_component c(std::move(empty), opt);
  test_log log;
  log.config(0, config_kind_profile, "sim", profiles_yaml);
  const auto be = log.pod(10, "default/be", "BE", cpu_mem(4000, 8 * gib));
  const auto ls = log.pod(11, "default/ls", "LS", cpu_mem(1000, gib));
  const auto gu = log.pod(12, "default/gu", "Guaranteed", cpu_mem(2000, 2 * gib),
                          cpu_mem(2000, 2 * gib), wire::KubeQoSClass::Guaranteed);
  log.config(13, config_kind_profile, "online", "", true);
  const auto ls2 = log.pod(14, "default/ls2", "LS", cpu_mem(1000, gib));
  const auto out = feed(c, log);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(decoded(out[0]).causation(), static_cast<std::int64_t>(be));
  EXPECT_EQ(decoded(out[1]).causation(), static_cast<std::int64_t>(ls));
  EXPECT_EQ(decoded(out[2]).causation(), static_cast<std::int64_t>(gu));
  EXPECT_EQ(decoded(out[3]).causation(), static_cast<std::int64_t>(ls2));
  EXPECT_EQ(decoded(out[0]).payload_as_PodMutated()->priority_class(), wire::PriorityClass::Batch);
  EXPECT_EQ(decoded(out[1]).payload_as_PodMutated()->priority_class(), wire::PriorityClass::Prod);
  EXPECT_EQ(decoded(out[1]).payload_as_PodMutated()->qos_class(), wire::QoSClass::LS);
  EXPECT_EQ(decoded(out[2]).payload_as_PodMutated()->priority(), 9500);
  // After "online" is deleted, an LS pod matches nothing: no profile, no koord-prod class name.
  EXPECT_EQ(decoded(out[3]).payload_as_PodMutated()->profiles()->size(), 0u);
  EXPECT_EQ(to_string_view(decoded(out[3]).payload_as_PodMutated()->priority_class_name()), "");
  expect_mutation_matches(c, log, ls2, out[3], 11);
}

TEST(ColocationProfileComponent, LoadsProfilesAndPriorityClassesFromFiles) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("colony-admission-actor-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto pf = (dir / "profiles.yaml").string();
  const auto cf = (dir / "pc.yaml").string();
  std::ofstream(pf) << profiles_yaml;
  std::ofstream(cf) << priority_classes_yaml;
  auto c = colocation_profile_component::from_files({pf}, {cf}, {});
  ASSERT_TRUE(c.has_value()) << c.error().describe();
  EXPECT_EQ(c->profiles().profiles().size(), 2u);
  EXPECT_EQ(c->priority_classes().size(), 3u);
  auto missing = colocation_profile_component::from_files({(dir / "nope.yaml").string()}, {}, {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, errc::not_found);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace colony::admission_actor
