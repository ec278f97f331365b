// The CPU/NUMA topology reader on fake sysfs and /proc trees: Koordinator's NodeCPUInfo shape
// (pkg/koordlet/util/cpuinfo_test.go: 2 sockets x 2 cores x 2 threads on 2 NUMA nodes), the
// interleaved sibling numbering where sysfs core_id repeats per socket, a kernel without NUMA,
// the turbo switches, inconsistent trees giving errors that name the file, the cpulist parser,
// and this machine's own /sys and /proc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bridges/node/topology_reader.hpp"
#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::node;
using colony::testing::node_tree;
namespace fs = std::filesystem;

// One CPU as sysfs shows it: core_id repeats per socket.
struct fake_cpu {
  std::int32_t id = 0, core_id = 0, socket = 0, node = 0;
};

struct fake_machine {
  std::vector<fake_cpu> cpus;
  std::map<std::int32_t, std::int64_t> node_mem_kib;  // empty: no devices/system/node at all
  std::int64_t proc_mem_kib = 16384;
  std::string cpuinfo;
  std::optional<std::string> no_turbo, boost;  // intel_pstate/no_turbo, cpufreq/boost
};

std::string comma_list(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (const auto id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

// root/sys and root/proc with the files read_machine_topology reads.
void write_machine(const fs::path& root, const fake_machine& m) {
  const fs::path cpu = root / "sys/devices/system/cpu";
  std::vector<std::int32_t> online;
  for (const auto& c : m.cpus) {
    online.push_back(c.id);
    const fs::path topo = cpu / ("cpu" + std::to_string(c.id)) / "topology";
    node_tree::write(topo / "core_id", std::to_string(c.core_id) + "\n");
    node_tree::write(topo / "physical_package_id", std::to_string(c.socket) + "\n");
  }
  node_tree::write(cpu / "online", comma_list(online) + "\n");
  for (const auto& [node, kib] : m.node_mem_kib) {
    const fs::path dir = root / "sys/devices/system/node" / ("node" + std::to_string(node));
    std::vector<std::int32_t> ids;
    for (const auto& c : m.cpus) {
      if (c.node == node) ids.push_back(c.id);
    }
    node_tree::write(dir / "cpulist", comma_list(ids) + "\n");
    const std::string n = "Node " + std::to_string(node);
    node_tree::write(dir / "meminfo", n + " MemTotal:       " + std::to_string(kib) + " kB\n" + n +
                                          " MemFree:        1000 kB\n" + n +
                                          " MemUsed:        2000 kB\n");
  }
  node_tree::write(root / "proc/meminfo", "MemTotal:       " + std::to_string(m.proc_mem_kib) +
                                              " kB\nMemFree:    1 kB\nMemAvailable:    1 kB\n");
  node_tree::write(root / "proc/cpuinfo", m.cpuinfo);
  if (m.no_turbo) node_tree::write(cpu / "intel_pstate/no_turbo", *m.no_turbo);
  if (m.boost) node_tree::write(cpu / "cpufreq/boost", *m.boost);
}

result<machine_topology> read(const fs::path& root) {
  return read_machine_topology((root / "sys").string(), (root / "proc").string());
}

// Two /proc/cpuinfo records, as on an Intel host (the reader takes the first).
std::string intel_cpuinfo(const std::string& model) {
  std::string s;
  for (int i = 0; i < 2; ++i) {
    s += "processor\t: " + std::to_string(i) +
         "\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: " + model +
         "\nstepping\t: 4\nphysical id\t: 0\ncore id\t\t: " + std::to_string(i) + "\n\n";
  }
  return s;
}

// Koordinator's test machine: CPUs 0-7, siblings (0,1) (2,3) on socket 0 / node 0 and (4,5)
// (6,7) on socket 1 / node 1; sysfs core_id 0,1 on each socket.
fake_machine koordinator_machine() {
  fake_machine m;
  for (std::int32_t id = 0; id < 8; ++id) {
    const std::int32_t socket = id / 4;
    m.cpus.push_back(fake_cpu{id, (id % 4) / 2, socket, socket});
  }
  m.node_mem_kib = {{0, 263432804}, {1, 263432000}};
  m.cpuinfo = intel_cpuinfo("XXX");
  m.no_turbo = "0\n";
  return m;
}

TEST(TopologyReader, KoordinatorTwoSocketsTwoCoresTwoThreads) {
  colony::testing::temp_dir tmp;
  write_machine(tmp.path(), koordinator_machine());
  auto t = read(tmp.path());
  ASSERT_TRUE(t) << t.error().describe();
  machine_topology want;
  // lscpu's CORE: unique machine-wide, so socket 1's sysfs cores 0,1 become 2,3.
  want.cpus = {{0, 0, 0, 0}, {1, 0, 0, 0}, {2, 1, 0, 0}, {3, 1, 0, 0},
               {4, 2, 1, 1}, {5, 2, 1, 1}, {6, 3, 1, 1}, {7, 3, 1, 1}};
  want.numa_nodes = {{0, 269755191296}, {1, 269754368000}};
  want.cpu_model = "XXX";
  want.vendor_id = "GenuineIntel";
  want.hyper_thread_enabled = true;
  want.turbo_enabled = true;
  EXPECT_EQ(*t, want);
}

TEST(TopologyReader, InterleavedSiblingsGetMachineWideCores) {
  // Linux numbers the first thread of every core before the second ones: CPU 0 and 4 are
  // siblings, and sysfs core_id (with a gap, 0 and 4) repeats on socket 1.
  fake_machine m;
  const std::int32_t sysfs_core[] = {0, 4, 0, 4};
  for (std::int32_t id = 0; id < 8; ++id) {
    const std::int32_t socket = (id % 4) / 2;
    m.cpus.push_back(fake_cpu{id, sysfs_core[id % 4], socket, socket});
  }
  m.node_mem_kib = {{0, 1024}, {1, 2048}};
  m.cpuinfo = intel_cpuinfo("Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz");
  colony::testing::temp_dir tmp;
  write_machine(tmp.path(), m);
  auto t = read(tmp.path());
  ASSERT_TRUE(t) << t.error().describe();
  const std::vector<cpu_topology_entry> want = {{0, 0, 0, 0}, {1, 1, 0, 0}, {2, 2, 1, 1},
                                                {3, 3, 1, 1}, {4, 0, 0, 0}, {5, 1, 0, 0},
                                                {6, 2, 1, 1}, {7, 3, 1, 1}};
  EXPECT_EQ(t->cpus, want);
  EXPECT_EQ(t->numa_nodes, (std::vector<numa_node_memory>{{0, 1024 * 1024}, {1, 2048 * 1024}}));
  EXPECT_TRUE(t->hyper_thread_enabled);
  EXPECT_EQ(t->cpu_model, "Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz");
  EXPECT_FALSE(t->turbo_enabled);  // neither turbo file
}

TEST(TopologyReader, NoNumaDirectoryIsOneNodeFromProcMeminfo) {
  // A kernel without NUMA, an ARM host without "model name", one thread per core.
  fake_machine m;
  for (std::int32_t id = 0; id < 4; ++id) m.cpus.push_back(fake_cpu{id, id, 0, 0});
  m.proc_mem_kib = 8 * 1024 * 1024;
  m.cpuinfo = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\n";
  colony::testing::temp_dir tmp;
  write_machine(tmp.path(), m);
  ASSERT_FALSE(fs::exists(tmp.path() / "sys/devices/system/node"));
  auto t = read(tmp.path());
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->cpus, (std::vector<cpu_topology_entry>{
                         {0, 0, 0, 0}, {1, 1, 0, 0}, {2, 2, 0, 0}, {3, 3, 0, 0}}));
  EXPECT_EQ(t->numa_nodes, (std::vector<numa_node_memory>{{0, std::int64_t{8} << 30}}));
  EXPECT_FALSE(t->hyper_thread_enabled);
  EXPECT_EQ(t->cpu_model, "");
  EXPECT_EQ(t->vendor_id, "");
}

TEST(TopologyReader, NodesInNumericOrderWithMemoryOnlyNodesAndSparseOnlineCpus) {
  // node10 sorts before node2 by name; node10 holds memory only (CXL). CPU 2 is offline: it is
  // in neither the online list nor the result, though node 0's cpulist still names it.
  fake_machine m;
  m.cpus = {{0, 0, 0, 0}, {1, 1, 0, 0}, {3, 0, 1, 2}};
  m.node_mem_kib = {{0, 10}, {2, 20}, {10, 30}};
  m.cpuinfo = intel_cpuinfo("XXX");
  colony::testing::temp_dir tmp;
  write_machine(tmp.path(), m);
  node_tree::write(tmp.path() / "sys/devices/system/node/node0/cpulist", "0-2\n");
  auto t = read(tmp.path());
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->cpus, (std::vector<cpu_topology_entry>{{0, 0, 0, 0}, {1, 1, 0, 0}, {3, 2, 1, 2}}));
  EXPECT_EQ(t->numa_nodes,
            (std::vector<numa_node_memory>{{0, 10 * 1024}, {2, 20 * 1024}, {10, 30 * 1024}}));
}

TEST(TopologyReader, TurboFromIntelPstateElseCpufreqBoost) {
  struct row {
    const char* name;
    std::optional<std::string> no_turbo, boost;
    bool want;
  };
  const std::vector<row> rows = {
      {"no_turbo 0", "0\n", std::nullopt, true},
      {"no_turbo 1", "1\n", std::nullopt, false},
      {"intel_pstate wins over boost", "1\n", "1\n", false},
      {"boost 1", std::nullopt, "1\n", true},
      {"boost 0", std::nullopt, "0\n", false},
      {"neither file", std::nullopt, std::nullopt, false},
  };
  for (const auto& r : rows) {
    fake_machine m = koordinator_machine();
    m.no_turbo = r.no_turbo;
    m.boost = r.boost;
    colony::testing::temp_dir tmp;
    write_machine(tmp.path(), m);
    auto t = read(tmp.path());
    ASSERT_TRUE(t) << r.name << ": " << t.error().describe();
    EXPECT_EQ(t->turbo_enabled, r.want) << r.name;
  }
}

TEST(TopologyReader, HyperThreadingOffWithOneCpuPerCore) {
  // Same sysfs core_id on two sockets is two cores, not one core with two threads.
  fake_machine m = koordinator_machine();
  m.cpus = {{0, 0, 0, 0}, {1, 1, 0, 0}, {2, 0, 1, 1}, {3, 1, 1, 1}};
  colony::testing::temp_dir tmp;
  write_machine(tmp.path(), m);
  auto t = read(tmp.path());
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_FALSE(t->hyper_thread_enabled);
  EXPECT_EQ(t->cpus, (std::vector<cpu_topology_entry>{
                         {0, 0, 0, 0}, {1, 1, 0, 0}, {2, 2, 1, 1}, {3, 3, 1, 1}}));
}

TEST(TopologyReader, InconsistentTreesNameFileAndField) {
  struct row {
    const char* name;
    std::function<void(const fs::path& sys, const fs::path& proc)> damage;
    std::string where;  // relative to the temp dir
    std::string message;
    errc code;
  };
  const std::string cpu = "sys/devices/system/cpu/";
  const std::string node = "sys/devices/system/node/";
  const auto put = [](const fs::path& p, const std::string& s) { node_tree::write(p, s); };
  const std::vector<row> rows = {
      {"online missing", [&](auto& s, auto&) { fs::remove(s / "devices/system/cpu/online"); },
       cpu + "online", "cannot open", errc::not_found},
      {"online bad token", [&](auto& s, auto&) { put(s / "devices/system/cpu/online", "0-a\n"); },
       cpu + "online", "bad cpulist token '0-a'", errc::invalid_input},
      {"online empty", [&](auto& s, auto&) { put(s / "devices/system/cpu/online", "\n"); },
       cpu + "online", "no online CPUs", errc::invalid_input},
      {"online CPU without topology",
       [&](auto& s, auto&) { put(s / "devices/system/cpu/online", "0-8\n"); },
       cpu + "cpu8/topology/core_id", "online CPU 8", errc::not_found},
      {"socket file missing",
       [&](auto& s, auto&) {
         fs::remove(s / "devices/system/cpu/cpu3/topology/physical_package_id");
       },
       cpu + "cpu3/topology/physical_package_id", "online CPU 3", errc::not_found},
      {"core_id not a number",
       [&](auto& s, auto&) { put(s / "devices/system/cpu/cpu5/topology/core_id", "x\n"); },
       cpu + "cpu5/topology/core_id", "field core_id", errc::invalid_input},
      {"socket negative",
       [&](auto& s, auto&) {
         put(s / "devices/system/cpu/cpu0/topology/physical_package_id", "-1\n");
       },
       cpu + "cpu0/topology/physical_package_id", "field physical_package_id", errc::invalid_input},
      {"CPU in two nodes",
       [&](auto& s, auto&) { put(s / "devices/system/node/node1/cpulist", "3-7\n"); },
       node + "node1/cpulist", "cpu 3: also in node0", errc::invalid_input},
      {"online CPU in no node",
       [&](auto& s, auto&) { put(s / "devices/system/node/node1/cpulist", "4-6\n"); },
       cpu + "online", "field cpu7: online but in no", errc::invalid_input},
      {"node cpulist bad token",
       [&](auto& s, auto&) { put(s / "devices/system/node/node1/cpulist", "4-5,z\n"); },
       node + "node1/cpulist", "bad cpulist token 'z'", errc::invalid_input},
      {"node cpulist missing",
       [&](auto& s, auto&) { fs::remove(s / "devices/system/node/node0/cpulist"); },
       node + "node0/cpulist", "cannot open", errc::not_found},
      {"node meminfo without MemTotal",
       [&](auto& s, auto&) {
         put(s / "devices/system/node/node0/meminfo", "Node 0 MemFree: 1 kB\n");
       },
       node + "node0/meminfo", "field Node 0 MemTotal: missing", errc::invalid_input},
      {"node meminfo not a number",
       [&](auto& s, auto&) {
         put(s / "devices/system/node/node1/meminfo", "Node 1 MemTotal: abc kB\n");
       },
       node + "node1/meminfo", "field Node 1 MemTotal:", errc::invalid_input},
      {"proc meminfo without MemTotal (no NUMA)",
       [&](auto& s, auto& p) {
         fs::remove_all(s / "devices/system/node");
         put(p / "meminfo", "MemFree: 1 kB\n");
       },
       "proc/meminfo", "field MemTotal: missing", errc::invalid_input},
      {"no_turbo not a number",
       [&](auto& s, auto&) { put(s / "devices/system/cpu/intel_pstate/no_turbo", "y\n"); },
       cpu + "intel_pstate/no_turbo", "field no_turbo", errc::invalid_input},
      {"boost not a number",
       [&](auto& s, auto&) {
         fs::remove(s / "devices/system/cpu/intel_pstate/no_turbo");
         put(s / "devices/system/cpu/cpufreq/boost", "on\n");
       },
       cpu + "cpufreq/boost", "field boost", errc::invalid_input},
  };
  for (const auto& r : rows) {
    colony::testing::temp_dir tmp;
    write_machine(tmp.path(), koordinator_machine());
    r.damage(tmp.path() / "sys", tmp.path() / "proc");
    auto t = read(tmp.path());
    ASSERT_FALSE(t) << r.name;
    EXPECT_EQ(t.error().code, r.code) << r.name << ": " << t.error().describe();
    EXPECT_EQ(t.error().where, (tmp.path() / r.where).string()) << r.name;
    EXPECT_NE(t.error().message.find(r.message), std::string::npos)
        << r.name << ": " << t.error().message << " / want " << r.message;
  }
}

// A proc root without cpuinfo (a container's partial /proc, a fake tree): the topology stands,
// the CPU basic info is unknown.
TEST(TopologyReader, AMissingCpuinfoLeavesTheBasicInfoEmpty) {
  colony::testing::temp_dir tmp;
  write_machine(tmp.path(), koordinator_machine());
  fs::remove(tmp.path() / "proc/cpuinfo");
  auto t = read(tmp.path());
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->cpus.size(), 8u);
  EXPECT_EQ(t->numa_nodes.size(), 2u);
  EXPECT_EQ(t->cpu_model, "");
  EXPECT_EQ(t->vendor_id, "");
}

TEST(CpuList, ParsesLinuxCpuLists) {
  struct row {
    std::string text;
    std::optional<std::vector<std::int32_t>> want;  // nullopt: an error
    std::string token;                              // the bad token the error names
  };
  const std::vector<row> rows = {
      {"0", std::vector<std::int32_t>{0}, ""},
      {"0-3", std::vector<std::int32_t>{0, 1, 2, 3}, ""},
      {"0-2,5,7-8", std::vector<std::int32_t>{0, 1, 2, 5, 7, 8}, ""},
      {"", std::vector<std::int32_t>{}, ""},
      {"0-1,8\n", std::vector<std::int32_t>{0, 1, 8}, ""},
      {"\n", std::vector<std::int32_t>{}, ""},
      {"3-1", std::nullopt, "'3-1'"},
      {"a", std::nullopt, "'a'"},
      {"0,,2", std::nullopt, "''"},
      {"0-", std::nullopt, "'0-'"},
      {"-1", std::nullopt, "'-1'"},
      {"0-7:2", std::nullopt, "'0-7:2'"},
      {"0-99999999", std::nullopt, "'0-99999999'"},
  };
  const std::string path = "/sys/devices/system/cpu/online";
  for (const auto& r : rows) {
    auto got = parse_cpu_list(r.text, path);
    if (r.want) {
      ASSERT_TRUE(got) << "'" << r.text << "': " << got.error().describe();
      EXPECT_EQ(*got, *r.want) << "'" << r.text << "'";
      continue;
    }
    ASSERT_FALSE(got) << "'" << r.text << "'";
    EXPECT_EQ(got.error().code, errc::invalid_input) << r.text;
    EXPECT_EQ(got.error().where, path) << r.text;
    EXPECT_NE(got.error().message.find("bad cpulist token " + r.token), std::string::npos)
        << got.error().message << " / want " << r.token;
  }
}

TEST(TopologyReader, ReadsThisMachine) {
  auto t = read_machine_topology("/sys", "/proc");
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(static_cast<long>(t->cpus.size()), ::sysconf(_SC_NPROCESSORS_ONLN));
  ASSERT_FALSE(t->numa_nodes.empty());
  bool memory = false;
  for (const auto& n : t->numa_nodes) memory = memory || n.memory_bytes > 0;
  EXPECT_TRUE(memory);
  for (std::size_t i = 1; i < t->cpus.size(); ++i) EXPECT_LT(t->cpus[i - 1].id, t->cpus[i].id);
  for (std::size_t i = 1; i < t->numa_nodes.size(); ++i) {
    EXPECT_LT(t->numa_nodes[i - 1].id, t->numa_nodes[i].id);
  }
}

}  // namespace
