// A Device object's spec (scheduling.koordinator.sh/v1alpha1 DeviceSpec) the DeviceShare tests
// share: `switches` PCIe switches ("pci<p>"), switch p on NUMA node and socket
// p / switches_per_numa; on each, `gpus_per_switch` healthy GPUs (minors numbered across
// switches; gpu-core 100, 80Gi, ratio 100) and one RDMA NIC (minor p, koordinator.sh/rdma 100)
// with `vfs` VFs in one group labelled type=general, bus IDs "0000:<p>0:00.<k+1>".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace colony::testing {

inline nlohmann::json device_spec(int switches, int switches_per_numa, int gpus_per_switch,
                                  int vfs) {
  using nlohmann::json;
  json devices = json::array();
  for (int p = 0; p < switches; ++p) {
    const int numa = p / switches_per_numa;
    const json topo = {{"socketID", numa}, {"nodeID", numa}, {"pcieID", "pci" + std::to_string(p)}};
    for (int g = gpus_per_switch * p; g < gpus_per_switch * (p + 1); ++g)
      devices.push_back({{"type", "gpu"},
                         {"minor", g},
                         {"health", true},
                         {"resources",
                          {{"koordinator.sh/gpu-core", "100"},
                           {"koordinator.sh/gpu-memory", "80Gi"},
                           {"koordinator.sh/gpu-memory-ratio", "100"}}},
                         {"topology", topo}});
    json nic = {{"type", "rdma"},
                {"minor", p},
                {"health", true},
                {"resources", {{"koordinator.sh/rdma", "100"}}},
                {"topology", topo}};
    if (vfs > 0) {
      json vf = json::array();
      for (int k = 0; k < vfs; ++k)
        vf.push_back({{"minor", k},
                      {"busID", "0000:" + std::to_string(p) + "0:00." + std::to_string(k + 1)}});
      nic["vfGroups"] = json::array({{{"labels", {{"type", "general"}}}, {"vfs", vf}}});
    }
    devices.push_back(std::move(nic));
  }
  return json{{"devices", std::move(devices)}};
}

}  // namespace colony::testing
