// openb node and pod list readers (see openb.hpp).
#include "bridges/trace/openb.hpp"

#include <algorithm>

#include "bridges/trace/detail/csv.hpp"

namespace colony::trace {

std::string_view to_string(openb_qos q) noexcept {
  switch (q) {
    case openb_qos::ls:
      return "LS";
    case openb_qos::be:
      return "BE";
    case openb_qos::burstable:
      return "Burstable";
    case openb_qos::guaranteed:
      return "Guaranteed";
  }
  return "LS";
}

std::string_view to_string(openb_phase p) noexcept {
  switch (p) {
    case openb_phase::pending:
      return "Pending";
    case openb_phase::running:
      return "Running";
    case openb_phase::succeeded:
      return "Succeeded";
    case openb_phase::failed:
      return "Failed";
  }
  return "Pending";
}

resource_list openb_node::capacity() const {
  resource_list r;
  r.cpu_milli = cpu_milli;
  r.memory_bytes = memory_bytes;
  r.gpu = std::int64_t{gpu} * 100;
  r.gpu_core = r.gpu;
  r.gpu_memory_ratio = r.gpu;
  return r;
}

resource_list openb_pod::requests() const {
  resource_list r;
  r.cpu_milli = cpu_milli;
  r.memory_bytes = memory_bytes;
  // num_gpu x gpu_milli / 10, rounded up: 590 milli -> 59, 455 milli -> 46.
  r.gpu = (std::int64_t{num_gpu} * gpu_milli + 9) / 10;
  r.gpu_core = r.gpu;
  r.gpu_memory_ratio = r.gpu;
  return r;
}

namespace {

constexpr std::int64_t max_mib = std::int64_t{1} << 40;  // keeps MiB x 2^20 inside int64

bool parse_qos(std::string_view s, openb_qos& q) {
  if (s == "LS")
    q = openb_qos::ls;
  else if (s == "BE")
    q = openb_qos::be;
  else if (s == "Burstable")
    q = openb_qos::burstable;
  else if (s == "Guaranteed")
    q = openb_qos::guaranteed;
  else
    return false;
  return true;
}

bool parse_phase(std::string_view s, openb_phase& p) {
  if (s == "Running")
    p = openb_phase::running;
  else if (s == "Succeeded")
    p = openb_phase::succeeded;
  else if (s == "Failed")
    p = openb_phase::failed;
  else if (s == "Pending")
    p = openb_phase::pending;
  else
    return false;
  return true;
}

bool memory_mib(detail::row_cursor& c, std::size_t i, std::int64_t& bytes) {
  std::int64_t m = 0;
  if (!c.non_negative_integer(i, "memory_mib", m)) return false;
  if (m >= max_mib) return c.fail_expected(i, "memory_mib below 2^40");
  bytes = m * mib;
  return true;
}

}  // namespace

result<trace_table<openb_node>> parse_openb_nodes(std::string_view text, std::string_view file,
                                                  const read_options& opt) {
  return detail::parse_rows<openb_node>(
      text, file, opt, 5, openb_node_header, [](detail::row_cursor& c, openb_node& n) {
        std::int64_t gpu = 0;
        if (!c.required_text(0, "sn", n.name) ||
            !c.non_negative_integer(1, "cpu_milli", n.cpu_milli) ||
            !memory_mib(c, 2, n.memory_bytes) || !c.non_negative_integer(3, "gpu", gpu))
          return false;
        if (gpu > 1024) return c.fail_expected(3, "gpu count <= 1024");
        n.gpu = static_cast<std::int32_t>(gpu);
        n.gpu_model.assign(c.text(4));
        if (n.gpu > 0 && n.gpu_model.empty())
          return c.fail(4, "expected a GPU model for a node with gpu > 0, got an empty field");
        return true;
      });
}

namespace {

// The first line of text (without a UTF-8 byte-order mark or a trailing '\r').
std::string_view first_line(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::string_view line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// How many leading columns of the full pod header `line` is (0 when it is none of the shorter
// layouts the FGD authors publish: at least name..gpu_milli, then any further prefix).
std::size_t pod_header_prefix(std::string_view line) {
  std::size_t n = 0;
  std::string_view full = openb_pod_header;
  for (;;) {
    const std::size_t comma = full.find(',');
    const std::string_view col = full.substr(0, comma);
    if (line.substr(0, col.size()) != col) return 0;
    line.remove_prefix(col.size());
    ++n;
    if (line.empty()) return n >= openb_pod_min_columns ? n : 0;
    if (line.front() != ',' || comma == std::string_view::npos) return 0;
    line.remove_prefix(1);
    full.remove_prefix(comma + 1);
  }
}

}  // namespace

result<trace_table<openb_pod>> parse_openb_pods(std::string_view text, std::string_view file,
                                                const read_options& opt) {
  // A shorter layout (the multigpuNN lists: name..gpu_milli) is read with what it has; any
  // other header keeps the strict check against the full one.
  std::size_t ncol = openb_pod_columns;
  if (const std::string_view h = first_line(text); h != openb_pod_header) {
    if (const std::size_t k = pod_header_prefix(h); k > 0) ncol = k;
  }
  const std::string_view header = openb_pod_header.substr(
      0, ncol == openb_pod_columns ? openb_pod_header.size() : first_line(text).size());
  auto t = detail::parse_rows<openb_pod>(
      text, file, opt, ncol, header, [ncol](detail::row_cursor& c, openb_pod& p) {
        std::int64_t num_gpu = 0, gpu_milli = 0, created = 0, deleted = 0;
        std::optional<std::int64_t> scheduled;
        if (!c.required_text(0, "name", p.name) ||
            !c.non_negative_integer(1, "cpu_milli", p.cpu_milli) ||
            !memory_mib(c, 2, p.memory_bytes) || !c.non_negative_integer(3, "num_gpu", num_gpu) ||
            !c.non_negative_integer(4, "gpu_milli", gpu_milli))
          return false;
        if (num_gpu > 1024) return c.fail_expected(3, "num_gpu <= 1024");
        if (gpu_milli > 1000) return c.fail_expected(4, "gpu_milli in [0, 1000]");
        if (num_gpu == 0 && gpu_milli != 0)
          return c.fail(
              4, "expected gpu_milli 0 when num_gpu is 0, got '" + std::string(c.text(4)) + "'");
        if (num_gpu > 0 && gpu_milli == 0)
          return c.fail(4, "expected gpu_milli > 0 when num_gpu > 0, got '0'");
        p.num_gpu = static_cast<std::int32_t>(num_gpu);
        p.gpu_milli = static_cast<std::int32_t>(gpu_milli);
        std::string_view spec = ncol > 5 ? c.text(5) : std::string_view{};
        while (!spec.empty()) {
          std::size_t bar = spec.find('|');
          std::string_view model = spec.substr(0, bar);
          if (model.empty())
            return c.fail(5, "expected GPU model names separated by '|', got '" +
                                 std::string(c.text(5)) + "'");
          p.gpu_spec.emplace_back(model);
          if (bar == std::string_view::npos) break;
          spec.remove_prefix(bar + 1);
          if (spec.empty())
            return c.fail(5, "expected GPU model names separated by '|', got '" +
                                 std::string(c.text(5)) + "'");
        }
        p.qos = openb_qos::ls;
        if (ncol > 6 && !parse_qos(c.text(6), p.qos))
          return c.fail_expected(6, "qos LS, BE, Burstable or Guaranteed");
        p.phase = openb_phase::running;
        if (ncol > 7 && !parse_phase(c.text(7), p.phase))
          return c.fail_expected(7, "pod_phase Running, Succeeded, Failed or Pending");
        if (ncol < openb_pod_columns) {
          // Times are filled in after the read (file order); a partial set of time columns is
          // read as far as it goes.
          if (ncol > 8 && !c.seconds_ms(8, "creation_time", created)) return false;
          if (ncol > 9 && !c.seconds_ms(9, "deletion_time", deleted)) return false;
          p.creation = event_time{created};
          p.deletion = event_time{deleted};
          return true;
        }
        if (!c.seconds_ms(8, "creation_time", created) ||
            !c.seconds_ms(9, "deletion_time", deleted))
          return false;
        // Empty scheduled_time = never bound (Pending); not counted as a missing value.
        if (!c.empty(10)) {
          std::int64_t s = 0;
          if (!c.seconds_ms(10, "scheduled_time", s)) return false;
          scheduled = s;
        }
        if (deleted < created)
          return c.fail(
              9, "expected deletion_time >= creation_time, got '" + std::string(c.text(9)) + "'");
        if (scheduled && (*scheduled < created || *scheduled > deleted))
          return c.fail(10,
                        "expected scheduled_time between creation_time and deletion_time, got '" +
                            std::string(c.text(10)) + "'");
        p.creation = event_time{created};
        p.deletion = event_time{deleted};
        if (scheduled) p.scheduled = event_time{*scheduled};
        return true;
      });
  if (!t) return t;
  if (ncol < openb_pod_columns) {
    // The FGD simulator (pkg/simulator/utils.go SortClusterPods) feeds pods without times in
    // name order and never deletes them; the published short lists are in name order, so file
    // order is that order.
    auto& rows = t->rows;
    if (ncol <= 6) t->assumed.push_back("qos: LS (no qos column)");
    if (ncol <= 7) t->assumed.push_back("pod_phase: Running (no pod_phase column)");
    if (ncol <= 8)
      t->assumed.push_back(
          "creation_time: the row's place in the file in seconds (0, 1, 2, ...): pods arrive in "
          "file order, one per second (no creation_time column)");
    if (ncol <= 9)
      t->assumed.push_back(
          "deletion_time: one second after the last creation_time, so every pod stays to the "
          "end (no deletion_time column)");
    t->assumed.push_back(
        "scheduled_time: the creation_time (bound on arrival), none for Pending rows (no "
        "scheduled_time column)");
    std::int64_t last = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (ncol <= 8) rows[i].creation = event_time{static_cast<std::int64_t>(i) * 1000};
      last = std::max(last, rows[i].creation.value);
    }
    for (auto& r : rows) {
      if (ncol <= 9) r.deletion = event_time{last + 1000};
      if (r.deletion.value < r.creation.value) r.deletion = r.creation;
      if (r.phase != openb_phase::pending) r.scheduled = r.creation;
    }
  }
  if (opt.sort_by_time)
    detail::stable_sort_by(t->rows, [](const openb_pod& p) { return p.creation.value; });
  return t;
}

result<trace_table<openb_node>> read_openb_nodes(const std::string& path, const read_options& opt) {
  auto text = detail::slurp(path);
  if (!text) return tl::unexpected(text.error());
  return parse_openb_nodes(*text, path, opt);
}

result<trace_table<openb_pod>> read_openb_pods(const std::string& path, const read_options& opt) {
  auto text = detail::slurp(path);
  if (!text) return tl::unexpected(text.error());
  return parse_openb_pods(*text, path, opt);
}

}  // namespace colony::trace
