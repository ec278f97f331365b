#include "actors/scheduler/numa/cpu_accumulator.hpp"

#include <algorithm>

namespace colony::scheduler::numa {
namespace {

// Lists of dense CPU indices, one per NUMA node / socket, in the order the rule walks them.
struct cpu_groups {
  std::vector<int> flat;
  std::vector<std::pair<int, int>> spans;  // [begin, end) into flat, in walk order
  [[nodiscard]] std::span<const int> at(std::size_t g) const {
    return {flat.data() + spans[g].first,
            static_cast<std::size_t>(spans[g].second - spans[g].first)};
  }
};

class accumulator {
 public:
  accumulator(const cpu_topology& t, const cpu_set& available,
              std::span<const allocated_cpu> allocated, int needed, const take_policy& p)
      : t_(t), p_(p), needed_(needed) {
    const auto n = static_cast<std::size_t>(t.num_cpus());
    allocatable_.assign(n, 0);
    available.for_each([&](int id) {
      const int i = t.index_of(id);
      if (i >= 0) {
        allocatable_[static_cast<std::size_t>(i)] = 1;
        ++allocatable_n_;
      }
    });
    ref_.assign(n, 0);
    excl_core_.assign(static_cast<std::size_t>(t.num_cores()), 0);
    excl_node_.assign(static_cast<std::size_t>(t.num_nodes()), 0);
    for (const auto& a : allocated) {
      const int i = t.index_of(a.cpu_id);
      if (i < 0) continue;
      if (a.exclusive_policy == cpu_exclusive_policy::pcpu_level) {
        excl_core_[u(t.core_index(i))] = 1;
      } else if (a.exclusive_policy == cpu_exclusive_policy::numa_node_level) {
        excl_node_[u(t.node_index(i))] = 1;
      }
      // newCPUAccumulator copies RefCount only when sharing is allowed.
      if (p.max_ref_count > 1) ref_[u(i)] = a.ref_count;
    }
    taken_in_socket_.assign(static_cast<std::size_t>(t.num_sockets()), 0);
    core_n_.assign(static_cast<std::size_t>(t.num_cores()), 0);
    core_seen_.assign(static_cast<std::size_t>(t.num_cores()), 0);
    node_n_.assign(static_cast<std::size_t>(t.num_nodes()), 0);
    socket_n_.assign(static_cast<std::size_t>(t.num_sockets()), 0);
  }

  result<cpu_set> run();
  std::vector<int> spread_order() {
    auto v = free_cpus(false);
    spread(v);
    for (auto& i : v) i = t_.cpu_id_at(i);
    return v;
  }

 private:
  static std::size_t u(int i) { return static_cast<std::size_t>(i); }
  [[nodiscard]] bool satisfied() const { return needed_ < 1; }
  [[nodiscard]] bool needs(int n) const { return needed_ >= n; }
  // The NUMA strategy's order of two free counts: MostAllocated walks the fuller one first.
  [[nodiscard]] bool strategy_before(int a, int b) const {
    return p_.numa_strategy == numa_allocate_strategy::most_allocated ? a < b : a > b;
  }
  [[nodiscard]] bool pcpu_fenced(int cpu) const {
    return p_.exclusive == cpu_exclusive_policy::pcpu_level && excl_core_[u(t_.core_index(cpu))];
  }
  [[nodiscard]] bool numa_fenced(int cpu) const {
    return p_.exclusive == cpu_exclusive_policy::numa_node_level &&
           excl_node_[u(t_.node_index(cpu))];
  }
  // getCoreRefCount over the allocatable CPUs of a core.
  [[nodiscard]] int core_ref(int core) const {
    int r = 0;
    for (auto* c = t_.core_cpus_begin(core); c != t_.core_cpus_end(core); ++c)
      if (allocatable_[u(*c)]) r += ref_[u(*c)];
    return r;
  }
  void sort_by_ref(int* b, int* e) const {
    if (p_.max_ref_count <= 1) return;
    std::stable_sort(b, e, [&](int x, int y) { return ref_[u(x)] < ref_[u(y)]; });
  }

  void take(std::span<const int> cpus) {
    for (int i : cpus) {
      result_.insert(t_.cpu_id_at(i));
      allocatable_[u(i)] = 0;
      --allocatable_n_;
      ++taken_in_socket_[u(t_.socket_index(i))];
      if (p_.exclusive == cpu_exclusive_policy::pcpu_level) {
        excl_core_[u(t_.core_index(i))] = 1;
      } else if (p_.exclusive == cpu_exclusive_policy::numa_node_level) {
        excl_node_[u(t_.node_index(i))] = 1;
      }
    }
    needed_ -= static_cast<int>(cpus.size());
  }

  cpu_groups free_cores(bool by_node, bool filter_full, bool filter_exclusive);
  cpu_groups free_cpus_in(bool by_node, bool filter_exclusive);
  std::vector<int> free_cpus(bool filter_exclusive);
  void spread(std::vector<int>& cpus);

  const cpu_topology& t_;
  take_policy p_;
  int needed_;
  std::vector<char> allocatable_;
  int allocatable_n_ = 0;
  std::vector<int> ref_;
  std::vector<char> excl_core_, excl_node_;
  std::vector<int> taken_in_socket_;
  cpu_set result_;
  // scratch, sized once
  std::vector<int> core_n_, core_seen_, node_n_, socket_n_;
};

// freeCoresInNode (by_node) / freeCoresInSocket: the CPUs of free cores grouped per NUMA node or
// socket; cores by free CPUs desc, then ref count asc (max_ref_count > 1), then core id; groups
// by their CPU count in strategy order, then (nodes) the socket's free CPUs in strategy order,
// then id. Only freeCoresInNode fences NUMANodeLevel-exclusive nodes.
cpu_groups accumulator::free_cores(bool by_node, bool filter_full, bool filter_exclusive) {
  std::fill(core_n_.begin(), core_n_.end(), 0);
  std::fill(socket_n_.begin(), socket_n_.end(), 0);
  const int n = t_.num_cpus();
  const bool fence = by_node && filter_exclusive;
  for (int i = 0; i < n; ++i) {
    if (!allocatable_[u(i)] || (fence && numa_fenced(i))) continue;
    ++core_n_[u(t_.core_index(i))];
    ++socket_n_[u(t_.socket_index(i))];
  }
  const int cpc = t_.cpus_per_core();
  const int keys = by_node ? t_.num_nodes() : t_.num_sockets();
  auto key_of = [&](int core) {
    return by_node ? t_.core_node_index(core) : t_.core_socket_index(core);
  };
  // Bucket the eligible cores by key (counting sort keeps core order within a key).
  std::vector<int> key_cores(u(keys) + 1, 0);
  std::vector<int> key_cpus(u(keys), 0);
  const int cores = t_.num_cores();
  auto eligible = [&](int core) {
    const int c = core_n_[u(core)];
    return c > 0 && (!filter_full || c == cpc);
  };
  for (int c = 0; c < cores; ++c) {
    if (!eligible(c)) continue;
    ++key_cores[u(key_of(c)) + 1];
    key_cpus[u(key_of(c))] += core_n_[u(c)];
  }
  for (int k = 0; k < keys; ++k) key_cores[u(k) + 1] += key_cores[u(k)];
  std::vector<int> order(u(key_cores[u(keys)]));
  {
    auto fill = key_cores;
    for (int c = 0; c < cores; ++c)
      if (eligible(c)) order[u(fill[u(key_of(c))]++)] = c;
  }
  const bool by_ref = p_.max_ref_count > 1;
  cpu_groups g;
  g.flat.reserve(u(n));
  std::vector<int> group_keys;
  std::vector<std::pair<int, int>> spans(u(keys), {0, 0});
  for (int k = 0; k < keys; ++k) {
    auto* b = order.data() + key_cores[u(k)];
    auto* e = order.data() + key_cores[u(k) + 1];
    if (b == e) continue;
    std::sort(b, e, [&](int x, int y) {
      if (core_n_[u(x)] != core_n_[u(y)]) return core_n_[u(x)] > core_n_[u(y)];
      if (by_ref) {
        const int rx = core_ref(x);
        const int ry = core_ref(y);
        if (rx != ry) return rx < ry;
      }
      return x < y;
    });
    const int begin = static_cast<int>(g.flat.size());
    for (auto* c = b; c != e; ++c)
      for (auto* cpu = t_.core_cpus_begin(*c); cpu != t_.core_cpus_end(*c); ++cpu)
        if (allocatable_[u(*cpu)] && !(fence && numa_fenced(*cpu))) g.flat.push_back(*cpu);
    spans[u(k)] = {begin, static_cast<int>(g.flat.size())};
    group_keys.push_back(k);
  }
  std::sort(group_keys.begin(), group_keys.end(), [&](int x, int y) {
    if (key_cpus[u(x)] != key_cpus[u(y)]) return strategy_before(key_cpus[u(x)], key_cpus[u(y)]);
    if (by_node) {
      const int sx = socket_n_[u(t_.node_socket_index(x))];
      const int sy = socket_n_[u(t_.node_socket_index(y))];
      if (sx != sy) return strategy_before(sx, sy);
    }
    return x < y;
  });
  for (int k : group_keys) g.spans.push_back(spans[u(k)]);
  return g;
}

// freeCPUsInNode (by_node) / freeCPUsInSocket: free CPUs per NUMA node or socket, ascending id
// (then by ref count when max_ref_count > 1); with filter_exclusive, fenced CPUs are left out
// (nodes: PCPULevel cores and NUMANodeLevel nodes; sockets: PCPULevel cores) and only the first
// CPU of each core is kept. Nodes: by free CPUs (before that one-per-core cut), then the socket's
// free CPUs, in strategy order, then id. Sockets: by the listed CPUs in strategy order, then id.
cpu_groups accumulator::free_cpus_in(bool by_node, bool filter_exclusive) {
  const int n = t_.num_cpus();
  const int keys = by_node ? t_.num_nodes() : t_.num_sockets();
  std::fill(node_n_.begin(), node_n_.end(), 0);
  std::fill(socket_n_.begin(), socket_n_.end(), 0);
  auto skipped = [&](int i) {
    if (!allocatable_[u(i)]) return true;
    if (!filter_exclusive) return false;
    return pcpu_fenced(i) || (by_node && numa_fenced(i));
  };
  auto key_of = [&](int i) { return by_node ? t_.node_index(i) : t_.socket_index(i); };
  std::vector<int> offsets(u(keys) + 1, 0);
  for (int i = 0; i < n; ++i) {
    if (skipped(i)) continue;
    ++offsets[u(key_of(i)) + 1];
    ++node_n_[u(t_.node_index(i))];
    ++socket_n_[u(t_.socket_index(i))];
  }
  for (int k = 0; k < keys; ++k) offsets[u(k) + 1] += offsets[u(k)];
  cpu_groups g;
  g.flat.resize(u(offsets[u(keys)]));
  {
    auto fill = offsets;
    for (int i = 0; i < n; ++i)
      if (!skipped(i)) g.flat[u(fill[u(key_of(i))]++)] = i;
  }
  std::vector<std::pair<int, int>> spans(u(keys), {0, 0});
  std::vector<int> group_keys;
  for (int k = 0; k < keys; ++k) {
    int* b = g.flat.data() + offsets[u(k)];
    int* e = g.flat.data() + offsets[u(k) + 1];
    if (b == e) continue;
    sort_by_ref(b, e);
    if (filter_exclusive) {  // extractCPU: the first CPU of each core
      int* out = b;
      for (int* c = b; c != e; ++c) {
        auto& seen = core_seen_[u(t_.core_index(*c))];
        if (!seen) {
          seen = 1;
          *out++ = *c;
        }
      }
      for (int* c = b; c != e; ++c) core_seen_[u(t_.core_index(*c))] = 0;
      e = out;
    }
    spans[u(k)] = {offsets[u(k)], static_cast<int>(e - g.flat.data())};
    group_keys.push_back(k);
  }
  std::sort(group_keys.begin(), group_keys.end(), [&](int x, int y) {
    if (by_node) {
      if (node_n_[u(x)] != node_n_[u(y)]) return strategy_before(node_n_[u(x)], node_n_[u(y)]);
      const int sx = socket_n_[u(t_.node_socket_index(x))];
      const int sy = socket_n_[u(t_.node_socket_index(y))];
      if (sx != sy) return strategy_before(sx, sy);
      return x < y;
    }
    const int lx = spans[u(x)].second - spans[u(x)].first;
    const int ly = spans[u(y)].second - spans[u(y)].first;
    if (lx != ly) return strategy_before(lx, ly);
    return x < y;
  });
  for (int k : group_keys) g.spans.push_back(spans[u(k)]);
  return g;
}

// freeCPUs: every free CPU (fenced ones left out with filter_exclusive), core by core. Cores:
// sockets holding more of the result first; the socket's, then the NUMA node's free CPUs in
// strategy order; fewer free CPUs on the core first; socket id; ref count (max_ref_count > 1);
// core id. CPUs within a core ascending (then by ref count when max_ref_count > 1).
std::vector<int> accumulator::free_cpus(bool filter_exclusive) {
  const int n = t_.num_cpus();
  std::fill(core_n_.begin(), core_n_.end(), 0);
  std::fill(node_n_.begin(), node_n_.end(), 0);
  std::fill(socket_n_.begin(), socket_n_.end(), 0);
  auto skipped = [&](int i) {
    return !allocatable_[u(i)] || (filter_exclusive && (pcpu_fenced(i) || numa_fenced(i)));
  };
  for (int i = 0; i < n; ++i) {
    if (skipped(i)) continue;
    ++core_n_[u(t_.core_index(i))];
    ++node_n_[u(t_.node_index(i))];
    ++socket_n_[u(t_.socket_index(i))];
  }
  std::vector<int> cores;
  cores.reserve(u(t_.num_cores()));
  for (int c = 0; c < t_.num_cores(); ++c)
    if (core_n_[u(c)] > 0) cores.push_back(c);
  const bool by_ref = p_.max_ref_count > 1;
  std::vector<int> refs;
  if (by_ref) {
    refs.resize(u(t_.num_cores()));
    for (int c : cores) refs[u(c)] = core_ref(c);
  }
  std::sort(cores.begin(), cores.end(), [&](int x, int y) {
    const int sx = t_.core_socket_index(x);
    const int sy = t_.core_socket_index(y);
    if (taken_in_socket_[u(sx)] != taken_in_socket_[u(sy)])
      return taken_in_socket_[u(sx)] > taken_in_socket_[u(sy)];
    if (socket_n_[u(sx)] != socket_n_[u(sy)])
      return strategy_before(socket_n_[u(sx)], socket_n_[u(sy)]);
    const int nx = t_.core_node_index(x);
    const int ny = t_.core_node_index(y);
    if (node_n_[u(nx)] != node_n_[u(ny)]) return strategy_before(node_n_[u(nx)], node_n_[u(ny)]);
    if (core_n_[u(x)] != core_n_[u(y)]) return core_n_[u(x)] < core_n_[u(y)];
    if (sx != sy) return sx < sy;
    if (by_ref && refs[u(x)] != refs[u(y)]) return refs[u(x)] < refs[u(y)];
    return x < y;
  });
  std::vector<int> out;
  out.reserve(u(n));
  for (int c : cores) {
    const auto begin = out.size();
    for (auto* cpu = t_.core_cpus_begin(c); cpu != t_.core_cpus_end(c); ++cpu)
      if (!skipped(*cpu)) out.push_back(*cpu);
    sort_by_ref(out.data() + begin, out.data() + out.size());
  }
  return out;
}

// spreadCPUs: one CPU per core in list order, then the second of each core, and so on (a stable
// sort by how many CPUs of the same core came before). Lists no longer than a core are kept.
void accumulator::spread(std::vector<int>& cpus) {
  if (static_cast<int>(cpus.size()) <= t_.cpus_per_core()) return;
  std::vector<int> rank(cpus.size());
  int max_rank = 0;
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    rank[i] = core_seen_[u(t_.core_index(cpus[i]))]++;
    max_rank = std::max(max_rank, rank[i]);
  }
  for (int c : cpus) core_seen_[u(t_.core_index(c))] = 0;
  std::vector<int> out;
  out.reserve(cpus.size());
  for (int r = 0; r <= max_rank; ++r)
    for (std::size_t i = 0; i < cpus.size(); ++i)
      if (rank[i] == r) out.push_back(cpus[i]);
  cpus.swap(out);
}

result<cpu_set> accumulator::run() {
  if (satisfied()) return result_;
  if (needed_ > allocatable_n_)
    return fail(errc::failed_precondition, std::string(err_not_enough_cpus));

  const bool full_pcpus = p_.bind == cpu_bind_policy::full_pcpus;
  const int cpc = t_.cpus_per_core();
  constexpr bool filter_exclusive_args[] = {true, false};

  if (full_pcpus || cpc == 1) {
    // One NUMA node with enough whole free cores, in NUMA strategy order.
    if (needed_ <= t_.cpus_per_node()) {
      for (bool fe : filter_exclusive_args) {
        const auto g = free_cores(true, true, fe);
        for (std::size_t i = 0; i < g.spans.size(); ++i) {
          const auto s = g.at(i);
          if (static_cast<int>(s.size()) >= needed_) {
            take(s.first(u(needed_)));
            return result_;
          }
        }
      }
    }
    // One socket with enough whole free cores.
    if (needed_ <= t_.cpus_per_socket()) {
      const auto g = free_cores(false, true, false);
      for (std::size_t i = 0; i < g.spans.size(); ++i) {
        const auto s = g.at(i);
        if (static_cast<int>(s.size()) >= needed_) {
          take(s.first(u(needed_)));
          return result_;
        }
      }
    }
    // Whole sockets' free cores, the socket with the most first (strategy no longer applies);
    // ties keep the order above (stable, see the header).
    const auto g = free_cores(false, true, false);
    std::vector<std::size_t> order(g.spans.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return g.at(x).size() > g.at(y).size(); });
    std::vector<std::size_t> unsatisfied;
    for (auto i : order) {
      const auto s = g.at(i);
      if (!needs(static_cast<int>(s.size()))) {
        unsatisfied.push_back(i);
      } else {
        take(s);
        if (satisfied()) return result_;
      }
    }
    // The remaining whole cores from the sockets with the fewest free cores.
    if (needs(cpc)) {
      std::stable_sort(unsatisfied.begin(), unsatisfied.end(), [&](std::size_t x, std::size_t y) {
        return g.at(x).size() < g.at(y).size();
      });
      for (auto i : unsatisfied) {
        const auto s = g.at(i);
        for (std::size_t k = 0; k + u(cpc) <= s.size(); k += u(cpc)) {
          take(s.subspan(k, u(cpc)));
          if (satisfied()) return result_;
          if (!needs(cpc)) break;
        }
      }
    }
  }

  if (!full_pcpus) {
    // One NUMA node, then one socket, with enough free CPUs, spread over cores.
    for (bool by_node : {true, false}) {
      if (needed_ > (by_node ? t_.cpus_per_node() : t_.cpus_per_socket())) continue;
      for (bool fe : filter_exclusive_args) {
        const auto g = free_cpus_in(by_node, fe);
        for (std::size_t i = 0; i < g.spans.size(); ++i) {
          const auto s = g.at(i);
          if (static_cast<int>(s.size()) >= needed_) {
            std::vector<int> cpus(s.begin(), s.end());
            spread(cpus);
            take(std::span<const int>(cpus).first(u(needed_)));
            return result_;
          }
        }
      }
    }
  }

  // Anything free, near what is already taken.
  for (bool fe : filter_exclusive_args) {
    auto cpus = free_cpus(fe);
    spread(cpus);
    for (int c : cpus) {
      if (needs(1)) take(std::span<const int>(&c, 1));
      if (satisfied()) return result_;
    }
  }
  return fail(errc::failed_precondition, "failed to allocate cpus");
}

std::vector<allocated_cpu>::iterator find_cpu(std::vector<allocated_cpu>& v, int id) {
  auto it = std::lower_bound(v.begin(), v.end(), id,
                             [](const allocated_cpu& a, int x) { return a.cpu_id < x; });
  return it != v.end() && it->cpu_id == id ? it : v.end();
}

}  // namespace

result<cpu_set> take_cpus(const cpu_topology& topology, const cpu_set& available,
                          std::span<const allocated_cpu> allocated, int num_cpus_needed,
                          const take_policy& policy) {
  accumulator acc(topology, available, allocated, num_cpus_needed, policy);
  return acc.run();
}

result<cpu_set> take_preferred_cpus(const cpu_topology& topology, const cpu_set& available,
                                    const cpu_set& preferred,
                                    std::span<const allocated_cpu> allocated, int num_cpus_needed,
                                    const take_policy& policy) {
  cpu_set out;
  const auto usable = available.intersection(preferred);
  cpu_set rest = available;
  if (!usable.empty()) {
    auto first =
        take_cpus(topology, usable, allocated, std::min(num_cpus_needed, usable.size()), policy);
    if (!first) return first;
    num_cpus_needed -= first->size();
    rest = available.difference(usable);
    out = std::move(*first);
  }
  if (num_cpus_needed > 0) {
    auto more = take_cpus(topology, rest, allocated, num_cpus_needed, policy);
    if (!more) return more;
    out = out.union_with(*more);
  }
  return out;
}

std::vector<int> spread_order(const cpu_topology& topology, const cpu_set& available,
                              std::span<const allocated_cpu> allocated, const take_policy& policy) {
  accumulator acc(topology, available, allocated, 0, policy);
  return acc.spread_order();
}

void node_cpu_allocation::add_cpus(const std::string& pod_uid, const cpu_set& cpus,
                                   cpu_exclusive_policy exclusive) {
  for (const auto& [uid, p] : pods_)
    if (uid == pod_uid) return;
  pods_.push_back({pod_uid, pod{cpus, exclusive}});
  cpus.for_each([&](int id) {
    auto it = find_cpu(cpus_, id);
    if (it == cpus_.end()) {
      it =
          cpus_.insert(std::lower_bound(cpus_.begin(), cpus_.end(), id,
                                        [](const allocated_cpu& a, int x) { return a.cpu_id < x; }),
                       allocated_cpu{id, 0, exclusive});
    }
    it->exclusive_policy = exclusive;
    ++it->ref_count;
  });
}

void node_cpu_allocation::release(const std::string& pod_uid) {
  auto p =
      std::find_if(pods_.begin(), pods_.end(), [&](const auto& e) { return e.first == pod_uid; });
  if (p == pods_.end()) return;
  const auto cpus = std::move(p->second.cpus);
  pods_.erase(p);
  cpus.for_each([&](int id) {
    auto it = find_cpu(cpus_, id);
    if (it == cpus_.end()) return;
    if (--it->ref_count == 0) cpus_.erase(it);
  });
}

node_cpu_allocation::available node_cpu_allocation::available_cpus(
    const cpu_topology& topology, int max_ref_count, const cpu_set& reserved,
    std::span<const cpu_set> preferred) const {
  available out;
  out.allocated = cpus_;
  for (const auto& set : preferred) {
    set.for_each([&](int id) {
      auto it = find_cpu(out.allocated, id);
      if (it == out.allocated.end()) return;
      if (--it->ref_count == 0) out.allocated.erase(it);
    });
  }
  cpu_set held;
  for (const auto& a : out.allocated)
    if (a.ref_count >= max_ref_count) held.insert(a.cpu_id);
  out.cpus = topology.cpus().difference(held).difference(reserved);
  return out;
}

std::vector<allocated_cpu> node_cpu_allocation::allocated() const { return cpus_; }

}  // namespace colony::scheduler::numa
