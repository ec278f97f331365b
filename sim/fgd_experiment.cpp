// The FGD paper's experiment (see fgd_experiment.hpp).
#include "sim/fgd_experiment.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "actors/scheduler/actor/scheduler_component.hpp"
#include "messages/codec.hpp"
#include "sim/component_host.hpp"
#include "sim/gnuplot.hpp"
#include "sim/go_rand.hpp"
#include "sim/trace_source.hpp"

namespace colony::sim {

namespace {

namespace fs = std::filesystem;
using scheduler::fgd_task_class;

// GetPodResource: per-GPU share (1000 for whole GPUs) and count.
std::int64_t total_gpu_milli(const trace::openb_pod& p) {
  return std::int64_t{p.num_gpu} * p.gpu_milli;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "|") + x;
  return s;
}

// The report's own view of a node, folded from the world after each instant, and its
// fragmentation by the paper's definition (the same arithmetic as the FGDScore plugin's, kept
// apart so the figures are measured, not asked of a policy; tests/sim checks they agree).
struct node_view {
  std::int64_t cpu_free = 0;
  std::vector<std::int64_t> gpu_free;
  std::string model;
};

double view_fragmentation(const node_view& n, const std::vector<fgd_task_class>& classes) {
  std::int64_t idle = 0;
  for (const auto f : n.gpu_free) idle += f;
  // Their ClusterGpuFragReport sums NodeGpuShareFragAmount's buckets (pkg/utils/frag.go): the
  // fragmented share of a class that fits (q3) goes to q2_lack_gpu, every other class's idle
  // share to its own case; the frag is the buckets but q3, added in their order.
  std::array<double, 6> bucket{};  // q1, q2, q4, xl, xr, no_access
  for (const auto& m : classes) {
    const bool cpu_ok = n.cpu_free >= m.cpu_milli;
    const bool access = m.gpu_models.empty() || std::find(m.gpu_models.begin(), m.gpu_models.end(),
                                                          n.model) != m.gpu_models.end();
    std::int64_t need = m.gpu_count;
    for (const auto f : n.gpu_free)
      if (f >= m.gpu_milli) --need;
    const bool gpu_ok = need <= 0;
    const double share = m.popularity * static_cast<double>(idle);
    if (m.gpu_milli == 0) {
      bucket[cpu_ok ? 3 : 4] += share;
    } else if (!access) {
      bucket[5] += share;
    } else if (gpu_ok && cpu_ok) {
      std::int64_t frag = 0;
      for (const auto f : n.gpu_free)
        if (f < m.gpu_milli) frag += f;
      bucket[1] += m.popularity * static_cast<double>(frag);
    } else {
      bucket[gpu_ok ? 2 : cpu_ok ? 1 : 0] += share;
    }
  }
  double total = 0;
  for (const auto b : bucket) total += b;
  return total;
}

// The scheduler config with the workload's task classes given to FGDScore, when a profile
// enables it without classes of its own (the authors' simulator hands the plugin its typical
// pods the same way: SetTypicalPods).
result<std::string> with_task_classes(const std::string& yaml,
                                      const std::vector<fgd_task_class>& classes) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return fail(errc::invalid_input, e.what(), "schedulerConfig");
  }
  auto profiles = root["profiles"];
  if (!profiles || !profiles.IsSequence()) return yaml;
  bool changed = false;
  for (auto profile : profiles) {
    bool named = false;
    if (auto plugins = profile["plugins"]; plugins && plugins.IsMap())
      for (auto point : plugins)
        if (auto en = point.second["enabled"]; en && en.IsSequence())
          for (auto e : en)
            if (e["name"] &&
                e["name"].as<std::string>() == scheduler::fgd_score_plugin::plugin_name)
              named = true;
    if (!named) continue;
    auto pcs = profile["pluginConfig"];
    bool has = false;
    if (pcs && pcs.IsSequence())
      for (auto pc : pcs)
        if (pc["name"] &&
            pc["name"].as<std::string>() == scheduler::fgd_score_plugin::plugin_name &&
            pc["args"] && pc["args"]["taskClasses"])
          has = true;
    if (has) continue;
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& m : classes) {
      YAML::Node c;
      c["cpuMilli"] = m.cpu_milli;
      c["gpuMilli"] = m.gpu_milli;
      c["gpuCount"] = m.gpu_count;
      if (!m.gpu_models.empty())
        for (const auto& g : m.gpu_models) c["gpuModels"].push_back(g);
      c["popularity"] = m.popularity;
      list.push_back(c);
    }
    YAML::Node entry;
    entry["name"] = std::string(scheduler::fgd_score_plugin::plugin_name);
    entry["args"]["taskClasses"] = list;
    YAML::Node out(YAML::NodeType::Sequence);
    if (pcs && pcs.IsSequence())
      for (auto pc : pcs)
        if (!(pc["name"] &&
              pc["name"].as<std::string>() == scheduler::fgd_score_plugin::plugin_name))
          out.push_back(pc);
    out.push_back(entry);
    profile["pluginConfig"] = out;
    changed = true;
  }
  if (!changed) return yaml;
  YAML::Emitter em;
  em.SetDoublePrecision(17);
  em << root;
  return std::string(em.c_str()) + "\n";
}

}  // namespace

std::vector<fgd_task_class> fgd_typical_pods(const std::vector<trace::openb_pod>& pods) {
  using key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::string>;
  std::map<key, std::int64_t> count;
  for (const auto& p : pods)
    ++count[{p.cpu_milli, p.num_gpu == 0 ? 0 : p.gpu_milli, p.num_gpu, joined(p.gpu_spec)}];
  std::vector<std::pair<key, std::int64_t>> v(count.begin(), count.end());
  // sort.Sort(sort.Reverse(TargetPodList)): most frequent first, ties by the larger key.
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first > b.first;
  });
  const double total = static_cast<double>(pods.size());
  const double expected = 95.0 * total / 100.0;
  double cum = 0;
  std::size_t i = 0;
  while (cum < expected && i < v.size()) cum += static_cast<double>(v[i++].second);
  std::vector<fgd_task_class> out;
  for (std::size_t j = 0; j < i; ++j) {
    const auto& [k, n] = v[j];
    fgd_task_class m;
    m.cpu_milli = std::get<0>(k);
    m.gpu_milli = std::get<1>(k);
    m.gpu_count = std::get<2>(k);
    std::string models = std::get<3>(k);
    while (!models.empty()) {
      const auto bar = models.find('|');
      m.gpu_models.push_back(models.substr(0, bar));
      if (bar == std::string::npos) break;
      models.erase(0, bar + 1);
    }
    m.popularity = (static_cast<double>(n) / total) / (cum / total);
    out.push_back(std::move(m));
  }
  return out;
}

fgd_workload draw_fgd_workload(const std::vector<trace::openb_pod>& pods,
                               std::int64_t cluster_gpu_milli, double inflate, std::int64_t seed,
                               std::size_t node_count) {
  go_rand rng(seed);
  (void)rng.int_();  // core.go: log.Debugf("... Random Int: %d", ..., rand.Int())
  std::vector<std::uint32_t> by_name(pods.size());
  for (std::uint32_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(),
            [&](std::uint32_t a, std::uint32_t b) { return pods[a].name < pods[b].name; });
  fgd_workload w;
  w.rows = by_name;
  rng.shuffle(static_cast<std::int64_t>(w.rows.size()), [&](std::int64_t i, std::int64_t j) {
    std::swap(w.rows[static_cast<std::size_t>(i)], w.rows[static_cast<std::size_t>(j)]);
  });
  for (const auto r : w.rows) {
    w.names.push_back(pods[r].name);
    w.requested_gpu_milli += total_gpu_milli(pods[r]);
  }
  const double target = inflate * static_cast<double>(cluster_gpu_milli);
  if (inflate <= 0 || static_cast<double>(w.requested_gpu_milli) == target) {
    // no tuning
  } else if (static_cast<double>(w.requested_gpu_milli) > target) {
    while (static_cast<double>(w.requested_gpu_milli) > target && !w.rows.empty()) {
      const auto idx = static_cast<std::size_t>(rng.intn(static_cast<std::int64_t>(w.rows.size())));
      w.requested_gpu_milli -= total_gpu_milli(pods[w.rows[idx]]);
      w.rows.erase(w.rows.begin() + static_cast<std::ptrdiff_t>(idx));
      w.names.erase(w.names.begin() + static_cast<std::ptrdiff_t>(idx));
    }
  } else {
    for (std::int64_t i = 0;; ++i) {
      const auto idx =
          by_name[static_cast<std::size_t>(rng.intn(static_cast<std::int64_t>(by_name.size())))];
      const auto& p = pods[idx];
      if (static_cast<double>(w.requested_gpu_milli + p.gpu_milli) > target) break;
      w.requested_gpu_milli += total_gpu_milli(p);
      w.rows.push_back(idx);
      w.names.push_back(p.name + "-tuned-" + std::to_string(i));
    }
  }
  // simulator.go syncClusterResourceList: the nodes, sorted by name, are renamed
  // "<rand.Perm(n)[i] as %04d>-<name>" by the same generator, after the scheduler's informers
  // (started by RunCluster's runScheduler) have each drawn one rand.Float64 for their watch
  // timeout (k8s.io/client-go tools/cache/reflector.go ListAndWatch).
  if (node_count > 0) {
    for (int i = 0; i < fgd_informer_draws; ++i) (void)rng.int63();
    for (const auto v : rng.perm(static_cast<std::int64_t>(node_count)))
      w.node_prefixes.push_back(v);
  }
  return w;
}

result<fgd_run> run_fgd_experiment(const std::vector<trace::openb_node>& nodes_in,
                                   const std::vector<trace::openb_pod>& pods,
                                   const sim_config& cfg_in, std::int64_t seed, double inflate) {
  const auto wall0 = std::chrono::steady_clock::now();
  std::int64_t cluster_gpu = 0;
  for (const auto& n : nodes_in) cluster_gpu += std::int64_t{n.gpu} * 1000;
  if (cluster_gpu <= 0)
    return fail(errc::invalid_input, "the node list has no GPUs", "--until-saturated");
  const auto classes = fgd_typical_pods(pods);
  const fgd_workload w = draw_fgd_workload(pods, cluster_gpu, inflate, seed, nodes_in.size());
  // The nodes under the names the authors' simulator gives them (fgd_workload::node_prefixes):
  // under schedulerTieBreak nodeName their order decides between equally scored nodes.
  std::vector<trace::openb_node> nodes = nodes_in;
  {
    std::vector<std::size_t> by_name(nodes.size());
    for (std::size_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
    std::stable_sort(by_name.begin(), by_name.end(), [&](std::size_t a, std::size_t b) {
      return nodes_in[a].name < nodes_in[b].name;
    });
    for (std::size_t i = 0; i < by_name.size(); ++i)
      nodes[by_name[i]].name =
          fmt::format("{:04d}-{}", w.node_prefixes[i], nodes_in[by_name[i]].name);
  }

  sim_config cfg = cfg_in;
  auto yaml = with_task_classes(cfg.scheduler_yaml, classes);
  if (!yaml) return tl::unexpected(yaml.error());
  if (*yaml != cfg.scheduler_yaml) {
    auto sc = scheduler::parse_scheduler_config(*yaml, cfg.name + ": schedulerConfig");
    if (!sc) return tl::unexpected(sc.error());
    cfg.scheduler_yaml = *yaml;
    cfg.scheduler = std::move(*sc);
  }
  // The trace as the source sees it: the node list and the drawn pods, in submission order.
  trace::trace_set ts;
  ts.openb_nodes.emplace();
  ts.openb_nodes->rows = nodes;
  ts.openb_pods.emplace();
  ts.openb_pods->rows.reserve(w.rows.size());
  for (std::size_t k = 0; k < w.rows.size(); ++k) {
    auto p = pods[w.rows[k]];
    p.name = w.names[k];
    ts.openb_pods->rows.push_back(std::move(p));
  }
  // Their node YAML (data/node_yaml/openb_node_list_gpu_node.yaml) allocates 1001 pods a node.
  trace_source src(ts, cfg, fgd_pods_per_node);

  fgd_run run;
  run.config = cfg.name;
  run.seed = seed;
  run.pods = w.rows.size();
  run.total_gpu_milli = cluster_gpu;
  std::uint64_t events = 0;
  std::string bound_node;  // the node of this instant's PodScheduled, if any
  auto sink = [&](const entities::record_batch& round) -> result<void> {
    events += round.size();
    for (std::size_t i = 0; i < round.size(); ++i) {
      const auto& env = round.envelope(i);
      if (env.payload_type() == wire::Payload::PodScheduled)
        bound_node.assign(messages::to_string_view(env.payload_as_PodScheduled()->node()));
    }
    return {};
  };
  auto host = make_step_host(1, sink);
  scheduler::scheduler_component_options so;
  so.config = cfg.scheduler;
  so.profile = 0;
  so.seed = static_cast<std::uint64_t>(seed);
  so.ties = cfg.scheduler_tie_break;
  so.await_admission = false;
  so.pod_max_in_unschedulable_pods_duration = duration_ms{0};
  auto sched = scheduler::scheduler_component::create(std::move(so));
  if (!sched) return tl::unexpected(sched.error());
  host->add_component(std::move(*sched));

  for (const auto& rec : src.configuration(0)) host->observe(rec);
  std::vector<node_view> view(nodes.size());
  std::map<std::string, std::size_t, std::less<>> node_index;
  for (std::uint32_t n = 0; n < nodes.size(); ++n) {
    host->observe(src.node_registered(0, n));
    node_index.emplace(nodes[n].name, n);
  }
  if (auto r = host->run_instant(0); !r) return tl::unexpected(r.error());
  // The report's view and fragmentation per node, refreshed for the node a pod went to.
  std::vector<double> frag(nodes.size(), 0);
  double frag_sum = 0;
  std::int64_t idle = 0;
  auto refresh = [&](std::size_t n) {
    const auto it = host->state().nodes.find(nodes[n].name);
    if (it == host->state().nodes.end()) return;
    const auto& ns = it->second;
    node_view& v = view[n];
    v.cpu_free = ns.allocatable.cpu_milli - ns.allocated.cpu_milli;
    v.model = nodes[n].gpu_model;
    for (const auto f : v.gpu_free) idle -= f;
    v.gpu_free.clear();
    for (const auto& g : ns.gpus)
      v.gpu_free.push_back(std::max<std::int64_t>(0, g.core - g.core_used) * 10);
    for (const auto f : v.gpu_free) idle += f;
    frag_sum -= frag[n];
    frag[n] = view_fragmentation(v, classes);
    frag_sum += frag[n];
  };
  for (std::size_t n = 0; n < nodes.size(); ++n) refresh(n);

  std::int64_t arrived = 0;
  const std::int64_t stay_ms = static_cast<std::int64_t>(w.rows.size() + 2) * 1000;
  run.samples.reserve(w.rows.size());
  run.placed_on.reserve(w.rows.size());
  for (const auto& n : nodes) run.node_names.push_back(n.name);
  for (std::uint32_t k = 0; k < w.rows.size(); ++k) {
    const std::int64_t t = std::int64_t{k + 1} * 1000;
    const auto& p = ts.openb_pods->rows[k];
    arrived += total_gpu_milli(p);
    bound_node.clear();
    host->observe(src.pod_submitted(t, k, stay_ms));
    if (auto r = host->run_instant(t); !r) return tl::unexpected(r.error());
    std::int32_t placed = -1;
    if (bound_node.empty()) {
      ++run.failed;
      host->observe(src.pod_finished(t, k, ""));
      if (auto r = host->run_instant(t); !r) return tl::unexpected(r.error());
    } else {
      ++run.scheduled;
      if (const auto it = node_index.find(bound_node); it != node_index.end()) {
        placed = static_cast<std::int32_t>(it->second);
        refresh(it->second);
      }
    }
    run.placed_on.push_back(placed);
    run.samples.push_back({arrived, cluster_gpu - idle, frag_sum, static_cast<double>(idle)});
  }
  run.events = events;
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return run;
}

namespace {
// x rounded to two decimals as Python's round(x, 2) and Go's "%.2f" do: from x's exact binary
// value, ties to even (printf rounds the same way), not from x * 100, whose product may round.
double round2(double x) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.2f", x);
  return std::strtod(buf.data(), nullptr);
}

// The sum numpy takes of a float64 array (pandas' Series.mean without bottleneck, as their
// requirements.txt installs it): numpy/core/src/umath/loops_utils.h.src pairwise_sum, so a mean
// that lands on a rounding tie rounds as theirs does.
double numpy_sum(const double* a, std::size_t n) {
  constexpr std::size_t block = 128;  // PW_BLOCKSIZE
  if (n < 8) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += a[i];
    return s;
  }
  if (n <= block) {
    std::array<double, 8> r{};
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) s += a[i];
    return s;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_sum(a, n2) + numpy_sum(a + n2, n - n2);
}
double numpy_mean(const std::vector<double>& v) {
  return numpy_sum(v.data(), v.size()) / static_cast<double>(v.size());
}
}  // namespace

std::uint64_t fgd_placements_digest(const fgd_run& r) {
  std::string s;
  for (const auto i : r.placed_on) {
    s +=
        i < 0 ? std::string_view("-") : std::string_view(r.node_names[static_cast<std::size_t>(i)]);
    s += '\n';
  }
  return scheduler::fnv1a64(s);
}

fgd_levels fgd_discrete_levels(const fgd_run& r, double inflate) {
  const int top = static_cast<int>(std::lround(inflate * 100));
  fgd_levels out;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double gpus = static_cast<double>(r.total_gpu_milli) / 1000.0;
  struct pt {
    double level, alloc, frag_milli, frag_ratio;
  };
  std::vector<pt> pts;
  pts.reserve(r.samples.size());
  for (const auto& s : r.samples) {
    const double level = std::nearbyint(static_cast<double>(s.arrived_gpu_milli) / gpus / 10);
    const double alloc = round2(static_cast<double>(s.used_gpu_milli) / gpus / 10);
    // Their log prints both with two decimals (analysis.go "%.2f").
    const double fm = round2(s.frag_gpu_milli);
    const double fr = s.idle_gpu_milli > 0 ? round2(100 * s.frag_gpu_milli / s.idle_gpu_milli) : 0;
    pts.push_back({level, alloc, fm, fr});
  }
  std::vector<double> a, f, q;
  for (int L = 0; L <= top; ++L) {
    a.clear(), f.clear(), q.clear();
    auto take = [&](const pt& p) {
      a.push_back(p.alloc), f.push_back(p.frag_milli), q.push_back(p.frag_ratio);
    };
    for (const auto& p : pts)
      if (p.level == L) take(p);
    if (a.empty())
      for (const auto& p : pts)
        if (p.level >= L - 1 && p.level <= L + 1) take(p);
    if (a.empty()) {
      out.alloc.push_back(nan), out.frag.push_back(nan), out.frag_ratio.push_back(nan);
      continue;
    }
    out.alloc.push_back(round2(numpy_mean(a)));
    out.frag.push_back(round2(100 * numpy_mean(f) / 1000 / gpus));
    out.frag_ratio.push_back(numpy_mean(q));
  }
  return out;
}

result<void> run_fgd_command(const std::vector<trace::openb_node>& nodes,
                             const std::vector<trace::openb_pod>& pods,
                             const std::vector<sim_config>& configs,
                             const fgd_experiment_options& opt, const std::string& out,
                             bool quiet) {
  if (!(opt.inflate > 0) || opt.inflate > 10)
    return fail(errc::invalid_input, "expected a ratio in (0, 10]", "--inflate");
  if (opt.seeds < 1 || opt.seeds > 1000)
    return fail(errc::invalid_input, "expected 1..1000", "--seeds");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return fail(errc::unavailable, ec.message(), out);
  gnuplot_pool gnuplot(2);
  const int top = static_cast<int>(std::lround(opt.inflate * 100));
  // levels.csv: one row per config, seed and level; mean.csv: the mean over seeds.
  std::ofstream lv(fs::path(out) / "levels.csv");
  lv << "config,seed,arrived_pct,gpu_alloc_pct,frag_pct,frag_ratio_pct\n";
  // decisions.csv: per config and seed, the counts and fgd_placements_digest.
  std::ofstream dv(fs::path(out) / "decisions.csv");
  dv << "config,seed,pods,scheduled,failed,placements_fnv1a64\n";
  std::string txt = fmt::format(
      "colony sim --until-saturated: {} pods in the list, {} nodes, inflate {}, seeds {}..{}\n\n",
      pods.size(), nodes.size(), opt.inflate, opt.seed, opt.seed + opt.seeds - 1);
  std::vector<std::vector<fgd_levels>> all(configs.size());
  std::vector<double> walls;
  for (std::size_t c = 0; c < configs.size(); ++c) {
    std::size_t failed = 0, scheduled = 0, submitted = 0;
    double wall = 0;
    for (std::int64_t s = opt.seed; s < opt.seed + opt.seeds; ++s) {
      auto r = run_fgd_experiment(nodes, pods, configs[c], s, opt.inflate);
      if (!r) return tl::unexpected(r.error());
      failed += r->failed, scheduled += r->scheduled, submitted += r->pods;
      wall += r->wall_seconds;
      dv << fmt::format("{},{},{},{},{},{:016x}\n", configs[c].name, s, r->pods, r->scheduled,
                        r->failed, fgd_placements_digest(*r));
      all[c].push_back(fgd_discrete_levels(*r, opt.inflate));
      const auto& l = all[c].back();
      for (int L = 0; L <= top; ++L)
        lv << fmt::format("{},{},{},{:.2f},{:.2f},{:.4f}\n", configs[c].name, s, L,
                          l.alloc[static_cast<std::size_t>(L)], l.frag[static_cast<std::size_t>(L)],
                          l.frag_ratio[static_cast<std::size_t>(L)]);
    }
    txt += fmt::format(
        "{}: {} pods submitted, {} scheduled, {} failed (over {} seeds); {:.2f} s "
        "wall per seed\n",
        configs[c].name, submitted, scheduled, failed, opt.seeds,
        wall / static_cast<double>(opt.seeds));
    walls.push_back(wall / static_cast<double>(opt.seeds));
  }
  // Means over seeds.
  auto mean = [&](std::size_t c, int L, int what) {
    double s = 0;
    std::size_t n = 0;
    for (const auto& l : all[c]) {
      const auto& v = what == 0 ? l.alloc : what == 1 ? l.frag : l.frag_ratio;
      const double x = v[static_cast<std::size_t>(L)];
      if (!std::isnan(x)) s += x, ++n;
    }
    return n ? s / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
  };
  std::ofstream mv(fs::path(out) / "mean.csv");
  mv << "arrived_pct";
  for (const auto& c : configs)
    mv << fmt::format(",{0}_gpu_alloc_pct,{0}_frag_pct,{0}_frag_ratio_pct", c.name);
  mv << "\n";
  for (int L = 0; L <= top; ++L) {
    mv << L;
    for (std::size_t c = 0; c < configs.size(); ++c)
      mv << fmt::format(",{:.2f},{:.2f},{:.2f}", mean(c, L, 0), mean(c, L, 1), mean(c, L, 2));
    mv << "\n";
  }
  mv.close();
  txt += "\nGPU allocation (% of GPUs), mean over seeds, at arrived GPU request (% of GPUs)\n";
  txt += fmt::format("{:>8}", "arrived");
  for (const auto& c : configs) txt += fmt::format(" {:>22}", c.name);
  txt += "\n";
  for (int L = 50; L <= top; L += 10) {
    txt += fmt::format("{:>7}%", L);
    for (std::size_t c = 0; c < configs.size(); ++c)
      txt += fmt::format(" {:>22.2f}", mean(c, L, 0));
    txt += "\n";
  }
  txt += "\nFragmented GPU share (% of GPUs) / (% of idle GPUs), mean over seeds\n";
  for (int L = 50; L <= top; L += 10) {
    txt += fmt::format("{:>7}%", L);
    for (std::size_t c = 0; c < configs.size(); ++c)
      txt += fmt::format(" {:>10.2f} / {:>9.2f}", mean(c, L, 1), mean(c, L, 2));
    txt += "\n";
  }
  {
    std::ofstream f(fs::path(out) / "fgd.txt");
    f << txt;
  }
  // Plots: allocation, fragmentation amount and ratio against the arrived request.
  std::vector<std::string> scripts;
  const char* what[] = {"gpu-alloc", "frag", "frag-ratio"};
  const char* ylabel[] = {"GPU allocation (% of GPUs)", "fragmented GPU share (% of GPUs)",
                          "fragmented share (% of idle GPUs)"};
  std::string gp;
  for (int k = 0; k < 3; ++k) {
    std::string s = fmt::format(
        "set terminal pngcairo size 900,540\nset output '{}/fgd-{}.png'\nset datafile "
        "separator ','\nset key left top\nset grid\nset xlabel 'arrived GPU request (% of "
        "GPUs)'\nset ylabel '{}'\nplot ",
        out, what[k], ylabel[k]);
    for (std::size_t c = 0; c < configs.size(); ++c)
      s += fmt::format("{}'{}/mean.csv' using 1:{} with lines lw 2 title '{}'", c ? ", " : "", out,
                       2 + 3 * c + static_cast<std::size_t>(k), configs[c].name);
    s += "\n";
    gp += s;
    scripts.push_back(std::move(s));
  }
  {
    std::ofstream f(fs::path(out) / "fgd.gp");
    f << gp;
  }
  if (gnuplot.available()) {
    if (auto r = gnuplot.render(scripts, (fs::path(out) / "fgd.gp").string()); !r)
      txt += "note: " + r.error().message + "\n";
  }
  if (!quiet) std::fputs(txt.c_str(), stdout);
  return {};
}

}  // namespace colony::sim
