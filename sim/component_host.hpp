// component_host: what the sim driver needs from a host of the components, so the same driver
// runs them in the deterministic step_host (colony sim) or, for the differential test of the two
// hosts, in the live actor_host that `colony run` uses.
//
// Both hosts number each round's records, hand them to the sink in order, fold them, arbitrate
// proposals (pod actor, then node actor) and run the components over them, round after round,
// until an instant is quiet; the actor_host adapter orders each round's output as step_host
// merges it (arbitration answers by proposal; cluster-scoped components in the order added;
// node-scoped output by node name: the slo-controller's update of a node, then its koordlet's),
// so the two logs can be compared byte for byte.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "actors/entities/component.hpp"
#include "actors/entities/step_host.hpp"
#include "actors/entities/world.hpp"

namespace colony::sim {

class component_host {
 public:
  virtual ~component_host() = default;
  virtual void add_component(std::unique_ptr<entities::component> c) = 0;
  virtual void on_new_node(entities::node_component_factory f) = 0;
  virtual void observe(std::span<const std::uint8_t> record) = 0;
  [[nodiscard]] virtual result<void> run_instant(std::int64_t t_ms) = 0;
  [[nodiscard]] virtual std::optional<std::int64_t> next_wakeup_ms() const = 0;
  [[nodiscard]] virtual const entities::world& state() const = 0;
  // Whether per-node components (node shards of the slo-controller) see only their node's
  // records; if not, the driver runs one cluster-wide slo-controller.
  [[nodiscard]] virtual bool routes_by_node() const = 0;
  [[nodiscard]] virtual entities::step_host_stats stats() const = 0;
  [[nodiscard]] virtual std::size_t component_count() const = 0;
  // Threads a cluster-scoped component may fan its own work out on (step_host's pool); empty =
  // run that work on the component's thread.
  [[nodiscard]] virtual entities::parallelizer parallelizer() { return {}; }
};

// The deterministic host (colony sim's). threads: node-scoped components in parallel.
[[nodiscard]] std::unique_ptr<component_host> make_step_host(std::size_t threads,
                                                             entities::step_sink sink);
// The live CAF host (colony run's), stepped the same way; threads: CAF scheduler threads.
[[nodiscard]] std::unique_ptr<component_host> make_actor_host(std::size_t threads,
                                                              entities::step_sink sink);

}  // namespace colony::sim
