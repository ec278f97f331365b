// Golden cases of Coscheduling, from Koordinator's
// pkg/scheduler/plugins/coscheduling/core/{core_test.go, gang_cache_test.go}.
#include <gtest/gtest.h>

#include "actors/scheduler/coscheduling.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;

// A pod of a PodGroup gang (label pod-group.scheduling.sigs.k8s.io).
pod_info pg_pod(const std::string& ns, const std::string& name, const std::string& gang,
                const std::string& node = {}) {
  pod_info p = make_pod(ns + "/" + name);
  p.gang.name = gang;
  p.gang.pod_group_label = true;
  p.node_name = node;
  return p;
}

pod_group make_pg(const std::string& name, const std::string& ns, std::int32_t min,
                  std::optional<std::string> groups = std::nullopt) {
  pod_group pg;
  pg.name = name;
  pg.namespace_name = ns;
  pg.min_member = min;
  pg.schedule_timeout_seconds = 10;
  pg.groups = std::move(groups);
  return pg;
}

struct permit_row {
  const char* name;
  pod_info pod;
  std::vector<pod_group> pgs;
  std::vector<pod_info> pods;          // pass Permit first (waiting)
  std::vector<pod_info> running_pods;  // bound (PostBind)
  bool once_satisfy = false;
  std::optional<gang_match_policy> match_policy;
  status_code want;
  std::int64_t want_wait_ms;
};

TEST(CoschedulingPermit, TestPermit) {
  const std::string groups_cd = R"(["gangC_ns/gangC","gangD_ns/gangD"])";
  const std::string groups_ef = R"(["gangE_ns/gangE","gangF_ns/gangF"])";
  const std::vector<permit_row> rows = {
      {"pod1 does not belong to any pg, allow",
       make_pod("ns1/pod1"),
       {},
       {},
       {},
       false,
       {},
       status_code::success,
       0},
      {"pod2 belongs to a non-existing pg",
       pg_pod("ns1", "pod2", "gangnonexist"),
       {},
       {},
       {},
       false,
       {},
       status_code::wait,
       0},
      {"pod3 belongs to gangA that doesn't have enough assumed pods",
       pg_pod("gangA_ns", "pod3", "gangA"),
       {make_pg("gangA", "gangA_ns", 3)},
       {pg_pod("gangA_ns", "pod3-1", "gangA")},
       {},
       false,
       {},
       status_code::wait,
       10000},
      {"pod3 belongs to gangA that doesn't have enough assumed pods, but once satisfied",
       pg_pod("gangA_ns", "pod3", "gangA"),
       {make_pg("gangA", "gangA_ns", 3)},
       {pg_pod("gangA_ns", "pod3-1", "gangA")},
       {},
       true,
       gang_match_policy::once_satisfied,
       status_code::success,
       0},
      {"pod3 belongs to gangA that doesn't have enough assumed pods, once satisfied, but "
       "matchPolicy "
       "not once satisfied",
       pg_pod("gangA_ns", "pod3", "gangA"),
       {make_pg("gangA", "gangA_ns", 3)},
       {pg_pod("gangA_ns", "pod3-1", "gangA")},
       {},
       true,
       gang_match_policy::only_waiting,
       status_code::wait,
       10000},
      {"pod3 belongs to gangA that doesn't have enough assumed pods, but with Running pods is "
       "enough, "
       "matchPolicy only-waiting",
       pg_pod("gangA_ns", "pod3", "gangA"),
       {make_pg("gangA", "gangA_ns", 3)},
       {pg_pod("gangA_ns", "pod3-1", "gangA")},
       {pg_pod("gangA_ns", "pod3-2", "gangA", "n1")},
       true,
       gang_match_policy::only_waiting,
       status_code::wait,
       10000},
      {"pod3 belongs to gangA that doesn't have enough assumed pods, but with Running pods is "
       "enough, "
       "matchPolicy waiting-and-running",
       pg_pod("gangA_ns", "pod3", "gangA"),
       {make_pg("gangA", "gangA_ns", 3)},
       {pg_pod("gangA_ns", "pod3-1", "gangA")},
       {pg_pod("gangA_ns", "pod3-2", "gangA", "n1")},
       true,
       gang_match_policy::waiting_and_running,
       status_code::success,
       0},
      {"pod4 belongs to gangB that gangA has resourceSatisfied",
       pg_pod("gangA_ns", "pod4", "gangB"),
       {make_pg("gangB", "gangA_ns", 3)},
       {pg_pod("gangA_ns", "pod4-1", "gangB"), pg_pod("gangA_ns", "pod4-2", "gangB")},
       {},
       false,
       {},
       status_code::success,
       0},
      {"pod5 belongs to gangC that gangC has resourceSatisfied, but gangD has not satisfied",
       pg_pod("gangC_ns", "pod5", "gangC"),
       {make_pg("gangC", "gangC_ns", 2, groups_cd), make_pg("gangD", "gangD_ns", 2, groups_cd)},
       {pg_pod("gangC_ns", "pod5-1", "gangC"), pg_pod("gangD_ns", "pod5-2", "gangD")},
       {},
       false,
       {},
       status_code::wait,
       10000},
      {"pod6 belongs to gangE that gangE has resourceSatisfied, and gangF has satisfied too",
       pg_pod("gangE_ns", "pod6", "gangE"),
       {make_pg("gangE", "gangE_ns", 2, groups_ef), make_pg("gangF", "gangF_ns", 3, groups_ef)},
       {pg_pod("gangE_ns", "pod6-1", "gangE"), pg_pod("gangF_ns", "pod6-2", "gangF"),
        pg_pod("gangF_ns", "pod6-3", "gangF"), pg_pod("gangF_ns", "pod6-4", "gangF")},
       {},
       false,
       {},
       status_code::success,
       0},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    coscheduling plugin;
    for (const auto& pg : row.pgs) {
      plugin.on_pod_group_add(pg);
      gang* g = plugin.find_gang(pg.namespace_name + "/" + pg.name);
      ASSERT_NE(g, nullptr);
      plugin.group_of(*g).once_resource_satisfied = row.once_satisfy;
      if (row.match_policy) g->match_policy = *row.match_policy;
    }
    cycle_state st;
    node_info node = make_node("n1", 1000, Gi);
    for (const auto& p : row.pods) {
      plugin.on_pod_add(p);
      (void)plugin.permit(st, p, node, kNow);
    }
    for (const auto& p : row.running_pods) {
      plugin.on_pod_add(p);
      plugin.on_pod_bound(p);
    }
    if (!row.running_pods.empty()) {
      const gang* g = plugin.find_gang(coscheduling::gang_id_of(row.running_pods[0]));
      ASSERT_NE(g, nullptr);
      EXPECT_EQ(g->bound.size(), row.running_pods.size());
    }
    plugin.on_pod_add(row.pod);
    auto r = plugin.permit(st, row.pod, node, kNow);
    EXPECT_EQ(r.st.code, row.want);
    EXPECT_EQ(r.wait.value, row.want_wait_ms);
  }
}

struct pre_enqueue_row {
  const char* name;
  pod_info pod;
  std::vector<pod_info> pods;
  std::optional<pod_group> pg;
  std::optional<std::string> total_num;
  bool non_strict = false;
  bool resource_satisfied = false;
  std::string want;  // "" = nil
};

TEST(CoschedulingPreEnqueue, TestPlugin_PreEnqueue) {
  auto pods_of = [](const std::string& ns, const std::string& prefix, const std::string& gang,
                    int n) {
    std::vector<pod_info> out;
    for (int i = 1; i <= n; ++i) out.push_back(pg_pod(ns, prefix + "-" + std::to_string(i), gang));
    return out;
  };
  const std::vector<pre_enqueue_row> rows = {
      {"pod does not belong to any gang", make_pod("ns1/pod1"), {}, {}, {}, false, false, ""},
      {"pod belongs to a non-existing pg",
       pg_pod("gangA_ns", "pod2", "wenshiqi222"),
       {},
       {},
       {},
       false,
       false,
       "gang has not init, gangName: gangA_ns/wenshiqi222, podName: gangA_ns/pod2"},
      {"gang ResourceSatisfied",
       pg_pod("gangq_ns", "podq", "gangq"),
       {},
       make_pg("gangq", "gangq_ns", 4),
       {},
       false,
       true,
       ""},
      {"pod count less than minMember",
       pg_pod("ganga_ns", "pod3", "ganga"),
       pods_of("ganga_ns", "pod3", "ganga", 1),
       make_pg("ganga", "ganga_ns", 4),
       {},
       false,
       false,
       "gangGroup [ganga_ns/ganga] basic check: memberGangs [ganga_ns/ganga] child pod not collect "
       "enough, current gang: ganga_ns/ganga, podName: ganga_ns/pod3"},
      {"pods count equal with minMember,but is NonStrictMode",
       pg_pod("gangb_ns", "pod5", "gangb"),
       pods_of("gangb_ns", "pod5", "gangb", 3),
       make_pg("gangb", "gangb_ns", 4),
       {},
       true,
       false,
       ""},
      {"pods count equal with minMember,is StrictMode,scheduleCycle valid,but childrenNum is not "
       "reach "
       "to total num",
       pg_pod("ganga_ns", "pod8", "gange"), pods_of("ganga_ns", "pod8", "gange", 3),
       make_pg("gange", "ganga_ns", 4), "5", false, false, ""},
      {"pods count more than minMember,is StrictMode,scheduleCycle valid,and childrenNum reach to "
       "total "
       "num",
       pg_pod("ganga_ns", "pod9", "ganga"), pods_of("ganga_ns", "pod9", "ganga", 4),
       make_pg("ganga", "ganga_ns", 4), "5", false, false,
       "representative pod ganga_ns/pod9-4 of gangGroupID ganga_ns/ganga already exists"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    coscheduling plugin;
    if (row.pg) {
      pod_group pg = *row.pg;
      pg.total_number = row.total_num;
      if (row.non_strict) pg.mode = "NonStrict";
      plugin.on_pod_group_add(pg);
    }
    for (const auto& p : row.pods) {
      plugin.on_pod_add(p);
      (void)plugin.pre_enqueue(p, kNow);
    }
    plugin.on_pod_add(row.pod);
    if (row.resource_satisfied) {
      gang* g = plugin.find_gang(coscheduling::gang_id_of(row.pod));
      ASSERT_NE(g, nullptr);
      plugin.group_of(*g).once_resource_satisfied = true;
    }
    auto s = plugin.pre_enqueue(row.pod, kNow);
    if (row.want.empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
    } else {
      EXPECT_EQ(s.code, status_code::unschedulable_and_unresolvable);
      EXPECT_EQ(s.message(), row.want);
    }
  }
}

// gang_cache_test.go TestGangCache_OnPodAdd "add pods announcing Gang in Annotation way,but with
// illegal args".
TEST(CoschedulingGangCache, TestGangCacheOnPodAddWithIllegalArgs) {
  coscheduling plugin;
  pod_info pod3 = make_pod("default/pod3");
  pod3.gang.name = "gangb";
  pod3.gang.min_available = "xxx";
  pod_info pod4 = make_pod("default/pod4");
  pod4.gang.name = "gangb";
  pod4.gang.min_available = "2";
  pod4.gang.total_number = "1";
  pod4.gang.mode = "WenShiqi222";
  pod4.gang.waiting_time = "WenShiqi222";
  pod4.gang.groups = "ganga,gangx";
  plugin.on_pod_add(pod3);
  const gang* g = plugin.find_gang("default/gangb");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->initialized);  // pod3's min is not a number: not configured by it
  plugin.on_pod_add(pod4);
  g = plugin.find_gang("default/gangb");
  ASSERT_TRUE(g->initialized);
  EXPECT_EQ(g->min_required, 2);
  EXPECT_EQ(g->total_children, 2);
  EXPECT_EQ(g->mode, gang_mode::strict);
  EXPECT_EQ(g->wait_time.value, 600000);
  EXPECT_EQ(g->group, std::vector<std::string>{"default/gangb"});
  EXPECT_EQ(g->group_id, "default/gangb");
  EXPECT_EQ(g->match_policy, gang_match_policy::once_satisfied);
  EXPECT_EQ(g->children.size(), 2u);
  EXPECT_EQ(g->pending.size(), 2u);

  // Second illegal case: min 0, waiting-time "0" and "-20s", groups "[a,b]" -> defaults.
  for (const char* wait : {"0", "-20s"}) {
    coscheduling c;
    pod_info p = make_pod("default/pod5");
    p.gang.name = "gangc";
    p.gang.min_available = "0";
    p.gang.waiting_time = wait;
    p.gang.groups = "[a,b]";
    c.on_pod_add(p);
    const gang* gc = c.find_gang("default/gangc");
    ASSERT_TRUE(gc && gc->initialized);
    EXPECT_EQ(gc->min_required, 0);
    EXPECT_EQ(gc->total_children, 0);
    EXPECT_EQ(gc->wait_time.value, 600000);
    EXPECT_EQ(gc->group_id, "default/gangc");
  }
}

TEST(CoschedulingGangCache, GroupsAnnotationBundlesGangs) {
  coscheduling plugin;
  pod_info p = make_pod("ns/p1");
  p.gang.name = "a";
  p.gang.min_available = "1";
  p.gang.groups = R"(["ns/b","ns/a"])";
  p.gang.waiting_time = "1m30s";
  plugin.on_pod_add(p);
  const gang* g = plugin.find_gang("ns/a");
  ASSERT_TRUE(g && g->initialized);
  EXPECT_EQ(g->group_id, "ns/a,ns/b");  // sorted, joined by ","
  EXPECT_EQ(g->wait_time.value, 90000);
}

TEST(CoschedulingStrict, UnreserveRejectsWaitingGroupAndNonStrictDoesNot) {
  for (bool strict : {true, false}) {
    SCOPED_TRACE(strict ? "Strict" : "NonStrict");
    coscheduling plugin;
    pod_group pg = make_pg("g", "ns", 3);
    if (!strict) pg.mode = "NonStrict";
    plugin.on_pod_group_add(pg);
    cycle_state st;
    node_info node = make_node("n1", 1000, Gi);
    std::vector<pod_info> pods = {pg_pod("ns", "a", "g"), pg_pod("ns", "b", "g"),
                                  pg_pod("ns", "c", "g")};
    for (const auto& p : pods) plugin.on_pod_add(p);
    EXPECT_EQ(plugin.permit(st, pods[0], node, kNow).st.code, status_code::wait);
    EXPECT_EQ(plugin.permit(st, pods[1], node, kNow).st.code, status_code::wait);
    st.rejected_pods.clear();
    plugin.unreserve(st, pods[1], node, kNow);
    if (strict) {
      EXPECT_EQ(st.rejected_pods, std::vector<std::string>{"ns/a"});
    } else {
      EXPECT_TRUE(st.rejected_pods.empty());
    }
  }
}

TEST(CoschedulingPermit, SuccessReleasesWaitingMembersAndTimeoutsExpire) {
  coscheduling plugin;
  plugin.on_pod_group_add(make_pg("g", "ns", 3));
  cycle_state st;
  node_info node = make_node("n1", 1000, Gi);
  std::vector<pod_info> pods = {pg_pod("ns", "a", "g"), pg_pod("ns", "b", "g"),
                                pg_pod("ns", "c", "g")};
  for (const auto& p : pods) plugin.on_pod_add(p);
  EXPECT_EQ(plugin.permit(st, pods[0], node, kNow).st.code, status_code::wait);
  EXPECT_EQ(plugin.permit(st, pods[1], node, event_time{kNow.value + 1000}).st.code,
            status_code::wait);
  EXPECT_EQ(plugin.expire_waiting(event_time{kNow.value + 10000}),
            std::vector<std::string>{"ns/a"});
  auto r = plugin.permit(st, pods[2], node, event_time{kNow.value + 2000});
  EXPECT_EQ(r.st.code, status_code::success);
  EXPECT_EQ(r.allowed_pods, (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_TRUE(plugin.expire_waiting(event_time{kNow.value + 100000}).empty());
}

TEST(CoschedulingDuration, ParsesGoDurations) {
  EXPECT_EQ(parse_go_duration("10s")->value, 10000);
  EXPECT_EQ(parse_go_duration("1h2m3.5s")->value, 3723500);
  EXPECT_EQ(parse_go_duration("250ms")->value, 250);
  EXPECT_EQ(parse_go_duration("-20s")->value, -20000);
  EXPECT_FALSE(parse_go_duration("WenShiqi222").has_value());
  EXPECT_FALSE(parse_go_duration("10").has_value());
}

}  // namespace
}  // namespace colony::scheduler
