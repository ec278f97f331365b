// Usage-curve extraction from v2018 machine_usage (see usage_curves.hpp).
#include "bridges/trace/usage_curves.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace colony::trace {

namespace {

struct point {
  std::int64_t t;
  double v;  // fraction [0, 1]
};

// Valid (time, value) samples of one series; equal times keep the later row.
void push(std::vector<point>& s, std::int64_t t, const std::optional<float>& pct) {
  if (!pct) return;
  double v = std::clamp(static_cast<double>(*pct) / 100.0, 0.0, 1.0);
  if (!s.empty() && s.back().t == t)
    s.back().v = v;
  else
    s.push_back({t, v});
}

// Fills out[k] = series value at start + k*step by the documented rule; counts held points.
void resample(const std::vector<point>& s, std::int64_t start, std::int64_t step, std::size_t n,
              std::int64_t max_gap, std::vector<float>& out, std::vector<char>& held) {
  out.resize(n);
  std::size_t j = 0;  // s[j].t <= t < s[j+1].t
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t t = start + static_cast<std::int64_t>(k) * step;
    while (j + 1 < s.size() && s[j + 1].t <= t) ++j;
    double v;
    if (t <= s.front().t)
      v = s.front().v;
    else if (j + 1 >= s.size())
      v = s.back().v;
    else {
      const point& a = s[j];
      const point& b = s[j + 1];
      if (b.t - a.t <= max_gap)
        v = a.v + (b.v - a.v) * static_cast<double>(t - a.t) / static_cast<double>(b.t - a.t);
      else {
        v = a.v;
        if (t != a.t) held[k] = 1;
      }
    }
    out[k] = static_cast<float>(v);
  }
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::vector<usage_curve> extract_usage_curves(const std::vector<v2018_machine_usage>& rows,
                                              const usage_curve_options& opt) {
  const std::int64_t step = std::max<std::int64_t>(1, opt.step_ms);
  // Order rows by (machine id, time, line), ties in input order. Machine ids are ranked once
  // (sorted distinct ids) and rows grouped by rank with a stable counting sort; each group is
  // then usually already in (time, line) order (readers sort by time, files list a machine's
  // rows by time), so only a group that is not gets sorted. Same order as one stable sort with
  // string compares, without ~20 string compares per row on a 9-million-row table.
  std::unordered_map<std::string_view, std::uint32_t> rank_of;
  for (const auto& r : rows) rank_of.try_emplace(r.machine_id, 0u);
  {
    std::vector<std::string_view> ids;
    ids.reserve(rank_of.size());
    for (const auto& [id, rank] : rank_of) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    for (std::uint32_t k = 0; k < ids.size(); ++k) rank_of[ids[k]] = k;
  }
  std::vector<std::uint32_t> rank(rows.size());
  std::vector<std::uint32_t> start(rank_of.size() + 1, 0);
  {
    std::string_view last;
    std::uint32_t last_rank = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string_view id = rows[i].machine_id;
      if (i == 0 || id != last) {
        last = id;
        last_rank = rank_of.find(id)->second;
      }
      rank[i] = last_rank;
      ++start[last_rank + 1];
    }
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::uint32_t> idx(rows.size());
  {
    std::vector<std::uint32_t> next(start.begin(), start.end() - 1);
    for (std::uint32_t i = 0; i < rows.size(); ++i) idx[next[rank[i]]++] = i;
  }
  const auto before = [&](std::uint32_t a, std::uint32_t b) {
    const auto& x = rows[a];
    const auto& y = rows[b];
    if (x.time != y.time) return x.time < y.time;
    return x.line < y.line;
  };
  for (std::size_t g = 0; g + 1 < start.size(); ++g) {
    const auto first = idx.begin() + start[g], last = idx.begin() + start[g + 1];
    if (!std::is_sorted(first, last, before)) std::stable_sort(first, last, before);
  }
  std::vector<usage_curve> curves;
  std::vector<point> cpu, mem;
  std::vector<char> held;
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t e = i;
    const std::string& id = rows[idx[i]].machine_id;
    cpu.clear();
    mem.clear();
    std::size_t used = 0;
    for (; e < idx.size() && rows[idx[e]].machine_id == id; ++e) {
      const auto& r = rows[idx[e]];
      push(cpu, r.time.value, r.cpu_util_percent);
      push(mem, r.time.value, r.mem_util_percent);
      used += (r.cpu_util_percent || r.mem_util_percent) ? 1 : 0;
    }
    if (cpu.size() >= opt.min_samples && mem.size() >= opt.min_samples && !cpu.empty() &&
        !mem.empty()) {
      usage_curve c;
      c.machine_id = id;
      c.step_ms = step;
      std::int64_t first = std::min(cpu.front().t, mem.front().t);
      std::int64_t last = std::max(cpu.back().t, mem.back().t);
      c.start = event_time{first};
      std::size_t n = static_cast<std::size_t>((last - first) / step) + 1;
      held.assign(n, 0);
      resample(cpu, first, step, n, opt.max_interpolate_gap_ms, c.cpu, held);
      resample(mem, first, step, n, opt.max_interpolate_gap_ms, c.memory, held);
      c.samples = used;
      c.held_points = static_cast<std::size_t>(std::count(held.begin(), held.end(), 1));
      curves.push_back(std::move(c));
    }
    i = e;
  }
  return curves;
}

usage_point sample(const usage_curve& c, std::int64_t offset_ms) {
  const std::int64_t n = static_cast<std::int64_t>(c.cpu.size());
  std::int64_t k =
      offset_ms >= 0 ? offset_ms / c.step_ms : -((-offset_ms + c.step_ms - 1) / c.step_ms);
  k %= n;
  if (k < 0) k += n;
  return {c.cpu[static_cast<std::size_t>(k)], c.memory[static_cast<std::size_t>(k)]};
}

std::size_t pick_curve(std::size_t n, std::uint64_t seed, std::string_view key) {
  std::uint64_t h = splitmix64(seed ^ fnv1a64(key));
  return static_cast<std::size_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

}  // namespace colony::trace
