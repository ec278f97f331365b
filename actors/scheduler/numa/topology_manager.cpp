#include "actors/scheduler/numa/topology_manager.hpp"

#include <algorithm>
#include <bit>
#include <functional>

namespace colony::scheduler::numa {

namespace {

int count(std::uint64_t m) noexcept { return std::popcount(m); }

std::string binary(std::uint64_t v, int width) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + (v & 1U)));
    v >>= 1;
  } while (v != 0);
  if (static_cast<int>(s.size()) < width)
    s.insert(0, static_cast<std::size_t>(width) - s.size(), '0');
  return s;
}

// fmt's %v of a hint's affinity: the mask's String(), "<nil>" for none.
std::string affinity_text(const numa_hint& h) {
  return h.affinity ? numa_mask_string(*h.affinity) : std::string("<nil>");
}

// getSummaryForResource.
std::string summary_of(const std::string& resource, const std::vector<numa_hint>& hints) {
  std::string preferred, possible;
  for (const auto& h : hints) {
    if (h.unsatisfied) continue;
    const std::string t = affinity_text(h);
    if (h.preferred) preferred += (preferred.empty() ? "" : " ") + t;
    possible += (possible.empty() ? "" : " ") + t;
  }
  return resource + " prefer [" + preferred + "] among [" + possible + "]";
}

struct filtered {
  std::vector<std::vector<numa_hint>> hints;
  std::vector<std::string> reasons;
  // The resources whose hints the summary describes (built only for a refusal's reason).
  std::vector<std::pair<const std::string*, const std::vector<numa_hint>*>> summarized;
  [[nodiscard]] std::vector<std::string> summary() const {
    std::vector<std::string> out;
    out.reserve(summarized.size());
    for (const auto& [name, hints] : summarized) out.push_back(summary_of(*name, *hints));
    std::sort(out.begin(), out.end());
    return out;
  }
};

// filterProvidersHints.
filtered filter_providers_hints(std::span<const provider_hints> providers) {
  filtered f;
  for (const auto& p : providers) {
    if (p.empty()) {
      f.hints.push_back({numa_hint{std::nullopt, false, true, 0}});
      continue;
    }
    std::vector<const std::pair<std::string, std::optional<std::vector<numa_hint>>>*> sorted;
    for (const auto& r : p) sorted.push_back(&r);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
    for (const auto* r : sorted) {
      if (!r->second) {
        f.hints.push_back({numa_hint{std::nullopt, false, true, 0}});
        continue;
      }
      if (r->second->empty()) {
        f.hints.push_back({numa_hint{std::nullopt, true, false, 0}});
        f.reasons.push_back("Unsatisfied NUMA " + r->first);
        continue;
      }
      f.summarized.emplace_back(&r->first, &*r->second);
      f.hints.push_back(*r->second);
    }
  }
  return f;
}

// mergePermutation.
numa_hint merge_permutation(std::uint64_t default_affinity, std::span<const numa_hint> perm) {
  bool preferred = true, satisfied = true;
  int max_nodes = 0;
  std::uint64_t merged = default_affinity;
  std::optional<std::uint64_t> first;
  for (const auto& h : perm) {
    if (h.affinity) {
      if (!first) first = *h.affinity;
      if (*h.affinity != *first) preferred = false;
      max_nodes = std::max(max_nodes, count(*h.affinity));
      merged &= *h.affinity;
    }
    if (!h.preferred) preferred = false;
    if (h.unsatisfied) satisfied = false;
  }
  satisfied = (!first || max_nodes == count(merged)) && satisfied;
  return numa_hint{merged, !satisfied, preferred, 0};
}

// mergeFilteredHints: every permutation (one hint per list, lists in order) merged; the best is
// preferred over not, then narrower, then (as narrow) the higher score; the first wins ties.
numa_hint merge_filtered_hints(std::uint64_t default_affinity,
                               const std::vector<std::vector<numa_hint>>& lists,
                               numa_topology_exclusive exclusive,
                               std::span<const numa_node_status> status) {
  numa_hint best{default_affinity, false, false, 0};
  std::vector<numa_hint> perm;
  perm.reserve(lists.size());
  std::function<void(std::size_t)> iterate = [&](std::size_t i) {
    if (i == lists.size()) {
      numa_hint m = merge_permutation(default_affinity, perm);
      if (count(*m.affinity) == 0) return;
      if (!check_exclusive_policy(m, exclusive, status)) m.preferred = false;
      for (const auto& v : perm)
        if (v.affinity && *v.affinity == *m.affinity) m.score += v.score;
      if (m.preferred && !best.preferred) {
        best = m;
        return;
      }
      if (!m.preferred && best.preferred) return;
      if (!numa_mask_narrower(*m.affinity, *best.affinity)) {
        if (count(*m.affinity) == count(*best.affinity) && m.score > best.score) best = m;
        return;
      }
      best = m;
      return;
    }
    for (const auto& h : lists[i]) {
      perm.push_back(h);
      iterate(i + 1);
      perm.pop_back();
    }
  };
  iterate(0);
  return best;
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += sep;
    s += v[i];
  }
  return s;
}

}  // namespace

std::uint64_t numa_mask(std::span<const int> ids) noexcept {
  std::uint64_t m = 0;
  for (int id : ids)
    if (id >= 0 && id < 64) m |= std::uint64_t{1} << id;
  return m;
}

std::string numa_mask_string(std::uint64_t mask) {
  constexpr int grouping = 2;
  for (int shift = 64 - grouping; shift > 0; shift -= grouping)
    if (mask > (std::uint64_t{1} << shift)) return binary(mask, shift + grouping);
  return binary(mask, grouping);
}

bool numa_mask_narrower(std::uint64_t a, std::uint64_t b) noexcept {
  if (count(a) == count(b)) return a < b;
  return count(a) < count(b);
}

std::vector<std::uint64_t> numa_masks_of(std::span<const int> ids) {
  std::vector<std::uint64_t> out;
  std::vector<int> accum;
  std::function<void(std::size_t, std::size_t)> iterate = [&](std::size_t from, std::size_t size) {
    if (accum.size() == size) {
      out.push_back(numa_mask(accum));
      return;
    }
    for (std::size_t i = from; i < ids.size(); ++i) {
      accum.push_back(ids[i]);
      iterate(i + 1, size);
      accum.pop_back();
    }
  };
  for (std::size_t size = 1; size <= ids.size(); ++size) iterate(0, size);
  return out;
}

bool check_exclusive_policy(const numa_hint& h, numa_topology_exclusive exclusive,
                            std::span<const numa_node_status> status) {
  if (!h.affinity) return false;
  if (exclusive != numa_topology_exclusive::required) return true;
  auto at = [&](int id) {
    return id >= 0 && static_cast<std::size_t>(id) < status.size()
               ? status[static_cast<std::size_t>(id)]
               : numa_node_status::idle;
  };
  const std::uint64_t m = *h.affinity;
  if (count(m) > 1) {
    for (int id = 0; id < 64; ++id)
      if (((m >> id) & 1U) != 0 && at(id) == numa_node_status::single) return false;
    return true;
  }
  return at(std::countr_zero(m)) != numa_node_status::shared;
}

numa_merge_result merge_numa_hints(numa_topology_policy policy, std::span<const int> numa_nodes,
                                   std::span<const provider_hints> providers,
                                   numa_topology_exclusive exclusive,
                                   std::span<const numa_node_status> status) {
  const std::uint64_t all = numa_mask(numa_nodes);
  auto f = filter_providers_hints(providers);
  numa_merge_result r;
  switch (policy) {
    case numa_topology_policy::none:
    case numa_topology_policy::best_effort: {
      r.best = merge_filtered_hints(all, f.hints, exclusive, status);
      if (r.best.unsatisfied) r.best = numa_hint{all, false, false, 0};
      r.admit = true;
      return r;
    }
    case numa_topology_policy::restricted: {
      if (!f.reasons.empty()) {
        r.best = numa_hint{all, false, false, 0};
        r.reasons = std::move(f.reasons);
        return r;
      }
      r.best = merge_filtered_hints(all, f.hints, exclusive, status);
      r.admit = r.best.preferred;
      if (!r.admit) r.reasons.push_back("Unaligned NUMA Hint cause " + join(f.summary(), " & "));
      return r;
    }
    case numa_topology_policy::single_numa_node: {
      if (!f.reasons.empty()) {
        r.reasons = std::move(f.reasons);
        return r;
      }
      for (auto& list : f.hints) {
        std::vector<numa_hint> keep;
        for (const auto& h : list)
          if (h.preferred && (!h.affinity || count(*h.affinity) == 1)) keep.push_back(h);
        list = std::move(keep);
      }
      r.best = merge_filtered_hints(all, f.hints, exclusive, status);
      if (r.best.affinity == all) r.best = numa_hint{std::nullopt, false, r.best.preferred, 0};
      r.admit = r.best.preferred;
      if (!r.admit) r.reasons.push_back("Unaligned NUMA Hint cause " + join(f.summary(), ","));
      return r;
    }
  }
  return r;
}

}  // namespace colony::scheduler::numa
