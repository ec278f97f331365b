// Joint GPU + RDMA allocation, the Device object parser and the device NUMA hints. Golden cases
// from Koordinator's pkg/scheduler/plugins/deviceshare/{device_allocator_test.go
// (TestAutopilotAllocator, TestAutopilotAllocatorWithExclusivePolicyAndRequiredScope),
// topology_hint_test.go (TestPlugin_GetPodTopologyHints, TestPlugin_Allocate,
// Test_generateDesignatedHints)}, each row named after its Go case; parser and annotation errors;
// a randomized invariant test.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/scheduler/device/device_topology.hpp"
#include "actors/scheduler/device/joint_allocation.hpp"

namespace colony::scheduler::device {
namespace {

using json = nlohmann::json;

// 83201216Ki, the GPU memory of the Go tests' Device objects.
constexpr std::int64_t gpu_mem = 83201216LL * 1024;

// One device of a fake Device object.
struct fake {
  const char* type;
  int minor;
  int socket;
  int node;  // -2: no topology
  const char* pcie;
  int vfs = 0;  // VF count; bus IDs from vf_bus(minor, k)
  const char* labels_type = nullptr;
  bool healthy = true;
};
using vf_namer = std::function<std::string(int minor, int k)>;

json device_cr(const std::vector<fake>& devs, const vf_namer& vf_bus) {
  json d = {{"metadata", {{"name", "test-node-1"}}}, {"spec", {{"devices", json::array()}}}};
  for (const auto& f : devs) {
    json x = {{"type", f.type}, {"minor", f.minor}, {"health", f.healthy}};
    if (std::string_view(f.type) == "gpu")
      x["resources"] = {{"koordinator.sh/gpu-core", "100"},
                        {"koordinator.sh/gpu-memory", "83201216Ki"},
                        {"koordinator.sh/gpu-memory-ratio", "100"}};
    else
      x["resources"] = {{"koordinator.sh/rdma", "100"}};
    if (f.labels_type != nullptr) x["labels"] = {{"type", f.labels_type}};
    if (f.node != -2)
      x["topology"] = {{"socketID", f.socket}, {"nodeID", f.node}, {"pcieID", f.pcie}};
    if (f.vfs > 0) {
      json vfs = json::array();
      for (int k = 0; k < f.vfs; ++k) vfs.push_back({{"minor", k}, {"busID", vf_bus(f.minor, k)}});
      x["vfGroups"] = json::array({{{"labels", {{"type", "general"}}}, {"vfs", vfs}}});
    }
    d["spec"]["devices"].push_back(x);
  }
  return d;
}

// fakeDeviceCR: 4 NICs (minors 1-4, PCIe 0-3) and 8 GPUs (2 per PCIe switch), PCIe 0-1 on NUMA
// node 0 and 2-3 on NUMA node 1, 30 VFs per NIC named 0000:<bus>:<dd>.<f> from function 2 on.
node_devices fake_device_cr() {
  static const char* bus[] = {"", "1f", "90", "51", "b9"};
  auto namer = [](int minor, int k) {
    char b[32];
    std::snprintf(b, sizeof b, "0000:%s:%02x.%x", bus[minor], (k + 2) / 8, (k + 2) % 8);
    return std::string(b);
  };
  std::vector<fake> devs;
  for (int m = 1; m <= 4; ++m)
    devs.push_back({"rdma", m, (m - 1) / 2, (m - 1) / 2, nullptr, 30, "fakeW"});
  static const char* pcie[] = {"0", "1", "2", "3"};
  for (auto& d : devs) d.pcie = pcie[d.minor - 1];
  for (int m = 0; m < 8; ++m) devs.push_back({"gpu", m, m / 4, m / 4, pcie[m / 2]});
  auto r = parse_device(device_cr(devs, namer));
  EXPECT_TRUE(r) << r.error().describe();
  return *r;
}

// The device objects of the later Go cases: VFs named 0000:<20+k>:00.<hex>.
vf_namer hex_namer(int base_bus, int domain_split = 100) {
  return [=](int minor, int k) {
    char b[32];
    const int dom = minor >= domain_split ? 1 : 0;
    const int bus = base_bus + (minor >= domain_split ? minor - domain_split : minor);
    std::snprintf(b, sizeof b, "%04x:%02x:00.%x", dom, bus, k);
    return std::string(b);
  };
}

std::string joint_annotation(bool same_pcie) {
  return same_pcie ? R"({"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"})"
                   : R"({"deviceTypes":["gpu","rdma"]})";
}

// setDefaultTestAllocateHints with the options the Go tests use.
std::string hints_annotation(const std::string& vf_type, const std::string& strategy,
                             const std::string& exclusive) {
  json rdma = {{"selector", {{"matchLabels", {{"type", "fakeW"}}}}}};
  if (!vf_type.empty())
    rdma["vfSelector"] = {
        {"matchExpressions",
         json::array({{{"key", "type"}, {"operator", "In"}, {"values", {"general", vf_type}}}})}};
  if (!strategy.empty()) rdma["allocateStrategy"] = strategy;
  json h = {{"rdma", rdma}};
  if (!exclusive.empty()) {
    h["rdma"]["exclusivePolicy"] = exclusive;
    h["gpu"] = {{"exclusivePolicy", exclusive}};
  }
  return h.dump();
}

struct want_alloc {
  device_type type;
  int minor;
  std::int64_t rdma = 0;  // rdma per instance (GPUs: whole GPUs)
  std::string vf;         // "" = no VF
};

device_allocations expand(const std::vector<want_alloc>& w) {
  device_allocations out;
  for (const auto& x : w) {
    device_allocation a{x.type, x.minor, {}, std::nullopt};
    if (x.type == device_type::gpu)
      a.resources = {100, gpu_mem, 100, 0, 0};
    else
      a.resources.rdma = x.rdma;
    if (!x.vf.empty()) a.vf = virtual_function{0, x.vf};
    out.push_back(a);
  }
  return out;
}

// Colony compares VFs by bus ID (the VF minor is informational).
void normalize_vf_minors(device_allocations& a) {
  for (auto& x : a)
    if (x.vf) x.vf->minor = 0;
}

node_device_usage usage_of(const device_allocations& assigned) {
  node_device_usage u;
  add_allocations(u, assigned);
  return u;
}

struct autopilot_row {
  const char* name;
  std::function<node_devices()> devices;
  int gpu_wanted = 0;
  int rdma_wanted = 0;
  bool host_network = false;
  std::string exclusive;  // "" or PCIeLevel
  bool same_pcie = false;
  std::vector<want_alloc> assigned;
  std::vector<want_alloc> want;
  bool want_err = false;
  const char* want_reason = nullptr;
};

// The pod of the Go test loop: rdma 1 (or 100 x rdmaWanted), nvidia.com/gpu gpuWanted, the hints
// and the joint annotation it sets.
result<device_allocations> run_autopilot(const autopilot_row& tt,
                                         std::optional<std::uint64_t> numa = {}) {
  const node_devices nd = tt.devices();
  device_request r;
  r.rdma = tt.rdma_wanted > 0 ? 100 * tt.rdma_wanted : 1;
  r.nvidia_gpu = tt.gpu_wanted;
  std::string hints, joint;
  if (tt.host_network) {
    hints = hints_annotation("", "ApplyForAll", "");
    joint = joint_annotation(tt.same_pcie);
  } else if (tt.gpu_wanted > 0) {
    hints = hints_annotation("fakeG", "", tt.exclusive);
    joint = joint_annotation(tt.same_pcie);
  } else {
    hints = hints_annotation("fakeC", "", tt.exclusive);
  }
  auto req = make_device_share_request(r, hints, joint);
  if (!req) return tl::unexpected(req.error());
  allocate_options opts;
  opts.numa_affinity = numa;
  auto a =
      allocate_devices(nd, build_numa_topology(nd), usage_of(expand(tt.assigned)), **req, opts);
  if (a) normalize_vf_minors(*a);
  return a;
}

node_devices no_topology_cr() {
  std::vector<fake> devs;
  for (int m = 1; m <= 4; ++m) devs.push_back({"rdma", m, 0, -2, ""});
  for (int m = 0; m < 8; ++m) devs.push_back({"gpu", m, 0, -2, ""});
  return *parse_device(device_cr(devs, hex_namer(0x20)));
}

// "1 RDMA with 2 GPUs Per PCIE, 2 NUMA Nodes": fakeDeviceCR's layout, VFs 0000:2<k>:00.<hex>;
// with `second_nics`, NICs 5-8 on PCIe 0-3 again (VFs in domain 0001).
node_devices two_numa_cr(bool second_nics) {
  std::vector<fake> devs;
  static const char* pcie[] = {"0", "1", "2", "3"};
  for (int m = 1; m <= 4; ++m)
    devs.push_back({"rdma", m, (m - 1) / 2, (m - 1) / 2, pcie[m - 1], 30, "fakeW"});
  if (second_nics)
    for (int m = 5; m <= 8; ++m)
      devs.push_back({"rdma", m, (m - 5) / 2, (m - 5) / 2, pcie[m - 5], 30, "fakeW"});
  for (int m = 0; m < 8; ++m) devs.push_back({"gpu", m, m / 4, m / 4, pcie[m / 2]});
  // NIC m has bus 0x20 + (m - 1) (m <= 4) or domain 1, bus 0x20 + (m - 5).
  return *parse_device(device_cr(devs, [](int minor, int k) {
    char b[32];
    const int dom = minor >= 5 ? 1 : 0;
    const int bus = 0x20 + (minor >= 5 ? minor - 5 : minor - 1);
    std::snprintf(b, sizeof b, "%04x:%02x:00.%x", dom, bus, k);
    return std::string(b);
  }));
}

// One NUMA node, 4 PCIe switches; `gpus_per_pcie` GPUs each; NICs given as PCIe ids, one VF each
// (VF bus 0000:<20+minor>:00.0), or no VFs.
node_devices one_numa_cr(int gpus_per_pcie, std::vector<const char*> nic_pcie, int first_nic_minor,
                         int vfs) {
  std::vector<fake> devs;
  for (std::size_t i = 0; i < nic_pcie.size(); ++i)
    devs.push_back(
        {"rdma", first_nic_minor + static_cast<int>(i), 0, 0, nic_pcie[i], vfs, "fakeW"});
  static const char* pcie[] = {"0", "1", "2", "3"};
  for (int m = 0; m < 4 * gpus_per_pcie; ++m)
    devs.push_back({"gpu", m, 0, 0, pcie[m / gpus_per_pcie]});
  const int base = first_nic_minor;
  return *parse_device(device_cr(devs, [base](int minor, int) {
    char b[32];
    std::snprintf(b, sizeof b, "0000:%02x:00.0", 0x20 + minor - base);
    return std::string(b);
  }));
}

using T = device_type;
const auto G = T::gpu;
const auto R = T::rdma;

std::string vf1f(int k) {  // fakeDeviceCR's VF names
  char b[32];
  std::snprintf(b, sizeof b, "%02x.%x", (k + 2) / 8, (k + 2) % 8);
  return b;
}

void check_rows(const std::vector<autopilot_row>& rows) {
  for (const auto& tt : rows) {
    SCOPED_TRACE(tt.name);
    auto got = run_autopilot(tt);
    ASSERT_EQ(!got, tt.want_err) << (got ? "succeeded" : got.error().describe());
    if (!got) {
      if (tt.want_reason != nullptr) {
        EXPECT_EQ(got.error().message, tt.want_reason);
      }
      continue;
    }
    EXPECT_EQ(*got, expand(tt.want));
  }
}

std::vector<want_alloc> gpus(std::initializer_list<int> m) {
  std::vector<want_alloc> v;
  for (int x : m) v.push_back({G, x});
  return v;
}
std::vector<want_alloc> operator+(std::vector<want_alloc> a, const std::vector<want_alloc>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(DeviceJointAllocation, TestAutopilotAllocator) {
  const auto cr = [] { return fake_device_cr(); };
  const std::string v1 = "0000:1f:" + vf1f(0), v2 = "0000:90:" + vf1f(0), v3 = "0000:51:" + vf1f(0),
                    v4 = "0000:b9:" + vf1f(0);
  check_rows({
      {"request 1 GPU and 1 VF but invalid Device Topology",
       no_topology_cr,
       1,
       0,
       false,
       "",
       false,
       {},
       {},
       true,
       "Insufficient rdma VirtualFunctions"},
      {"allocate 0 GPU and 1 VF but invalid Device Topology",
       no_topology_cr,
       0,
       0,
       false,
       "",
       false,
       {},
       {},
       true,
       "Insufficient rdma VirtualFunctions"},
      {"allocate 0 GPU and 1 VF", cr, 0, 0, false, "", false, {}, {{R, 1, 1, v1}}},
      {"allocate 1 GPU and 1 VF",
       cr,
       1,
       0,
       false,
       "",
       false,
       {},
       gpus({0}) + std::vector<want_alloc>{{R, 1, 1, v1}}},
      {"allocate 2 GPU and 1 VF",
       cr,
       2,
       0,
       false,
       "",
       false,
       {},
       gpus({0, 1}) + std::vector<want_alloc>{{R, 1, 1, v1}}},
      {"allocate 3 GPU and 2 VF",
       cr,
       3,
       0,
       false,
       "",
       false,
       {},
       gpus({0, 1, 2}) + std::vector<want_alloc>{{R, 1, 1, v1}, {R, 2, 1, v2}}},
      {"allocate 4 GPU and 2 VF",
       cr,
       4,
       0,
       false,
       "",
       false,
       {},
       gpus({0, 1, 2, 3}) + std::vector<want_alloc>{{R, 1, 1, v1}, {R, 2, 1, v2}}},
      {"allocate 6 GPU and 3 VF",
       cr,
       6,
       0,
       false,
       "",
       false,
       {},
       gpus({0, 1, 2, 3, 4, 5}) +
           std::vector<want_alloc>{{R, 1, 1, v1}, {R, 2, 1, v2}, {R, 3, 1, v3}}},
      {"allocate 8 GPU and 4 VF",
       cr,
       8,
       0,
       false,
       "",
       false,
       {},
       gpus({0, 1, 2, 3, 4, 5, 6, 7}) +
           std::vector<want_alloc>{{R, 1, 1, v1}, {R, 2, 1, v2}, {R, 3, 1, v3}, {R, 4, 1, v4}}},
      {"allocate 2 GPU and 1 VF with assigned devices", cr, 2, 0, false, "", false,
       gpus({0}) + std::vector<want_alloc>{{R, 1, 1, v1}},
       gpus({2, 3}) + std::vector<want_alloc>{{R, 2, 1, v2}}},
      {"allocate 3 GPU and 2 VF with assigned devices", cr, 3, 0, false, "", false,
       gpus({0}) + std::vector<want_alloc>{{R, 1, 1, v1}},
       gpus({1, 2, 3}) + std::vector<want_alloc>{{R, 1, 1, "0000:1f:" + vf1f(1)}, {R, 2, 1, v2}}},
      {"Only 1 RDMA and 4 PCIE with 2 GPUs Per PCIE, allocate 4 GPUs",
       [] {
         // Only NIC 1 has VFs (30, 0000:20:00.<hex>).
         std::vector<fake> devs{{"rdma", 1, 0, 0, "0", 30, "fakeW"},
                                {"rdma", 2, 0, 0, "1", 0, "fakeW"},
                                {"rdma", 3, 0, 0, "2", 0, "fakeW"},
                                {"rdma", 4, 0, 0, "3", 0, "fakeW"}};
         static const char* pcie[] = {"0", "1", "2", "3"};
         for (int m = 0; m < 8; ++m) devs.push_back({"gpu", m, 0, 0, pcie[m / 2]});
         return *parse_device(device_cr(devs, hex_namer(0x1f)));
       },
       4,
       0,
       false,
       "",
       false,
       {},
       gpus({0, 1, 2, 3}) + std::vector<want_alloc>{{R, 1, 1, "0000:20:00.0"}}},
      {"1 RDMA with 2 GPUs Per PCIE, 2 NUMA Nodes, assigned 4 GPUs, requests 4 GPUs",
       [] { return two_numa_cr(false); }, 4, 0, false, "", false,
       gpus({0, 1, 2, 3}) + std::vector<want_alloc>{{R, 1, 1, "0000:20:00.0"}},
       gpus({4, 5, 6, 7}) +
           std::vector<want_alloc>{{R, 3, 1, "0000:22:00.0"}, {R, 4, 1, "0000:23:00.0"}}},
      {"2 RDMA with 2 GPUs Per PCIE, 2 NUMA Nodes, assigned 4 GPUs, requests 4 GPUs",
       [] { return two_numa_cr(true); }, 4, 4, false, "", false,
       gpus({0, 1, 2, 3}) + std::vector<want_alloc>{{R, 1, 1, "0000:20:00.0"}},
       gpus({4, 5, 6, 7}) + std::vector<want_alloc>{{R, 3, 100, "0000:22:00.0"},
                                                    {R, 4, 100, "0000:23:00.0"},
                                                    {R, 7, 100, "0001:22:00.0"},
                                                    {R, 8, 100, "0001:23:00.0"}}},
      {"1 RDMA with 1 GPU Per PCIE, but the first PCIE has multiple RDMA, requests 4 GPUs",
       [] {
         return one_numa_cr(1, {"0", "0", "0", "1", "2", "3"}, 0, 1);
       },
       4,
       4,
       false,
       "",
       false,
       {},
       gpus({0, 1, 2, 3}) + std::vector<want_alloc>{{R, 0, 100, "0000:20:00.0"},
                                                    {R, 3, 100, "0000:23:00.0"},
                                                    {R, 4, 100, "0000:24:00.0"},
                                                    {R, 5, 100, "0000:25:00.0"}}},
      {"1 GPU with hostNetwork and apply for all RDMAs",
       [] {
         return one_numa_cr(2, {"0", "1", "2", "3"}, 1, 0);
       },
       4,
       0,
       true,
       "",
       false,
       {},
       gpus({0, 1, 2, 3}) + std::vector<want_alloc>{{R, 1, 1}, {R, 2, 1}, {R, 3, 1}, {R, 4, 1}}},
  });
}

TEST(DeviceJointAllocation, TestAutopilotAllocatorWithExclusivePolicyAndRequiredScope) {
  const auto cr = [] { return fake_device_cr(); };
  const std::string v1 = "0000:1f:" + vf1f(0), v2 = "0000:90:" + vf1f(0), v3 = "0000:51:" + vf1f(0),
                    v4 = "0000:b9:" + vf1f(0);
  const std::string pl = "PCIeLevel";
  check_rows({
      {"allocate 0 GPU and 1 VF", cr, 0, 0, false, pl, true, {}, {{R, 1, 1, v1}}},
      {"allocate 1 GPU and 1 VF",
       cr,
       1,
       0,
       false,
       pl,
       true,
       {},
       gpus({0}) + std::vector<want_alloc>{{R, 1, 1, v1}}},
      {"allocate 3 GPU and 2 VF",
       cr,
       3,
       0,
       false,
       pl,
       true,
       {},
       gpus({0, 1, 2}) + std::vector<want_alloc>{{R, 1, 1, v1}, {R, 2, 1, v2}}},
      {"allocate 6 GPU and 3 VF",
       cr,
       6,
       0,
       false,
       pl,
       true,
       {},
       gpus({0, 1, 2, 3, 4, 5}) +
           std::vector<want_alloc>{{R, 1, 1, v1}, {R, 2, 1, v2}, {R, 3, 1, v3}}},
      {"allocate 8 GPU and 4 VF",
       cr,
       8,
       0,
       false,
       pl,
       true,
       {},
       gpus({0, 1, 2, 3, 4, 5, 6, 7}) +
           std::vector<want_alloc>{{R, 1, 1, v1}, {R, 2, 1, v2}, {R, 3, 1, v3}, {R, 4, 1, v4}}},
      {"allocate 2 GPU and 1 VF with assigned devices", cr, 2, 0, false, pl, true,
       gpus({0}) + std::vector<want_alloc>{{R, 1, 100, v1}},
       gpus({2, 3}) + std::vector<want_alloc>{{R, 2, 1, v2}}},
      // Koordinator refuses this one ("node(s) Device Joint-Allocate rules violation") because
      // its PCIeLevel filter does not take effect (nodeDevice.filter discards the result of
      // sets.Int.Intersection): GPUs 1-3 win, and NIC 1 on their PCIe 0 is full. Colony applies
      // the PCIeLevel exclusivity: PCIe 0 (GPU 0 and NIC 1 used) is out, so GPUs 4-6 on NUMA node
      // 1 and NICs 3 and 4 in their switches fit.
      {"allocate 3 GPU and 2 VF with assigned devices", cr, 3, 0, false, pl, true,
       gpus({0}) + std::vector<want_alloc>{{R, 1, 100, v1}},
       gpus({4, 5, 6}) + std::vector<want_alloc>{{R, 3, 1, v3}, {R, 4, 1, v4}}},
      {"4 PCIE with 1 RDMA and 2 GPUs Per PCIE, allocate 4 GPUs",
       [] {
         return one_numa_cr(2, {"0", "1", "2", "3"}, 0, 1);
       },
       4,
       0,
       false,
       pl,
       true,
       {},
       gpus({0, 1, 2, 3}) +
           std::vector<want_alloc>{{R, 0, 1, "0000:20:00.0"}, {R, 1, 1, "0000:21:00.0"}}},
      {"1 GPU with hostNetwork",
       [] {
         return one_numa_cr(2, {"0", "1", "2", "3"}, 1, 0);
       },
       4,
       0,
       true,
       pl,
       true,
       {},
       gpus({0, 1, 2, 3}) + std::vector<want_alloc>{{R, 1, 1}, {R, 2, 1}, {R, 3, 1}, {R, 4, 1}}},
  });
}

// SamePCIe refusals (Colony's cases on Koordinator's rules and message).
TEST(DeviceJointAllocation, SamePCIeRefusesNICsOutsideTheGPUSwitches) {
  // GPUs 0-3 on PCIe 0 and 1; the only free NIC is on PCIe 2.
  const auto nd = one_numa_cr(2, {"0", "1", "2"}, 0, 1);
  device_request r;
  r.nvidia_gpu = 4;
  r.rdma = 1;
  const std::string hints = hints_annotation("fakeG", "", "");
  node_device_usage used;
  used.add(R, 0, {0, 0, 0, 100, 0});
  used.add(R, 1, {0, 0, 0, 100, 0});
  for (bool same : {false, true}) {
    SCOPED_TRACE(same);
    auto req = make_device_share_request(r, hints, joint_annotation(same));
    ASSERT_TRUE(req && *req);
    auto a = allocate_devices(nd, build_numa_topology(nd), used, **req);
    if (!same) {
      // Without a required scope the NIC outside the switches is taken.
      ASSERT_TRUE(a) << a.error().describe();
      EXPECT_EQ(a->back().minor, 2);
      continue;
    }
    ASSERT_FALSE(a);
    // Two switches want two NICs; only one is free at all.
    EXPECT_EQ(a.error().message, "Insufficient rdma devices");
    EXPECT_EQ(a.error().code, errc::failed_precondition);
  }
  // Two free NICs, one of them outside the GPUs' switches: the rules violation.
  node_device_usage used1;
  used1.add(R, 1, {0, 0, 0, 100, 0});
  auto req = make_device_share_request(r, hints, joint_annotation(true));
  auto a = allocate_devices(nd, build_numa_topology(nd), used1, **req);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, err_joint_allocate_violation);
}

// allocateFromScope on fakeDeviceCR (Colony's cases on Koordinator's rules): the deepest scope
// that holds the request, the one already in use first (bin packing); a shared GPU takes the
// best-scored device in it.
TEST(DeviceJointAllocation, GPUTopologyScopeBinPacking) {
  const auto nd = fake_device_cr();
  const auto topo = build_numa_topology(nd);
  node_device_usage used;
  used.add(G, 4, {50, gpu_mem / 2, 50, 0, 0});
  struct row {
    const char* name;
    device_request r;
    std::vector<int> want;
  };
  device_request half;
  half.gpu_core = 50;
  half.gpu_memory_ratio = 50;
  device_request two;
  two.nvidia_gpu = 2;
  device_request three;
  three.nvidia_gpu = 3;
  device_request five;
  five.nvidia_gpu = 5;
  const std::vector<row> rows = {
      // PCIe 2 holds the used GPU 4: it wins; GPU 5 (untouched) scores higher than GPU 4.
      {"shared GPU: used switch, best-scored device", half, {5}},
      // Two whole GPUs: PCIe 2 cannot hold them (GPU 4 half used); PCIe 3 is the first switch on
      // the used NUMA node 1 that can.
      {"2 GPUs: a switch of the used NUMA node", two, {6, 7}},
      // Three: no switch; NUMA node 1 has only 5, 6, 7 free.
      {"3 GPUs: the used NUMA node", three, {5, 6, 7}},
      // Five: no NUMA node; the node, smallest free minors.
      {"5 GPUs: the node", five, {0, 1, 2, 3, 5}},
  };
  for (const auto& tt : rows) {
    SCOPED_TRACE(tt.name);
    auto req = make_device_share_request(tt.r, "", "");
    ASSERT_TRUE(req && *req);
    auto a = allocate_devices(nd, topo, used, **req);
    ASSERT_TRUE(a) << a.error().describe();
    std::vector<int> got;
    for (const auto& x : *a) got.push_back(x.minor);
    EXPECT_EQ(got, tt.want);
  }
  // A required PCIe scope refuses what only a NUMA node can hold.
  auto req = make_device_share_request(three, R"({"gpu":{"requiredTopologyScope":"PCIe"}})", "");
  auto a = allocate_devices(nd, topo, used, **req);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, err_insufficient_topology_scoped_gpu);
}

// Test_allocateRDMA without its preemptible devices (Colony does not port preemption here): two
// NICs without topology, a request of half a NIC takes minor 1; with both NICs full the node is
// refused.
TEST(DeviceJointAllocation, Test_allocateRDMA) {
  const auto nd = *parse_device(device_cr({{"rdma", 1, 0, -2, ""}, {"rdma", 2, 0, -2, ""}},
                                          [](int, int) { return std::string(); }));
  device_request r;
  r.rdma = 50;
  auto req = make_device_share_request(r, "", "");
  ASSERT_TRUE(req && *req);
  auto a = allocate_devices(nd, build_numa_topology(nd), {}, **req);
  ASSERT_TRUE(a) << a.error().describe();
  EXPECT_EQ(*a, expand({{R, 1, 50}}));
  node_device_usage full;
  full.add(R, 1, {0, 0, 0, 100, 0});
  full.add(R, 2, {0, 0, 0, 100, 0});
  auto refused = allocate_devices(nd, build_numa_topology(nd), full, **req);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "Insufficient rdma devices");
}

// TestPlugin_GetPodTopologyHints (fakeDeviceCR, device request by type).
struct hint_row {
  const char* name;
  std::optional<gpu_requirements> gpu;
  std::int64_t rdma = 0;
  std::string hints;
  std::string joint;
  std::vector<want_alloc> assigned;
  // resource -> {mask, preferred, score}
  std::vector<std::pair<std::string, std::vector<numa::numa_hint>>> want;
  bool want_err = false;
};

numa::numa_hint hint(std::uint64_t mask, bool preferred, std::int64_t score) {
  numa::numa_hint h;
  h.affinity = mask;
  h.preferred = preferred;
  h.score = score;
  return h;
}

gpu_requirements whole_gpus(std::int64_t n) {
  gpu_requirements g;
  g.count = n;
  g.has_core = g.has_memory_ratio = true;
  g.core = g.memory_ratio = 100;
  return g;
}

TEST(DeviceTopologyHints, TestPlugin_GetPodTopologyHints) {
  const auto nd = fake_device_cr();
  const auto topo = build_numa_topology(nd);
  const std::int64_t s = default_numa_score;
  const std::string vf_any_count =
      R"({"rdma":{"vfSelector":{},"allocateStrategy":"RequestsAsCount"}})";
  const std::vector<hint_row> rows = {
      {"generate gpu&rdma hints",
       whole_gpus(1),
       2,
       "",
       "",
       {},
       {{"gpu", {hint(0b01, true, s), hint(0b10, true, 0), hint(0b11, false, s)}},
        {"rdma", {hint(0b01, true, s), hint(0b10, true, 0), hint(0b11, false, s)}}}},
      {"generate gpu&rdma hints but large gpu requests", whole_gpus(17), 2, "", "", {}, {}, true},
      {"generate gpu hints with assigned devices",
       whole_gpus(4),
       0,
       "",
       "",
       gpus({0}),
       {{"gpu", {hint(0b10, true, s), hint(0b11, false, s)}}}},
      {"generate 2 rdma hints",
       std::nullopt,
       2,
       R"({"rdma":{"allocateStrategy":"RequestsAsCount"}})",
       "",
       {},
       {{"rdma", {hint(0b01, true, s), hint(0b10, true, s), hint(0b11, false, s)}}}},
      {"generate rdma 2 vf hints",
       std::nullopt,
       2,
       vf_any_count,
       "",
       {},
       {{"rdma", {hint(0b01, true, s), hint(0b10, true, s), hint(0b11, false, s)}}}},
      {"generate rdma 4 vf hints",
       std::nullopt,
       4,
       vf_any_count,
       "",
       {},
       {{"rdma", {hint(0b11, true, s)}}}},
      {"generate joint-allocate gpu&rdma hints",
       whole_gpus(1),
       2,
       R"({"rdma":{"vfSelector":{}}})",
       R"({"deviceTypes":["gpu","rdma"]})",
       {},
       {{"gpu", {hint(0b01, true, s), hint(0b10, true, 0), hint(0b11, false, s)}},
        {"rdma", {hint(0b01, true, s), hint(0b10, true, 0), hint(0b11, false, s)}}}},
  };
  for (const auto& tt : rows) {
    SCOPED_TRACE(tt.name);
    device_share_request req;
    req.gpu = tt.gpu;
    req.rdma = tt.rdma;
    if (!tt.hints.empty()) req.hints = *parse_device_allocate_hints(tt.hints);
    if (!tt.joint.empty()) req.joint = *parse_device_joint_allocate(tt.joint);
    auto got = generate_topology_hints(nd, topo, usage_of(expand(tt.assigned)), req);
    ASSERT_EQ(!got, tt.want_err) << (got ? "succeeded" : got.error().describe());
    if (!got) continue;
    numa::provider_hints want;
    for (const auto& [k, v] : tt.want) want.emplace_back(k, v);
    EXPECT_EQ(*got, want);
  }
}

TEST(DeviceTopologyHints, GenerateFpgaEmptyHints) {
  // "generate fpga empty hints": the node has no FPGA.
  const auto nd = fake_device_cr();
  device_share_request req;
  req.fpga = 100;
  auto got = generate_topology_hints(nd, build_numa_topology(nd), {}, req);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "Insufficient fpga devices");
}

// TestPlugin_Allocate: allocation restricted to the chosen NUMA hint.
TEST(DeviceTopologyHints, TestPlugin_Allocate) {
  const auto nd = fake_device_cr();
  const auto topo = build_numa_topology(nd);
  struct row {
    const char* name;
    std::optional<gpu_requirements> gpu;
    std::int64_t rdma = 0, fpga = 0;
    std::string hints, joint;
    std::uint64_t affinity;
    bool want_err;
  };
  gpu_requirements by_memory;  // gpu-core 100 + gpu-memory 8Gi
  by_memory.has_core = by_memory.has_memory = by_memory.shared = true;
  by_memory.core = 100;
  by_memory.memory_bytes = 8LL << 30;
  const std::string vf_count = R"({"rdma":{"vfSelector":{},"allocateStrategy":"RequestsAsCount"}})";
  const std::vector<row> rows = {
      {"allocate gpu&rdma by affinity", by_memory, 2, 0, "", "", 0b01, false},
      {"generate fpga empty hints", std::nullopt, 0, 100, "", "", 0, true},
      {"generate 2 rdma hints", std::nullopt, 2, 0,
       R"({"rdma":{"allocateStrategy":"RequestsAsCount"}})", "", 0b01, false},
      {"generate rdma 2 vf hints", std::nullopt, 2, 0, vf_count, "", 0b01, false},
      {"generate rdma 4 vf hints", std::nullopt, 4, 0, vf_count, "", 0b01, true},
      {"generate joint-allocate gpu&rdma hints", by_memory, 2, 0, R"({"rdma":{"vfSelector":{}}})",
       R"({"deviceTypes":["gpu","rdma"]})", 0b01, false},
  };
  for (const auto& tt : rows) {
    SCOPED_TRACE(tt.name);
    device_share_request req;
    req.gpu = tt.gpu;
    req.rdma = tt.rdma;
    req.fpga = tt.fpga;
    if (!tt.hints.empty()) req.hints = *parse_device_allocate_hints(tt.hints);
    if (!tt.joint.empty()) req.joint = *parse_device_joint_allocate(tt.joint);
    allocate_options opts;
    opts.numa_affinity = tt.affinity;
    auto got = allocate_devices(nd, topo, {}, req, opts);
    ASSERT_EQ(!got, tt.want_err) << (got ? "succeeded" : got.error().describe());
    if (!got) continue;
    for (const auto& a : *got) EXPECT_EQ(topo.node_of(nd, a.type, a.minor), 0) << a.minor;
  }
}

TEST(DeviceTopologyHints, Test_generateDesignatedHints) {
  const auto nd = fake_device_cr();
  const auto topo = build_numa_topology(nd);
  // "generate hints": GPU 5 lies on NUMA node 1.
  auto got = generate_designated_hints(expand(gpus({5})), nd, topo);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, (numa::provider_hints{{"gpu", std::vector{hint(0b10, true, 500)}}}));
  // A device without a NUMA node: Koordinator's refusal.
  auto bad = generate_designated_hints(expand(gpus({9})), nd, topo);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, err_designated_lack_numa);
}

// ---- The Device object parser --------------------------------------------------------------

TEST(DeviceObject, ParsesFakeDeviceCR) {
  const auto nd = fake_device_cr();
  EXPECT_EQ(nd.node_name, "test-node-1");
  ASSERT_EQ(nd.of_type(G).size(), 8u);
  ASSERT_EQ(nd.of_type(R).size(), 4u);
  EXPECT_TRUE(nd.of_type(T::fpga).empty());
  const device_info* g5 = nd.find(G, 5);
  ASSERT_NE(g5, nullptr);
  EXPECT_EQ(g5->resources, (device_amount{100, gpu_mem, 100, 0, 0}));
  EXPECT_EQ(g5->topology->node_id, 1);
  EXPECT_EQ(g5->topology->pcie_id, "2");
  const device_info* r1 = nd.find(R, 1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->vf_count(), 30u);
  EXPECT_EQ(r1->labels.at("type"), "fakeW");
  EXPECT_EQ(r1->vf_groups[0].vfs[0].bus_id, "0000:1f:00.2");

  const auto topo = build_numa_topology(nd);
  ASSERT_EQ(topo.nodes.size(), 2u);
  EXPECT_EQ(topo.node_ids(), (std::vector<int>{0, 1}));
  EXPECT_EQ(topo.num_nodes_per_socket, 1);
  ASSERT_EQ(topo.nodes[1].pcies.size(), 2u);
  EXPECT_EQ(topo.nodes[1].pcies[0].pcie_id, "2");
  EXPECT_EQ(topo.nodes[1].pcies[0].minors[0], (std::vector<std::int32_t>{4, 5}));
  EXPECT_EQ(topo.nodes[1].pcies[0].minors[1], (std::vector<std::int32_t>{3}));
  EXPECT_EQ(topo.count_in(G, 0b01), 4u);
  EXPECT_EQ(topo.count_in(R, 0b11), 4u);
  EXPECT_EQ(topo.node_of(nd, R, 4), 1);
}

TEST(DeviceObject, ParserErrorsNameTheField) {
  const char* gpu_res =
      R"("resources":{"koordinator.sh/gpu-core":"100","koordinator.sh/gpu-memory-ratio":"100"})";
  auto doc = [&](const std::string& devices) {
    return std::string(R"({"metadata":{"name":"n"},"spec":{"devices":[)") + devices + "]}}";
  };
  const std::string ok = std::string(R"({"type":"gpu","minor":0,"health":true,)") + gpu_res + "}";
  struct row {
    const char* name;
    std::string text;
    const char* where;
  };
  const std::vector<row> rows = {
      {"unknown type", doc(ok + R"(,{"type":"npu","minor":1,"resources":{"a":"1"}})"),
       "spec.devices[1].type"},
      {"negative minor", doc(std::string(R"({"type":"gpu","minor":-1,)") + gpu_res + "}"),
       "spec.devices[0].minor"},
      {"missing minor", doc(std::string(R"({"type":"gpu",)") + gpu_res + "}"),
       "spec.devices[0].minor"},
      {"duplicate minor per type", doc(ok + "," + ok), "spec.devices[1].minor"},
      {"missing resources", doc(R"({"type":"rdma","minor":0})"), "spec.devices[0].resources"},
      {"bad quantity",
       doc(R"({"type":"rdma","minor":0,"resources":{"koordinator.sh/rdma":"ten"}})"),
       "spec.devices[0].resources[koordinator.sh/rdma]"},
      {"nodeID not an integer",
       doc(R"({"type":"rdma","minor":0,"resources":{"koordinator.sh/rdma":"100"},)"
           R"("topology":{"socketID":0,"nodeID":"1","pcieID":"0"}})"),
       "spec.devices[0].topology.nodeID"},
      {"missing pcieID",
       doc(R"({"type":"rdma","minor":3,"resources":{"koordinator.sh/rdma":"100"},)"
           R"("topology":{"socketID":0,"nodeID":1}})"),
       "spec.devices[0].topology.pcieID"},
      {"VF without busID",
       doc(R"({"type":"rdma","minor":3,"resources":{"koordinator.sh/rdma":"100"},)"
           R"("vfGroups":[{"vfs":[{"minor":0}]}]})"),
       "spec.devices[0].vfGroups[0].vfs[0].busID"},
      {"devices not an array", R"({"spec":{"devices":{}}})", "spec.devices"},
      {"not JSON", "{", ""},
  };
  for (const auto& tt : rows) {
    SCOPED_TRACE(tt.name);
    auto r = parse_device(std::string_view(tt.text));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, errc::invalid_input);
    EXPECT_EQ(r.error().where, tt.where) << r.error().describe();
  }
  // The good one parses; an unhealthy device counts with nothing.
  auto r = parse_device(
      std::string_view(doc(std::string(R"({"type":"gpu","minor":0,)") + gpu_res + "}")));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->devices[0].health);
  EXPECT_TRUE(r->devices[0].total().is_zero());
}

TEST(DeviceAnnotations, JointAllocateAndHints) {
  auto j =
      parse_device_joint_allocate(R"({"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"})");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->device_types, (std::vector<device_type>{G, R}));
  EXPECT_EQ(j->required_scope, same_pcie_scope);

  auto h = parse_device_allocate_hints(
      R"({"rdma":{"selector":{"matchLabels":{"type":"fakeW"}},"vfSelector":{"matchExpressions":)"
      R"([{"key":"type","operator":"In","values":["general"]}]},"allocateStrategy":"ApplyForAll"},)"
      R"("gpu":{"requiredTopologyScope":"PCIe","exclusivePolicy":"DeviceLevel"}})");
  ASSERT_TRUE(h) << h.error().describe();
  ASSERT_NE(h->of(R), nullptr);
  EXPECT_EQ(h->of(R)->strategy, allocate_strategy::apply_for_all);
  EXPECT_TRUE(h->of(R)->selector->matches({{"type", "fakeW"}}));
  EXPECT_FALSE(h->of(R)->selector->matches({{"type", "other"}}));
  EXPECT_TRUE(h->of(R)->vf_selector->matches({{"type", "general"}}));
  EXPECT_FALSE(h->of(R)->vf_selector->matches({}));
  EXPECT_EQ(h->of(G)->exclusive, exclusive_policy::device_level);
  EXPECT_EQ(h->of(G)->required_topology_scope, "PCIe");
  EXPECT_EQ(h->of(T::fpga), nullptr);

  struct row {
    const char* name;
    bool joint;
    const char* text;
    const char* where;
  };
  const std::vector<row> rows = {
      {"joint: unknown type", true, R"({"deviceTypes":["gpu","npu"]})",
       "device-joint-allocate.deviceTypes[1]"},
      {"joint: duplicate type", true, R"({"deviceTypes":["gpu","gpu"]})",
       "device-joint-allocate.deviceTypes[1]"},
      {"joint: unknown scope", true, R"({"deviceTypes":["gpu"],"requiredScope":"SameNUMA"})",
       "device-joint-allocate.requiredScope"},
      {"joint: not JSON", true, "[", "device-joint-allocate"},
      {"hint: unknown type", false, R"({"tpu":{}})", "device-allocate-hint.tpu"},
      {"hint: unknown strategy", false, R"({"rdma":{"allocateStrategy":"All"}})",
       "device-allocate-hint.rdma.allocateStrategy"},
      {"hint: unknown operator", false,
       R"({"rdma":{"vfSelector":{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]}}})",
       "device-allocate-hint.rdma.vfSelector.matchExpressions[0].operator"},
      {"hint: In without values", false,
       R"({"rdma":{"selector":{"matchExpressions":[{"key":"a","operator":"In"}]}}})",
       "device-allocate-hint.rdma.selector.matchExpressions[0].values"},
      {"hint: unknown scope", false, R"({"gpu":{"requiredTopologyScope":"Rack"}})",
       "device-allocate-hint.gpu.requiredTopologyScope"},
  };
  for (const auto& tt : rows) {
    SCOPED_TRACE(tt.name);
    const error e = tt.joint ? parse_device_joint_allocate(tt.text).error()
                             : parse_device_allocate_hints(tt.text).error();
    EXPECT_EQ(e.code, errc::invalid_input);
    EXPECT_EQ(e.where, tt.where) << e.describe();
  }
}

TEST(DeviceAnnotations, MakeDeviceShareRequest) {
  device_request r;
  r.nvidia_gpu = 2;
  r.rdma = 1;
  auto req =
      make_device_share_request(r, R"({"rdma":{"allocateStrategy":"ApplyForAll"}})",
                                R"({"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"})");
  ASSERT_TRUE(req && *req);
  EXPECT_EQ((*req)->gpu->count, 2);
  EXPECT_EQ((*req)->rdma, 1);
  // parsePodDeviceShareExtensions: the ApplyForAll type leaves the joint.
  EXPECT_EQ((*req)->joint->device_types, (std::vector<device_type>{G}));
  // No device request: nullopt. An invalid rdma amount: the validation's error.
  EXPECT_FALSE(*make_device_share_request({}, "", ""));
  device_request bad;
  bad.rdma = 150;
  EXPECT_FALSE(make_device_share_request(bad, "", ""));
  // to_gpu_allocations keeps the GPU part.
  auto g = to_gpu_allocations(expand(gpus({3}) + std::vector<want_alloc>{{R, 1, 1}}));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0], (gpu_allocation{3, 100, gpu_mem, 100}));
  // add_gpu_usage reads Colony's GPU accounting; an untouched GPU adds no entry.
  std::vector<gpu_device> devs(2);
  devs[0].minor = 0;
  devs[1].minor = 1;
  devs[1].core_used = 50;
  devs[1].memory_ratio_used = 50;
  devs[1].memory_used_bytes = gpu_mem / 2;
  node_device_usage u;
  add_gpu_usage(u, devs);
  ASSERT_EQ(u.devices.size(), 1u);
  EXPECT_EQ(u.devices[0], (device_usage{G, 1, {50, gpu_mem / 2, 50, 0, 0}, {}}));
}

// ---- Randomized invariants -----------------------------------------------------------------

// Random nodes (1-2 NUMA nodes, 1-3 PCIe switches each, 0-3 GPUs and 0-2 NICs per switch, VFs
// on some NICs), filled pod by pod with random requests; every allocation must respect the
// request's count, the NUMA mask, SamePCIe when required, never exceed a device's capacity or
// hand out a VF twice, and be the same when computed again.
TEST(DeviceJointAllocationProperty, NeverDoubleAllocatesAndRespectsSamePCIe) {
  std::mt19937_64 rng(20260127);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int allocations = 0, same_pcie_ok = 0, same_pcie_refused = 0, numa_restricted = 0, with_vf = 0,
      hints_checked = 0;
  for (int node = 0; node < 300; ++node) {
    std::vector<fake> devs;
    static const char* ids[] = {"p0", "p1", "p2", "p3", "p4", "p5"};
    int gpu_minor = 0, nic_minor = 0, sw = 0;
    const int numa_nodes = pick(1, 2);
    for (int n = 0; n < numa_nodes; ++n)
      for (int p = pick(1, 3); p > 0; --p, ++sw) {
        for (int g = pick(0, 3); g > 0; --g)
          devs.push_back({"gpu", gpu_minor++, n, n, ids[sw], 0, nullptr, pick(0, 9) != 0});
        for (int k = pick(0, 2); k > 0; --k)
          devs.push_back({"rdma", nic_minor++, n, n, ids[sw], pick(0, 1) * pick(1, 4), "fakeW",
                          pick(0, 9) != 0});
      }
    auto parsed = parse_device(device_cr(devs, [](int minor, int k) {
      return "b" + std::to_string(minor) + "." + std::to_string(k);
    }));
    ASSERT_TRUE(parsed) << parsed.error().describe();
    const node_devices& nd = *parsed;
    const auto topo = build_numa_topology(nd);
    node_device_usage usage;
    std::vector<device_allocations> placed;
    std::set<std::string> vfs_taken;
    for (int pod = 0; pod < 8; ++pod) {
      device_request r;
      const int gpu_kind = pick(0, 3);
      if (gpu_kind == 1) r.nvidia_gpu = pick(1, 4);
      if (gpu_kind == 2) {
        r.gpu_core = 50;
        r.gpu_memory_ratio = 50;
      }
      const int rdma_kind = pick(0, 3);
      if (rdma_kind == 1) r.rdma = 1;
      if (rdma_kind == 2) r.rdma = 100 * pick(1, 2);
      if (rdma_kind == 3) r.rdma = pick(1, 3);
      if (r.empty()) r.nvidia_gpu = 1;
      const bool vf = pick(0, 1) == 1;
      json h = json::object();
      if (vf) h["rdma"]["vfSelector"] = json::object();
      if (rdma_kind == 3) h["rdma"]["allocateStrategy"] = "RequestsAsCount";
      const bool same = pick(0, 1) == 1;
      auto req = make_device_share_request(r, h.empty() ? "" : h.dump(),
                                           pick(0, 3) ? joint_annotation(same) : "");
      ASSERT_TRUE(req && *req) << (req ? "" : req.error().describe());
      allocate_options opts;
      if (pick(0, 2) == 0) opts.numa_affinity = pick(1, (1 << numa_nodes) - 1);
      auto a = allocate_devices(nd, topo, usage, **req, opts);
      auto again = allocate_devices(nd, topo, usage, **req, opts);
      ASSERT_EQ(a.has_value(), again.has_value());
      if (!a) {
        EXPECT_EQ(a.error().code, errc::failed_precondition) << a.error().describe();
        if (a.error().message == err_joint_allocate_violation) ++same_pcie_refused;
        continue;
      }
      ASSERT_EQ(*a, *again);
      ++allocations;
      std::set<std::pair<device_type, int>> seen;
      std::set<std::string> gpu_pcies, rdma_pcies;
      std::int64_t n_gpu = 0, n_rdma = 0;
      for (const auto& x : *a) {
        ASSERT_TRUE(seen.emplace(x.type, x.minor).second) << "device twice in one allocation";
        const device_info* d = nd.find(x.type, x.minor);
        ASSERT_NE(d, nullptr);
        ASSERT_TRUE(d->health) << "allocated an unhealthy device";
        ASSERT_TRUE(fits(x.resources, free_of(*d, usage))) << "allocation exceeds free";
        if (opts.numa_affinity) {
          ASSERT_TRUE(d->topology);
          EXPECT_TRUE(*opts.numa_affinity & (1u << d->topology->node_id));
        }
        (x.type == G ? gpu_pcies : rdma_pcies).insert(d->topology->pcie_id);
        (x.type == G ? n_gpu : n_rdma) += 1;
        if (x.vf) {
          ++with_vf;
          ASSERT_TRUE(vfs_taken.insert(x.vf->bus_id).second) << "VF handed out twice";
        }
      }
      if ((*req)->gpu) {
        EXPECT_EQ(n_gpu, (*req)->gpu->count);
      }
      if ((*req)->rdma) {
        EXPECT_GE(n_rdma, 1);
      }
      if ((*req)->joint && (*req)->joint->required_scope == same_pcie_scope && n_gpu > 0 &&
          n_rdma > 0 && (*req)->joint->device_types.size() == 2) {
        EXPECT_EQ(gpu_pcies, rdma_pcies) << "SamePCIe violated";
        ++same_pcie_ok;
      }
      if (opts.numa_affinity) ++numa_restricted;
      add_allocations(usage, *a);
      placed.push_back(*a);
      for (const auto& u : usage.devices) {
        const device_info* d = nd.find(u.type, u.minor);
        ASSERT_TRUE(fits(u.used, d->total())) << "device over capacity";
      }
      // Every hint's mask is a set of the node's NUMA nodes; a preferred one is the narrowest.
      auto hs = generate_topology_hints(nd, topo, usage, **req);
      if (hs) {
        for (const auto& [name, list] : *hs) {
          ASSERT_TRUE(list);
          for (const auto& x : *list) {
            EXPECT_EQ(*x.affinity & ~((1u << numa_nodes) - 1), 0u);
            ++hints_checked;
          }
        }
      }
    }
    // Forgetting every pod gives every device back.
    for (const auto& a : placed) remove_allocations(usage, a);
    EXPECT_TRUE(usage.devices.empty()) << usage.devices.size() << " entries left";
  }
  // The generator must reach the interesting paths, or the test proves nothing.
  EXPECT_GT(allocations, 500);
  EXPECT_GT(same_pcie_ok, 25);
  EXPECT_GT(same_pcie_refused, 5);
  EXPECT_GT(numa_restricted, 100);
  EXPECT_GT(with_vf, 50);
  EXPECT_GT(hints_checked, 200);
  std::printf(
      "[property] allocations=%d same_pcie_ok=%d same_pcie_refused=%d numa=%d vf=%d hints=%d\n",
      allocations, same_pcie_ok, same_pcie_refused, numa_restricted, with_vf, hints_checked);
}

}  // namespace
}  // namespace colony::scheduler::device
