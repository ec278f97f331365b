// world: every entity state of a log, folded without actors. The reference model the
// actor path is checked against, the sim's read model, and the restart path of writers.
//
// Maps are ordered by key, so iteration (digest, snapshot) is in canonical order.
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "actors/entities/entities.hpp"
#include "messages/string_map.hpp"

namespace colony::entities {

class world {
 public:
  // Routes one verified event to the entities it touches, spawning states on first sight.
  void apply(const wire::Envelope& env);

  // (kind, key, canonical state bytes) of every entity, in (kind, key) order.
  void for_each_encoded(
      const std::function<void(wire::EntityKind, std::string_view, const std::string&)>& fn) const;
  [[nodiscard]] std::uint64_t digest() const;
  [[nodiscard]] std::uint64_t entity_count() const {
    return nodes.size() + pods.size() + quotas.size() + jobs.size() + objects.size() +
           reservations.size();
  }

  // The node `key`, created on first sight: the state apply() folds that node's events into.
  // Its address stays valid while the world lives.
  node_state& node(std::string_view key) { return indexed(nodes, node_index_, key); }
  // apply() of an event whose only route is node `n`, when the caller already holds that
  // node's state (the step host's per-node slot): the same fold without the lookup.
  void apply_to(node_state& n, const wire::Envelope& env) {
    ++applied;
    entities::apply(n, env);
  }

  // Restores one entity from a snapshot.
  [[nodiscard]] result<void> load(wire::EntityKind kind, std::string_view key,
                                  std::string_view bytes);

  std::map<std::string, node_state, std::less<>> nodes;
  std::map<std::string, pod_state, std::less<>> pods;
  std::map<std::string, quota_state, std::less<>> quotas;
  std::map<std::string, job_state, std::less<>> jobs;
  std::map<std::string, object_state, std::less<>> objects;  // recorded objects (ObjectObserved)
  std::map<std::string, reservation_state, std::less<>> reservations;  // schema v7
  std::uint64_t applied = 0;  // events applied (not deliveries)

 private:
  // Hashed lookups into the ordered maps above (apply() finds an entity per event; the maps
  // stay ordered for digests and snapshots). Entries point at map nodes, which stay put while
  // the map lives and moves; a copied world starts with an empty index. An entity missing
  // from the index (put into a map from outside) is found in the map and indexed then.
  template <class V>
  struct key_index {
    string_map<V*> at;
    key_index() = default;
    key_index(const key_index&) {}
    key_index(key_index&&) noexcept = default;
    key_index& operator=(const key_index& o) {
      if (this != &o) at.clear();
      return *this;
    }
    key_index& operator=(key_index&&) noexcept = default;
    ~key_index() = default;
  };
  template <class V>
  static V& indexed(std::map<std::string, V, std::less<>>& m, key_index<V>& idx,
                    std::string_view key);
  key_index<node_state> node_index_;
  key_index<pod_state> pod_index_;
};

template <class Map>
auto& find_or_create(Map& m, std::string_view key) {
  auto it = m.find(key);
  if (it == m.end()) it = m.emplace(std::string(key), typename Map::mapped_type{}).first;
  return it->second;
}

}  // namespace colony::entities
