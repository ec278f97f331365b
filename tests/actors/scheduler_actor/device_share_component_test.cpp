// scheduler_component with DeviceShare over a node's Device object (ObjectObserved kind Device):
// a pod asking for GPUs and an RDMA NIC with device-joint-allocate gets both on one PCIe switch,
// with a VF; the proposal carries the NIC (schema v11) beside the GPUs; what a bound pod holds
// (ours, replayed or another scheduler's) stays held; a node without a Device object has no NICs;
// a Device that does not parse leaves its node none, naming the field; an annotation that does
// not parse refuses the pod naming the field.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/scheduler/actor/scheduler_component.hpp"
#include "messages/names.hpp"
#include "tests/actors/scheduler_actor/component_rig.hpp"
#include "tests/support/device_objects.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using nlohmann::json;
using testing::gib;
using rig = testing::component_rig;
using testing::proposal_for;

constexpr const char* same_pcie = R"({"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"})";
constexpr const char* with_vf = R"({"rdma":{"vfSelector":{}}})";

// 2 NUMA nodes x 2 PCIe switches, each with GPUs 2p, 2p+1 and NIC p with `vfs` VFs
// ("0000:p0:00.k").
std::string device_spec(int vfs = 2) { return testing::device_spec(4, 2, 2, vfs).dump(); }

messages::byte_buffer device_object(rig& r, std::int64_t t, const std::string& node,
                                    const std::string& spec, bool deleted = false) {
  auto& f = r.f.b.fbb();
  auto av = f.CreateString("scheduling.koordinator.sh/v1alpha1");
  auto kind = f.CreateString("Device");
  auto ns = f.CreateString("");
  auto name = f.CreateString(node);
  auto uid = f.CreateString("uid-" + node);
  auto rv = f.CreateString("1");
  auto sp = f.CreateString(spec);
  auto p = wire::CreateObjectObserved(f, av, kind, ns, name, uid, rv, 0, sp, 0, deleted);
  return r.f.b.finish(
      messages::header{event_time{t}, wire::EntityKind::Object, "Device/" + node, -1, "test"}, p);
}

// A pod asking for `gpus` whole GPUs and `rdma` of koordinator.sh/rdma, with DeviceShare's
// annotations (omitted when empty).
messages::byte_buffer device_pod(rig& r, std::int64_t t, const std::string& name, std::int64_t gpus,
                                 std::int64_t rdma, const std::string& joint,
                                 const std::string& hint) {
  auto req = testing::cpu_mem(1000, gib);
  req.gpu = 100 * gpus;
  auto& f = r.f.b.fbb();
  auto n = f.CreateString(name);
  auto uid = f.CreateString(name);
  std::vector<flatbuffers::Offset<wire::NamedQuantity>> ext;
  if (rdma > 0) {
    auto rn = f.CreateString(names::koord_rdma);
    ext.push_back(wire::CreateNamedQuantity(f, rn, rdma));
  }
  auto ev = f.CreateVector(ext);
  wire::ResourcesBuilder rb(f);
  rb.add_cpu_milli(req.cpu_milli);
  rb.add_memory_bytes(req.memory_bytes);
  rb.add_gpu(req.gpu);
  rb.add_extended(ev);
  auto rq = rb.Finish();
  std::vector<std::pair<std::string, std::string>> ann;
  if (!hint.empty()) ann.emplace_back(std::string(names::annotation_device_allocate_hint), hint);
  if (!joint.empty()) ann.emplace_back(std::string(names::annotation_device_joint_allocate), joint);
  auto av = r.f.b.key_values(ann);
  auto sn = f.CreateString("koord-scheduler");
  wire::PodSubmittedBuilder pb(f);
  pb.add_name(n);
  pb.add_uid(uid);
  pb.add_requests(rq);
  pb.add_annotations(av);
  pb.add_scheduler_name(sn);
  pb.add_kube_qos(wire::KubeQoSClass::Burstable);
  auto p = pb.Finish();
  return r.f.b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, name, -1, "test"}, p);
}

std::string unschedulable_text(const std::vector<messages::byte_buffer>& out,
                               std::string_view pod) {
  std::string text;
  for (const auto& b : out)
    if (const auto* u = testing::env_of(b).payload_as_PodUnschedulable()) {
      if (to_string_view(u->pod()) != pod) continue;
      if (u->reasons())
        for (const auto* x : *u->reasons()) text += "|" + std::string(to_string_view(x->reason()));
    }
  return text;
}

struct placed {
  std::set<int> gpus;
  std::set<int> nics;
  std::set<std::string> vfs;
};
placed devices_of(const wire::PodBindProposed* p) {
  placed out;
  if (p == nullptr || p->devices() == nullptr) return out;
  for (const auto* d : *p->devices()) {
    const auto type = to_string_view(d->type());
    if (type.empty()) {
      out.gpus.insert(d->minor());
    } else if (type == "rdma") {
      out.nics.insert(d->minor());
      EXPECT_EQ(d->amount(), 100);
      if (d->vf_bus_id()) out.vfs.insert(std::string(to_string_view(d->vf_bus_id())));
    }
  }
  return out;
}

TEST(SchedulerDeviceShare, JointAllocationPutsTheNicOnTheGpusPcieSwitchWithAVf) {
  rig r;
  auto out = r.batch({r.f.node(0, "plain", 64000, 256 * gib), r.f.node(0, "dev", 64000, 256 * gib),
                      device_object(r, 0, "dev", device_spec()),
                      device_pod(r, 1000, "ns/a", 2, 100, same_pcie, with_vf)});
  const auto* a = proposal_for(out, "ns/a");
  ASSERT_NE(a, nullptr) << unschedulable_text(out, "ns/a");
  EXPECT_EQ(to_string_view(a->node()), "dev");  // "plain" has no Device object
  auto pa = devices_of(a);
  EXPECT_EQ(pa.gpus, (std::set<int>{0, 1}));                   // the first PCIe switch holds both
  EXPECT_EQ(pa.nics, (std::set<int>{0}));                      // and its NIC
  EXPECT_EQ(pa.vfs, (std::set<std::string>{"0000:00:00.1"}));  // the smallest free bus ID
  // The node's view mirrors the Device's GPUs and holds what it proposed.
  const auto* n = r.s->node("dev");
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->gpus.size(), 8u);
  EXPECT_EQ(n->gpus[0].memory_total_bytes, 80 * gib);
  EXPECT_EQ(n->gpus[0].core_used, 100);
  ASSERT_NE(n->device_usage.find(scheduler::device::device_type::rdma, 0), nullptr);

  // The next one bin-packs onto the NUMA node in use: the second switch, its NIC.
  out = r.batch({device_pod(r, 2000, "ns/b", 2, 100, same_pcie, with_vf)});
  auto pb = devices_of(proposal_for(out, "ns/b"));
  EXPECT_EQ(pb.gpus, (std::set<int>{2, 3}));
  EXPECT_EQ(pb.nics, (std::set<int>{1}));
  EXPECT_EQ(pb.vfs, (std::set<std::string>{"0000:10:00.1"}));

  // A GPU-only pod without annotations is served by the same allocator (no NIC).
  out = r.batch({device_pod(r, 3000, "ns/c", 1, 0, "", "")});
  auto pc = devices_of(proposal_for(out, "ns/c"));
  EXPECT_EQ(pc.gpus.size(), 1u);
  EXPECT_TRUE(pc.nics.empty());
  EXPECT_TRUE(r.s->device_errors().empty());
}

// Another scheduler's binding (a PodScheduled with a NIC and a VF) is held: the VF is not handed
// out again, and the NIC's switch is the one left out.
TEST(SchedulerDeviceShare, ABoundPodsNicAndVfAreHeld) {
  rig r;
  auto out = r.batch(
      {r.f.node(0, "dev", 64000, 256 * gib), device_object(r, 0, "dev", device_spec(/*vfs=*/1))});
  auto& f = r.f.b.fbb();
  std::vector<flatbuffers::Offset<wire::DeviceAllocation>> dv;
  for (int g : {0, 1}) dv.push_back(wire::CreateDeviceAllocation(f, g, 100, 80 * gib));
  {
    auto t = f.CreateString("rdma");
    auto vf = f.CreateString("0000:00:00.1");
    dv.push_back(wire::CreateDeviceAllocation(f, 0, 0, 0, t, 100, vf, 0));
  }
  auto dvv = f.CreateVector(dv);
  auto pn = f.CreateString("ns/other");
  auto nn = f.CreateString("dev");
  auto rq = r.f.b.resources(testing::cpu_mem(1000, gib, 1));
  auto sn = f.CreateString("koord-scheduler/b");
  auto ps = wire::CreatePodScheduled(f, pn, nn, -1, rq, dvv, sn);
  out = r.batch(
      {r.f.b.finish(messages::header{event_time{500}, wire::EntityKind::Node, "dev", -1, "node"},
                    ps),
       device_pod(r, 1000, "ns/a", 2, 100, same_pcie, with_vf)});
  const auto* n = r.s->node("dev");
  ASSERT_NE(n, nullptr);
  const auto* held = n->device_usage.find(scheduler::device::device_type::rdma, 0);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->vfs, (std::vector<std::string>{"0000:00:00.1"}));
  auto pa = devices_of(proposal_for(out, "ns/a"));
  EXPECT_EQ(pa.gpus, (std::set<int>{2, 3}));
  EXPECT_EQ(pa.nics, (std::set<int>{1}));
  EXPECT_EQ(pa.vfs, (std::set<std::string>{"0000:10:00.1"}));

  // The foreign pod finishes: its NIC and VF come back.
  out = r.batch({r.f.finished(2000, "ns/other", "dev")});
  EXPECT_EQ(r.s->node("dev")->device_usage.find(scheduler::device::device_type::rdma, 0), nullptr);
}

// Pods sharing NICs through VFs (koordinator.sh/rdma 1 each, a VF each): the node's 8 VFs go to
// 8 pods, each VF once; the ninth finds none (an RDMA reason); a node without a Device object
// never takes an RDMA request.
TEST(SchedulerDeviceShare, VfsRunOutWithAnRdmaReason) {
  rig r;
  std::vector<messages::byte_buffer> in = {r.f.node(0, "plain", 64000, 256 * gib),
                                           r.f.node(0, "dev", 64000, 256 * gib),
                                           device_object(r, 0, "dev", device_spec())};
  for (int k = 0; k < 9; ++k)
    in.push_back(device_pod(r, 1000 + k, "ns/p" + std::to_string(k), 0, 1, "", with_vf));
  auto out = r.batch(std::move(in));
  std::set<std::string> vfs;
  for (int k = 0; k < 8; ++k) {
    const auto* p = proposal_for(out, "ns/p" + std::to_string(k));
    ASSERT_NE(p, nullptr) << k << " " << unschedulable_text(out, "ns/p" + std::to_string(k));
    EXPECT_EQ(to_string_view(p->node()), "dev");
    ASSERT_NE(p->devices(), nullptr);
    ASSERT_EQ(p->devices()->size(), 1u);
    EXPECT_EQ(p->devices()->Get(0)->amount(), 1);
    vfs.insert(std::string(to_string_view(p->devices()->Get(0)->vf_bus_id())));
  }
  EXPECT_EQ(vfs.size(), 8u);  // every VF once
  ASSERT_EQ(proposal_for(out, "ns/p8"), nullptr);
  const auto why = unschedulable_text(out, "ns/p8");
  EXPECT_NE(why.find("rdma"), std::string::npos) << why;
}

// Bad input: a Device that does not parse leaves its node without one (the error names the
// object and field); a pod whose annotation does not parse is refused naming the field; a
// deleted Device takes the node's NICs away.
TEST(SchedulerDeviceShare, BadDeviceObjectsAndAnnotationsAreNamed) {
  rig r;
  const std::string bad =
      R"({"devices":[{"type":"rdma","minor":0,"resources":{"koordinator.sh/rdma":"ten"}}]})";
  auto out = r.batch({r.f.node(0, "dev", 64000, 256 * gib), device_object(r, 0, "dev", bad),
                      device_pod(r, 1000, "ns/a", 0, 100, "", "")});
  ASSERT_EQ(r.s->device_errors().size(), 1u);
  EXPECT_NE(r.s->device_errors()[0].where.find("Device/dev"), std::string::npos);
  EXPECT_NE(r.s->device_errors()[0].where.find("spec.devices[0].resources"), std::string::npos)
      << r.s->device_errors()[0].where;
  EXPECT_EQ(proposal_for(out, "ns/a"), nullptr);
  EXPECT_NE(unschedulable_text(out, "ns/a").find("Insufficient rdma devices"), std::string::npos);

  out = r.batch({device_object(r, 2000, "dev", device_spec()),
                 device_pod(r, 2000, "ns/bad", 1, 100, R"({"deviceTypes":["gpu","tpu"]})", "")});
  EXPECT_EQ(proposal_for(out, "ns/bad"), nullptr);
  const auto why = unschedulable_text(out, "ns/bad");
  EXPECT_NE(why.find("device-joint-allocate.deviceTypes[1]"), std::string::npos) << why;

  // ns/a was waiting for a NIC: the valid Device (a node update) gives it one once its backoff
  // is over.
  auto pa = devices_of(proposal_for(out, "ns/a"));
  if (pa.nics.empty()) {
    out = r.batch({r.f.tick(60000)});
    pa = devices_of(proposal_for(out, "ns/a"));
  }
  EXPECT_EQ(pa.nics.size(), 1u);

  out = r.batch({device_object(r, 700000, "dev", "", /*deleted=*/true),
                 device_pod(r, 700000, "ns/c", 0, 100, "", "")});
  EXPECT_EQ(r.s->node("dev")->device_model, nullptr);
  EXPECT_EQ(proposal_for(out, "ns/c"), nullptr);
}

}  // namespace
}  // namespace colony
