// ClusterColocationProfile (config.koordinator.sh/v1alpha1) and the pod mutating webhook that
// applies it (pkg/webhook/pod/mutating/cluster_colocation_profile.go, apis/config/v1alpha1/
// cluster_colocation_profile_types.go, apis/extension/cluster_colocation_profile.go).
//
// On pod Create, every profile whose selectors match is applied in ascending name order
// (byte order), each subject to its probability; then, unless a matched profile carries the
// annotation config.koordinator.sh/skip-update-resources, the pod's cpu/memory are translated
// into kubernetes.io/batch-* (Batch pods) or kubernetes.io/mid-* (Mid pods).
//
// Probability. Koordinator draws `rand.Intn(100)` from Go's global source per (pod, profile)
// and skips the profile when percent == 0 or (percent != 100 && draw > percent); so for
// 0 < percent < 100 the profile applies with chance (percent + 1) / 100 (draws 0..percent),
// and values >= 100 always apply, < 0 never. Colony keeps that comparison exactly but
// replaces the global random source by a deterministic draw, so a replay or a re-simulation
// with the same seed makes the same choices:
//     draw = splitmix64(fnv1a64(le64(seed) | le64(len(key)) | key
//                               | le64(len(profile)) | profile)) mod 100
// where key is the pod's uid, or "namespace/name" when the uid is empty, and le64 is a
// 64-bit little-endian integer (lengths make the concatenation unambiguous). The modulo bias
// is below 1e-17.
//
// Go map order. Koordinator ranges over Go maps when applying labelKeysMapping and
// annotationKeysMapping, so chained mappings (a->b, b->c) and two sources with one target
// give random results. Colony applies each mapping entry in ascending source-key order, one
// after the other (always one of Koordinator's possible outcomes).
//
// Selector quirk kept from Koordinator: a profile is skipped only when a selector evaluates to
// "no match" without error. If the Namespace is unknown (namespace_labels == nullptr) or a
// selector is invalid, the profile counts as matched. Profiles loaded by profile_loader are
// validated, so only the unknown-Namespace case occurs with them; pass an empty map when
// namespaces are not modelled (a non-empty namespaceSelector then never matches).
//
// All functions are pure; profile_set is a plain value (no internal synchronisation).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admission/label_selector.hpp"
#include "actors/admission/pod_patch.hpp"
#include "actors/admission/pod_spec.hpp"
#include "actors/admission/priority.hpp"
#include "actors/admission/qos.hpp"
#include "messages/names.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"

namespace colony::admission {

// apis/extension/cluster_colocation_profile.go, defined once in messages/names.hpp.
using names::annotation_skip_update_resource;
using names::label_controller_managed;

struct cluster_colocation_profile {
  // metadata
  std::string name;
  string_map metadata_labels;
  string_map metadata_annotations;

  // spec. nullopt selectors are nil (match all, like an empty selector).
  std::optional<label_selector> namespace_selector;
  std::optional<label_selector> selector;
  // The int-or-percent as a percent: an int as is, "N%" as N (scaled to 100, rounded down,
  // which is exact). nullopt = absent = 100.
  std::optional<std::int64_t> probability;
  qos_class qos = qos_class::none;  // spec.qosClass; none = not set
  std::string priority_class_name;
  std::optional<std::int32_t> koordinator_priority;
  std::string scheduler_name;
  string_map labels;
  string_map annotations;
  string_map label_keys_mapping;       // old key -> new key
  string_map annotation_keys_mapping;  // old key -> new key
  string_map label_suffixes;           // key -> suffix appended to an existing value
  std::optional<pod_patch> patch;

  // ShouldSkipUpdateResource: the annotation is present (any value).
  [[nodiscard]] bool should_skip_update_resource() const;
  // ShouldReconcileProfile: label controller-managed == "true" (background controller, B.4).
  [[nodiscard]] bool should_reconcile() const;

  bool operator==(const cluster_colocation_profile&) const = default;
};

// Profiles kept sorted by name, names unique: the order the webhook applies them in.
class profile_set {
 public:
  profile_set() = default;
  // Fails (already_exists) on a duplicate name.
  [[nodiscard]] static result<profile_set> make(std::vector<cluster_colocation_profile> profiles);
  // Adds or replaces (by name), as a watch event does.
  void upsert(cluster_colocation_profile p);
  // Returns whether a profile of that name was there.
  bool erase(std::string_view name);
  [[nodiscard]] const std::vector<cluster_colocation_profile>& profiles() const {
    return profiles_;
  }
  [[nodiscard]] const cluster_colocation_profile* find(std::string_view name) const;
  [[nodiscard]] bool empty() const { return profiles_.empty(); }
  // profile_matches for profiles()[i], with selector validity checked once at insertion.
  [[nodiscard]] bool matches(std::size_t i, const pod_spec& pod,
                             const string_map* namespace_labels) const;

 private:
  std::vector<cluster_colocation_profile> profiles_;  // ascending name
  std::vector<std::uint8_t> invalid_selectors_;  // per profile: 1 namespaceSelector, 2 selector
};

// A Kubernetes PriorityClass (scheduling.k8s.io/v1), as the webhook reads it.
struct priority_class_info {
  std::string name;
  std::int32_t value = 0;
  std::string preemption_policy;  // empty = not set (the pod's field is then cleared)

  bool operator==(const priority_class_info&) const = default;
};
using priority_class_table = std::map<std::string, priority_class_info, std::less<>>;

struct mutating_options {
  // Seed of the probability draws. Default: 0 (Koordinator seeds nothing: Go's global rand).
  std::uint64_t seed = 0;
  // Default: false (feature gate ColocationProfileSkipMutatingResources, pkg/features/features.go).
  bool skip_mutating_resources = false;
  // Default: false (feature gate DisableExtendedResourceSpec, pkg/features/features.go).
  bool disable_extended_resource_spec = false;
};

// What one matched profile did.
struct profile_decision {
  std::string profile;
  bool applied = false;    // false: skipped by probability
  std::int32_t draw = -1;  // the draw in [0,100); -1 when no draw was needed (0 or >= 100)

  bool operator==(const profile_decision&) const = default;
};

// The result of admission's mutation of one pod: what a PodMutated event carries.
struct pod_mutation {
  pod_spec pod;  // the mutated pod: final labels, annotations and per-container resources

  std::vector<profile_decision> matched;      // every matched profile, ascending name
  std::vector<std::string> applied_profiles;  // profiles applied, in application order
  bool resources_translated = false;          // cpu/memory moved into batch-* / mid-*
  bool mutated = false;                       // anything changed at all

  // Derived from the mutated pod.
  qos_class koord_qos = qos_class::none;                       // GetPodQoSClassWithDefault
  priority_class koord_priority_class = priority_class::none;  // GetPodPriorityClassWithDefault
  std::int32_t priority = 0;                                   // GetPodPriorityValueWithDefault
  resource_list requests;                                      // get_pod_request after translation
  resource_list limits;                                        // get_pod_limits after translation

  // Patch parts Colony does not apply, prefixed "<profile>: " (see pod_patch.hpp).
  std::vector<std::string> ignored_patch_paths;
};

// Step 2: both selectors match (with the error-means-matched quirk, see above).
[[nodiscard]] bool profile_matches(const cluster_colocation_profile& profile, const pod_spec& pod,
                                   const string_map* namespace_labels);

// The deterministic stand-in for rand.Intn(100), see the header comment. In [0, 100).
[[nodiscard]] std::int32_t probability_draw(std::uint64_t seed, const pod_spec& pod,
                                            std::string_view profile_name);

// shouldSkipProfile with Koordinator's comparison: percent (nullopt = 100) against a draw.
[[nodiscard]] bool should_skip_profile(std::optional<std::int64_t> percent, std::int32_t draw);
// Whether the percent needs a draw at all (it does not for 0 or exactly 100).
[[nodiscard]] bool needs_draw(std::optional<std::int64_t> percent);

// Step 5, doMutateByColocationProfile: labels, annotations, labelKeysMapping,
// annotationKeysMapping, labelSuffixes, schedulerName, qosClass label, priorityClassName
// (resolved through `priority_classes`: priority and preemptionPolicy follow; a missing
// PriorityClass is a not_found error, which fails the admission), koordinatorPriority label,
// then the patch.
[[nodiscard]] result<void> do_mutate_by_colocation_profile(
    pod_spec& pod, const cluster_colocation_profile& profile,
    const priority_class_table& priority_classes);

// mutatePodResourceSpec: for a Batch (or Mid) pod by class-with-default, in every init and
// regular container, requests and limits: cpu (milli) -> batch-cpu / mid-cpu with the same
// milli value, memory -> batch-memory / mid-memory; then a missing extended request is set to
// the extended limit (a missing limit stays missing). spec.overhead cpu/memory move the same
// way (no request/limit step). Prod, None and Free (no mapping) pods are left alone.
// Returns whether anything changed.
bool mutate_pod_resource_spec(pod_spec& pod);

// The whole ClusterColocationProfile step of pod Create (clusterColocationProfileMutatingPod).
[[nodiscard]] result<pod_mutation> cluster_colocation_profile_mutating_pod(
    const pod_spec& pod, const profile_set& profiles, const string_map* namespace_labels,
    const priority_class_table& priority_classes, const mutating_options& options = {});

// Koordinator's pod Create mutations that Colony models, in the handler's order
// (mutating_handler.go handleCreate): the profile step, then the extended-resource-spec
// annotation (extended_resource_spec.hpp) unless disabled. MultiQuotaTree node affinity and
// device resource specs are not modelled here.
[[nodiscard]] result<pod_mutation> mutate_pod_on_create(
    const pod_spec& pod, const profile_set& profiles, const string_map* namespace_labels,
    const priority_class_table& priority_classes, const mutating_options& options = {});

}  // namespace colony::admission
