#include "actors/descheduler/job_index.hpp"

namespace colony::descheduler {

namespace {

std::string_view namespace_of(std::string_view key) {
  const auto slash = key.find('/');
  return slash == std::string_view::npos ? std::string_view{} : key.substr(0, slash);
}

// job_counts(j, true): Running, or Pending and passed arbitration.
bool arbitrated(const job_info& j) {
  return j.phase == job_phase::running || (j.phase == job_phase::pending && j.passed_arbitration);
}

template <class M>
std::int64_t lookup(const M& m, std::string_view k, bool arbitrating) {
  const auto it = m.find(k);
  return it == m.end() ? 0 : it->second[arbitrating ? 1 : 0];
}

}  // namespace

std::string job_index::group_key(std::string_view ns, const owner_ref& owner) {
  return joined_key<'\0'>(workload_ref{ns, owner.kind, owner.name});
}

// `key` views the entry's key in entries_ (the group keeps the view).
void job_index::file(std::string_view key, entry& e, const pod_info* pod) {
  e.node.clear();
  e.group.clear();
  e.key_in_ns = e.key_prefixed = false;
  if (pod == nullptr) return;
  if (!pod->node.empty()) {
    e.node = pod->node;
    auto& n = pods_by_node_[e.node];
    ++n[0];
    if (e.arbitrated > 0) ++n[1];
  }
  e.key_in_ns = namespace_of(key) == pod->ns;
  e.key_prefixed =
      key.size() > pod->ns.size() && key.starts_with(pod->ns) && key[pod->ns.size()] == '/';
  if (!pod->owner.empty() && (e.key_in_ns || e.key_prefixed)) {
    e.group = group_key(pod->ns, pod->owner);
    auto& g = groups_[e.group];
    g.members.emplace(key, &e);
    if (e.key_prefixed) g.migrating += e.arbitrated;
  }
}

void job_index::unfile(std::string_view key, entry& e) {
  if (!e.node.empty()) {
    const auto n = pods_by_node_.find(e.node);
    --n->second[0];
    if (e.arbitrated > 0) --n->second[1];
    if (n->second[0] == 0) pods_by_node_.erase(n);
  }
  if (!e.group.empty()) {
    const auto g = groups_.find(e.group);
    g->second.members.erase(key);
    if (e.key_prefixed) g->second.migrating -= e.arbitrated;
    if (g->second.members.empty()) groups_.erase(g);
  }
  e.node.clear();
  e.group.clear();
  e.key_in_ns = e.key_prefixed = false;
}

void job_index::add(const job_info& j, const pod_info* pod) {
  if (is_final(j.phase)) return;
  auto [it, fresh] = entries_.try_emplace(j.pod);
  entry& e = it->second;
  // Filed afresh each time, as the filters would find the pod now.
  if (!fresh) unfile(it->first, e);
  file(it->first, e, pod);
  const bool arb = arbitrated(j);
  ++e.active;
  ++total_[0];
  auto& ns = by_namespace_[std::string(namespace_of(j.pod))];
  ++ns[0];
  if (arb) {
    ++total_[1];
    ++ns[1];
    if (++e.arbitrated == 1 && !e.node.empty()) ++pods_by_node_[e.node][1];
    if (!e.group.empty() && e.key_prefixed) ++groups_[e.group].migrating;
  }
}

void job_index::remove(const job_info& j) {
  if (is_final(j.phase)) return;
  const auto it = entries_.find(j.pod);
  if (it == entries_.end()) return;
  entry& e = it->second;
  const bool arb = arbitrated(j);
  if (e.active == 0 || (arb && e.arbitrated == 0)) return;  // not added as it is
  --e.active;
  --total_[0];
  const auto ns = by_namespace_.find(namespace_of(j.pod));
  --ns->second[0];
  if (arb) {
    --total_[1];
    --ns->second[1];
    if (--e.arbitrated == 0 && !e.node.empty()) --pods_by_node_.find(e.node)->second[1];
    if (!e.group.empty() && e.key_prefixed) --groups_.find(e.group)->second.migrating;
  }
  if (ns->second[0] == 0) by_namespace_.erase(ns);
  if (e.active == 0) {
    unfile(it->first, e);
    entries_.erase(it);
  }
}

bool job_index::mark_passed(const job_info& j) {
  if (j.phase != job_phase::pending || j.passed_arbitration) return false;
  const auto it = entries_.find(j.pod);
  if (it == entries_.end() || it->second.active == 0) return false;
  entry& e = it->second;
  ++total_[1];
  ++by_namespace_.find(namespace_of(j.pod))->second[1];
  if (++e.arbitrated == 1 && !e.node.empty()) ++pods_by_node_.find(e.node)->second[1];
  if (!e.group.empty() && e.key_prefixed) ++groups_.find(e.group)->second.migrating;
  return true;
}

void job_index::pod_changed(std::string_view key, const pod_info* pod) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  unfile(it->first, it->second);
  file(it->first, it->second, pod);
}

void job_index::clear() {
  entries_.clear();
  total_ = {};
  by_namespace_.clear();
  pods_by_node_.clear();
  groups_.clear();
}

std::int64_t job_index::counting(bool arbitrating) const { return total_[arbitrating ? 1 : 0]; }

std::int64_t job_index::counting_of_pod(std::string_view key, bool arbitrating) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return 0;
  return arbitrating ? it->second.arbitrated : it->second.active;
}

std::int64_t job_index::counting_in_namespace(std::string_view ns, bool arbitrating) const {
  return lookup(by_namespace_, ns, arbitrating);
}

std::int64_t job_index::pods_counting_on_node(std::string_view node, bool arbitrating) const {
  return lookup(pods_by_node_, node, arbitrating);
}

std::string_view job_index::node_of(std::string_view key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? std::string_view{} : std::string_view(it->second.node);
}

std::int64_t job_index::migrating_in_workload(std::string_view ns, const owner_ref& owner) const {
  const auto g = groups_.find(workload_ref{ns, owner.kind, owner.name});
  return g == groups_.end() ? 0 : g->second.migrating;
}

}  // namespace colony::descheduler
