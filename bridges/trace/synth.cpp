// Synthetic trace generator (see synth.hpp).
#include "bridges/trace/synth.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <system_error>

namespace colony::trace {

namespace {

constexpr std::int64_t day_s = 86'400;
// Stream tags: one independent mt19937_64 per purpose.
constexpr std::uint64_t nodes_stream = 1, pods_stream = 2, usage_stream = 3;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::mt19937_64 stream(std::uint64_t seed, std::uint64_t tag) {
  return std::mt19937_64(splitmix64(seed + tag * 0x9e3779b97f4a7c15ULL));
}

// Uniform integer in [0, n) from raw 64-bit output (Lemire's multiply-shift with rejection,
// so no modulo bias and no std::uniform_int_distribution).
std::uint64_t below(std::mt19937_64& g, std::uint64_t n) {
  unsigned __int128 m = static_cast<unsigned __int128>(g()) * n;
  auto low = static_cast<std::uint64_t>(m);
  if (low < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(g()) * n;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

std::string numbered(std::string_view prefix, std::int64_t i, int width) {
  std::string digits = std::to_string(i);
  std::string s(prefix);
  if (static_cast<int>(digits.size()) < width)
    s.append(static_cast<std::size_t>(width) - digits.size(), '0');
  return s + digits;
}

int width_for(std::int64_t n) {
  int w = 1;
  for (std::int64_t v = std::max<std::int64_t>(n - 1, 0); v >= 10; v /= 10) ++w;
  return std::max(4, w);  // openb numbers with 4 digits
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

result<void> write_file(const std::filesystem::path& p, std::string_view data) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr) return fail(errc::unavailable, "cannot create file", p.string());
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return fail(errc::unavailable, "write failed", p.string());
  return {};
}

}  // namespace

result<synth_calibration> calibrate(const trace_table<openb_node>& nodes,
                                    const trace_table<openb_pod>& pods,
                                    const trace_table<v2018_machine_usage>& usage,
                                    const usage_curve_options& curve_opt) {
  if (nodes.rows.empty())
    return fail(errc::invalid_input, "calibration needs a non-empty node list", nodes.file);
  if (pods.rows.empty())
    return fail(errc::invalid_input, "calibration needs a non-empty pod list", pods.file);
  synth_calibration c;
  c.node_shapes = nodes.rows;
  c.pod_shapes = pods.rows;
  std::vector<std::int64_t> created;
  created.reserve(pods.rows.size());
  std::int64_t busy_start = pods.rows.front().deletion.value;
  for (const auto& p : pods.rows) {
    created.push_back(p.creation.value);
    busy_start = std::min(busy_start, p.deletion.value);
  }
  std::sort(created.begin(), created.end());
  for (std::size_t i = 1; i < created.size(); ++i)
    if (created[i - 1] >= busy_start)
      c.inter_arrival_s.push_back((created[i] - created[i - 1]) / 1000);
  if (c.inter_arrival_s.empty())
    return fail(errc::invalid_input, "calibration found no inter-arrival gap in the busy window",
                pods.file);
  c.curves = extract_usage_curves(usage.rows, curve_opt);
  if (c.curves.empty())
    return fail(errc::invalid_input, "calibration found no usage curve", usage.file);
  c.sources = {nodes.file + " (" + std::to_string(nodes.rows.size()) + " nodes)",
               pods.file + " (" + std::to_string(pods.rows.size()) + " pods, " +
                   std::to_string(c.inter_arrival_s.size()) + " inter-arrival gaps)",
               usage.file + " (" + std::to_string(usage.rows.size()) + " rows, " +
                   std::to_string(c.curves.size()) + " machine curves)"};
  return c;
}

result<synth_trace> synthesize(const synth_calibration& calib, const synth_params& params) {
  if (params.nodes <= 0 || params.pods < 0 || params.days <= 0 || params.usage_step_s <= 0)
    return fail(errc::invalid_input, "expected nodes > 0, pods >= 0, days > 0, usage_step_s > 0",
                "synth_params");
  if (calib.node_shapes.empty() || calib.pod_shapes.empty() || calib.inter_arrival_s.empty() ||
      calib.curves.empty())
    return fail(errc::invalid_input, "empty calibration", "synth_calibration");
  if (params.days > 36'500 || params.nodes > 10'000'000 || params.pods > 100'000'000)
    return fail(errc::invalid_input, "expected days <= 36500, nodes <= 1e7, pods <= 1e8",
                "synth_params");
  synth_trace t;
  t.params = params;
  const std::int64_t span_s = params.days * day_s;

  // Nodes and their usage sources.
  auto gn = stream(params.seed, nodes_stream);
  auto gu = stream(params.seed, usage_stream);
  const int nw = width_for(params.nodes);
  t.nodes.reserve(static_cast<std::size_t>(params.nodes));
  t.usage.reserve(static_cast<std::size_t>(params.nodes));
  for (std::int64_t i = 0; i < params.nodes; ++i) {
    openb_node n = calib.node_shapes[below(gn, calib.node_shapes.size())];
    n.name = numbered("synth-node-", i, nw);
    n.line = static_cast<std::uint32_t>(i + 2);
    t.nodes.push_back(std::move(n));
    synth_usage_source u;
    u.curve = static_cast<std::uint32_t>(below(gu, calib.curves.size()));
    const auto& c = calib.curves[u.curve];
    u.shift_ms = static_cast<std::int64_t>(below(gu, c.size())) * c.step_ms;
    t.usage.push_back(u);
  }

  // Pods: gaps first (pods + 1 of them), then one joint row per pod.
  auto gp = stream(params.seed, pods_stream);
  const auto npods = static_cast<std::size_t>(params.pods);
  std::vector<std::int64_t> cum(npods + 1);
  std::int64_t sum = 0;
  for (std::size_t i = 0; i <= npods; ++i) {
    sum += calib.inter_arrival_s[below(gp, calib.inter_arrival_s.size())];
    cum[i] = sum;
  }
  const int pw = width_for(params.pods);
  t.pods.reserve(npods);
  for (std::size_t i = 0; i < npods; ++i) {
    const openb_pod& shape = calib.pod_shapes[below(gp, calib.pod_shapes.size())];
    openb_pod p = shape;
    p.name = numbered("synth-pod-", static_cast<std::int64_t>(i), pw);
    p.line = static_cast<std::uint32_t>(i + 2);
    const std::int64_t arrive =
        sum == 0
            ? 0
            : static_cast<std::int64_t>(static_cast<__int128>(cum[i]) * span_s / sum);  // < span_s
    const std::int64_t life = (shape.deletion.value - shape.creation.value) / 1000;
    std::int64_t leave = arrive + life;
    const bool clipped = leave > span_s;
    if (clipped) leave = span_s;
    p.creation = event_time{arrive * 1000};
    p.deletion = event_time{leave * 1000};
    p.scheduled.reset();
    if (shape.scheduled) {
      const std::int64_t at = arrive + (shape.scheduled->value - shape.creation.value) / 1000;
      if (at <= leave)
        p.scheduled = event_time{at * 1000};
      else
        p.phase = openb_phase::pending;
    }
    if (clipped && (p.phase == openb_phase::succeeded || p.phase == openb_phase::failed))
      p.phase = p.scheduled ? openb_phase::running : openb_phase::pending;
    t.pods.push_back(std::move(p));
  }
  return t;
}

void append_usage_rows(const synth_trace& t, const synth_calibration& calib, std::size_t node,
                       std::string& out) {
  const auto& src = t.usage[node];
  const auto& curve = calib.curves[src.curve];
  const std::string& name = t.nodes[node].name;
  const std::int64_t span_s = t.params.days * day_s;
  for (std::int64_t s = 0; s < span_s; s += t.params.usage_step_s) {
    usage_point v = sample(curve, src.shift_ms + s * 1000);
    out += name;
    out += ',';
    append_int(out, s);
    out += ',';
    append_int(out, std::lround(v.cpu * 100.0f));
    out += ',';
    append_int(out, std::lround(v.memory * 100.0f));
    out += ",,,,,\n";
  }
}

std::string format_openb_nodes(const std::vector<openb_node>& nodes) {
  std::string out(openb_node_header);
  out += '\n';
  for (const auto& n : nodes) {
    out += n.name;
    out += ',';
    append_int(out, n.cpu_milli);
    out += ',';
    append_int(out, n.memory_bytes / mib);
    out += ',';
    append_int(out, n.gpu);
    out += ',';
    out += n.gpu_model;
    out += '\n';
  }
  return out;
}

std::string format_openb_pods(const std::vector<openb_pod>& pods) {
  std::string out(openb_pod_header);
  out += '\n';
  for (const auto& p : pods) {
    out += p.name;
    out += ',';
    append_int(out, p.cpu_milli);
    out += ',';
    append_int(out, p.memory_bytes / mib);
    out += ',';
    append_int(out, p.num_gpu);
    out += ',';
    append_int(out, p.gpu_milli);
    out += ',';
    for (std::size_t k = 0; k < p.gpu_spec.size(); ++k) {
      if (k) out += '|';
      out += p.gpu_spec[k];
    }
    out += ',';
    out += to_string(p.qos);
    out += ',';
    out += to_string(p.phase);
    out += ',';
    append_int(out, p.creation.value / 1000);
    out += ',';
    append_int(out, p.deletion.value / 1000);
    out += ',';
    if (p.scheduled) append_int(out, p.scheduled->value / 1000);
    out += '\n';
  }
  return out;
}

result<std::vector<std::string>> write_synthetic(const std::string& dir, const synth_trace& t,
                                                 const synth_calibration& calib) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(errc::unavailable, "cannot create directory: " + ec.message(), dir);
  const fs::path d(dir);
  std::vector<std::string> written;
  auto put = [&](const char* name, std::string_view data) -> result<void> {
    auto r = write_file(d / name, data);
    if (r) written.push_back((d / name).string());
    return r;
  };
  if (auto r = put("synthetic-openb_node_list_all_node.csv", format_openb_nodes(t.nodes)); !r)
    return tl::unexpected(r.error());
  if (auto r = put("synthetic-openb_pod_list_default.csv", format_openb_pods(t.pods)); !r)
    return tl::unexpected(r.error());

  // machine_usage, streamed in ~4 MiB chunks.
  const fs::path usage_path = d / "synthetic-machine_usage.csv";
  std::FILE* f = std::fopen(usage_path.c_str(), "wb");
  if (f == nullptr) return fail(errc::unavailable, "cannot create file", usage_path.string());
  std::string buf;
  buf.reserve(5 << 20);
  bool ok = true;
  for (std::size_t i = 0; i < t.nodes.size() && ok; ++i) {
    append_usage_rows(t, calib, i, buf);
    if (buf.size() >= (4u << 20) || i + 1 == t.nodes.size()) {
      ok = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
      buf.clear();
    }
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return fail(errc::unavailable, "write failed", usage_path.string());
  written.push_back(usage_path.string());

  const auto& p = t.params;
  const std::int64_t usage_rows_per_node = (p.days * day_s + p.usage_step_s - 1) / p.usage_step_s;
  std::string params =
      "- seed: " + std::to_string(p.seed) + "\n- nodes: " + std::to_string(p.nodes) +
      "\n- pods: " + std::to_string(p.pods) + "\n- days: " + std::to_string(p.days) +
      "\n- usage_step_s: " + std::to_string(p.usage_step_s) + "\n";
  std::string files =
      "| file | format | rows |\n|---|---|---|\n"
      "| synthetic-openb_node_list_all_node.csv | openb v2023 node list (with header) | " +
      std::to_string(t.nodes.size()) +
      " |\n| synthetic-openb_pod_list_default.csv | openb v2023 pod list (with header) | " +
      std::to_string(t.pods.size()) +
      " |\n| synthetic-machine_usage.csv | Alibaba v2018 machine_usage (no header) | " +
      std::to_string(static_cast<std::int64_t>(t.nodes.size()) * usage_rows_per_node) + " |\n";
  std::string synthetic_md =
      "# SYNTHETIC TRACE: not real data\n\n"
      "Every file in this folder was generated by Colony's `trace synth` "
      "(bridges/trace/synth.cpp).\n"
      "No row is a real observation. The CSV formats allow no comment line, so this note and the\n"
      "`synthetic-` file-name prefix are the label. Do not cite these files as Alibaba data.\n\n"
      "## Parameters\n" +
      params + "\n## Files\n" + files +
      "\nThe same parameters and calibration files give byte-identical output (std::mt19937_64,\n"
      "one stream per purpose, seeded from the seed above).\n";
  std::string sources;
  for (const auto& s : calib.sources) sources += "- " + s + "\n";
  std::string provenance_md =
      "# PROVENANCE: synthetic trace (generated, not collected)\n\n"
      "- Generator: Colony `trace synth` (bridges/trace/synth.cpp, colony::trace::synthesize).\n"
      "- Status: SYNTHETIC. Distributions are calibrated on real public extracts; the rows are "
      "drawn,\n"
      "  not copied from any cluster.\n\n"
      "## Parameters\n" +
      params +
      "\n## Calibration sources (real data, Alibaba cluster traces; see traces/*/PROVENANCE.md)\n" +
      sources +
      "\n## How rows are drawn\n"
      "- Nodes: node shapes (cpu_milli, memory_mib, gpu, model) drawn uniformly with replacement "
      "from\n"
      "  the node list; names synth-node-NNNN (also the machine_id of its usage rows).\n"
      "- Pods: each pod copies one pod row drawn uniformly with replacement (requests, num_gpu,\n"
      "  gpu_milli, gpu_spec, qos, pod_phase, lifetime, scheduling delay). Creation times are a\n"
      "  cumulative sum of empirical inter-arrival gaps (busy window of the pod list), rescaled "
      "to\n"
      "  span the requested days. Deletion is clipped at the end of the span (a clipped Succeeded "
      "or\n"
      "  Failed pod is marked Running, as openb marks pods alive at trace end).\n"
      "- Usage: each node follows one real v2018 machine usage curve (resampled, gaps filled per\n"
      "  docs/sim.md) from a drawn start shift, written every usage_step_s as integer percent; "
      "the\n"
      "  other machine_usage columns are left empty (not modelled).\n\n"
      "## Terms\n"
      "Derived from Alibaba cluster traces published for research or study purposes; cite the\n"
      "source traces when results depend on this calibration.\n";
  if (auto r = put("SYNTHETIC.md", synthetic_md); !r) return tl::unexpected(r.error());
  if (auto r = put("PROVENANCE.md", provenance_md); !r) return tl::unexpected(r.error());
  return written;
}

}  // namespace colony::trace
