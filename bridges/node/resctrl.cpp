#include "bridges/node/resctrl.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridges/node/cgroup_layout.hpp"
#include "bridges/node/internal/file_read.hpp"

namespace colony::node {
namespace {

namespace kl = koordlet;

constexpr std::string_view unsupported_message =
    "unsupported by this kernel: resctrl is not mounted at ";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

result<std::uint64_t> read_hex(const std::string& path) {
  auto text = internal::read_file(path);
  if (!text) return tl::unexpected(text.error());
  const auto t = trim(*text);
  std::uint64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v, 16);
  if (t.empty() || r.ec != std::errc{} || r.ptr != t.data() + t.size())
    return tl::unexpected(error{
        errc::invalid_input, "field cbm_mask: \"" + std::string(t) + "\" is not a hex mask", path});
  return v;
}

result<std::int64_t> read_count(const std::string& path, std::string_view field) {
  auto text = internal::read_file(path);
  if (!text) return tl::unexpected(text.error());
  return internal::parse_count(*text, field, path);
}

// Writes `value` into `path` with one write(2). O_APPEND: a pseudo file ignores the offset, a
// test's regular file keeps every task written. O_CREAT: mkdir in resctrl makes the group's
// files, a fake tree's mkdir does not. errno on failure.
int write_once(const std::string& path, std::string_view value, bool append) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) return errno;
  const auto n = ::write(fd, value.data(), value.size());
  const int err = n < 0 ? errno : (static_cast<std::size_t>(n) != value.size() ? EIO : 0);
  ::close(fd);
  return err;
}

std::set<std::int64_t> read_pids(const std::string& path) {
  std::set<std::int64_t> out;
  auto text = internal::read_file(path);
  if (!text) return out;
  std::string_view t = *text;
  while (!t.empty()) {
    const auto nl = t.find('\n');
    const auto line = trim(t.substr(0, nl));
    t = nl == std::string_view::npos ? std::string_view{} : t.substr(nl + 1);
    std::int64_t v = 0;
    if (std::from_chars(line.data(), line.data() + line.size(), v).ec == std::errc{}) out.insert(v);
  }
  return out;
}

}  // namespace

result<kl::resctrl_info> read_resctrl_info(const std::string& root, const std::string& proc_root) {
  const std::string schemata = internal::join(root, "schemata");
  if (!internal::is_file(schemata) || !internal::is_dir(internal::join(root, "info")))
    return tl::unexpected(error{errc::not_found, std::string(unsupported_message) + root, root});
  auto text = internal::read_file(schemata);
  if (!text) return tl::unexpected(text.error());
  auto lines = kl::parse_schemata(*text, schemata);
  if (!lines) return tl::unexpected(lines.error());
  kl::resctrl_info info;
  for (const auto& l : *lines) {
    auto& ids = l.resource == "L3" ? info.l3_ids : l.resource == "MB" ? info.mb_ids : info.l3_ids;
    if (l.resource != "L3" && l.resource != "MB") continue;  // L2, L3CODE/L3DATA (CDP): not ours
    for (const auto& [id, v] : l.domains) ids.push_back(id);
  }
  const std::string l3 = internal::join(root, "info/L3");
  if (internal::is_dir(l3) && !info.l3_ids.empty()) {
    auto cbm = read_hex(internal::join(l3, "cbm_mask"));
    if (!cbm) return tl::unexpected(cbm.error());
    info.l3 = true;
    info.cbm_mask = *cbm;
    if (internal::is_file(internal::join(l3, "min_cbm_bits"))) {
      auto m = read_count(internal::join(l3, "min_cbm_bits"), "min_cbm_bits");
      if (!m) return tl::unexpected(m.error());
      info.min_cbm_bits = *m;
    }
  }
  const std::string mb = internal::join(root, "info/MB");
  if (internal::is_dir(mb) && !info.mb_ids.empty()) {
    info.mb = true;
    for (const auto& [name, out] : {std::pair{"min_bandwidth", &info.min_bandwidth},
                                    std::pair{"bandwidth_gran", &info.bandwidth_gran}}) {
      const std::string f = internal::join(mb, name);
      if (!internal::is_file(f)) continue;
      auto v = read_count(f, name);
      if (!v) return tl::unexpected(v.error());
      *out = *v;
    }
  }
  if (auto cpuinfo = internal::read_file(internal::join(proc_root, "cpuinfo"))) {
    if (const auto at = cpuinfo->find("vendor_id"); at != std::string::npos) {
      const auto eol = cpuinfo->find('\n', at);
      const std::string_view line(cpuinfo->data() + at,
                                  (eol == std::string::npos ? cpuinfo->size() : eol) - at);
      info.amd = line.find("AuthenticAMD") != std::string_view::npos;
    }
  }
  return info;
}

apply_result resctrl_executor::apply_group(
    std::string_view group,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  apply_result out;
  const std::string& root = config_.resctrl_root;
  if (!internal::is_file(internal::join(root, "schemata"))) {
    out.unsupported.push_back(
        error{errc::not_found, std::string(unsupported_message) + root, root});
    return out;
  }
  const std::string dir = internal::join(root, group);
  if (!internal::is_dir(dir) && ::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    out.failed = error{errc::unavailable,
                       "creating the resctrl group: " + std::string(std::strerror(errno)), dir};
    return out;
  }
  const std::string key_base = "resctrl/" + std::string(group) + "/";
  for (const auto& [name, value] : settings) {
    if (name == "schemata") {
      const std::string file = internal::join(dir, "schemata");
      auto wanted = kl::parse_schemata(value, file);
      if (!wanted) {
        out.failed = wanted.error();
        return out;
      }
      if (const int err = write_once(file, value + "\n", false); err != 0) {
        out.failed =
            error{errc::unavailable, "writing \"" + value + "\": " + std::strerror(err), file};
        return out;
      }
      auto back = internal::read_file(file);
      if (!back) {
        out.failed = back.error();
        return out;
      }
      auto held = kl::parse_schemata(*back, file);
      if (!held) {
        out.failed = held.error();
        return out;
      }
      // The kernel lists every resource and pads masks: compare what was written, as numbers.
      std::string shown;
      bool same = true;
      for (const auto& w : *wanted) {
        const auto h = std::find_if(held->begin(), held->end(),
                                    [&](const auto& l) { return l.resource == w.resource; });
        std::string line = w.resource + ":";
        if (h == held->end()) {
          same = false;
          continue;
        }
        for (const auto& dom : w.domains) {
          const auto d = std::find_if(h->domains.begin(), h->domains.end(),
                                      [&](const auto& x) { return x.first == dom.first; });
          same = same && d != h->domains.end() &&
                 kl::same_schemata_value(w.resource, dom.second, d->second);
        }
        for (std::size_t i = 0; i < h->domains.size(); ++i)
          line += (i == 0 ? "" : ";") + std::to_string(h->domains[i].first) + "=" +
                  h->domains[i].second;
        shown += (shown.empty() ? "" : "\n") + line;
      }
      if (!same) {
        out.failed =
            error{errc::failed_precondition,
                  "wrote \"" + value + "\" but the file holds \"" + std::string(trim(*back)) + "\"",
                  file};
        return out;
      }
      out.done.push_back({file, key_base + "schemata", value, shown});
    } else if (name == "tasks") {
      const std::string file = internal::join(dir, "tasks");
      auto mounts = detect_mounts(config_.cgroup_root);
      if (!mounts) {
        out.failed = mounts.error();
        return out;
      }
      const std::string base = internal::join(mounts->cpu, config_.kube_parent_dir);
      auto layout = discover_kubepods(base);
      if (!layout) {
        out.failed = layout.error();
        return out;
      }
      const std::string tasks_name =
          mounts->version == cgroup_version::v2 ? "cgroup.threads" : "tasks";
      std::set<std::string, std::less<>> uids;
      std::string_view rest = value;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (const auto u = trim(rest.substr(0, comma)); !u.empty()) uids.emplace(u);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
      std::set<std::int64_t> pids;
      for (const auto& p : layout->pods) {
        if (uids.count(p.uid) == 0) continue;
        for (auto pid : read_pids(internal::join(internal::join(base, p.dir), tasks_name)))
          pids.insert(pid);
        for (const auto& c : p.containers)
          for (auto pid : read_pids(internal::join(internal::join(base, c.dir), tasks_name)))
            pids.insert(pid);
      }
      // Only the tasks not in the group yet (Koordinator: a resctrl write per new task only).
      const auto already = read_pids(file);
      std::vector<std::int64_t> written;
      for (const auto pid : pids) {
        if (already.count(pid) != 0) continue;
        const int err = write_once(file, std::to_string(pid) + "\n", true);
        if (err == ESRCH) continue;  // the task exited since its cgroup listed it
        if (err != 0) {
          out.failed =
              error{errc::unavailable,
                    "writing task " + std::to_string(pid) + ": " + std::strerror(err), file};
          return out;
        }
        written.push_back(pid);
      }
      const auto held = read_pids(file);
      std::string w, r;
      for (const auto pid : written) {
        w += (w.empty() ? "" : " ") + std::to_string(pid);
        if (held.count(pid) != 0) r += (r.empty() ? "" : " ") + std::to_string(pid);
      }
      if (w != r) {
        out.failed = error{errc::failed_precondition,
                           "wrote tasks \"" + w + "\" but the group lists \"" + r + "\"", file};
        return out;
      }
      out.done.push_back({file, key_base + "tasks", w, r});
    } else {
      out.failed = error{errc::invalid_input, "unknown resctrl setting \"" + name + "\"", dir};
      return out;
    }
  }
  return out;
}

}  // namespace colony::node
