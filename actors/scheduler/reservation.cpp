#include "actors/scheduler/reservation.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <limits>

namespace colony::scheduler {

namespace {

constexpr std::array<resource_name, resource_name_count> all_resources = {
    resource_name::cpu,
    resource_name::gpu,
    resource_name::gpu_core,
    resource_name::gpu_memory,
    resource_name::gpu_memory_ratio,
    resource_name::batch_cpu,
    resource_name::batch_memory,
    resource_name::mid_cpu,
    resource_name::mid_memory,
    resource_name::memory,
    resource_name::pods};

// "Insufficient <name>" and "Reservation(s) Insufficient <name>" per resource, built once (a
// status reason must outlive the cycle).
struct reason_table {
  std::array<std::string, resource_name_count> node, reservation;
  reason_table() {
    for (auto r : all_resources) {
      node[static_cast<std::size_t>(r)] = "Insufficient " + std::string(to_string(r));
      reservation[static_cast<std::size_t>(r)] =
          "Reservation(s) Insufficient " + std::string(to_string(r));
    }
  }
};
const reason_table& reasons() {
  static const reason_table t;
  return t;
}

constexpr std::string_view reason_affinity = "node(s) didn't match the pod's reservation affinity";
constexpr std::string_view reason_no_match = "no reservations to match the pod's affinity";
constexpr std::int64_t most_preferred_score = 1000;

bool match_object_ref(std::string_view ns, std::string_view name, const pod_identity& pod,
                      const reservation_object_ref& o) {
  return (o.uid.empty() || o.uid == pod.uid) && (o.name.empty() || o.name == name) &&
         (o.ns.empty() || o.ns == ns) &&
         (o.api_version.empty() || o.api_version == pod.api_version);
}

bool match_controller_ref(std::string_view ns, const pod_identity& pod,
                          const reservation_controller_ref& c) {
  if (!c.ns.empty() && c.ns != ns) return false;
  for (const auto& o : pod.owner_references) {
    if ((!c.controller || (o.controller && *o.controller == *c.controller)) &&
        (c.uid.empty() || c.uid == o.uid) && (c.name.empty() || c.name == o.name) &&
        (c.kind.empty() || c.kind == o.kind) &&
        (c.api_version.empty() || c.api_version == o.api_version))
      return true;
  }
  return false;
}

}  // namespace

std::optional<reservation_allocate_policy> parse_allocate_policy(std::string_view s) noexcept {
  if (s.empty() || s == "Aligned") return reservation_allocate_policy::aligned;
  if (s == "Restricted") return reservation_allocate_policy::restricted;
  return std::nullopt;
}

std::string_view to_string(reservation_phase p) noexcept {
  switch (p) {
    case reservation_phase::pending:
      return "Pending";
    case reservation_phase::available:
      return "Available";
    case reservation_phase::succeeded:
      return "Succeeded";
    case reservation_phase::waiting:
      return "Waiting";
    case reservation_phase::failed:
      return "Failed";
  }
  return "Pending";
}

result<void> parse_reservation_affinity(std::string_view json, pod_identity& id) {
  const std::string where = "annotation scheduling.koordinator.sh/reservation-affinity";
  auto j = nlohmann::json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return fail(errc::invalid_input, "not a JSON object", where);
  pod_identity out = id;
  out.has_reservation_affinity = true;
  out.affinity_name.clear();
  out.affinity_selector.clear();
  for (const auto& [k, v] : j.items()) {
    if (k == "name") {
      if (!v.is_string()) return fail(errc::invalid_input, "must be a string", where + ".name");
      out.affinity_name = v.get<std::string>();
    } else if (k == "reservationSelector") {
      if (!v.is_object())
        return fail(errc::invalid_input, "must be an object", where + ".reservationSelector");
      for (const auto& [lk, lv] : v.items()) {
        if (!lv.is_string())
          return fail(errc::invalid_input, "must be a string",
                      where + ".reservationSelector." + lk);
        out.affinity_selector.emplace(lk, lv.get<std::string>());
      }
    } else if (k == "requiredDuringSchedulingIgnoredDuringExecution" || k == "tolerations") {
      return fail(errc::invalid_input, "not modelled by Colony's Reservation plugin",
                  where + "." + k);
    }
    // Other keys: ignored, as Go's json.Unmarshal ignores unknown fields.
  }
  id = std::move(out);
  return {};
}

resource_list reservation_info::held() const noexcept {
  if (!active()) return {};
  resource_list h = remaining();
  h.pods = 1;
  return h;
}

resource_list reservation_info::remaining() const noexcept {
  resource_list r = allocatable;
  r.zip(allocated, [](std::int64_t& a, std::int64_t b) { a = std::max<std::int64_t>(0, a - b); });
  r.pods = 0;
  return r;
}

namespace {

// The pod's side of the owner rules, split once per pod.
struct pod_match_view {
  std::string_view ns;
  std::string_view name;
  const pod_identity* id = nullptr;
  explicit pod_match_view(std::string_view key, const pod_identity& identity) : id(&identity) {
    const auto slash = key.find('/');
    ns = slash == std::string_view::npos ? std::string_view{} : key.substr(0, slash);
    name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  }
};

const pod_identity& identity_of(const pod_info& pod) {
  static const pod_identity empty;
  return pod.identity ? *pod.identity : empty;
}

bool match_owners(const pod_match_view& pod, const std::vector<reservation_owner>& owners) {
  for (const auto& o : owners) {
    if (o.object && !match_object_ref(pod.ns, pod.name, *pod.id, *o.object)) continue;
    if (o.controller && !match_controller_ref(pod.ns, *pod.id, *o.controller)) continue;
    // Selectors were validated when the reservation was accepted (validate_owners).
    if (o.label_selector &&
        !admission::label_selector_matches_valid(*o.label_selector, pod.id->labels))
      continue;
    return true;
  }
  return false;
}

// memo: per owner class, -1 unknown, 0 no, 1 yes (the plugin's per-cycle cache).
bool matches(const reservation_info& r, const pod_match_view& pod,
             std::vector<std::int8_t>* memo = nullptr) {
  if (!r.active() || r.unschedulable) return false;
  if (r.allocate_once && r.owner_count > 0) return false;
  const pod_identity& id = *pod.id;
  if (id.reservation_ignored) return false;
  if (id.has_reservation_affinity) {
    if (!id.affinity_name.empty() && id.affinity_name != r.name) return false;
    for (const auto& [k, v] : id.affinity_selector) {
      auto it = r.labels.find(k);
      if (it == r.labels.end() || it->second != v) return false;
    }
  }
  if (memo == nullptr || r.owner_class == 0) return match_owners(pod, r.owners);
  if (memo->size() <= r.owner_class) memo->resize(r.owner_class + 1, -1);
  auto& m = (*memo)[r.owner_class];
  if (m < 0) m = match_owners(pod, r.owners) ? 1 : 0;
  return m == 1;
}

}  // namespace

namespace {

std::uint64_t mix(std::uint64_t h, std::string_view s) {
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return (h ^ 0xff) * 1099511628211ULL;  // a separator, so "ab","c" != "a","bc"
}

std::uint64_t hash_owners(const std::vector<reservation_owner>& owners) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const auto& o : owners) {
    h = mix(h, o.object ? "o" : "-");
    if (o.object) {
      for (const auto* f : {&o.object->uid, &o.object->name, &o.object->ns, &o.object->api_version})
        h = mix(h, *f);
    }
    h = mix(h, o.controller ? "c" : "-");
    if (o.controller) {
      const auto& c = *o.controller;
      for (const auto* f : {&c.api_version, &c.kind, &c.name, &c.uid, &c.ns}) h = mix(h, *f);
      h = mix(h, !c.controller ? "" : *c.controller ? "t" : "f");
    }
    h = mix(h, o.label_selector ? "s" : "-");
    if (o.label_selector) {
      for (const auto& [k, v] : o.label_selector->match_labels) h = mix(mix(h, k), v);
      for (const auto& e : o.label_selector->match_expressions) {
        h = mix(mix(h, e.key), admission::to_string(e.op));
        for (const auto& v : e.values) h = mix(h, v);
      }
    }
  }
  return h;
}

}  // namespace

std::uint32_t owner_classes::intern(const std::vector<reservation_owner>& owners) {
  const std::uint64_t h = hash_owners(owners);
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(h, std::uint32_t{0}));
  for (; it != index_.end() && it->first == h; ++it)
    if (specs_[it->second - 1] == owners) return it->second;
  specs_.push_back(owners);
  const auto id = static_cast<std::uint32_t>(specs_.size());
  index_.insert(it, {h, id});
  return id;
}

result<void> validate_owners(const std::vector<reservation_owner>& owners, std::string_view field) {
  if (owners.empty())
    return fail(errc::invalid_input, "the reservation has no owners", std::string(field));
  for (std::size_t i = 0; i < owners.size(); ++i) {
    if (!owners[i].label_selector) continue;
    const std::string at = std::string(field) + "[" + std::to_string(i) + "].labelSelector";
    if (auto ok = admission::validate_label_selector(*owners[i].label_selector, at); !ok)
      return tl::unexpected(ok.error());
  }
  return {};
}

bool match_reservation_owners(std::string_view pod_key, const pod_identity& pod,
                              const std::vector<reservation_owner>& owners) {
  return match_owners(pod_match_view(pod_key, pod), owners);
}

bool reservation_matches_pod(const reservation_info& r, const pod_info& pod) {
  return matches(r, pod_match_view(pod.key, identity_of(pod)));
}

std::string_view fit_with_reservation(const pod_info& pod, const node_info& node,
                                      const reservation_info& r) noexcept {
  const auto& t = reasons();
  const resource_list held = r.remaining();
  // The reserve pod's slot goes to the owner: the pod count does not grow.
  if (node.requested.pods > node.allocatable.pods)
    return t.node[static_cast<std::size_t>(resource_name::pods)];
  for (auto name : all_resources) {
    if (name == resource_name::pods) continue;
    const std::int64_t q = get(pod.requests, name);
    if (q <= 0) continue;
    if (r.policy == reservation_allocate_policy::restricted && get(r.allocatable, name) > 0 &&
        q > get(held, name))
      return t.reservation[static_cast<std::size_t>(name)];
    const std::int64_t free = get(node.allocatable, name) - get(node.requested, name);
    if (q > free + get(held, name)) return t.node[static_cast<std::size_t>(name)];
  }
  return {};
}

std::int64_t score_reservation(const pod_info& pod, const reservation_info& r) noexcept {
  std::int64_t sum = 0, count = 0;
  for (auto name : all_resources) {
    const std::int64_t cap = get(r.allocatable, name);
    if (cap == 0) continue;
    ++count;
    const std::int64_t req = get(pod.requests, name) + get(r.allocated, name);
    if (req <= cap) sum += max_node_score * req / cap;
  }
  return count == 0 ? 0 : sum / count;
}

std::optional<std::size_t> nominate_reservation(const pod_info& pod, const node_info& node,
                                                const std::vector<std::size_t>& candidates) {
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() == 1) return candidates[0];
  std::optional<std::size_t> by_order;
  for (const std::size_t i : candidates) {
    const auto& r = node.reservations[i];
    if (r.order != 0 && (!by_order || r.order < node.reservations[*by_order].order)) by_order = i;
  }
  if (by_order) return by_order;
  std::size_t best = candidates[0];
  std::int64_t best_score = score_reservation(pod, node.reservations[best]);
  for (std::size_t k = 1; k < candidates.size(); ++k) {
    const std::size_t i = candidates[k];
    const std::int64_t s = score_reservation(pod, node.reservations[i]);
    if (s > best_score ||
        (s == best_score && node.reservations[i].name < node.reservations[best].name)) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

bool reservation_needs_expiration(const reservation_info& r, std::int64_t now_ms,
                                  bool node_exists) noexcept {
  if (r.phase == reservation_phase::failed || r.phase == reservation_phase::succeeded) return false;
  if (r.node.empty()) return false;
  if (!node_exists) return true;
  if (r.ttl_ms == 0 && !r.expires_ms) return false;
  if (r.expires_ms && now_ms > *r.expires_ms) return true;
  return r.ttl_ms > 0 && now_ms - r.created_ms > r.ttl_ms;
}

std::int64_t reservation_requeue_ms(const reservation_info& r, std::int64_t now_ms) noexcept {
  constexpr std::int64_t lo = 3000, hi = 15000;
  std::int64_t left = std::numeric_limits<std::int64_t>::max();
  if (r.expires_ms) left = std::min(left, *r.expires_ms - now_ms);
  if (r.ttl_ms > 0) left = std::min(left, r.created_ms + r.ttl_ms - now_ms);
  return std::clamp(left, lo, hi);
}

resource_list reservations_requested(const node_info& node) noexcept {
  resource_list sum;
  for (const auto& p : node.pods) {
    sum += p.requests;
    sum.pods += 1;
  }
  for (const auto& r : node.reservations) sum += r.held();
  return sum;
}

namespace {

// Applies `change` to node.reservations[index] and moves the node's requested by what the
// reservation holds after it instead of before.
template <class Change>
void rebook(node_info& node, std::size_t index, Change&& change) {
  auto& r = node.reservations[index];
  node.requested -= r.held();
  change(r);
  node.requested += r.held();
  ++node.generation;
}

}  // namespace

void assume_reservation_owner(node_info& node, std::size_t index, const pod_info& pod) {
  rebook(node, index, [&](reservation_info& r) {
    resource_list add = pod.requests;
    add.pods = 0;
    r.allocated += add;
    r.owner_count += 1;
    if (r.allocate_once) r.phase = reservation_phase::succeeded;
  });
}

void forget_reservation_owner(node_info& node, std::size_t index, const pod_info& pod) {
  rebook(node, index, [&](reservation_info& r) {
    resource_list sub = pod.requests;
    sub.pods = 0;
    r.allocated -= sub;
    r.owner_count = std::max(0, r.owner_count - 1);
    if (r.allocate_once && r.owner_count == 0 && r.phase == reservation_phase::succeeded)
      r.phase = reservation_phase::available;
  });
}

std::optional<std::size_t> find_reservation(const node_info& node, std::string_view name) noexcept {
  for (std::size_t i = 0; i < node.reservations.size(); ++i)
    if (node.reservations[i].name == name) return i;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// The plugin
// ---------------------------------------------------------------------------------------------

namespace {

struct node_entry {
  std::uint32_t node = 0;
  std::int32_t nominated = -1;  // index into node.reservations
  std::int64_t score = 0;       // of the nominated reservation
  std::int64_t order = 0;       // the lowest non-zero order among its matched reservations
  std::int64_t order_rank = 0;  // K - rank of that order among all nodes' (K = best); 0 = none
  std::string_view fit_reason;  // why no matched reservation fits (when nominated < 0)
};

struct reservation_state final : cycle_data {
  const node_info* base = nullptr;
  std::size_t count = 0;
  bool active = false;                           // PreFilter found something to do
  bool has_affinity = false;                     // the pod must use a reservation
  std::vector<node_entry> entries;               // sorted by node
  std::vector<std::size_t> matched, candidates;  // scratch
  std::vector<std::int64_t> orders;              // scratch
  std::vector<std::int8_t> owner_memo;           // per owner class: -1 unknown, 0 no, 1 yes

  [[nodiscard]] const node_entry* find(const node_info& n) const {
    if (base == nullptr || &n < base || &n >= base + count) return nullptr;
    const auto i = static_cast<std::uint32_t>(&n - base);
    auto it = std::lower_bound(entries.begin(), entries.end(), i,
                               [](const node_entry& e, std::uint32_t k) { return e.node < k; });
    return it != entries.end() && it->node == i ? &*it : nullptr;
  }
};

}  // namespace

status reservation_plugin::pre_filter(cycle_state& st, const pod_info& pod,
                                      std::span<const node_info> nodes, event_time) {
  auto& s = st.slot<reservation_state>(slot());
  s.base = nodes.data();
  s.count = nodes.size();
  s.active = false;
  s.entries.clear();
  s.has_affinity =
      pod.identity && pod.identity->has_reservation_affinity && !pod.identity->reservation_ignored;
  if (pod.reserve_pod || (pod.identity && pod.identity->reservation_ignored)) return status::skip();
  const pod_match_view view(pod.key, identity_of(pod));
  std::fill(s.owner_memo.begin(), s.owner_memo.end(), std::int8_t{-1});
  if (classes_) {
    bool any = false;
    s.owner_memo.assign(classes_->size() + 1, 0);
    for (std::uint32_t id = 1; id <= classes_->size(); ++id) {
      const bool m = match_owners(view, classes_->spec(id));
      s.owner_memo[id] = m ? 1 : 0;
      any = any || m;
    }
    if (!any) return s.has_affinity ? status::unresolvable(reason_no_match) : status::skip();
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const node_info& n = nodes[i];
    if (n.reservations.empty()) continue;
    s.matched.clear();
    for (std::size_t k = 0; k < n.reservations.size(); ++k)
      if (matches(n.reservations[k], view, &s.owner_memo)) s.matched.push_back(k);
    if (s.matched.empty()) continue;
    node_entry e;
    e.node = static_cast<std::uint32_t>(i);
    resource_list relief;
    std::int64_t node_order = 0;
    s.candidates.clear();
    for (const std::size_t k : s.matched) {
      const auto& r = n.reservations[k];
      relief += r.remaining();
      relief.pods += 1;
      if (r.order != 0 && (node_order == 0 || r.order < node_order)) node_order = r.order;
      const std::string_view why = fit_with_reservation(pod, n, r);
      if (why.empty())
        s.candidates.push_back(k);
      else if (e.fit_reason.empty())
        e.fit_reason = why;
    }
    if (auto nom = nominate_reservation(pod, n, s.candidates)) {
      e.nominated = static_cast<std::int32_t>(*nom);
      e.score = score_reservation(pod, n.reservations[*nom]);
    }
    e.order = node_order;
    st.reservation_relief.emplace_back(&n, relief);
    s.entries.push_back(e);
  }
  // Rank the nodes' orders (findMostPreferredReservationByOrder per node): Score gives the
  // feasible node with the lowest one mostPreferredScore, which only NormalizeScore, seeing every
  // scored node, can pick.
  s.orders.clear();
  for (const auto& e : s.entries)
    if (e.order != 0) s.orders.push_back(e.order);
  std::sort(s.orders.begin(), s.orders.end());
  s.orders.erase(std::unique(s.orders.begin(), s.orders.end()), s.orders.end());
  for (auto& e : s.entries) {
    if (e.order == 0) continue;
    const auto rank =
        std::lower_bound(s.orders.begin(), s.orders.end(), e.order) - s.orders.begin();
    e.order_rank = static_cast<std::int64_t>(s.orders.size()) - rank;
  }
  if (s.entries.empty()) {
    if (s.has_affinity) return status::unresolvable(reason_no_match);
    return status::skip();
  }
  s.active = true;
  return {};
}

status reservation_plugin::filter(cycle_state& st, const pod_info&, const node_info& node,
                                  event_time) {
  const auto* s = st.find<reservation_state>(slot());
  if (s == nullptr || !s->active) return {};
  const node_entry* e = s->find(node);
  if (e == nullptr) {
    if (s->has_affinity) return status::unresolvable(reason_affinity);
    return {};
  }
  if (e->nominated < 0) return status::unschedulable(e->fit_reason);
  return {};
}

std::int64_t reservation_plugin::score(cycle_state& st, const pod_info&, const node_info& node,
                                       event_time) {
  const auto* s = st.find<reservation_state>(slot());
  if (s == nullptr || !s->active) return 0;
  const node_entry* e = s->find(node);
  if (e == nullptr || e->nominated < 0) return 0;
  // A node holding an order scores above every reservation score (0..100), by its order's rank,
  // so that normalize_score can find the best of the scored nodes.
  if (e->order_rank == 0) return e->score;
  return most_preferred_score + 1 + e->order_rank * (max_node_score + 1) + e->score;
}

bool reservation_plugin::normalize_score(cycle_state& st, const pod_info&,
                                         std::span<std::int64_t> scores) {
  const auto* s = st.find<reservation_state>(slot());
  if (s == nullptr || !s->active) return false;
  // The first scored node with the best order gets mostPreferredScore; the others with an order
  // keep their reservation's score.
  std::int64_t* best = nullptr;
  for (auto& x : scores)
    if (x > most_preferred_score && (best == nullptr || x > *best)) best = &x;
  for (auto& x : scores)
    if (x > most_preferred_score)
      x = &x == best ? most_preferred_score : (x - most_preferred_score - 1) % (max_node_score + 1);
  default_normalize_score(max_node_score, false, scores);
  return true;
}

status reservation_plugin::reserve(cycle_state& st, const pod_info&, const node_info& node,
                                   event_time) {
  const auto* s = st.find<reservation_state>(slot());
  if (s == nullptr || !s->active) return {};
  const node_entry* e = s->find(node);
  if (e != nullptr && e->nominated >= 0)
    st.reservation = node.reservations[static_cast<std::size_t>(e->nominated)].name;
  return {};
}

void reservation_plugin::unreserve(cycle_state& st, const pod_info&, const node_info&, event_time) {
  st.reservation.clear();
}

}  // namespace colony::scheduler
