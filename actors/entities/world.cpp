#include "actors/entities/world.hpp"

namespace colony::entities {

template <class V>
V& world::indexed(std::map<std::string, V, std::less<>>& m, key_index<V>& idx,
                  std::string_view key) {
  if (const auto it = idx.at.find(key); it != idx.at.end()) return *it->second;
  V& v = entities::find_or_create(m, key);
  idx.at.emplace(std::string(key), &v);
  return v;
}

void world::apply(const wire::Envelope& env) {
  ++applied;
  auto rl = routes(env);
  for (std::uint8_t i = 0; i < rl.size; ++i) {
    const auto& r = rl.refs[i];
    switch (r.kind) {
      case wire::EntityKind::Node:
        entities::apply(indexed(nodes, node_index_, r.key), env);
        break;
      case wire::EntityKind::Pod:
        entities::apply(indexed(pods, pod_index_, r.key), env);
        break;
      case wire::EntityKind::ElasticQuota:
        entities::apply(find_or_create(quotas, r.key), env);
        break;
      case wire::EntityKind::PodMigrationJob:
        entities::apply(find_or_create(jobs, r.key), env);
        break;
      case wire::EntityKind::Object:
        entities::apply(find_or_create(objects, r.key), env);
        break;
      case wire::EntityKind::Reservation:
        entities::apply(find_or_create(reservations, r.key), env);
        break;
      default:
        break;
    }
  }
}

void world::for_each_encoded(
    const std::function<void(wire::EntityKind, std::string_view, const std::string&)>& fn) const {
  // EntityKind order: Node(1) < Pod(2) < ElasticQuota(3) < PodMigrationJob(4) < Object(6) <
  // Reservation(7) (Cluster has no entities). A log without recorded objects or reservations
  // keeps the digest it had.
  for (const auto& [k, s] : nodes) fn(wire::EntityKind::Node, k, encode(s));
  for (const auto& [k, s] : pods) fn(wire::EntityKind::Pod, k, encode(s));
  for (const auto& [k, s] : quotas) fn(wire::EntityKind::ElasticQuota, k, encode(s));
  for (const auto& [k, s] : jobs) fn(wire::EntityKind::PodMigrationJob, k, encode(s));
  for (const auto& [k, s] : objects) fn(wire::EntityKind::Object, k, encode(s));
  for (const auto& [k, s] : reservations) fn(wire::EntityKind::Reservation, k, encode(s));
}

std::uint64_t world::digest() const {
  digest_builder d;
  for_each_encoded([&](wire::EntityKind kind, std::string_view key, const std::string& bytes) {
    d.add(kind, key, bytes);
  });
  return d.finish();
}

result<void> world::load(wire::EntityKind kind, std::string_view key, std::string_view bytes) {
  auto bad = [&](const error& e) {
    return fail(e.code, e.message, "snapshot entity " + std::string(key));
  };
  switch (kind) {
    case wire::EntityKind::Node: {
      auto s = decode_node(bytes);
      if (!s) return bad(s.error());
      nodes.insert_or_assign(std::string(key), std::move(*s));
      return {};
    }
    case wire::EntityKind::Pod: {
      auto s = decode_pod(bytes);
      if (!s) return bad(s.error());
      pods.insert_or_assign(std::string(key), std::move(*s));
      return {};
    }
    case wire::EntityKind::ElasticQuota: {
      auto s = decode_quota(bytes);
      if (!s) return bad(s.error());
      quotas.insert_or_assign(std::string(key), std::move(*s));
      return {};
    }
    case wire::EntityKind::PodMigrationJob: {
      auto s = decode_job(bytes);
      if (!s) return bad(s.error());
      jobs.insert_or_assign(std::string(key), std::move(*s));
      return {};
    }
    case wire::EntityKind::Object: {
      auto s = decode_object(bytes);
      if (!s) return bad(s.error());
      objects.insert_or_assign(std::string(key), std::move(*s));
      return {};
    }
    case wire::EntityKind::Reservation: {
      auto s = decode_reservation(bytes);
      if (!s) return bad(s.error());
      reservations.insert_or_assign(std::string(key), std::move(*s));
      return {};
    }
    default:
      return fail(errc::corrupt, "unknown entity kind in snapshot", std::string(key));
  }
}

}  // namespace colony::entities
