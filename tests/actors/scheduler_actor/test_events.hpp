// Event builders shared by the scheduler-actor tests: observation events with offsets set, as
// a log would hand them out.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "colony_generated.h"
#include "messages/codec.hpp"
#include "messages/units.hpp"
#include "tests/support/resources.hpp"

namespace colony::testing {

using colony::gib;  // messages/units.hpp

struct event_factory {
  messages::event_builder b;

  messages::byte_buffer node(std::int64_t t, const std::string& name, std::int64_t cpu,
                             std::int64_t mem, std::int64_t pods = 110) {
    const auto cap = cpu_mem(cpu, mem, pods);
    auto& f = b.fbb();
    auto rc = b.resources(cap);
    auto ra = b.resources(cap);
    auto p = wire::CreateNodeRegistered(f, f.CreateString(name), rc, ra);
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Node, name, -1, "test"}, p);
  }
  // A GPU node: `gpus` whole devices and the label node.koordinator.sh/gpu-model = model
  // (no label when model is empty).
  messages::byte_buffer gpu_node(std::int64_t t, const std::string& name, std::int64_t cpu,
                                 std::int64_t mem, const std::string& model, std::int32_t gpus) {
    auto cap = cpu_mem(cpu, mem, 110);
    cap.gpu = 100 * gpus;
    auto& f = b.fbb();
    std::vector<flatbuffers::Offset<wire::GpuDevice>> devs;
    for (std::int32_t g = 0; g < gpus; ++g) {
      auto m = f.CreateString(model);
      devs.push_back(wire::CreateGpuDevice(f, g, m, 100, 16 * gib, true));
    }
    auto dv = f.CreateVector(devs);
    std::vector<std::pair<std::string, std::string>> labels;
    if (!model.empty()) labels.emplace_back("node.koordinator.sh/gpu-model", model);
    auto lv = b.key_values(labels);
    auto rc = b.resources(cap);
    auto ra = b.resources(cap);
    auto n = f.CreateString(name);
    auto p = wire::CreateNodeRegistered(f, n, rc, ra, lv, 0, dv, false);
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Node, name, -1, "test"}, p);
  }
  // A pod asking for `gpu` percent of koordinator.sh/gpu (100 = a whole device) on the models
  // listed (empty = any).
  messages::byte_buffer gpu_pod(std::int64_t t, const std::string& name, std::int64_t cpu,
                                std::int64_t mem, std::int64_t gpu,
                                const std::vector<std::string>& models) {
    auto req = cpu_mem(cpu, mem);
    req.gpu = gpu;
    auto& f = b.fbb();
    std::vector<flatbuffers::Offset<flatbuffers::String>> ms;
    for (const auto& m : models) ms.push_back(f.CreateString(m));
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> mv;
    if (!ms.empty()) mv = f.CreateVector(ms);
    auto n = f.CreateString(name);
    auto uid = f.CreateString(name);
    auto rq = b.resources(req);
    auto lim = b.resources(req);
    auto sn = f.CreateString("koord-scheduler");
    wire::PodSubmittedBuilder pb(f);
    pb.add_name(n);
    pb.add_uid(uid);
    pb.add_requests(rq);
    pb.add_limits(lim);
    pb.add_scheduler_name(sn);
    pb.add_kube_qos(wire::KubeQoSClass::Guaranteed);
    if (!ms.empty()) pb.add_gpu_models(mv);
    auto p = pb.Finish();
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, name, -1, "test"}, p);
  }
  messages::byte_buffer finished(std::int64_t t, const std::string& pod, const std::string& node) {
    auto p = wire::CreatePodFinishedDirect(b.fbb(), pod.c_str(), node.c_str(),
                                           wire::PodPhase::Succeeded);
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, pod, -1, "test"}, p);
  }
  // A node carrying node.koordinator.sh/resource-amplification-ratio = ratio_json.
  messages::byte_buffer amplified_node(std::int64_t t, const std::string& name, std::int64_t cpu,
                                       std::int64_t mem, const std::string& ratio_json) {
    const auto cap = cpu_mem(cpu, mem, 110);
    auto& f = b.fbb();
    auto rc = b.resources(cap);
    auto ra = b.resources(cap);
    auto an = b.key_values({{"node.koordinator.sh/resource-amplification-ratio", ratio_json}});
    auto n = f.CreateString(name);
    auto p = wire::CreateNodeRegistered(f, n, rc, ra, 0, an);
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Node, name, -1, "test"}, p);
  }
  // A slo-controller record carrying a metadata patch (the meta.annotationsPatch term).
  messages::byte_buffer meta_patch(std::int64_t t, const std::string& node,
                                   const std::string& patch) {
    auto& f = b.fbb();
    auto tn = f.CreateString("meta.annotationsPatch");
    auto tt = f.CreateString(patch);
    wire::TermBuilder tb(f);
    tb.add_name(tn);
    tb.add_text(tt);
    const auto term = tb.Finish();
    auto terms = f.CreateVector(&term, 1);
    auto n = f.CreateString(node);
    wire::NodeBatchResourceUpdatedBuilder pb(f);
    pb.add_node(n);
    pb.add_terms(terms);
    auto p = pb.Finish();
    return b.finish(
        messages::header{event_time{t}, wire::EntityKind::Node, node, -1, "slo-controller"}, p);
  }
  // The slo-controller's batch/mid allocatable for a node.
  messages::byte_buffer batch(std::int64_t t, const std::string& node, std::int64_t batch_cpu,
                              std::int64_t batch_mem) {
    auto& f = b.fbb();
    auto n = f.CreateString(node);
    wire::NodeBatchResourceUpdatedBuilder pb(f);
    pb.add_node(n);
    pb.add_batch_cpu_milli(batch_cpu);
    pb.add_batch_memory_bytes(batch_mem);
    auto p = pb.Finish();
    return b.finish(
        messages::header{event_time{t}, wire::EntityKind::Node, node, -1, "slo-controller"}, p);
  }
  messages::byte_buffer pod(std::int64_t t, const std::string& name, std::int64_t cpu,
                            std::int64_t mem, const std::string& scheduler = "koord-scheduler",
                            const std::vector<std::pair<std::string, std::string>>& labels = {}) {
    const auto req = cpu_mem(cpu, mem);
    auto& f = b.fbb();
    auto n = f.CreateString(name);
    auto uid = f.CreateString(name);
    auto rq = b.resources(req);
    auto lim = b.resources(req);
    auto sn = f.CreateString(scheduler);
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>> lv;
    if (!labels.empty()) lv = b.key_values(labels);
    wire::PodSubmittedBuilder pb(f);
    pb.add_name(n);
    pb.add_uid(uid);
    pb.add_requests(rq);
    pb.add_limits(lim);
    if (!labels.empty()) pb.add_labels(lv);
    pb.add_scheduler_name(sn);
    pb.add_kube_qos(wire::KubeQoSClass::Guaranteed);
    auto p = pb.Finish();
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, name, -1, "test"}, p);
  }
  // The webhook's answer: the pod's requests after mutation.
  messages::byte_buffer mutated(std::int64_t t, const std::string& name, const resource_list& req,
                                const std::string& scheduler = "koord-scheduler") {
    auto& f = b.fbb();
    auto n = f.CreateString(name);
    auto sn = f.CreateString(scheduler);
    auto rq = b.resources(req);
    auto lim = b.resources(req);
    wire::PodMutatedBuilder pb(f);
    pb.add_name(n);
    pb.add_scheduler_name(sn);
    pb.add_requests(rq);
    pb.add_limits(lim);
    auto p = pb.Finish();
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, name, -1, "admission"},
                    p);
  }
  messages::byte_buffer tick(std::int64_t t) {
    auto p = wire::CreateClockTickedDirect(b.fbb(), "test");
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Cluster, "clock", -1, "test"},
                    p);
  }
  messages::byte_buffer scheduled(std::int64_t t, const std::string& pod, const std::string& node,
                                  std::int64_t cpu, std::int64_t mem, std::int64_t proposal,
                                  const std::string& scheduler) {
    const auto req = cpu_mem(cpu, mem, 1);
    auto& f = b.fbb();
    auto pn = f.CreateString(pod);
    auto nn = f.CreateString(node);
    auto rq = b.resources(req);
    auto sn = f.CreateString(scheduler);
    auto p = wire::CreatePodScheduled(f, pn, nn, proposal, rq, 0, sn);
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Node, node, proposal, "node"},
                    p);
  }
  messages::byte_buffer proposal(std::int64_t t, const std::string& pod, const std::string& node,
                                 std::int64_t cpu, std::int64_t mem, const std::string& scheduler) {
    const auto req = cpu_mem(cpu, mem, 1);
    auto& f = b.fbb();
    auto pn = f.CreateString(pod);
    auto nn = f.CreateString(node);
    auto sn = f.CreateString(scheduler);
    auto rq = b.resources(req);
    wire::PodBindProposedBuilder pb(f);
    pb.add_pod(pn);
    pb.add_node(nn);
    pb.add_scheduler(sn);
    pb.add_requests(rq);
    auto p = pb.Finish();
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, pod, -1, scheduler}, p);
  }
  messages::byte_buffer rejected(std::int64_t t, const std::string& pod, const std::string& node,
                                 std::int64_t proposal, const std::string& scheduler) {
    auto p = wire::CreatePodBindRejectedDirect(b.fbb(), pod.c_str(), node.c_str(), proposal,
                                               "Insufficient cpu", scheduler.c_str());
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Node, node, proposal, "node"},
                    p);
  }
};

// Stamps consecutive offsets on records, as a log append does.
struct offset_stamper {
  std::uint64_t next = 0;
  messages::byte_buffer operator()(messages::byte_buffer r) {
    (void)messages::patch_offset(r, next++);
    return r;
  }
};

inline const wire::Envelope& env_of(const messages::byte_buffer& r) {
  return *wire::GetEnvelope(r.data());
}

}  // namespace colony::testing
