// FGD and BestFit Score plugins (see fgd.hpp).
#include "actors/scheduler/fgd.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <yaml-cpp/yaml.h>

#include "actors/scheduler/device_share.hpp"

namespace colony::scheduler {

namespace {

constexpr std::int64_t milli_per_gpu = 1000;
// pkg/type/open-gpu-share/utils/const.go MaxSpecCpu, MaxSpecGpu: BestFit's normalisers.
constexpr double best_fit_max_cpu_milli = 128000;
constexpr double best_fit_max_gpu_milli = 8000;

bool accessible(const fgd_node& n, const fgd_task_class& m) {
  if (m.gpu_models.empty()) return true;
  return std::find(m.gpu_models.begin(), m.gpu_models.end(), n.gpu_model) != m.gpu_models.end();
}

// Whether m's GPUs fit n: at least gpu_count GPUs with gpu_milli free (CanNodeHostPodOnGpuMemory).
bool gpus_fit(const fgd_node& n, const fgd_task_class& m) {
  std::int64_t need = m.gpu_count;
  for (const auto f : n.gpu_free_milli)
    if (f >= m.gpu_milli && --need <= 0) return true;
  return false;
}

std::int64_t free_total(const fgd_node& n) {
  std::int64_t s = 0;
  for (const auto f : n.gpu_free_milli) s += f;
  return s;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::int64_t fgd_score_of(double before, double after) {
  return static_cast<std::int64_t>(sigmoid((before - after) / 1000.0) *
                                   static_cast<double>(max_node_score));
}

// n with the task placed, into out (its buffers reused): CPU taken; a whole-GPU or multi-GPU
// task takes the fitting GPUs with the least free first, the lower index on equal shares
// (NodeResource.Sub: a stable ascending sort, then the fitting ones in that order; for whole
// GPUs only fully free ones fit), a GPU-sharing one the GPU given.
void place_into(const fgd_node& n, const fgd_task_class& t, int gpu, fgd_node& out) {
  out.cpu_free_milli = n.cpu_free_milli - t.cpu_milli;
  out.gpu_free_milli.assign(n.gpu_free_milli.begin(), n.gpu_free_milli.end());
  out.gpu_model = n.gpu_model;
  if (t.gpu_count == 0) return;
  if (gpu >= 0) {
    out.gpu_free_milli[static_cast<std::size_t>(gpu)] -= t.gpu_milli;
    return;
  }
  // Each GPU is taken at most once: mark it (a bit per GPU up to 64, a vector beyond).
  const std::size_t g = n.gpu_free_milli.size();
  std::uint64_t bits = 0;
  std::vector<bool> more(g > 64 ? g : 0, false);
  auto taken = [&](std::size_t i) { return g > 64 ? more[i] : ((bits >> i) & 1u) != 0; };
  for (std::int64_t k = 0; k < t.gpu_count; ++k) {
    std::size_t best = g;
    for (std::size_t i = 0; i < g; ++i) {
      const auto f = n.gpu_free_milli[i];
      if (taken(i) || f < t.gpu_milli) continue;
      if (best == g || f < n.gpu_free_milli[best]) best = i;
    }
    if (best == g) return;
    if (g > 64)
      more[best] = true;
    else
      bits |= std::uint64_t{1} << best;
    out.gpu_free_milli[best] -= t.gpu_milli;
  }
}

fgd_node place(const fgd_node& n, const fgd_task_class& t, int gpu = -1) {
  fgd_node out;
  place_into(n, t, gpu, out);
  return out;
}

void node_into(const node_info& node, fgd_node& n) {
  n.cpu_free_milli = node.allocatable.cpu_milli - node.requested.cpu_milli;
  n.gpu_free_milli.clear();
  for (const auto& g : node.gpus)
    n.gpu_free_milli.push_back(
        g.healthy ? std::max<std::int64_t>(0, g.core_total - g.core_used) * 10 : 0);
  n.gpu_model = node.gpu_model;
}

bool sharing(const fgd_task_class& t) { return t.gpu_count == 1 && t.gpu_milli < milli_per_gpu; }

// Moves a one-GPU allocation DeviceShare made onto GPU index `gpu` of the node.
void move_allocation(cycle_state& st, const node_info& node, int gpu) {
  if (gpu < 0 || st.gpu_allocations.size() != 1) return;
  const gpu_device& g = node.gpus[static_cast<std::size_t>(gpu)];
  auto& a = st.gpu_allocations.front();
  a.minor = g.minor;
  if (a.memory_ratio > 0)
    a.memory_bytes = memory_ratio_to_bytes(a.memory_ratio, g.memory_total_bytes);
}

}  // namespace

result<fgd_args> parse_fgd_args(std::string_view yaml, const std::string& path) {
  fgd_args out;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return fail(errc::invalid_input, std::string("bad YAML: ") + e.what(), path);
  }
  if (!root || root.IsNull()) return out;
  if (!root.IsMap()) return fail(errc::invalid_input, "expected a map", path);
  const auto classes = root["taskClasses"];
  if (!classes) return out;
  if (!classes.IsSequence())
    return fail(errc::invalid_input, "expected a list", path + ".taskClasses");
  double sum = 0;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const std::string p = path + ".taskClasses[" + std::to_string(i) + "]";
    const auto c = classes[i];
    if (!c.IsMap()) return fail(errc::invalid_input, "expected a map", p);
    fgd_task_class m;
    try {
      if (c["cpuMilli"]) m.cpu_milli = c["cpuMilli"].as<std::int64_t>();
      if (c["gpuMilli"]) m.gpu_milli = c["gpuMilli"].as<std::int64_t>();
      if (c["gpuCount"]) m.gpu_count = c["gpuCount"].as<std::int64_t>();
      if (c["gpuModels"])
        for (const auto& x : c["gpuModels"]) m.gpu_models.push_back(x.as<std::string>());
      if (!c["popularity"]) return fail(errc::invalid_input, "expected popularity", p);
      m.popularity = c["popularity"].as<double>();
    } catch (const YAML::Exception& e) {
      return fail(errc::invalid_input, std::string("expected numbers: ") + e.what(), p);
    }
    if (m.cpu_milli < 0 || m.gpu_count < 0 || m.gpu_milli < 0 || m.gpu_milli > milli_per_gpu)
      return fail(errc::invalid_input,
                  "expected cpuMilli >= 0, gpuCount >= 0 and gpuMilli in [0, 1000]", p);
    if ((m.gpu_count == 0) != (m.gpu_milli == 0))
      return fail(errc::invalid_input, "expected gpuMilli 0 exactly when gpuCount is 0", p);
    if (!(m.popularity > 0) || m.popularity > 1)
      return fail(errc::invalid_input, "expected popularity in (0, 1]", p + ".popularity");
    sum += m.popularity;
    out.task_classes.push_back(std::move(m));
  }
  if (!out.task_classes.empty() && std::abs(sum - 1) > 1e-3)
    return fail(errc::invalid_input,
                "expected popularities summing to 1, got " + std::to_string(sum),
                path + ".taskClasses");
  return out;
}

double fgd_class_fragmentation(const fgd_node& n, const fgd_task_class& m) {
  const std::int64_t total = free_total(n);
  // GetNodePodFrag: a CPU task (XL/XR), no access, or lacking CPU or GPUs: every free share.
  if (m.gpu_milli == 0 || !accessible(n, m) || n.cpu_free_milli < m.cpu_milli || !gpus_fit(n, m))
    return static_cast<double>(total);
  // Q3 (satisfied): only the GPUs with less free than the class's per-GPU share.
  std::int64_t frag = 0;
  for (const auto f : n.gpu_free_milli)
    if (f < m.gpu_milli) frag += f;
  return static_cast<double>(frag);
}

double fgd_node_fragmentation(const fgd_node& n, const std::vector<fgd_task_class>& classes) {
  // NodeGpuShareFragAmount adds each class's share into the bucket of its case (q1_lack_both,
  // q2_lack_gpu, q3_satisfied, q4_lack_cpu, xl_satisfied, xr_lack_cpu, no_access, in that
  // order); FragAmountSumExceptQ3 then adds the buckets but q3. Summed the same way, F is theirs
  // to the last bit, so a score on the edge of an integer truncates as theirs does.
  enum { q1, q2, q3, q4, xl, xr, na, buckets };
  std::array<double, buckets> b{};
  const std::int64_t total = free_total(n);
  for (const auto& m : classes) {
    const bool cpu_ok = n.cpu_free_milli >= m.cpu_milli;
    int at = 0;
    if (m.gpu_milli == 0)
      at = cpu_ok ? xl : xr;
    else if (!accessible(n, m))
      at = na;
    else if (gpus_fit(n, m))
      at = cpu_ok ? q3 : q4;
    else
      at = cpu_ok ? q2 : q1;
    if (at == q3) {
      std::int64_t frag = 0;
      for (const auto f : n.gpu_free_milli)
        if (f < m.gpu_milli) frag += f;
      b[q2] += m.popularity * static_cast<double>(frag);
      b[q3] += m.popularity * static_cast<double>(total - frag);
    } else {
      b[at] += m.popularity * static_cast<double>(total);
    }
  }
  double f = 0;
  for (int i = 0; i < buckets; ++i)
    if (i != q3) f += b[static_cast<std::size_t>(i)];
  return f;
}

fgd_node fgd_node_of(const node_info& node) {
  fgd_node n;
  node_into(node, n);
  return n;
}

fgd_task_class fgd_task_of(const pod_info& pod) {
  fgd_task_class t;
  t.cpu_milli = pod.requests.cpu_milli;
  t.gpu_models = pod.gpu_models;
  auto r = device_share::requirements_of(pod);
  if (r && *r && (*r)->count > 0) {
    t.gpu_count = (*r)->count;
    t.gpu_milli = (*r)->has_core ? (*r)->core * 10 : milli_per_gpu;
  }
  return t;
}

fgd_choice fgd_score(const fgd_node& n, const fgd_task_class& task,
                     const std::vector<fgd_task_class>& classes) {
  const double before = fgd_node_fragmentation(n, classes);
  fgd_choice c;
  if (sharing(task)) {
    for (std::size_t i = 0; i < n.gpu_free_milli.size(); ++i) {
      if (n.gpu_free_milli[i] < task.gpu_milli) continue;
      const auto s = fgd_score_of(
          before, fgd_node_fragmentation(place(n, task, static_cast<int>(i)), classes));
      if (c.gpu < 0 || s > c.score) c = {s, static_cast<int>(i)};
    }
    return c;
  }
  c.score = fgd_score_of(before, fgd_node_fragmentation(place(n, task), classes));
  return c;
}

std::int64_t best_fit_raw_score(const fgd_node& n, const fgd_task_class& task) {
  const double cpu = static_cast<double>(n.cpu_free_milli - task.cpu_milli);
  const double gpu = static_cast<double>(free_total(n) - task.gpu_milli * task.gpu_count);
  const double left = cpu / best_fit_max_cpu_milli * 0.5 + gpu / best_fit_max_gpu_milli * 0.5;
  return static_cast<std::int64_t>((1.0 - left) * static_cast<double>(max_node_score));
}

int best_fit_gpu(const fgd_node& n, const fgd_task_class& task) {
  int best = -1;
  for (std::size_t i = 0; i < n.gpu_free_milli.size(); ++i) {
    const auto f = n.gpu_free_milli[i];
    if (f < task.gpu_milli) continue;
    if (best < 0 || f < n.gpu_free_milli[static_cast<std::size_t>(best)])
      best = static_cast<int>(i);
  }
  return best;
}

std::size_t fgd_score_plugin::state_key_hash::operator()(const state_key& k) const noexcept {
  // Multiply-xorshift over the key's words, one splitmix64 finaliser at the end.
  constexpr std::uint64_t m = 0x9e3779b97f4a7c15ull;
  std::uint64_t h = static_cast<std::uint64_t>(k.cpu_free_milli) * m;
  h = (h ^ (h >> 32) ^ ((std::uint64_t{k.model} << 32) | k.gpus)) * m;
  for (std::size_t i = 0; i < max_key_gpus; i += 2)
    h = (h ^ (h >> 32) ^
         ((static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.free[i])) << 32) |
          static_cast<std::uint32_t>(k.free[i + 1]))) *
        m;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return static_cast<std::size_t>(h ^ (h >> 31));
}

struct fgd_score_plugin::cycle_task : cycle_data {
  std::uint64_t cycle = ~0ull;
  const pod_info* pod = nullptr;
  fgd_task_class task;
};

const fgd_task_class& fgd_score_plugin::task_of(cycle_state& st, const pod_info& pod) {
  auto& s = st.slot<cycle_task>(slot());
  if (s.cycle != st.cycle || s.pod != &pod) {  // REQUIRES: the pod outlives the cycle
    s.cycle = st.cycle;
    s.pod = &pod;
    s.task = fgd_task_of(pod);
  }
  return s.task;
}

std::uint32_t fgd_score_plugin::model_id(std::string_view model) {
  std::size_t m = 0;
  while (m < models_.size() && models_[m] != model) ++m;
  if (m == models_.size()) models_.emplace_back(model);
  return static_cast<std::uint32_t>(m);
}

double fgd_score_plugin::fragmentation(const fgd_node& n, std::uint32_t model) {
  const std::size_t g = n.gpu_free_milli.size();
  if (g > max_key_gpus) {
    ++misses_;
    return fgd_node_fragmentation(n, args_.task_classes);
  }
  state_key k;
  k.cpu_free_milli = n.cpu_free_milli;
  k.gpus = static_cast<std::uint32_t>(g);
  k.model = model;
  // Shares in decreasing order (insertion sort: at most max_key_gpus of them).
  for (std::size_t i = 0; i < g; ++i) {
    const auto v = static_cast<std::int32_t>(n.gpu_free_milli[i]);
    std::size_t j = i;
    for (; j > 0 && k.free[j - 1] < v; --j) k.free[j] = k.free[j - 1];
    k.free[j] = v;
  }
  if (const auto it = cache_.find(k); it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  const double f = fgd_node_fragmentation(n, args_.task_classes);
  cache_.emplace(k, f);
  return f;
}

fgd_choice fgd_score_plugin::choose(const fgd_node& n, const fgd_task_class& task) {
  // fgd_score() with F looked up in the cache (the same rule, the same result).
  const std::uint32_t model = model_id(n.gpu_model);
  const double before = fragmentation(n, model);
  fgd_choice c;
  if (sharing(task)) {
    for (std::size_t i = 0; i < n.gpu_free_milli.size(); ++i) {
      if (n.gpu_free_milli[i] < task.gpu_milli) continue;
      place_into(n, task, static_cast<int>(i), placed_);
      const auto s = fgd_score_of(before, fragmentation(placed_, model));
      if (c.gpu < 0 || s > c.score) c = {s, static_cast<int>(i)};
    }
    return c;
  }
  place_into(n, task, -1, placed_);
  c.score = fgd_score_of(before, fragmentation(placed_, model));
  return c;
}

std::int64_t fgd_score_plugin::score(cycle_state& st, const pod_info& pod, const node_info& node,
                                     event_time) {
  const fgd_task_class& t = task_of(st, pod);
  node_into(node, node_);
  return choose(node_, t).score;
}

void fgd_score_plugin::score_nodes(cycle_state& st, const pod_info& pod,
                                   std::span<const node_info> nodes,
                                   std::span<const std::uint32_t> indices,
                                   std::span<std::int64_t> out, event_time) {
  const fgd_task_class& t = task_of(st, pod);
  for (std::size_t j = 0; j < indices.size(); ++j) {
    node_into(nodes[indices[j]], node_);
    out[j] = choose(node_, t).score;
  }
}

status fgd_score_plugin::reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                                 event_time) {
  const fgd_task_class& t = task_of(st, pod);
  if (sharing(t)) {
    node_into(node, node_);
    move_allocation(st, node, choose(node_, t).gpu);
  }
  return {};
}

std::int64_t best_fit_score_plugin::score(cycle_state&, const pod_info& pod, const node_info& node,
                                          event_time) {
  return best_fit_raw_score(fgd_node_of(node), fgd_task_of(pod));
}

bool best_fit_score_plugin::normalize_score(cycle_state&, const pod_info&,
                                            std::span<std::int64_t> scores) {
  // pkg/simulator/plugin/plugin_utils.go NormalizeScore: min-max onto [0, 100]; all equal -> 0.
  if (scores.empty()) return true;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const std::int64_t low = *lo, range = *hi - *lo;
  for (auto& s : scores) s = range == 0 ? 0 : (s - low) * max_node_score / range;
  return true;
}

status best_fit_score_plugin::reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                                      event_time) {
  const fgd_task_class t = fgd_task_of(pod);
  if (sharing(t)) move_allocation(st, node, best_fit_gpu(fgd_node_of(node), t));
  return {};
}

}  // namespace colony::scheduler
