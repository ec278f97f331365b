// colony run with DeviceShare over a real kube-apiserver: a node's Device object
// (scheduling.koordinator.sh/v1alpha1, Koordinator's CRD) is read from the API, and a pod asking
// for two GPUs and an RDMA VF with device-joint-allocate SamePCIe is bound with Koordinator's
// scheduling.koordinator.sh/device-allocated annotation: both GPUs on one PCIe switch, that
// switch's NIC, a VF of it. A second such pod gets the other switch; a third, for which no switch
// is left, stays pending with DeviceShare's reason.
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/bridges/kubernetes/kube_peer.hpp"
#include "tests/run/colony_run_test.hpp"
#include "tests/support/device_objects.hpp"

namespace colony::run {
namespace {

using json = nlohmann::json;

class ColonyRunDevice : public colony::run::testing::colony_run_test {
 protected:
  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    using peer = kube::testing::kube_peer;
    auto a = peer_->apply_crds({peer::crd_file("scheduling.koordinator.sh_devices.yaml",
                                               "devices.scheduling.koordinator.sh.yaml")});
    ASSERT_TRUE(a) << a.error().describe();
  }

  // A node with 4 GPUs on 2 PCIe switches (one per NUMA node), one RDMA NIC with 2 VFs per switch.
  void make_gpu_node(const std::string& name) {
    make_node(name, "32", {{"nvidia.com/gpu", "4"}, {"koordinator.sh/rdma", "200"}});
    post("/apis/scheduling.koordinator.sh/v1alpha1/devices",
         json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
              {"kind", "Device"},
              {"metadata", {{"name", name}}},
              {"spec", colony::testing::device_spec(2, 1, 2, 2)}});
  }

  void make_rdma_pod(const std::string& name) {
    // Burstable (no cpu limit): a Guaranteed pod with whole CPUs would be LSR and need a CPU
    // topology (NodeNUMAResource), which this node does not report.
    const json devices = {{"nvidia.com/gpu", "2"}, {"koordinator.sh/rdma", "1"}};
    json res = devices;
    res["cpu"] = "1";
    res["memory"] = "1Gi";
    post("/api/v1/namespaces/" + ns + "/pods",
         json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", ns},
                {"annotations",
                 {{"scheduling.koordinator.sh/device-joint-allocate",
                   R"({"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"})"},
                  {"scheduling.koordinator.sh/device-allocate-hint",
                   R"({"rdma":{"vfSelector":{}}})"}}}}},
              {"spec",
               {{"schedulerName", "koord-scheduler"},
                {"containers",
                 json::array({{{"name", "c"},
                               {"image", "registry.invalid/pause:3.9"},
                               {"resources", {{"requests", res}, {"limits", devices}}}}})}}}});
  }

  json pod(const std::string& name) { return get("/api/v1/namespaces/" + ns + "/pods/" + name); }
};

TEST_F(ColonyRunDevice, JointAllocationReachesThePodAsDeviceAllocated) {
  make_gpu_node("gpu-1");
  make_rdma_pod("train-a");
  make_rdma_pod("train-b");
  auto s = run_until_bound(std::chrono::seconds(90));
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->write_failures, 0u);

  std::set<std::string> switches_used, vfs_used;
  for (const std::string name : {"train-a", "train-b"}) {
    const json p = pod(name);
    ASSERT_EQ(p["spec"].value("nodeName", std::string{}), "gpu-1") << p.dump();
    const std::string text = p["metadata"]["annotations"].value(
        "scheduling.koordinator.sh/device-allocated", std::string{});
    ASSERT_FALSE(text.empty()) << p.dump();
    const json da = json::parse(text);
    ASSERT_EQ(da["gpu"].size(), 2u) << text;
    ASSERT_EQ(da["rdma"].size(), 1u) << text;
    // Both GPUs and the NIC on one switch: GPUs 2p, 2p+1 and NIC p.
    const int p0 = da["gpu"][0]["minor"].get<int>() / 2;
    EXPECT_EQ(da["gpu"][1]["minor"].get<int>() / 2, p0) << text;
    EXPECT_EQ(da["rdma"][0]["minor"].get<int>(), p0) << text;
    EXPECT_EQ(da["gpu"][0]["resources"]["koordinator.sh/gpu-core"], "100") << text;
    EXPECT_EQ(da["rdma"][0]["resources"]["koordinator.sh/rdma"], "1") << text;
    const auto& vfs = da["rdma"][0]["extension"]["vfs"];
    ASSERT_EQ(vfs.size(), 1u) << text;
    const std::string bus = vfs[0]["busID"].get<std::string>();
    EXPECT_EQ(bus.substr(0, 6), "0000:" + std::to_string(p0)) << text;
    switches_used.insert(std::to_string(p0));
    vfs_used.insert(bus);
  }
  EXPECT_EQ(switches_used.size(), 2u);  // one switch each
  EXPECT_EQ(vfs_used.size(), 2u);

  // No switch has two free GPUs left: a third pod stays pending with DeviceShare's reason.
  make_rdma_pod("train-c");
  std::atomic<bool> stop{false};
  run_options o;
  o.kubeconfig = kubeconfig_;
  o.log_path = log_;
  o.stop = [&] { return stop.load(); };
  result<run_stats> out = fail(errc::internal, "not run");
  std::thread t([&] { out = run_cluster(o); });
  std::string reason;
  for (int i = 0; i < 300 && reason.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const json p = pod("train-c");
    for (const auto& c : p["status"].value("conditions", json::array()))
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False")
        reason = c.value("message", "");
  }
  stop = true;
  t.join();
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_EQ(pod("train-c")["spec"].value("nodeName", std::string{}), "");
  EXPECT_NE(reason.find("0/1 nodes are available"), std::string::npos) << reason;
}

}  // namespace
}  // namespace colony::run
