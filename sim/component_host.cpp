#include "sim/component_host.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "actors/entities/entity_actors.hpp"
#include "messages/codec.hpp"

namespace colony::sim {

namespace {

using messages::to_string_view;

class stepped final : public component_host {
 public:
  stepped(std::size_t threads, entities::step_sink sink)
      : host_(
            [&] {
              entities::step_host_options o;
              o.threads = threads;
              return o;
            }(),
            std::move(sink)) {}
  void add_component(std::unique_ptr<entities::component> c) override {
    host_.add_component(std::move(c));
  }
  void on_new_node(entities::node_component_factory f) override { host_.on_new_node(std::move(f)); }
  void observe(std::span<const std::uint8_t> record) override { host_.observe(record); }
  result<void> run_instant(std::int64_t t_ms) override { return host_.run_instant(t_ms); }
  std::optional<std::int64_t> next_wakeup_ms() const override { return host_.next_wakeup_ms(); }
  const entities::world& state() const override { return host_.state(); }
  bool routes_by_node() const override { return true; }
  entities::step_host_stats stats() const override { return host_.stats(); }
  std::size_t component_count() const override { return host_.component_count(); }
  entities::parallelizer parallelizer() override { return host_.cluster_parallelizer(); }

 private:
  entities::step_host host_;
};

// actor_host, stepped in rounds: deliver a round, wait (sync), order what the sink got as
// step_host merges it, number it, next round.
class live final : public component_host {
 public:
  live(std::size_t threads, entities::step_sink sink)
      : sink_(std::move(sink)), host_(threads, [this](std::vector<std::vector<std::uint8_t>> v) {
          std::lock_guard lk(mu_);
          for (auto& r : v) got_.push_back(std::move(r));
        }) {}
  void add_component(std::unique_ptr<entities::component> c) override {
    rank_.emplace(std::string(c->name()), rank_.size());
    host_.add_component(std::move(c));
    ++components_;
  }
  void on_new_node(entities::node_component_factory f) override { factory_ = std::move(f); }
  void observe(std::span<const std::uint8_t> record) override { pending_.add(record); }
  result<void> run_instant(std::int64_t t_ms) override {
    ++stats_.instants;
    auto round = std::make_shared<entities::record_batch>();
    std::swap(*round, pending_);
    bool first = true;
    for (std::size_t r = 0;; ++r) {
      const bool wake = first && next_wake_ && *next_wake_ <= t_ms;
      if (round->size() == 0 && !wake) break;
      if (r >= 10000)
        return fail(errc::internal, fmt::format("instant {} ms did not quiesce", t_ms),
                    "actor_host");
      ++stats_.rounds;
      stats_.max_rounds_per_instant = std::max(stats_.max_rounds_per_instant, r + 1);
      stats_.records += round->size();
      for (std::size_t i = 0; i < round->size(); ++i) {
        (void)messages::patch_offset(round->record(i), next_++);
        const auto& env = round->envelope(i);
        if (env.payload_type() == wire::Payload::NodeRegistered && factory_) {
          const std::string node(to_string_view(env.payload_as_NodeRegistered()->name()));
          if (nodes_.insert(node).second)
            for (auto& c : factory_(node)) add_component(std::move(c));
        }
        world_.apply(env);
      }
      if (round->size() > 0) {
        if (auto s = sink_(*round); !s) return s;
        host_.deliver(round);
      }
      if (wake) host_.wake(t_ms);
      first = false;
      if (auto s = host_.sync(); !s) return s;
      std::vector<std::vector<std::uint8_t>> out;
      {
        std::lock_guard lk(mu_);
        out.swap(got_);
      }
      order(out);
      round = std::make_shared<entities::record_batch>();
      for (const auto& b : out) round->add(b);
    }
    next_wake_ = host_.next_wakeup_ms();
    return {};
  }
  std::optional<std::int64_t> next_wakeup_ms() const override { return next_wake_; }
  const entities::world& state() const override { return world_; }
  bool routes_by_node() const override { return false; }
  entities::step_host_stats stats() const override { return stats_; }
  std::size_t component_count() const override { return components_; }

 private:
  // step_host's merge order (see component_host.hpp).
  void order(std::vector<std::vector<std::uint8_t>>& out) const {
    auto key = [&](const std::vector<std::uint8_t>& b) {
      const auto& env = *wire::GetEnvelope(b.data());
      const auto src = to_string_view(env.source());
      if (src == "node" || src == "pod")
        return std::tuple(0, std::size_t{0}, std::string_view{}, 0, env.causation());
      if (src == "slo-controller")
        return std::tuple(2, std::size_t{0}, to_string_view(env.entity_key()), 0, std::int64_t{0});
      if (src.starts_with("koordlet/"))
        return std::tuple(2, std::size_t{0}, src.substr(9), 1, std::int64_t{0});
      const auto it = rank_.find(std::string(src));
      return std::tuple(1, it == rank_.end() ? rank_.size() : it->second, std::string_view{}, 0,
                        std::int64_t{0});
    };
    std::stable_sort(out.begin(), out.end(),
                     [&](const auto& a, const auto& b) { return key(a) < key(b); });
  }

  entities::step_sink sink_;
  std::mutex mu_;
  std::vector<std::vector<std::uint8_t>> got_;
  entities::actor_host host_;
  entities::node_component_factory factory_;
  std::map<std::string, std::size_t> rank_;  // component name -> order added
  std::set<std::string> nodes_;
  entities::record_batch pending_;
  entities::world world_;
  log_offset next_ = 0;
  std::optional<std::int64_t> next_wake_;
  entities::step_host_stats stats_;
  std::size_t components_ = 0;
};

}  // namespace

std::unique_ptr<component_host> make_step_host(std::size_t threads, entities::step_sink sink) {
  return std::make_unique<stepped>(threads, std::move(sink));
}

std::unique_ptr<component_host> make_actor_host(std::size_t threads, entities::step_sink sink) {
  return std::make_unique<live>(threads, std::move(sink));
}

}  // namespace colony::sim
