// The collector over fake trees: node CPU from /proc/stat tick deltas and memory
// MemTotal - MemAvailable (node_resource_collector.go), pod and container CPU from usage deltas
// and memory from MemoryStatRaw.Usage() (pod_resource_collector.go), and the samples feeding
// actors/koordlet/node_metric's window and builder. Plus /proc of this machine.
#include "bridges/node/collector.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::node;
using colony::testing::fake_cgroup;
using colony::testing::node_tree;

fake_cgroup cg(std::int64_t cpu_ns, std::int64_t anon, std::int64_t throttled = 0) {
  fake_cgroup c;
  c.cpu_ns = cpu_ns;
  c.active_anon = anon;
  c.usage_bytes = anon + 10 * mib;
  c.inactive_file = 4 * mib;
  c.nr_periods = throttled * 2;
  c.nr_throttled = throttled;
  c.throttled_ns = throttled * 1000;
  return c;
}

struct collector_case {
  std::string name;
  koordlet::cgroup_version v;
  bool systemd;
};

class Collector : public ::testing::TestWithParam<collector_case> {};

TEST_P(Collector, UsageBetweenTwoSnapshots) {
  const auto& p = GetParam();
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), p.v);
  const std::string g = p.systemd ? "kubepods.slice/kubepods-podg_1.slice" : "kubepods/podg-1";
  const std::string b = p.systemd ? "kubepods.slice/kubepods-besteffort.slice/"
                                    "kubepods-besteffort-podb_2.slice"
                                  : "kubepods/besteffort/podb-2";
  const std::string late = p.systemd ? "kubepods.slice/kubepods-burstable.slice/"
                                       "kubepods-burstable-podl_3.slice"
                                     : "kubepods/burstable/podl-3";
  const std::string gc = g + (p.systemd ? "/cri-containerd-main.scope" : "/main");
  const std::string bc = b + (p.systemd ? "/cri-containerd-work.scope" : "/work");

  // t = 10 s: 4 CPUs, 1000 ticks used; 16 GiB, 12 GiB available.
  tree.write_proc(4, 1000, 50000, 16 * 1024 * 1024, 12 * 1024 * 1024);
  tree.write_cgroup(g, cg(1'000'000'000, 100 * mib));
  tree.write_cgroup(gc, cg(900'000'000, 90 * mib));
  tree.write_cgroup(b, cg(5'000'000'000, 200 * mib, 10));
  tree.write_cgroup(bc, cg(5'000'000'000, 200 * mib, 10));
  source_config cfg;
  cfg.cgroup_root = tree.cgroup_root();
  cfg.proc_root = tree.proc_root();
  cfg.read_pressure = true;
  auto src = node_source::open(cfg);
  ASSERT_TRUE(src) << src.error().describe();
  auto s0 = src->snapshot(event_time{10'000});
  ASSERT_TRUE(s0) << s0.error().describe();
  ASSERT_EQ(s0->pods.size(), 2u);
  EXPECT_TRUE(s0->skipped.empty());

  // t = 12 s: 300 ticks more (1.5 cores at USER_HZ 100); pod g used 1 s of CPU (0.5 cores), pod
  // b 3 s (1.5 cores) and was throttled 5 more periods; pod l appears.
  tree.write_proc(4, 1300, 50500, 16 * 1024 * 1024, 12 * 1024 * 1024);
  tree.write_cgroup(g, cg(2'000'000'000, 120 * mib));
  tree.write_cgroup(gc, cg(1'900'000'000, 110 * mib));
  tree.write_cgroup(b, cg(8'000'000'000, 210 * mib, 15));
  tree.write_cgroup(bc, cg(8'000'000'000, 210 * mib, 15));
  tree.write_cgroup(late, cg(7'000'000'000, 1 * mib));
  auto s1 = src->snapshot(event_time{12'000});
  ASSERT_TRUE(s1) << s1.error().describe();
  ASSERT_EQ(s1->pods.size(), 3u);
  EXPECT_EQ(s1->driver, p.systemd ? cgroup_driver::systemd : cgroup_driver::cgroupfs);

  auto u = usage_between(*s0, *s1);
  ASSERT_TRUE(u) << u.error().describe();
  EXPECT_EQ(u->time, event_time{12'000});
  EXPECT_DOUBLE_EQ(u->cpu_cores, 1.5);
  EXPECT_EQ(u->cpu, milli_cpu{1500});
  EXPECT_EQ(u->memory, bytes{4 * gib});
  EXPECT_EQ(u->cpu_capacity, milli_cpu{4000});
  EXPECT_EQ(u->memory_capacity, bytes{16 * gib});
  ASSERT_EQ(u->pods.size(), 2u);  // the late pod has one point only
  const auto& pb = u->pods[0];
  const auto& pg = u->pods[1];
  EXPECT_EQ(pb.uid, "b-2");
  EXPECT_EQ(pb.qos, kube_qos_class::best_effort);
  EXPECT_EQ(pb.cpu, milli_cpu{1500});
  EXPECT_EQ(pb.memory, bytes{210 * mib});
  EXPECT_EQ(pb.working_set, bytes{216 * mib});
  EXPECT_EQ(pb.nr_throttled, 5);
  EXPECT_EQ(pb.throttled_ns, 5000);
  EXPECT_EQ(pg.uid, "g-1");
  EXPECT_EQ(pg.qos, kube_qos_class::guaranteed);
  EXPECT_EQ(pg.cpu, milli_cpu{500});
  EXPECT_EQ(pg.memory, bytes{120 * mib});
  ASSERT_EQ(pg.containers.size(), 1u);
  EXPECT_EQ(pg.containers[0].id, "main");
  EXPECT_EQ(pg.containers[0].cpu, milli_cpu{500});
  EXPECT_EQ(pg.containers[0].memory, bytes{110 * mib});

  // Feed the NodeMetric window and build the status at t = 12 s.
  koordlet::sample_window w;
  add_to_window(w, *u);
  EXPECT_EQ(w.node().size(), 1u);
  EXPECT_EQ(w.pod("g-1").size(), 1u);
  const auto pods = pods_by_uid(*u);
  auto st = koordlet::build_node_metric_status(w, pods, {}, {}, u->time);
  ASSERT_TRUE(st.node_metric.node_usage.has_value());
  EXPECT_EQ(st.node_metric.node_usage->cpu_milli, 1500);
  EXPECT_EQ(st.node_metric.node_usage->memory_bytes, 4 * gib);
  ASSERT_TRUE(st.node_metric.system_usage.has_value());
  EXPECT_EQ(st.node_metric.system_usage->cpu_milli, 0);  // max(1.5 - 0.5 - 1.5, 0)
  EXPECT_EQ(st.node_metric.system_usage->memory_bytes, 4 * gib - 330 * mib);
  ASSERT_EQ(st.pods_metric.size(), 2u);
  EXPECT_EQ(st.pods_metric[0].name, "b-2");
  EXPECT_EQ(st.pods_metric[0].ns, "");
  EXPECT_EQ(st.pods_metric[0].qos, qos_class::be);  // BestEffort -> BE by default
  EXPECT_EQ(st.pods_metric[1].pod_usage.cpu_milli, 500);
  EXPECT_EQ(st.pods_metric[1].qos, qos_class::lsr);  // Guaranteed -> LSR by default
}

// cpuburst's cfs-quota burst inputs, without --pressure: every cgroup's cfs quota (v1
// cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max) and, for a cgroup that has a quota, its
// cpu.stat nr_periods / nr_throttled deltas over the interval. A cgroup without a quota has its
// throttling not read (-1); a tree without the quota files has no quota (-1).
TEST_P(Collector, CfsQuotaAndThrottlingOfPodsAndContainers) {
  const auto& p = GetParam();
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), p.v);
  const std::string pod = p.systemd ? "kubepods.slice/kubepods-burstable.slice/"
                                      "kubepods-burstable-podq_1.slice"
                                    : "kubepods/burstable/podq-1";
  const std::string be = p.systemd ? "kubepods.slice/kubepods-besteffort.slice/"
                                     "kubepods-besteffort-podb_2.slice"
                                   : "kubepods/besteffort/podb-2";
  auto ctr = [&](const std::string& dir, const std::string& id) {
    return dir + (p.systemd ? "/cri-containerd-" + id + ".scope" : "/" + id);
  };
  auto write = [&](std::int64_t tick) {
    tree.write_proc(4, 1000 + 100 * tick, 50000, 16 * 1024 * 1024, 12 * 1024 * 1024);
    fake_cgroup c = cg(tick * 1'000'000'000, 10 * mib);
    c.nr_periods = 20 + 30 * tick;  // 30 periods a tick, 10 of them throttled
    c.nr_throttled = 3 + 10 * tick;
    c.cfs_quota_us = 150000;
    tree.write_cgroup(pod, c);
    c.cfs_quota_us = 100000;
    tree.write_cgroup(ctr(pod, "limited"), c);
    c.cfs_quota_us = -1;  // a container without a CPU limit (the sandbox, a sidecar)
    tree.write_cgroup(ctr(pod, "unlimited"), c);
    fake_cgroup b = cg(tick * 1'000'000'000, 10 * mib);  // no quota files at all
    tree.write_cgroup(be, b);
    tree.write_cgroup(ctr(be, "work"), b);
  };
  write(0);
  source_config cfg;
  cfg.cgroup_root = tree.cgroup_root();
  cfg.proc_root = tree.proc_root();
  auto src = node_source::open(cfg);
  ASSERT_TRUE(src) << src.error().describe();
  auto s0 = src->snapshot(event_time{10'000});
  ASSERT_TRUE(s0) << s0.error().describe();
  write(1);
  auto s1 = src->snapshot(event_time{11'000});
  ASSERT_TRUE(s1) << s1.error().describe();
  EXPECT_TRUE(s1->skipped.empty());
  auto u = usage_between(*s0, *s1);
  ASSERT_TRUE(u) << u.error().describe();
  ASSERT_EQ(u->pods.size(), 2u);
  const auto& pb = u->pods[0];
  const auto& pq = u->pods[1];
  EXPECT_EQ(pq.uid, "q-1");
  EXPECT_EQ(pq.cfs_quota_us, 150000);
  EXPECT_EQ(pq.cfs_period_us, 100000);
  EXPECT_EQ(pq.cpu_limit_milli, std::optional<std::int64_t>{1500});
  EXPECT_EQ(pq.nr_periods, 30);
  EXPECT_EQ(pq.nr_throttled, 10);
  ASSERT_EQ(pq.containers.size(), 2u);
  EXPECT_EQ(pq.containers[0].id, "limited");
  EXPECT_EQ(pq.containers[0].cfs_quota_us, 100000);
  EXPECT_EQ(pq.containers[0].cfs_period_us, 100000);
  EXPECT_EQ(pq.containers[0].nr_periods, 30);
  EXPECT_EQ(pq.containers[0].nr_throttled, 10);
  EXPECT_EQ(pq.containers[0].cpu, milli_cpu{1000});
  EXPECT_EQ(pq.containers[1].id, "unlimited");
  EXPECT_EQ(pq.containers[1].cfs_quota_us, -1);
  // v1 reads no period without a quota; v2's cpu.max names it ("max 100000").
  EXPECT_EQ(pq.containers[1].cfs_period_us, p.v == koordlet::cgroup_version::v2 ? 100000 : 0);
  EXPECT_EQ(pq.containers[1].nr_periods, -1);
  EXPECT_EQ(pq.containers[1].nr_throttled, -1);
  EXPECT_EQ(pb.uid, "b-2");
  EXPECT_EQ(pb.cfs_quota_us, -1);
  EXPECT_EQ(pb.cfs_period_us, 0);
  EXPECT_EQ(pb.nr_periods, -1);
  EXPECT_FALSE(pb.cpu_limit_milli.has_value());
  ASSERT_EQ(pb.containers.size(), 1u);
  EXPECT_EQ(pb.containers[0].cfs_quota_us, -1);
  EXPECT_EQ(pb.containers[0].nr_periods, -1);

  // With the previous snapshot lent, its periods are taken on v1 (the quota is read again): a
  // changed period file is not seen, a changed quota is.
  if (p.v == koordlet::cgroup_version::v1) {
    fake_cgroup c = cg(1'500'000'000, 10 * mib);
    c.nr_periods = 60;
    c.nr_throttled = 20;
    c.cfs_quota_us = 120000;
    c.cfs_period_us = 50000;
    tree.write_cgroup(ctr(pod, "limited"), c);
    auto lent = src->snapshot(event_time{11'500}, {}, &*s1);
    ASSERT_TRUE(lent) << lent.error().describe();
    const auto& lc = lent->pods[1].containers[0];
    ASSERT_TRUE(lc.cfs);
    EXPECT_EQ(lc.cfs->quota_us, 120000);
    EXPECT_EQ(lc.cfs->period_us, 100000);
    auto fresh = src->snapshot(event_time{11'600});
    ASSERT_TRUE(fresh) << fresh.error().describe();
    EXPECT_EQ(fresh->pods[1].containers[0].cfs->period_us, 50000);
  }

  // A container's counter going backwards (a recreated cgroup) gives no throttling delta.
  fake_cgroup again = cg(3'000'000'000, 10 * mib);
  again.nr_periods = 1;
  again.nr_throttled = 0;
  again.cfs_quota_us = 100000;
  tree.write_cgroup(ctr(pod, "limited"), again);
  auto s2 = src->snapshot(event_time{12'000});
  ASSERT_TRUE(s2) << s2.error().describe();
  auto u2 = usage_between(*s1, *s2);
  ASSERT_TRUE(u2) << u2.error().describe();
  ASSERT_EQ(u2->pods[1].containers.size(), 2u);
  EXPECT_EQ(u2->pods[1].containers[0].nr_periods, -1);
  EXPECT_EQ(u2->pods[1].containers[0].cfs_quota_us, 100000);

  // Without container_bandwidth (no cfs-quota burst wanted): the pod's quota is still read (its
  // CPU limit), its throttling and every container's quota and throttling are not; usage is.
  auto q0 = src->snapshot(event_time{13'000}, {}, nullptr, false);
  ASSERT_TRUE(q0) << q0.error().describe();
  write(4);  // "limited" had 3 s of CPU (above): 1 s more
  auto q1 = src->snapshot(event_time{14'000}, {}, &*q0, false);
  ASSERT_TRUE(q1) << q1.error().describe();
  EXPECT_TRUE(q1->skipped.empty());
  ASSERT_EQ(q1->pods.size(), 2u);
  ASSERT_TRUE(q1->pods[1].cfs);
  EXPECT_EQ(q1->pods[1].cfs->quota_us, 150000);
  EXPECT_FALSE(q1->pods[1].sample.throttling.has_value());
  for (const auto& c : q1->pods[1].containers) {
    EXPECT_FALSE(c.cfs.has_value()) << c.id;
    EXPECT_FALSE(c.sample.throttling.has_value()) << c.id;
  }
  auto uq = usage_between(*q0, *q1);
  ASSERT_TRUE(uq) << uq.error().describe();
  const auto& nq = uq->pods[1];
  EXPECT_EQ(nq.cpu_limit_milli, std::optional<std::int64_t>{1500});
  EXPECT_EQ(nq.nr_periods, -1);
  ASSERT_EQ(nq.containers.size(), 2u);
  EXPECT_EQ(nq.containers[0].cfs_quota_us, -1);
  EXPECT_EQ(nq.containers[0].nr_periods, -1);
  EXPECT_GT(nq.containers[0].cpu.value, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Collector,
    ::testing::Values(collector_case{"CgroupfsV1", koordlet::cgroup_version::v1, false},
                      collector_case{"SystemdV1", koordlet::cgroup_version::v1, true},
                      collector_case{"CgroupfsV2", koordlet::cgroup_version::v2, false},
                      collector_case{"SystemdV2", koordlet::cgroup_version::v2, true}),
    [](const ::testing::TestParamInfo<collector_case>& i) { return i.param.name; });

TEST(Collector, BadCgroupIsSkippedAndNamedOthersKept) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), koordlet::cgroup_version::v1);
  tree.write_proc(2, 10, 10, 1024, 512);
  tree.write_cgroup("kubepods/poda", cg(1, 1));
  tree.write_cgroup("kubepods/podb", cg(1, 1));
  node_tree::write(tree.file_path("kubepods/podb", "memory.stat"), "total_inactive_file oops\n");
  source_config cfg{tree.cgroup_root(), tree.proc_root()};
  auto src = node_source::open(cfg);
  ASSERT_TRUE(src);
  auto s = src->snapshot(event_time{1});
  ASSERT_TRUE(s) << s.error().describe();
  ASSERT_EQ(s->pods.size(), 1u);
  EXPECT_EQ(s->pods[0].uid, "a");
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_EQ(s->skipped[0].where, tree.file_path("kubepods/podb", "memory.stat").string());
  EXPECT_NE(s->skipped[0].message.find("total_inactive_file"), std::string::npos);
}

TEST(Collector, NoKubepodsGivesNodeOnlyAndSaysWhy) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), koordlet::cgroup_version::v2);
  tree.write_proc(2, 10, 10, 1024, 512);
  auto src = node_source::open({tree.cgroup_root(), tree.proc_root()});
  ASSERT_TRUE(src);
  auto s = src->snapshot(event_time{1});
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_TRUE(s->pods.empty());
  EXPECT_FALSE(s->driver.has_value());
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_EQ(s->skipped[0].code, errc::not_found);
}

TEST(Collector, KubeParentDirIsHonoured) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), koordlet::cgroup_version::v1);
  tree.write_proc(2, 10, 10, 1024, 512);
  tree.write_cgroup("custom/kubepods/burstable/podq", cg(1, 1));
  tree.write_cgroup("custom/kubepods/burstable/podq/c", cg(1, 1));
  source_config cfg{tree.cgroup_root(), tree.proc_root()};
  cfg.kube_parent_dir = "custom";
  auto src = node_source::open(cfg);
  ASSERT_TRUE(src);
  auto s = src->snapshot(event_time{1});
  ASSERT_TRUE(s) << s.error().describe();
  for (const auto& e : s->skipped) ADD_FAILURE() << e.describe();
  ASSERT_EQ(s->pods.size(), 1u);
  EXPECT_EQ(s->pods[0].qos, kube_qos_class::burstable);
  ASSERT_EQ(s->pods[0].containers.size(), 1u);
}

TEST(Collector, RejectsOutOfOrderSnapshotsAndRecreatedCgroups) {
  node_snapshot a, b;
  a.time = event_time{2000};
  b.time = event_time{2000};
  EXPECT_EQ(usage_between(a, b).error().code, errc::invalid_input);
  b.time = event_time{3000};
  a.cpu.used = 10;
  b.cpu.used = 5;
  auto back = usage_between(a, b);
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error().where, "/proc/stat");
  b.cpu.used = 10;
  // A pod whose counter went backwards was recreated: left out, not a negative usage.
  a.pods.push_back({"p", kube_qos_class::burstable, {}, {}});
  a.pods[0].sample.cpu_usage_ns = 100;
  b.pods = a.pods;
  b.pods[0].sample.cpu_usage_ns = 50;
  auto u = usage_between(a, b);
  ASSERT_TRUE(u) << u.error().describe();
  EXPECT_TRUE(u->pods.empty());
}

// This machine's /proc: node CPU and memory are sane (0 < used <= capacity). A busy loop on the
// test thread during the interval makes CPU use > 0 certain.
TEST(RealProc, NodeUsageIsWithinCapacity) {
  auto stat0 = read_proc_stat("/proc");
  ASSERT_TRUE(stat0) << stat0.error().describe();
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t spin = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300)) {
    spin = spin + 1;
    asm volatile("" : "+r"(spin));  // keep the loop
  }
  auto stat1 = read_proc_stat("/proc");
  ASSERT_TRUE(stat1) << stat1.error().describe();
  auto mem = read_meminfo("/proc");
  ASSERT_TRUE(mem) << mem.error().describe();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  node_snapshot a, b;
  a.time = event_time{0};
  b.time = event_time{ms};
  a.cpu = *stat0;
  b.cpu = *stat1;
  a.memory = b.memory = *mem;
  auto u = usage_between(a, b);
  ASSERT_TRUE(u) << u.error().describe();
  std::printf("this node: %.3f of %d cores, %lld of %lld MiB used\n", u->cpu_cores, stat1->cpus,
              static_cast<long long>(u->memory.value / mib),
              static_cast<long long>(u->memory_capacity.value / mib));
  EXPECT_GT(u->cpu_cores, 0.0);
  // Ticks are sampled at 10 ms; allow one tick per CPU of rounding over the interval.
  EXPECT_LE(u->cpu_cores, stat1->cpus * (1.0 + 0.01 * 1000.0 / static_cast<double>(ms)));
  EXPECT_GT(u->memory.value, 0);
  EXPECT_LE(u->memory, u->memory_capacity);
  EXPECT_GT(stat1->cpus, 0);
}

}  // namespace
