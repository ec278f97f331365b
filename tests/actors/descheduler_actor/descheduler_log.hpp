// An in-memory log for the descheduler component tests: event_log (nodes, metrics) plus the pod
// events the descheduler view folds (PodSubmitted with owner and classes, PodScheduled), and
// readers for the decisions the components emit.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/names.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/resources.hpp"

namespace colony::testing {

struct descheduler_log : event_log {
  // A pod submitted and bound: owner "Kind/name" ("" = bare), a koordinator.sh/priority-class.
  void pod(std::int64_t t, const std::string& key, const std::string& node,
           const std::string& owner, std::int64_t cpu_req,
           std::string_view priority_class = "koord-batch") {
    auto& fbb = b.fbb();
    const auto req = cpu_mem(cpu_req, gib);
    const auto r = b.resources(req);
    const auto l =
        b.key_values({{std::string(names::label_priority_class), std::string(priority_class)}});
    const auto a = b.key_values({});
    const auto n = fbb.CreateString(key);
    const auto uid = fbb.CreateString("uid-" + key);
    const auto s = fbb.CreateString("koord-scheduler");
    const auto o = fbb.CreateString(owner);
    append(t, wire::EntityKind::Pod, key,
           wire::CreatePodSubmitted(fbb, n, uid, r, 0, 0, false, 0, l, a, s,
                                    wire::KubeQoSClass::BestEffort, 0, o));
    scheduled(t, key, node, req);
  }
};

inline std::string text(const flatbuffers::String* s) {
  return s == nullptr ? std::string() : s->str();
}

// The text terms of a Term vector, by name.
inline std::string term(const flatbuffers::Vector<flatbuffers::Offset<wire::Term>>* terms,
                        std::string_view name) {
  if (terms != nullptr)
    for (const auto* t : *terms)
      if (t->name() != nullptr && t->name()->string_view() == name) return text(t->text());
  return {};
}

}  // namespace colony::testing
