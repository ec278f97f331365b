// Coscheduling (gang scheduling): a gang's pods are bound only when enough of them (min
// available, per gang of a gang group) have passed Permit; otherwise they wait, and in Strict
// mode a failure of one member rejects the waiting rest.
//
// What it defines: coscheduling_args, pod_group (the PodGroup CRD as a plain struct), the gang
// cache (gangs, gang groups, representatives, waiting/bound members, once-satisfied) and the
// plugin (PreEnqueue, PreFilter, Permit, Unreserve, PostFilter).
//
// Koordinator: pkg/scheduler/plugins/coscheduling/{coscheduling.go, core/core.go, core/gang.go,
// core/ganggroup.go, core/gang_cache.go, util/gang_helper.go}; apis/extension/coscheduling.go.
// Colony differences: no network-topology gangs and no gang scheduling context (NextPod);
// the queue releases gang members together instead (scheduling_queue.hpp).
//
// Ownership/threading: the actor feeds pod and PodGroup events (on_pod_add/on_pod_delete/
// on_pod_bound/on_pod_group_add) between cycles; single-threaded.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/scheduler/framework.hpp"

namespace colony::scheduler {

enum class gang_mode : std::uint8_t { strict, non_strict };
enum class gang_match_policy : std::uint8_t { once_satisfied, only_waiting, waiting_and_running };
[[nodiscard]] std::string_view to_string(gang_mode m) noexcept;
[[nodiscard]] std::string_view to_string(gang_match_policy p) noexcept;
[[nodiscard]] std::optional<gang_match_policy> parse_gang_match_policy(std::string_view s) noexcept;

struct coscheduling_args {
  // Default: 600 s (defaults.go defaultTimeout).
  duration_ms default_timeout{600'000};
  // Default: 1 (defaults.go defaultControllerWorkers).
  std::int32_t controller_workers = 1;
  // Default: false (defaults.go defaultEnablePreemption).
  bool enable_preemption = false;
  // Default: false (types.go).
  bool skip_check_schedule_cycle = false;
  // Default: false (defaults.go defaultAwareNetworkTopology).
  bool aware_network_topology = false;
  // Default: once-satisfied (defaults.go defaultGangMatchPolicy).
  gang_match_policy default_match_policy = gang_match_policy::once_satisfied;
};

[[nodiscard]] result<void> validate(const coscheduling_args& a, const std::string& path);

// scheduling.sigs.k8s.io/v1alpha1 PodGroup with the gang annotations Koordinator reads on it.
struct pod_group {
  std::string namespace_name;
  std::string name;
  std::int32_t min_member = 0;
  std::optional<std::int64_t> schedule_timeout_seconds;
  std::optional<std::string> total_number;  // gang.scheduling.koordinator.sh/total-number
  std::optional<std::string> mode;
  std::optional<std::string> groups;
  std::optional<std::string> match_policy;
  event_time creation_time{0};
};

// Parses a Go duration ("10s", "1m30s", "500ms", "1h"); nullopt if invalid.
[[nodiscard]] std::optional<duration_ms> parse_go_duration(std::string_view s) noexcept;
// util.StringToGangGroupSlice: a JSON array of strings; nullopt if invalid.
[[nodiscard]] std::optional<std::vector<std::string>> parse_gang_groups(std::string_view s);

struct gang {
  std::string id;  // "namespace/name"
  bool initialized = false;
  bool from_pod_group = false;
  int min_required = 0;
  int total_children = 0;
  gang_mode mode = gang_mode::strict;
  gang_match_policy match_policy = gang_match_policy::once_satisfied;
  duration_ms wait_time{0};
  std::vector<std::string> group;  // sorted gang ids (the group id joins them with ",")
  std::string group_id;
  event_time create_time{0};
  std::set<std::string> children;
  std::set<std::string> pending;
  std::set<std::string> waiting;  // WaitingForBindChildren (passed Permit, not yet bound)
  std::set<std::string> bound;
};

struct gang_group_info {
  bool once_resource_satisfied = false;  // irreversible
  std::set<std::string> waiting_gangs;
  std::string representative;  // pod key admitted by PreEnqueue for the group
};

class coscheduling final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "Coscheduling";
  explicit coscheduling(coscheduling_args args = {}) : args_(args) {}

  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override {
    return ep_pre_enqueue | ep_pre_filter | ep_reserve | ep_permit | ep_post_filter;
  }
  [[nodiscard]] const coscheduling_args& args() const noexcept { return args_; }

  // --- cache events (gang_cache.go) ---
  void on_pod_group_add(const pod_group& pg);
  void on_pod_add(const pod_info& pod);
  void on_pod_delete(const pod_info& pod);
  // PostBind: the pod is bound; the gang group becomes once-satisfied.
  void on_pod_bound(const pod_info& pod);

  // --- extension points ---
  status pre_enqueue(const pod_info& pod, event_time now) override;
  status pre_filter(cycle_state&, const pod_info& pod, std::span<const node_info>,
                    event_time now) override;
  void unreserve(cycle_state& st, const pod_info& pod, const node_info&, event_time) override;
  permit_result permit(cycle_state&, const pod_info& pod, const node_info&,
                       event_time now) override;
  post_filter_result post_filter(cycle_state&, const pod_info& pod, event_time) override;

  // Waiting pods whose Permit wait expired at `now`, in (deadline, key) order; the caller
  // rejects them (framework::run_unreserve + forget_pod), which in Strict mode rejects the group.
  [[nodiscard]] std::vector<std::string> expire_waiting(event_time now);

  // --- inspection ---
  [[nodiscard]] const gang* find_gang(std::string_view id) const;
  [[nodiscard]] gang* find_gang(std::string_view id);
  [[nodiscard]] const gang_group_info* find_group(std::string_view group_id) const;
  gang_group_info& group_of(const gang& g);
  // "namespace/gang-name" of a gang pod; empty for other pods.
  [[nodiscard]] static std::string gang_id_of(const pod_info& pod);
  // The gang group id a pod belongs to (its own gang id until the gang is initialised).
  [[nodiscard]] std::string gang_group_id_of(const pod_info& pod) const;

 private:
  gang& get_or_create(const std::string& id);
  bool try_init_by_pod_config(gang& g, const pod_info& pod);
  void set_group(gang& g, std::optional<std::string_view> groups_annotation);
  [[nodiscard]] bool valid_for_permit(const gang& g) const;
  [[nodiscard]] bool once_satisfied(const gang& g) const;
  [[nodiscard]] std::string basic_check(const gang& g, const pod_info& pod) const;
  // Rejects every waiting pod of the gang's group (rejectGangGroupById); returns them sorted.
  std::vector<std::string> reject_group(const gang& g, std::string_view except);
  void del_assumed(gang& g, const std::string& pod_key);

  coscheduling_args args_;
  std::map<std::string, gang, std::less<>> gangs_;
  std::map<std::string, gang_group_info, std::less<>> groups_;
  std::map<std::string, event_time, std::less<>> wait_deadline_;  // waiting pod -> deadline
  std::set<std::string, std::less<>> allowed_;  // waiting pods already released by a Permit
};

}  // namespace colony::scheduler
