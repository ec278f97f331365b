// Reservation (scheduling.koordinator.sh/v1alpha1): the scheduler's view of a reservation, the
// rules that decide which pods may use it (owners, affinity, allocate-once), how a node's
// reservations are ranked for a pod (order label, MostAllocated score), when the controller
// expires one, and the Reservation scheduler plugin over node_info::reservations.
//
// Accounting rule (the host keeps it; assume_reservation_owner() and node_requested_for()
// follow it): a node's requested resources include, for every active reservation on it, what
// the reservation has not yet handed to its owners (allocatable - allocated, at least 0) plus
// one pod, as Koordinator's reserve pod occupies the node. An owner pod adds its whole
// request; the reservation's allocated grows by it, so its remaining shrinks by as much as the
// reservation still had: resources reserved are never handed to others, and an owner takes
// from its reservation first. An allocate-once reservation stops being active once it has an
// owner (Succeeded): what it had left is freed.
//
// Koordinator: apis/scheduling/v1alpha1/reservation_types.go, pkg/util/reservation/
// reservation.go (MatchReservationOwners, MatchObjectRef, MatchReservationControllerReference,
// GetRequiredReservationAffinity), pkg/scheduler/plugins/reservation/{plugin.go, scoring.go
// (ScoreReservation, findMostPreferredReservationByOrder), nominator.go (NominateReservation),
// controller/controller.go (isReservationNeedExpiration)}.
// Pure; thread-safety: the plugin keeps per-cycle state (one framework per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/reservation_types.hpp"
#include "messages/result.hpp"

namespace colony::scheduler {

// Parses the scheduling.koordinator.sh/reservation-affinity annotation (JSON: name,
// reservationSelector; requiredDuringSchedulingIgnoredDuringExecution and tolerations are
// refused as not modelled) into `id`. The error names the annotation and the field.
[[nodiscard]] result<void> parse_reservation_affinity(std::string_view json, pod_identity& id);

[[nodiscard]] std::optional<reservation_allocate_policy> parse_allocate_policy(
    std::string_view s) noexcept;

[[nodiscard]] std::string_view to_string(reservation_phase p) noexcept;

// What Koordinator's owner parsing refuses (ParseReservationOwnerMatchers, ValidateReservation):
// no owners, or a label selector apimachinery cannot convert; the error names
// `field`[i].labelSelector. The matching below assumes owners that passed.
[[nodiscard]] result<void> validate_owners(const std::vector<reservation_owner>& owners,
                                           std::string_view field);

// MatchReservationOwners over a pod's key ("namespace/name") and identity. REQUIRES: the owners
// passed validate_owners.
[[nodiscard]] bool match_reservation_owners(std::string_view pod_key, const pod_identity& pod,
                                            const std::vector<reservation_owner>& owners);

// Whether a pod may be placed into `r` at all: active, not unschedulable, not an allocate-once
// reservation that already has an owner, the owners match, and the pod's reservation affinity
// (if any) names it and selects its labels.
[[nodiscard]] bool reservation_matches_pod(const reservation_info& r, const pod_info& pod);

// The pod fits `node` with `r` (matched): every requested resource fits what the node has free
// plus what r still holds, one pod slot included (r's reserve pod gives its slot back); under
// Restricted, also every resource r reserves fits what r still holds. Empty reason when it
// fits, else the first failing resource ("Insufficient cpu", "Reservation(s) Insufficient cpu").
[[nodiscard]] std::string_view fit_with_reservation(const pod_info& pod, const node_info& node,
                                                    const reservation_info& r) noexcept;

// ScoreReservation: MostAllocated over the reservation's non-zero allocatable,
// Σ_r (100 × (request_r + allocated_r) / allocatable_r, 0 when above) / count; 0 with no
// resources.
[[nodiscard]] std::int64_t score_reservation(const pod_info& pod,
                                             const reservation_info& r) noexcept;

// NominateReservation among the reservations a pod matched on one node (indices into
// node.reservations, already filtered by fit): the lowest non-zero order wins; else the highest
// score; equal scores: the smaller name (Go's sort.Slice leaves that order undefined). nullopt
// when there are none.
[[nodiscard]] std::optional<std::size_t> nominate_reservation(
    const pod_info& pod, const node_info& node, const std::vector<std::size_t>& candidates);

// The controller's isReservationNeedExpiration at `now_ms`: not Failed/Succeeded, ttl != 0 or
// expires set, and (now > expires, or now - created > ttl); a reservation whose node is gone
// also expires. Pending reservations without a node are never expired (as the controller syncs
// only scheduled ones).
[[nodiscard]] bool reservation_needs_expiration(const reservation_info& r, std::int64_t now_ms,
                                                bool node_exists) noexcept;
// When the controller looks at `r` again: clamp(time to expiry, 3 s, 15 s) as its requeue.
[[nodiscard]] std::int64_t reservation_requeue_ms(const reservation_info& r,
                                                  std::int64_t now_ms) noexcept;

// The accounting rule of the header: a node's requested for its pods' requests and its
// reservations.
[[nodiscard]] resource_list reservations_requested(const node_info& node) noexcept;
// Places an owner pod into node.reservations[index] (assume_pod does the pod's own request):
// allocated and owner count grow, node.requested drops by what the reservation stops holding.
void assume_reservation_owner(node_info& node, std::size_t index, const pod_info& pod);
// The reverse (a proposal the node refused, an owner that left): allocated and owner count
// shrink, an allocate-once reservation with no owner left is Available again.
void forget_reservation_owner(node_info& node, std::size_t index, const pod_info& pod);
// The index of the reservation `name` in node.reservations, or none.
[[nodiscard]] std::optional<std::size_t> find_reservation(const node_info& node,
                                                          std::string_view name) noexcept;

// The Reservation plugin (Koordinator's name). PreFilter finds, per node, the reservations the
// pod matches and nominates one among those it fits (nothing to do for reserve pods or pods
// that ignore reservations: skip). Filter: a pod with a reservation affinity needs a
// nominated reservation on the node; a pod that matched reservations on the node needs one it
// fits (NodeResourcesFit is told what the matched reservations hold there, through
// cycle_state::reservation_relief, as Koordinator restores matched reservations into the
// NodeInfo). Score: 1000 for the scored node whose matched reservations hold the lowest
// non-zero order (the first scored on a tie), else the nominated reservation's score, else 0;
// NormalizeScore scales the best to 100. Reserve
// records the nominated reservation of the chosen node in cycle_state::reservation (the host
// then calls assume_reservation_owner).
//
// With an owner_classes registry (REQUIRES: every reservation the nodes hold has its owner_class
// from it), PreFilter first matches the pod against each distinct owner spec and skips the
// node scan when none matches: most pods own no reservation.
class reservation_plugin final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "Reservation";
  explicit reservation_plugin(std::shared_ptr<const owner_classes> classes = nullptr)
      : classes_(std::move(classes)) {}
  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override {
    return ep_pre_filter | ep_filter | ep_score | ep_reserve;
  }
  // Filter and Score read what PreFilter stored per node and write nothing.
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }

  status pre_filter(cycle_state& st, const pod_info& pod, std::span<const node_info> nodes,
                    event_time now) override;
  status filter(cycle_state& st, const pod_info& pod, const node_info& node,
                event_time now) override;
  std::int64_t score(cycle_state& st, const pod_info& pod, const node_info& node,
                     event_time now) override;
  bool normalize_score(cycle_state& st, const pod_info& pod,
                       std::span<std::int64_t> scores) override;
  status reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                 event_time now) override;
  void unreserve(cycle_state& st, const pod_info& pod, const node_info& node,
                 event_time now) override;

 private:
  std::shared_ptr<const owner_classes> classes_;
};

}  // namespace colony::scheduler
