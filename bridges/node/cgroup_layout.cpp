#include "bridges/node/cgroup_layout.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "bridges/node/internal/file_read.hpp"

namespace colony::node {

std::string_view to_string(cgroup_driver d) noexcept {
  return d == cgroup_driver::systemd ? "systemd" : "cgroupfs";
}

namespace {

std::optional<std::string> first_dir(const std::string& root,
                                     std::initializer_list<std::string_view> names) {
  for (auto n : names) {
    std::string p = internal::join(root, n);
    if (internal::is_dir(p)) return p;
  }
  return std::nullopt;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string replace_all(std::string_view s, char from, char to) {
  std::string out(s);
  std::replace(out.begin(), out.end(), from, to);
  return out;
}

// The QoS tier directories under kubepods, Guaranteed first (the kubepods directory itself).
struct tier {
  kube_qos_class qos;
  std::string_view cgroupfs;
  std::string_view systemd;
};
constexpr std::array<tier, 3> tiers = {{
    {kube_qos_class::guaranteed, "", ""},
    {kube_qos_class::burstable, "burstable", "kubepods-burstable.slice"},
    {kube_qos_class::best_effort, "besteffort", "kubepods-besteffort.slice"},
}};

std::string_view tier_dir(cgroup_driver d, kube_qos_class qos) {
  for (const auto& t : tiers) {
    if (t.qos == qos) return d == cgroup_driver::systemd ? t.systemd : t.cgroupfs;
  }
  return "";
}

// The pod-name prefix of each tier under systemd (kubelet's slice naming).
std::string_view systemd_pod_prefix(kube_qos_class qos) {
  switch (qos) {
    case kube_qos_class::burstable:
      return "kubepods-burstable-pod";
    case kube_qos_class::best_effort:
      return "kubepods-besteffort-pod";
    default:
      return "kubepods-pod";
  }
}

}  // namespace

result<cgroup_mounts> detect_mounts(const std::string& cgroup_root) {
  if (!internal::is_dir(cgroup_root)) {
    return fail(errc::not_found, "cgroup root is not a directory", cgroup_root);
  }
  cgroup_mounts m;
  if (internal::is_file(internal::join(cgroup_root, "cgroup.controllers"))) {
    m.version = cgroup_version::v2;
    m.cpu = m.cpuacct = m.memory = m.cpuset = cgroup_root;
    return m;
  }
  auto cpuacct = first_dir(cgroup_root, {"cpuacct", "cpu,cpuacct", "cpuacct,cpu"});
  if (!cpuacct) {
    return fail(errc::not_found,
                "no cgroup.controllers (v2) and no cpuacct controller directory (v1)",
                internal::join(cgroup_root, "cpuacct"));
  }
  auto cpu = first_dir(cgroup_root, {"cpu", "cpu,cpuacct", "cpuacct,cpu"});
  if (!cpu) {
    return fail(errc::not_found, "no cpu controller directory (v1)",
                internal::join(cgroup_root, "cpu"));
  }
  auto memory = first_dir(cgroup_root, {"memory"});
  if (!memory) {
    return fail(errc::not_found, "no memory controller directory (v1)",
                internal::join(cgroup_root, "memory"));
  }
  m.version = cgroup_version::v1;
  m.cpu = std::move(*cpu);
  m.cpuacct = std::move(*cpuacct);
  m.memory = std::move(*memory);
  if (auto cpuset = first_dir(cgroup_root, {"cpuset"})) m.cpuset = std::move(*cpuset);
  return m;
}

std::string kubepods_dir_name(cgroup_driver d) {
  return d == cgroup_driver::systemd ? "kubepods.slice" : "kubepods";
}

std::string qos_tier_dir(cgroup_driver d, kube_qos_class qos) {
  return internal::join(kubepods_dir_name(d), tier_dir(d, qos));
}

std::string pod_dir(cgroup_driver d, kube_qos_class qos, std::string_view uid) {
  std::string dir = internal::join(kubepods_dir_name(d), tier_dir(d, qos));
  if (d == cgroup_driver::systemd) {
    return internal::join(
        dir, std::string(systemd_pod_prefix(qos)) + replace_all(uid, '-', '_') + ".slice");
  }
  return internal::join(dir, "pod" + std::string(uid));
}

std::optional<std::string> parse_pod_dir_name(cgroup_driver d, std::string_view basename) {
  if (d == cgroup_driver::cgroupfs) {
    if (!starts_with(basename, "pod") || basename.size() == 3) return std::nullopt;
    return std::string(basename.substr(3));
  }
  for (auto q :
       {kube_qos_class::best_effort, kube_qos_class::burstable, kube_qos_class::guaranteed}) {
    const std::string_view prefix = systemd_pod_prefix(q);
    if (starts_with(basename, prefix) && ends_with(basename, ".slice") &&
        basename.size() > prefix.size() + 6) {
      const auto id = basename.substr(prefix.size(), basename.size() - prefix.size() - 6);
      return replace_all(id, '_', '-');
    }
  }
  return std::nullopt;
}

std::optional<container_cgroup> parse_container_dir_name(cgroup_driver d,
                                                         std::string_view basename) {
  if (d == cgroup_driver::cgroupfs) {
    if (basename.empty()) return std::nullopt;
    return container_cgroup{std::string(basename), "", ""};
  }
  // crio-conmon-<id>.scope is CRI-O's monitor process, not a container.
  if (starts_with(basename, "crio-conmon-")) return std::nullopt;
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> prefixes = {{
      {"cri-containerd-", "containerd"},
      {"docker-", "docker"},
      {"crio-", "cri-o"},
      {"pouch-", "pouch"},
  }};
  if (!ends_with(basename, ".scope")) return std::nullopt;
  for (const auto& pr : prefixes) {
    if (starts_with(basename, pr.first) && basename.size() > pr.first.size() + 6) {
      const auto id = basename.substr(pr.first.size(), basename.size() - pr.first.size() - 6);
      return container_cgroup{std::string(id), std::string(pr.second), ""};
    }
  }
  return std::nullopt;
}

result<kubepods_layout> discover_kubepods(const std::string& controller_dir) {
  kubepods_layout l;
  if (internal::is_dir(internal::join(controller_dir, "kubepods.slice"))) {
    l.driver = cgroup_driver::systemd;
  } else if (internal::is_dir(internal::join(controller_dir, "kubepods"))) {
    l.driver = cgroup_driver::cgroupfs;
  } else {
    return fail(errc::not_found, "no kubepods or kubepods.slice directory (is kubelet running?)",
                controller_dir);
  }
  l.kubepods_dir = kubepods_dir_name(l.driver);
  for (const auto& t : tiers) {
    const std::string tier_rel = internal::join(l.kubepods_dir, tier_dir(l.driver, t.qos));
    auto names = internal::list_dirs(internal::join(controller_dir, tier_rel));
    if (!names) {
      // A missing Burstable/BestEffort tier is normal before its first pod; others are errors.
      if (names.error().code == errc::not_found) continue;
      return tl::unexpected(names.error());
    }
    for (const auto& n : *names) {
      auto uid = parse_pod_dir_name(l.driver, n);
      if (!uid) continue;
      // Under systemd a tier's own pod prefix must match the tier; under cgroupfs the tier dirs
      // "burstable"/"besteffort" are not "pod..." and so never parse as pods.
      if (l.driver == cgroup_driver::systemd && !starts_with(n, systemd_pod_prefix(t.qos))) {
        continue;
      }
      pod_cgroup p;
      p.uid = std::move(*uid);
      p.qos = t.qos;
      p.dir = internal::join(tier_rel, n);
      auto cs = internal::list_dirs(internal::join(controller_dir, p.dir));
      if (!cs) {
        if (cs.error().code == errc::not_found) continue;  // the pod went away meanwhile
        return tl::unexpected(cs.error());
      }
      for (const auto& c : *cs) {
        auto cc = parse_container_dir_name(l.driver, c);
        if (!cc) continue;
        cc->dir = internal::join(p.dir, c);
        p.containers.push_back(std::move(*cc));
      }
      std::sort(p.containers.begin(), p.containers.end(),
                [](const container_cgroup& a, const container_cgroup& b) { return a.id < b.id; });
      l.pods.push_back(std::move(p));
    }
  }
  std::sort(l.pods.begin(), l.pods.end(),
            [](const pod_cgroup& a, const pod_cgroup& b) { return a.uid < b.uid; });
  return l;
}

}  // namespace colony::node
