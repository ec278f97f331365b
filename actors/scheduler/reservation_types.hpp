// The plain structs of a Koordinator Reservation as the scheduler reads it, and the pod
// metadata its owner rules look at (pod_info::identity). The rules over them are in
// reservation.hpp; framework.hpp holds them in node_info and pod_info.
//
// Koordinator: apis/scheduling/v1alpha1/reservation_types.go.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/admission/label_selector.hpp"
#include "messages/resources.hpp"

namespace colony::scheduler {

// corev1.ObjectReference as an owner: every set field must equal the pod's (Kind and
// ResourceVersion/FieldPath are ignored, as Koordinator does: only pods are compared).
struct reservation_object_ref {
  std::string uid;
  std::string name;
  std::string ns;
  std::string api_version;
  bool operator==(const reservation_object_ref&) const = default;
};

// ReservationControllerReference: an OwnerReference plus namespace; matches when the pod is in
// that namespace (if set) and any of the pod's owner references agrees on every set field.
struct reservation_controller_ref {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::string ns;
  bool operator==(const reservation_controller_ref&) const = default;
};

// One spec.owners entry: the AND of what it sets. Entries are ORed; no entries matches
// nothing, one empty entry matches every pod.
struct reservation_owner {
  std::optional<reservation_object_ref> object;
  std::optional<reservation_controller_ref> controller;
  std::optional<admission::label_selector> label_selector;
  bool operator==(const reservation_owner&) const = default;
};

// A pod's metadata.ownerReferences entry.
struct pod_owner_reference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
};

// What the owner rules read of a pod beyond pod_info (shared by the pod's copies).
struct pod_identity {
  std::string uid;
  std::string api_version = "v1";
  admission::string_map labels;
  std::vector<pod_owner_reference> owner_references;
  // scheduling.koordinator.sh/reservation-ignored label: the pod never uses a reservation.
  bool reservation_ignored = false;
  // scheduling.koordinator.sh/reservation-affinity: the pod must use a reservation, one of the
  // given name (if set) whose labels match the selector (if any).
  bool has_reservation_affinity = false;
  std::string affinity_name;
  admission::string_map affinity_selector;
};

enum class reservation_allocate_policy : std::uint8_t {
  aligned,     // "" (deprecated default) and "Aligned": the pod may take the rest from the node
  restricted,  // "Restricted": the pod's request of each reserved resource must fit the rest
};

enum class reservation_phase : std::uint8_t { pending, available, succeeded, waiting, failed };

// A reservation as the scheduler and the controller see it.
struct reservation_info {
  std::string name;  // cluster-scoped: the object's name
  std::string uid;
  std::vector<reservation_owner> owners;
  // Reservations whose owners are equal share a non-zero class (owner_classes below), so the
  // plugin matches a pod against each distinct owner spec once per cycle. 0 = not interned.
  std::uint32_t owner_class = 0;
  resource_list allocatable;     // the template's requests (status.allocatable once Available)
  resource_list allocated;       // Σ requests of its owners (status.allocated)
  std::int32_t owner_count = 0;  // len(status.currentOwners)
  std::int64_t order = 0;        // label scheduling.koordinator.sh/reservation-order; 0 = none
  reservation_allocate_policy policy = reservation_allocate_policy::aligned;
  bool allocate_once = true;   // spec.allocateOnce, default true
  bool unschedulable = false;  // spec.unschedulable: no new owners
  reservation_phase phase = reservation_phase::pending;
  std::string node;                        // status.nodeName ("" while pending)
  std::int64_t created_ms = 0;             // metadata.creationTimestamp
  std::int64_t ttl_ms = 24 * 3600 * 1000;  // spec.ttl; 0 = never expires by ttl
  std::optional<std::int64_t> expires_ms;  // spec.expires
  admission::string_map labels;            // matched by a pod's reservation affinity selector

  // IsReservationActive: scheduled and Available (Waiting is not modelled).
  [[nodiscard]] bool active() const noexcept {
    return !node.empty() && phase == reservation_phase::available;
  }
  // What it still holds for owners: max(0, allocatable - allocated) per resource.
  [[nodiscard]] resource_list remaining() const noexcept;
  // What its node's requested includes for it (the accounting rule of reservation.hpp):
  // remaining() and one pod while active, nothing otherwise.
  [[nodiscard]] resource_list held() const noexcept;
};

// Interns owner specs: equal specs get the same class id (1, 2, ... in first-seen order).
// A host keeps one for the reservations it feeds a scheduler.
class owner_classes {
 public:
  [[nodiscard]] std::uint32_t intern(const std::vector<reservation_owner>& owners);
  [[nodiscard]] std::size_t size() const noexcept { return specs_.size(); }
  // The spec of class id (1..size()).
  [[nodiscard]] const std::vector<reservation_owner>& spec(std::uint32_t id) const {
    return specs_[id - 1];
  }

 private:
  std::vector<std::vector<reservation_owner>> specs_;           // id - 1 -> spec
  std::vector<std::pair<std::uint64_t, std::uint32_t>> index_;  // (hash, id), sorted
};

}  // namespace colony::scheduler
