// load_trace_set (see trace_set.hpp).
#include "bridges/trace/trace_set.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

namespace colony::trace {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view synthetic_prefix = "synthetic-";
constexpr std::string_view pod_prefix = "openb_pod_list_";
constexpr std::string_view node_prefix = "openb_node_list_";
constexpr std::string_view v2018_full_tables[] = {"container_meta.csv", "container_usage.csv",
                                                  "batch_task.csv", "batch_instance.csv"};

struct found {
  std::string path;
  bool synthetic = false;
};

// Regular files of one folder, sorted by name.
result<std::vector<fs::path>> files_of(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) out.push_back(it->path());
  if (ec) return fail(errc::unavailable, "cannot list directory: " + ec.message(), dir.string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::size_t trace_set::warning_count() const {
  std::size_t n = 0;
  auto add = [&](const auto& t) {
    if (t) n += t->warnings.size();
  };
  add(openb_nodes);
  add(openb_pods);
  add(machine_meta);
  add(machine_usage);
  add(container_meta);
  add(container_usage);
  add(batch_task);
  add(batch_instance);
  add(server_event);
  return n;
}

result<trace_set> load_trace_set(const std::string& dir, const trace_set_options& opt) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fail(errc::not_found, "not a directory", dir);
  std::vector<fs::path> folders{fs::path(dir)};
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) folders.push_back(it->path());
  if (ec) return fail(errc::unavailable, "cannot list directory: " + ec.message(), dir);
  std::sort(folders.begin() + 1, folders.end());

  // table name (as published) -> where it was found
  std::map<std::string, found> tables;
  for (const auto& folder : folders) {
    auto files = files_of(folder);
    if (!files) return tl::unexpected(files.error());
    bool v2017_folder = false;
    for (const auto& f : *files) {
      std::string n = f.filename().string();
      if (n == "server_event.csv" || n == "synthetic-server_event.csv") v2017_folder = true;
    }
    for (const auto& f : *files) {
      std::string name = f.filename().string();
      bool synthetic = name.starts_with(synthetic_prefix);
      if (synthetic) name.erase(0, synthetic_prefix.size());
      bool known = (name.starts_with(node_prefix) && name.ends_with(".csv")) ||
                   (name.starts_with(pod_prefix) && name.ends_with(".csv")) ||
                   name == "machine_meta.csv" || name == "machine_usage.csv" ||
                   name == "server_event.csv";
      bool v2018_full = std::find(std::begin(v2018_full_tables), std::end(v2018_full_tables),
                                  name) != std::end(v2018_full_tables);
      if (v2018_full && !v2017_folder) known = true;
      if (!known) continue;
      auto [it, inserted] = tables.emplace(name, found{f.string(), synthetic});
      if (!inserted)
        return fail(errc::invalid_input,
                    "table " + name + " found twice: " + it->second.path + " and " + f.string() +
                        " (keep one per trace directory)",
                    dir);
    }
  }
  if (tables.empty())
    return fail(errc::not_found,
                "no known trace file (openb_*.csv, machine_meta.csv, machine_usage.csv, "
                "server_event.csv, ...)",
                dir);

  trace_set set;
  set.dir = dir;
  for (const auto& [name, f] : tables) {
    if (name.starts_with(pod_prefix))
      set.pod_lists.push_back(name.substr(pod_prefix.size(), name.size() - pod_prefix.size() - 4));
    if (name.starts_with(node_prefix))
      set.node_lists.push_back(
          name.substr(node_prefix.size(), name.size() - node_prefix.size() - 4));
  }

  // Loads one table if present; false + error out on failure.
  std::optional<error> err;
  auto load = [&](const std::string& name, auto& slot, auto reader) {
    auto it = tables.find(name);
    if (err || it == tables.end()) return;
    if (std::find(opt.skip.begin(), opt.skip.end(), name) != opt.skip.end()) return;
    auto t = reader(it->second.path, opt.read);
    if (!t) {
      err = t.error();
      return;
    }
    set.synthetic |= it->second.synthetic;
    set.files.push_back(it->second.path);
    slot = std::move(*t);
  };
  if (!set.node_lists.empty()) {
    std::string want = std::string(node_prefix) + opt.node_list + ".csv";
    if (!tables.contains(want)) {
      std::string have;
      for (const auto& p : set.node_lists) have += (have.empty() ? "" : ", ") + p;
      return fail(errc::not_found,
                  "openb node list '" + opt.node_list + "' not found; present: " + have, dir);
    }
    load(want, set.openb_nodes, read_openb_nodes);
  }
  if (!set.pod_lists.empty()) {
    std::string want = std::string(pod_prefix) + opt.pod_list + ".csv";
    if (!tables.contains(want)) {
      std::string have;
      for (const auto& p : set.pod_lists) have += (have.empty() ? "" : ", ") + p;
      return fail(errc::not_found,
                  "openb pod list '" + opt.pod_list + "' not found; present: " + have, dir);
    }
    load(want, set.openb_pods, read_openb_pods);
  }
  load("machine_meta.csv", set.machine_meta, read_v2018_machine_meta);
  load("machine_usage.csv", set.machine_usage, read_v2018_machine_usage);
  load("container_meta.csv", set.container_meta, read_v2018_container_meta);
  load("container_usage.csv", set.container_usage, read_v2018_container_usage);
  load("batch_task.csv", set.batch_task, read_v2018_batch_task);
  load("batch_instance.csv", set.batch_instance, read_v2018_batch_instance);
  load("server_event.csv", set.server_event, read_v2017_server_event);
  if (err) return tl::unexpected(*err);
  return set;
}

}  // namespace colony::trace
