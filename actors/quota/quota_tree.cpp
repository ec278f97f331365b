// quota_tree: ElasticQuota bookkeeping and runtime fixed point (see quota_tree.hpp).
#include "actors/quota/quota_tree.hpp"

#include <algorithm>

#include "messages/names.hpp"

namespace colony::quota {

namespace {

std::string_view get(const string_map& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? std::string_view{} : std::string_view{it->second};
}

bool is_special(std::string_view name) {
  return name == quota_names::system_quota || name == quota_names::default_quota;
}

// Normalizes a spec's key sets and masks its lists to them.
void normalize(quota_spec& s) {
  s.min_keys = resolve_keys(s.min_keys, s.min);
  s.max_keys = resolve_keys(s.max_keys, s.max);
  s.shared_weight_keys = resolve_keys(s.shared_weight_keys, s.shared_weight);
  s.used_keys = resolve_keys(s.used_keys, s.used);
  s.total_resource_keys = resolve_keys(s.total_resource_keys, s.total_resource);
  s.min = masked(s.min, s.min_keys);
  s.max = masked(s.max, s.max_keys);
  s.shared_weight = masked(s.shared_weight, s.shared_weight_keys);
  s.used = masked(s.used, s.used_keys);
  s.total_resource = masked(s.total_resource, s.total_resource_keys);
  if (s.parent == quota_names::root_quota) s.parent.clear();
}

}  // namespace

quota_spec decode_quota(std::string name, std::string namespace_name, string_map labels,
                        string_map annotations, keyed_resources min, keyed_resources max,
                        keyed_resources used) {
  quota_spec s;
  s.name = std::move(name);
  s.namespace_name = std::move(namespace_name);
  s.parent = std::string(get(labels, names::label_quota_parent));
  s.tree_id = std::string(get(labels, names::label_quota_tree_id));
  s.is_parent = get(labels, names::label_quota_is_parent) == "true";
  s.allow_lent_resource = get(labels, names::label_quota_allow_lent_resource) != "false";
  s.is_tree_root = get(labels, names::label_quota_is_root) == "true";
  s.ignore_default_tree = get(labels, quota_names::label_quota_ignore_default_tree) == "true";
  s.allow_force_update = get(labels, quota_names::label_allow_force_update) == "true";
  s.min = min.values;
  s.min_keys = min.keys;
  s.max = max.values;
  s.max_keys = max.keys;
  s.used = used.values;
  s.used_keys = used.keys;

  // GetSharedWeight: absent, unparsable or all-zero → max.
  s.shared_weight = max.values;
  s.shared_weight_keys = max.keys;
  if (auto sw = get(annotations, names::annotation_shared_weight); !sw.empty()) {
    auto parsed = parse_resource_list_json(sw, "");
    if (parsed && !masked(parsed->resources.values, parsed->resources.keys).is_zero()) {
      s.shared_weight = parsed->resources.values;
      s.shared_weight_keys = parsed->resources.keys;
    }
  }
  if (auto ns = get(annotations, quota_names::annotation_quota_namespaces); !ns.empty()) {
    if (auto list = parse_string_list_json(ns, "")) s.namespaces = std::move(*list);
  }
  if (auto tr = get(annotations, quota_names::annotation_total_resource); !tr.empty()) {
    if (auto parsed = parse_resource_list_json(tr, "")) {
      s.total_resource = parsed->resources.values;
      s.total_resource_keys = parsed->resources.keys;
    }
  }
  if (auto g = get(annotations, quota_names::annotation_guaranteed); !g.empty()) {
    if (auto parsed = parse_resource_list_json(g, "")) {
      s.guaranteed = parsed->resources.values;
      s.guaranteed_keys = parsed->resources.keys;
    }
  }
  s.labels = std::move(labels);
  s.annotations = std::move(annotations);
  return s;
}

std::int64_t scaled_min(std::int64_t total, std::int64_t child_min, std::int64_t sum_min) {
  if (total <= 0 || sum_min <= 0) return 0;
  // float64(total) * float64(min) / float64(sum), truncated, as the Go code computes it.
  return static_cast<std::int64_t>(static_cast<double>(total) * static_cast<double>(child_min) /
                                   static_cast<double>(sum_min));
}

void redistribution(std::int64_t total, std::span<runtime_node> nodes,
                    redistribution_scratch& scratch) {
  auto& hungry = scratch.hungry;
  auto& next = scratch.next;
  hungry.clear();
  std::int64_t to_partition = total;
  std::int64_t weight_sum = 0;
  for (std::uint32_t i = 0; i < nodes.size(); ++i) {
    auto& n = nodes[i];
    std::int64_t m = std::max(n.min, n.guarantee);
    if (n.request > m) {  // hungry: starts at its min and competes for the rest
      hungry.push_back(i);
      weight_sum += n.shared_weight;
      n.runtime = m;
    } else {
      // A lending child keeps only its request; a non-lending one keeps its whole min.
      n.runtime = n.allow_lent_resource ? n.request : m;
    }
    to_partition -= n.runtime;
  }

  auto& deltas = scratch.deltas;
  auto& rem = scratch.remainders;
  while (to_partition > 0 && weight_sum > 0 && !hungry.empty()) {
    // computeHamiltonDeltas: floor shares (exact 128-bit), residual by largest remainder.
    deltas.assign(hungry.size(), 0);
    rem.clear();
    std::int64_t distributed = 0;
    const auto P = static_cast<unsigned __int128>(to_partition);
    const auto W = static_cast<unsigned __int128>(weight_sum);
    for (std::uint32_t h = 0; h < hungry.size(); ++h) {
      std::int64_t w = nodes[hungry[h]].shared_weight;
      if (w <= 0) continue;
      unsigned __int128 prod = static_cast<unsigned __int128>(w) * P;
      auto base = static_cast<std::int64_t>(prod / W);
      deltas[h] = base;
      distributed += base;
      rem.push_back({prod % W, h});
    }
    std::int64_t residual = to_partition - distributed;
    if (residual > 0 && !rem.empty()) {
      auto take = static_cast<std::size_t>(
          std::min<std::int64_t>(residual, static_cast<std::int64_t>(rem.size())));
      auto before = [&](const redistribution_scratch::remainder_entry& a,
                        const redistribution_scratch::remainder_entry& b) {
        if (a.remainder != b.remainder) return a.remainder > b.remainder;
        return nodes[hungry[a.index]].name < nodes[hungry[b.index]].name;
      };
      std::partial_sort(rem.begin(), rem.begin() + static_cast<std::ptrdiff_t>(take), rem.end(),
                        before);
      for (std::size_t r = 0; r < take; ++r) ++deltas[rem[r].index];
    }

    next.clear();
    std::int64_t next_partition = 0;
    std::int64_t next_weight = 0;
    for (std::uint32_t h = 0; h < hungry.size(); ++h) {
      auto& n = nodes[hungry[h]];
      n.runtime += deltas[h];
      if (n.runtime < n.request) {
        next.push_back(hungry[h]);
        next_weight += n.shared_weight;
      } else {  // satisfied: the excess goes back into the pool
        next_partition += n.runtime - n.request;
        n.runtime = n.request;
      }
    }
    if (next_partition <= 0 || next.empty()) break;
    hungry.swap(next);
    to_partition = next_partition;
    weight_sum = next_weight;
  }
}

void redistribution(std::int64_t total, std::span<runtime_node> nodes) {
  redistribution_scratch scratch;
  redistribution(total, nodes, scratch);
}

// ---- quota_tree ------------------------------------------------------------------------

quota_tree::quota_tree(elastic_quota_args args) : args_(std::move(args)) {
  for (auto [name, max] : {std::pair{quota_names::system_quota, args_.system_quota_group_max},
                           std::pair{quota_names::default_quota, args_.default_quota_group_max}}) {
    quota_spec s;
    s.name = std::string(name);
    s.namespace_name = args_.quota_group_namespace;
    s.max = max;
    s.max_keys = key::cpu | key::memory;
    s.min_keys = no_keys;
    permit_unchecked(upsert_quota(std::move(s)));
  }
}

int quota_tree::find_index(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

result<void> quota_tree::upsert_quota(quota_spec spec) {
  if (spec.name.empty()) return fail(errc::invalid_input, "quota name is empty", "metadata.name");
  if (spec.name == quota_names::root_quota) {
    return fail(errc::invalid_input, "koordinator-root-quota is virtual and cannot be stored",
                "metadata.name");
  }
  normalize(spec);
  const bool special = is_special(spec.name);
  if (special) spec.parent.clear();

  node* n = nullptr;
  // The namespace index only depends on namespaces annotations.
  bool namespaces_changed = !spec.namespaces.empty();
  if (int i = find_index(spec.name); i >= 0) {
    n = &nodes_[static_cast<std::size_t>(i)];
    namespaces_changed = namespaces_changed || !n->spec.namespaces.empty();
  } else {
    index_.emplace(spec.name, static_cast<int>(nodes_.size()));
    nodes_.emplace_back();
    n = &nodes_.back();
    n->sums = nullptr;
  }
  n->special = special;
  // A zero shared weight means "not given" (GetSharedWeight defaults to max).
  n->weight = spec.shared_weight.is_zero() ? spec.max : spec.shared_weight;
  n->spec = std::move(spec);
  topology_dirty_ = true;
  needs_refresh_ = true;
  if (namespaces_changed) rebuild_namespace_index();
  return {};
}

result<void> quota_tree::delete_quota(std::string_view name) {
  int i = find_index(name);
  if (i < 0) return fail(errc::not_found, "quota not found: " + std::string(name), "metadata.name");
  if (is_special(name)) {
    return fail(errc::failed_precondition, "can not delete quotaGroup :" + std::string(name),
                "metadata.name");
  }
  // Swap-remove keeps slots dense; every iteration goes through the name-sorted index.
  auto last = static_cast<int>(nodes_.size()) - 1;
  if (i != last) {
    nodes_[static_cast<std::size_t>(i)] = std::move(nodes_[static_cast<std::size_t>(last)]);
    index_[nodes_[static_cast<std::size_t>(i)].spec.name] = i;
  }
  nodes_.pop_back();
  index_.erase(index_.find(name));
  topology_dirty_ = true;
  needs_refresh_ = true;
  rebuild_namespace_index();
  return {};
}

void quota_tree::set_cluster_total(const resource_list& total) {
  if (total != cluster_total_) needs_refresh_ = true;
  cluster_total_ = total;
}

void quota_tree::refresh_self(node& n) {
  const resource_keys mk = n.spec.max_keys;
  if (n.sums == nullptr) {
    n.self = pod_sums{};
    return;
  }
  n.self.request = masked(n.sums->request, mk);
  n.self.used = masked(n.sums->used, mk);
  n.self.np_request = masked(n.sums->np_request, mk);
  n.self.np_used = masked(n.sums->np_used, mk);
}

void quota_tree::book(const quota_pod& pod, int sign) {
  auto it = sums_.find(pod.quota);
  if (it == sums_.end()) it = sums_.emplace(pod.quota, pod_sums{}).first;
  resource_list r = pod.request;
  if (sign < 0) r = resource_list{} - r;
  auto& s = it->second;
  s.request += r;
  if (pod.non_preemptible) s.np_request += r;
  if (pod.assigned) {
    s.used += r;
    if (pod.non_preemptible) s.np_used += r;
  }
  if (int i = find_index(pod.quota); i >= 0) {
    auto& n = nodes_[static_cast<std::size_t>(i)];
    n.sums = &it->second;
    refresh_self(n);
  }
}

resource_list quota_pod_requests(const resource_list& requests, const resource_list& overhead,
                                 bool ignore_pod_overhead) {
  if (!ignore_pod_overhead) return requests;
  return requests - overhead;
}

result<void> quota_tree::upsert_pod(quota_pod pod) {
  if (pod.name.empty()) return fail(errc::invalid_input, "pod name is empty", "pod.name");
  if (!pod.overhead.is_zero()) {
    pod.request =
        quota_pod_requests(pod.request, pod.overhead, args_.elastic_quota_ignore_pod_overhead);
    pod.overhead = {};
  }
  needs_refresh_ = true;
  auto it = pods_.find(pod.name);
  if (it != pods_.end()) {
    book(it->second, -1);
    book(pod, +1);
    it->second = std::move(pod);
  } else {
    book(pod, +1);
    std::string key = pod.name;
    pods_.emplace(std::move(key), std::move(pod));
  }
  return {};
}

bool quota_tree::remove_pod(std::string_view pod_name) {
  auto it = pods_.find(std::string(pod_name));
  if (it == pods_.end()) return false;
  book(it->second, -1);
  pods_.erase(it);
  needs_refresh_ = true;
  return true;
}

bool quota_tree::update_pod_is_assigned(std::string_view pod_name, bool assigned,
                                        std::string_view node_name) {
  auto it = pods_.find(std::string(pod_name));
  if (it == pods_.end()) return false;
  quota_pod& pod = it->second;
  pod.node = std::string(node_name);
  if (pod.assigned == assigned) return true;
  book(pod, -1);
  pod.assigned = assigned;
  book(pod, +1);
  // What refresh() would now compute for used: the pod masked to its quota's max keys, added
  // unchanged to every ancestor. Request is untouched, so runtimes stay valid unless
  // the pod is in the system/default quota (their used shrinks the default tree's total).
  const int i = find_index(pod.quota);
  if (i < 0 || topology_dirty_) {
    needs_refresh_ = true;
    return true;
  }
  auto& n = nodes_[static_cast<std::size_t>(i)];
  if (n.special) needs_refresh_ = true;
  resource_list delta = masked(pod.request, n.spec.max_keys);
  if (!assigned) delta = resource_list{} - delta;
  const bool np = pod.non_preemptible;
  n.status.used += delta;
  if (np) n.status.non_preemptible_used += delta;
  if (!n.in_tree) return true;
  for (int p = n.parent; p >= 0; p = nodes_[static_cast<std::size_t>(p)].parent) {
    auto& a = nodes_[static_cast<std::size_t>(p)];
    a.status.used += delta;
    if (np) a.status.non_preemptible_used += delta;
  }
  return true;
}

void quota_tree::rebuild_namespace_index() {
  namespace_to_quota_.clear();
  for (const auto& [name, i] : index_) {  // name order: the first quota listing a namespace wins
    for (const auto& ns : nodes_[static_cast<std::size_t>(i)].spec.namespaces) {
      namespace_to_quota_.emplace(ns, name);
    }
  }
}

void quota_tree::rebuild_topology() {
  for (auto& n : nodes_) {
    n.children.clear();
    n.in_tree = false;
    n.tree = -1;
    if (n.special || n.spec.parent.empty()) {
      n.parent = -1;
    } else {
      int p = find_index(n.spec.parent);
      n.parent = (p >= 0 && !nodes_[static_cast<std::size_t>(p)].special) ? p : -2;
    }
    auto s = sums_.find(n.spec.name);
    n.sums = s == sums_.end() ? nullptr : &s->second;
    refresh_self(n);  // max keys may have changed
  }
  // Trees: the default tree "" always exists; others come from top-level quotas' tree-id.
  std::vector<std::string> ids{""};
  for (const auto& n : nodes_) {
    if (!n.special && n.parent == -1 && !n.spec.tree_id.empty()) ids.push_back(n.spec.tree_id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  trees_.clear();
  for (auto& id : ids) trees_.push_back(tree_info{std::move(id), {}, {}});
  auto tree_of = [&](const std::string& id) {
    return static_cast<int>(
        std::lower_bound(trees_.begin(), trees_.end(), id,
                         [](const tree_info& t, const std::string& v) { return t.id < v; }) -
        trees_.begin());
  };
  for (const auto& [name, i] : index_) {  // name order, so every child list is sorted by name
    auto& n = nodes_[static_cast<std::size_t>(i)];
    if (n.special) continue;
    if (n.parent == -1) {
      trees_[static_cast<std::size_t>(tree_of(n.spec.tree_id))].children.push_back(i);
    } else if (n.parent >= 0) {
      nodes_[static_cast<std::size_t>(n.parent)].children.push_back(i);
    }
  }
  // Breadth-first from every tree root: parents before children. Nodes never reached
  // (missing parent, parent cycle) stay out of the calculation.
  topo_.clear();
  for (std::size_t t = 0; t < trees_.size(); ++t) {
    std::size_t head = topo_.size();
    for (int c : trees_[t].children) topo_.push_back(c);
    while (head < topo_.size()) {
      auto& n = nodes_[static_cast<std::size_t>(topo_[head++])];
      n.in_tree = true;
      n.tree = static_cast<int>(t);
      for (int c : n.children) topo_.push_back(c);
    }
  }
  // Name order, and the identity part of every status (constant until the next rebuild).
  order_.clear();
  for (const auto& [name, i] : index_) {
    order_.push_back(i);
    auto& n = nodes_[static_cast<std::size_t>(i)];
    auto& st = n.status;
    st.name = name;
    st.parent = n.spec.parent.empty() ? std::string(quota_names::root_quota) : n.spec.parent;
    st.tree_id = n.in_tree ? trees_[static_cast<std::size_t>(n.tree)].id : n.spec.tree_id;
    st.in_tree = n.in_tree;
    st.runtime_keys = n.spec.max_keys;
  }
  topology_dirty_ = false;
}

void quota_tree::distribute(const resource_list& total, const std::vector<int>& children) {
  if (children.empty()) return;
  calc_.resize(children.size());
  resource_keys active = 0;
  for (int c : children) active |= nodes_[static_cast<std::size_t>(c)].active;
  for (int k = 0; k < resource_count; ++k) {
    // Nothing asked and nothing guaranteed in this key: every runtime stays 0 (the refresh
    // loop zeroed runtime_raw, and auto_min equals the zero min).
    if (!has_key(active, k)) continue;
    std::int64_t sum_min = 0;
    for (int c : children) sum_min += field(nodes_[static_cast<std::size_t>(c)].spec.min, k);
    const std::int64_t t = field(total, k);
    const bool scale = args_.enable_min_quota_scale && t < sum_min;
    for (std::size_t j = 0; j < children.size(); ++j) {
      auto& n = nodes_[static_cast<std::size_t>(children[j])];
      std::int64_t m = field(n.spec.min, k);
      std::int64_t am = scale ? scaled_min(t, m, sum_min) : m;
      field(n.status.auto_scale_min, k) = am;
      calc_[j] = runtime_node{n.spec.name,
                              field(n.weight, k),
                              field(n.status.limited_request, k),
                              am,
                              0,
                              n.spec.allow_lent_resource,
                              0};
    }
    redistribution(t, std::span<runtime_node>(calc_.data(), children.size()), scratch_);
    for (std::size_t j = 0; j < children.size(); ++j) {
      field(nodes_[static_cast<std::size_t>(children[j])].runtime_raw, k) = calc_[j].runtime;
    }
  }
}

std::vector<quota_status> quota_tree::refresh() {
  refresh_runtime();
  // Statuses, and the changed ones in name order.
  std::vector<quota_status> changed;
  for (int i : order_) {
    auto& n = nodes_[static_cast<std::size_t>(i)];
    const auto& st = n.status;
    auto& e = n.emitted;
    const bool differs = !e.valid || st.runtime != e.runtime || st.runtime_keys != e.runtime_keys ||
                         st.used != e.used || st.request != e.request ||
                         st.non_preemptible_used != e.non_preemptible_used;
    if (differs) {
      e = {st.runtime, st.used, st.request, st.non_preemptible_used, st.runtime_keys, true};
      changed.push_back(st);
    }
  }
  return changed;
}

void quota_tree::refresh_runtime() {
  if (topology_dirty_) rebuild_topology();
  needs_refresh_ = false;

  // Own pods, masked to the quota's max keys.
  for (auto& n : nodes_) {
    n.status.child_request = n.self.request;
    n.status.used = n.self.used;
    n.status.non_preemptible_used = n.self.np_used;
    n.status.non_preemptible_request = n.self.np_request;
    n.runtime_raw = resource_list{};
    n.status.auto_scale_min = n.spec.min;
  }
  // Bottom-up: request, limited request, used (children before parents).
  for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
    auto& n = nodes_[static_cast<std::size_t>(*it)];
    n.status.request = n.spec.allow_lent_resource ? n.status.child_request
                                                  : max_of(n.status.child_request, n.spec.min);
    n.status.limited_request = n.status.request;
    for (int k = 0; k < resource_count; ++k) {
      if (has_key(n.spec.max_keys, k))
        field(n.status.limited_request, k) =
            std::min(field(n.status.limited_request, k), field(n.spec.max, k));
    }
    n.active = static_cast<resource_keys>(nonzero_keys(n.status.limited_request) |
                                          nonzero_keys(n.spec.min));
    if (n.parent >= 0) {
      auto& p = nodes_[static_cast<std::size_t>(n.parent)];
      p.status.child_request += n.status.limited_request;
      p.status.used += n.status.used;
      p.status.non_preemptible_used += n.status.non_preemptible_used;
      p.status.non_preemptible_request += n.status.non_preemptible_request;
    }
  }
  // Orphans and the special quotas: own pods only.
  for (auto& n : nodes_) {
    if (n.in_tree) continue;
    n.status.request = n.spec.allow_lent_resource ? n.status.child_request
                                                  : max_of(n.status.child_request, n.spec.min);
    n.status.limited_request = n.status.request;
  }

  // Totals: the default tree gets the cluster minus system/default used minus the totals of
  // other trees' root quotas (unless ignore-default-tree); another tree gets its roots' totals.
  resource_list sys_default_used;
  for (auto name : {quota_names::system_quota, quota_names::default_quota}) {
    if (int i = find_index(name); i >= 0)
      sys_default_used += nodes_[static_cast<std::size_t>(i)].status.used;
  }
  for (auto& t : trees_) t.total = resource_list{};
  if (!trees_.empty()) trees_[0].total = cluster_total_ - sys_default_used;
  for (std::size_t t = 1; t < trees_.size(); ++t) {
    for (int c : trees_[t].children) {
      const auto& s = nodes_[static_cast<std::size_t>(c)].spec;
      if (!s.is_tree_root) continue;
      trees_[t].total += s.total_resource;
      if (!s.ignore_default_tree) trees_[0].total -= s.total_resource;
    }
  }

  // Top-down: each tree's root children, then every parent with its own runtime as total.
  for (const auto& t : trees_) distribute(t.total, t.children);
  for (int i : topo_) {
    auto& n = nodes_[static_cast<std::size_t>(i)];
    if (!n.children.empty()) distribute(n.runtime_raw, n.children);
  }

  // RefreshRuntime returns max for system/default; orphans have no runtime.
  for (auto& n : nodes_) {
    n.status.runtime = n.special
                           ? n.spec.max
                           : (n.in_tree ? masked(n.runtime_raw, n.spec.max_keys) : resource_list{});
  }
}

const quota_status* quota_tree::status(std::string_view name) const {
  int i = find_index(name);
  return i < 0 ? nullptr : &nodes_[static_cast<std::size_t>(i)].status;
}

const quota_spec* quota_tree::spec(std::string_view name) const {
  int i = find_index(name);
  return i < 0 ? nullptr : &nodes_[static_cast<std::size_t>(i)].spec;
}

std::vector<std::string> quota_tree::ancestors(std::string_view name) const {
  std::vector<std::string> out;
  int i = find_index(name);
  // Bounded by the quota count so a parent cycle cannot loop forever.
  while (i >= 0 && out.size() <= nodes_.size()) {
    const auto& parent = nodes_[static_cast<std::size_t>(i)].spec.parent;
    if (parent.empty()) break;
    i = find_index(parent);
    if (i < 0) break;
    out.push_back(parent);
  }
  return out;
}

std::vector<std::string> quota_tree::quota_names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, i] : index_) out.push_back(name);
  return out;
}

bool quota_tree::has_children(std::string_view name) const {
  return std::any_of(nodes_.begin(), nodes_.end(),
                     [&](const node& n) { return n.spec.parent == name; });
}

std::vector<const quota_pod*> quota_tree::pods_of(std::string_view quota) const {
  std::vector<const quota_pod*> out;
  for (const auto& [name, p] : pods_) {
    if (p.quota == quota) out.push_back(&p);
  }
  std::sort(out.begin(), out.end(),
            [](const quota_pod* a, const quota_pod* b) { return a->name < b->name; });
  return out;
}

const quota_pod* quota_tree::pod(std::string_view name) const {
  auto it = pods_.find(std::string(name));
  return it == pods_.end() ? nullptr : &it->second;
}

resource_list quota_tree::tree_total(std::string_view tree_id) const {
  for (const auto& t : trees_) {
    if (t.id == tree_id) return t.total;
  }
  return {};
}

std::string quota_tree::get_quota_name(std::string_view pod_namespace,
                                       std::string_view quota_label) const {
  const std::string fallback =
      args_.disable_default_quota ? std::string{} : std::string(quota_names::default_quota);
  if (!quota_label.empty())
    return find_index(quota_label) >= 0 ? std::string(quota_label) : fallback;
  if (int i = find_index(pod_namespace);
      i >= 0 && nodes_[static_cast<std::size_t>(i)].spec.namespace_name == pod_namespace) {
    return std::string(pod_namespace);
  }
  if (auto it = namespace_to_quota_.find(pod_namespace); it != namespace_to_quota_.end())
    return it->second;
  return fallback;
}

}  // namespace colony::quota
