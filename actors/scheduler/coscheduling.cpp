// coscheduling.hpp
#include "actors/scheduler/coscheduling.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

namespace colony::scheduler {

std::string_view to_string(gang_mode m) noexcept {
  return m == gang_mode::strict ? "Strict" : "NonStrict";
}

std::string_view to_string(gang_match_policy p) noexcept {
  switch (p) {
    case gang_match_policy::once_satisfied:
      return "once-satisfied";
    case gang_match_policy::only_waiting:
      return "only-waiting";
    case gang_match_policy::waiting_and_running:
      return "waiting-and-running";
  }
  return "";
}

std::optional<gang_match_policy> parse_gang_match_policy(std::string_view s) noexcept {
  if (s == "once-satisfied") return gang_match_policy::once_satisfied;
  if (s == "only-waiting") return gang_match_policy::only_waiting;
  if (s == "waiting-and-running") return gang_match_policy::waiting_and_running;
  return std::nullopt;
}

result<void> validate(const coscheduling_args& a, const std::string& path) {
  // ValidateCoschedulingArgs.
  if (a.default_timeout.value < 0)
    return fail(errc::invalid_input, "coeSchedulingArgs DefaultTimeoutSeconds invalid",
                path + ".defaultTimeout");
  if (a.controller_workers < 1)
    return fail(errc::invalid_input, "coeSchedulingArgs ControllerWorkers invalid",
                path + ".controllerWorkers");
  return {};
}

std::optional<duration_ms> parse_go_duration(std::string_view s) noexcept {
  // time.ParseDuration: [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+ ; "0" alone is valid.
  if (s.empty()) return std::nullopt;
  bool neg = false;
  if (s.front() == '-' || s.front() == '+') {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return duration_ms{0};
  if (s.empty()) return std::nullopt;
  double total_ns = 0;
  while (!s.empty()) {
    std::size_t i = 0;
    double v = 0;
    bool digits = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + (s[i] - '0');
      ++i;
      digits = true;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      double scale = 0.1;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        v += (s[i] - '0') * scale;
        scale /= 10;
        ++i;
        digits = true;
      }
    }
    if (!digits) return std::nullopt;
    std::size_t j = i;
    while (j < s.size() && !(s[j] >= '0' && s[j] <= '9') && s[j] != '.') ++j;
    std::string_view unit = s.substr(i, j - i);
    double mul = 0;
    if (unit == "ns")
      mul = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs")
      mul = 1e3;
    else if (unit == "ms")
      mul = 1e6;
    else if (unit == "s")
      mul = 1e9;
    else if (unit == "m")
      mul = 60e9;
    else if (unit == "h")
      mul = 3600e9;
    else
      return std::nullopt;
    total_ns += v * mul;
    s.remove_prefix(j);
  }
  auto ms = static_cast<std::int64_t>(total_ns / 1e6);
  return duration_ms{neg ? -ms : ms};
}

std::optional<std::vector<std::string>> parse_gang_groups(std::string_view s) {
  auto j = nlohmann::json::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : j) {
    if (!e.is_string()) return std::nullopt;
    out.push_back(e.get<std::string>());
  }
  return out;
}

namespace {

std::optional<std::int64_t> parse_int32(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  std::int64_t v = 0;
  const char* b = s->data();
  const char* e = b + s->size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc{} || p != e || b == e) return std::nullopt;
  if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
  return v;
}

std::string join_ids(const std::vector<std::string>& ids, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += sep;
    out += ids[i];
  }
  return out;
}

// Go's %v of a []string.
std::string go_slice(const std::vector<std::string>& ids) { return "[" + join_ids(ids, " ") + "]"; }

// Shared by pod-annotation and PodGroup initialisation: total-number, mode, match policy.
int total_or_min(const std::optional<std::string>& total, int min) {
  if (!total || total->empty()) return min;
  auto t = parse_int32(total);
  if (!t || *t == 0 || *t < min) return min;
  return static_cast<int>(*t);
}

gang_mode mode_of(const std::optional<std::string>& m) {
  if (m && *m == "NonStrict") return gang_mode::non_strict;
  return gang_mode::strict;  // empty or invalid -> Strict
}

}  // namespace

std::string coscheduling::gang_id_of(const pod_info& pod) {
  if (pod.gang.name.empty()) return {};
  return std::string(pod.namespace_name()) + "/" + pod.gang.name;
}

gang& coscheduling::get_or_create(const std::string& id) {
  auto it = gangs_.find(id);
  if (it == gangs_.end()) {
    gang g;
    g.id = id;
    g.group = {id};
    g.group_id = id;
    it = gangs_.emplace(id, std::move(g)).first;
  }
  return it->second;
}

const gang* coscheduling::find_gang(std::string_view id) const {
  auto it = gangs_.find(id);
  return it == gangs_.end() ? nullptr : &it->second;
}

gang* coscheduling::find_gang(std::string_view id) {
  auto it = gangs_.find(id);
  return it == gangs_.end() ? nullptr : &it->second;
}

const gang_group_info* coscheduling::find_group(std::string_view group_id) const {
  auto it = groups_.find(group_id);
  return it == groups_.end() ? nullptr : &it->second;
}

gang_group_info& coscheduling::group_of(const gang& g) { return groups_[g.group_id]; }

std::string coscheduling::gang_group_id_of(const pod_info& pod) const {
  auto id = gang_id_of(pod);
  if (id.empty()) return {};
  const gang* g = find_gang(id);
  return g ? g->group_id : id;
}

void coscheduling::set_group(gang& g, std::optional<std::string_view> groups_annotation) {
  std::vector<std::string> group;
  if (groups_annotation && !groups_annotation->empty())
    if (auto parsed = parse_gang_groups(*groups_annotation)) group = std::move(*parsed);
  if (group.empty()) group = {g.id};
  std::sort(group.begin(), group.end());  // GetGangGroupId sorts
  g.group = group;
  g.group_id = join_ids(group, ",");
  (void)groups_[g.group_id];
}

bool coscheduling::try_init_by_pod_config(gang& g, const pod_info& pod) {
  // gang.go tryInitByPodConfig: only the first pod with a parseable min configures the gang.
  if (g.initialized) return false;
  auto min = parse_int32(pod.gang.min_available);
  if (!min) return false;
  g.min_required = static_cast<int>(*min);
  g.total_children = total_or_min(pod.gang.total_number, g.min_required);
  g.mode = mode_of(pod.gang.mode);
  g.match_policy = args_.default_match_policy;
  if (pod.gang.match_policy && !pod.gang.match_policy->empty())
    g.match_policy =
        parse_gang_match_policy(*pod.gang.match_policy).value_or(args_.default_match_policy);
  duration_ms wait{0};
  bool bad = false;
  if (pod.gang.waiting_time && !pod.gang.waiting_time->empty()) {
    auto d = parse_go_duration(*pod.gang.waiting_time);
    if (!d)
      bad = true;
    else
      wait = *d;
  }
  if (wait.value == 0 || bad || wait.value < 0) wait = args_.default_timeout;
  g.wait_time = wait;
  set_group(g, pod.gang.groups ? std::optional<std::string_view>(*pod.gang.groups) : std::nullopt);
  g.from_pod_group = false;
  g.initialized = true;
  return true;
}

void coscheduling::on_pod_group_add(const pod_group& pg) {
  gang& g = get_or_create(pg.namespace_name + "/" + pg.name);
  // tryInitByPodGroup (always re-applies).
  g.min_required = pg.min_member;
  g.total_children = total_or_min(pg.total_number, g.min_required);
  g.mode = mode_of(pg.mode);
  g.match_policy = args_.default_match_policy;
  if (pg.match_policy && !pg.match_policy->empty())
    g.match_policy = parse_gang_match_policy(*pg.match_policy).value_or(args_.default_match_policy);
  g.create_time = pg.creation_time;
  // GetWaitTimeDuration: scheduleTimeoutSeconds if > 0, else the default.
  g.wait_time = pg.schedule_timeout_seconds && *pg.schedule_timeout_seconds > 0
                    ? duration_ms{*pg.schedule_timeout_seconds * 1000}
                    : args_.default_timeout;
  set_group(g, pg.groups ? std::optional<std::string_view>(*pg.groups) : std::nullopt);
  g.from_pod_group = true;
  g.initialized = true;
}

void coscheduling::on_pod_add(const pod_info& pod) {
  auto id = gang_id_of(pod);
  if (id.empty()) return;
  gang& g = get_or_create(id);
  if (!pod.gang.pod_group_label) try_init_by_pod_config(g, pod);
  (void)group_of(g);
  g.children.insert(pod.key);
  if (pod.node_name.empty() && !g.waiting.contains(pod.key)) g.pending.insert(pod.key);
  if (!pod.node_name.empty()) on_pod_bound(pod);
}

void coscheduling::on_pod_bound(const pod_info& pod) {
  gang* g = find_gang(gang_id_of(pod));
  if (!g) return;
  auto& info = group_of(*g);
  g->waiting.erase(pod.key);
  if (g->waiting.empty()) info.waiting_gangs.erase(g->id);
  g->pending.erase(pod.key);
  if (info.representative == pod.key) info.representative.clear();
  g->bound.insert(pod.key);
  info.once_resource_satisfied = true;
  wait_deadline_.erase(pod.key);
  allowed_.erase(pod.key);
}

void coscheduling::on_pod_delete(const pod_info& pod) {
  auto id = gang_id_of(pod);
  gang* g = find_gang(id);
  if (!g) return;
  auto& info = group_of(*g);
  g->children.erase(pod.key);
  g->pending.erase(pod.key);
  if (info.representative == pod.key) info.representative.clear();
  g->waiting.erase(pod.key);
  if (g->waiting.empty()) info.waiting_gangs.erase(g->id);
  g->bound.erase(pod.key);
  wait_deadline_.erase(pod.key);
  allowed_.erase(pod.key);
  if (!g->from_pod_group && g->children.empty()) {
    auto group = g->group;
    auto group_id = g->group_id;
    gangs_.erase(gangs_.find(id));
    bool all_deleted = true;
    for (const auto& gid : group)
      if (find_gang(gid)) all_deleted = false;
    if (all_deleted) groups_.erase(group_id);
  }
}

bool coscheduling::once_satisfied(const gang& g) const {
  const auto* info = find_group(g.group_id);
  return info && info->once_resource_satisfied;
}

bool coscheduling::valid_for_permit(const gang& g) const {
  if (!g.initialized) return false;
  const int waiting = static_cast<int>(g.waiting.size());
  switch (g.match_policy) {
    case gang_match_policy::only_waiting:
      return waiting >= g.min_required;
    case gang_match_policy::waiting_and_running:
      return waiting + static_cast<int>(g.bound.size()) >= g.min_required;
    case gang_match_policy::once_satisfied:
      break;
  }
  return waiting >= g.min_required || once_satisfied(g);
}

std::string coscheduling::basic_check(const gang& g, const pod_info& pod) const {
  // core.go basicGangRequirementsCheck.
  std::vector<std::string> missing, not_init, not_enough;
  for (const auto& id : g.group) {
    const gang* m = find_gang(id);
    if (!m)
      missing.push_back(id);
    else if (!m->initialized)
      not_init.push_back(id);
    else if (static_cast<int>(m->children.size()) < m->min_required)
      not_enough.push_back(id);
  }
  std::vector<std::string> msg;
  if (!missing.empty()) msg.push_back("memberGangs " + go_slice(missing) + " doesn't exists");
  if (!not_init.empty()) msg.push_back("memberGangs " + go_slice(not_init) + " has not init");
  if (!not_enough.empty())
    msg.push_back("memberGangs " + go_slice(g.group) + " child pod not collect enough");
  if (msg.empty()) return {};
  return "gangGroup " + go_slice(g.group) + " basic check: " + join_ids(msg, ", ") +
         ", current gang: " + g.id + ", podName: " + pod.key;
}

status coscheduling::pre_enqueue(const pod_info& pod, event_time) {
  auto id = gang_id_of(pod);
  if (id.empty()) return {};
  gang* g = find_gang(id);
  if (!g)
    return status::unresolvable({}, "can't find gang, gangName: " + id + ", podName: " + pod.key);
  if (!g->initialized)
    return status::unresolvable({}, "gang has not init, gangName: " + id + ", podName: " + pod.key);
  auto& info = group_of(*g);
  if (g->match_policy == gang_match_policy::once_satisfied && info.once_resource_satisfied)
    return {};
  if (auto err = basic_check(*g, pod); !err.empty()) {
    if (info.representative == pod.key) info.representative.clear();
    return status::unresolvable({}, std::move(err));
  }
  // RecordIfNoRepresentatives: one representative pod per gang group until it is scheduled.
  if (!g->pending.contains(pod.key))
    return status::unresolvable({}, "pod " + pod.key + " is not exists in gangCache");
  if (info.representative.empty()) info.representative = pod.key;
  if (info.representative != pod.key)
    return status::unresolvable({}, "representative pod " + info.representative +
                                        " of gangGroupID " + g->group_id + " already exists");
  return {};
}

status coscheduling::pre_filter(cycle_state&, const pod_info& pod, std::span<const node_info>,
                                event_time) {
  // BeforePreFilter without the scheduling context: gang exists, is initialised and passes the
  // basic check (unless once satisfied); the representative is released once it is scheduled.
  auto id = gang_id_of(pod);
  if (id.empty()) return {};
  gang* g = find_gang(id);
  if (!g)
    return status::unresolvable({}, "can't find gang, gangName: " + id + ", podName: " + pod.key);
  if (!g->initialized)
    return status::unresolvable({}, "gang has not init, gangName: " + id + ", podName: " + pod.key);
  auto& info = group_of(*g);
  if (g->match_policy == gang_match_policy::once_satisfied && info.once_resource_satisfied)
    return {};
  if (auto err = basic_check(*g, pod); !err.empty()) {
    if (info.representative == pod.key) info.representative.clear();
    return status::unresolvable({}, std::move(err));
  }
  info.representative.clear();  // ClearCurrentRepresentative: the group enters scheduling
  return {};
}

void coscheduling::del_assumed(gang& g, const std::string& pod_key) {
  if (g.waiting.erase(pod_key)) {
    if (g.children.contains(pod_key)) g.pending.insert(pod_key);
    if (g.waiting.empty()) group_of(g).waiting_gangs.erase(g.id);
  }
  wait_deadline_.erase(pod_key);
  allowed_.erase(pod_key);
}

std::vector<std::string> coscheduling::reject_group(const gang& g, std::string_view except) {
  std::vector<std::string> out;
  for (const auto& gid : g.group) {
    gang* m = find_gang(gid);
    if (!m) continue;
    std::vector<std::string> keys(m->waiting.begin(), m->waiting.end());
    for (auto& k : keys) {
      if (k == except) continue;
      del_assumed(*m, k);
      out.push_back(std::move(k));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

permit_result coscheduling::permit(cycle_state&, const pod_info& pod, const node_info&,
                                   event_time now) {
  permit_result r;
  auto id = gang_id_of(pod);
  if (id.empty()) return r;  // PodGroupNotSpecified -> Success
  gang* g = find_gang(id);
  if (!g) {
    r.st = status::unschedulable("Gang not found");
    return r;
  }
  // addAssumedPod.
  g->waiting.insert(pod.key);
  g->pending.erase(pod.key);
  bool all_valid = true;
  for (const auto& gid : g->group) {
    const gang* m = find_gang(gid);
    if (!m || !valid_for_permit(*m)) {
      all_valid = false;
      break;
    }
  }
  auto& info = group_of(*g);
  if (!all_valid) {
    info.waiting_gangs.insert(g->group.begin(), g->group.end());
    r.st = {status_code::wait, {}, {}};
    r.wait = g->wait_time;
    wait_deadline_[pod.key] = now + g->wait_time;
    return r;
  }
  // AllowGangGroup: every waiting pod of the group goes to binding.
  for (const auto& gid : g->group) {
    const gang* m = find_gang(gid);
    if (!m) continue;
    for (const auto& k : m->waiting) {
      if (k == pod.key || allowed_.contains(k)) continue;
      r.allowed_pods.push_back(k);
    }
  }
  std::sort(r.allowed_pods.begin(), r.allowed_pods.end());
  for (const auto& k : r.allowed_pods) {
    allowed_.insert(k);
    wait_deadline_.erase(k);
  }
  allowed_.insert(pod.key);
  wait_deadline_.erase(pod.key);
  return r;
}

void coscheduling::unreserve(cycle_state& st, const pod_info& pod, const node_info&, event_time) {
  auto id = gang_id_of(pod);
  if (id.empty()) return;
  gang* g = find_gang(id);
  if (!g) return;
  del_assumed(*g, pod.key);
  const bool satisfied = g->match_policy == gang_match_policy::once_satisfied && once_satisfied(*g);
  if (!satisfied && g->mode == gang_mode::strict)
    for (auto& k : reject_group(*g, pod.key)) st.rejected_pods.push_back(std::move(k));
}

post_filter_result coscheduling::post_filter(cycle_state&, const pod_info& pod, event_time) {
  // AfterPostFilter: a Strict gang whose member cannot be placed rejects its waiting members.
  post_filter_result r;
  auto id = gang_id_of(pod);
  if (id.empty()) return r;
  gang* g = find_gang(id);
  if (!g) return r;
  if (g->match_policy == gang_match_policy::once_satisfied && once_satisfied(*g)) return r;
  if (g->mode == gang_mode::strict) {
    group_of(*g).waiting_gangs.clear();
    r.rejected_pods = reject_group(*g, pod.key);
    r.st = status::unschedulable(
        {}, "Gang \"" + g->id + "\" gets rejected due to pod is unschedulable");
  }
  return r;
}

std::vector<std::string> coscheduling::expire_waiting(event_time now) {
  std::vector<std::pair<event_time, std::string>> due;
  for (const auto& [k, t] : wait_deadline_)
    if (t <= now) due.emplace_back(t, k);
  std::sort(due.begin(), due.end());
  std::vector<std::string> out;
  out.reserve(due.size());
  for (auto& [t, k] : due) out.push_back(std::move(k));
  return out;
}

}  // namespace colony::scheduler
